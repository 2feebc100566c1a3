"""Before the cluster layer is applied: does the account have what the profile needs? Through the
AWS CLI (the deployer's credentials): the EC2 vCPU quotas against what the apply launches (a
shortfall stops the deploy) and against the profile's largest sizes (a note), and each capacity
reservation a GPU group names against what EC2 says of it (its state, instance type, zone, size
and, for a Capacity Block, its end).

Output formats read: `aws service-quotas get-service-quota` (Quota.Value) and
`aws ec2 describe-capacity-reservations` (CapacityReservations[]: State, ReservationType,
InstanceType, AvailabilityZone or AvailabilityZoneId as the profile names zones, TotalInstanceCount,
EndDate), both as the AWS CLI prints them with --output json.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from profiles.cluster import CapacityBlock, GpuNodeGroupConfig, OdcrCapacity, is_zone_id
from profiles.models import PlatformConfig
from profiles.quotas import launch_needs, quota_needs

Aws = Callable[[list[str]], subprocess.CompletedProcess[str]]
# The states in which a reservation holds, or will hold, capacity (EC2 User Guide: Capacity
# Reservation states; an ODCR may stay pending for minutes while launches already succeed).
USABLE = {"odcr": {"active", "pending"}, "capacity_block": {"active", "scheduled", "payment-pending"}}
# A block not yet started reports no instances; the count it will hold is in this tag (EC2 User
# Guide, "View Capacity Blocks").
REQUESTED_COUNT_TAG = "aws:ec2capacityreservation:incrementalRequestedQuantity"


def ask(aws: Aws, args: list[str]) -> subprocess.CompletedProcess[str]:
    """One AWS CLI call; a timeout is a failed call, never a crash of the deploy."""
    try:
        return aws(args)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, 124, "", "the AWS CLI did not answer in time")


def quota_values(config: PlatformConfig, aws: Aws, codes: list[str]) -> tuple[dict[str, float], list[str]]:
    """Each quota's current value, and notes for those that could not be read."""
    values, notes = {}, []
    for code in codes:
        args = ["service-quotas", "get-service-quota", "--service-code", "ec2", "--quota-code", code]
        read = ask(aws, [*args, "--region", config.region, "--output", "json"])
        try:
            values[code] = float(json.loads(read.stdout)["Quota"]["Value"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            notes.append(f"quota {code} could not be read: {read.stderr.strip()[:200]}")
    return values, notes


def account_problems(config: PlatformConfig, aws: Aws) -> tuple[list[str], list[str]]:
    """(problems, notes) for the whole account check the deploy's preflight and `make quotas
    CHECK=1` both run: the quotas (quota_problems) and then the GPU groups' reservations."""
    problems, notes = quota_problems(config, aws)
    return [*problems, *reservation_problems(config, aws)], notes


def quota_problems(config: PlatformConfig, aws: Aws) -> tuple[list[str], list[str]]:
    """(problems, notes): quotas below what the apply launches stop the deploy; quotas below the
    profile's largest sizes (Karpenter's limits, max_size) and quotas that could not be read are
    notes."""
    launch, largest = launch_needs(config), quota_needs(config)
    values, notes = quota_values(config, aws, sorted({need.code for need in [*launch, *largest]}))
    problems = []
    for need in launch:
        value = values.get(need.code)
        if value is not None and value < need.vcpus:
            raise_to = f"--service-code ec2 --quota-code {need.code} --region {config.region}"
            problems.append(
                f"EC2 quota {need.code} ({need.name}) in {config.region} is {value:g} vCPUs; the deploy launches "
                f"{need.vcpus} ({'; '.join(need.reasons)}). Ask for more: aws service-quotas "
                f"request-service-quota-increase {raise_to} --desired-value {need.vcpus}"
            )
    for need in largest:
        value = values.get(need.code)
        if value is not None and value < need.vcpus:
            notes.append(
                f"EC2 quota {need.code} ({need.name}) is {value:g} vCPUs; at its largest sizes the profile may use "
                f"{need.vcpus} ({'; '.join(need.reasons)}): scaling up or Karpenter may hit it"
            )
    return problems, notes


def reservation_problems(config: PlatformConfig, aws: Aws, now: datetime | None = None) -> list[str]:
    """Each GPU group's named reservation as EC2 describes it, against the profile."""
    now = now or datetime.now(UTC)
    problems = []
    for group in config.cluster.gpu_node_groups:
        capacity = group.capacity
        if not isinstance(capacity, OdcrCapacity | CapacityBlock) or capacity.reservation_id is None:
            continue
        if isinstance(capacity, CapacityBlock) and capacity.drain_passed(now):
            continue  # over: synthesis warns and schedules no drain (stacks/platform.py)
        where = f"gpu_node_groups {group.name}: reservation {capacity.reservation_id}"
        ids = ["--capacity-reservation-ids", capacity.reservation_id]
        read = ask(aws, ["ec2", "describe-capacity-reservations", *ids, "--region", config.region, "--output", "json"])
        try:
            (found,) = json.loads(read.stdout)["CapacityReservations"]
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            problems.append(f"{where} cannot be found in {config.region}: {read.stderr.strip()[:200] or 'no answer'}")
            continue
        problems += [f"{where} {problem}" for problem in judge_reservation(group, found)]
    return problems


def judge_reservation(group: GpuNodeGroupConfig, found: dict[str, Any]) -> list[str]:
    """What in EC2's description of the group's reservation disagrees with the profile."""
    capacity = group.capacity
    assert isinstance(capacity, OdcrCapacity | CapacityBlock)
    block = capacity if isinstance(capacity, CapacityBlock) else None
    problems = []
    kind = found.get("ReservationType")  # absent from AWS CLIs older than late 2023: not judged
    if kind is not None and (kind == "capacity-block") != (block is not None):
        said = "a Capacity Block" if kind == "capacity-block" else "an On-Demand reservation"
        problems.append(f"is {said}; the profile says capacity type {capacity.type}")
    state = found.get("State")
    if state not in USABLE[capacity.type] and (block is not None or group.desired_size):
        problems.append(f"is {state}, not {' or '.join(sorted(USABLE[capacity.type]))}")
    if found.get("InstanceType") != group.instance_type:
        problems.append(f"is for {found.get('InstanceType')}, the group runs {group.instance_type}")
    # EC2 reports both the zone's name (in this account) and its ID: compare the one the profile uses.
    zone_key = "AvailabilityZoneId" if is_zone_id(capacity.availability_zone) else "AvailabilityZone"
    if found.get(zone_key) != capacity.availability_zone:
        problems.append(f"is in {found.get(zone_key)}, the profile says {capacity.availability_zone}")
    total: int | None = int(found.get("TotalInstanceCount", 0))
    if block is not None and state != "active":
        # Not started: EC2 reports no instances; the requested count is in a tag, if anywhere.
        tags = {tag.get("Key"): tag.get("Value") for tag in found.get("Tags", [])}
        requested = str(tags.get(REQUESTED_COUNT_TAG, ""))
        total = int(requested) if requested.isdigit() else None
    wanted = block.instance_count if block else group.desired_size
    if total is not None and total < wanted:
        what = "capacity.instance_count" if block else "desired_size"
        problems.append(f"holds {total} instances; the group's {what} is {wanted}")
    if block is not None and "EndDate" in found:
        ends = datetime.fromisoformat(found["EndDate"].replace("Z", "+00:00"))
        if ends != block.ends_at:
            stamp = "%Y-%m-%dT%H:%M:%SZ"
            problems.append(
                f"ends at {ends.strftime(stamp)}; capacity.ends_at says {block.ends_at.strftime(stamp)}, so the "
                "group would drain at the wrong time"
            )
    return problems
