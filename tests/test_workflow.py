"""The GitHub Actions workflow shipped for users' repositories validates against the workflow schema."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from profiles.versions import AWS_PROVIDER_VERSION

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
    assert upload["with"]["path"] == "cdktf.out/*/stacks/*/tfplan"


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
