"""Shares that hold: a GPU pod of a tenant namespace goes through Kueue whatever made it (a bare Pod,
a Deployment, a StatefulSet, a job kind), so the tenants' queues count every GPU a tenant holds and
can take a tenant's guaranteed share back from whoever borrowed it. Walked with the evaluator of
Kueue's webhook and quota (tests/kueue_model.py) and of the API server's quota (tests/admission.py).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from addons.contributions import tenant_gpu_quota
from addons.kueue import DEFINITION as KUEUE
from addons.kueue import flavors, share_warnings, shares
from addons.kueue.install import manager_configuration
from addons.kueue.queues import LOCAL_QUEUE, queue_objects
from components.k8s.gpus import gpu_quota
from components.k8s.tenant import SharedStorage, TenantProps, tenant_objects
from manifests.render import render
from profiles import PlatformConfig, ProfileError, validate_profile
from profiles.catalog import CATALOG, EFA_RESOURCE, GPU_RESOURCE
from profiles.gpus import dra_claim_counts, dra_mode, gpu_capacity
from tests.admission import admit, stored
from tests.cases import profile_config, profiles_where
from tests.kueue_model import SUSPENDED_BY_PARENT, Cohort, Owner, Workload, pod_queueing, pod_requests, pod_set_requests
from tests.test_profiles import changed, problems

QUEUED = profiles_where(KUEUE.enabled)
ROOT = Path(__file__).resolve().parents[1]
STORAGE = SharedStorage(
    region="us-east-1",
    fsx_file_system_id=None,
    fsx_dns_name=None,
    fsx_mount_name=None,
    fsx_capacity_gib=0,
    fsx_tenant_directories=False,
    bucket_names={},
)


def configuration(config: PlatformConfig) -> dict:
    return manager_configuration(KUEUE.settings(config))


def tenant_namespace(config: PlatformConfig, tenant: str, *, gpu_quota: int | None = None) -> dict[str, list[dict]]:
    """The tenant's namespace objects by kind, as the workloads layer makes them."""
    settings = next(t for t in config.workloads.tenants if t.name == tenant)
    objects = tenant_objects(
        TenantProps(
            config=settings,
            storage=STORAGE,
            gpu_quota=tenant_gpu_quota(config, settings) if gpu_quota is None else gpu_quota,
            dra_gpu_counts=dra_claim_counts(config),
        )
    )
    found: dict[str, list[dict]] = {}
    for o in objects:
        found.setdefault(o["kind"], []).append(o)
    return found


def namespace_labels(namespace: dict) -> dict[str, str]:
    """A Namespace's labels as the API server keeps them (it adds kubernetes.io/metadata.name)."""
    return {**namespace["metadata"].get("labels", {}), "kubernetes.io/metadata.name": namespace["metadata"]["name"]}


def gpu_pod(name: str, gpus: int, efa: int = 0, **metadata) -> dict:
    limits = {GPU_RESOURCE: str(gpus), **({EFA_RESOURCE: str(efa)} if efa else {})}
    return {
        "metadata": {"name": name, **metadata},
        "spec": {"containers": [{"name": "main", "image": "x", "resources": {"limits": limits}}]},
    }


# Owner chains as the controllers make them, nearest owner first, with the queue names Kueue's job
# webhooks leave on them in a tenant namespace (every job kind gets `default`; the objects a job
# creates are left without one: defaults.go 80-89).
QUEUED_JOB = Owner("kubeflow.org/v2beta1", "MPIJob", LOCAL_QUEUE)
OWNER_CHAINS: dict[str, list[Owner]] = {
    "bare Pod": [],
    "ReplicaSet of no Deployment": [Owner("apps/v1", "ReplicaSet")],
    "DaemonSet": [Owner("apps/v1", "DaemonSet")],
    "batch Job": [Owner("batch/v1", "Job", LOCAL_QUEUE)],
    "MPIJob": [QUEUED_JOB],
    "TrainJob (Job of a JobSet)": [
        Owner("batch/v1", "Job"),
        Owner("jobset.x-k8s.io/v1alpha2", "JobSet"),
        Owner("trainer.kubeflow.org/v1alpha1", "TrainJob", LOCAL_QUEUE),
    ],
    "RayJob's cluster": [Owner("ray.io/v1", "RayCluster"), Owner("ray.io/v1", "RayJob", LOCAL_QUEUE)],
    "RayJob's submitter": [Owner("batch/v1", "Job"), Owner("ray.io/v1", "RayJob", LOCAL_QUEUE)],
    "RayService's cluster": [Owner("ray.io/v1", "RayCluster"), Owner("ray.io/v1", "RayService", LOCAL_QUEUE)],
}
# Through whom each is counted: None where the pod integration gates the pod itself.
COUNTED_THROUGH = {
    "bare Pod": None,
    "ReplicaSet of no Deployment": None,
    "DaemonSet": None,
    "batch Job": "Job",
    "MPIJob": "MPIJob",
    "TrainJob (Job of a JobSet)": "TrainJob",
    "RayJob's cluster": "RayJob",
    "RayJob's submitter": "RayJob",
    "RayService's cluster": "RayService",
}


@pytest.mark.parametrize("profile", QUEUED)
@pytest.mark.parametrize("chain", list(OWNER_CHAINS))
def test_a_tenants_gpu_pod_is_queued_once_whatever_made_it(profile, chain):
    config = profile_config(profile)
    tenant = config.workloads.tenants[0].name
    (namespace,) = tenant_namespace(config, tenant)["Namespace"]
    queued = pod_queueing(
        configuration(config),
        gpu_pod("p", 1),
        namespace_labels=namespace_labels(namespace),
        local_queues={LOCAL_QUEUE},
        owners=OWNER_CHAINS[chain],
    )
    assert queued.queued, chain
    expected = COUNTED_THROUGH[chain]
    assert (queued.through.kind if queued.through else None) == expected, chain
    # Counted once: a pod of a queued job is not gated on its own as well.
    assert queued.gated is (expected is None), chain
    if queued.gated:
        assert queued.labels["kueue.x-k8s.io/queue-name"] == LOCAL_QUEUE


@pytest.mark.parametrize("profile", QUEUED)
def test_a_deployments_and_a_statefulsets_pods_are_gated_by_their_parents_mark(profile):
    """The deployment and statefulset webhooks mark the pod template
    (pkg/controller/jobs/deployment/deployment_webhook.go 90-98, statefulset_webhook.go 100-105);
    the pod webhook then gates each pod (pod_webhook.go 109-111)."""
    config = profile_config(profile)
    assert {"deployment", "statefulset"} <= set(configuration(config)["integrations"]["frameworks"])
    tenant = config.workloads.tenants[0].name
    (namespace,) = tenant_namespace(config, tenant)["Namespace"]
    for parent in ("deployment", "statefulset"):
        pod = gpu_pod("p", 1, annotations={SUSPENDED_BY_PARENT: parent})
        queued = pod_queueing(
            configuration(config),
            pod,
            namespace_labels=namespace_labels(namespace),
            local_queues={LOCAL_QUEUE},
            owners=[Owner("apps/v1", "ReplicaSet"), Owner("apps/v1", "Deployment", LOCAL_QUEUE)]
            if parent == "deployment"
            else [Owner("apps/v1", "StatefulSet", LOCAL_QUEUE)],
        )
        assert queued.gated, parent


@pytest.mark.parametrize("profile", QUEUED)
def test_no_pod_outside_the_tenant_namespaces_is_gated(profile):
    """The platform's own pods are never held: kube-system, Kueue's namespace (its own pods could
    not start otherwise), the add-ons' and the validation namespace's (verify's single-node checks)."""
    config = profile_config(profile)
    rendered = [o for objects in render(config).values() for o in objects]
    others = [o for o in rendered if o["kind"] == "Namespace"]
    others += [{"metadata": {"name": name}} for name in ("kube-system", KUEUE.namespace, "karpenter", "monitoring")]
    for namespace in others:
        for chain in OWNER_CHAINS.values():
            queued = pod_queueing(
                configuration(config),
                gpu_pod("p", 1),
                namespace_labels=namespace_labels(namespace),
                local_queues={LOCAL_QUEUE},  # even a LocalQueue named default there changes nothing
                owners=[Owner(o.api_version, o.kind) for o in chain],
            )
            assert not queued.gated, namespace["metadata"]["name"]


def test_the_evaluator_leaves_a_bare_pod_ungated_without_the_pod_integration():
    """The configuration before the pod integration: a bare Pod and a Deployment's pods ran as soon
    as the ResourceQuota let them, outside every queue."""
    config = profile_config("p5-training")
    naive = copy.deepcopy(configuration(config))
    naive["integrations"]["frameworks"] = [
        f for f in naive["integrations"]["frameworks"] if f not in ("pod", "deployment", "statefulset")
    ]
    (namespace,) = tenant_namespace(config, config.workloads.tenants[0].name)["Namespace"]
    for chain in ("bare Pod", "ReplicaSet of no Deployment"):
        queued = pod_queueing(
            naive,
            gpu_pod("p", 8),
            namespace_labels=namespace_labels(namespace),
            local_queues={LOCAL_QUEUE},
            owners=OWNER_CHAINS[chain],
        )
        assert not queued.queued, chain


def two_tenants(**tenants) -> PlatformConfig:
    """p5-training (two p5 nodes in the queues) shared by vision and speech."""
    doc = yaml.safe_load((ROOT / "profiles" / "p5-training.yaml").read_text())
    people = [{"name": "vision", **tenants.get("vision", {})}, {"name": "speech", **tenants.get("speech", {})}]
    return validate_profile(changed(doc, workloads__tenants=people))


class Cluster:
    """GPUs as the nodes hold them: what each flavour's nodes have, and the pods running there."""

    def __init__(self, config: PlatformConfig, kueue_configuration: dict, quotas: dict[str, int]):
        self.config = config
        self.configuration = kueue_configuration
        self.cohort = Cohort.of([o for o in queue_objects(config) if o["kind"] == "ClusterQueue"])
        self.capacity = {s.flavor.name: s.flavor.gpus for s in next(iter(shares(config).values()))}
        self.running: dict[str, tuple[str, str, int]] = {}  # pod -> (tenant, flavour, GPUs)
        self.pending: list[str] = []
        self.quotas = quotas
        self.created: dict[str, list[dict]] = {}

    def free(self, flavor: str) -> int:
        return self.capacity[flavor] - sum(g for _, f, g in self.running.values() if f == flavor)

    def create(self, tenant: str, pod: dict, owners: tuple[Owner, ...] | list[Owner] = ()) -> str:
        """Create a pod the way the API server and Kueue would: quota first (a refused pod never
        exists), then the pod webhook, then Kueue's admission or the scheduler."""
        objects = tenant_namespace(self.config, tenant, gpu_quota=self.quotas[tenant])
        created = self.created.setdefault(tenant, [])
        refused = admit(
            [*created, pod], limit_ranges=objects.get("LimitRange", []), quotas=objects["ResourceQuota"]
        ).refused
        if refused:
            return f"refused: {refused}"
        created.append(pod)
        name, gpus = pod["metadata"]["name"], pod_requests(pod)
        (namespace,) = objects["Namespace"]
        queued = pod_queueing(
            self.configuration,
            pod,
            namespace_labels=namespace_labels(namespace),
            local_queues={LOCAL_QUEUE},
            owners=list(owners),
        )
        if not queued.queued:
            # The scheduler: any GPU node with room (a pod without a selector lands on any of them).
            flavor = next((f for f in self.capacity if self.free(f) >= gpus[GPU_RESOURCE]), None)
            if flavor is None:
                self.pending.append(name)
                return "pending"
            self.running[name] = (tenant, flavor, gpus[GPU_RESOURCE])
            return f"running unqueued on {flavor}"
        workload, preempted = self.cohort.admit(tenant, name, gpus)
        for victim in preempted:
            self.running.pop(victim.name, None)  # Kueue evicts it: its pod stops
        if workload is None:
            self.pending.append(name)
            return "queued"
        if self.free(workload.flavor) < gpus[GPU_RESOURCE]:
            self.pending.append(name)  # admitted, but its GPUs are held by pods Kueue does not count
            return f"admitted on {workload.flavor}, pending"
        self.running[name] = (tenant, workload.flavor, gpus[GPU_RESOURCE])
        return f"running on {workload.flavor}"


def guarantee_scenario(cluster: Cluster) -> tuple[list[str], str]:
    """vision takes both p5 nodes with bare Pods (its share and speech's idle one); then speech
    submits the multi-node job docs/queues.md shows, one worker of a whole node."""
    vision = [cluster.create("vision", gpu_pod(f"vision-{index}", 8)) for index in range(2)]
    worker = gpu_pod("allreduce-worker-0", 8, 32)
    return vision, cluster.create("speech", worker, [QUEUED_JOB])


def test_a_bare_pod_cannot_take_another_tenants_guaranteed_gpus():
    config = two_tenants()
    group = next(s for s in shares(config)["speech"] if s.flavor.node_group)
    assert group.gpus == 8, "speech is guaranteed one p5 node"
    quotas = {t.name: tenant_gpu_quota(config, t) for t in config.workloads.tenants}
    cluster = Cluster(config, configuration(config), quotas)
    vision, speech = guarantee_scenario(cluster)
    # Both of vision's pods were queued and admitted, the second borrowing speech's idle node...
    assert vision == [f"running on {group.flavor.name}"] * 2
    # ...and speech's job took its node back: Kueue preempted vision's borrowing pod.
    assert speech == f"running on {group.flavor.name}", speech
    assert sorted(n for n, (t, _, _) in cluster.running.items() if t == "vision") == ["vision-0"]
    assert not cluster.cohort.borrowing("vision", group.flavor.name, GPU_RESOURCE)
    assert cluster.pending == []


def test_the_naive_model_lets_a_bare_pod_take_another_tenants_guaranteed_gpus():
    """Without the pod integration and with every tenant's quota at the profile's capacity (40 GPUs
    in p5-training), vision's bare Pods run outside the queues; Kueue admits speech's job onto
    GPUs it believes idle, and the job waits for the pods-ready timeout, five times over."""
    config = two_tenants()
    naive = copy.deepcopy(configuration(config))
    naive["integrations"]["frameworks"] = [
        f for f in naive["integrations"]["frameworks"] if f not in ("pod", "deployment", "statefulset")
    ]
    quotas = {t.name: gpu_capacity(config) for t in config.workloads.tenants}
    cluster = Cluster(config, naive, quotas)
    vision, speech = guarantee_scenario(cluster)
    assert all(outcome.startswith("running unqueued") for outcome in vision), vision
    assert speech.startswith("admitted") and speech.endswith("pending"), speech
    assert cluster.pending == ["allreduce-worker-0"]


@pytest.mark.parametrize("profile", QUEUED)
def test_a_tenants_resource_quota_is_what_its_queue_can_hold(profile):
    """The ResourceQuota caps a tenant at its nominal shares plus what it may borrow: every set of
    pods Kueue could admit for it fits (the quota never refuses an admitted job's pod), and nothing
    beyond does, queued or not."""
    config = profile_config(profile)
    for tenant in config.workloads.tenants:
        most = sum(share.most_gpus for share in shares(config)[tenant.name])
        (quota,) = tenant_namespace(config, tenant.name)["ResourceQuota"]
        (key,) = gpu_quota(0, dra=dra_mode(config))  # requests.nvidia.com/gpu, or DRA devices
        assert quota["spec"]["hard"][key] == str(most), tenant.name
        assert most <= (tenant.gpu_quota if tenant.gpu_quota is not None else gpu_capacity(config))


def test_without_borrowing_the_quota_alone_keeps_another_tenants_share():
    """A tenant that may not borrow has a ResourceQuota of its own shares (8 GPUs of the p5 group and
    4 of the pool): a GPU pod that escapes the queue (here: every pod, as if the pod integration were
    off) cannot reach the other tenant's node, which the old quota of the profile's capacity allowed."""
    config = two_tenants(vision={"gpu_borrowing_limit": 0})
    assert tenant_gpu_quota(config, config.workloads.tenants[0]) == 12
    escaped = copy.deepcopy(configuration(config))
    escaped["integrations"]["frameworks"] = ["batch/job", "kubeflow.org/mpijob"]
    quotas = {t.name: tenant_gpu_quota(config, t) for t in config.workloads.tenants}
    vision, speech = guarantee_scenario(Cluster(config, escaped, quotas))
    assert vision[0].startswith("running unqueued") and vision[1].startswith("refused"), vision
    assert "requests.nvidia.com/gpu 16 > 12" in vision[1]
    assert speech.startswith("running on group-"), speech
    old = {t.name: gpu_capacity(config) for t in config.workloads.tenants}
    vision, speech = guarantee_scenario(Cluster(config, escaped, old))
    assert all(outcome.startswith("running unqueued") for outcome in vision) and speech.endswith("pending")


# Admission that fits: a flavour never takes a pod its nodes cannot hold.


@pytest.mark.parametrize("profile", QUEUED)
def test_every_queue_flavour_holds_the_pods_the_others_are_sized_for(profile):
    """Kueue tries the flavours in order and takes the next one when a flavour is full, with no
    per-flavour pod size: every flavour that holds GPUs has nodes as large as the largest."""
    config = profile_config(profile)
    queued = [flavor for flavor in flavors(config) if flavor.gpus > 0]
    assert queued
    largest = max(flavor.gpus_per_node for flavor in queued)
    for flavor in queued:
        assert flavor.gpus_per_node == largest, flavor.name
        if flavor.node_group is None:
            assert max(CATALOG[t].gpu_count for t in config.workloads.gpu_pool.instance_types) == largest


def full_group_then(config: PlatformConfig, gpus: int) -> Workload | None:
    """ml-team fills its p5 node group with two whole-node pods, then asks for one of `gpus` GPUs."""
    cohort = Cohort.of([o for o in queue_objects(config) if o["kind"] == "ClusterQueue"])
    for index in range(2):
        cohort.admit("ml-team", f"node-{index}", {GPU_RESOURCE: 8, EFA_RESOURCE: 0})
    workload, _ = cohort.admit("ml-team", "half-node", {GPU_RESOURCE: gpus, EFA_RESOURCE: 0})
    return workload


def test_a_pod_admitted_to_the_pool_fits_one_of_its_nodes():
    """p5-training: with the p5 group full, Kueue admits a 4-GPU pod to Karpenter's pool. The pool
    of the old default types (1 GPU each) never starts it; the shipped pool has a type of 8."""
    config = profile_config("p5-training")
    workload = full_group_then(config, 4)
    assert workload is not None and workload.flavor == "pool-gpu"
    assert max(CATALOG[t].gpu_count for t in config.workloads.gpu_pool.instance_types) >= 4
    old_types = ["g6.xlarge", "g6.2xlarge", "g6.4xlarge", "g6e.xlarge"]
    assert max(CATALOG[t].gpu_count for t in old_types) < 4


def test_a_pool_of_smaller_nodes_than_the_groups_is_refused_with_the_fix():
    doc = yaml.safe_load((ROOT / "profiles" / "p5-training.yaml").read_text())
    old_types = ["g6.xlarge", "g6.2xlarge", "g6.4xlarge", "g6e.xlarge"]
    (problem,) = problems(changed(doc, workloads__gpu_pool__instance_types=old_types))
    assert problem.startswith("workloads.gpu_pool.instance_types: Karpenter's GPU pool is a flavour"), problem
    assert (
        "largest type holds 1 GPU;" in problem and "pods sized for the 8-GPU nodes of flavour group-p5-efa" in problem
    )
    assert "a pod of 2 to 8 GPUs" in problem
    assert f"got {old_types}" in problem and "g6.48xlarge or g6e.48xlarge" in problem
    assert "addons.jupyterhub.enabled: true" in problem and "addons.kueue.enabled: false" in problem
    # The notebooks' pool is no queue flavour; without Kueue there are no flavours.
    for off in ({"jupyterhub": {"enabled": True}}, {"kueue": {"enabled": False}}):
        pooled = changed(doc, workloads__gpu_pool__instance_types=old_types)
        pooled["addons"] = {**pooled["addons"], **off}
        assert not [p for p in problems_or_none(pooled) if "gpu_pool" in p]


def test_a_group_of_smaller_nodes_than_another_is_refused_unless_it_holds_no_queue_gpus():
    doc = yaml.safe_load((ROOT / "profiles" / "p5-training.yaml").read_text())
    small = {"name": "g6-small", "instance_type": "g6.4xlarge", "min_size": 0, "desired_size": 1, "max_size": 2}
    mixed = changed(doc, cluster__gpu_node_groups=[*doc["cluster"]["gpu_node_groups"], small])
    (problem,) = problems(mixed)
    assert problem.startswith("cluster.gpu_node_groups.1.instance_type: GPU group g6-small's nodes hold 1 GPU;")
    assert "(got 'g6.4xlarge';" in problem and "desired_size: 0" in problem
    # At desired_size 0 the group holds no GPUs of the queues (odcr's groups): nothing to refuse.
    idle = changed(mixed, cluster__gpu_node_groups__1__desired_size=0)
    assert validate_profile(idle)


def problems_or_none(doc: dict) -> list[str]:
    try:
        validate_profile(doc)
    except ProfileError as error:
        return error.problems
    return []


def test_no_limit_range_caps_a_pods_gpus_for_it_would_break_the_queues():
    """Why the per-pod fit is a check of the profile and admission policies (addons/kueue/fit.py,
    tests/test_pod_fit.py), not a LimitRange max on nvidia.com/gpu (the API server enforces one,
    and Kueue would refuse a job beyond it before admission):
    - a Container max alone is stored with a default limit of the max, and a default request of
      that (SetDefaults_LimitRangeItem): every container, the MPI launcher's too, asks for 8 GPUs;
    - a Pod max alone refuses every pod with a container that states no GPU limit, a launcher;
    - with a Container default of 0 the stored default request is 0 too, and Kueue merges it into a
      job's pod sets before it takes limits as requests: a worker that states only limits (docs/
      queues.md's MPIJob, the public samples) is counted as 0 GPUs, and the queues count nothing."""
    launcher = {
        "metadata": {"name": "launcher"},
        "spec": {"containers": [{"name": "l", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
    }
    worker = gpu_pod("worker", 8, 32)
    tenant_range = {"spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "250m", "memory": "512Mi"}}]}}
    container_max = copy.deepcopy(tenant_range)
    container_max["spec"]["limits"][0]["max"] = {GPU_RESOURCE: "8"}
    created = admit([launcher], limit_ranges=[container_max], quotas=[])
    assert created.pods[0]["spec"]["containers"][0]["resources"]["requests"][GPU_RESOURCE] == "8"
    pod_max = copy.deepcopy(tenant_range)
    pod_max["spec"]["limits"].append({"type": "Pod", "max": {GPU_RESOURCE: "8"}})
    assert "No limit is specified" in (admit([launcher], limit_ranges=[pod_max], quotas=[]).refused or "")
    defaulted = copy.deepcopy(container_max)
    defaulted["spec"]["limits"][0]["default"] = {GPU_RESOURCE: "0"}
    created = admit([launcher, worker], limit_ranges=[defaulted], quotas=[])
    assert created.refused is None  # the API server is content: the worker's pod requests 8
    assert created.pods[1]["spec"]["containers"][0]["resources"]["requests"][GPU_RESOURCE] == "8"
    assert pod_set_requests(worker, [stored(defaulted)])[GPU_RESOURCE] == 0  # ...but Kueue counts none
    # The tenant namespaces' own LimitRange: Kueue counts the worker's 8.
    config = profile_config("p5-training")
    ranges = tenant_namespace(config, config.workloads.tenants[0].name)["LimitRange"]
    assert pod_set_requests(worker, [stored(r) for r in ranges])[GPU_RESOURCE] == 8
    assert not any("max" in item for r in ranges for item in r["spec"]["limits"])


# A tenant the queues guarantee nothing is warned about at synth.


def three_tenants(research: dict | None = None, **addons) -> PlatformConfig:
    doc = yaml.safe_load((ROOT / "profiles" / "p5-training.yaml").read_text())
    people = [{"name": "vision"}, {"name": "speech"}, {"name": "research", **(research or {})}]
    doc = changed(doc, workloads__tenants=people)
    doc["addons"] = {**doc["addons"], **addons}
    return validate_profile(doc)


def test_a_third_tenant_on_two_nodes_is_warned_it_is_guaranteed_no_gpu():
    config = three_tenants(karpenter={"enabled": False})
    assert [s.gpus for s in shares(config)["research"]] == [0]
    (warning,) = share_warnings(config)
    assert warning.startswith("warning: the queues guarantee tenant research no GPU: GPU group p5-efa's 2 nodes")
    assert "at most 16 GPUs" in warning and "desired_size" in warning
    (never,) = share_warnings(three_tenants({"gpu_borrowing_limit": 0}, karpenter={"enabled": False}))
    assert "It can never run a GPU pod: it may borrow none." in never


def test_a_tenant_with_pool_gpus_but_no_node_of_the_group_is_warned_about_the_group():
    config = three_tenants()
    assert [s.gpus for s in shares(config)["research"]] == [0, 2]
    (warning,) = share_warnings(config)
    assert "tenant research no node of GPU group p5-efa: its 2 nodes go whole to 2 of the 3 tenants" in warning


@pytest.mark.parametrize("profile", QUEUED)
def test_the_shipped_and_fixture_profiles_guarantee_every_tenant_a_share(profile):
    assert share_warnings(profile_config(profile)) == []


def test_synth_prints_the_warning(monkeypatch, capsys, tmp_path):
    import main
    import stacks.platform

    monkeypatch.setattr(stacks.platform, "synthesize", lambda *args, **kwargs: None)
    main.common.synthesize_profile(three_tenants(karpenter={"enabled": False}), tmp_path)
    assert "warning: the queues guarantee tenant research no GPU" in capsys.readouterr().err
