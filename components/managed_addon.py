"""An EKS managed add-on, optionally with a Pod Identity association for its service account."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from cdktf import ITerraformDependable, Precondition, TerraformResourceLifecycle
from cdktf_cdktf_provider_aws.data_aws_eks_addon_version import DataAwsEksAddonVersion
from cdktf_cdktf_provider_aws.eks_addon import EksAddon, EksAddonPodIdentityAssociation
from constructs import Construct

from components.expressions import expression, string_literal


def _at_least(version_expression: str, minimum: tuple[int, ...]) -> str:
    """A Terraform condition: the `vMAJOR.MINOR.PATCH-eksbuild.N` version is at least `minimum`.
    (Character classes, not backslash escapes: HCL strings reject `\\d`.)"""
    pattern = string_literal("^v([0-9]+)[.]([0-9]+)[.]([0-9]+)")
    parts = f"[for p in regex({pattern}, {version_expression}) : tonumber(p)]"
    major, minor, patch = (*minimum, 0, 0)[:3]
    wanted = major * 1000000 + minor * 1000 + patch
    return expression(f"{parts}[0] * 1000000 + {parts}[1] * 1000 + {parts}[2] >= {wanted}")


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
    kubernetes_version: str
    """The cluster's Kubernetes version (EKS's default add-on version depends on it)."""
    version: str | None = None
    """The add-on version to install; None: EKS's default for `kubernetes_version`, read at plan time."""
    minimum: tuple[int, ...] | None = None
    """The oldest version the platform accepts (checked by `terraform plan` when read at plan time)."""
    minimum_why: str = ""
    """What breaks below the minimum."""


class ManagedAddon(Construct):
    """Exposes `addon`. Always pinned: to `version`, or to EKS's default for the cluster's version."""

    def __init__(self, scope: Construct, id_: str, *, props: ManagedAddonProps):
        super().__init__(scope, id_)
        version, lifecycle = props.version, None
        if version is None:
            default = DataAwsEksAddonVersion(
                self,
                "default-version",
                addon_name=props.addon_name,
                kubernetes_version=props.kubernetes_version,
                most_recent=False,
            )
            version = default.version
            if props.minimum is not None:
                lifecycle = TerraformResourceLifecycle(
                    precondition=[
                        Precondition(
                            condition=_at_least(f"{default.fqn}.version", props.minimum),
                            error_message=(
                                f"EKS's default {props.addon_name} for Kubernetes {props.kubernetes_version} is "
                                f"older than {'.'.join(map(str, props.minimum))} ({props.minimum_why}): pin a "
                                "newer one in cluster.addon_versions."
                            ),
                        )
                    ]
                )
        identity = None
        if props.identity is not None:
            identity = [
                EksAddonPodIdentityAssociation(
                    service_account=props.identity.service_account, role_arn=props.identity.role_arn
                )
            ]
        self._addon = EksAddon(
            self,
            "addon",
            cluster_name=props.cluster_name,
            addon_name=props.addon_name,
            addon_version=version,
            lifecycle=lifecycle,
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
