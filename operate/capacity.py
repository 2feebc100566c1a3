"""Before the cluster layer is applied: does the account have what the profile needs? Through the
AWS CLI (the deployer's credentials): the EC2 vCPU quotas against what the apply launches (a
shortfall stops the deploy) and against the profile's largest sizes (a note), and each capacity
reservation a GPU group names against what EC2 says of it (its state, instance type, zone, size
and, for a Capacity Block, its end).

Output formats read: `aws service-quotas get-service-quota` (Quota.Value) and
`aws ec2 describe-capacity-reservations` (CapacityReservations[]: State, ReservationType,
InstanceType, AvailabilityZone or AvailabilityZoneId as the profile names zones, TotalInstanceCount,
StartDate, EndDate), both as the AWS CLI prints them with --output json.

What could not be read (no credentials, access denied, throttled, no answer) is never taken as
fitting: it is reported as unread, with the AWS CLI's reason. `make quotas CHECK=1` fails on it,
and the deploy stops on it unless told to go on without it (--skip-quota-check).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from profiles.capacity import STAMP, CapacityBlock, OdcrCapacity
from profiles.models import PlatformConfig
from profiles.node_groups import GpuNodeGroupConfig
from profiles.quotas import launch_needs, quota_needs
from profiles.vpc import is_zone_id

Aws = Callable[[list[str]], subprocess.CompletedProcess[str]]
# The states in which a reservation holds, or will hold, capacity (EC2 User Guide: Capacity
# Reservation states; an ODCR may stay pending for minutes while launches already succeed).
USABLE = {"odcr": {"active", "pending"}, "capacity_block": {"active", "scheduled", "payment-pending"}}
# A block not yet started reports no instances; the count it will hold is in this tag (EC2 User
# Guide, "View Capacity Blocks").
REQUESTED_COUNT_TAG = "aws:ec2capacityreservation:incrementalRequestedQuantity"


@dataclass(frozen=True)
class AccountCheck:
    """What the account check found: each thing it checks is read and fits, read and does not
    fit (a problem or a note), or could not be read (unread: never taken as fitting)."""

    problems: list[str] = field(default_factory=list)
    """Read, and short of what the deploy needs: the deploy stops."""
    notes: list[str] = field(default_factory=list)
    """Read, and short of the profile's largest sizes only."""
    unread: list[str] = field(default_factory=list)
    """Not read, each with what and why (no credentials, access denied, throttled, no answer)."""

    def __add__(self, other: AccountCheck) -> AccountCheck:
        return AccountCheck(
            [*self.problems, *other.problems], [*self.notes, *other.notes], [*self.unread, *other.unread]
        )


# What the AWS CLI says when it could not ask (its own words, or the service's error code), and
# what to do about it.
UNREAD_HINTS = (
    (
        ("Unable to locate credentials", "NoCredentialProviders", "The config profile", "Error loading SSO"),
        "no usable AWS credentials here: aws configure, aws sso login or AWS_PROFILE",
    ),
    (
        ("ExpiredToken", "InvalidClientTokenId", "UnrecognizedClientException", "SignatureDoesNotMatch"),
        "the AWS credentials are expired or invalid",
    ),
    (("AccessDenied", "UnauthorizedOperation", "not authorized"), "this identity may not read it"),
    (("Throttling", "TooManyRequests", "Rate exceeded", "RequestLimitExceeded"), "throttled: try again shortly"),
)


def ask(aws: Aws, args: list[str]) -> subprocess.CompletedProcess[str]:
    """One AWS CLI call; a timeout is a failed call, never a crash of the deploy."""
    try:
        return aws(args)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, 124, "", "the AWS CLI did not answer in time")


def why_unread(read: subprocess.CompletedProcess[str]) -> str:
    """The AWS CLI's own reason a read failed (first lines, shortened), after a hint of what to do."""
    said = " ".join((read.stderr or "").split())[:200] or (
        f"exit status {read.returncode}, no error message" if read.returncode else "an answer that is not EC2's JSON"
    )
    hint = next((hint for markers, hint in UNREAD_HINTS if any(m in said for m in markers)), None)
    return f"{hint} ({said})" if hint else said


def quota_values(config: PlatformConfig, aws: Aws, names: dict[str, str]) -> tuple[dict[str, float], list[str]]:
    """Each quota's current value (`names`: code -> name), and what could not be read and why."""
    values, unread = {}, []
    for code, name in sorted(names.items()):
        args = ["service-quotas", "get-service-quota", "--service-code", "ec2", "--quota-code", code]
        read = ask(aws, [*args, "--region", config.region, "--output", "json"])
        try:
            values[code] = float(json.loads(read.stdout)["Quota"]["Value"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            unread.append(f"EC2 quota {code} ({name}) in {config.region}: {why_unread(read)}")
    return values, unread


def account_check(config: PlatformConfig, aws: Aws) -> AccountCheck:
    """The whole account check the deploy's preflight and `make quotas CHECK=1` both run: the
    quotas (quota_check), then the GPU groups' reservations (reservation_check)."""
    return quota_check(config, aws) + reservation_check(config, aws)


def quota_check(config: PlatformConfig, aws: Aws) -> AccountCheck:
    """Quotas below what the apply launches are problems (they stop the deploy); quotas below the
    profile's largest sizes (Karpenter's limits, max_size) are notes; quotas that could not be
    read are unread."""
    launch, largest = launch_needs(config), quota_needs(config)
    values, unread = quota_values(config, aws, {need.code: need.name for need in [*launch, *largest]})
    problems, notes = [], []
    for need in launch:
        value = values.get(need.code)
        if value is not None and value < need.vcpus:
            raise_to = f"--service-code ec2 --quota-code {need.code} --region {config.region}"
            problems.append(
                f"Ask for more of EC2 quota {need.code} ({need.name}) in {config.region}, then deploy:\n"
                f"  aws service-quotas request-service-quota-increase {raise_to} --desired-value {need.vcpus}\n"
                f"It is {value:g} vCPUs; the deploy launches {need.vcpus} ({'; '.join(need.reasons)})."
            )
    for need in largest:
        value = values.get(need.code)
        if value is not None and value < need.vcpus:
            notes.append(
                f"EC2 quota {need.code} ({need.name}) is {value:g} vCPUs; at its largest sizes the profile may use "
                f"{need.vcpus} ({'; '.join(need.reasons)}): scaling up or Karpenter may hit it"
            )
    return AccountCheck(problems, notes, unread)


# EC2's error codes for a reservation ID that names no reservation here (EC2 API reference,
# error codes): the reservation was read, and it is not there.
RESERVATION_NOT_FOUND = ("InvalidCapacityReservationId.NotFound", "InvalidCapacityReservationId.Malformed")


def reservation_check(config: PlatformConfig, aws: Aws, now: datetime | None = None) -> AccountCheck:
    """Each GPU group's named reservation as EC2 describes it, against the profile: one EC2 does
    not know or describes otherwise is a problem; one that could not be asked about is unread."""
    now = now or datetime.now(UTC)
    problems, unread = [], []
    for group in config.cluster.gpu_node_groups:
        capacity = group.capacity
        if not isinstance(capacity, OdcrCapacity | CapacityBlock) or capacity.reservation_id is None:
            continue
        if isinstance(capacity, CapacityBlock) and capacity.drain_passed(now):
            continue  # over: synthesis warns and schedules no drain (stacks/platform.py)
        where = f"gpu_node_groups {group.name}: reservation {capacity.reservation_id}"
        ids = ["--capacity-reservation-ids", capacity.reservation_id]
        read = ask(aws, ["ec2", "describe-capacity-reservations", *ids, "--region", config.region, "--output", "json"])
        if read.returncode != 0 and any(code in read.stderr for code in RESERVATION_NOT_FOUND):
            problems.append(f"{where} cannot be found in {config.region}: {' '.join(read.stderr.split())[:200]}")
            continue
        try:
            found = json.loads(read.stdout)["CapacityReservations"]
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            unread.append(f"{where} in {config.region}: {why_unread(read)}")
            continue
        if len(found) != 1:
            problems.append(f"{where} cannot be found in {config.region}: EC2 describes {len(found)} reservations")
            continue
        problems += [f"{where} {problem}" for problem in judge_reservation(group, found[0])]
    return AccountCheck(problems, [], unread)


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
    if block is not None:
        problems += _window_problems(block, found)
    return problems


def _window_problems(block: CapacityBlock, found: dict[str, Any]) -> list[str]:
    """The block's StartDate and EndDate as EC2 reports them, against capacity.starts_at / ends_at:
    the group scales up at the one and drains before the other."""
    problems = []
    for key, verb, field_name, said, acts in (
        ("StartDate", "starts", "starts_at", block.starts_at, "scale up"),
        ("EndDate", "ends", "ends_at", block.ends_at, "drain"),
    ):
        if key not in found:
            continue
        reported = datetime.fromisoformat(found[key].replace("Z", "+00:00"))
        if reported != said:
            problems.append(
                f"{verb} at {reported.strftime(STAMP)}; capacity.{field_name} says {said.strftime(STAMP)}, so the "
                f"group would {acts} at the wrong time"
            )
    return problems
