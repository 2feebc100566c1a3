"""Emulated deploy: the AWS layers of a profile applied, re-planned (no changes expected beyond
documented emulator drift) and destroyed against moto on 127.0.0.1, through the same Operator the
`deploy` / `destroy` commands use. Only the test's own copy of the JSON gets the local-test
provider override and loses the documented exclusions."""

from __future__ import annotations

import shutil
import time

import pytest

from operate.layers import Operator
from stacks import LAYERS
from tests.cases import AWS_LAYERS
from tests.emulator.local_test import EXCLUDED_TYPES, prepare, unexpected_drift
from tests.emulator.server import start_emulator

pytestmark = pytest.mark.emulator


@pytest.fixture
def emulator():
    running = start_emulator()
    yield running
    running.stop()


@pytest.mark.parametrize("profile", ["g6-validation", "p5-training"])
def test_apply_replan_destroy(synthesized, terraform, emulator, tmp_path, profile, report):
    workdir = tmp_path / profile
    shutil.copytree(synthesized.outroot / profile, workdir)
    for layer in set(LAYERS) - set(AWS_LAYERS):  # no Kubernetes API here: those layers are not in this copy
        shutil.rmtree(workdir / "stacks" / layer)
    coverage = prepare(workdir / "stacks", list(AWS_LAYERS), emulator.endpoint)
    # The operator's own progress lines (per layer and phase, a heartbeat every 30 s) reach the CI log.
    operator = Operator(workdir / "stacks", log=report, env={
        "TF_CLI_CONFIG_FILE": str(terraform.cli_config),
        "AWS_ACCESS_KEY_ID": "emulator", "AWS_SECRET_ACCESS_KEY": "emulator",
    })
    started = time.monotonic()

    applied = operator.run("deploy", list(AWS_LAYERS))
    assert all(r.ok for r in applied), applied[-1].detail
    replanned = operator.run("plan", list(AWS_LAYERS))
    assert all(r.ok for r in replanned), replanned[-1].detail
    drift = {layer: unexpected_drift(operator.plan_json(layer)) for layer in AWS_LAYERS}
    assert drift == {layer: [] for layer in AWS_LAYERS}
    if synthesized.configs[profile].storage.protect_from_destroy:
        # Protected data refuses a full destroy before anything is deleted (the cluster under it
        # would otherwise stay, billing); the full teardown deletes it after a confirmation by name.
        refused = operator.run("destroy", list(AWS_LAYERS))
        assert [(r.layer, r.ok) for r in refused] == [("build", False)] and "DELETE_DATA=1" in refused[0].detail
        assert operator.resources("build"), "nothing may be destroyed by a refused destroy"
    operator.delete_data = True
    operator.confirm_data = lambda question: question == "Delete this data of the storage layer?"
    destroyed = operator.run("destroy", list(AWS_LAYERS))
    assert all(r.ok for r in destroyed), destroyed[-1].detail
    assert operator.deployed_layers() == []
    report("")
    report(f"emulated deploy of {profile} in {time.monotonic() - started:.0f}s (apply, re-plan, destroy):")
    for layer, counts in coverage.items():
        report(f"  {layer:8} applied {counts['resources']:3}, excluded {len(counts['excluded'])}"
               + (f" ({', '.join(counts['excluded'])})" if counts["excluded"] else ""))
    # Exclusions come only from the documented list.
    assert all(address.split(".")[0] in EXCLUDED_TYPES for c in coverage.values() for address in c["excluded"])
    # The emulator is empty again: nothing leaked that would keep a real VPC from being deleted.
    extensions = emulator.extensions
    assert not (extensions.placement_groups or extensions.access_entries or extensions.addons
                or extensions.pod_identities or extensions.cluster_security_groups)
