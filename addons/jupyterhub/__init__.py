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

# OAuth client id: RFC 6749 appendix A.1, client-id = *VSCHAR (%x20-7E); a space is refused too (no
# provider issues one, and ' ' is a typo), with a bound (Cognito's is 1-128, Entra's a GUID).
OAuthClientId = Annotated[
    str, worded(r"^[!-~]{1,255}$", "1-255 printable ASCII characters without spaces, e.g. 1example23456789")
]
# Scope tokens: RFC 6749 section 3.3, scope-token = 1*NQCHAR (%x21 / %x23-5B / %x5D-7E). Taken here as
# the subset OIDC and Cognito use: openid, profile, email, aws.cognito.signin.user.admin,
# resource-server scopes such as https://api.example.com/read (no shell or template characters).
OAuthScope = Annotated[
    str,
    worded(
        r"^[A-Za-z0-9_.:/+-]{1,128}$",
        "an OAuth scope: 1-128 ASCII letters, digits and _ . : / + -, e.g. openid",
    ),
]
# An ID token / userinfo claim name: ASCII, e.g. sub, email, preferred_username, cognito:username.
ClaimName = Annotated[
    str, worded(r"^[A-Za-z0-9_.:-]{1,128}$", "a claim name: 1-128 ASCII letters, digits and _ . : -, e.g. sub")
]
# A username JupyterHub allows: the username claim's value. JupyterHub lowercases it by default
# (Authenticator.normalize_username) and KubeSpawner escapes it into pod and PVC names; ASCII only
# (a Cyrillic a, U+0430, would pass for a Latin one), bounded: a sub (UUID), an email or a short name.
HubUsername = Annotated[
    str,
    worded(
        r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$",
        "a username: 1-128 ASCII letters, digits and . _ @ + -, starting alphanumeric, e.g. alice@example.com",
    ),
]


# Helm's `tpl`: these fields reach the chart only as hub.config.GenericOAuthenticator (install.py),
# which z2jh 4.x writes into the hub Secret as data (jupyterhub/templates/hub/secret.yaml:
# `values.yaml: {{ $values | toYaml | b64enc | quote }}`), never through `tpl`; and the patterns
# above admit no `{` in scopes, claims or usernames. In chart 4.4.0 `tpl` renders only hub.command,
# hub.args (templates/hub/deployment.yaml 101, 108) and proxy.chp.extraCommandLineFlags
# (templates/proxy/deployment.yaml 107), which the add-on never sets (install.py); so `{{` in
# profile text cannot reach `tpl`, and is not refused globally.


class OidcConfig(Strict):
    """An OIDC client for JupyterHub (e.g. a Cognito app client). The client secret is never in the
    profile: it is read from a Secret mounted into the hub at /run/secrets/oidc."""

    client_id: OAuthClientId
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
    scopes: Annotated[list[OAuthScope], unique(why="a scope is requested once")] = Field(
        ["openid", "profile", "email"], min_length=1, max_length=50
    )
    """OAuth scopes requested at sign-in."""
    username_claim: ClaimName = Field("sub")
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
    allowed_users: Annotated[
        list[HubUsername],
        unique(ignore_case=True, why="JupyterHub lowercases usernames, so both name one user"),
    ] = Field(default_factory=list, max_length=10000)
    """Values of the username claim allowed to log in."""
    cpu_image: ImageRef = Field("quay.io/jupyter/scipy-notebook:2025-12-01")
    """Pinned CPU notebook image."""
    gpu_image: ImageRef = Field("quay.io/jupyter/pytorch-notebook:cuda12-2025-12-01")
    """Pinned CUDA notebook image. The default is published for x86_64 only: a DRA profile with arm64
    GPU groups (P6e-GB200), where GPU notebooks run on those groups, names one built for arm64."""
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
