"""Wire the five layer stacks in dependency order into one cdktf App."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cdktf import App

from profiles import PlatformConfig
from stacks.addons import AddonsStack
from stacks.build import BuildStack
from stacks.cluster import ClusterStack
from stacks.storage import StorageStack
from stacks.workloads import WorkloadsStack


@dataclass(frozen=True)
class Platform:
    cluster: ClusterStack
    storage: StorageStack
    build: BuildStack
    addons: AddonsStack
    workloads: WorkloadsStack


def build_platform(app: App, config: PlatformConfig) -> Platform:
    cluster = ClusterStack(app, "cluster", config=config)
    storage = StorageStack(app, "storage", config=config, cluster=cluster.outputs)
    build = BuildStack(app, "build", config=config)
    addons = AddonsStack(app, "addons", config=config, cluster=cluster.outputs)
    workloads = WorkloadsStack(app, "workloads", config=config, cluster=cluster.outputs, storage=storage.outputs,
                               addons=addons.outputs)
    # Deploy order, stated even where a passed value already implies it (cdktf de-duplicates).
    for stack, upstream in (
        (storage, cluster),
        (build, cluster),
        (addons, cluster),
        (workloads, storage),
        (workloads, addons),
    ):
        stack.add_dependency(upstream)
    return Platform(cluster, storage, build, addons, workloads)


def synthesize(config: PlatformConfig, outdir: str) -> Platform:
    """Synthesize every layer of one profile into `outdir`/stacks/<layer>/cdk.tf.json (or `cdk.tf`
    as HCL when the process was started for HCL export, see main.py)."""
    Path(outdir).parent.mkdir(parents=True, exist_ok=True)  # cdktf's App fails without it
    app = App(outdir=outdir)
    platform = build_platform(app, config)
    app.synth()
    return platform
