"""What verify reports of each GPU group on a Capacity Block: the block's state (scheduled, active,
draining, ended), the time to its next edge, and the nodes the group holds, judged against the
window (profiles/capacity.py): a group holds nodes only while its block is active."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from components.acceptance import CheckResult
from components.labels import NODE_GROUP_LABEL
from operate.kubectl import Kubectl
from profiles import PlatformConfig
from profiles.capacity import CapacityBlock

CHECK = "capacity-block"


def _minutes(later: datetime, now: datetime) -> int:
    return max(0, int((later - now).total_seconds() // 60))


def block_report(group: str, desired: int, block: CapacityBlock, nodes: list[str], now: datetime) -> CheckResult:
    """One group's report. It fails when the group holds nodes outside the window (something scaled
    it up that the platform did not), or fewer than desired_size while the block is active."""
    state = block.state(now)
    held = f"holds {len(nodes)} node{'' if len(nodes) == 1 else 's'}" + (f" ({', '.join(nodes)})" if nodes else "")
    stamp = "%Y-%m-%d %H:%M UTC"
    if state == "scheduled":
        when = f"starts at {block.starts_at:{stamp}}, in {_minutes(block.starts_at, now)} minutes"
        return CheckResult(f"{CHECK} {group}", not nodes, f"scheduled: {when}; {held} (expected 0 until the start)")
    if state == "active":
        left = block.minutes_to_drain(now)
        detail = f"active: drains in {left} minutes, at {block.drain_starts:{stamp}} (ends {block.ends_at:{stamp}})"
        passed = len(nodes) >= desired
        return CheckResult(f"{CHECK} {group}", passed, f"{detail}; {held} of {desired}")
    ended = f"{state}: ends at {block.ends_at:{stamp}}" if state == "draining" else f"ended at {block.ends_at:{stamp}}"
    return CheckResult(f"{CHECK} {group}", not nodes, f"{ended}; {held} (expected 0 after the drain)")


def nodes_by_group(nodes_json: str) -> dict[str, list[str]]:
    """Node names by the GPU group label the platform sets on every managed GPU node."""
    found: dict[str, list[str]] = {}
    try:
        items: list[dict[str, Any]] = json.loads(nodes_json).get("items", [])
    except (json.JSONDecodeError, AttributeError):
        items = []
    for node in items:
        group = node.get("metadata", {}).get("labels", {}).get(NODE_GROUP_LABEL)
        if group:
            found.setdefault(group, []).append(node["metadata"]["name"])
    return {group: sorted(names) for group, names in found.items()}


def block_reports(config: PlatformConfig, kubectl: Kubectl, now: datetime | None = None) -> list[CheckResult]:
    """A report per GPU group on a Capacity Block (none without one); read-only."""
    groups = [g for g in config.cluster.gpu_node_groups if isinstance(g.capacity, CapacityBlock)]
    if not groups:
        return []
    read = kubectl(["get", "nodes", "-l", NODE_GROUP_LABEL, "-o", "json"])
    if read.returncode != 0:
        return [CheckResult(CHECK, False, f"could not list the nodes: {read.stderr.strip()[:300]}")]
    held = nodes_by_group(read.stdout)
    at = now or datetime.now(UTC)
    return [
        block_report(g.name, g.desired_size, g.capacity, held.get(g.name, []), at)
        for g in groups
        if isinstance(g.capacity, CapacityBlock)
    ]
