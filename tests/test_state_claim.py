"""The profile-name claim lives where the state lives: local state folder or the S3 bucket."""

from __future__ import annotations

import subprocess
from pathlib import Path

from operate.state_claim import claim_local, claim_s3, profile_identity


def test_a_second_file_with_the_same_name_is_refused_and_the_claim_survives_a_clean(tmp_path):
    state = tmp_path / "state" / "team-a"
    assert claim_local(state, "team-a", "my-profiles/team-a.yaml") is None
    assert claim_local(state, "team-a", "my-profiles/team-a.yaml") is None  # the owner again
    clash = claim_local(state, "team-a", "my-profiles/other.yaml")
    assert clash is not None and "my-profiles/team-a.yaml" in clash and "its own `name`" in clash
    assert (state / ".profile-source").read_text() == "my-profiles/team-a.yaml\n"


def test_identity_is_the_path_inside_the_project_on_every_clone(tmp_path):
    root = tmp_path / "clone"
    (root / "my-profiles").mkdir(parents=True)
    (root / "my-profiles" / "a.yaml").write_text("")
    assert profile_identity(root / "my-profiles" / "a.yaml", root) == "my-profiles/a.yaml"
    assert profile_identity(tmp_path / "x.yaml", root) == str((tmp_path / "x.yaml").resolve())


class Bucket:
    """A fake `aws s3api` over a dict of objects."""

    def __init__(self):
        self.objects: dict[str, str] = {}

    def __call__(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        key = args[args.index("--key") + 1]
        if args[1] == "get-object":
            if key not in self.objects:
                return subprocess.CompletedProcess(args, 254, "", "An error occurred (NoSuchKey)")
            Path(args[-1]).write_text(self.objects[key])
            return subprocess.CompletedProcess(args, 0, "{}", "")
        assert args[1] == "put-object" and "--if-none-match" in args
        self.objects[key] = Path(args[args.index("--body") + 1]).read_text()
        return subprocess.CompletedProcess(args, 0, "{}", "")


def test_the_s3_claim_is_shared_by_everyone_using_the_bucket():
    bucket = Bucket()
    assert claim_s3("b", "gpu-platform", "us-west-2", "team-a", "my-profiles/a.yaml", aws=bucket) is None
    assert bucket.objects == {"gpu-platform/team-a/profile-source": "my-profiles/a.yaml\n"}
    assert claim_s3("b", "gpu-platform", "us-west-2", "team-a", "my-profiles/a.yaml", aws=bucket) is None
    clash = claim_s3("b", "gpu-platform", "us-west-2", "team-a", "elsewhere/b.yaml", aws=bucket)
    assert clash is not None and "s3://b/gpu-platform/team-a/profile-source" in clash


def test_a_claim_written_meanwhile_by_another_file_wins():
    """Two first uses at once: the conditional write of the second fails (PreconditionFailed), which
    then reads the first one's claim and stops on the clash instead of overwriting it."""

    class Raced(Bucket):
        def __call__(self, args: list[str]) -> subprocess.CompletedProcess[str]:
            key = args[args.index("--key") + 1]
            if args[1] == "put-object" and key not in self.objects:
                self.objects[key] = "elsewhere/b.yaml\n"  # the other writer got there first
                return subprocess.CompletedProcess(args, 254, "", "An error occurred (PreconditionFailed)")
            return super().__call__(args)

    bucket = Raced()
    clash = claim_s3("b", "gpu-platform", "us-west-2", "team-a", "my-profiles/a.yaml", aws=bucket)
    assert clash is not None and "elsewhere/b.yaml" in clash
    assert bucket.objects == {"gpu-platform/team-a/profile-source": "elsewhere/b.yaml\n"}


def test_an_unreadable_claim_stops_with_the_reason():
    def denied(args: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(args, 254, "", "An error occurred (AccessDenied)")

    assert "AccessDenied" in (claim_s3("b", "p", "us-west-2", "n", "x.yaml", aws=denied) or "")


def test_the_default_profiles_state_follows_its_file_rename(tmp_path):
    """profiles/g6-validation.yaml became profiles/gpu-validation.yaml (the file now carries the
    profile's name): the state it claimed stays its own; another file still cannot take it."""
    state = tmp_path / "state" / "gpu-validation"
    assert claim_local(state, "gpu-validation", "profiles/g6-validation.yaml") is None
    assert claim_local(state, "gpu-validation", "profiles/gpu-validation.yaml") is None
    assert (state / ".profile-source").read_text() == "profiles/gpu-validation.yaml\n"
    assert claim_local(state, "gpu-validation", "my/gpu-validation.yaml") is not None


def _modes(folder: Path) -> dict[str, int]:
    return {path.name: path.stat().st_mode & 0o777 for path in sorted(folder.iterdir())}


def test_the_state_folder_is_owner_only_and_an_older_one_is_tightened(tmp_path):
    import os

    state = tmp_path / "state" / "team-a"
    previous = os.umask(0o022)
    try:
        assert claim_local(state, "team-a", "my-profiles/team-a.yaml") is None
        assert state.stat().st_mode & 0o777 == 0o700
        assert _modes(state) == {".profile-source": 0o600}
        # A folder and states an older version left readable to the group and the world.
        state.chmod(0o755)
        for name in ("cluster.tfstate", "cluster.tfstate.backup", ".terraform.tfstate.lock.info"):
            (state / name).write_text("{}")
            (state / name).chmod(0o644)
        assert claim_local(state, "team-a", "my-profiles/team-a.yaml") is None
    finally:
        os.umask(previous)
    assert state.stat().st_mode & 0o777 == 0o700
    assert set(_modes(state).values()) == {0o600}


def test_real_terraform_writes_state_and_its_backups_owner_only_from_the_first_write(tmp_path):
    """Terraform writes <layer>.tfstate and <layer>.tfstate.backup with the process's umask (0644
    under the usual 022) and keeps an existing file's mode: the Operator runs it under umask 077.
    A configuration without providers (terraform_data), applied on a local backend, as the
    product's deploy does: plan to a saved plan, apply it; twice, so Terraform writes a backup."""
    import json
    import os
    import shutil

    import pytest

    from operate.layers import Operator

    if shutil.which("terraform") is None:
        pytest.skip("SKIPPING: terraform is not on PATH")
    state = tmp_path / "state" / "p"
    stacks = tmp_path / "out" / "stacks"
    (stacks / "cluster").mkdir(parents=True)
    assert claim_local(state, "p", "p.yaml") is None

    def configure(value: str) -> None:
        stack = {
            "terraform": {"backend": {"local": {"path": "../../../state/p/cluster.tfstate"}}},
            "resource": {"terraform_data": {"x": {"input": value}}},
            "output": {"cluster_name": {"value": value}},
        }
        (stacks / "cluster" / "cdk.tf.json").write_text(json.dumps(stack))

    env = {"TF_CLI_CONFIG_FILE": str(tmp_path / "none.rc")}
    (tmp_path / "none.rc").write_text("")
    previous = os.umask(0o022)
    try:
        operator = Operator(stacks, env=env, log=lambda _: None)
        configure("a")
        first = operator.terraform_in(stacks / "cluster", "init", "-input=false")
        assert first.returncode == 0, first.stderr
        applied = operator.terraform_in(stacks / "cluster", "apply", "-auto-approve", "-input=false")
        assert applied.returncode == 0, applied.stderr
        assert _modes(state) == {".profile-source": 0o600, "cluster.tfstate": 0o600}  # Terraform's own write
        configure("b")
        [result] = operator.run("deploy", ["cluster"])
        assert result.ok, result.detail
        configure("c")
        [result] = operator.run("deploy", ["cluster"])
        assert result.ok, result.detail
    finally:
        os.umask(previous)
    assert _modes(state) == {".profile-source": 0o600, "cluster.tfstate": 0o600, "cluster.tfstate.backup": 0o600}
    assert state.stat().st_mode & 0o777 == 0o700
    assert (stacks / "cluster" / ".terraform").stat().st_mode & 0o777 == 0o700
    assert json.loads((state / "cluster.tfstate").read_text())["outputs"]["cluster_name"]["value"] == "c"
