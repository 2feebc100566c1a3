"""The operate command's ordering, progress and failure handling, with a fake terraform binary,
and the pre-destroy clean-up with a fake kubectl."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from operate.cleanup import pre_destroy_cleanup
from operate.layers import LAYERS, Operator, select_layers

FAKE_TERRAFORM = """#!/usr/bin/env python3
import os, sys
layer = os.path.basename(sys.argv[1].split("=", 1)[1])
command = sys.argv[2]
with open(os.environ["FAKE_TF_LOG"], "a") as log:
    log.write(f"{layer} {command}\\n")
if layer == os.environ.get("FAKE_TF_FAIL") and command in ("apply", "destroy"):
    sys.stderr.write(f"Error: something broke in {layer}\\n")
    sys.exit(1)
sys.exit(2 if command == "plan" else 0)
"""


@pytest.fixture
def fake_terraform(tmp_path):
    binary = tmp_path / "terraform"
    binary.write_text(FAKE_TERRAFORM.replace("#!/usr/bin/env python3", f"#!{sys.executable}"))
    binary.chmod(0o755)
    for layer in LAYERS:
        (tmp_path / "stacks" / layer).mkdir(parents=True)
    return binary


def operator(tmp_path, binary, fail=None, cleanups=None, lines=None):
    log = tmp_path / "calls.log"
    env = {"FAKE_TF_LOG": str(log)}
    if fail:
        env["FAKE_TF_FAIL"] = fail
    op = Operator(tmp_path / "stacks", terraform=str(binary), env=env,
                  log=(lines.append if lines is not None else lambda _: None),
                  cleanup=(lambda: cleanups.append("cleanup")) if cleanups is not None else (lambda: None))
    return op, log


def test_deploy_all_runs_every_layer_in_order(tmp_path, fake_terraform):
    lines: list[str] = []
    op, log = operator(tmp_path, fake_terraform, lines=lines)
    results = op.run("deploy", select_layers("all"))
    assert [r.layer for r in results] == list(LAYERS) and all(r.ok for r in results)
    calls = log.read_text().split("\n")[:-1]
    assert calls == [f"{layer} {step}" for layer in LAYERS for step in ("init", "plan", "apply")]
    assert lines[0] == "[1/5] cluster: deploy ..." and lines[-1].startswith("[5/5] workloads: ok")


def test_deploy_stops_at_the_first_failing_layer_with_its_error(tmp_path, fake_terraform):
    lines: list[str] = []
    op, log = operator(tmp_path, fake_terraform, fail="storage", lines=lines)
    results = op.run("deploy", select_layers("all"))
    assert [(r.layer, r.ok) for r in results] == [("cluster", True), ("storage", False)]
    assert "something broke in storage" in results[-1].detail
    assert "build" not in log.read_text()
    assert any("something broke in storage" in line for line in lines)


def test_destroy_cleans_up_first_then_runs_in_reverse(tmp_path, fake_terraform):
    cleanups: list[str] = []
    op, log = operator(tmp_path, fake_terraform, cleanups=cleanups)
    results = op.run("destroy", select_layers("all"))
    assert cleanups == ["cleanup"]
    assert [r.layer for r in results] == list(reversed(LAYERS))
    assert [line.split()[0] for line in log.read_text().split("\n")[:-1] if line.endswith("destroy")] == list(
        reversed(LAYERS)
    )


def test_aws_only_destroy_needs_no_kubernetes_cleanup(tmp_path, fake_terraform):
    cleanups: list[str] = []
    op, _ = operator(tmp_path, fake_terraform, cleanups=cleanups)
    op.run("destroy", ["cluster", "storage", "build"])
    assert cleanups == []


def test_plan_reports_changes(tmp_path, fake_terraform):
    op, _ = operator(tmp_path, fake_terraform)
    (result,) = op.run("plan", select_layers("cluster"))
    assert result.ok and result.detail == "changes"


def test_unknown_layer():
    with pytest.raises(ValueError, match="choose all or one of cluster, storage, build, addons, workloads"):
        select_layers("network")


class FakeKubectl:
    def __init__(self, objects: dict[str, list[dict]]):
        self.objects = objects
        self.deleted: list[list[str]] = []

    def __call__(self, args):
        if args[0] == "get":
            return subprocess.CompletedProcess(args, 0, json.dumps({"items": self.objects.get(args[1], [])}), "")
        self.deleted.append(args)
        return subprocess.CompletedProcess(args, 0, "", "")


def test_pre_destroy_cleanup_removes_controller_made_resources_only():
    kubectl = FakeKubectl(
        {
            "nodepools.karpenter.sh": [{"metadata": {"name": "gpu"}}],
            "nodeclaims.karpenter.sh": [{"metadata": {"name": "gpu-x1"}}],
            "services": [
                {"metadata": {"name": "hub", "namespace": "jupyterhub"}, "spec": {"type": "LoadBalancer"}},
                {"metadata": {"name": "api", "namespace": "default"}, "spec": {"type": "ClusterIP"}},
            ],
            "persistentvolumeclaims": [
                {"metadata": {"name": "claim-alice", "namespace": "jupyterhub"}, "spec": {"storageClassName": "gp3"}},
                {"metadata": {"name": "fsx", "namespace": "ml-team"}, "spec": {"storageClassName": ""}},
            ],
        }
    )
    deleted = pre_destroy_cleanup(kubectl, log=lambda _: None)
    assert deleted == [
        "nodepools.karpenter.sh/gpu",
        "nodeclaims.karpenter.sh/gpu-x1",
        "service/jupyterhub/hub",
        "pvc/jupyterhub/claim-alice",
    ]
    assert all("--wait=true" in call for call in kubectl.deleted)
