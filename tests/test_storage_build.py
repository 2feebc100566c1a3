"""Invariants of the storage and build layers' synthesized JSON."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from components.images import project_image_tag
from profiles.built_images import build_implementations
from tests.cases import FIXTURES, SHIPPED, profile_config
from tests.synth_helpers import by_path, ref, resources

ALL = SHIPPED + FIXTURES
REMOTE_CLUSTER = "${data.terraform_remote_state.cross-stack-reference-input-cluster.outputs."

ROOT = Path(__file__).resolve().parents[1]


def storage(synthesized, profile):
    return synthesized.stack(profile, "storage")


def cluster_output_for(synthesized, profile, reference: str) -> str:
    """The cluster-stack expression behind a cross-stack reference in a consumer stack."""
    assert reference.startswith(REMOTE_CLUSTER), reference
    output_name = reference[len(REMOTE_CLUSTER) : -1]
    return synthesized.stack(profile, "cluster")["output"][output_name]["value"]


def fsx_profiles():
    return [p for p in ALL if profile_config(p).storage.fsx.enabled]


@pytest.mark.parametrize("profile", fsx_profiles())
def test_fsx_lives_in_the_gpu_subnet(synthesized, profile):
    (fsx,) = resources(storage(synthesized, profile), "aws_fsx_lustre_file_system").values()
    (subnet,) = fsx["subnet_ids"]
    gpu_az = synthesized.configs[profile].cluster.vpc.gpu_az
    subnet_id = by_path(synthesized.stack(profile, "cluster"), "aws_subnet", f"network/private-{gpu_az}")[0]
    assert cluster_output_for(synthesized, profile, subnet) == ref("aws_subnet", subnet_id)


@pytest.mark.parametrize("profile", fsx_profiles())
def test_fsx_security_group_allows_lustre_ports_from_nodes_and_itself_only(synthesized, profile):
    stack = storage(synthesized, profile)
    group_id = by_path(stack, "aws_security_group", "fsx/security-group")[0]
    own = ref("aws_security_group", group_id)
    ingress = [
        r for r in resources(stack, "aws_vpc_security_group_ingress_rule").values() if r["security_group_id"] == own
    ]
    tcp = sorted(
        (r["from_port"], r["to_port"], r["referenced_security_group_id"] == own)
        for r in ingress
        if r["ip_protocol"] == "tcp"
    )
    assert tcp == [(988, 988, False), (988, 988, True), (1018, 1023, False), (1018, 1023, True)]
    node_sources = {r["referenced_security_group_id"] for r in ingress if r["referenced_security_group_id"] != own}
    (node_source,) = node_sources
    assert cluster_output_for(synthesized, profile, node_source).endswith("vpc_config[0].cluster_security_group_id}")
    for rule in ingress:
        assert not {"cidr_ipv4", "cidr_ipv6", "prefix_list_id"} & set(rule)
        if rule["ip_protocol"] == "-1":  # only EFA-enabled file systems
            assert synthesized.configs[profile].storage.fsx.efa_enabled


def rule_set(stack: dict, owner: str, kind: str) -> set[tuple[str, object, object, str]]:
    """(protocol, from, to, peer) of the rules of one group."""
    rules = resources(stack, f"aws_vpc_security_group_{kind}_rule").values()
    return {
        (r["ip_protocol"], r.get("from_port"), r.get("to_port"), r["referenced_security_group_id"])
        for r in rules
        if r["security_group_id"] == owner
    }


@pytest.mark.parametrize("profile", fsx_profiles())
def test_lustre_clients_and_servers_reach_each_other_both_ways(synthesized, profile):
    """TCP 988 and 1018-1023 both ways between the file system's group and the clients' group, on
    both groups; with EFA, all traffic both ways, as EFA-enabled FSx for Lustre requires."""
    stack = storage(synthesized, profile)
    fsx = ref("aws_security_group", by_path(stack, "aws_security_group", "fsx/security-group")[0])
    ingress = rule_set(stack, fsx, "ingress")
    (nodes,) = {peer for _, _, _, peer in ingress if peer != fsx}
    lustre = {("tcp", 988, 988), ("tcp", 1018, 1023)}
    for owner, peer in ((fsx, nodes), (nodes, fsx), (fsx, fsx)):
        for kind in ("ingress", "egress"):
            assert {(p, lo, hi, peer) for p, lo, hi in lustre} <= rule_set(stack, owner, kind), (owner, kind)
            efa = ("-1", None, None, peer) in rule_set(stack, owner, kind)
            assert efa is synthesized.configs[profile].storage.fsx.efa_enabled, (owner, kind)


@pytest.mark.parametrize("profile", ALL)
def test_every_bucket_is_private_encrypted_versioned_and_tls_only(synthesized, profile):
    for layer in ("storage", "build"):
        stack = synthesized.stack(profile, layer)
        buckets = resources(stack, "aws_s3_bucket")
        assert buckets
        for kind, check in (
            (
                "aws_s3_bucket_public_access_block",
                lambda b: all(
                    b[k] is True
                    for k in (
                        "block_public_acls",
                        "block_public_policy",
                        "ignore_public_acls",
                        "restrict_public_buckets",
                    )
                ),
            ),
            (
                "aws_s3_bucket_server_side_encryption_configuration",
                lambda b: (
                    b["rule"][0]["apply_server_side_encryption_by_default"]["sse_algorithm"] in ("AES256", "aws:kms")
                ),
            ),
            ("aws_s3_bucket_versioning", lambda b: b["versioning_configuration"]["status"] == "Enabled"),
            (
                "aws_s3_bucket_policy",
                lambda b: (
                    json.loads(b["policy"])["Statement"][0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
                ),
            ),
        ):
            covered = {body["bucket"] for body in resources(stack, kind).values() if check(body)}
            assert covered == {ref("aws_s3_bucket", key) for key in buckets}, f"{layer}: {kind}"


@pytest.mark.parametrize("profile", ALL)
def test_data_is_protected_unless_the_profile_opts_out(synthesized, profile):
    stack = storage(synthesized, profile)
    protect = synthesized.configs[profile].storage.protect_from_destroy
    protected = list(resources(stack, "aws_s3_bucket").values()) + list(
        resources(stack, "aws_fsx_lustre_file_system").values()
    )
    assert protected
    assert all(body["lifecycle"]["prevent_destroy"] is protect for body in protected)
    assert protect is (profile != "gpu-validation")


@pytest.mark.parametrize("profile", fsx_profiles())
def test_fsx_links_s3_only_through_associations(synthesized, profile):
    stack = storage(synthesized, profile)
    (fsx,) = resources(stack, "aws_fsx_lustre_file_system").values()
    assert not {"import_path", "export_path", "auto_import_policy", "imported_file_chunk_size"} & set(fsx)
    config = synthesized.configs[profile]
    cfg, tenants = config.storage.fsx, [t.name for t in config.workloads.tenants]
    associations = {
        body["file_system_path"]: body for body in resources(stack, "aws_fsx_data_repository_association").values()
    }
    # With tenants every association is made per tenant, under /<tenant> and the tenant's S3 prefix
    # (the prefix its IAM role is limited to); without tenants at the root.
    expected = {
        (f"/{t}{a.file_system_path}" if t else a.file_system_path, f"{t}/{a.s3_prefix}" if t else a.s3_prefix)
        for t in (tenants or [None])
        for a in cfg.data_repository_associations
    }
    assert {path for path, _ in expected} == set(associations)
    for path, prefix in expected:
        body = associations[path]
        assert body["data_repository_path"].startswith("s3://${aws_s3_bucket.")
        assert body["data_repository_path"].endswith("}/" + prefix)
        assert body["delete_data_in_filesystem"] is False


def test_fsx_sizing_reaches_the_json(synthesized):
    (p5,) = resources(storage(synthesized, "p5-training"), "aws_fsx_lustre_file_system").values()
    assert (p5["deployment_type"], p5["storage_capacity"], p5["per_unit_storage_throughput"]) == (
        "PERSISTENT_2",
        4800,
        250,
    )
    assert p5["metadata_configuration"] == {"mode": "AUTOMATIC"}
    (p5en,) = resources(storage(synthesized, "p5en-training"), "aws_fsx_lustre_file_system").values()
    assert p5en["efa_enabled"] is True and p5en["metadata_configuration"] == {"mode": "USER_PROVISIONED", "iops": 12000}
    (scratch,) = resources(storage(synthesized, "gpu-validation"), "aws_fsx_lustre_file_system").values()
    assert "per_unit_storage_throughput" not in scratch and "automatic_backup_retention_days" not in scratch


def test_no_fsx_when_disabled(synthesized):
    stack = storage(synthesized, "odcr")
    assert not resources(stack, "aws_fsx_lustre_file_system") and "fsx_file_system_id" not in stack["output"]


@pytest.mark.parametrize("profile", ALL)
def test_storage_outputs_for_static_volumes(synthesized, profile):
    outputs = storage(synthesized, profile)["output"]
    assert {"datasets_bucket_name", "datasets_bucket_arn", "checkpoints_bucket_name", "checkpoints_bucket_arn"} <= set(
        outputs
    )
    if synthesized.configs[profile].storage.fsx.enabled:
        assert {"fsx_file_system_id", "fsx_dns_name", "fsx_mount_name"} <= set(outputs)


@pytest.mark.parametrize("profile", ALL)
def test_bucket_names_match_the_mountpoint_role_scope(synthesized, profile):
    name = synthesized.configs[profile].name
    for body in resources(storage(synthesized, profile), "aws_s3_bucket").values():
        assert body["bucket"].startswith(f"{name}-") and body["force_destroy"] is False


@pytest.mark.parametrize("profile", ALL)
def test_ecr_repositories_are_immutable_scanned_encrypted_and_pruned(synthesized, profile):
    stack = synthesized.stack(profile, "build")
    repositories = resources(stack, "aws_ecr_repository")
    # The profile's implementations and the images its add-ons run (MLflow's).
    assert len(repositories) == len(build_implementations(synthesized.configs[profile]))
    for key, repo in repositories.items():
        assert repo["image_tag_mutability"] == "IMMUTABLE"
        assert repo["image_scanning_configuration"] == {"scan_on_push": True}
        assert repo["encryption_configuration"] == [{"encryption_type": "KMS"}]
        (policy,) = [
            p
            for p in resources(stack, "aws_ecr_lifecycle_policy").values()
            if p["repository"] == ref("aws_ecr_repository", key, "name")
        ]
        (rule,) = json.loads(policy["policy"])["rules"]
        assert rule["selection"]["countNumber"] == synthesized.configs[profile].build.keep_images


def test_codebuild_project_builds_a_repository_with_the_projects_own_buildspec(synthesized):
    stack = synthesized.stack("capacity-block", "build")
    (project,) = resources(stack, "aws_codebuild_project").values()
    source_bucket = by_path(stack, "aws_s3_bucket", "source-bucket/bucket")[0]
    assert project["source"]["type"] == "S3"
    assert project["source"]["location"] == f"{ref('aws_s3_bucket', source_bucket, 'bucket')}/rl-trainer.zip"
    # An inline buildspec: nothing is expected from the repository but its Dockerfile.
    buildspec = yaml.safe_load(project["source"]["buildspec"])
    commands = [c for phase in buildspec["phases"].values() for c in phase["commands"]]
    assert any('docker build --file "$DOCKERFILE" --tag "$REPOSITORY_URI:$IMAGE_TAG"' in c for c in commands)
    assert "${" not in project["source"]["buildspec"]  # would be a Terraform interpolation
    env = project["environment"]
    assert env["privileged_mode"] is True and env["compute_type"] == "BUILD_GENERAL1_2XLARGE"
    variables = {v["name"]: v["value"] for v in env["environment_variable"]}
    assert variables["DOCKERFILE"] == "docker/Dockerfile" and variables["IMAGE_TAG"] == "v1.2.0"
    assert variables["REPOSITORY_URI"].endswith(".repository_url}")
    assert variables["REPOSITORY_NAME"].endswith(".name}")
    build = stack["output"]["build_commands"]["value"]["rl-trainer"]
    assert "git clone --depth 1 --branch v1.2.0 https://example.com/org/rl-trainer.git" in build
    assert "aws codebuild start-build --region us-east-1 --project-name" in build


def test_the_nccl_test_image_is_built_from_the_projects_dockerfile(synthesized):
    stack = synthesized.stack("gpu-validation", "build")
    _, project = by_path(stack, "aws_codebuild_project", "image-nccl-tests/project")
    variables = {v["name"]: v["value"] for v in project["environment"]["environment_variable"]}
    assert variables["DOCKERFILE"] == "Dockerfile"
    assert variables["IMAGE_TAG"] == project_image_tag("nccl-tests")
    assert stack["output"]["image_tags"]["value"] == {
        "nccl-tests": project_image_tag("nccl-tests"),
        "pytorch-efa": project_image_tag("pytorch-efa"),  # the Trainer runtimes' image on EFA groups
        "mlflow": project_image_tag("mlflow"),  # MLflow's, which the add-on contributes
    }
    assert stack["output"]["build_commands"]["value"]["nccl-tests"].startswith(
        "(cd images/nccl-tests && zip -qr ../../nccl-tests.zip .)"
    )
    dockerfile = (ROOT / "images" / "nccl-tests" / "Dockerfile").read_text()
    for pinned in ("EFA_INSTALLER_VERSION=", "AWS_OFI_NCCL_VERSION=", "NCCL_VERSION=", "NCCL_TESTS_VERSION="):
        assert f"ARG {pinned}" in dockerfile
    assert "/opt/nccl-tests" in dockerfile  # where the MPIJob runs all_reduce_perf from
    tag = project_image_tag("nccl-tests")
    assert tag.startswith("efa1.42.0-ofi1.16.0-nccl2.27.5-1-tests2.16.4-") and len(tag.rsplit("-", 1)[1]) == 12


def _mlflow_on(profile: str) -> bool:
    return profile_config(profile).addons.mlflow.enabled


@pytest.mark.parametrize("profile", ALL)
def test_the_build_layer_builds_mlflows_image_exactly_while_mlflow_is_on(synthesized, profile):
    """MLflow's add-on contributes its image (AddonDefinition.project_images): no profile lists it,
    and the build layer builds images/mlflow under that name, by the tag of its Dockerfile and lock."""
    stack = synthesized.stack(profile, "build")
    config = profile_config(profile)
    assert "mlflow" not in config.build.reference_implementations
    if not _mlflow_on(profile):
        names = [p["name"] for p in resources(stack, "aws_codebuild_project").values()]
        assert f"{config.name}-mlflow" not in names and "mlflow" not in stack["output"]["image_tags"]["value"]
        return
    _, project = by_path(stack, "aws_codebuild_project", "image-mlflow/project")
    variables = {v["name"]: v["value"] for v in project["environment"]["environment_variable"]}
    assert variables["DOCKERFILE"] == "Dockerfile" and variables["IMAGE_TAG"] == project_image_tag("mlflow")
    assert stack["output"]["image_tags"]["value"]["mlflow"] == project_image_tag("mlflow")
    assert stack["output"]["build_commands"]["value"]["mlflow"].startswith(
        "(cd images/mlflow && zip -qr ../../mlflow.zip .)"
    )
    (repository,) = [r for r in resources(stack, "aws_ecr_repository").values() if r["name"] == f"{config.name}/mlflow"]
    assert repository["image_tag_mutability"] == "IMMUTABLE"


def test_a_profile_may_not_build_something_else_where_mlflows_image_goes():
    from profiles import ProfileError, validate_profile
    from tests.test_profiles import mutated

    with pytest.raises(ProfileError) as refused:
        validate_profile(
            mutated(build__reference_implementations__mlflow={"repository_url": "https://example.com/m.git"})
        )
    assert "build.reference_implementations.mlflow" in str(refused.value)
    assert "mlflow add-on's image" in str(refused.value)
    # Listed as itself, it is built once, as the profile lists it.
    same = validate_profile(mutated(build__reference_implementations__mlflow={"project_image": "mlflow"}))
    assert build_implementations(same)["mlflow"] == same.build.reference_implementations["mlflow"]
    assert same.name_sources.addon_images == ()
    default = validate_profile(mutated())
    assert default.name_sources.addon_images == (("mlflow", "mlflow"),)
    off = validate_profile(mutated(addons__mlflow__enabled=False))
    assert "mlflow" not in build_implementations(off)


def test_codebuild_role_is_least_privilege(synthesized):
    stack = synthesized.stack("capacity-block", "build")
    (policy,) = resources(stack, "aws_iam_role_policy").values()
    statements = json.loads(policy["policy"])["Statement"]
    wildcard = [s for s in statements if s["Resource"] == "*"]
    assert [s["Action"] for s in wildcard] == [["ecr:GetAuthorizationToken"]]
    push = next(s for s in statements if "ecr:PutImage" in s["Action"])
    assert push["Resource"].startswith("${aws_ecr_repository.")
    read = next(s for s in statements if "s3:GetObject" in s["Action"])
    assert read["Resource"].endswith("/rl-trainer.zip")
    assert not any(a.endswith("*") for s in statements for a in s["Action"])


@pytest.mark.parametrize("profile", fsx_profiles())
def test_persistent_file_systems_keep_a_final_backup(synthesized, profile):
    (fsx,) = resources(storage(synthesized, profile), "aws_fsx_lustre_file_system").values()
    if fsx["deployment_type"] == "SCRATCH_2":
        assert "skip_final_backup" not in fsx  # SCRATCH file systems cannot be backed up
    else:
        assert fsx["skip_final_backup"] is False
        assert fsx["final_backup_tags"]["Name"].endswith("-final")


FAKE_BUILD_TOOL = """#!/bin/sh
echo "$(basename "$0") $*" >> "$CALLS"
[ "$(basename "$0")" != aws ] || [ "$PUSHED" = yes ]
"""


@pytest.mark.parametrize("pushed", [True, False])
def test_the_buildspec_builds_and_pushes_only_a_tag_ecr_does_not_have(synthesized, tmp_path, pushed):
    """Run the buildspec's commands the way CodeBuild does (one shell, in phase order) with fake aws
    and docker: an IMMUTABLE repository refuses a second push of a tag, so a rebuild of an unchanged
    source must not push."""
    stack = synthesized.stack("gpu-validation", "build")
    _, project = by_path(stack, "aws_codebuild_project", "image-nccl-tests/project")
    buildspec = yaml.safe_load(project["source"]["buildspec"])
    _, inline = by_path(stack, "aws_iam_role_policy", "image-nccl-tests/role/inline")
    statements = json.loads(inline["policy"])["Statement"]
    assert any("ecr:DescribeImages" in statement["Action"] for statement in statements)  # the tag check may run
    for tool in ("aws", "docker"):
        (tmp_path / tool).write_text(FAKE_BUILD_TOOL)
        (tmp_path / tool).chmod(0o755)
    script = "\n".join(c for phase in ("pre_build", "build") for c in buildspec["phases"][phase]["commands"])
    env = {
        "PATH": f"{tmp_path}:/usr/bin:/bin",
        "CALLS": str(tmp_path / "calls"),
        "PUSHED": "yes" if pushed else "no",
        "AWS_DEFAULT_REGION": "us-west-2",
        "REPOSITORY_URI": "111122223333.dkr.ecr.us-west-2.amazonaws.com/gpu-validation/nccl-tests",
        "REPOSITORY_NAME": "gpu-validation/nccl-tests",
        "IMAGE_TAG": "efa1.42.0-abc",
        "DOCKERFILE": "Dockerfile",
    }
    ran = subprocess.run(["bash", "-e", "-c", script], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    tools = [line.split()[:2] for line in (tmp_path / "calls").read_text().splitlines()]
    assert ["aws", "ecr"] in tools  # login and the tag check
    assert (["docker", "push"] in tools) is not pushed and (["docker", "build"] in tools) is not pushed
