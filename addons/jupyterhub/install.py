"""JupyterHub (zero-to-jupyterhub chart) behind GenericOAuthenticator.

Authentication follows an explicit allow policy: allow_all false, allow_existing_users false and
an explicit allow-list of stable usernames (the `sub` claim by default). The OIDC client secret is
read from a Secret mounted at /run/secrets/oidc, never from values, a ConfigMap or an env var.
Notebook profiles select Karpenter pool nodes by their real labels and tolerate the GPU taint; in
DRA mode the GPU notebook selects the managed GPU groups instead (Karpenter ignores ResourceClaims).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdktf import ITerraformDependable
from pydantic import Field

from addons.jupyterhub import DEFINITION, JupyterHubConfig, JupyterHubExposure
from components.helm.addon import AddonContext, HelmAddonSpec, RuntimePath
from components.helm.release import Values
from components.image_reference import parse_image_reference
from components.k8s.gpus import GPU_EXTENDED_RESOURCE, claim_template, container_claims, pod_claims
from components.k8s.namespaces import egress_https_outside_the_node
from components.labels import GPU_TOLERATION, GPU_TRAINING_ROLE, NODE_POOL_LABEL, ROLE_LABEL, SYSTEM_NODES
from profiles.models import dra_mode

SECRET_MOUNT = "/run/secrets/oidc"

# Runs inside the hub at start-up: the only place the client secret is read.
READ_CLIENT_SECRET = (
    "from pathlib import Path\n"
    f"c.GenericOAuthenticator.client_secret = Path('{SECRET_MOUNT}/client-secret').read_text().strip()\n"
)


# The chart's own NetworkPolicies (on by default) allow the hub and proxy egress anywhere, notebooks
# egress to every public address, and the proxy ingress from anywhere; NetworkPolicies add up, so
# they would undo the namespace's default deny. The platform's policies (the namespace guard and
# network_allows below) are the only ones.
CHART_POLICY_OFF: dict[str, Any] = {"enabled": False}


class HubValues(Values):
    config: dict[str, Any]
    extra_config: dict[str, str]
    extra_volumes: list[dict[str, Any]]
    extra_volume_mounts: list[dict[str, Any]]
    node_selector: dict[str, str] = Field(default_factory=lambda: dict(SYSTEM_NODES))
    network_policy: dict[str, Any] = Field(default_factory=lambda: dict(CHART_POLICY_OFF))


class SingleUserValues(Values):
    image: dict[str, str]
    extra_env: dict[str, str] = Field(default_factory=dict)
    extra_files: dict[str, Any] = Field(default_factory=dict)
    start_timeout: int
    storage: dict[str, Any]
    profile_list: list[dict[str, Any]]
    network_policy: dict[str, Any] = Field(default_factory=lambda: dict(CHART_POLICY_OFF))
    # The chart's metadata block is a privileged NET_ADMIN init container in every notebook pod,
    # which the namespace's baseline Pod Security refuses. Nothing is lost: IMDS is out of a pod's
    # reach (IMDSv2, hop limit 1) and the namespace's policies exclude the link-local range.
    cloud_metadata: dict[str, Any] = Field(default_factory=lambda: {"blockWithIptables": False})


class ProxyValues(Values):
    service: dict[str, Any]
    https: dict[str, Any] | None = None
    chp: dict[str, Any] = Field(default_factory=lambda: {"networkPolicy": dict(CHART_POLICY_OFF)})


# Service annotations of the in-tree AWS load balancer integration (no extra controller needed).
_NLB = "service.beta.kubernetes.io/aws-load-balancer-"


# The chart's proxy pod (configurable-http-proxy) and the port its public Service targets; with
# TLS offloaded at the load balancer, the https Service port targets it too.
PROXY_POD = {"app": "jupyterhub", "component": "proxy"}
PROXY_HTTP_PORT = 8000


def load_balancer_ingress(exposure: JupyterHubExposure, *, vpc_cidr: str) -> dict[str, Any]:
    """The load balancer's traffic into the proxy pod. With instance targets and the Service's
    default externalTrafficPolicy (Cluster), kube-proxy forwards it from the node's address, and
    the NLB's health checks come from inside the VPC: the VPC CIDR admits both. Who may reach the
    load balancer at all is the Service's loadBalancerSourceRanges (the node security group);
    the source CIDRs here admit clients whose address reaches the pod unchanged."""
    sources = [vpc_cidr, *(exposure.source_cidrs if exposure.type == "public_nlb_tls" else [])]
    return {
        "podSelector": {"matchLabels": dict(PROXY_POD)},
        "policyTypes": ["Ingress"],
        "ingress": [
            {
                "from": [{"ipBlock": {"cidr": cidr}} for cidr in sources],
                "ports": [{"protocol": "TCP", "port": PROXY_HTTP_PORT}],
            }
        ],
    }


def proxy_values(exposure: JupyterHubExposure) -> ProxyValues:
    """ClusterIP unless the profile asks for a load balancer; on the internet only behind TLS, with
    the plain HTTP port closed and the listener limited to the named client ranges."""
    if exposure.type == "cluster_ip":
        return ProxyValues(service={"type": "ClusterIP"})
    annotations = {f"{_NLB}type": "nlb", f"{_NLB}backend-protocol": "tcp"}
    service: dict[str, Any] = {"type": "LoadBalancer", "annotations": annotations}
    https = None
    if exposure.type == "internal_nlb":
        annotations[f"{_NLB}internal"] = "true"
    else:
        service["loadBalancerSourceRanges"] = list(exposure.source_cidrs)
        service["disableHttpPort"] = True
    if exposure.acm_certificate_arn is not None:
        annotations[f"{_NLB}ssl-cert"] = exposure.acm_certificate_arn
        annotations[f"{_NLB}ssl-ports"] = "https"
        https = {"enabled": True, "type": "offload"}
    return ProxyValues(service=service, https=https)


class JupyterHubValues(Values):
    hub: HubValues
    proxy: ProxyValues
    singleuser: SingleUserValues
    cull: dict[str, Any]
    # User pods are scheduled by the default scheduler onto Karpenter nodes; no placeholder pods.
    scheduling: dict[str, Any] = Field(
        default_factory=lambda: {"userScheduler": {"enabled": False}, "userPlaceholder": {"enabled": False}}
    )


def _image(reference: str) -> dict[str, str]:
    """z2jh takes name and tag apart; a digest pins exactly (as name@digest in the tag's place)."""
    parsed = parse_image_reference(reference)
    if parsed.digest:
        return {"name": parsed.name, "tag": f"{parsed.tag}@{parsed.digest}" if parsed.tag else parsed.digest}
    return {"name": parsed.name, "tag": parsed.tag or ""}


# Where the notebook server reads the platform's culling settings: in /etc/jupyter (jupyter_core's
# SYSTEM_CONFIG_PATH) traitlets loads jupyter_server_config.json after the image's own
# jupyter_server_config.py (the Jupyter Docker Stacks ship the .py only).
SERVER_CULLING_FILE = "/etc/jupyter/jupyter_server_config.json"
CULL_EVERY_SECONDS = 300
HUB_CULL_FACTOR = 4
HUB_CULL_FLOOR_SECONDS = 24 * 3600


def culling(minutes: int | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The hub's idle culler (z2jh 4.4.0 values `cull`, run as jupyterhub-idle-culler) and the
    notebook server's own culling (a z2jh extraFiles entry).

    The server's own settings do the prompt work: kernels idle (not busy) for `minutes` are shut
    down even while a browser tab is connected (cull_connected), and the server stops itself once
    it has no kernel or terminal and no activity for as long, which ends the pod and releases its
    GPU. A busy kernel is never culled there. The hub's culler is the backstop for servers that
    never stop themselves: it counts only activity the server reports, and a cell busy without
    output reports none, so its timeout is much longer (HUB_CULL_FACTOR times, at least a day).
    Off (None): the chart's culler is off too."""
    if minutes is None:
        return {"enabled": False}, {}
    seconds = minutes * 60
    hub_seconds = max(HUB_CULL_FACTOR * seconds, HUB_CULL_FLOOR_SECONDS)
    hub = {"enabled": True, "timeout": hub_seconds, "every": CULL_EVERY_SECONDS, "users": False, "maxAge": 0}
    server = {
        "platform-culling": {
            "mountPath": SERVER_CULLING_FILE,
            "data": {
                "MappingKernelManager": {
                    "cull_idle_timeout": seconds,
                    "cull_interval": CULL_EVERY_SECONDS,
                    "cull_connected": True,
                    "cull_busy": False,
                },
                "ServerApp": {"shutdown_no_activity_timeout": seconds},
            },
        }
    }
    return hub, server


# The GPU notebook's share of its node: what KubeSpawner's guarantees and limits would set.
GPU_NOTEBOOK_REQUESTS = {"cpu": "4", "memory": "16G"}
GPU_NOTEBOOK_LIMITS = {"cpu": "8", "memory": "32G"}


def _one_gpu(*, dra: bool) -> dict[str, Any]:
    """KubeSpawner settings for a one-GPU notebook.

    Device plugin: on a Karpenter GPU pool node, with the extended resource beside the CPU and
    memory guarantees. DRA mode: on a managed GPU node (Karpenter does not provision for pods with
    ResourceClaims), with a claim from the namespace's gpu-1 ResourceClaimTemplate. KubeSpawner
    applies extra_container_config after its own settings and replaces the container's whole
    `resources` with it, so the CPU and memory requests and limits are written there too."""
    if not dra:
        return {
            "node_selector": {NODE_POOL_LABEL: "gpu"},
            "cpu_guarantee": int(GPU_NOTEBOOK_REQUESTS["cpu"]),
            "cpu_limit": int(GPU_NOTEBOOK_LIMITS["cpu"]),
            "mem_guarantee": GPU_NOTEBOOK_REQUESTS["memory"],
            "mem_limit": GPU_NOTEBOOK_LIMITS["memory"],
            "extra_resource_guarantees": {GPU_EXTENDED_RESOURCE: "1"},
            "extra_resource_limits": {GPU_EXTENDED_RESOURCE: "1"},
        }
    return {
        "node_selector": {ROLE_LABEL: GPU_TRAINING_ROLE},
        "extra_pod_config": {"resourceClaims": pod_claims(1)},
        "extra_container_config": {
            "resources": {
                "requests": dict(GPU_NOTEBOOK_REQUESTS),
                "limits": dict(GPU_NOTEBOOK_LIMITS),
                "claims": container_claims(),
            }
        },
    }


def jupyterhub_values(
    cfg: JupyterHubConfig, *, storage_class: str, dra: bool = False, client_env: Mapping[str, str] | None = None
) -> JupyterHubValues:
    oidc = cfg.oidc
    assert oidc is not None  # the profile model guarantees it for an enabled hub
    authenticator = {
        "client_id": oidc.client_id,
        "oauth_callback_url": oidc.callback_url,
        "authorize_url": oidc.authorize_url,
        "token_url": oidc.token_url,
        "userdata_url": oidc.userdata_url,
        "scope": list(oidc.scopes),
        "username_claim": oidc.username_claim,
        "allow_all": False,
        "allow_existing_users": False,
        "allowed_users": sorted(cfg.allowed_users),
    }
    hub_culler, server_culling = culling(cfg.idle_cull_minutes)
    return JupyterHubValues(
        cull=hub_culler,
        proxy=proxy_values(cfg.exposure),
        hub=HubValues(
            config={"JupyterHub": {"authenticator_class": "generic-oauth"}, "GenericOAuthenticator": authenticator},
            extra_config={"10-oidc-client-secret": READ_CLIENT_SECRET},
            extra_volumes=[{"name": "oidc", "secret": {"secretName": oidc.client_secret_name}}],
            extra_volume_mounts=[{"name": "oidc", "mountPath": SECRET_MOUNT, "readOnly": True}],
        ),
        singleuser=SingleUserValues(
            image=_image(cfg.cpu_image),
            # Notebooks find the platform's services (MLflow: the user signs in to it) without configuration.
            extra_env=dict(client_env or {}),
            extra_files=server_culling,
            start_timeout=cfg.start_timeout_seconds,
            # Per-user volumes live in the hub's namespace, next to the pods that mount them.
            storage={
                "type": "dynamic",
                "capacity": f"{cfg.user_storage_gib}Gi",
                "dynamic": {"storageClass": storage_class},
            },
            profile_list=[
                {
                    "display_name": "CPU",
                    "description": "CPU notebook",
                    "default": True,
                    "kubespawner_override": {
                        "node_selector": {NODE_POOL_LABEL: "cpu"},
                        "cpu_guarantee": 1,
                        "cpu_limit": 4,
                        "mem_guarantee": "4G",
                        "mem_limit": "16G",
                    },
                },
                {
                    "display_name": "1 GPU",
                    "description": "One NVIDIA GPU on a managed GPU node"
                    if dra
                    else "One NVIDIA GPU on a GPU pool node",
                    "kubespawner_override": {
                        "image": cfg.gpu_image,
                        "tolerations": [dict(GPU_TOLERATION)],
                        **_one_gpu(dra=dra),
                    },
                },
            ],
        ),
    )


class JupyterHubAddon(HelmAddonSpec[JupyterHubConfig]):
    definition = DEFINITION
    release_name = "jupyterhub"
    timeout_seconds = 1200

    def user_secrets(self, settings: JupyterHubConfig) -> tuple[str, ...]:
        return (settings.oidc.client_secret_name,) if settings.oidc else ()

    def values(self, ctx: AddonContext, settings: JupyterHubConfig) -> JupyterHubValues:
        return jupyterhub_values(
            settings,
            storage_class=ctx.storage_class,
            dra=dra_mode(ctx.config),
            client_env=ctx.clients.env,
        )

    # Notebooks are clients of the platform's services (MLflow, when on): their labels and egress.
    def namespace_labels(self, ctx: AddonContext, settings: JupyterHubConfig) -> dict[str, str]:
        return dict(ctx.clients.labels)

    def network_allows(self, ctx: AddonContext, settings: JupyterHubConfig) -> dict[str, dict[str, Any]]:
        allows = {
            # Sign-in: the hub exchanges the code at the identity provider's token endpoint and
            # reads its user-info endpoint (https URLs of the profile, anywhere on the internet);
            # notebooks fetch packages and data over HTTPS. Never IMDS (link-local is excluded).
            "allow-identity-provider": egress_https_outside_the_node(),
            **ctx.clients.allow,
        }
        if settings.exposure.type != "cluster_ip":
            allows["allow-load-balancer"] = load_balancer_ingress(settings.exposure, vpc_cidr=ctx.vpc_cidr)
        return allows

    def runtime_paths(self, settings: JupyterHubConfig) -> tuple[RuntimePath, ...]:
        hub = {"app": "jupyterhub", "component": "hub"}
        paths = [
            RuntimePath(
                what="sign-in: the hub calls the provider's token and user-info endpoints (https)",
                direction="Egress",
                peer="internet",
                port=443,
                pod_labels=hub,
            ),
            RuntimePath(
                what="the hub's own API is for its proxy and notebooks only",
                direction="Ingress",
                peer="vpc",
                port=8081,
                pod_labels=hub,
                open=False,
            ),
        ]
        if settings.exposure.type != "cluster_ip":
            paths.append(
                RuntimePath(
                    what="the load balancer's traffic and health checks reach the proxy",
                    direction="Ingress",
                    peer="vpc",
                    port=PROXY_HTTP_PORT,
                    pod_labels=PROXY_POD,
                )
            )
        return tuple(paths)

    def namespace_objects(self, ctx: AddonContext, settings: JupyterHubConfig) -> list[dict[str, Any]]:
        # The GPU notebook profile's claim template (DRA mode).
        return [claim_template(self.namespace, 1)] if dra_mode(ctx.config) else []

    def depends_on(self, ctx: AddonContext) -> tuple[ITerraformDependable, ...]:
        return (ctx.storage_class_ready,)


ADDON = JupyterHubAddon()
