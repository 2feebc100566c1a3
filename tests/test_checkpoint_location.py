"""Each tenant's checkpoint location: its FSx directory's checkpoint folder, which a data repository
association exports to its prefix of the checkpoints bucket, so a checkpoint a TrainJob writes on
FSx also reaches S3 without the job copying it. Read from the synthesized storage and workloads
layers of every shipped profile (they all have one), and from the runtimes' own code for the rest."""

from __future__ import annotations

import pytest

from addons.trainer import DEFINITION as TRAINER
from addons.trainer import checkpoint_warnings
from addons.trainer.runtimes import CHECKPOINT_DIR_ENV, FSX_MOUNT, TenantVolumes, fault_env
from profiles import tenancy, validate_profile
from profiles.storage import DataRepositoryAssociation, FsxConfig
from tests.cases import SHIPPED
from tests.synth_helpers import resources
from tests.test_profiles import mutated
from tests.test_trainer import node_pod, runtimes


def checkpoint_dir(volumes: TenantVolumes) -> str:
    return next(e["value"] for e in fault_env(volumes) if e["name"] == CHECKPOINT_DIR_ENV)


@pytest.mark.parametrize("profile", SHIPPED)
def test_every_tenants_checkpoints_on_fsx_are_exported_to_its_prefix_of_the_checkpoints_bucket(synthesized, profile):
    config = synthesized.configs[profile]
    assert TRAINER.enabled(config)
    export = config.storage.fsx.checkpoint_export
    assert export is not None, f"{profile}: checkpoints on FSx would never reach S3"
    associations = {
        body["file_system_path"]: body
        for body in resources(synthesized.stack(profile, "storage"), "aws_fsx_data_repository_association").values()
    }
    for tenant in config.workloads.tenants:
        path, prefix = tenancy.association(tenant.name, export.file_system_path, export.s3_prefix)
        association = associations[path]
        assert association["data_repository_path"].endswith(f"/{prefix}")
        assert "checkpoints" in association["data_repository_path"]
        assert {"NEW", "CHANGED"} <= set(association["s3"]["auto_export_policy"]["events"])
        assert "auto_import_policy" not in association["s3"], "a job's own checkpoints need no re-import"
    # The runtimes put each job's checkpoints in that folder of the tenant's FSx volume (a fileset
    # mount of /<tenant>), so the job writes /<tenant><path>/<job>/ on the file system.
    for runtime in runtimes(synthesized, profile).values():
        (container,) = node_pod(runtime)["containers"]
        env = {e["name"]: e for e in container["env"]}
        assert env[CHECKPOINT_DIR_ENV]["value"] == f"{FSX_MOUNT}{export.file_system_path}/$(TRAINJOB_NAME)"
        assert FSX_MOUNT in {m["mountPath"] for m in container["volumeMounts"]}
    assert checkpoint_warnings(config) == []


def test_the_runtimes_follow_the_associations_path():
    volumes = TenantVolumes(fsx=True, checkpoints=True, fsx_checkpoints="/runs/ckpt")
    assert checkpoint_dir(volumes) == f"{FSX_MOUNT}/runs/ckpt/$(TRAINJOB_NAME)"
    assert checkpoint_dir(TenantVolumes(fsx=True, checkpoints=True)) == f"{FSX_MOUNT}/checkpoints/$(TRAINJOB_NAME)"
    assert checkpoint_dir(TenantVolumes(fsx=False, checkpoints=True)) == "/checkpoints/$(TRAINJOB_NAME)"


def test_only_an_association_that_exports_new_and_changed_files_to_the_checkpoints_bucket_counts():
    def fsx(*associations: dict) -> FsxConfig:
        return FsxConfig(
            data_repository_associations=[DataRepositoryAssociation.model_validate(a) for a in associations]
        )

    datasets = {"file_system_path": "/datasets", "bucket": "datasets"}
    assert fsx(datasets).checkpoint_export is None
    only_new = {"file_system_path": "/ckpt", "bucket": "checkpoints", "export_events": ["NEW"]}
    assert fsx(datasets, only_new).checkpoint_export is None  # rewritten files would not be exported
    exported = {"file_system_path": "/ckpt", "bucket": "checkpoints", "import_events": []}
    found = fsx(datasets, exported).checkpoint_export
    assert found is not None and found.file_system_path == "/ckpt"


def test_a_profile_whose_fsx_checkpoints_stay_on_fsx_is_warned_with_the_association_to_add():
    without = mutated(
        addons__trainer__enabled=True,
        storage__fsx__data_repository_associations=[{"file_system_path": "/datasets", "bucket": "datasets"}],
    )
    (warning,) = checkpoint_warnings(validate_profile(without))
    assert "storage.fsx.data_repository_associations" in warning and "export_events: [NEW, CHANGED]" in warning
    # No associations: tenants have no FSx directory and checkpoint to the bucket itself.
    assert checkpoint_warnings(validate_profile(mutated(storage__fsx__data_repository_associations=[]))) == []
    assert checkpoint_warnings(validate_profile(mutated(addons__trainer__enabled=False))) == []
