"""Wire the five layer stacks in dependency order into one cdktf App."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from cdktf import App

from addons.registry import ADDONS
from profiles import PlatformConfig
from profiles.capacity import CapacityBlock
from stacks.addons import AddonsStack
from stacks.build import BuildStack
from stacks.cluster import ClusterStack
from stacks.layer import StateLocation
from stacks.storage import StorageStack
from stacks.workloads import WorkloadsStack


@dataclass(frozen=True)
class Platform:
    cluster: ClusterStack
    storage: StorageStack
    build: BuildStack
    addons: AddonsStack
    workloads: WorkloadsStack


def build_platform(app: App, config: PlatformConfig, *, local_state_dir: str) -> Platform:
    """`local_state_dir`: where local state lives, relative to a stack's folder (unused with S3)."""
    state = StateLocation(local_dir=local_state_dir)
    cluster = ClusterStack(app, "cluster", config=config, state=state)
    storage = StorageStack(app, "storage", config=config, state=state, cluster=cluster.outputs)
    build = BuildStack(app, "build", config=config, state=state)
    addons = AddonsStack(
        app,
        "addons",
        config=config,
        state=state,
        cluster=cluster.outputs,
        storage=storage.outputs,
        build=build.outputs,
    )
    workloads = WorkloadsStack(
        app,
        "workloads",
        config=config,
        state=state,
        cluster=cluster.outputs,
        storage=storage.outputs,
        build=build.outputs,
        addons=addons.outputs,
    )
    # Deploy order, stated even where a passed value already implies it (cdktf de-duplicates).
    for stack, upstream in (
        (storage, cluster),
        (build, cluster),
        (addons, cluster),
        (addons, storage),  # MLflow's database and bucket
        (addons, build),  # the add-ons' project images (MLflow's)
        (workloads, storage),
        (workloads, build),  # the Trainer runtimes' image repository
        (workloads, addons),
    ):
        stack.add_dependency(upstream)
    return Platform(cluster, storage, build, addons, workloads)


def synthesize(config: PlatformConfig, outdir: str, *, state_dir: Path) -> Platform:
    """Synthesize every layer of one profile into `outdir`/stacks/<layer>/cdk.tf.json (or `cdk.tf`
    as HCL when the process was started for HCL export, see main.py). Local state lives in
    `state_dir`; the JSON names it relative to the stack folders, so it is the same on every
    machine and right for any output folder (JSON, HCL, per profile)."""
    Path(outdir).parent.mkdir(parents=True, exist_ok=True)  # cdktf's App fails without it
    stack_folder = Path(outdir).resolve() / "stacks" / "layer"  # every layer sits at this depth
    app = App(outdir=outdir)
    platform = build_platform(app, config, local_state_dir=os.path.relpath(state_dir.resolve(), stack_folder))
    app.synth()
    return platform


def capacity_block_warnings(config: PlatformConfig, now: datetime) -> list[str]:
    """GPU groups whose Capacity Block is draining or over: they synthesize at 0 with no scheduled action."""
    return [
        f"warning: GPU group {group.name}'s Capacity Block ends at {group.capacity.ends_at:%Y-%m-%d %H:%M} UTC and "
        f"its drain time ({group.capacity.drain_minutes} minutes before) has passed: the group stays at 0 nodes and "
        "nothing is scheduled (EC2 terminates a block's instances from 30 minutes before its end). Give the group a "
        "later block, or remove it."
        for group in config.cluster.gpu_node_groups
        if isinstance(group.capacity, CapacityBlock) and group.capacity.drain_passed(now)
    ]


def local_state_warnings(config: PlatformConfig) -> list[str]:
    """Layers whose state would hold a secret in a plain local file (no state.bucket)."""
    if config.state.bucket:
        return []
    secrets = [
        secret for addon in ADDONS if addon.enabled(config) for secret in addon.state_secrets(addon.settings(config))
    ]
    if not secrets:
        return []
    held = secrets[0] if len(secrets) == 1 else f"{', '.join(secrets[:-1])} and {secrets[-1]}"
    return [
        f"warning: the addons layer's state will hold {held} in plain text in "
        f"state/{config.name}/addons.tfstate (local backend, owner-only), and so does its saved plan "
        f"(cdktf.out/{config.name}/stacks/addons/tfplan) until the apply deletes it. For anything shared, set "
        "state.bucket (an encrypted, versioned S3 bucket; see the State section of docs/operations.md)."
    ]
