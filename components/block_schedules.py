"""A Capacity Block's window on its managed node group: scheduled actions on the group's Auto
Scaling group at the block's start and before its end, and the plan deadline that refuses a plan
made too close to the next edge (components/node_groups.py calls them)."""

from __future__ import annotations

from datetime import datetime, timedelta

from cdktf import Precondition, TerraformLocal
from cdktf_cdktf_provider_aws.eks_node_group import EksNodeGroup
from constructs import Construct

from components.leaf_resources import LeafType
from components.plan_deadline import PlanDeadline
from profiles.capacity import STAMP, CapacityBlock
from profiles.node_groups import GpuNodeGroupConfig

# Nothing reads a scheduled action, so each is rendered as data (components/leaf_resources.py).
SCHEDULED_ACTION = LeafType("aws_autoscaling_schedule", "AutoscalingSchedule")


def block_schedules(
    scope: Construct, cfg: GpuNodeGroupConfig, block: CapacityBlock, group: EksNodeGroup, now: datetime
) -> None:
    """The two ends of a Capacity Block's window as scheduled actions on the group's Auto Scaling
    group: up to the profile's sizes at the start (only while it is still ahead), to zero
    drain_minutes before the end (only while that is ahead). AWS refuses a one-time action in the
    past and deletes one once it has run, so a time already passed is left out; a block whose drain
    has passed gets no action at all, and synthesis warns (stacks/platform.py). EC2 begins to
    terminate the instances 30 minutes before the end (profiles/capacity.py cites it): the drain,
    45 minutes or more before, lets pods stop and jobs checkpoint first."""
    state = block.state(now)
    if state in ("draining", "ended"):
        return
    asg = group.resources.get(0).autoscaling_groups.get(0).name
    if state == "scheduled":
        SCHEDULED_ACTION.add(
            scope,
            "scale-up-when-block-starts",
            scheduled_action_name=f"{cfg.name}-scale-up-when-block-starts",
            autoscaling_group_name=asg,
            start_time=block.starts_at.strftime(STAMP),
            min_size=cfg.min_size,
            max_size=cfg.max_size,
            desired_capacity=cfg.desired_size,
        )
    SCHEDULED_ACTION.add(
        scope,
        "drain-before-block-ends",
        scheduled_action_name=f"{cfg.name}-drain-before-block-ends",
        autoscaling_group_name=asg,
        start_time=block.drain_starts.strftime(STAMP),
        min_size=0,
        max_size=0,
        desired_capacity=0,
    )


# A plan this close to a block's edge is refused: synthesized for the moment before it, the group's
# sizes and scheduled actions are stale after it (an apply would scale the block's running group back
# to 0, and AWS refuses a scheduled action in the past).
PLAN_MARGIN_MINUTES = 10


def block_deadline(
    scope: Construct, cfg: GpuNodeGroupConfig, block: CapacityBlock, now: datetime
) -> Precondition | None:
    """The group's sizes and actions were computed for `now`: a plan later than PLAN_MARGIN_MINUTES
    before the window's next edge is refused, so they are synthesized again. None after the drain."""
    state = block.state(now)
    if state not in ("scheduled", "active"):
        return None
    what, moment = ("starts", block.starts_at) if state == "scheduled" else ("drains", block.drain_starts)
    deadline = PlanDeadline(
        at=moment - timedelta(minutes=PLAN_MARGIN_MINUTES),
        why=(
            f"GPU group {cfg.name}'s Capacity Block {what} at {moment:%Y-%m-%d %H:%M} UTC, less than "
            f"{PLAN_MARGIN_MINUTES} minutes after this plan, or already: the group's sizes and scheduled actions "
            "were synthesized before it. Synthesize again (make deploy does), "
            f"after {moment:%H:%M} UTC if it is that close."
        ),
    )
    name = f"{cfg.name}_plan_before"
    TerraformLocal(scope, "plan-before", deadline.stamp).override_logical_id(name)
    return Precondition(condition=PlanDeadline.condition(f"local.{name}"), error_message=deadline.why)
