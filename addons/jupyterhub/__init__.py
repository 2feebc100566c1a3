"""JupyterHub: notebooks for signed-in users, on CPU or GPU nodes."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from addons.definition import UNQUEUED_GPU_POOL_PODS, AddonDefinition, ReleaseConfig
from profiles.base import FieldProblem, HttpsUrl, K8sName, Strict, check_cidr, worded
from profiles.image_ref import ImageRef
from profiles.limits import EBS_GP3_MAX_GIB, INT32_MAX
from profiles.unique import unique
from profiles.versions import ChartRef


class OidcConfig(Strict):
    """An OIDC client for JupyterHub (e.g. a Cognito app client). The client secret is never in the
    profile: it is read from a Secret mounted into the hub at /run/secrets/oidc."""

    client_id: str = Field(..., min_length=1)
    """The OAuth client id registered with the identity provider."""
    client_secret_name: K8sName = Field("jupyterhub-oidc")
    """Secret with key client-secret, in the hub namespace."""
    callback_url: HttpsUrl
    """JupyterHub's OAuth callback URL, e.g. https://hub.example.com/hub/oauth_callback."""
    authorize_url: HttpsUrl
    """The identity provider's authorization endpoint (https)."""
    token_url: HttpsUrl
    """The identity provider's token endpoint (https)."""
    userdata_url: HttpsUrl
    """The identity provider's user-info endpoint (https)."""
    scopes: list[str] = Field(["openid", "profile", "email"], min_length=1)
    """OAuth scopes requested at sign-in."""
    username_claim: str = Field("sub")
    """A stable claim: sub never changes, unlike email."""


AcmCertificateArn = Annotated[
    str,
    worded(
        r"^arn:aws[a-z-]*:acm:[a-z0-9-]+:[0-9]{12}:certificate/[0-9a-f-]+$",
        "an ACM certificate ARN, e.g. arn:aws:acm:us-east-1:123456789012:certificate/0123abcd-4567-89ef-0123-4567",
    ),
]


class JupyterHubExposure(Strict):
    """How users reach the hub. Never a plain-HTTP endpoint on the internet."""

    type: Literal["cluster_ip", "internal_nlb", "public_nlb_tls"] = "cluster_ip"
    """cluster_ip (default): no load balancer; reach the hub with kubectl port-forward or your own ingress.
    internal_nlb: a Network Load Balancer inside the VPC. public_nlb_tls: an internet-facing NLB that terminates TLS
    with acm_certificate_arn and admits only source_cidrs.
    """
    acm_certificate_arn: AcmCertificateArn | None = Field(None)
    """ACM certificate for the hub's host name (public_nlb_tls; optional for internal_nlb)."""
    source_cidrs: Annotated[list[str], unique()] = Field(default_factory=list)
    """public_nlb_tls: the client CIDRs the load balancer admits."""

    @model_validator(mode="after")
    def _tls_on_the_internet(self) -> JupyterHubExposure:
        if self.type == "public_nlb_tls":
            if self.acm_certificate_arn is None:
                raise FieldProblem(
                    "acm_certificate_arn",
                    None,
                    "an internet-facing hub needs TLS: name the ACM certificate for its host name",
                    allowed="arn:aws:acm:<region>:<account>:certificate/<id>",
                )
            if not self.source_cidrs:
                raise FieldProblem(
                    "source_cidrs",
                    [],
                    "an internet-facing hub admits only named client ranges",
                    allowed="one or more CIDRs, e.g. [203.0.113.0/24]",
                )
            for index, cidr in enumerate(self.source_cidrs):
                try:
                    check_cidr(cidr)
                except ValueError as error:
                    raise FieldProblem(("source_cidrs", index), cidr, str(error)) from None
        elif self.source_cidrs:
            raise FieldProblem(
                "source_cidrs",
                self.source_cidrs,
                f"{self.type} has no public listener to restrict",
                allowed="empty, or type public_nlb_tls",
            )
        return self


class JupyterHubConfig(ReleaseConfig):
    enabled: bool = False
    """Install JupyterHub (off by default; needs oidc and allowed_users)."""
    oidc: OidcConfig | None = None
    """The OpenID Connect identity provider users sign in with; required when enabled."""
    allowed_users: list[str] = Field(default_factory=list)
    """Values of the username claim allowed to log in."""
    cpu_image: ImageRef = Field("quay.io/jupyter/scipy-notebook:2025-12-01")
    """Pinned CPU notebook image."""
    gpu_image: ImageRef = Field("quay.io/jupyter/pytorch-notebook:cuda12-2025-12-01")
    """Pinned CUDA notebook image."""
    start_timeout_seconds: int = Field(1200, ge=300, le=INT32_MAX)
    """GPU images are large: starts of many minutes are normal."""
    user_storage_gib: int = Field(20, ge=1, le=EBS_GP3_MAX_GIB)
    """Size of each user's home volume, in GiB."""
    idle_cull_minutes: int | None = Field(60, ge=10, le=10080)
    """Minutes after which a notebook's idle kernels are shut down (a busy one never), and then its server stops itself
    if nothing else is active, which releases its GPU (the home volume stays); an open JupyterLab tab counts as
    activity. The hub stops servers silent for four times as long (at least a day). null: never.
    """
    exposure: JupyterHubExposure = Field(default_factory=JupyterHubExposure)
    """How users reach the hub; private (ClusterIP) by default."""

    @model_validator(mode="after")
    def _authentication(self) -> JupyterHubConfig:
        if self.enabled and self.oidc is None:
            raise FieldProblem(
                "oidc",
                None,
                "JupyterHub needs OIDC settings: it never runs without authentication",
                allowed="client_id, callback_url, authorize_url, token_url, userdata_url",
            )
        if self.enabled and not self.allowed_users:
            raise FieldProblem(
                "allowed_users",
                [],
                "an empty allow-list lets nobody sign in (only the users listed here may)",
                allowed="one or more values of the username claim",
            )
        return self

    def platform_facts(self) -> frozenset[str]:
        # The GPU notebooks run on Karpenter's GPU pool, outside the tenants' queues.
        return frozenset({UNQUEUED_GPU_POOL_PODS}) if self.enabled else frozenset()


DEFINITION = AddonDefinition(
    key="jupyterhub",
    settings_type=JupyterHubConfig,
    description="JupyterHub for interactive notebooks (off by default).",
    # The newest chart release when this was pinned (4.4.2 was not yet published).
    pin=ChartRef(
        repository="https://hub.jupyter.org/helm-chart/", chart="jupyterhub", version="4.4.0", app_version="5.5.0"
    ),
    namespace="jupyterhub",
)
