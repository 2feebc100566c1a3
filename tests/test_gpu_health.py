"""The GPU node health check: the judge's parsers on real-format healthy and broken outputs of
nvidia-smi and `dcgmi diag -j` (the DCGM answers validated against DCGM v4.6.0's own JSON schema,
recorded in tests/fixtures/gpu_health/), the quarantine taint put on and lifted, the probe run by
bash on a fake sysfs with fake nvidia-smi and dcgmi and judged end to end, and the DaemonSet the
GPU Operator add-on creates."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from addons.gpu_operator.gpu_health import (
    QUARANTINE_KEY,
    QUARANTINE_TAINT,
    REASON_ANNOTATION,
    Expected,
    IncompleteRound,
    Verdict,
    diag_problems,
    expected_for,
    gpu_problems,
    gpus_found,
    judge,
    node_patch,
)
from addons.gpu_operator.health_check import NAME, PROBE_SCRIPT, expectations, health_check_objects
from components.labels import GPU_TAINT_K8S, NODE_GROUP_LABEL
from profiles import validate_profile
from tests.cases import profile_config
from tests.k8s_validation import validate_object
from tests.synth_helpers import resources
from tests.test_profiles import changed

FIXTURES = Path(__file__).parent / "fixtures" / "gpu_health"
RECORDED_SCHEMA = json.loads((FIXTURES / "dcgm-diag-schema-v4.6.0.json").read_text())
# The recorded schema names json-schema.org's draft-less URI; it is read as draft 7.
VALIDATOR = jsonschema.Draft7Validator(RECORDED_SCHEMA["schema"])
P5 = Expected(gpus=8, efa=32)


def text(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize("name", ["dcgm-diag-healthy-p5.json", "dcgm-diag-row-remap-p5.json"])
def test_the_recorded_diagnostic_answers_have_dcgms_own_layout(name):
    VALIDATOR.validate(json.loads(text(name)))
    # A layout from before DCGM 4 (tests as a dictionary) is not DCGM 4.6's.
    with pytest.raises(jsonschema.ValidationError):
        VALIDATOR.validate({"DCGM Diagnostic": {"test_categories": [{"category": "Deployment", "tests": {}}]}})


def test_nvidia_smi_lists_are_counted_and_errors_reported():
    assert gpus_found(text("nvidia-smi-p5-healthy.csv")) == 8
    assert gpu_problems(text("nvidia-smi-p5-healthy.csv"), 0, "", 8) == []
    lost = gpu_problems(text("nvidia-smi-p5-gpu-lost.csv"), 15, text("nvidia-smi-p5-gpu-lost.err"), 8)
    assert lost == [
        "nvidia-smi failed: Unable to determine the device handle for GPU0000:97:00.0: Unknown Error",
        "the driver reaches 7 of 8 GPUs",
    ]
    assert gpu_problems("", 6, text("nvidia-smi-no-devices.err"), 8) == [
        "nvidia-smi failed: No devices were found",
        "the driver reaches 0 of 8 GPUs",
    ]
    # An instance type outside the catalog: only nvidia-smi's own failure counts.
    assert gpu_problems(text("nvidia-smi-p5-gpu-lost.csv"), 0, "", None) == []


def test_diagnostic_answers_are_judged_by_test_and_gpu():
    assert diag_problems(text("dcgm-diag-healthy-p5.json")) == []
    assert diag_problems(text("dcgm-diag-row-remap-p5.json")) == [
        "DCGM Deployment test software failed on GPU 3: GPU 3 has uncorrectable memory errors and row "
        "remappings are pending"
    ]
    (unreachable,) = diag_problems(text("dcgmi-no-host-engine.txt"))
    assert unreachable.startswith("the DCGM diagnostic answered no JSON: 'Error: unable to establish a connection")
    assert diag_problems(json.dumps({"DCGM Diagnostic": {"runtime_error": "nvvs not found"}})) == [
        "the DCGM diagnostic could not run: nvvs not found"
    ]
    assert diag_problems(json.dumps({"DCGM Diagnostic": {"test_categories": []}})) == [
        "the DCGM diagnostic ran no test"
    ]


def write_round(folder: Path, *, gpus: str, rc: int = 0, err: str = "", efa: int = 32, diag: str | None = None) -> Path:
    folder.mkdir(parents=True)
    (folder / "gpus.csv").write_text(gpus)
    (folder / "gpus.rc").write_text(f"{rc}\n")
    (folder / "gpus.err").write_text(err)
    (folder / "efa.count").write_text(f"{efa}\n")
    (folder / "at").write_text("1764650000\n")
    if diag is None:
        (folder / "diag.skipped").write_text("a process uses a GPU\n")
    else:
        (folder / "diag.json").write_text(diag)
    return folder


def test_a_round_is_judged_whole(tmp_path):
    healthy = text("nvidia-smi-p5-healthy.csv")
    verdict = judge(write_round(tmp_path / "ok", gpus=healthy, diag=text("dcgm-diag-healthy-p5.json")), P5)
    assert verdict == Verdict(healthy=True, reasons=(), complete=True)
    busy = judge(write_round(tmp_path / "busy", gpus=healthy), P5)
    assert busy.healthy and not busy.complete  # no diagnostic while a job runs
    efa = judge(write_round(tmp_path / "efa", gpus=healthy, efa=31, diag=text("dcgm-diag-healthy-p5.json")), P5)
    assert efa.reasons == ("31 of 32 EFA devices present",)
    broken = judge(
        write_round(
            tmp_path / "broken",
            gpus=text("nvidia-smi-p5-gpu-lost.csv"),
            rc=15,
            err=text("nvidia-smi-p5-gpu-lost.err"),
            diag=text("dcgm-diag-row-remap-p5.json"),
        ),
        P5,
    )
    assert not broken.healthy and len(broken.reasons) == 3
    # A round being replaced as it is read is never judged: an absent list is not "0 GPUs".
    partial = write_round(tmp_path / "partial", gpus=healthy, diag="{}")
    (partial / "gpus.csv").unlink()
    with pytest.raises(IncompleteRound):
        judge(partial, P5)


NODE = {
    "metadata": {"name": "ip-10-0-1-5", "resourceVersion": "4711", "labels": {}},
    "spec": {"taints": [dict(GPU_TAINT_K8S)]},
}


def test_a_failing_node_is_quarantined_and_released_only_by_a_full_pass():
    failing = Verdict(healthy=False, reasons=("the driver reaches 7 of 8 GPUs",), complete=True)
    patch = node_patch(NODE, failing, "2026-12-02T06:00:00Z")
    assert patch == {
        "metadata": {
            "resourceVersion": "4711",
            "annotations": {REASON_ANNOTATION: "2026-12-02T06:00:00Z: the driver reaches 7 of 8 GPUs"},
        },
        "spec": {"taints": [dict(GPU_TAINT_K8S), QUARANTINE_TAINT]},  # the GPU taint stays
    }
    quarantined = {**NODE, "spec": patch["spec"]}
    assert node_patch(quarantined, failing, "later") is None  # already quarantined
    busy_but_fine = Verdict(healthy=True, reasons=(), complete=False)
    assert node_patch(quarantined, busy_but_fine, "later") is None  # not released without the diagnostic
    released = node_patch(quarantined, Verdict(healthy=True, reasons=(), complete=True), "2026-12-02T07:00:00Z")
    assert released is not None
    assert released["spec"]["taints"] == [dict(GPU_TAINT_K8S)]
    assert released["metadata"]["annotations"][REASON_ANNOTATION] == "2026-12-02T07:00:00Z: passed every check"
    assert node_patch(NODE, Verdict(healthy=True, reasons=(), complete=True), "now") is None
    assert QUARANTINE_TAINT == {"key": QUARANTINE_KEY, "value": "failed", "effect": "NoSchedule"}


def test_expectations_follow_the_node_group_else_the_instance_type():
    config = profile_config("p5-training")
    wanted = expectations(config)
    assert expected_for({NODE_GROUP_LABEL: "p5-efa"}, wanted) == Expected(gpus=8, efa=32)
    karpenter = {"node.kubernetes.io/instance-type": "g6.xlarge", "karpenter.sh/nodepool": "gpu"}
    assert expected_for(karpenter, wanted) == Expected(gpus=1, efa=0)
    assert expected_for({"node.kubernetes.io/instance-type": "x9.huge"}, wanted) == Expected(gpus=None, efa=0)
    doc = yaml.safe_load((Path(__file__).resolve().parents[1] / "profiles" / "gpu-validation.yaml").read_text())
    no_efa = validate_profile(changed(doc, cluster__gpu_node_groups__0__efa_enabled=False))
    assert expectations(no_efa)["groups"]["gpu-efa"] == {"gpus": 1, "efa": 0}


FAKE_NVIDIA_SMI = """#!/bin/sh
case "$*" in
  *--query-gpu*) cat "$FAKE/gpus.csv" ;;
  *--query-compute-apps*) cat "$FAKE/apps.csv" ;;
esac
"""
FAKE_DCGMI = """#!/bin/sh
echo "$*" > "$FAKE/dcgmi.args"
cat "$FAKE/diag.json"
"""


def run_probe(tmp_path: Path, *, apps: str, efa: int) -> Path:
    fake, results, sysfs = tmp_path / "fake", tmp_path / "results", tmp_path / "sys"
    for folder in (fake, results):
        folder.mkdir(parents=True)
    for index in range(efa):
        (sysfs / "class/infiniband" / f"rdmap{index}s0").mkdir(parents=True)
    (fake / "nvidia-smi").write_text(FAKE_NVIDIA_SMI)
    (fake / "dcgmi").write_text(FAKE_DCGMI)
    for tool in ("nvidia-smi", "dcgmi"):
        (fake / tool).chmod(0o755)
    (fake / "gpus.csv").write_text(text("nvidia-smi-p5-healthy.csv"))
    (fake / "apps.csv").write_text(apps)
    (fake / "diag.json").write_text(text("dcgm-diag-row-remap-p5.json"))
    script = PROBE_SCRIPT.replace("/sys/class/infiniband", str(sysfs / "class/infiniband"))
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "FAKE": str(fake), "HOST_ENGINE": "localhost:5555"}
    done = subprocess.run(
        ["bash", "-c", script, "probe", str(results), "0"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in results.iterdir()) == ["latest"]  # the round folder was renamed whole
    return results / "latest"


def test_the_probe_runs_the_diagnostic_only_on_an_idle_node_and_through_the_agents_host_engine(tmp_path):
    idle = run_probe(tmp_path / "idle", apps="", efa=32)
    assert (tmp_path / "idle/fake/dcgmi.args").read_text().split() == [
        "diag",
        "--host",
        "localhost:5555",
        "-r",
        "1",
        "-j",
    ]
    verdict = judge(idle, P5)
    assert not verdict.healthy and verdict.complete and "GPU 3" in verdict.reasons[0]
    busy = run_probe(tmp_path / "busy", apps="81234, GPU-0c4f2a1e-7b3d-4e8f-9a6b-000000000000\n", efa=32)
    assert not (tmp_path / "busy/fake/dcgmi.args").exists()
    assert judge(busy, P5) == Verdict(healthy=True, reasons=(), complete=False)
    missing_efa = run_probe(tmp_path / "efa", apps="x\n", efa=30)
    assert judge(missing_efa, P5).reasons == ("30 of 32 EFA devices present",)


def test_the_daemonset_runs_on_every_gpu_node_and_only_the_judge_talks_to_the_api(synthesized):
    config = synthesized.configs["p5-training"]
    objects = {o["kind"]: o for o in health_check_objects("gpu-operator", config, 15)}
    for obj in objects.values():
        validate_object(obj, config.cluster.kubernetes_version)
    daemonset = objects["DaemonSet"]["spec"]["template"]["spec"]
    assert daemonset["tolerations"] == [{"operator": "Exists"}]  # the GPU taint and its own quarantine taint
    (term,) = daemonset["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert term == {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}]}
    probe, judge_container = daemonset["containers"]
    assert probe["command"][-1] == "900" and probe["securityContext"] == {"privileged": True}
    assert "resources" in probe and "nvidia.com/gpu" not in probe["resources"].get("limits", {})  # takes no GPU
    assert (
        judge_container["securityContext"]["runAsNonRoot"]
        and judge_container["securityContext"]["readOnlyRootFilesystem"]
    )
    assert objects["ClusterRole"]["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}]
    data = objects["ConfigMap"]["data"]
    assert data["health-probe.sh"] == PROBE_SCRIPT
    compile(data["gpu_health.py"], "gpu_health.py", "exec")
    assert json.loads(data["expectations.json"])["groups"] == {"p5-efa": {"gpus": 8, "efa": 32}}
    # Created with the GPU Operator's namespace, in the addons layer.
    created = [
        body["manifest"]
        for body in resources(synthesized.stack("p5-training", "addons"), "kubernetes_manifest").values()
        if isinstance(body["manifest"], dict) and body["manifest"]["metadata"].get("name") == NAME
    ]
    assert {o["kind"] for o in created} == set(objects)
