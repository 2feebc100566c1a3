"""What every command shares: the project's folders, how to talk to the user, synthesis, and
kubectl bound to the profile's own cluster."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from profiles import PlatformConfig

if TYPE_CHECKING:
    from operate.kubectl import Kubectl
    from operate.layers import Operator
    from stacks.platform import Platform


EXIT_USER_ERROR = 2


PROJECT_ROOT = Path(__file__).resolve().parents[1]


OUTPUT_ROOT = Path("cdktf.out")


STATE_ROOT = PROJECT_ROOT / "state"


def tell(message: str) -> None:
    """A message on stderr, in short lines (operate/messages.py)."""
    from operate.messages import wrap

    print("\n".join(wrap(message)), file=sys.stderr)


def ask(question: str) -> bool:
    return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")


def ask_for_name(question: str, name: str) -> bool:
    """A confirmation that cannot be given by reflex: the user types the profile's name."""
    return input(f"{question} It cannot be undone. Type the profile name ({name}) to confirm: ").strip() == name


def refuse_other_account(config: PlatformConfig, command: str, *, record: bool = True) -> int | None:
    """The exit status that stops `command` when the credentials are not of the profile's
    account_id, or (without one) of the account and region its state recorded (2), or cannot be
    read (1), after saying why; None: go on. Every command that plans, changes or reads the live
    platform asks first (operate/account.py): with another account's credentials a pause would
    scale, and verify would run jobs on, another account's cluster of the same name. `record`:
    the first such command records the binding (not `quotas --check`, which uses no state)."""
    from operate import cluster_access
    from operate.account import account_refusal
    from operate.state_claim import Binding, bind_local, bind_s3

    def binding(account: str) -> Binding | str | None:
        if config.state.bucket is None:
            return bind_local(STATE_ROOT / config.name, account, config.region, record=record)
        state_region = config.state.region or config.region
        return bind_s3(
            config.state.bucket,
            config.state.key_prefix,
            state_region,
            config.name,
            account=account,
            region=config.region,
            record=record,
            aws=cluster_access.run_aws,
        )

    if not record and config.account_id is None and not isinstance(binding(""), Binding):
        # Read-only (`quotas --check`) and nothing recorded to compare with: it goes on without asking
        # whose the credentials are, so an account it cannot read is reported per quota, as before.
        return None
    refusal = account_refusal(config, command, cluster_access.run_aws, binding)
    if refusal is None:
        return None
    tell(refusal.message)
    return EXIT_USER_ERROR if refusal.user_error else 1


def synthesize_profile(config: PlatformConfig, outdir: Path) -> Platform:
    """Load the bindings (once per process) and synthesize every layer into `outdir`."""
    import toolchain

    toolchain.prepare()
    from addons.contributions import enabled_parts
    from profiles.quotas import node_count_warnings
    from stacks.platform import capacity_block_warnings, local_state_warnings, synthesize

    platform = synthesize(config, str(outdir), state_dir=STATE_ROOT / config.name)
    warnings = [
        *local_state_warnings(config),
        *capacity_block_warnings(config, datetime.now(UTC)),
        *node_count_warnings(config),
        *(warning for part in enabled_parts(config) for warning in part.warnings(config)),
    ]
    for warning in warnings:
        print(warning, file=sys.stderr)
    return platform


def print_synthesized(config: PlatformConfig, args: argparse.Namespace, file_name: str) -> None:
    from stacks import LAYERS

    outdir = Path(args.outdir)
    stacks = ", ".join(str(outdir / "stacks" / layer / file_name) for layer in LAYERS)
    source = "" if args.profile == config.name else f" ({args.profile})"  # a file whose name differs
    print(f"synthesized profile {config.name}{source}: {stacks}")


def profile_kubectl(config: PlatformConfig, operator: Operator, kubeconfig: Path) -> Kubectl:
    """kubectl bound to the profile's own cluster, as the cluster layer's outputs name it."""
    from operate.cluster_access import ClusterAccessError, ClusterTarget, api_tunnel, bind_kubectl
    from operate.layer_folders import StateUnreadable

    try:
        outputs = operator.outputs("cluster")
    except StateUnreadable as error:
        raise ClusterAccessError(str(error)) from error
    if "endpoint" not in outputs:
        raise ClusterAccessError(
            "the cluster layer has no outputs (not deployed, or its state is elsewhere): "
            "cannot tell which cluster to act on"
        )
    target = ClusterTarget(
        name=outputs["cluster_name"]["value"], region=config.region, endpoint=outputs["endpoint"]["value"]
    )
    if target.name != config.name:
        raise ClusterAccessError(f"the cluster layer's state is for cluster {target.name}, not {config.name}")
    return bind_kubectl(target, kubeconfig, tunnel=api_tunnel(operator.env))


def cleanup_profile_cluster(config: PlatformConfig, operator: Operator, kubeconfig: Path, layer: str) -> None:
    """The pre-destroy clean-up, on the profile's own cluster only."""
    from operate.cleanup import pre_destroy_cleanup
    from operate.owned import platform_objects

    owned = platform_objects(config, layer, operator.stack(layer))
    pre_destroy_cleanup(profile_kubectl(config, operator, kubeconfig), owned, log=operator.log)


def settle_profile_cluster(config: PlatformConfig, operator: Operator, kubeconfig: Path, layer: str) -> None:
    """After a Kubernetes layer's destroy: wait for the volumes it released, on the profile's cluster."""
    from operate.cleanup import after_destroy
    from operate.cluster_access import ClusterAccessError
    from operate.layers import TeardownStuck
    from operate.owned import platform_objects

    try:
        after_destroy(profile_kubectl(config, operator, kubeconfig), platform_objects(config, layer), log=operator.log)
    except ClusterAccessError as error:  # Terraform has deleted things by now: not "nothing deleted"
        raise TeardownStuck(
            f"Restore access to the cluster ({kubeconfig}), then run the destroy again: it resumes here.",
            f"cannot check that its volumes are gone: {error}",
        ) from error
