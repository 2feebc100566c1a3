"""The command line as a user meets it: bad input stops before synthesis with exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "main.py"), *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_broken_profile_exits_2_with_every_problem(tmp_path):
    bad = tmp_path / "broken.yaml"
    bad.write_text(
        "name: Broken_Name\nregion: us-west-2\ncluster:\n  vpc:\n    availability_zones: [us-west-2a, us-west-2b]\n"
        "    nat_gateways: lots\n  gpu_node_groups:\n    - {name: gpu-a, instance_type: g6.xlarge, efa_enabled: true}\n"
    )
    result = run("synth", "--profile", str(bad), "--outdir", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "name: not in the expected form" in result.stderr and "'Broken_Name'" in result.stderr
    assert "should match pattern" not in result.stderr  # plain words, never the regular expression
    expected = "cluster.vpc.nat_gateways: not one of the allowed values (got 'lots'; allowed: single, per_az)"
    assert expected in result.stderr
    assert not (tmp_path / "out").exists(), "nothing may be synthesized from an invalid profile"


def test_a_usage_error_exits_2_before_synthesis(tmp_path):
    result = run("synth", "--no-such-option", cwd=tmp_path)
    assert result.returncode == 2
    assert "unrecognized arguments: --no-such-option" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "cdktf.out").exists()


def test_cross_field_problem_is_reported_by_the_cli(tmp_path):
    bad = tmp_path / "no-efa.yaml"
    bad.write_text(
        "name: no-efa\nregion: us-west-2\ncluster:\n  vpc:\n    availability_zones: [us-west-2a, us-west-2b]\n"
        "  gpu_node_groups:\n    - {name: gpu-a, instance_type: g6.xlarge, efa_enabled: true}\n"
    )
    result = run("synth", "--profile", str(bad), "--outdir", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "cluster.gpu_node_groups.0.efa_enabled: g6.xlarge has no EFA (got True; allowed:" in result.stderr


def test_unknown_profile_name_lists_available(tmp_path):
    result = run("synth", "--profile", "nope", "--outdir", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "unknown profile 'nope'; available: gpu-validation, p5-training, p5en-training" in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_profile_file(tmp_path):
    result = run("synth", "--profile", str(tmp_path / "missing.yaml"))
    assert result.returncode == 2 and "no such profile file" in result.stderr


@pytest.mark.slow  # synthesizes in processes of its own
def test_cdktf_cli_invocation_synthesizes_the_profile_from_the_environment(tmp_path):
    """`cdktf synth` runs `main.py` with no arguments, PROFILE and CDKTF_OUTDIR in the environment."""
    import json
    import os

    result = subprocess.run(
        [sys.executable, str(ROOT / "main.py")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env={**os.environ, "PROFILE": "p5en-training", "CDKTF_OUTDIR": str(tmp_path / "out")},
    )
    assert result.returncode == 0, result.stderr
    cluster = json.loads((tmp_path / "out" / "stacks" / "cluster" / "cdk.tf.json").read_text())
    assert cluster["provider"]["aws"][0]["region"] == "us-east-2"
    assert (tmp_path / "out" / "manifest.json").is_file()
    # jsii runs on the project's Node 24: no end-of-life banner, no deprecation noise.
    assert "end-of-life" not in result.stderr and "DeprecationWarning" not in result.stderr


@pytest.mark.slow  # synthesizes in processes of its own
def test_synth_warns_when_a_local_state_would_hold_a_secret(tmp_path):
    local = run("synth", "--outdir", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    assert (
        "the Grafana admin password and the MLflow admin password in plain text in state/gpu-validation/addons.tfstate"
    ) in local.stderr
    remote = run(
        "synth", "--profile", str(ROOT / "tests/fixtures/profiles/s3-state.yaml"), "--outdir", str(tmp_path / "remote")
    )
    assert remote.returncode == 0, remote.stderr
    assert "plain text" not in remote.stderr
    # The platform's own warning is the only one: none from cdktf (a token inside a string passed
    # to one of its functions prints "You're using escape sequences ... may be incorrect").
    for result in (local, remote):
        others = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith("warning: ")]
        assert not others, others


def test_deploy_and_destroy_refuse_without_a_terminal_or_yes(tmp_path):
    for command in ("deploy", "destroy"):
        result = subprocess.run(
            [sys.executable, str(ROOT / "main.py"), command, "--layer", "build"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            timeout=120,
            env={k: v for k, v in __import__("os").environ.items() if k != "AUTO_APPROVE"},
        )
        assert result.returncode == 2, result.stderr
        assert "--yes" in result.stderr and "AUTO_APPROVE=1" in result.stderr
        lines = result.stderr.splitlines()
        assert lines[0] == f"Review the plan (make plan), then approve with --yes (make {command} AUTO_APPROVE=1)."
        assert all(len(line) <= 100 for line in lines), lines
        assert not (tmp_path / "cdktf.out" / "gpu-validation" / "stacks").exists(), "nothing may run"


@pytest.mark.slow  # synthesizes in processes of its own
def test_each_profile_works_in_its_own_folder(tmp_path):
    for profile in ("gpu-validation", "p5-training"):
        result = run("synth", "--profile", profile, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
    stacks = {p.parents[2].name for p in (tmp_path / "cdktf.out").glob("*/stacks/cluster/cdk.tf.json")}
    assert stacks == {"gpu-validation", "p5-training"}
    # Local state of each profile resolves to state/<name>/ of the project, from its own folder.
    cluster = tmp_path / "cdktf.out" / "p5-training" / "stacks" / "cluster"
    backend = json.loads((cluster / "cdk.tf.json").read_text())["terraform"]["backend"]["local"]["path"]
    assert (cluster / backend).resolve() == ROOT / "state" / "p5-training" / "cluster.tfstate"


@pytest.mark.slow  # synthesizes in processes of its own
def test_a_copy_can_never_take_a_shipped_profiles_name(tmp_path):
    copy = tmp_path / "my-copy.yaml"
    copy.write_text((ROOT / "profiles" / "gpu-validation.yaml").read_text())  # keeps name: gpu-validation
    refused = run("synth", "--profile", str(copy), cwd=tmp_path)
    assert refused.returncode == 2
    assert "name: 'gpu-validation' is the name of the shipped profile gpu-validation" in refused.stderr
    assert "'my-copy'" in refused.stderr
    assert run("synth", cwd=tmp_path).returncode == 0  # the shipped one still works, whatever came first


def test_a_user_file_saved_in_profiles_is_not_a_shipped_profile(tmp_path):
    from profiles import available_profiles

    mine = ROOT / "profiles" / "zz-mine-test.yaml"
    mine.write_text("name: zz-mine-test\n")
    try:
        assert "zz-mine-test" not in available_profiles()
        assert run("synth", "--profile", "zz-mine-test", cwd=tmp_path).returncode == 2
    finally:
        mine.unlink()


def test_profiles_lists_gpu_type_nodes_and_efa():
    result = run("profiles")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["gpu-validation", "p5-training", "p5en-training"]
    assert "4 x p5.48xlarge (8 x H100, 32 EFA)" in result.stdout


@pytest.mark.slow  # synthesizes in processes of its own
def test_every_option_has_help_and_make_help_lists_the_targets():
    for command in ("synth", "plan", "deploy", "destroy", "manifests", "verify", "hcl", "outputs"):
        text = run(command, "--help").stdout.split("options:", 1)[1]
        for option in ("--profile", "--outdir"):
            block = text.split(option, 1)[1].split("\n  -", 1)[0]
            assert len(block.split()) > 3, f"{command} {option} has no help text"
    assert "no arguments (it then synthesizes)" in " ".join(run("--help").stdout.split())
    makefile_help = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    for target in ("synth", "test", "plan deploy destroy", "profiles"):
        assert target in makefile_help.stdout


def test_the_schema_knows_the_instance_types_in_natural_order():
    schema = json.loads((ROOT / "profiles" / "profile.schema.json").read_text())
    enum = schema["$defs"]["GpuNodeGroupConfig"]["properties"]["instance_type"]["enum"]
    assert enum.index("g5.2xlarge") < enum.index("g5.12xlarge") < enum.index("g5.48xlarge")
    for shipped in ("gpu-validation", "p5-training", "p5en-training"):
        first = (ROOT / "profiles" / f"{shipped}.yaml").read_text().splitlines()[0]
        assert first == "# yaml-language-server: $schema=profile.schema.json"


def test_new_profile_is_a_valid_copy_whose_schema_line_works_where_it_lives(tmp_path):
    import main
    from profiles import load_profile
    from profiles.schema import SCHEMA_PATH

    target = tmp_path / "teams" / "vision" / "team-vision.yaml"
    assert main.main(["new-profile", str(target), "--from", "p5-training"]) == 0
    first = target.read_text().splitlines()[0]
    schema = first.removeprefix("# yaml-language-server: $schema=")
    assert schema != first and (target.parent / schema).resolve() == SCHEMA_PATH
    copied = load_profile(str(target))
    assert copied.name == "team-vision" and copied.tags["profile"] == "team-vision"
    assert copied.cluster.gpu_node_groups == load_profile("p5-training").cluster.gpu_node_groups
    assert main.main(["new-profile", str(target)]) == 2, "an existing file is never overwritten"
    for bad_name in ("Not_A_Name", "x"):  # the file name becomes the profile's name: refused, nothing written
        assert main.main(["new-profile", str(tmp_path / f"{bad_name}.yaml")]) == 2
        assert not (tmp_path / f"{bad_name}.yaml").exists()


def test_manifests_never_deletes_what_it_did_not_write(tmp_path):
    mine = tmp_path / "out" / "my-profile.yaml"
    mine.parent.mkdir()
    mine.write_text("name: mine\n")
    refused = run("manifests", "--outdir", str(mine.parent), cwd=tmp_path)
    assert refused.returncode == 2 and "did not write it" in refused.stderr
    assert mine.read_text() == "name: mine\n"
    fresh = tmp_path / "fresh"
    assert run("manifests", "--outdir", str(fresh), cwd=tmp_path).returncode == 0
    written = set((fresh / ".written-by-manifests").read_text().split())
    assert written and written == {p.name for p in fresh.glob("*.yaml")}
    (fresh / "notes.yaml").write_text("keep me\n")  # a file of the user's, added later
    stale = fresh / next(iter(written))
    stale.write_text("old run\n")
    assert run("manifests", "--outdir", str(fresh), cwd=tmp_path).returncode == 0
    assert (fresh / "notes.yaml").read_text() == "keep me\n" and stale.read_text() != "old run\n"


# ------------------------------------------------------------------ a tool that is not installed

INSTALL_LINES = {
    "terraform": "terraform is not installed (or not on PATH): install Terraform 1.10 or later, "
    "https://developer.hashicorp.com/terraform/install",
    "aws": "aws is not installed (or not on PATH): install the AWS CLI v2, "
    "https://docs.aws.amazon.com/cli/latest/userguide/getting-started-install.html",
    "kubectl": "kubectl is not installed (or not on PATH): install kubectl, https://kubernetes.io/docs/tasks/tools/",
}


def run_without_tools(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """main.py with an empty PATH: no terraform, aws, kubectl (nor node: nothing may synthesize)."""
    import os

    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PATH", "TF_PROVIDER_MIRROR")} | {"PATH": str(empty)}
    return subprocess.run(
        [sys.executable, str(ROOT / "main.py"), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def assert_one_line(result: subprocess.CompletedProcess, tool: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip().splitlines() == [INSTALL_LINES[tool]], result.stderr


@pytest.mark.parametrize(
    ("args", "tool"),
    [
        (["plan"], "terraform"),
        (["deploy", "--yes"], "terraform"),
        (["destroy", "--yes"], "terraform"),
        (["validate"], "terraform"),
        (["outputs"], "terraform"),
        (["verify"], "terraform"),
        (["cost"], "aws"),
    ],
)
def test_a_missing_tool_is_one_line_naming_it_and_how_to_install_it(tmp_path, args, tool):
    result = run_without_tools(tmp_path, *args)
    assert_one_line(result, tool)
    assert not (tmp_path / "cdktf.out" / "gpu-validation" / "stacks").exists(), "nothing synthesized first"


def test_quotas_check_without_the_aws_cli_lists_the_needs_then_names_the_cli(tmp_path):
    result = run_without_tools(tmp_path, "quotas", "--check")
    assert_one_line(result, "aws")
    assert "aws service-quotas get-service-quota" in result.stdout  # what it could print without the CLI
    assert "fit the profile" not in result.stdout
    assert run_without_tools(tmp_path, "quotas").returncode == 0  # without --check it reads nothing


def test_manifests_that_would_read_the_build_layer_name_terraform(tmp_path):
    """With the build layer synthesized, manifests reads its state for the NCCL image it built."""
    (tmp_path / "cdktf.out" / "gpu-validation" / "stacks" / "build").mkdir(parents=True)
    assert_one_line(run_without_tools(tmp_path, "manifests"), "terraform")
    # With the image given, or nothing synthesized, it needs no Terraform.
    given = run_without_tools(tmp_path, "manifests", "--nccl-image", "mine:1")
    assert given.returncode == 0, given.stderr


def make_dry_run(*args: str) -> list[str]:
    """The main.py arguments a make target passes (make -n: nothing runs)."""
    import shlex

    done = subprocess.run(["make", "-n", *args], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    (line,) = [line for line in done.stdout.replace("\\\n", " ").splitlines() if "main.py" in line]
    words = shlex.split(line)
    return words[words.index("main.py") + 1 :]


def test_skip_quota_check_reaches_the_deploy_only():
    assert "--skip-quota-check" in make_dry_run("deploy", "SKIP_QUOTA_CHECK=1")
    assert "--skip-quota-check" not in make_dry_run("deploy")
    assert "--skip-quota-check" not in make_dry_run("plan", "SKIP_QUOTA_CHECK=1")
    help_text = " ".join(run("deploy", "--help").stdout.split())
    assert "--skip-quota-check deploy even when the EC2 quotas or the GPU groups' reservations" in help_text


def test_confirm_delete_data_comes_from_the_make_command_line_only():
    words = make_dry_run("destroy", "DELETE_DATA=1", "CONFIRM_DELETE_DATA=gpu-validation", "AUTO_APPROVE=1")
    assert words[-3:] == ["--yes", "--delete-data", "--confirm-delete-data=gpu-validation"]
    # Alone it is passed on, so that main.py refuses it (it asks for no deletion of data).
    assert make_dry_run("destroy", "CONFIRM_DELETE_DATA=gpu-validation")[-1] == "--confirm-delete-data=gpu-validation"
    assert "--confirm-delete-data" not in make_dry_run("plan", "CONFIRM_DELETE_DATA=gpu-validation")
    # Exported in the shell, as AUTO_APPROVE, it confirms nothing.
    import os

    exported = subprocess.run(
        ["make", "-n", "destroy", "DELETE_DATA=1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "CONFIRM_DELETE_DATA": "gpu-validation"},
    )
    assert "--delete-data" in exported.stdout and "--confirm-delete-data" not in exported.stdout


def test_approval_is_a_whole_argument_of_the_make_command_line():
    """An AUTO_APPROVE=1 that MAKEFLAGS carries approves only when the make command line has it as an
    argument of its own, not as words inside another argument's value."""
    import os

    env = {**os.environ, "MAKEFLAGS": "AUTO_APPROVE=1"}
    env.pop("AUTO_APPROVE", None)
    inside = subprocess.run(
        ["make", "-n", "deploy", "PROFILE=gpu-validation AUTO_APPROVE=1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert "main.py" in inside.stdout and "--yes" not in inside.stdout
    assert "--yes" in make_dry_run("deploy", "AUTO_APPROVE=1")
