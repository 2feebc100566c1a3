"""The GPU node health check: the judge's parsers on real-format healthy and broken outputs of
nvidia-smi and `dcgmi health -c -j` (dcgmi's JSON output tree at DCGM v4.6.0: dcgmi/Health.cpp
and dcgmi/DcgmiOutput.cpp), the quarantine taint put on and lifted, a stalled probe, the probe run
by bash on a fake sysfs with fake nvidia-smi and dcgmi and judged end to end, and the DaemonSet
the GPU Operator add-on creates."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from addons.gpu_operator.gpu_health import (
    QUARANTINE_KEY,
    QUARANTINE_TAINT,
    REASON_ANNOTATION,
    Expected,
    IncompleteRound,
    Verdict,
    expected_for,
    gpu_problems,
    gpus_found,
    health_report,
    judge,
    node_patch,
    stalled,
)
from addons.gpu_operator.health_check import NAME, PROBE_SCRIPT, expectations, health_check_objects
from components.labels import GPU_TAINT_K8S, NODE_GROUP_LABEL
from profiles import validate_profile
from tests.cases import profile_config
from tests.k8s_validation import validate_object
from tests.synth_helpers import resources
from tests.test_profiles import changed

FIXTURES = Path(__file__).parent / "fixtures" / "gpu_health"
P5 = Expected(gpus=8, efa=32)


def text(name: str) -> str:
    return (FIXTURES / name).read_text()


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


def test_dcgm_health_reports_are_read_by_system_and_gpu():
    assert health_report(text("dcgm-health-healthy-p5.json")) == ([], [])
    assert health_report(text("dcgm-health-row-remap-failed-p5.json")) == (
        ["GPU 3 Memory system Failure: GPU 3 had uncorrectable memory errors and row remapping failed."],
        [],
    )
    failures, warnings = health_report(text("dcgm-health-pcie-replays-p5.json"))
    assert failures == [] and warnings[0].startswith("GPU 5 PCIe system Warning: Detected more than 8 PCIe")


def test_a_node_wide_imex_finding_is_not_a_gpu_failure():
    """On an NVLink instance without an IMEX domain, DCGM's NVLink watch reports the IMEX daemon as
    not READY, a Failure of the node-wide entity ("None"), and "Overall Health" says Failure. A
    reader that trusts the overall verdict quarantines every p5 node; the GPUs themselves are fine."""
    answer = json.loads(text("dcgm-health-imex-not-ready-p5.json"))
    assert answer["body"]["Overall Health"]["value"] == "Failure"
    assert health_report(text("dcgm-health-imex-not-ready-p5.json")) == ([], [])


def write_round(
    folder: Path, *, gpus: str, rc: int = 0, err: str = "", efa: int = 32, health: str | None = None, health_rc: int = 0
) -> Path:
    folder.mkdir(parents=True)
    (folder / "gpus.csv").write_text(gpus)
    (folder / "gpus.rc").write_text(f"{rc}\n")
    (folder / "gpus.err").write_text(err)
    (folder / "efa.count").write_text(f"{efa}\n")
    (folder / "at").write_text("1764650000\n")
    if health is None:
        (folder / "health.unavailable").write_text("the DCGM host engine at localhost:5555 does not answer\n")
    else:
        (folder / "health.json").write_text(health)
        (folder / "health.err").write_text("")
        (folder / "health.rc").write_text(f"{health_rc}\n")
    return folder


def test_a_round_is_judged_whole(tmp_path):
    healthy = text("nvidia-smi-p5-healthy.csv")
    verdict = judge(write_round(tmp_path / "ok", gpus=healthy, health=text("dcgm-health-healthy-p5.json")), P5)
    assert verdict == Verdict(healthy=True, reasons=(), complete=True)
    # A host engine that does not answer fails nothing, but the round is not complete.
    unanswered = judge(write_round(tmp_path / "unanswered", gpus=healthy), P5)
    assert unanswered.healthy and not unanswered.complete and "does not answer" in unanswered.notes[0]
    watches_off = judge(
        write_round(tmp_path / "off", gpus=healthy, health=text("dcgmi-health-watches-off.txt"), health_rc=253), P5
    )
    assert watches_off.healthy and not watches_off.complete and "Health watches not enabled" in watches_off.notes[0]
    # DCGM's Warning is noted, not quarantined.
    warning = judge(write_round(tmp_path / "warn", gpus=healthy, health=text("dcgm-health-pcie-replays-p5.json")), P5)
    assert warning.healthy and warning.complete and "PCIe replays" in warning.notes[0]
    efa = judge(write_round(tmp_path / "efa", gpus=healthy, efa=31, health=text("dcgm-health-healthy-p5.json")), P5)
    assert efa.reasons == ("31 of 32 EFA devices present",)
    broken = judge(
        write_round(
            tmp_path / "broken",
            gpus=text("nvidia-smi-p5-gpu-lost.csv"),
            rc=15,
            err=text("nvidia-smi-p5-gpu-lost.err"),
            health=text("dcgm-health-row-remap-failed-p5.json"),
        ),
        P5,
    )
    assert not broken.healthy and len(broken.reasons) == 3
    assert (
        broken.reasons[2]
        == "DCGM health: GPU 3 Memory system Failure: GPU 3 had uncorrectable memory errors and row remapping failed."
    )
    # The round that found no watches (the engine restarted) and set them proves nothing about DCGM.
    just_set = write_round(tmp_path / "set", gpus=healthy, health=text("dcgm-health-healthy-p5.json"))
    (just_set / "watches.set").write_text("Health monitor systems set successfully.\n0\n")
    assert not judge(just_set, P5).complete
    # A round being replaced as it is read is never judged: an absent list is not "0 GPUs".
    partial = write_round(tmp_path / "partial", gpus=healthy, health="{}")
    (partial / "gpus.csv").unlink()
    with pytest.raises(IncompleteRound):
        judge(partial, P5)


def test_a_probe_that_stops_finishing_rounds_is_a_failure():
    """nvidia-smi and dcgmi can hang on a wedged driver where no time limit kills them: the judge
    sees the last round age and quarantines the node."""
    assert stalled(1764650000, 1764650000 + 3 * 900 + 300, 900) is None
    verdict = stalled(1764650000, 1764650000 + 3 * 900 + 301, 900)
    assert verdict is not None and not verdict.healthy and "finished no round for 50 minutes" in verdict.reasons[0]
    assert node_patch(NODE, verdict, "now") is not None


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
    unanswered = Verdict(healthy=True, reasons=(), complete=False)
    assert node_patch(quarantined, unanswered, "later") is None  # not released without DCGM's report
    passing = Verdict(healthy=True, reasons=(), complete=True)
    # DCGM's count-over-time checks see the last minute only: one or two quiet rounds do not release.
    assert node_patch(quarantined, passing, "later", passes=1) is None
    assert node_patch(quarantined, passing, "later", passes=2) is None
    released = node_patch(quarantined, passing, "2026-12-02T07:00:00Z", passes=3)
    assert released is not None
    assert released["spec"]["taints"] == [dict(GPU_TAINT_K8S)]
    assert released["metadata"]["annotations"][REASON_ANNOTATION] == (
        "2026-12-02T07:00:00Z: passed every check 3 rounds in a row"
    )
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
cat "$FAKE/gpus.csv"
"""
FAKE_DCGMI = """#!/bin/sh
echo "$*" >> "$FAKE/dcgmi.calls"
case "$1" in
  discovery) [ -f "$FAKE/engine-up" ] ;;
  health)
    case "$*" in
      *" -c "*) cat "$FAKE/health.json" ;;
      *" -s a"*) echo "Health monitor systems set successfully." ;;
    esac ;;
  *) exit 1 ;;
esac
"""


def run_probe(
    tmp_path: Path,
    *,
    efa: int,
    engine_up: bool = True,
    dcgm: str = "1",
    report: str = "dcgm-health-row-remap-failed-p5.json",
    machine: str | None = None,
) -> Path:
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
    (fake / "health.json").write_text(text(report))
    if engine_up:
        (fake / "engine-up").write_text("")
    if machine is not None:  # `uname -m` of the node
        (fake / "uname").write_text(f"#!/bin/sh\necho {machine}\n")
        (fake / "uname").chmod(0o755)
    script = PROBE_SCRIPT.replace("/sys/class/infiniband", str(sysfs / "class/infiniband"))
    env = {
        **os.environ,
        "PATH": f"{fake}:{os.environ['PATH']}",
        "FAKE": str(fake),
        "HOST_ENGINE": "localhost:5555",
        "DCGM_HEALTH": dcgm,
    }
    done = subprocess.run(
        ["bash", "-c", script, "probe", str(results), "0"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in results.iterdir()) == ["latest"]  # the round folder was renamed whole
    return results / "latest"


def test_the_probe_reads_dcgm_health_through_the_agents_host_engine_and_never_starts_one(tmp_path):
    up = run_probe(tmp_path / "up", efa=32)
    calls = (tmp_path / "up/fake/dcgmi.calls").read_text().splitlines()
    # Watches are the engine's already: only read (setting them each round would pile up watchers).
    assert calls == ["discovery --host localhost:5555 -l", "health --host localhost:5555 -g 0 -c -j"]
    assert not any(call.startswith("diag") for call in calls)  # dcgmi diag would start its own engine
    verdict = judge(up, P5)
    assert not verdict.healthy and verdict.complete and "Memory system Failure" in verdict.reasons[0]
    down = run_probe(tmp_path / "down", efa=32, engine_up=False)
    assert (tmp_path / "down/fake/dcgmi.calls").read_text().splitlines() == ["discovery --host localhost:5555 -l"]
    assert judge(down, P5) == Verdict(
        healthy=True,
        reasons=(),
        complete=False,
        notes=("the DCGM host engine at localhost:5555 does not answer",),
    )
    no_engine = run_probe(tmp_path / "none", efa=32, dcgm="0")
    assert not (tmp_path / "none/fake/dcgmi.calls").exists()
    # Where no host engine is expected (no node monitoring agent: Karpenter's GPU pool alone), a round
    # without DCGM is complete: a quarantined node there can be released.
    assert judge(no_engine, P5) == Verdict(healthy=True, reasons=(), complete=True)
    restarted = run_probe(tmp_path / "restarted", efa=32, report="dcgmi-health-watches-off.txt")
    assert (tmp_path / "restarted/fake/dcgmi.calls").read_text().splitlines()[
        -1
    ] == "health --host localhost:5555 -g 0 -s a"
    assert not judge(restarted, P5).complete
    missing_efa = run_probe(tmp_path / "efa", efa=30)
    assert "30 of 32 EFA devices present" in judge(missing_efa, P5).reasons


def test_on_an_arm64_node_the_probe_expects_no_agent_host_engine(tmp_path):
    """The node monitoring agent schedules its host engine on amd64 nodes only (v1.7.0 values.yaml
    148-152): on a Grace node (P6e-GB200) the probe asks no engine, and its rounds are complete, so a
    quarantined node there can be released; an x86_64 node still asks the agent's engine."""
    grace = run_probe(tmp_path / "grace", efa=32, machine="aarch64")
    assert not (tmp_path / "grace/fake/dcgmi.calls").exists()
    assert judge(grace, P5) == Verdict(healthy=True, reasons=(), complete=True)
    run_probe(tmp_path / "x86", efa=32, machine="x86_64")
    assert (tmp_path / "x86/fake/dcgmi.calls").read_text().splitlines()[0] == "discovery --host localhost:5555 -l"


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
    assert daemonset["priorityClassName"] == "system-node-critical"
    probe, judge_container = daemonset["containers"]
    assert probe["command"][-1] == "900" and probe["securityContext"] == {"privileged": True}
    assert judge_container["command"][-1] == "900"
    assert {"name": "DCGM_HEALTH", "value": "1"} in probe["env"]
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
