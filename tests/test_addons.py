"""Invariants of the addons layer: pinned releases, typed values, secrets kept out, ordering."""

from __future__ import annotations

import json

import pytest
import yaml

from addons.catalog import ARTIFACTS, CHARTS
from addons.jupyterhub import JupyterHubExposure
from addons.jupyterhub.install import proxy_values
from addons.monitoring.install import ADDON_RULES
from components.k8s.mpi import MPIJOB_API_VERSION, MPIJOB_KIND, launcher_selector
from components.labels import EFA_LABEL, NODE_POOL_LABEL
from manifests.render import render
from profiles import load_profile
from tests.cases import FIXTURES, SHIPPED, TEST_SECRETS
from tests.synth_helpers import resources

ALL = SHIPPED + FIXTURES


def addons(synthesized, profile):
    return synthesized.stack(profile, "addons")


def releases(synthesized, profile) -> dict[str, dict]:
    """Helm releases keyed by release name."""
    return {body["name"]: body for body in resources(addons(synthesized, profile), "helm_release").values()}


def values(release: dict) -> dict:
    (document,) = release["values"]
    return yaml.safe_load(document)


@pytest.mark.parametrize("profile", ALL)
def test_every_release_is_pinned_atomic_and_from_a_secure_repository(synthesized, profile):
    found = releases(synthesized, profile)
    assert found
    for name, release in found.items():
        assert release["repository"].startswith(("https://", "oci://")), name
        assert (release["version"] and release["version"][0].isdigit()) or release["version"].startswith("v")
        assert release["atomic"] is True and release["cleanup_on_fail"] is True and release["wait"] is True
        assert release["timeout"] >= 600
        pinned = {(c.repository, c.chart, c.version) for c in CHARTS.values()}
        assert (release["repository"], release["chart"], release["version"]) in pinned, name


@pytest.mark.parametrize("profile", ALL)
def test_no_secret_value_reaches_the_json(synthesized, profile):
    for layer, stack in synthesized.stacks[profile].items():
        text = json.dumps(stack)
        for secret in TEST_SECRETS.values():
            assert secret not in text, f"{layer} leaks a secret"


def test_grafana_password_is_a_sensitive_variable_never_a_value(synthesized):
    stack = addons(synthesized, "gpu-validation")
    variable = stack["variable"]["grafana_admin_password"]
    assert variable["sensitive"] is True and "default" not in variable
    monitoring = releases(synthesized, "gpu-validation")["monitoring"]
    assert monitoring["set_sensitive"] == [{"name": "grafana.adminPassword", "value": "${var.grafana_admin_password}"}]
    assert "adminPassword" not in monitoring["values"][0]
    # Or from a Secret the operator creates: no password variable.
    jark = releases(synthesized, "jark")["monitoring"]
    assert values(jark)["grafana"]["admin"] == {
        "existingSecret": "grafana-admin",
        "userKey": "admin-user",
        "passwordKey": "admin-password",
    }
    assert "set_sensitive" not in jark and "grafana_admin_password" not in addons(synthesized, "jark")["variable"]


@pytest.mark.parametrize("profile", ALL)
def test_gpu_operator_uses_the_amis_driver_and_runtime(synthesized, profile):
    operator = values(releases(synthesized, profile)["gpu-operator"])
    assert operator["driver"] == {"enabled": False}
    assert operator["toolkit"] == {"enabled": False}  # the AMI already configured containerd
    assert operator["gfd"] == {"enabled": True}
    # honorLabels: the exporter's pod and namespace labels (the GPU's pod) survive the scrape.
    assert operator["dcgmExporter"]["serviceMonitor"] == {"enabled": True, "honorLabels": True}
    # The exporter reaches the node monitoring agent's host engine at localhost:5555: it must be on
    # the node's network, set explicitly (GPU Operator v26.7.0 would not switch it on for our env).
    engine = {e["name"]: e["value"] for e in operator["dcgmExporter"]["env"]}.get("DCGM_REMOTE_HOSTENGINE_INFO", "")
    assert operator["dcgmExporter"].get("hostNetwork", False) is engine.startswith("localhost")
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in operator["daemonsets"][
        "tolerations"
    ]


def test_dra_mode_deploys_gpucluster_not_clusterpolicy(synthesized):
    operator = values(releases(synthesized, "jark")["gpu-operator"])
    assert operator["clusterPolicy"] == {"deployCR": False} and operator["gpuCluster"] == {"deployCR": True}
    assert operator["driver"] == {"enabled": False}
    assert not any("dra" in name for name in releases(synthesized, "jark")), "no standalone DRA driver release"
    default = values(releases(synthesized, "gpu-validation")["gpu-operator"])
    assert "gpuCluster" not in default and "clusterPolicy" not in default


@pytest.mark.parametrize("profile", ALL)
def test_efa_plugin_runs_only_on_efa_nodes(synthesized, profile):
    plugin = values(releases(synthesized, profile)["efa-device-plugin"])
    assert plugin["nodeSelector"] == {EFA_LABEL: "true"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in plugin["tolerations"]
    # The label the plugin selects is the one EFA-enabled node groups carry.
    groups = synthesized.configs[profile].cluster.gpu_node_groups
    node_groups = {
        b["node_group_name"]: b for b in resources(synthesized.stack(profile, "cluster"), "aws_eks_node_group").values()
    }
    for group in groups:
        assert node_groups[group.name]["labels"][EFA_LABEL] == ("true" if group.efa_enabled else "false")


@pytest.mark.parametrize("profile", ALL)
def test_crd_providers_install_before_their_users(synthesized, profile):
    found = releases(synthesized, profile)
    keys = {body["name"]: key for key, body in resources(addons(synthesized, profile), "helm_release").items()}
    assert f"helm_release.{keys['monitoring']}" in found["gpu-operator"]["depends_on"]


def test_prometheus_selects_cluster_wide_and_carries_gpu_rules(synthesized):
    monitoring = values(releases(synthesized, "gpu-validation")["monitoring"])
    spec = monitoring["prometheus"]["prometheusSpec"]
    for key in (
        "serviceMonitorSelectorNilUsesHelmValues",
        "podMonitorSelectorNilUsesHelmValues",
        "ruleSelectorNilUsesHelmValues",
    ):
        assert spec[key] is False
    # The GPU Operator declares its rules (its monitors hook); the monitoring add-on loads them.
    rules = {
        rule.get("record") or rule.get("alert"): rule
        for group in monitoring["additionalPrometheusRulesMap"][ADDON_RULES]["groups"]
        if group["name"] == "gpu-platform"
        for rule in group["rules"]
    }
    # The last XID (a gauge, recorded once per GPU) is compared as it is, never as a rate.
    xid = rules["GpuXidCodeReported"]["expr"]
    assert "gpu:xid_errors:last" in xid and "increase(" not in xid and "rate(" not in xid
    last = rules["gpu:xid_errors:last"]["expr"]
    assert "DCGM_FI_DEV_XID_ERRORS" in last and "increase(" not in last and "rate(" not in last
    assert (
        rules["gpu:framebuffer_used:ratio"]["expr"]
        == "DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)"
    )
    # Pending GPU pods are counted through the GPU-count rule, which in device plugin mode reads the
    # extended resource (tests/test_gpu_alerts_both_modes.py: DRA mode).
    pending = rules["namespace:gpu_requesting_pods_pending:count"]["expr"]
    assert 'phase="Pending"' in pending and "namespace_pod:gpus_requested:sum" in pending
    assert 'resource="nvidia_com_gpu"' in rules["namespace_pod:gpus_requested:sum"]["expr"]


def test_jupyterhub_allow_policy_and_secret_mount(synthesized):
    hub = values(releases(synthesized, "jark")["jupyterhub"])
    auth = hub["hub"]["config"]["GenericOAuthenticator"]
    assert auth["allow_all"] is False and auth["allow_existing_users"] is False
    assert auth["allowed_users"] == ["0f3c2b9e-approved-sub", "7a1d-second-approved-sub"]
    assert auth["username_claim"] == "sub"
    assert auth["oauth_callback_url"] == "https://jupyter.example.com/hub/oauth_callback"
    assert "client_secret" not in auth
    assert hub["hub"]["extraVolumes"] == [{"name": "oidc", "secret": {"secretName": "jupyterhub-oidc"}}]
    assert hub["hub"]["extraVolumeMounts"][0]["mountPath"] == "/run/secrets/oidc"
    assert "/run/secrets/oidc/client-secret" in hub["hub"]["extraConfig"]["10-oidc-client-secret"]


def test_jupyterhub_is_private_by_default(synthesized):
    hub = values(releases(synthesized, "jark")["jupyterhub"])
    assert hub["proxy"]["service"] == {"type": "ClusterIP"}


def test_jupyterhub_runs_under_the_namespaces_guard_only(synthesized):
    """z2jh's own NetworkPolicies (on by default) allow egress anywhere and the proxy's ingress
    from anywhere, which would add to and so undo the namespace's default deny; its metadata
    block is a privileged NET_ADMIN init container that baseline Pod Security refuses, so no
    notebook would ever start."""
    hub = values(releases(synthesized, "jark")["jupyterhub"])
    assert hub["hub"]["networkPolicy"] == {"enabled": False}
    assert hub["proxy"]["chp"]["networkPolicy"] == {"enabled": False}
    assert hub["singleuser"]["networkPolicy"] == {"enabled": False}
    assert hub["singleuser"]["cloudMetadata"] == {"blockWithIptables": False}


CERT = "arn:aws:acm:us-west-2:123456789012:certificate/0b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e"


def test_jupyterhub_on_the_internet_only_behind_tls():
    public = proxy_values(
        JupyterHubExposure(type="public_nlb_tls", acm_certificate_arn=CERT, source_cidrs=["203.0.113.0/24"])
    ).render()
    rendered = yaml.safe_load(public)
    service = rendered["service"]
    assert service["type"] == "LoadBalancer" and service["disableHttpPort"] is True
    assert service["loadBalancerSourceRanges"] == ["203.0.113.0/24"]
    annotations = service["annotations"]
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-ssl-cert"] == CERT
    assert "service.beta.kubernetes.io/aws-load-balancer-internal" not in annotations
    assert rendered["https"] == {"enabled": True, "type": "offload"}
    internal = yaml.safe_load(proxy_values(JupyterHubExposure(type="internal_nlb")).render())
    assert internal["service"]["annotations"]["service.beta.kubernetes.io/aws-load-balancer-internal"] == "true"
    assert "loadBalancerSourceRanges" not in internal["service"]


def test_jupyterhub_notebook_profiles_match_real_node_labels(synthesized):
    hub = values(releases(synthesized, "jark")["jupyterhub"])
    profiles = {p["display_name"]: p["kubespawner_override"] for p in hub["singleuser"]["profileList"]}
    gpu, cpu = profiles["1 GPU"], profiles["CPU"]
    # DRA mode: the GPU notebook goes to the managed GPU nodes (Karpenter ignores ResourceClaims).
    assert gpu["node_selector"] == {"role": "gpu-training"} and cpu["node_selector"] == {NODE_POOL_LABEL: "cpu"}
    assert gpu["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    # jark runs the GPU Operator in DRA mode: the GPU comes from a claim, not the extended resource.
    assert gpu["extra_pod_config"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "gpu-1"}]
    assert gpu["extra_container_config"]["resources"]["claims"] == [{"name": "gpu"}]
    assert "extra_resource_limits" not in gpu
    assert "tolerations" not in cpu
    assert hub["singleuser"]["startTimeout"] >= 600
    assert hub["singleuser"]["storage"]["dynamic"]["storageClass"] == "gp3"


def test_argo_server_is_not_anonymous_and_workflows_are_bounded(synthesized):
    stack = addons(synthesized, "jark")
    argo = values(releases(synthesized, "jark")["argo-workflows"])
    assert argo["server"]["authModes"] == ["client"]
    defaults = argo["controller"]["workflowDefaults"]["spec"]
    assert defaults["activeDeadlineSeconds"] == 7200 and defaults["serviceAccountName"] == "argo-workflow"
    assert argo["controller"]["workflowNamespaces"] == ["workflows"]
    assert "images" not in argo  # the chart's own app version: its CRDs and controller match
    (quota,) = [
        b["manifest"]
        for b in resources(stack, "kubernetes_manifest").values()
        if isinstance(b["manifest"], dict) and b["manifest"]["kind"] == "ResourceQuota"
    ]
    assert quota["metadata"]["namespace"] == "workflows"
    assert quota["spec"]["hard"]["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] == "8"  # DRA mode


def test_karpenter_identity_queue_and_chart(synthesized):
    stack = addons(synthesized, "gpu-validation")
    chart = values(releases(synthesized, "gpu-validation")["karpenter"])
    assert chart["nodeSelector"] == {"role": "system"}
    settings = chart["settings"]
    assert settings["clusterName"].startswith("${data.terraform_remote_state.cross-stack-reference-input-cluster")
    assert settings["interruptionQueue"].startswith("${aws_sqs_queue.")
    rules = resources(stack, "aws_cloudwatch_event_rule")
    kinds = {json.loads(r["event_pattern"])["detail-type"][0] for r in rules.values()}
    assert {
        "EC2 Spot Instance Interruption Warning",
        "AWS Health Event",
        "EC2 Instance Rebalance Recommendation",
        "EC2 Instance State-change Notification",
    } <= kinds
    assert len(resources(stack, "aws_cloudwatch_event_target")) == len(rules)
    (association,) = [
        a for key, a in resources(stack, "aws_eks_pod_identity_association").items() if key.startswith("karpenter")
    ]
    assert (association["namespace"], association["service_account"]) == ("kube-system", "karpenter")
    (entry,) = resources(stack, "aws_eks_access_entry").values()
    assert entry["type"] == "EC2_LINUX"
    pass_role = [
        s
        for s in json.loads(
            next(p for key, p in resources(stack, "aws_iam_role_policy").items() if key.startswith("karpenter"))[
                "policy"
            ]
        )["Statement"]
        if "iam:PassRole" in s["Action"]
    ]
    assert pass_role[0]["Resource"].startswith("${aws_iam_role.")


@pytest.mark.parametrize("profile", ALL)
def test_providers_authenticate_with_exec_tokens(synthesized, profile):
    stack = addons(synthesized, profile)
    (kubernetes,) = stack["provider"]["kubernetes"]
    (helm,) = stack["provider"]["helm"]
    for exec_ in (kubernetes["exec"][0], helm["kubernetes"]["exec"]):
        assert exec_["command"] == "aws" and exec_["args"][:2] == ["eks", "get-token"]
    assert "token" not in kubernetes and "token" not in helm["kubernetes"]


def test_optional_releases_follow_the_profile(synthesized):
    assert {"kuberay-operator", "argo-workflows"} <= set(releases(synthesized, "p5-training"))
    assert not {"kuberay-operator", "jupyterhub", "argo-workflows"} & set(releases(synthesized, "gpu-validation"))
    assert {"karpenter", "monitoring", "gpu-operator", "efa-device-plugin"} <= set(
        releases(synthesized, "gpu-validation")
    )


def test_mpi_operator_is_the_v2beta1_controller_from_its_pinned_release_manifest(synthesized):
    stack = addons(synthesized, "gpu-validation")
    assert "mpi-operator" not in releases(synthesized, "gpu-validation"), "no (legacy, archived) community chart"
    assert "cowboysysop" not in json.dumps(stack)
    artifact = ARTIFACTS["mpi_operator"]
    assert artifact.url == (
        "https://raw.githubusercontent.com/kubeflow/mpi-operator/v0.8.0/deploy/v2beta1/mpi-operator.yaml"
    )
    assert artifact.image.endswith(":" + artifact.tag.removeprefix("v"))
    (download,) = resources(stack, "http", section="data").values()
    assert download["url"] == artifact.url
    (check,) = download["lifecycle"]["postcondition"]
    assert check["condition"] == f'${{sha256(self.response_body) == "{artifact.sha256}"}}'
    assert stack["terraform"]["required_providers"]["http"]["source"] == "hashicorp/http"
    objects = resources(stack, "kubernetes_manifest")["mpi-operator"]
    assert "manifest_decode_multi(data.http.mpi-operator-manifest.response_body)" in objects["for_each"]
    assert 'if doc.kind != "Namespace"' in objects["for_each"]  # the platform creates its own namespace
    assert objects["manifest"] == "${each.value}"
    assert any(dep.startswith("kubernetes_manifest.mpi-operator-namespace_namespace") for dep in objects["depends_on"])


def test_the_mpijob_contract_is_written_once():
    job = render(load_profile("p5-training"))["nccl-allreduce.yaml"][0]
    assert (job["apiVersion"], job["kind"]) == (MPIJOB_API_VERSION, MPIJOB_KIND)
    assert launcher_selector("nccl") == "training.kubeflow.org/job-name=nccl,training.kubeflow.org/job-role=launcher"


def test_rendered_values_are_visible_yaml(synthesized):
    for release in releases(synthesized, "p5-training").values():
        assert isinstance(values(release), dict)
        assert "TfToken" not in release["values"][0]


@pytest.mark.parametrize("profile", ["p5-training", "gpu-validation"])
def test_the_controllers_are_scraped(synthesized, profile):
    config = synthesized.configs[profile]
    monitoring = values(releases(synthesized, profile)["monitoring"])
    monitors = {m["name"]: m for m in monitoring["prometheus"]["additionalServiceMonitors"]}
    expected = {"karpenter", "kueue"} | ({"kuberay-operator"} if config.addons.kuberay.enabled else set())
    assert set(monitors) == expected
    # Kueue serves metrics over HTTPS behind Kubernetes authorization (its chart's own monitor does the same).
    kueue = monitors["kueue"]["endpoints"][0]
    assert (kueue["port"], kueue["scheme"], kueue["tlsConfig"]) == ("https", "https", {"insecureSkipVerify": True})
    assert kueue["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    assert monitors["karpenter"]["namespaceSelector"] == {"matchNames": ["kube-system"]}
    assert monitors["karpenter"]["endpoints"][0]["port"] == "http-metrics"
    if "kuberay-operator" in monitors:
        assert monitors["kuberay-operator"]["namespaceSelector"] == {"matchNames": ["ray-system"]}


def test_idle_gpu_notebooks_are_culled_by_the_hub_and_by_their_own_server(synthesized):
    """The notebook server's own settings shut down idle kernels after the profile's minutes even
    with a tab open (never a busy one), then the server itself: a GPU notebook left idle ends and
    releases its GPU. The server reads them from /etc/jupyter, as jupyter_server_config.json beside
    the image's .py. The hub's culler (z2jh 4.4.0 `cull`: jupyterhub-idle-culler --timeout) counts
    only reported activity, which a busy cell without output lacks: it is a backstop, at four times
    the minutes and at least a day, so it never cuts off a cell the server's own culling spares."""
    import json as _json

    config = synthesized.configs["jark"]
    minutes = config.addons.jupyterhub.idle_cull_minutes
    assert minutes == 60
    hub = values(releases(synthesized, "jark")["jupyterhub"])
    cull = hub["cull"]
    assert cull["enabled"] is True and cull["timeout"] == max(4 * minutes * 60, 24 * 3600)
    assert cull["timeout"] > minutes * 60
    assert 0 < cull["every"] <= cull["timeout"] and cull["users"] is False and cull["maxAge"] == 0
    (server,) = hub["singleuser"]["extraFiles"].values()
    assert server["mountPath"] == "/etc/jupyter/jupyter_server_config.json"
    kernels = server["data"]["MappingKernelManager"]
    assert kernels["cull_idle_timeout"] == minutes * 60 and kernels["cull_connected"] is True
    assert kernels["cull_busy"] is False  # a running cell is never cut off
    assert server["data"]["ServerApp"]["shutdown_no_activity_timeout"] == minutes * 60
    _json.dumps(server["data"])  # z2jh writes .json data as JSON


def test_culling_can_be_turned_off_and_is_bounded():
    from addons.jupyterhub.install import culling
    from profiles import ProfileError, validate_profile
    from tests.test_profiles import mutated

    assert culling(None) == ({"enabled": False}, {})
    hub = {
        "enabled": True,
        "oidc": {
            "client_id": "c",
            "callback_url": "https://hub.example.com/hub/oauth_callback",
            "authorize_url": "https://id.example.com/authorize",
            "token_url": "https://id.example.com/token",
            "userdata_url": "https://id.example.com/userinfo",
        },
        "allowed_users": ["someone"],
    }
    for minutes in (0, 5, 20000):
        with pytest.raises(ProfileError) as error:
            validate_profile(mutated(addons={"jupyterhub": {**hub, "idle_cull_minutes": minutes}}))
        assert "addons.jupyterhub.idle_cull_minutes" in "\n".join(error.value.problems)
