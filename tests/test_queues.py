"""Kueue's queues: the objects validate against Kueue's own CRDs at the pinned version (recorded in
tests/fixtures/crds/), the quota arithmetic never promises GPUs the flavours do not hold, every
flavour's labels and tolerations lead to nodes that exist, a tenant's jobs of every kind are
queued, a 2-node job fits, and the API server reaches Kueue's webhooks."""

from __future__ import annotations

import copy
import ipaddress
import re
from pathlib import Path

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from addons.kueue import DEFINITION as KUEUE
from addons.kueue import flavors, shares
from addons.kueue.install import FRAMEWORKS, VISIBILITY_PORT, WEBHOOK_PORT
from addons.kueue.queues import DEFAULT_FLAVOR, LOCAL_QUEUE, TENANT_NAMESPACES, queue_objects
from addons.trainer import DEFINITION as TRAINER
from addons.trainer.runtimes import TenantVolumes, runtime_objects
from components.labels import NODE_GROUP_LABEL, NODE_POOL_LABEL
from profiles import validate_profile
from profiles.catalog import CATALOG, EFA_RESOURCE, GPU_RESOURCE
from profiles.gpus import GPU_DEVICE_CLASS
from tests.cases import FIXTURES, SHIPPED, profile_config, profiles_where
from tests.k8s_validation import validate_object
from tests.netpol import Peer, allowed
from tests.synth_helpers import resources
from tests.test_namespaces import created_namespaces
from tests.test_profiles import mutated

ALL = SHIPPED + FIXTURES
QUEUED = profiles_where(KUEUE.enabled)


def queue_manifests(synthesized, profile: str) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for body in resources(synthesized.stack(profile, "workloads"), "kubernetes_manifest").values():
        if body["manifest"]["apiVersion"].startswith("kueue.x-k8s.io/"):
            found.setdefault(body["manifest"]["kind"], []).append(body["manifest"])
    return found


def test_the_recorded_crds_refuse_what_a_loose_model_accepts():
    """v1beta1 named the cohort `cohort`; v1beta2 (the version the platform writes) `cohortName`.
    A model that only checks that the YAML is a mapping accepts both; the pinned CRD refuses the
    old name and a misspelled field, and a quota that is not a quantity."""
    good = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "team"},
        "spec": {
            "cohortName": "lab",
            "resourceGroups": [
                {
                    "coveredResources": [GPU_RESOURCE],
                    "flavors": [{"name": "f", "resources": [{"name": GPU_RESOURCE, "nominalQuota": "8"}]}],
                }
            ],
        },
    }
    validate_object(good, "1.35")
    for broken in (
        {"cohort": "lab"},
        {"cohortName": "lab", "queueingStratgy": "BestEffortFIFO"},
        {"cohortName": "lab", "queueingStrategy": "Fastest"},
    ):
        with pytest.raises(jsonschema.ValidationError):
            validate_object({**good, "spec": broken}, "1.35")
    quota = copy.deepcopy(good)
    quota["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "eight"
    with pytest.raises(jsonschema.ValidationError):
        validate_object(quota, "1.35")


@pytest.mark.parametrize("profile", QUEUED)
def test_every_tenant_has_a_cluster_queue_in_one_cohort_and_a_default_local_queue(synthesized, profile):
    config = synthesized.configs[profile]
    found = queue_manifests(synthesized, profile)
    tenants = [tenant.name for tenant in config.workloads.tenants]
    queues = {q["metadata"]["name"]: q for q in found["ClusterQueue"]}
    assert set(queues) == set(tenants)
    assert {q["spec"]["cohortName"] for q in queues.values()} == {config.name}
    local = {
        (q["metadata"]["namespace"], q["metadata"]["name"]): q["spec"]["clusterQueue"] for q in found["LocalQueue"]
    }
    assert local == {(tenant, LOCAL_QUEUE): tenant for tenant in tenants}
    for tenant, queue in queues.items():
        # A ClusterQueue serves its own tenant's namespace only.
        assert queue["spec"]["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": tenant}}
        assert queue["spec"]["preemption"]["reclaimWithinCohort"] == "Any"
        cpu_memory, gpus = queue["spec"]["resourceGroups"]
        assert cpu_memory["coveredResources"] == ["cpu", "memory"]
        for flavor in gpus["flavors"]:
            assert [r["name"] for r in flavor["resources"]] == [GPU_RESOURCE, EFA_RESOURCE]


@pytest.mark.parametrize("profile", ["jark", "p5-training"])
def test_no_queues_without_kueue(profile: str) -> None:
    """Every shipped and fixture profile now runs Kueue (jark's DRA mode too): turned off, no add-on
    contributes a queue, and the workloads layer's capacity names no ClusterQueue."""
    from addons.contributions import enabled_parts, workload_capacity
    from tests.cases import FIXTURE_PROFILES

    root = Path(__file__).resolve().parents[1]
    path = FIXTURE_PROFILES / f"{profile}.yaml" if profile == "jark" else root / "profiles" / f"{profile}.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["addons"] = {**doc.get("addons", {}), "kueue": {"enabled": False}}
    config = validate_profile(doc)
    assert all(part.definition.key != "kueue" for part in enabled_parts(config))
    assert workload_capacity(config).cluster_queues == ()
    assert queue_objects(profile_config(profile))  # with Kueue on, there are queues


@pytest.mark.parametrize("profile", QUEUED)
def test_every_flavour_leads_to_nodes_that_exist_and_admit_its_pods(synthesized, profile):
    """Kueue adds a flavour's nodeLabels and tolerations to the pods it admits there: they must
    select the GPU nodes the quota was counted on, and tolerate their taints."""
    found = queue_manifests(synthesized, profile)
    groups = {
        body["node_group_name"].removeprefix(f"{synthesized.configs[profile].name}-"): body
        for body in resources(synthesized.stack(profile, "cluster"), "aws_eks_node_group").values()
    }
    pools = {
        body["manifest"]["metadata"]["name"]: body["manifest"]
        for body in resources(synthesized.stack(profile, "workloads"), "kubernetes_manifest").values()
        if body["manifest"]["kind"] == "NodePool"
    }
    for flavor in found["ResourceFlavor"]:
        if flavor["metadata"]["name"] == DEFAULT_FLAVOR:
            assert flavor["spec"] == {}, "CPU and memory: any node"
            continue
        labels, tolerations = flavor["spec"]["nodeLabels"], flavor["spec"]["tolerations"]
        if NODE_GROUP_LABEL in labels:
            group = next(
                g for g in groups.values() if g.get("labels", {}).get(NODE_GROUP_LABEL) == labels[NODE_GROUP_LABEL]
            )
            node_labels = group["labels"]
            taints = [{"key": t["key"], "effect": {"NO_SCHEDULE": "NoSchedule"}[t["effect"]]} for t in group["taint"]]
        else:
            template = pools[labels[NODE_POOL_LABEL]]["spec"]["template"]
            node_labels = template["metadata"]["labels"]
            taints = template["spec"]["taints"]
        assert labels.items() <= node_labels.items(), flavor["metadata"]["name"]
        for taint in taints:
            assert any(
                t["key"] == taint["key"] and t["operator"] == "Exists" and t["effect"] == taint["effect"]
                for t in tolerations
            ), (flavor["metadata"]["name"], taint)


@pytest.mark.parametrize("profile", ALL)
def test_shares_add_up_to_what_each_flavour_holds(profile):
    check_shares(profile_config(profile))


def check_shares(config) -> None:
    planned = shares(config)
    for index, flavor in enumerate(flavors(config)):
        tenant_shares = [found[index] for found in planned.values()]
        if tenant_shares:
            assert sum(s.gpus for s in tenant_shares) <= flavor.gpus, flavor.name
            if all(t.gpu_quota is None for t in config.workloads.tenants):
                assert sum(s.gpus for s in tenant_shares) == flavor.gpus // flavor.unit * flavor.unit
            assert sum(s.efa for s in tenant_shares) <= flavor.efa, flavor.name
        for share in tenant_shares:
            assert share.most_gpus <= flavor.gpus
            if flavor.node_group:
                # Whole nodes: a share never splits a node between two tenants.
                assert share.gpus % flavor.gpus_per_node == 0
                assert share.efa == share.gpus // flavor.gpus_per_node * flavor.efa_per_node
    for tenant in config.workloads.tenants:
        if tenant.gpu_quota is not None:
            # The ResourceQuota never refuses a pod of a job Kueue admitted.
            assert sum(share.most_gpus for share in planned[tenant.name]) <= tenant.gpu_quota, tenant.name


@settings(max_examples=60, deadline=None)
@given(
    tenants=st.integers(min_value=1, max_value=7),
    max_size=st.integers(min_value=1, max_value=9),
    borrowing=st.none() | st.integers(min_value=0, max_value=40),
    quotas=st.lists(st.none() | st.integers(min_value=1, max_value=20), min_size=7, max_size=7),
)
def test_shares_never_promise_more_than_exists(tenants, max_size, borrowing, quotas):
    doc = mutated(
        # Without the file system: its data repository associations (one per tenant each, at most 8
        # in all) would cap the tenants this explores, and shares do not depend on it.
        storage__fsx__enabled=False,
        cluster__gpu_node_groups__0__max_size=max_size,
        cluster__gpu_node_groups__0__desired_size=max_size,
        workloads__tenants=[
            {"name": f"team-{i}", "gpu_borrowing_limit": borrowing, "gpu_quota": quotas[i]} for i in range(tenants)
        ],
    )
    check_shares(validate_profile(doc))


def kueue_manages(job_kind_framework: str, namespace_labels: dict[str, str], local_queues: set[str]) -> bool:
    """Does Kueue give a job without a queue name a queue? Its LocalQueue defaulting
    (kueue v0.19.2 pkg/controller/jobframework/defaults.go, ApplyDefaultLocalQueueWithManagedJobsNamespaceSelector):
    only for an enabled integration, only where a LocalQueue named `default` exists in the job's
    namespace, and only where the namespace matches managedJobsNamespaceSelector."""
    if job_kind_framework not in FRAMEWORKS or LOCAL_QUEUE not in local_queues:
        return False
    for expression in TENANT_NAMESPACES["matchExpressions"]:
        assert expression["operator"] == "Exists", "this evaluator reads Exists only"
        if expression["key"] not in namespace_labels:
            return False
    return True


@pytest.mark.parametrize("profile", QUEUED)
@pytest.mark.parametrize("framework", ["batch/job", "kubeflow.org/mpijob", "ray.io/rayjob", "ray.io/raycluster"])
def test_a_tenants_job_of_every_kind_is_queued_and_the_platforms_are_not(synthesized, profile, framework):
    namespaces = created_namespaces(synthesized, profile)
    local = {}
    for queue in queue_manifests(synthesized, profile)["LocalQueue"]:
        local.setdefault(queue["metadata"]["namespace"], set()).add(queue["metadata"]["name"])
    for tenant in synthesized.configs[profile].workloads.tenants:
        labels = namespaces[tenant.name][0]["metadata"]["labels"]
        assert kueue_manages(framework, labels, local.get(tenant.name, set()))
    # The platform's own namespaces (the validation jobs among them) are left alone.
    for name, (namespace, _) in namespaces.items():
        if name not in {t.name for t in synthesized.configs[profile].workloads.tenants}:
            assert not kueue_manages(framework, namespace["metadata"].get("labels", {}), local.get(name, set()))


MULTI_NODE = profiles_where(lambda c: KUEUE.enabled(c) and any(g.desired_size >= 2 for g in c.cluster.gpu_node_groups))


def test_every_shipped_profile_can_run_a_two_node_job():
    assert set(SHIPPED) <= set(MULTI_NODE)


@pytest.mark.parametrize("profile", MULTI_NODE)
def test_a_two_node_job_fits_its_tenants_queue(profile):
    """The largest EFA group's 2-node job (each worker a whole node's GPUs and EFA interfaces):
    admitted from the tenant's share, borrowing what the other tenants leave idle."""
    config = profile_config(profile)
    planned = shares(config)
    groups = [f for f in flavors(config) if f.node_group and f.gpus >= 2 * f.gpus_per_node]
    flavor = max(groups, key=lambda f: f.gpus_per_node)
    for tenant in config.workloads.tenants:
        share = next(s for s in planned[tenant.name] if s.flavor == flavor)
        assert share.most_gpus >= 2 * flavor.gpus_per_node
        assert flavor.efa >= 2 * flavor.efa_per_node


def test_two_tenants_split_the_nodes_and_borrow_the_idle_ones():
    doc = mutated(
        cluster__gpu_node_groups__0__max_size=3,
        cluster__gpu_node_groups__0__desired_size=3,
        workloads__tenants=[{"name": "vision"}, {"name": "speech", "gpu_borrowing_limit": 0}],
    )
    config = validate_profile(doc)
    group = flavors(config)[0]
    vision, speech = (shares(config)[name][0] for name in ("vision", "speech"))
    # Three nodes: the first tenant takes the odd one.
    assert (vision.gpus, speech.gpus) == (2 * group.gpus_per_node, group.gpus_per_node)
    assert vision.most_gpus == group.gpus and speech.most_gpus == speech.gpus
    queue = next(o for o in queue_objects(config) if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "speech")
    gpu = queue["spec"]["resourceGroups"][1]["flavors"][0]["resources"][0]
    assert gpu == {"name": GPU_RESOURCE, "nominalQuota": str(speech.gpus), "borrowingLimit": "0"}


def test_a_tenants_quota_bounds_its_share_and_its_borrowing():
    """With gpu_quota, the tenant's share plus its borrowing stays within the quota (the
    ResourceQuota never refuses a pod of an admitted job); what it leaves goes to the others."""
    doc = mutated(
        cluster__gpu_node_groups__0__max_size=4,
        cluster__gpu_node_groups__0__desired_size=4,
        workloads__tenants=[{"name": "vision", "gpu_quota": 1}, {"name": "speech"}],
    )
    config = validate_profile(doc)
    planned = shares(config)
    assert sum(share.most_gpus for share in planned["vision"]) <= 1
    for index, flavor in enumerate(flavors(config)):
        assert planned["vision"][index].gpus + planned["speech"][index].gpus == flavor.gpus // flavor.unit * flavor.unit


def test_kueue_and_dra_are_validated_together():
    """Kueue counts DRA devices at the pin, so DRA mode keeps its queues (they were refused before)."""
    config = validate_profile(mutated(cluster__kubernetes_version="1.35", addons={"gpu_operator": {"dra": True}}))
    assert KUEUE.enabled(config) and config.addons.gpu_operator.dra
    # ...and without Karpenter's GPU pool, which DRA mode does not have, as a flavour.
    assert [flavor.node_group for flavor in flavors(config)] == [g.name for g in config.cluster.gpu_node_groups]


@pytest.mark.parametrize("profile", QUEUED)
def test_the_api_server_reaches_kueues_webhooks_and_visibility_api(synthesized, profile):
    namespaces = created_namespaces(synthesized, profile)
    _, policies = namespaces[KUEUE.namespace]
    vpc = synthesized.configs[profile].cluster.vpc.cidr
    control_plane = Peer(ip=str(next(ipaddress.ip_network(vpc).hosts())))
    for port in (WEBHOOK_PORT, VISIBILITY_PORT):
        assert allowed(
            policies, namespace=KUEUE.namespace, direction="Ingress", peer=control_plane, protocol="TCP", port=port
        )
    # Nothing else from the VPC: the guard still denies other ports.
    assert not allowed(
        policies, namespace=KUEUE.namespace, direction="Ingress", peer=control_plane, protocol="TCP", port=8080
    )


@pytest.mark.parametrize("profile", QUEUED)
def test_kueues_configuration_is_the_platforms(synthesized, profile):
    release = next(
        body
        for body in resources(synthesized.stack(profile, "addons"), "helm_release").values()
        if body["name"] == "kueue"
    )
    values = yaml.safe_load(release["values"][0])
    configuration = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    assert configuration["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    # blockAdmission is cluster-wide: one job that cannot start would stop every tenant's queue.
    assert configuration["waitForPodsReady"]["blockAdmission"] is False
    assert (
        configuration["waitForPodsReady"]["timeout"]
        == f"{KUEUE.settings(synthesized.configs[profile]).pods_ready_timeout_minutes}m"
    )
    # DRA mode: Kueue counts the claims' devices of the GPU DeviceClass as the queues' nvidia.com/gpu.
    mapped = {
        "deviceClassMappings": [
            {"name": GPU_RESOURCE, "deviceClassNames": [GPU_DEVICE_CLASS]},
            {"name": "nvidia.com/imex-channel", "deviceClassNames": ["compute-domain-default-channel.nvidia.com"]},
        ]
    }
    dra = synthesized.configs[profile].addons.gpu_operator.dra
    assert configuration["resources"] == {"quotaCheckStrategy": "IgnoreUndeclared", **(mapped if dra else {})}
    assert set(configuration["integrations"]["frameworks"]) == set(FRAMEWORKS)
    # Every GPU pod of a tenant namespace is queued (tests/test_shares.py), and only there: the chart
    # makes this selector the pod webhook's namespaceSelector.
    assert {"pod", "deployment", "statefulset"} <= set(FRAMEWORKS)
    assert configuration["managedJobsNamespaceSelector"] == TENANT_NAMESPACES
    manager = values["controllerManager"]
    assert manager["nodeSelector"] == {"role": "system"}
    # Its webhooks fail closed: two replicas on different nodes, one kept through disruptions.
    assert manager["replicas"] == 2 and manager["podDisruptionBudget"] == {"enabled": True, "minAvailable": 1}


FRAMEWORK_OF = {
    "Job": "batch/job",
    "MPIJob": "kubeflow.org/mpijob",
    "RayJob": "ray.io/rayjob",
    "TrainJob": "trainer.kubeflow.org/trainjob",
}


def test_the_tenant_guide_examples_are_valid_and_queued_by_default(synthesized):
    """docs/queues.md: each example validates, lands in a tenant namespace without naming a queue
    (so Kueue's defaulting gives it the tenant's LocalQueue), and the MPIJob fits a p5 node."""
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[1] / "docs" / "queues.md").read_text()
    examples = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", guide, flags=re.DOTALL)]
    assert {example["kind"] for example in examples} == set(FRAMEWORK_OF)
    config = synthesized.configs["p5-training"]
    namespaces = created_namespaces(synthesized, "p5-training")
    for example in examples:
        namespace = example["metadata"]["namespace"]
        assert namespace in {tenant.name for tenant in config.workloads.tenants}
        assert "kueue.x-k8s.io/queue-name" not in example["metadata"].get("labels", {})
        labels = namespaces[namespace][0]["metadata"]["labels"]
        assert kueue_manages(FRAMEWORK_OF[example["kind"]], labels, {LOCAL_QUEUE})
        if example["kind"] != "RayJob":  # no RayJob schema is recorded; KubeRay's own tests cover it
            validate_object(example, config.cluster.kubernetes_version)
    mpijob = next(example for example in examples if example["kind"] == "MPIJob")
    node = CATALOG["p5.48xlarge"]
    worker = mpijob["spec"]["mpiReplicaSpecs"]["Worker"]
    limits = worker["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert (int(limits[GPU_RESOURCE]), int(limits[EFA_RESOURCE])) == (node.gpu_count, node.efa_interfaces)
    assert mpijob["spec"]["slotsPerWorker"] == node.gpu_count
    (launcher,) = mpijob["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"]
    mpirun = launcher["args"]  # after the wait for the workers, its command
    assert int(mpirun[mpirun.index("-np") + 1]) == worker["replicas"] * node.gpu_count


def job_pod_templates(job: dict, runtimes: dict[str, dict] | None = None) -> list[dict]:
    """The pod templates of a job: Kueue makes one pod set of each. A TrainJob's come from the
    ClusterTrainingRuntime it names (`runtimes`, by name)."""
    spec = job["spec"]
    if job["kind"] == "TrainJob":
        runtime = (runtimes or {})[spec["runtimeRef"]["name"]]
        return [
            replicated["template"]["spec"]["template"]
            for replicated in runtime["spec"]["template"]["spec"]["replicatedJobs"]
        ]
    if job["kind"] == "Job":
        return [spec["template"]]
    if job["kind"] == "MPIJob":
        return [replica["template"] for replica in spec["mpiReplicaSpecs"].values()]
    if job["kind"] == "RayJob":
        cluster = spec["rayClusterSpec"]
        return [cluster["headGroupSpec"]["template"], *(group["template"] for group in cluster["workerGroupSpecs"])]
    raise AssertionError(job["kind"])


def pod_set_gets_a_flavour(requests: dict[str, str], cluster_queue: dict) -> bool:
    """Kueue's flavour assignment under IgnoreUndeclared (kueue v0.19.2
    pkg/scheduler/flavorassigner/flavorassigner.go): requests of resources no resource group covers
    are skipped (804-812); a pod set left with no assigned flavour fails the whole assignment
    (913-927, 842-850), so the job is never admitted. A pod set gets a flavour when at least one
    resource it requests (non-zero) is covered."""
    covered = {name for group in cluster_queue["spec"]["resourceGroups"] for name in group["coveredResources"]}
    return any(name in covered for name, quantity in requests.items() if quantity not in ("0", 0))


def test_a_cpu_only_launcher_gets_a_flavour_where_the_gpu_only_queue_gave_none():
    """The MPI launcher (and a Ray head) asks for CPU and memory only. A queue that covers only
    GPUs and EFA gives that pod set no flavour, and Kueue never admits the job; the default flavour
    covering CPU and memory does."""
    config = profile_config("p5-training")
    queue = next(o for o in queue_objects(config) if o["kind"] == "ClusterQueue")
    launcher = {"cpu": "500m", "memory": "1Gi"}
    worker = {"cpu": "64", "memory": "64Gi", GPU_RESOURCE: "8", EFA_RESOURCE: "32", "hugepages-2Mi": "5120Mi"}
    gpu_only = copy.deepcopy(queue)
    gpu_only["spec"]["resourceGroups"] = gpu_only["spec"]["resourceGroups"][1:]
    assert not pod_set_gets_a_flavour(launcher, gpu_only) and pod_set_gets_a_flavour(worker, gpu_only)
    assert pod_set_gets_a_flavour(launcher, queue) and pod_set_gets_a_flavour(worker, queue)


@pytest.mark.parametrize("profile", QUEUED)
def test_every_pod_set_of_the_platforms_jobs_gets_a_flavour(profile):
    """The validation MPIJob's pod sets and the tenant guide's examples, as a tenant would submit
    them: each pod set requests something every tenant's queue covers."""
    from pathlib import Path

    from manifests.render import render

    config = profile_config(profile)
    queues = [o for o in queue_objects(config) if o["kind"] == "ClusterQueue"]
    guide = (Path(__file__).resolve().parents[1] / "docs" / "queues.md").read_text()
    jobs = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", guide, flags=re.DOTALL)]
    jobs += [doc for docs in render(config).values() for doc in docs if doc["kind"] in ("MPIJob", "RayJob")]
    volumes = TenantVolumes(fsx=True, checkpoints=True)
    runtimes = {
        runtime["metadata"]["name"]: runtime
        for runtime in runtime_objects(
            config.cluster.gpu_node_groups, TRAINER.settings(config), volumes, efa_image="repo/pytorch-efa:tag"
        )
    }
    for job in jobs:
        if job["kind"] == "TrainJob" and job["spec"]["runtimeRef"]["name"] not in runtimes:
            continue  # the guide's runtime is p5-training's group
        for template in job_pod_templates(job, runtimes):
            for container in template["spec"]["containers"]:
                requests = {
                    **container.get("resources", {}).get("limits", {}),
                    **container.get("resources", {}).get("requests", {}),
                }
                for queue in queues:
                    assert pod_set_gets_a_flavour(requests, queue), (job["metadata"]["name"], container["name"])


@pytest.mark.parametrize("profile", QUEUED)
def test_cluster_queues_are_destroyed_alongside_the_namespaces(synthesized, profile):
    """Kueue keeps a ClusterQueue (its resource-in-use finalizer) until no job in it holds quota.
    A ClusterQueue that waited for the tenant namespaces would be destroyed before them, while
    their jobs still exist, and the destroy would hang; without the dependency Terraform deletes
    it alongside the namespaces, whose deletion removes the jobs. A LocalQueue needs its namespace."""
    for body in resources(synthesized.stack(profile, "workloads"), "kubernetes_manifest").values():
        kind = body["manifest"]["kind"]
        if kind in ("ClusterQueue", "ResourceFlavor"):
            assert not body.get("depends_on"), body["manifest"]["metadata"]["name"]
        elif kind == "LocalQueue":
            assert any("namespace-" in dependency for dependency in body["depends_on"])
