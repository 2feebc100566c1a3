"""`cost` and `quotas`: what the profile costs and needs of the AWS account."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from cli import common
from profiles import PlatformConfig

if TYPE_CHECKING:
    pass


def command_cost(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.cluster_access import run_aws
    from operate.cost import PriceUnavailable, estimate, report

    try:
        cost = estimate(config, run_aws)
    except PriceUnavailable as error:
        common.tell(
            f"cannot price {config.name}: {error}.\nThe AWS Price List API needs AWS credentials with "
            "pricing:GetProducts (any region; it answers from us-east-1)."
        )
        return 1
    print("\n".join(report(config, cost)))
    from profiles.quotas import node_count_warnings

    for warning in node_count_warnings(config):
        print(warning, file=sys.stderr)
    return 0


def command_quotas(config: PlatformConfig, args: argparse.Namespace) -> int:
    from profiles.quotas import node_count_warnings, quota_needs

    for warning in node_count_warnings(config):
        print(warning, file=sys.stderr)
    needs = quota_needs(config)
    print(f"EC2 vCPU quotas {config.name} needs in {config.region} (at its largest sizes):")
    for need in needs:
        print(f"  {need.code}  {need.name}: {need.vcpus} vCPUs ({'; '.join(need.reasons)})")
    print("Check what the account has, and ask for more where it is below (needs AWS credentials):")
    for need in needs:
        quota = f"--service-code ec2 --quota-code {need.code} --region {config.region}"
        print(f"  aws service-quotas get-service-quota {quota}")
        print(f"  aws service-quotas request-service-quota-increase {quota} --desired-value {need.vcpus}")
    print(
        "Capacity Blocks are bought separately and not counted here; On-Demand P capacity is often unavailable: "
        "cluster.gpu_node_groups[].capacity takes a Capacity Reservation or a Capacity Block."
    )
    if not args.check:
        return 0
    if (stopped := common.refuse_other_account(config, "check the quotas of", record=False)) is not None:
        return stopped
    from operate.capacity import account_check
    from operate.cluster_access import run_aws

    check = account_check(config, run_aws)  # run_aws: one line when there is no AWS CLI
    for line in check.notes:
        common.tell(f"note: {line}")
    for problem in check.problems:
        common.tell(problem)
    if check.unread:
        common.tell(
            "Fix what stops these reads, then check again (make quotas CHECK=1). Not read, so not checked:\n"
            + "\n".join(f"- {line}" for line in check.unread)
        )
        print(
            f"not checked: {len(check.unread)} of the account's quotas and reservations could not be read, "
            "so whether they are enough is not known",
            file=sys.stderr,
        )
        return 1
    if check.problems:
        return 1
    print("the account's quotas and the GPU groups' reservations fit the profile (the deploy checks them again)")
    return 0
