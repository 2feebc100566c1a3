"""`plan`, `deploy` and `destroy`: the layers in dependency order, each plan shown and approved."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from cli import common
from profiles import PlatformConfig

if TYPE_CHECKING:
    pass


def command_operate(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.cleanup import cleanup_preview
    from operate.cluster_access import ClusterAccessError
    from operate.layers import Operator, select_layers
    from operate.owned import platform_objects
    from operate.preflight import deploy_preflight
    from operate.providers import provider_env

    try:
        layers = select_layers(args.layer)
    except ValueError as error:
        print(error, file=sys.stderr)
        return common.EXIT_USER_ERROR
    interactive = sys.stdin.isatty()
    if args.command != "plan" and not args.yes and not interactive:
        common.tell(
            f"Review the plan (make plan), then approve with --yes (make {args.command} AUTO_APPROVE=1).\n"
            f"refusing to {args.command} without confirmation: there is no terminal to ask on."
        )
        return common.EXIT_USER_ERROR
    delete_data = getattr(args, "delete_data", False)
    confirmed = getattr(args, "confirm_delete_data", None)
    refusal = data_confirmation_refusal(config, delete_data, confirmed, interactive)
    if refusal:
        common.tell(refusal)
        return common.EXIT_USER_ERROR
    if confirmed:
        common.tell(
            f"warning: --confirm-delete-data={confirmed}: the protected data of {config.name} (buckets, file "
            "system, database) is deleted without asking you to type its name; each layer's data is listed first."
        )
    if (stopped := common.refuse_other_account(config, args.command)) is not None:  # before Terraform runs
        return stopped
    outdir = Path(args.outdir)
    common.synthesize_profile(config, outdir)

    def confirm_data(question: str) -> bool:
        """The typed name, never --yes: the plans' approval is not the data's."""
        if confirmed:
            print(f"{question} Confirmed by --confirm-delete-data={confirmed}.", file=sys.stderr)
            return True
        return common.ask_for_name(question, config.name)

    operator = Operator(
        outdir / "stacks",
        env=provider_env(outdir),
        confirm=lambda question: args.yes or common.ask(question),
        delete_data=delete_data,
        confirm_data=confirm_data,
    )
    operator.cleanup = lambda layer: common.cleanup_profile_cluster(config, operator, outdir / "kubeconfig", layer)
    operator.cleanup_preview = lambda layer: cleanup_preview(platform_objects(config, layer, operator.stack(layer)))
    operator.settle = lambda layer: common.settle_profile_cluster(config, operator, outdir / "kubeconfig", layer)
    operator.preflight = deploy_preflight(
        config,
        operator,
        kubectl=lambda: common.profile_kubectl(config, operator, outdir / "kubeconfig"),
        skip_quota_check=getattr(args, "skip_quota_check", False),
    )
    try:
        results = operator.run(args.command, layers)
    except ClusterAccessError as error:  # a Kubernetes layer's clean-up, before it deleted anything
        destroyed = [result.layer for result in operator.results if result.ok]
        if destroyed:
            common.tell(
                f"destroy stopped after destroying {', '.join(destroyed)}, before the next layer's clean-up "
                f"deleted anything: {error}"
            )
        else:
            common.tell(f"destroy stopped before deleting anything in the cluster: {error}")
        return 1
    return 0 if results and all(result.ok for result in results) and len(results) == len(layers) else 1


def data_confirmation_refusal(
    config: PlatformConfig, delete_data: bool, confirmed: str | None, interactive: bool
) -> str | None:
    """Why a destroy must not start for want of the data's confirmation, before anything runs:
    --confirm-delete-data without --delete-data or with another profile's name, or --delete-data
    with no terminal to type the name on and no --confirm-delete-data."""
    confirm = f"make destroy DELETE_DATA=1 CONFIRM_DELETE_DATA={config.name} AUTO_APPROVE=1"
    if confirmed is not None and not delete_data:
        return (
            f"Add --delete-data ({confirm}): --confirm-delete-data confirms a deletion of data, and none is asked for."
        )
    if confirmed is not None and confirmed != config.name:
        return (
            f"Give this profile's name to delete its data: --confirm-delete-data={config.name}.\n"
            f"--confirm-delete-data={confirmed!r} is not the name of profile {config.name}: nothing was deleted."
        )
    if delete_data and confirmed is None and not interactive:
        return (
            f"Run it on a terminal to type the profile name, or confirm the deletion explicitly: {confirm} "
            "(on the make command line).\n"
            "refusing to delete data without its typed confirmation: there is no terminal to ask on, and "
            "AUTO_APPROVE=1 (--yes) approves the plans, never the deletion of data."
        )
    return None
