"""A Capacity Block's window end to end: the node group at 0 until the block starts, a scheduled
scale-up at the start and a scale-down drain_minutes before the end, an expired block at 0 with
nothing scheduled, and a resume that keeps a group outside its window at 0."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta

import pytest

from profiles import load_profile
from tests.cases import FIXTURE_PROFILES

BLOCK_PROFILE = FIXTURE_PROFILES / "capacity-block.yaml"
# The fixture's block: 2099-02-27T11:30Z to 2099-03-01T11:30Z, default drain 60 minutes, 2 nodes.
STARTS = datetime(2099, 2, 27, 11, 30, tzinfo=UTC)
ENDS = datetime(2099, 3, 1, 11, 30, tzinfo=UTC)
BEFORE, DURING, DRAINING, AFTER = (
    STARTS - timedelta(days=3),
    STARTS + timedelta(hours=5),
    ENDS - timedelta(minutes=20),
    ENDS + timedelta(days=1),
)


def test_the_fixture_is_the_block_these_tests_describe():
    (group,) = load_profile(str(BLOCK_PROFILE)).cluster.gpu_node_groups
    block = group.capacity
    assert (block.starts_at, block.ends_at, block.drain_minutes) == (STARTS, ENDS, 60)
    assert (group.min_size, group.desired_size, group.max_size) == (0, 2, 2)


# The block holds nodes from its start until the drain 60 minutes before its end: 47 hours.
@pytest.mark.parametrize(
    ("now", "state", "minutes"),
    [
        (BEFORE, "scheduled", (72 + 47) * 60),
        (DURING, "active", (47 - 5) * 60),
        (DRAINING, "draining", 0),
        (AFTER, "ended", 0),
    ],
)
def test_the_block_state_follows_its_window(now, state, minutes):
    block = load_profile(str(BLOCK_PROFILE)).cluster.gpu_node_groups[0].capacity
    assert block.state(now) == state
    assert block.holds_nodes(now) is (state == "active")
    assert block.minutes_to_drain(now) == minutes


def synthesized_group(now: datetime) -> dict:
    """The GPU node group construct alone, synthesized as of `now`."""
    from cdktf import App, TerraformStack, Testing

    from components.node_groups import GpuNodeGroup, GpuNodeGroupProps, NodeGroupWiring

    (cfg,) = load_profile(str(BLOCK_PROFILE)).cluster.gpu_node_groups
    stack = TerraformStack(App(), "block")
    GpuNodeGroup(
        stack,
        "gpu",
        props=GpuNodeGroupProps(
            wiring=NodeGroupWiring(
                cluster_name="c", node_role_arn="arn:aws:iam::1:role/n", node_security_group_id="sg"
            ),
            subnet_id="subnet-1",
            availability_zone="use1-az6",
            config=cfg,
            efa_security_group_id="sg-efa",
            now=now,
        ),
    )
    return json.loads(Testing.synth(stack))["resource"]


def scaling(resources: dict) -> tuple[int, int, int]:
    (group,) = resources["aws_eks_node_group"].values()
    config = group["scaling_config"]
    return config["min_size"], config["desired_size"], config["max_size"]


def schedules(resources: dict) -> dict[str, tuple[str, int, int, int]]:
    return {
        body["scheduled_action_name"]: (
            body["start_time"],
            body["min_size"],
            body["desired_capacity"],
            body["max_size"],
        )
        for body in resources.get("aws_autoscaling_schedule", {}).values()
    }


def test_a_block_that_has_not_started_is_at_zero_with_a_scale_up_at_its_start():
    resources = synthesized_group(BEFORE)
    assert scaling(resources) == (0, 0, 2)  # EKS keeps a maximum of at least 1
    assert schedules(resources) == {
        "p5-block-scale-up-when-block-starts": ("2099-02-27T11:30:00Z", 0, 2, 2),
        "p5-block-drain-before-block-ends": ("2099-03-01T10:30:00Z", 0, 0, 0),
    }


def test_an_active_block_has_its_sizes_and_only_the_drain_ahead():
    resources = synthesized_group(DURING)
    assert scaling(resources) == (0, 2, 2)
    assert schedules(resources) == {"p5-block-drain-before-block-ends": ("2099-03-01T10:30:00Z", 0, 0, 0)}


@pytest.mark.parametrize("now", [DRAINING, AFTER], ids=["draining", "ended"])
def test_a_block_past_its_drain_is_at_zero_with_nothing_scheduled(now):
    resources = synthesized_group(now)
    assert scaling(resources) == (0, 0, 2)
    assert "aws_autoscaling_schedule" not in resources


@pytest.mark.parametrize(
    ("now", "deadline"),
    [(BEFORE, "2099-02-27T11:20:00Z"), (DURING, "2099-03-01T10:20:00Z"), (DRAINING, None), (AFTER, None)],
    ids=["scheduled", "active", "draining", "ended"],
)
def test_the_group_refuses_a_plan_made_too_close_to_its_next_edge(now, deadline):
    """Synthesized before the start and applied after the scale-up ran, the group's desired size of
    0 would scale the block's running nodes down (and AWS refuses the re-created action: its time is
    past). The node group refuses a plan from 10 minutes before the next edge: synthesize again."""
    from cdktf import App, TerraformStack, Testing

    from components.node_groups import GpuNodeGroup, GpuNodeGroupProps, NodeGroupWiring

    (cfg,) = load_profile(str(BLOCK_PROFILE)).cluster.gpu_node_groups
    stack = TerraformStack(App(), "block")
    wiring = NodeGroupWiring(cluster_name="c", node_role_arn="arn:aws:iam::1:role/n", node_security_group_id="sg")
    props = GpuNodeGroupProps(
        wiring=wiring,
        subnet_id="subnet-1",
        availability_zone="use1-az6",
        config=cfg,
        efa_security_group_id="sg-efa",
        now=now,
    )
    GpuNodeGroup(stack, "gpu", props=props)
    doc = json.loads(Testing.synth(stack))
    (group,) = doc["resource"]["aws_eks_node_group"].values()
    if deadline is None:
        assert "locals" not in doc and "lifecycle" not in group
        return
    assert doc["locals"] == {"p5-block_plan_before": deadline}
    (condition,) = group["lifecycle"]["precondition"]
    assert condition["condition"] == "${timecmp(plantimestamp(), local.p5-block_plan_before) < 0}"
    assert "Synthesize again" in condition["error_message"]


class Aws:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        self.calls.append(args)
        return subprocess.CompletedProcess(args, 0, "", "")


def resumed_sizes(now: datetime) -> dict[str, str]:
    from operate.pause import resume

    aws = Aws()
    config = load_profile(str(BLOCK_PROFILE))
    resume(config, aws=aws, kubectl=Aws(), pool_limits={}, log=lambda _: None, now=now)
    return {call[call.index("--nodegroup-name") + 1]: call[call.index("--scaling-config") + 1] for call in aws.calls}


@pytest.mark.parametrize("now", [BEFORE, DRAINING, AFTER], ids=["scheduled", "draining", "ended"])
def test_resume_keeps_a_group_outside_its_window_at_zero(now):
    assert resumed_sizes(now)["p5-block"] == "minSize=0,maxSize=2,desiredSize=0"


def test_resume_inside_the_window_restores_the_profiles_sizes():
    assert resumed_sizes(DURING)["p5-block"] == "minSize=0,maxSize=2,desiredSize=2"


def nodes_json(*names: str, group: str = "p5-block") -> str:
    items = [{"metadata": {"name": n, "labels": {"platform/gpu-node-group": group}}} for n in names]
    return json.dumps({"items": items})


def reports(now: datetime, answer: str, returncode: int = 0) -> list:
    from manifests.capacity_blocks import block_reports

    calls: list[list[str]] = []

    def kubectl(args: list[str]) -> subprocess.CompletedProcess[str]:
        calls.append(args)
        return subprocess.CompletedProcess(args, returncode, answer, "" if returncode == 0 else "Forbidden")

    found = block_reports(load_profile(str(BLOCK_PROFILE)), kubectl, now)
    assert calls == [["get", "nodes", "-l", "platform/gpu-node-group", "-o", "json"]]
    return found


@pytest.mark.parametrize(
    ("now", "names", "passed", "words"),
    [
        (BEFORE, (), True, ["scheduled: starts at 2099-02-27 11:30 UTC, in 4320 minutes", "holds 0 nodes"]),
        (BEFORE, ("ip-10-0-1-5",), False, ["scheduled", "holds 1 node (ip-10-0-1-5)", "expected 0 until the start"]),
        (
            DURING,
            ("a", "b"),
            True,
            ["active: drains in 2520 minutes, at 2099-03-01 10:30 UTC", "holds 2 nodes (a, b) of 2"],
        ),
        (DURING, ("a",), False, ["active", "holds 1 node (a) of 2"]),
        (DRAINING, (), True, ["draining: ends at 2099-03-01 11:30 UTC", "holds 0 nodes"]),
        (AFTER, ("a",), False, ["ended at 2099-03-01 11:30 UTC", "expected 0 after the drain"]),
    ],
)
def test_verify_reports_the_blocks_state_time_left_and_nodes(now, names, passed, words):
    (report,) = reports(now, nodes_json(*names))
    assert report.name == "capacity-block p5-block" and report.passed is passed
    assert all(word in report.detail for word in words), report.detail


def test_verify_counts_only_the_blocks_own_nodes_and_fails_when_it_cannot_read_them():
    (report,) = reports(DURING, nodes_json("other-1", "other-2", group="on-demand"))
    assert "holds 0 nodes" in report.detail and not report.passed
    (failed,) = reports(DURING, "", returncode=1)
    assert not failed.passed and "Forbidden" in failed.detail


def test_verify_reports_nothing_for_profiles_without_a_block():
    from manifests.capacity_blocks import block_reports

    assert block_reports(load_profile("p5-training"), lambda args: pytest.fail("asked kubectl"), BEFORE) == []
