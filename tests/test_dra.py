"""GPU Operator DRA mode end to end (the jark fixture): the device plugin is off, so no object may
request the extended resource nvidia.com/gpu; GPUs come from ResourceClaimTemplates of the NVIDIA
DRA driver's device class in every namespace that uses them, and quotas count those devices."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.k8s.gpus import GPU_DEVICE_CLASS
from manifests.render import render
from tests.synth_helpers import resources


def synth_in_a_process(doc: dict[str, Any], profile: Path) -> subprocess.CompletedProcess[str]:
    """`main.py synth` of the profile `doc`, written to `profile`, as a user runs it."""
    profile.write_text(yaml.safe_dump(doc))
    root = Path(__file__).resolve().parents[1]
    command = [sys.executable, str(root / "main.py"), "synth", "--profile", str(profile)]
    return subprocess.run(
        [*command, "--outdir", str(profile.parent / "out")], capture_output=True, text=True, cwd=root, timeout=120
    )


DRA_QUOTA = f"{GPU_DEVICE_CLASS}.deviceclass.resource.k8s.io/devices"


def everything(synthesized, profile: str) -> list[dict[str, Any]]:
    """Kubernetes objects and Helm values the platform renders for a profile."""
    found: list[dict[str, Any]] = []
    for layer in ("addons", "workloads"):
        stack = synthesized.stack(profile, layer)
        found += [
            b["manifest"] for b in resources(stack, "kubernetes_manifest").values() if isinstance(b["manifest"], dict)
        ]
        found += [{"helm-values": yaml.safe_load(r["values"][0])} for r in resources(stack, "helm_release").values()]
    for objects in render(synthesized.configs[profile]).values():
        found += objects
    return found


def keys_with_path(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*path, key), key
            yield from keys_with_path(value, (*path, key))
    elif isinstance(node, list):
        for item in node:
            yield from keys_with_path(item, path)


def extended_resource_uses(obj: dict[str, Any]) -> list[tuple[str, ...]]:
    """Every place an object names nvidia.com/gpu: a request, a quota, or a NodePool limit (which
    would count GPUs no DRA node advertises, so it would cap nothing)."""
    return [path for path, key in keys_with_path(obj) if key.endswith("nvidia.com/gpu")]


def test_the_dra_fixture_requests_no_extended_gpu_resource(synthesized):
    assert synthesized.configs["jark"].addons.gpu_operator.dra
    uses = [
        (obj.get("kind", "helm values"), path)
        for obj in everything(synthesized, "jark")
        for path in extended_resource_uses(obj)
    ]
    assert uses == []


def test_without_dra_the_extended_resource_is_used(synthesized):
    uses = [path for obj in everything(synthesized, "gpu-validation") for path in extended_resource_uses(obj)]
    assert uses, "the device-plugin path requests nvidia.com/gpu"


def claimed_templates(node: Any) -> Iterator[str]:
    """Names of the ResourceClaimTemplates that pod specs (at any depth) claim from."""
    if isinstance(node, dict):
        for claim in node.get("resourceClaims", []):
            yield claim["resourceClaimTemplateName"]
        for value in node.values():
            yield from claimed_templates(value)
    elif isinstance(node, list):
        for item in node:
            yield from claimed_templates(item)


def test_every_claim_names_a_template_in_its_namespace(synthesized):
    objects = everything(synthesized, "jark")
    templates = {
        (o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects if o.get("kind") == "ResourceClaimTemplate"
    }
    assert all(
        o["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == GPU_DEVICE_CLASS
        for o in objects
        if o.get("kind") == "ResourceClaimTemplate"
    )
    claimed = [(o["metadata"]["namespace"], name) for o in objects if "metadata" in o for name in claimed_templates(o)]
    assert claimed, "GPU pods claim their GPUs"
    assert set(claimed) <= templates
    hub = next(o["helm-values"] for o in objects if "helm-values" in o and "singleuser" in o["helm-values"])
    gpu_profile = next(p for p in hub["singleuser"]["profileList"] if p["display_name"] == "1 GPU")
    (name,) = claimed_templates(gpu_profile)
    assert ("jupyterhub", name) in templates


@pytest.mark.parametrize("profile, key", [("jark", DRA_QUOTA), ("gpu-validation", "requests.nvidia.com/gpu")])
def test_quotas_count_the_gpus_the_platform_allocates(synthesized, profile, key):
    quotas = [o for o in everything(synthesized, profile) if o.get("kind") == "ResourceQuota"]
    assert quotas
    for quota in quotas:
        gpu_keys = [k for k in quota["spec"]["hard"] if "gpu" in k]
        assert gpu_keys == [key], quota["metadata"]


def test_dra_gpus_never_go_to_karpenter_which_ignores_resource_claims(synthesized):
    """Karpenter 1.14.1's chart sets settings.ignoreDRARequests: true, so it never launches a node for
    a pod with ResourceClaims: in DRA mode there is no GPU NodePool, and GPU pods select the
    managed GPU groups' nodes."""
    from addons.karpenter.pools import GPU_POOL, node_pools
    from operate.owned import platform_objects
    from profiles.gpus import gpu_capacity

    config = synthesized.configs["jark"]
    objects = everything(synthesized, "jark")
    pools = {o["metadata"]["name"] for o in objects if o.get("kind") == "NodePool"}
    assert pools == set(node_pools(config)) == {"cpu"}
    assert {o["metadata"]["name"] for o in objects if o.get("kind") == "EC2NodeClass"} == {"default"}
    assert platform_objects(config, "workloads").node_pools == ("cpu",)  # pause and clean-up agree
    managed = sum(g.max_size * g.catalog_entry.gpu_count for g in config.cluster.gpu_node_groups)
    assert gpu_capacity(config) == managed  # the pool's limit counts nothing here
    # With the device plugin, the GPU pool is there.
    assert GPU_POOL in node_pools(synthesized.configs["gpu-validation"])
    # Every pod that claims a GPU lands where a managed GPU group's labels match.
    group_labels = [
        body["labels"]
        for body in resources(synthesized.stack("jark", "cluster"), "aws_eks_node_group").values()
        if body["ami_type"].endswith("NVIDIA")
    ]
    hub = next(o["helm-values"] for o in objects if "helm-values" in o and "singleuser" in o["helm-values"])
    gpu = next(p for p in hub["singleuser"]["profileList"] if p["display_name"] == "1 GPU")["kubespawner_override"]
    assert any(gpu["node_selector"].items() <= labels.items() for labels in group_labels), gpu["node_selector"]


def kubespawner_container_resources(override: dict[str, Any]) -> dict[str, Any]:
    """The notebook container's resources as KubeSpawner 7 builds them (kubespawner/objects.py,
    make_pod): requests from cpu_guarantee / mem_guarantee / extra_resource_guarantees, limits from
    cpu_limit / mem_limit / extra_resource_limits; then extra_container_config is applied with
    update_k8s_model, which sets each named attribute whole: a `resources` there replaces them all."""
    requests = {"cpu": override.get("cpu_guarantee"), "memory": override.get("mem_guarantee")}
    limits = {"cpu": override.get("cpu_limit"), "memory": override.get("mem_limit")}
    resources = {
        "requests": {k: v for k, v in {**requests, **override.get("extra_resource_guarantees", {})}.items() if v},
        "limits": {k: v for k, v in {**limits, **override.get("extra_resource_limits", {})}.items() if v},
    }
    return override.get("extra_container_config", {}).get("resources", resources)


def test_kubespawner_model_replaces_resources_whole():
    """The evaluator on the case a naive merge gets wrong: claims alone drop CPU and memory."""
    claims_only = {"cpu_guarantee": 4, "mem_limit": "32G", "extra_container_config": {"resources": {"claims": [{}]}}}
    assert kubespawner_container_resources(claims_only) == {"claims": [{}]}


@pytest.mark.parametrize("dra", [True, False])
def test_a_gpu_notebook_keeps_its_cpu_and_memory_in_both_modes(synthesized, dra):
    from addons.jupyterhub.install import jupyterhub_values

    settings = synthesized.configs["jark"].addons.jupyterhub
    hub = yaml.safe_load(jupyterhub_values(settings, storage_class="gp3", dra=dra).render())
    gpu = next(p for p in hub["singleuser"]["profileList"] if p["display_name"] == "1 GPU")["kubespawner_override"]
    resources = kubespawner_container_resources(gpu)
    assert {k: str(v) for k, v in resources["requests"].items() if k in ("cpu", "memory")} == {
        "cpu": "4",
        "memory": "16G",
    }
    assert {k: str(v) for k, v in resources["limits"].items() if k in ("cpu", "memory")} == {
        "cpu": "8",
        "memory": "32G",
    }
    assert bool(resources.get("claims")) is dra
    assert ("nvidia.com/gpu" in resources["limits"]) is not dra


def test_dra_notebooks_need_a_managed_gpu_node_kept_running():
    from profiles import ProfileError, validate_profile
    from tests.cases import FIXTURE_PROFILES

    doc = yaml.safe_load((FIXTURE_PROFILES / "jark.yaml").read_text())
    doc["cluster"]["gpu_node_groups"][0]["desired_size"] = 0
    with pytest.raises(ProfileError) as error:
        validate_profile(doc)
    (problem,) = error.value.problems
    assert problem.startswith(
        "cluster.gpu_node_groups.0.desired_size: in DRA mode the GPU notebook runs on the managed"
    )
    doc["addons"]["jupyterhub"]["enabled"] = False  # no notebooks: nothing needs a node kept up
    validate_profile(doc)


# Queues in DRA mode: Kueue counts the devices of a pod set's claims (tests/kueue_model.py).

WORKER = {
    "spec": {
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-8"}],
        "containers": [{"name": "worker", "resources": {"claims": [{"name": "gpu"}]}}],
    }
}


def test_kueues_dra_count_is_per_pod_from_the_template_where_a_naive_reading_counts_nothing():
    """A naive model reads GPUs from the containers' requests (all the device-plugin path needs):
    a DRA worker asks for none there, so two 8-GPU workers count 0 and any queue admits them.
    Kueue reads the pod set's claims, resolves each template and counts its devices per pod,
    under the name the Configuration maps the DeviceClass to."""
    from components.k8s.gpus import claim_template
    from profiles.catalog import EFA_RESOURCE, GPU_RESOURCE
    from tests.kueue_model import Inadmissible, pod_requests, workload_requests

    templates = {"gpu-8": claim_template("vision", 8), "gpu-1": claim_template("vision", 1)}
    mappings = [{"name": GPU_RESOURCE, "deviceClassNames": [GPU_DEVICE_CLASS]}]
    assert pod_requests(WORKER)[GPU_RESOURCE] == 0  # the naive reading

    def count(pod_sets, **kwargs):
        return workload_requests(
            pod_sets, limit_ranges=[], claim_templates=kwargs.get("templates", templates), mappings=mappings
        )

    assert count([(WORKER, 2)]) == {GPU_RESOURCE: 16, EFA_RESOURCE: 0}
    # Every claim of the pod counts, whether or not a container names it.
    unused = {"spec": {**WORKER["spec"], "containers": [{"name": "idle"}]}}
    two = {
        "spec": {
            **WORKER["spec"],
            "resourceClaims": [
                *WORKER["spec"]["resourceClaims"],
                {"name": "one", "resourceClaimTemplateName": "gpu-1"},
            ],
        }
    }
    assert count([(unused, 1)])[GPU_RESOURCE] == 8 and count([(two, 1)])[GPU_RESOURCE] == 9
    # A request without a count is one device (the API server's default).
    bare = claim_template("vision", 1)
    del bare["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
    assert count([(WORKER, 3)], templates={"gpu-8": bare})[GPU_RESOURCE] == 3
    # Without the mapping (the Configuration before DRA mode), or with a claim shared by name, or with
    # a class no mapping names, Kueue admits nothing: the Workload is inadmissible.
    with pytest.raises(Inadmissible, match="not mapped"):
        workload_requests([(WORKER, 2)], limit_ranges=[], claim_templates=templates, mappings=[])
    shared = {"spec": {**WORKER["spec"], "resourceClaims": [{"name": "gpu", "resourceClaimName": "team-gpus"}]}}
    with pytest.raises(Inadmissible, match="does not support use of resource claims"):
        count([(shared, 1)])
    mig = claim_template("vision", 1)
    mig["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "mig.nvidia.com"
    with pytest.raises(Inadmissible, match=r"mig\.nvidia\.com is not mapped"):
        count([(WORKER, 1)], templates={"gpu-8": mig})


def test_the_dra_fixture_has_queues_that_count_gpu_devices(synthesized):
    """jark (DRA mode) runs Kueue: every tenant has a ClusterQueue with its share of the GPU group
    (nvidia.com/gpu is the queues' name for a GPU in both modes) and Kueue maps the GPU DeviceClass
    to it; there is no Karpenter GPU pool flavour, DRA mode having no GPU pool."""
    from addons.kueue import DEFINITION as KUEUE
    from addons.kueue import shares
    from profiles.catalog import GPU_RESOURCE
    from tests.test_tenant_first_job import kueue_configuration

    config = synthesized.configs["jark"]
    assert KUEUE.enabled(config)
    mappings = kueue_configuration(synthesized, "jark")["resources"]["deviceClassMappings"]
    assert mappings == [
        {"name": GPU_RESOURCE, "deviceClassNames": [GPU_DEVICE_CLASS]},
        # The ComputeDomains' IMEX channels, mapped (an unmapped class makes a Workload inadmissible)
        # under a name no ClusterQueue declares (IgnoreUndeclared: counted against nothing).
        {"name": "nvidia.com/imex-channel", "deviceClassNames": ["compute-domain-default-channel.nvidia.com"]},
    ]
    objects = everything(synthesized, "jark")
    queues = {o["metadata"]["name"]: o for o in objects if o.get("kind") == "ClusterQueue"}
    assert set(queues) == {tenant.name for tenant in config.workloads.tenants}
    for tenant, planned in shares(config).items():
        (gpu_group,) = (g for g in queues[tenant]["spec"]["resourceGroups"] if GPU_RESOURCE in g["coveredResources"])
        assert [f["name"] for f in gpu_group["flavors"]] == ["group-g6e-efa"]
        quota = next(r for r in gpu_group["flavors"][0]["resources"] if r["name"] == GPU_RESOURCE)
        assert quota["nominalQuota"] == str(planned[0].gpus) == "8"
    flavors = {o["metadata"]["name"] for o in objects if o.get("kind") == "ResourceFlavor"}
    assert flavors == {"default", "group-g6e-efa"}


# Karpenter and DRA at the pin (addons/karpenter/profile_rules.py cites the sources).


def test_a_gpu_pool_in_a_dra_profile_is_refused_naming_the_field_the_value_and_the_way_out(tmp_path):
    """The pinned Karpenter never launches a node for a pod with ResourceClaims, so DRA mode makes
    no GPU pool; a profile that sets one is refused (exit 2) instead of being silently ignored."""
    from profiles import ProfileError, validate_profile
    from tests.cases import FIXTURE_PROFILES

    doc = yaml.safe_load((FIXTURE_PROFILES / "jark.yaml").read_text())
    doc["workloads"]["gpu_pool"] = {"gpu_limit": 16}
    with pytest.raises(ProfileError) as error:
        validate_profile(doc)
    (problem,) = error.value.problems
    assert problem.startswith("workloads.gpu_pool: Karpenter 1.14.1 launches no node for a pod with ResourceClaims")
    assert "(got 'gpu_limit: 16';" in problem
    assert "allowed: no workloads.gpu_pool in DRA mode, or addons.gpu_operator.dra: false" in problem
    # The same profile with the device plugin keeps its pool; with Karpenter off there is nothing to refuse.
    validate_profile({**doc, "addons": {**doc["addons"], "gpu_operator": {"dra": False}}})
    off = {"karpenter": {"enabled": False}, "jupyterhub": {"enabled": False}}
    validate_profile({**doc, "addons": {**doc["addons"], **off}})
    result = synth_in_a_process(doc, tmp_path / "dra-pool.yaml")
    assert result.returncode == 2 and "workloads.gpu_pool: Karpenter 1.14.1" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("fixture", "counts", "group", "per_node"),
    [("jark", [1, 4], "g6e-efa", 8), ("gb200", [1, 8], "gb200-nvl36", 4), ("gb200", None, "gb200-nvl36", 4)],
    ids=["g6e-without-8", "gb200-without-4", "gb200-with-the-default"],
)
def test_dra_counts_without_a_whole_node_are_refused_naming_the_count_and_the_group(
    tmp_path, fixture, counts, group, per_node
):
    """In DRA mode a pod gets GPUs only from its namespace's gpu-<n> claim templates, one per
    workloads.dra_gpu_counts: every GPU group's per-node GPU count must be one of them, or no pod
    (no multi-node job's worker) could claim a whole node there. Refused with exit 2."""
    from profiles import ProfileError, validate_profile
    from profiles.loader import parse_profile_text
    from tests.cases import FIXTURE_PROFILES

    # As the loader reads it (a Capacity Block's times stay text).
    doc = parse_profile_text((FIXTURE_PROFILES / f"{fixture}.yaml").read_bytes(), fixture)
    if counts is None:  # the default, [1, 8]
        del doc["workloads"]["dra_gpu_counts"]
    else:
        doc["workloads"]["dra_gpu_counts"] = counts
    with pytest.raises(ProfileError) as error:
        validate_profile(doc)
    (problem,) = error.value.problems
    assert problem.startswith(f"workloads.dra_gpu_counts: node group {group} has {per_node} GPUs per node"), problem
    assert f"has no {per_node}: there would be no gpu-{per_node} claim template" in problem
    assert f"(got {counts or [1, 8]}; allowed: counts that include {per_node}" in problem
    # With the whole node's count it loads; with the device plugin the counts are not used.
    validate_profile({**doc, "workloads": {**doc["workloads"], "dra_gpu_counts": [*(counts or [1, 8]), per_node]}})
    if fixture == "jark":
        validate_profile({**doc, "addons": {**doc["addons"], "gpu_operator": {"dra": False}}})
    result = synth_in_a_process(doc, tmp_path / "dra-counts.yaml")
    assert result.returncode == 2, result.stderr
    assert f"workloads.dra_gpu_counts: node group {group}" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_every_dra_fixture_claims_whole_nodes_of_every_group():
    from profiles.gpus import dra_claim_counts
    from tests.cases import ALL_PROFILES, profile_config

    dra = [name for name in ALL_PROFILES if dra_claim_counts(profile_config(name))]
    assert sorted(dra) == ["gb200", "jark"]
    for name in dra:
        config = profile_config(name)
        assert {g.catalog_entry.gpu_count for g in config.cluster.gpu_node_groups} <= set(dra_claim_counts(config))


def test_the_karpenter_dra_refusal_names_the_pinned_version():
    """The refusal (and its citations) are about the pinned Karpenter: a new pin must re-read them."""
    from addons.karpenter import DEFINITION as KARPENTER

    source = (Path(__file__).resolve().parents[1] / "addons" / "karpenter" / "profile_rules.py").read_text()
    assert KARPENTER.pin.version == "1.14.1" and f"tag v{KARPENTER.pin.version}" in source


def test_in_dra_mode_efa_stays_with_the_device_plugin_beside_the_gpu_claims(synthesized):
    """No EFA DRA driver is pinned (docs/addons/efa_device_plugin.md, "EFA and DRA"): on an EFA
    group in DRA mode the device plugin is installed, and the platform's multi-node pods ask for
    GPUs by claim and for every EFA interface of their node by vpc.amazonaws.com/efa."""
    from profiles.catalog import EFA_RESOURCE

    config = synthesized.configs["jark"]
    (group,) = [g for g in config.cluster.gpu_node_groups if g.efa_enabled]
    releases = resources(synthesized.stack("jark", "addons"), "helm_release").values()
    assert any(r["chart"] == "aws-efa-k8s-device-plugin" for r in releases)
    workers = [
        pod
        for obj in render(config).values()
        for item in obj
        if item.get("kind") == "MPIJob"
        for pod in [item["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]]
    ]
    assert workers, "the DRA fixture renders the multi-node MPIJob check"
    for pod in workers:
        (container,) = pod["containers"]
        assert container["resources"]["limits"][EFA_RESOURCE] == str(group.catalog_entry.efa_interfaces)
        assert "nvidia.com/gpu" not in container["resources"]["limits"]
        assert [claim["resourceClaimTemplateName"] for claim in pod["resourceClaims"]]


def gpu_rule_records(synthesized, profile: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The monitoring release's values and the GPU rule group's recording rules (record -> expr)."""
    from addons.monitoring.install import ADDON_RULES

    (release,) = [
        r for r in resources(synthesized.stack(profile, "addons"), "helm_release").values() if r["name"] == "monitoring"
    ]
    values = yaml.safe_load(release["values"][0])
    (group,) = [g for g in values["additionalPrometheusRulesMap"][ADDON_RULES]["groups"] if g["name"] == "gpu-platform"]
    return values, {rule["record"]: rule["expr"] for rule in group["rules"] if "record" in rule}


def test_in_dra_mode_the_gpu_rules_count_claims_and_the_exporters_gpus(synthesized):
    """The GPU Operator hands the monitoring add-on the DRA form of the GPU counts (its settings carry
    `dra`), for the fixture's claim templates, and has kube-state-metrics export the instance type
    label they read; nothing in the GPU rules reads nvidia.com/gpu."""
    from addons.gpu_operator.gpu_counts import NODE_ALLOCATABLE, NODE_CAPACITY, POD_REQUESTED

    config = synthesized.configs["jark"]
    values, records = gpu_rule_records(synthesized, "jark")
    assert values["kube-state-metrics"]["metricLabelsAllowlist"] == ["nodes=[node.kubernetes.io/instance-type]"]
    for count in {1, *config.workloads.dra_gpu_counts}:
        assert f'resourceclaim_template_name="gpu-{count}"}} * {count}' in records[POD_REQUESTED]
    assert "kube_node_labels" in records[NODE_CAPACITY] and "DCGM_FI_DEV_GPU_UTIL" in records[NODE_ALLOCATABLE]
    assert "nvidia_com_gpu" not in yaml.safe_dump(values["additionalPrometheusRulesMap"])


def test_with_the_device_plugin_the_gpu_rules_count_the_extended_resource(synthesized):
    from addons.gpu_operator.gpu_counts import NODE_ALLOCATABLE, NODE_CAPACITY, POD_REQUESTED

    values, records = gpu_rule_records(synthesized, "gpu-validation")
    assert "kube-state-metrics" not in values  # no node label is read: kube-state-metrics' defaults
    for record in (NODE_CAPACITY, NODE_ALLOCATABLE, POD_REQUESTED):
        assert 'resource="nvidia_com_gpu"' in records[record], record
