"""Addons layer: the registry's Helm add-ons that the profile enables, in order, and the default
StorageClass their volumes use."""

from __future__ import annotations

from constructs import Construct

from addons.contributions import client_access, provided
from addons.registry import ADDONS
from components.helm.addon import AddonContext, InstalledAddon, Monitors
from components.k8s.namespaces import ApiServerAddresses
from components.k8s.storage_class import STORAGE_CLASS, default_storage_class
from profiles import PlatformConfig
from stacks.contracts import AddonsOutputs, BuildOutputs, ClusterOutputs, StorageOutputs
from stacks.layer import LayerStack, StateLocation


class AddonsStack(LayerStack):
    def __init__(
        self,
        scope: Construct,
        layer: str,
        *,
        config: PlatformConfig,
        state: StateLocation,
        cluster: ClusterOutputs,
        storage: StorageOutputs,
        build: BuildOutputs,
    ):
        super().__init__(scope, layer, config=config, state=state)
        self.use_aws_provider()
        self.use_kubernetes_providers(cluster, helm=True)

        # EKS clusters have no default StorageClass: Prometheus and notebook volumes need one.
        storage_class = default_storage_class(self)
        enabled = [addon for addon in ADDONS if addon.enabled(config)]
        # Each add-on declares its own monitors; the monitoring add-on (installed first) creates them.
        declared = [addon.monitors(addon.settings(config), config) for addon in enabled]
        monitors = Monitors(
            service_monitors=tuple(sorted((m for d in declared for m in d.service_monitors), key=lambda m: m["name"])),
            pod_monitors=tuple(sorted((m for d in declared for m in d.pod_monitors), key=lambda m: m["name"])),
            dashboards=tuple(sorted((b for d in declared for b in d.dashboards), key=lambda b: b["uid"])),
            rule_groups=tuple(sorted((g for d in declared for g in d.rule_groups), key=lambda g: g["name"])),
            node_labels=tuple(sorted({label for d in declared for label in d.node_labels})),
        )
        installed: dict[str, InstalledAddon] = {}
        clients = client_access(config)
        api_server = ApiServerAddresses(vpc_cidr=cluster.vpc_cidr, service_ip=config.cluster.api_service_ip)
        for addon in enabled:
            installed[addon.key] = addon.install(
                AddonContext(
                    scope=self,
                    config=config,
                    cluster=cluster,
                    storage=storage,
                    build=build,
                    storage_class=STORAGE_CLASS,
                    storage_class_ready=storage_class,
                    api_server=api_server,
                    installed=installed,
                    monitors=monitors,
                    clients=clients,
                    provided=provided(config),
                )
            )
        self.installed = installed
        self.outputs = AddonsOutputs(
            releases={key: addon.name for key, addon in installed.items()},
            storage_class=STORAGE_CLASS,
            addon_records={key: addon.record for key, addon in installed.items() if addon.record is not None},
        )
        self.publish(self.outputs)
