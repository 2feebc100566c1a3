"""The GitHub Actions workflow shipped for users' repositories validates against the workflow schema."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from stacks import LAYERS

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = Path(__file__).resolve().parents[1] / ".github" / "workflows" / "platform.yml"


def test_workflow_matches_the_github_schema():
    result = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
                             str(WORKFLOW)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_workflow_plans_every_layer_with_oidc():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    plan = workflow["jobs"]["plan"]
    assert plan["permissions"]["id-token"] == "write" and plan["needs"] == "test"
    script = next(step["run"] for step in plan["steps"] if step.get("name", "").startswith("Plan"))
    loop = next(line.strip() for line in script.splitlines() if line.strip().startswith("for layer in"))
    command = loop.split("$(", 1)[1].rsplit(")", 1)[0]
    listed = subprocess.run(command.replace(".venv/bin/python", sys.executable), shell=True, cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert listed.stdout.split() == list(LAYERS), listed.stderr
    assert any(step.get("uses", "").startswith("actions/upload-artifact") for step in plan["steps"])
    assert "make test" in [step.get("run") for step in workflow["jobs"]["test"]["steps"]]
