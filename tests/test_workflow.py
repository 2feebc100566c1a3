"""The GitHub Actions workflow shipped for users' repositories validates against the workflow schema."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

from operate.layers import select_layers
from profiles.versions import AWS_PROVIDER_VERSION
from stacks import LAYERS

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = Path(__file__).resolve().parents[1] / ".github" / "workflows" / "platform.yml"


def test_workflow_matches_the_github_schema():
    result = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_workflow_tests_with_a_mirror_and_plans_the_aws_layers_with_oidc():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    test_steps = workflow["jobs"]["test"]["steps"]
    runs = [step.get("run") for step in test_steps]
    # The offline terraform checks are mandatory in CI: the job makes the mirror they need first.
    assert runs.index("make provider-mirror") < runs.index("make test")
    (tests,) = [step for step in test_steps if step.get("run") == "make test"]
    assert tests["env"]["CI"] == "true" and tests["env"]["TF_PROVIDER_MIRROR"].endswith(".tools/terraform-mirror")
    plan = workflow["jobs"]["plan"]
    assert plan["permissions"]["id-token"] == "write" and plan["needs"] == "test"
    script = next(step["run"] for step in plan["steps"] if step.get("name", "").startswith("Plan"))
    assert "make plan" in script and "LAYER=aws" in script
    upload = next(step for step in plan["steps"] if step.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["with"]["path"] == "cdktf.out/*/stacks/*/plan.txt"


def test_make_provider_mirror_pins_the_provider_the_tests_use():
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("provider-mirror:", 1)[1].split("\n\n", 1)[0]
    assert f'version = "{AWS_PROVIDER_VERSION}"' in recipe and "providers mirror" in recipe


def test_synth_installs_only_the_app_and_lint_adds_the_test_tooling(tmp_path):
    import shutil
    import subprocess

    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    for name in ("pyproject.toml", "uv.lock"):
        (tmp_path / name).touch()

    def dry_run(target: str) -> list[str]:
        done = subprocess.run(["make", "-n", target], cwd=tmp_path, capture_output=True, text=True, check=True)
        return [line for line in done.stdout.splitlines() if " sync " in line]

    assert [line.split(" sync ", 1)[1] for line in dry_run("synth")] == ["--frozen --no-dev --inexact"]
    assert [line.split(" sync ", 1)[1] for line in dry_run("lint")] == ["--frozen --no-dev --inexact", "--frozen"]
    assert "unexport PYTHONDONTWRITEBYTECODE" in (ROOT / "Makefile").read_text()


def test_workflow_validates_every_layer_of_every_shipped_profile_with_the_real_providers():
    from profiles import available_profiles

    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["test"]["steps"]
    (step,) = [step for step in steps if "make validate" in step.get("run", "")]
    assert all(f" {profile} " in step["run"] or f" {profile};" in step["run"] for profile in available_profiles())
    assert "LAYER=" not in step["run"]  # every layer


def test_every_action_is_pinned_by_commit():
    import re

    uses = re.findall(r"uses:\s*(\S+)", WORKFLOW.read_text())
    assert uses and all(re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", use) for use in uses), uses


def test_only_an_auto_approve_on_the_make_command_line_approves(tmp_path):
    """An AUTO_APPROVE exported in a shell session must not turn every later deploy into --yes."""
    import os
    import shutil
    import subprocess

    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    for name in ("pyproject.toml", "uv.lock"):
        (tmp_path / name).touch()
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / ".synced").touch()

    def dry_run(*args: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            ["make", "-n", "-o", ".venv/.synced", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, **(env or {})},
        )
        return done.stdout

    assert "--yes" in dry_run("deploy", "AUTO_APPROVE=1")
    assert "--yes" in dry_run("deploy", "AUTO_APPROVE=true", "LAYER=cluster")
    assert "--yes" not in dry_run("deploy", env={"AUTO_APPROVE": "1"})
    # make takes a variable in an exported MAKEFLAGS (or GNUMAKEFLAGS) as one of its command line.
    for flags in ("MAKEFLAGS", "GNUMAKEFLAGS"):
        for value in ("AUTO_APPROVE=1", " -- AUTO_APPROVE=1", "s -- AUTO_APPROVE=true"):
            assert "--yes" not in dry_run("deploy", env={flags: value}), (flags, value)
            assert "--yes" not in dry_run("pause", env={flags: value}), (flags, value)
    exported = {"MAKEFLAGS": "CONFIRM_DELETE_DATA=x AUTO_APPROVE=1"}
    assert "--confirm-delete-data" not in dry_run("destroy", "DELETE_DATA=1", env=exported)
    assert "--confirm-delete-data='x'" in dry_run("destroy", "DELETE_DATA=1", "CONFIRM_DELETE_DATA=x")
    assert "--yes" not in dry_run("destroy")
    assert "--delete-data" in dry_run("destroy", "DELETE_DATA=1") and "--delete-data" not in dry_run("deploy")


# ------------------------------------------------------------------ the CI plan role (docs/operations.md)
OPERATIONS = ROOT / "docs" / "operations.md"
STATE_OBJECT = "arn:aws:s3:::<bucket>/<key_prefix>/<name>/{}"
# Layers whose state holds secrets: the addons layer's admin passwords, and the workloads layer's
# copy of what it reads from the addons layer (a remote state's outputs are stored in the reader's).
SECRET_STATES = ("addons", "workloads")


def documented_plan_role_policy() -> dict:
    section = OPERATIONS.read_text().split("## Continuous integration", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```json\n(.*?)```", section, re.S)
    return json.loads(block)


def _listed(value: object) -> list[str]:
    return [value] if isinstance(value, str) else list(value)  # type: ignore[call-overload]


def _covers(pattern: str, value: str, *, case_sensitive: bool = True) -> bool:
    """IAM wildcard matching: `*` any run of characters, `?` one (S3 keys are case-sensitive)."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, 0 if case_sensitive else re.I) is not None


def _grants(statement: dict, action: str, resource: str) -> bool:
    return any(_covers(a, action, case_sensitive=False) for a in _listed(statement.get("Action", []))) and any(
        _covers(r, resource) for r in _listed(statement.get("Resource", []))
    )


def _secret_objects() -> list[str]:
    return [
        STATE_OBJECT.format(f"{layer}.tfstate{suffix}")
        for layer in SECRET_STATES
        for suffix in ("", ".tflock", ".backup")
    ] + [f"arn:aws:s3:::<bucket>/another/prefix/<name>/{layer}.tfstate" for layer in SECRET_STATES]


def test_the_ci_job_plans_only_layers_whose_state_holds_no_secret():
    runs = " ".join(step.get("run", "") for step in yaml.safe_load(WORKFLOW.read_text())["jobs"]["plan"]["steps"])
    assert re.findall(r"LAYER=(\w+)", runs) == ["aws"]
    assert set(select_layers("aws")).isdisjoint(SECRET_STATES) and set(SECRET_STATES) <= set(LAYERS)


def test_the_plan_role_grants_no_secret_state():
    """(a) No Allow of the documented policy reaches the addons or workloads state, by name or by a
    wildcard; object reads are exact keys."""
    allows = [s for s in documented_plan_role_policy()["Statement"] if s["Effect"] == "Allow"]
    for statement in allows:
        for obj in _secret_objects():
            assert not any(_covers(r, obj) for r in _listed(statement["Resource"])), (statement["Sid"], obj)
        objects = [r for r in _listed(statement["Resource"]) if r.startswith("arn:aws:s3:::<bucket>/")]
        assert not any("*" in r or "?" in r for r in objects), statement["Sid"]


def test_the_plan_role_denies_the_secret_states_explicitly():
    """(b) An unconditional Deny of every S3 action on the addons and workloads states, under any
    prefix: it holds whatever else the role is granted."""
    denies = [s for s in documented_plan_role_policy()["Statement"] if s["Effect"] == "Deny"]
    for obj in _secret_objects():
        assert any(
            "Condition" not in s and _grants(s, "s3:GetObject", obj) and _grants(s, "s3:GetObjectVersion", obj)
            for s in denies
        ), obj


def test_the_plan_role_reads_exactly_what_the_planned_layers_read(synthesized):
    """Each planned layer's own state and lock, the states it reads through remote state (from the
    synthesized stacks of a profile with an S3 backend), the profile's claim and its account
    binding (operate/state_claim.py): nothing more."""
    config = synthesized.configs["s3-state"]
    prefix = f"{config.state.key_prefix}/{config.name}/"
    needed = {STATE_OBJECT.format("profile-source"), STATE_OBJECT.format("account-binding")}
    for layer in select_layers("aws"):
        stack = synthesized.stack("s3-state", layer)
        own = stack["terraform"]["backend"]["s3"]["key"]
        remote = [body["config"]["key"] for body in stack.get("data", {}).get("terraform_remote_state", {}).values()]
        for key in (own, f"{own}.tflock", *remote):
            assert key.startswith(prefix), key
            needed.add(STATE_OBJECT.format(key.removeprefix(prefix)))
    allows = [s for s in documented_plan_role_policy()["Statement"] if s["Effect"] == "Allow"]
    readable = {
        r
        for s in allows
        if any(_covers(a, "s3:GetObject") for a in _listed(s["Action"]))
        for r in _listed(s["Resource"])
    }
    assert readable == needed
    for layer in select_layers("aws"):
        lock = STATE_OBJECT.format(f"{layer}.tfstate.tflock")
        assert all(any(_grants(s, action, lock) for s in allows) for action in ("s3:PutObject", "s3:DeleteObject"))


def test_the_plan_job_uploads_no_binary_plan():
    """(c) Only the text of `terraform show -no-color` leaves the runner; the saved plans are
    deleted before the upload."""
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["plan"]["steps"]
    uploads = [i for i, step in enumerate(steps) if step.get("uses", "").startswith("actions/upload-artifact")]
    assert uploads
    for index in uploads:
        paths = steps[index]["with"]["path"].split()
        assert paths and all(path.endswith(".txt") and "tfplan" not in path for path in paths), paths
    (render,) = [i for i, step in enumerate(steps) if "show -no-color" in step.get("run", "")]
    assert render < min(uploads)
    assert re.search(r"show -no-color tfplan > [^\n]*\.txt", steps[render]["run"])
    assert 'rm -f "$plan"' in steps[render]["run"]
    assert "-out" not in " ".join(step.get("run", "") for step in steps)
