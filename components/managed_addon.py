"""An EKS managed add-on, optionally with a Pod Identity association for its service account."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from cdktf import ITerraformDependable
from cdktf_cdktf_provider_aws.eks_addon import EksAddon, EksAddonPodIdentityAssociation
from constructs import Construct


@dataclass(frozen=True, kw_only=True)
class AddonIdentity:
    """A Pod Identity association for the add-on's service account."""

    service_account: str
    """The add-on's service account in kube-system."""
    role_arn: str
    """The IAM role that service account assumes."""


@dataclass(frozen=True, kw_only=True)
class ManagedAddonProps:
    cluster_name: str
    """The cluster the add-on is installed into."""
    addon_name: str
    """The EKS add-on name, e.g. vpc-cni."""
    identity: AddonIdentity | None = None
    """Pod Identity for the add-on; None: the add-on needs no AWS credentials of its own."""
    configuration: dict[str, Any] | None = None
    """configuration_values as a mapping; None: the add-on's defaults."""
    depends_on: tuple[ITerraformDependable, ...] = field(default=())
    """Created after these (and destroyed before them)."""


class ManagedAddon(Construct):
    """Exposes `addon`. The add-on version is the EKS default for the cluster's version."""

    def __init__(self, scope: Construct, id_: str, *, props: ManagedAddonProps):
        super().__init__(scope, id_)
        identity = None
        if props.identity is not None:
            identity = [EksAddonPodIdentityAssociation(
                service_account=props.identity.service_account, role_arn=props.identity.role_arn)]
        self._addon = EksAddon(
            self, "addon",
            cluster_name=props.cluster_name,
            addon_name=props.addon_name,
            configuration_values=json.dumps(props.configuration, sort_keys=True) if props.configuration else None,
            pod_identity_association=identity,
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            depends_on=list(props.depends_on) or None,
        )

    @property
    def addon(self) -> EksAddon:
        """The aws_eks_addon resource (to depend on)."""
        return self._addon
