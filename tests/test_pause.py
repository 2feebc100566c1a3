"""Pause and resume with fake kubectl and aws: the order that leaves no instance behind, and the
profile's sizes restored."""

from __future__ import annotations

import subprocess

import pytest

from operate.cluster_access import ClusterAccessError
from operate.pause import STILL_BILLING, node_group_sizes, pause, pause_plan, resume
from profiles import load_profile
from tests.cases import FIXTURE_PROFILES


class Recorder:
    def __init__(self, fail_on: str | None = None):
        self.calls: list[list[str]] = []
        self.fail_on = fail_on

    def __call__(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        self.calls.append(args)
        failed = self.fail_on is not None and self.fail_on in " ".join(args)
        return subprocess.CompletedProcess(args, 1 if failed else 0, "", "AccessDenied" if failed else "")


def scaling(call: list[str]) -> tuple[str, str]:
    return call[call.index("--nodegroup-name") + 1], call[call.index("--scaling-config") + 1]


def test_pause_stops_karpenter_first_then_gpu_groups_then_the_system_group():
    config = load_profile(str(FIXTURE_PROFILES / "jark.yaml"))
    kubectl, aws = Recorder(), Recorder()
    pause(config, kubectl=kubectl, aws=aws, node_pools=("cpu", "gpu"), log=lambda _: None)
    assert [call[:2] for call in kubectl.calls] == [["patch", "nodepools.karpenter.sh"]] * 2 + [
        ["delete", "nodeclaims.karpenter.sh"]
    ]
    assert '"cpu": "0"' in kubectl.calls[0][-1] and "--field-manager=gpu-platform-pause" in kubectl.calls[0]
    assert "karpenter.sh/nodepool in (cpu,gpu)" in kubectl.calls[2]
    groups = [scaling(call) for call in aws.calls]
    assert [name for name, _ in groups] == [*[g.name for g in config.cluster.gpu_node_groups][::-1], "system"]
    for (name, value), size in zip(groups, reversed(node_group_sizes(config)), strict=True):
        assert value == f"minSize=0,maxSize={size.max_size},desiredSize=0", name
    assert all(call[call.index("--cluster-name") + 1] == config.name for call in aws.calls)


def test_a_failed_step_stops_the_pause_with_the_reason():
    config = load_profile("gpu-validation")
    aws = Recorder(fail_on="--nodegroup-name system")
    with pytest.raises(ClusterAccessError, match="system failed: AccessDenied"):
        pause(config, kubectl=Recorder(), aws=aws, node_pools=(), log=lambda _: None)


def test_resume_restores_the_profiles_sizes_system_group_first_and_the_pools_limits():
    import json

    config = load_profile("p5-training")
    aws, kubectl = Recorder(), Recorder()
    from addons.contributions import workload_capacity

    # The pools and limits Karpenter's parts contribute: both of p5-training's pools.
    limits = workload_capacity(config).pool_limits
    assert set(limits) == {"cpu", "gpu"}
    resume(config, aws=aws, kubectl=kubectl, pool_limits=limits, log=lambda _: None)
    restored = [scaling(call) for call in aws.calls]
    assert restored[0][0] == "system"
    assert restored == [
        (s.name, f"minSize={s.min_size},maxSize={s.max_size},desiredSize={s.desired_size}")
        for s in node_group_sizes(config)
    ]
    # The limits exactly as the workloads layer writes them: the GPU pool loses the pause's cpu 0.
    patches = {call[2]: json.loads(call[-1]) for call in kubectl.calls}
    assert patches["cpu"] == [
        {"op": "replace", "path": "/spec/limits", "value": {"cpu": str(config.workloads.cpu_pool.cpu_limit)}}
    ]
    assert patches["gpu"] == [
        {"op": "replace", "path": "/spec/limits", "value": {"nvidia.com/gpu": str(config.workloads.gpu_pool.gpu_limit)}}
    ]


def test_the_pause_question_says_what_stops_and_what_keeps_billing():
    config = load_profile("p5-training")
    text = "\n".join(pause_plan(config, ("cpu", "gpu")))
    assert "training jobs included" in text and "NodeClaims deleted" in text
    assert all(item in text for item in STILL_BILLING) and "make resume (before any deploy)" in text
    for group in config.cluster.gpu_node_groups:
        assert f"node group {group.name}: scaled to 0" in text


def test_kueue_queues_are_held_before_the_nodes_go_and_released_after_they_are_back():
    import json

    from operate.owned import platform_objects

    config = load_profile("p5-training")
    queues = platform_objects(config, "workloads").cluster_queues
    assert queues == tuple(tenant.name for tenant in config.workloads.tenants)
    kubectl, aws = Recorder(), Recorder()
    pause(config, kubectl=kubectl, aws=aws, node_pools=("gpu",), cluster_queues=queues, log=lambda _: None)
    held = [call for call in kubectl.calls if call[1] == "clusterqueues.kueue.x-k8s.io"]
    assert kubectl.calls[: len(queues)] == held, "held before anything stops"
    assert [json.loads(call[-1]) for call in held] == [{"spec": {"stopPolicy": "Hold"}}] * len(queues)
    assert "pause" in " ".join(pause_plan(config, ("gpu",), queues)) and "held" in " ".join(
        pause_plan(config, (), queues)
    )
    kubectl = Recorder()
    limits = {"gpu": {"nvidia.com/gpu": "8"}}
    resume(config, aws=Recorder(), kubectl=kubectl, pool_limits=limits, cluster_queues=queues, log=lambda _: None)
    released = [call for call in kubectl.calls if call[1] == "clusterqueues.kueue.x-k8s.io"]
    assert kubectl.calls[-len(queues) :] == released, "released after the nodes and pools are back"
    assert [json.loads(call[-1]) for call in released] == [{"spec": {"stopPolicy": "None"}}] * len(queues)
