"""An EKS managed add-on, optionally with a Pod Identity association for its service account."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from constructs import Construct
from cdktf import ITerraformDependable
from cdktf_cdktf_provider_aws.eks_addon import EksAddon, EksAddonPodIdentityAssociation


@dataclass(frozen=True)
class ManagedAddonProps:
    cluster_name: str
    addon_name: str
    service_account: str | None = None
    role_arn: str | None = None
    configuration: dict[str, Any] | None = None
    depends_on: tuple[ITerraformDependable, ...] = field(default=())


class ManagedAddon(Construct):
    """Exposes `addon`. The add-on version is the EKS default for the cluster's version."""

    def __init__(self, scope: Construct, id_: str, *, props: ManagedAddonProps):
        super().__init__(scope, id_)
        identity = None
        if props.service_account:
            identity = [EksAddonPodIdentityAssociation(service_account=props.service_account, role_arn=props.role_arn)]
        self.addon = EksAddon(
            self, "addon",
            cluster_name=props.cluster_name,
            addon_name=props.addon_name,
            configuration_values=json.dumps(props.configuration, sort_keys=True) if props.configuration else None,
            pod_identity_association=identity,
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            depends_on=list(props.depends_on) or None,
        )
