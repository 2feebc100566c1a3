"""Before the cluster layer is applied: does the account have what the profile needs? Through the
AWS CLI (the deployer's credentials): each EC2 vCPU quota the profile needs (profiles/quotas.py)
against its current value, and each capacity reservation a GPU group names against what EC2 says
of it (its state, instance type, zone, size and, for a Capacity Block, its end).

Output formats read: `aws service-quotas get-service-quota` (Quota.Value) and
`aws ec2 describe-capacity-reservations` (CapacityReservations[]: State, ReservationType,
InstanceType, AvailabilityZone, TotalInstanceCount, EndDate), both as the AWS CLI prints them
with --output json.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from datetime import datetime

from profiles.cluster import CapacityBlock, OdcrCapacity
from profiles.models import PlatformConfig
from profiles.quotas import quota_needs

Aws = Callable[[list[str]], subprocess.CompletedProcess[str]]
# The states in which a reservation holds (or will hold, for a block bought ahead) capacity.
USABLE = {"odcr": {"active"}, "capacity_block": {"active", "scheduled", "payment-pending"}}


def quota_problems(config: PlatformConfig, aws: Aws) -> tuple[list[str], list[str]]:
    """(problems, notes): quotas below what the profile needs at its largest sizes, and quotas that
    could not be read (no servicequotas:GetServiceQuota, no network): not a refusal."""
    problems, notes = [], []
    for need in quota_needs(config):
        args = ["--service-code", "ec2", "--quota-code", need.code, "--region", config.region]
        read = aws(["service-quotas", "get-service-quota", *args, "--output", "json"])
        try:
            value = float(json.loads(read.stdout)["Quota"]["Value"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            notes.append(f"quota {need.code} ({need.name}) could not be read: {read.stderr.strip()[:200]}")
            continue
        if value < need.vcpus:
            problems.append(
                f"EC2 quota {need.code} ({need.name}) in {config.region} is {value:g} vCPUs; the profile needs "
                f"{need.vcpus} at its largest sizes ({'; '.join(need.reasons)}). Ask for more: aws service-quotas "
                f"request-service-quota-increase {' '.join(args)} --desired-value {need.vcpus}"
            )
    return problems, notes


def reservation_problems(config: PlatformConfig, aws: Aws) -> list[str]:
    """Each GPU group's named reservation as EC2 describes it, against the profile."""
    problems = []
    for group in config.cluster.gpu_node_groups:
        capacity = group.capacity
        if not isinstance(capacity, OdcrCapacity | CapacityBlock) or capacity.reservation_id is None:
            continue
        where = f"gpu_node_groups {group.name}: reservation {capacity.reservation_id}"
        read = aws(
            [
                "ec2",
                "describe-capacity-reservations",
                "--capacity-reservation-ids",
                capacity.reservation_id,
                "--region",
                config.region,
                "--output",
                "json",
            ]
        )
        try:
            (found,) = json.loads(read.stdout)["CapacityReservations"]
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            problems.append(f"{where} cannot be found in {config.region}: {read.stderr.strip()[:200] or 'no answer'}")
            continue
        block = capacity if isinstance(capacity, CapacityBlock) else None
        if (found.get("ReservationType") == "capacity-block") != (block is not None):
            kind = (
                "a Capacity Block" if found.get("ReservationType") == "capacity-block" else "an On-Demand reservation"
            )
            problems.append(f"{where} is {kind}; the profile says capacity type {capacity.type}")
        if found.get("State") not in USABLE[capacity.type]:
            problems.append(f"{where} is {found.get('State')}, not {' or '.join(sorted(USABLE[capacity.type]))}")
        if found.get("InstanceType") != group.instance_type:
            problems.append(f"{where} is for {found.get('InstanceType')}, the group runs {group.instance_type}")
        if found.get("AvailabilityZone") != capacity.availability_zone:
            problems.append(
                f"{where} is in {found.get('AvailabilityZone')}, the profile says {capacity.availability_zone}"
            )
        total = int(found.get("TotalInstanceCount", 0))
        wanted = block.instance_count if block else group.desired_size
        if total < wanted:
            what = "capacity.instance_count" if block else "desired_size"
            problems.append(f"{where} holds {total} instances; the group's {what} is {wanted}")
        if block and "EndDate" in found:
            ends = datetime.fromisoformat(found["EndDate"].replace("Z", "+00:00"))
            if ends != block.ends_at:
                stamp = "%Y-%m-%dT%H:%M:%SZ"
                problems.append(
                    f"{where} ends at {ends.strftime(stamp)}; capacity.ends_at says "
                    f"{block.ends_at.strftime(stamp)}, so the group would drain at the wrong time"
                )
    return problems
