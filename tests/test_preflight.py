"""Deploy pre-flight: everything a later layer needs from the user is checked before the first
layer is applied. Variables are judged by the real Terraform; the AWS CLI and the API endpoint
are faked."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from operate.preflight import api_problems, state_bucket_problems, variable_problems
from profiles import load_profile
from tests.cases import FIXTURE_PROFILES
from tests.terraform import SlottedOperator

GOOD = {"TF_VAR_grafana_admin_password": "grafana-pass-123", "TF_VAR_mlflow_admin_password": "Mlflow-pass-123"}


def stacks_with(tmp_path: Path, synthesized, profile: str, env: dict[str, str], terraform=None) -> SlottedOperator:
    for layer in ("cluster", "addons"):
        folder = tmp_path / "stacks" / layer
        folder.mkdir(parents=True)
        (folder / "cdk.tf.json").write_text(json.dumps(synthesized.stack(profile, layer)))
    return SlottedOperator(
        tmp_path / "stacks",
        terraform=terraform.binary if terraform else "terraform",
        env={"TF_CLI_CONFIG_FILE": str(terraform.cli_config)} | env if terraform else env,
        log=lambda _: None,
    )


@pytest.fixture
def clean_env(monkeypatch):
    for name in GOOD:
        monkeypatch.delenv(name, raising=False)


def test_unset_passwords_are_named_before_anything_is_applied(tmp_path, synthesized, terraform, clean_env):
    operator = stacks_with(tmp_path, synthesized, "gpu-validation", {}, terraform)
    problems = variable_problems(operator, ["cluster", "addons"])
    assert [p.splitlines()[1].split(" is not set")[0] for p in problems] == [
        "variable grafana_admin_password",
        "variable mlflow_admin_password",
    ]
    # The fix first: the export that sets it.
    assert [p.splitlines()[0].split(": ")[1] for p in problems] == [
        "export TF_VAR_grafana_admin_password='...'",
        "export TF_VAR_mlflow_admin_password='...'",
    ]


def test_a_bad_password_is_refused_by_terraforms_own_validation(tmp_path, synthesized, terraform, clean_env):
    operator = stacks_with(
        tmp_path, synthesized, "gpu-validation", {**GOOD, "TF_VAR_mlflow_admin_password": "has a space 123"}, terraform
    )
    (problem,) = variable_problems(operator, ["cluster", "addons"])
    assert "Invalid value for variable" in problem and "mlflow_admin_password must be" in problem


def test_good_passwords_pass_and_layers_without_variables_need_none(tmp_path, synthesized, terraform, clean_env):
    operator = stacks_with(tmp_path, synthesized, "gpu-validation", GOOD, terraform)
    assert variable_problems(operator, ["cluster", "addons"]) == []
    assert variable_problems(operator, ["cluster"]) == []


class Outputs:
    def __init__(self, cluster: dict, env: dict[str, str] | None = None):
        self.cluster = cluster
        self.env = env or {}

    def outputs(self, layer: str) -> dict:
        assert layer == "cluster"
        return self.cluster


ENDPOINT = {"endpoint": {"value": "https://ABC.gr7.us-west-2.eks.amazonaws.com"}}


def test_a_private_endpoint_on_a_fresh_account_stops_a_full_deploy_with_the_options():
    config = load_profile("gpu-validation")
    (problem,) = api_problems(config, Outputs({}), ["cluster", "addons"])  # type: ignore[arg-type]
    assert "make deploy LAYER=aws" in problem and "endpoint_public_access_cidrs" in problem
    assert api_problems(config, Outputs({}), ["cluster", "storage", "build"]) == []  # type: ignore[arg-type]


def test_a_public_endpoint_passes_and_a_deployed_one_must_answer():
    public = load_profile(str(FIXTURE_PROFILES / "jark.yaml"))
    assert api_problems(public, Outputs({}), ["addons"]) == []  # type: ignore[arg-type]
    config = load_profile("gpu-validation")
    (problem,) = api_problems(config, Outputs(ENDPOINT), ["addons"], reachable=lambda _: False)  # type: ignore[arg-type]
    assert "does not answer from this machine" in problem
    assert api_problems(config, Outputs(ENDPOINT), ["addons"], reachable=lambda _: True) == []  # type: ignore[arg-type]


def test_a_tunnel_is_what_must_answer_and_the_options_say_how_to_open_one():
    config = load_profile("gpu-validation")
    tunnel = {"TF_VAR_api_tunnel": "https://localhost:8443"}
    asked: list[str] = []

    def silent(address: str) -> bool:
        asked.append(address)
        return False

    (problem,) = api_problems(config, Outputs(ENDPOINT, tunnel), ["addons"], reachable=silent)  # type: ignore[arg-type]
    assert asked == ["https://localhost:8443"]  # the forward, not the private endpoint behind it
    assert problem.startswith("Start the forward https://localhost:8443 first: nothing answers there")
    # The options name the settings and the SSM forward to the endpoint's own host name.
    assert "cluster.private_endpoint_access.security_groups" in problem
    assert "    EKS_HOST=ABC.gr7.us-west-2.eks.amazonaws.com\n" in problem
    assert '--parameters "host=$EKS_HOST,portNumber=443,localPortNumber=8443"' in problem
    assert api_problems(config, Outputs(ENDPOINT, tunnel), ["addons"], reachable=lambda _: True) == []  # type: ignore[arg-type]
    # Only the Kubernetes layers go through it.
    assert api_problems(config, Outputs(ENDPOINT, tunnel), ["storage"], reachable=silent) == []  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "value", ["http://localhost:8443", "https://10.0.1.5:443", "https://localhost", "localhost:8443"]
)
def test_a_tunnel_that_is_not_a_local_https_forward_is_refused_by_name(value):
    config = load_profile("gpu-validation")
    env = {"TF_VAR_api_tunnel": value}
    (problem,) = api_problems(config, Outputs(ENDPOINT, env), ["addons"], reachable=lambda _: True)  # type: ignore[arg-type]
    assert f"TF_VAR_api_tunnel={value!r} is not a local forward" in problem and "https://localhost:PORT" in problem


def fake_aws(tmp_path: Path, exit_code: int) -> str:
    binary = tmp_path / "aws"
    binary.write_text(
        f"#!{sys.executable}\nimport sys\nsys.stderr.write('An error occurred (404) when calling the "
        f"HeadBucket operation: Not Found')\nsys.exit({exit_code})\n"
    )
    binary.chmod(0o755)
    return str(binary)


def test_a_missing_state_bucket_stops_the_deploy(tmp_path):
    config = load_profile(str(FIXTURE_PROFILES / "s3-state.yaml"))
    (problem,) = state_bucket_problems(config, fake_aws(tmp_path, 254))
    assert f"s3://{config.state.bucket}" in problem and "Not Found" in problem
    assert "docs/operations.md (State)" in problem
    assert state_bucket_problems(config, fake_aws(tmp_path, 0)) == []
    assert state_bucket_problems(load_profile("gpu-validation"), "no-such-aws") == []  # local state: nothing to check


class Kube:
    def __init__(self, existing: set[str]):
        self.existing, self.calls = existing, []

    def __call__(self, args: list[str]):
        import subprocess

        self.calls.append(args)
        found = f"{args[4]}/{args[2]}" in self.existing  # get secret NAME -n NS
        return subprocess.CompletedProcess(args, 0 if found else 1, "", "" if found else "NotFound")


def test_secrets_the_user_creates_are_checked_before_the_addons_layer():
    from operate.preflight import user_secret_problems

    jark = load_profile(str(FIXTURE_PROFILES / "jark.yaml"))  # OIDC hub, Grafana and MLflow admins from Secrets
    secrets = {
        "jupyterhub/" + jark.addons.jupyterhub.oidc.client_secret_name,
        "monitoring/" + jark.addons.monitoring.grafana_admin_secret_name,
        "mlflow/" + jark.addons.mlflow.admin_secret_name,
    }
    kube = Kube(existing=set())
    problems = user_secret_problems(jark, Outputs(ENDPOINT), ["addons"], lambda: kube)  # type: ignore[arg-type]
    assert sorted(p.split()[1] for p in problems) == sorted(secrets)
    assert all("does not exist" in p for p in problems)
    assert user_secret_problems(jark, Outputs(ENDPOINT), ["addons"], lambda: Kube(secrets)) == []  # type: ignore[arg-type]
    (fresh,) = user_secret_problems(jark, Outputs({}), ["cluster", "addons"], lambda: kube)  # type: ignore[arg-type]
    assert "deploy LAYER=cluster first" in fresh and all(secret in fresh for secret in secrets)
    assert user_secret_problems(jark, Outputs(ENDPOINT), ["cluster"], lambda: kube) == []  # type: ignore[arg-type]
    # A profile whose add-ons need no Secret of the user's asks nothing.
    g6 = load_profile("gpu-validation")
    assert user_secret_problems(g6, Outputs({}), ["addons"], lambda: kube) == []  # type: ignore[arg-type]


TUNNELS = ["https://localhost:8443", "https://127.0.0.1:9443", "http://localhost:8443", "https://bastion:443", ""]


@pytest.mark.parametrize("value", TUNNELS)
def test_terraform_and_kubectl_accept_the_same_tunnels(tmp_path, synthesized, terraform, clean_env, value):
    """One variable, two readers: the providers' validation (Terraform's own) and kubectl's binding."""
    operator = stacks_with(tmp_path, synthesized, "gpu-validation", {**GOOD, "TF_VAR_api_tunnel": value}, terraform)
    refused_by_terraform = variable_problems(operator, ["addons"])
    config = load_profile("gpu-validation")
    refused_here = api_problems(config, Outputs(ENDPOINT, operator.env), ["addons"], reachable=lambda _: True)  # type: ignore[arg-type]
    assert bool(refused_by_terraform) == bool(refused_here) == (value not in TUNNELS[:2] and value != ""), (
        refused_by_terraform,
        refused_here,
    )
    if refused_by_terraform:
        assert "api_tunnel must be empty or https://localhost:PORT" in refused_by_terraform[0]


def printed_refusal(problems: list[str]) -> list[str]:
    """What a deploy prints for these pre-flight problems (Operator.run, as main.py wires it)."""
    from operate.layers import Operator

    lines: list[str] = []
    Operator(Path("/nonexistent"), log=lines.append, preflight=lambda _: problems).run("deploy", ["addons"])
    return lines


REAL_ENDPOINT = {"endpoint": {"value": "https://0123456789ABCDEF0123456789ABCDEF.gr7.ap-southeast-2.eks.amazonaws.com"}}


@pytest.mark.parametrize(
    ("outputs", "tunnel", "fix"),
    [
        ({}, None, "Deploy the AWS layers first (make deploy LAYER=aws)"),
        (REAL_ENDPOINT, None, "Deploy from where the endpoint answers"),
        (REAL_ENDPOINT, "https://localhost:8443", "Start the forward https://localhost:8443 first"),
    ],
)
def test_the_refusals_for_a_private_endpoint_are_short_lines_with_the_fix_first(outputs, tunnel, fix):
    config = load_profile("gpu-validation")
    env = {"TF_VAR_api_tunnel": tunnel} if tunnel else {}
    (problem,) = api_problems(config, Outputs(outputs, env), ["addons"], reachable=lambda _: False)  # type: ignore[arg-type]
    lines = printed_refusal([problem])
    assert lines[0] == "deploy stopped before any layer was applied:"
    assert lines[1].startswith(f"  - {fix}"), lines
    assert all(len(line) <= 100 for line in lines), [line for line in lines if len(line) > 100]
    # Nothing is lost in the wrapping: the same words in the same order, after the list's "-" and
    # the commands' continuations.
    printed = [word for word in " ".join(lines[1:]).split() if word != "\\"]
    assert printed[0] == "-" and printed[1:] == problem.split()
    assert any(line.strip() == "export TF_VAR_api_tunnel=https://localhost:8443" for line in lines)
    command = [line.strip().rstrip("\\").strip() for line in lines if "ssm start-session" in line or "  --" in line]
    assert " ".join(command).startswith("aws ssm start-session --target <instance-id> --document-name")


def test_every_long_pre_flight_message_is_wrapped(tmp_path):
    """The longest lines the pre-flight prints: unset variables with their descriptions, a state
    bucket that cannot be used, the Secrets a fresh cluster cannot hold yet."""
    from operate.preflight import user_secret_problems

    config = load_profile(str(FIXTURE_PROFILES / "s3-state.yaml"))
    problems = state_bucket_problems(config, fake_aws(tmp_path, 254))
    problems += user_secret_problems(load_profile(str(FIXTURE_PROFILES / "jark.yaml")), Outputs({}), ["addons"], None)  # type: ignore[arg-type]
    problems.append("variable x is not set. " + "A long description of the variable. " * 8)
    assert any(len(problem) > 200 for problem in problems)
    lines = printed_refusal(problems)
    assert all(len(line) <= 100 for line in lines), [line for line in lines if len(line) > 100]
    fixes = [line for line in lines if line.startswith("  - ")]
    assert fixes[0].startswith("  - Create the state bucket as docs/operations.md (State) shows")
    assert fixes[1].startswith("  - make deploy LAYER=cluster first, create the Secrets below in it")


def test_wrapping_keeps_commands_whole_and_continues_them_at_their_options():
    from operate.messages import wrap

    command = "  aws service-quotas request-service-quota-increase --service-code ec2 --quota-code L-417A185B"
    assert wrap(command, 200) == [command]
    assert wrap(command, 60) == [
        "  aws service-quotas request-service-quota-increase \\",
        "    --service-code ec2 --quota-code L-417A185B",
    ]
    assert wrap("- an item " + "x" * 70, 40) == ["- an item", "  " + "x" * 70]  # a long word is kept whole
    assert wrap("one\ntwo") == ["one", "two"]


class _BuildState:
    """An operator whose build layer's state holds these repositories (None: not deployed)."""

    def __init__(self, repositories: dict[str, str] | None):
        self.repositories = repositories
        self.env: dict[str, str] = {}

    def outputs(self, layer: str) -> dict:
        assert layer == "build"
        return {} if self.repositories is None else {"repository_urls": {"value": self.repositories}}


def _fake_aws(tmp_path: Path, *, has_tag: bool) -> str:
    aws = tmp_path / "aws"
    answer = (
        "echo '{\"imageDetails\": [{}]}'"
        if has_tag
        else "echo 'An error occurred (ImageNotFoundException) when calling the DescribeImages operation' >&2; exit 254"
    )
    aws.write_text(f'#!/bin/sh\necho "$*" >> "{tmp_path}/asked"\n{answer}\n')
    aws.chmod(0o755)
    return str(aws)


def test_the_addons_layer_waits_for_mlflows_image_in_ecr(tmp_path):
    """MLflow's pods run the build layer's images/mlflow, which only a CodeBuild run pushes: a
    deploy that includes the addons layer stops first, saying which build to run, while the build
    layer is not deployed or ECR lacks the tag; with the tag pushed, or without the addons layer, it
    goes on."""
    from components.images import project_image_tag
    from operate.preflight import project_image_problems

    config = load_profile("gpu-validation")
    tag = project_image_tag("mlflow")
    fresh = project_image_problems(config, _BuildState(None), ["cluster", "storage", "build", "addons"])  # type: ignore[arg-type]
    assert len(fresh) == 1 and "deploy LAYER=aws first, run build_commands.mlflow" in fresh[0] and tag in fresh[0]
    assert project_image_problems(config, _BuildState(None), ["cluster", "storage", "build"]) == []  # type: ignore[arg-type]
    repository = f"111122223333.dkr.ecr.{config.region}.amazonaws.com/{config.name}/mlflow"
    built = _BuildState({"mlflow": repository})
    missing = project_image_problems(config, built, ["addons"], _fake_aws(tmp_path, has_tag=False))  # type: ignore[arg-type]
    assert missing == [
        f"ECR has no {repository}:{tag}, which the addons layer runs (mlflow): run build_commands.mlflow (make "
        "outputs prints it) and wait for the build, then deploy"
    ]
    asked = (tmp_path / "asked").read_text()
    assert f"--repository-name {config.name}/mlflow --image-ids imageTag={tag}" in asked
    assert project_image_problems(config, built, ["addons"], _fake_aws(tmp_path, has_tag=True)) == []  # type: ignore[arg-type]
    off = load_profile(str(FIXTURE_PROFILES / "capacity-block.yaml"))
    assert not off.addons.mlflow.enabled
    assert project_image_problems(off, _BuildState(None), ["addons"]) == []  # type: ignore[arg-type]
