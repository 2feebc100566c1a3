"""`pause` and `resume`: every node stopped, data and state kept."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from cli import common
from profiles import PlatformConfig

if TYPE_CHECKING:
    pass


def _unconfirmable(args: argparse.Namespace) -> int | None:
    """Exit 2 when nobody can be asked and --yes was not given."""
    if args.yes or sys.stdin.isatty():
        return None
    common.tell(
        f"Approve with --yes (make {args.command} AUTO_APPROVE=1).\n"
        f"refusing to {args.command} without confirmation: there is no terminal to ask on."
    )
    return common.EXIT_USER_ERROR


def command_pause(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.cluster_access import ClusterAccessError, run_aws
    from operate.layers import Operator
    from operate.owned import platform_objects
    from operate.pause import pause, pause_plan, resume
    from operate.providers import provider_env

    if (stopped := _unconfirmable(args) or common.refuse_other_account(config, args.command)) is not None:
        return stopped
    outdir = Path(args.outdir)
    common.synthesize_profile(config, outdir)
    operator = Operator(outdir / "stacks", env=provider_env(outdir), log=lambda _: None)
    try:
        owned = platform_objects(config, "workloads")
        node_pools, cluster_queues = owned.node_pools, owned.cluster_queues
        kubectl = common.profile_kubectl(config, operator, outdir / "kubeconfig")  # the profile's cluster, or stop here
        if args.command == "resume":
            if not (args.yes or common.ask(f"Scale the node groups of {config.name} back to the profile's sizes?")):
                return 1
            resume(config, aws=run_aws, kubectl=kubectl, pool_limits=owned.pool_limits, cluster_queues=cluster_queues)
            print("resumed")
            return 0
        for line in pause_plan(config, node_pools, cluster_queues):
            print(line)
        if not (args.yes or common.ask("Pause?")):
            return 1
        pause(config, kubectl=kubectl, aws=run_aws, node_pools=node_pools, cluster_queues=cluster_queues)
    except ClusterAccessError as error:
        common.tell(f"{args.command} stopped: {error}")
        return 1
    return 0
