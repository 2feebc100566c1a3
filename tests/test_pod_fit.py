"""Admission that fits: in a tenant namespace, a pod or a job whose pod no node of the queues can
hold is refused when it is created (addons/kueue/fit.py), where Kueue would admit it (16 GPUs fit
the quota of two 8-GPU nodes) and it would pend until the pods-ready timeout, five times over.

The synthesized policies' CEL is evaluated for real, by cel-python with the Kubernetes CEL
libraries it lacks (tests/cel_policy.py), against pods as the API server stores them
(tests/admission.py) and jobs as tenants write them.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from addons.contributions import pod_sources
from addons.kueue import DEFINITION as KUEUE
from addons.kueue import node_limits
from addons.kueue.fit import fit_objects, policy_name
from addons.kueue.queues import queue_objects
from addons.trainer import DEFINITION as TRAINER
from addons.trainer.launch import TRAINER_API_VERSION
from addons.trainer.runtimes import TenantVolumes, runtime_objects
from components.k8s.crds import MPIJOB_API_VERSION
from components.k8s.pod_sources import PODS
from manifests.render import render
from profiles import PlatformConfig, validate_profile
from profiles.catalog import EFA_RESOURCE, GPU_RESOURCE
from tests.admission import admit
from tests.cases import profile_config, profiles_where
from tests.cel_policy import MAX_MESSAGE_BYTES, Request, evaluate, refusals, to_cel
from tests.k8s_validation import RECORDED_CRDS
from tests.kueue_model import Cohort
from tests.test_shares import namespace_labels, tenant_namespace

ROOT = Path(__file__).resolve().parents[1]
QUEUED = profiles_where(lambda config: bool(node_limits(config)))
# The resource each kind is created as: (API group, version, resource).
RESOURCES = {
    "Pod": ("", "v1", "pods"),
    "Job": ("batch", "v1", "jobs"),
    "Deployment": ("apps", "v1", "deployments"),
    "StatefulSet": ("apps", "v1", "statefulsets"),
    "MPIJob": ("kubeflow.org", "v2beta1", "mpijobs"),
    "RayJob": ("ray.io", "v1", "rayjobs"),
    "RayCluster": ("ray.io", "v1", "rayclusters"),
    "RayService": ("ray.io", "v1", "rayservices"),
    "TrainJob": ("trainer.kubeflow.org", "v1alpha1", "trainjobs"),
}


def p5() -> PlatformConfig:
    return profile_config("p5-training")


def tenant_labels(config: PlatformConfig, tenant: str | None = None) -> dict[str, str]:
    name = tenant or config.workloads.tenants[0].name
    return namespace_labels(tenant_namespace(config, name)["Namespace"][0])


def as_stored(config: PlatformConfig, pod: dict[str, Any]) -> dict[str, Any]:
    """The pod as the API server stores it in the first tenant's namespace (a limit without a
    request becomes the request; the tenant LimitRange's defaults), before the policies see it."""
    ranges = tenant_namespace(config, config.workloads.tenants[0].name)["LimitRange"]
    created = admit([pod], limit_ranges=ranges, quotas=[])
    assert created.refused is None, created.refused
    return created.pods[0]


def submit(
    config: PlatformConfig,
    obj: dict[str, Any],
    *,
    operation: str = "CREATE",
    old: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    objects: list[dict[str, Any]] | None = None,
) -> list[str]:
    """The refusals of `obj` created (or updated from `old`) in a tenant namespace."""
    if obj["kind"] == "Pod" and operation == "CREATE":
        obj = as_stored(config, obj)
    group, version, resource = RESOURCES[obj["kind"]]
    request = Request(
        operation=operation,
        group=group,
        version=version,
        resource=resource,
        kind=obj["kind"],
        namespace_labels=tenant_labels(config) if labels is None else labels,
        object=obj,
        old_object=old,
    )
    return refusals(fit_objects(config, pod_sources(config)) if objects is None else objects, request)


def container(name: str, gpus: Any = None, efa: Any = None, **fields: Any) -> dict[str, Any]:
    """A container stating its devices as limits only, as the public samples do."""
    limits = {
        **({GPU_RESOURCE: gpus} if gpus is not None else {}),
        **({EFA_RESOURCE: efa} if efa is not None else {}),
    }
    resources: dict[str, Any] = {"requests": {"cpu": "1", "memory": "1Gi"}}
    if limits:
        resources["limits"] = limits
    return {"name": name, "image": "x", "resources": resources, **fields}


def pod(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml-team"}, "spec": spec}


def template(*containers: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"containers": list(containers)}}


def mpijob(worker_gpus: Any, *, worker_efa: Any = None, replicas: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": MPIJOB_API_VERSION,
        "kind": "MPIJob",
        "metadata": {"name": "allreduce", "namespace": "ml-team"},
        "spec": {
            "slotsPerWorker": 8,
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": template(container("launcher"))},
                "Worker": {"replicas": replicas, "template": template(container("worker", worker_gpus, worker_efa))},
            },
        },
    }


SIDECAR = {"restartPolicy": "Always"}


# The Kubernetes CEL libraries, as the tests give them to cel-python.


def test_the_kubernetes_cel_libraries_behave_as_kubernetes_documents_them():
    """The examples of library/quantity.go and library/lists.go."""
    cases = {
        "quantity('8').asInteger()": 8,
        "quantity('50k').asInteger()": 50000,
        "quantity('2Ki').asInteger()": 2048,
        "quantity('1e3').asInteger()": 1000,
        "quantity(string(8)).asInteger()": 8,
        "[1, 3].sum()": 4,
        "[].sum()": 0,
        "[1, 3].max()": 3,
        "[1, 2, 2, 3].indexOf(2)": 1,
        "[].indexOf('string')": -1,
        "([1] + [3]).max()": 3,
    }
    for expression, expected in cases.items():
        assert evaluate(expression, {}) == expected, expression
    for failing in ("quantity('1.5').asInteger()", "quantity('500m').asInteger()", "quantity('200K')", "[].max()"):
        assert type(evaluate(failing, {})).__name__ == "CELEvalError", failing


# Pods.


@pytest.mark.parametrize(
    "submitted",
    [
        pytest.param(pod(container("worker", "8", "32")), id="an 8-GPU, 32-EFA worker of a p5 node"),
        pytest.param(pod(container("launcher")), id="a CPU-only launcher"),
        pytest.param(pod(container("worker", "8")), id="GPU limits only"),
        pytest.param(pod(container("worker", "8"), init=(container("warm-up", "8"),)), id="an init container of 8"),
        pytest.param(
            pod(container("worker", "4"), init=(container("prepare", "8"), container("log", "4", **SIDECAR))),
            id="a sidecar after the init container of 8",
        ),
    ],
)
def test_a_pod_a_node_can_hold_is_admitted(submitted):
    assert submit(p5(), submitted) == []


@pytest.mark.parametrize(
    ("submitted", "asked"),
    [
        pytest.param(pod(container("worker", "16")), "16 nvidia.com/gpu", id="16 GPUs in one container"),
        pytest.param(pod(container("a", "8"), container("b", "8")), "16 nvidia.com/gpu", id="two containers of 8"),
        pytest.param(pod(container("worker", "8"), init=(container("s", "8", **SIDECAR),)), "16", id="a GPU sidecar"),
        pytest.param(
            pod(container("worker", "0"), init=(container("log", "4", **SIDECAR), container("prepare", "8"))),
            "12 nvidia.com/gpu",
            id="an init container of 8 after a sidecar of 4",
        ),
        pytest.param(pod(container("worker", "8", "33")), "33 vpc.amazonaws.com/efa", id="33 EFA interfaces"),
    ],
)
def test_a_pod_no_node_can_hold_is_refused_with_the_limit_and_the_fix(submitted, asked):
    (message,) = submit(p5(), submitted)
    assert message.startswith(f"this pod asks for {asked}"), message
    resource = asked.split()[-1] if " " in asked else GPU_RESOURCE
    most = {GPU_RESOURCE: "8 (p5.48xlarge, g6.48xlarge)", EFA_RESOURCE: "32 (p5.48xlarge)"}[resource]
    assert f"the largest nodes of the tenant queues hold {most}" in message
    assert "Kueue would admit it and it would never start" in message
    assert "numNodes (a TrainJob) or replicas (the Worker of an MPIJob" in message
    assert len(message.encode()) <= MAX_MESSAGE_BYTES and "\n" not in message


def test_kueue_admits_the_pod_the_policy_refuses():
    """Why a policy: the cohort's quota holds 16 GPUs across two p5 nodes, and Kueue counts no node."""
    config = p5()
    cohort = Cohort.of([o for o in queue_objects(config) if o["kind"] == "ClusterQueue"])
    workload, _ = cohort.admit(config.workloads.tenants[0].name, "big", {GPU_RESOURCE: 16, EFA_RESOURCE: 0})
    assert workload is not None and workload.flavor == "group-p5-efa"
    assert submit(config, pod(container("worker", "16")))


def naive_policy(config: PlatformConfig) -> list[dict[str, Any]]:
    """The pods policy with the check a first try writes: the first container's GPU limit."""
    objects = [o for o in fit_objects(config, pod_sources(config)) if o["metadata"]["name"] == policy_name(PODS)]
    policy = copy.deepcopy(next(o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"))
    check = f"int(object.spec.containers[0].resources.limits['{GPU_RESOURCE}']) <= 8"
    policy["spec"]["validations"] = [{"expression": check, "message": "too many GPUs"}]
    return [policy if o["kind"] == "ValidatingAdmissionPolicy" else o for o in objects]


def test_the_naive_check_admits_two_containers_of_8_and_refuses_every_launcher():
    config, naive = p5(), naive_policy(p5())
    two = pod(container("a", "8"), container("b", "8"))
    assert submit(config, two, objects=naive) == [] and submit(config, two)
    warm = pod(container("worker", "0"), init=(container("log", "4", **SIDECAR), container("prepare", "8")))
    assert submit(config, warm, objects=naive) == [] and submit(config, warm)
    # A CPU-only pod has no GPU limit to read: the expression errs, and failurePolicy Fail refuses it.
    (refused,) = submit(config, pod(container("launcher")), objects=naive)
    assert "resulted in error" in refused
    assert submit(config, pod(container("launcher"))) == []


def test_only_the_tenant_namespaces_are_bound():
    config = p5()
    big = pod(container("worker", "16"))
    platform = {"kubernetes.io/metadata.name": "gpu-validation"}
    assert submit(config, big, labels=platform) == []
    for tenant in config.workloads.tenants:
        assert submit(config, big, labels=tenant_labels(config, tenant.name))


# Jobs, refused when they are submitted.


def rayjob(worker_gpus: Any, *, head_gpus: Any = None) -> dict[str, Any]:
    cluster = {
        "headGroupSpec": {"rayStartParams": {}, "template": template(container("ray-head", head_gpus))},
        "workerGroupSpecs": [
            {
                "groupName": "gpu",
                "replicas": 2,
                "minReplicas": 2,
                "maxReplicas": 2,
                "template": template(container("ray-worker", worker_gpus)),
            }
        ],
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "hello", "namespace": "ml-team"},
        "spec": {"entrypoint": "python -c 1", "shutdownAfterJobFinishes": True, "rayClusterSpec": cluster},
    }


def ray_kind(kind: str, worker_gpus: Any) -> dict[str, Any]:
    cluster = rayjob(worker_gpus)["spec"]["rayClusterSpec"]
    spec = cluster if kind == "RayCluster" else {"rayClusterConfig": cluster}
    return {"apiVersion": "ray.io/v1", "kind": kind, "metadata": {"name": "c", "namespace": "ml-team"}, "spec": spec}


def workload_kind(kind: str, gpus: Any) -> dict[str, Any]:
    group, version, _ = RESOURCES[kind]
    return {
        "apiVersion": f"{group}/{version}",
        "kind": kind,
        "metadata": {"name": "w", "namespace": "ml-team"},
        "spec": {"template": template(container("main", gpus))},
    }


def trainjob(gpus: Any) -> dict[str, Any]:
    return {
        "apiVersion": TRAINER_API_VERSION,
        "kind": "TrainJob",
        "metadata": {"name": "t", "namespace": "ml-team"},
        "spec": {
            "runtimeRef": {"name": "torch-p5-efa"},
            "trainer": {"numNodes": 2, "resourcesPerNode": {"limits": {GPU_RESOURCE: gpus}}},
        },
    }


JOBS = {
    "an MPIJob's Worker": mpijob,
    "a RayJob's worker group": rayjob,
    "a RayCluster's worker group": lambda gpus: ray_kind("RayCluster", gpus),
    "a RayService's worker group": lambda gpus: ray_kind("RayService", gpus),
    "a Job": lambda gpus: workload_kind("Job", gpus),
    "a Deployment": lambda gpus: workload_kind("Deployment", gpus),
    "a StatefulSet": lambda gpus: workload_kind("StatefulSet", gpus),
    "a TrainJob's resourcesPerNode": trainjob,
}


@pytest.mark.parametrize("job", JOBS.values(), ids=list(JOBS))
def test_a_job_whose_pod_no_node_can_hold_is_refused_when_submitted(job):
    config = p5()
    for fits in ("8", 8):
        assert submit(config, job(fits)) == []
    for too_many in ("16", 16):
        submitted = job(too_many)
        (message,) = submit(config, submitted)
        assert message.startswith(f"a pod of this {submitted['kind']} asks for 16 nvidia.com/gpu"), message
    # Edited: refused where the edit makes a pod too large, let through where it writes no resources.
    assert submit(config, job("16"), operation="UPDATE", old=job("8"))
    assert submit(config, job("8"), operation="UPDATE", old=job("16")) == []
    assert submit(config, job("16"), operation="UPDATE", old=job("16")) == []


def test_a_rayjobs_head_and_submitter_are_pods_of_it_too():
    config = p5()
    assert submit(config, rayjob("8", head_gpus="16"))
    submitter = rayjob("8")
    submitter["spec"]["submitterPodTemplate"] = template(container("submit", "16"))
    assert submit(config, submitter)
    submitter["spec"]["submitterPodTemplate"] = template(container("submit"))
    assert submit(config, submitter) == []


def test_an_update_that_writes_a_larger_pod_is_refused_and_kueues_own_writes_are_not():
    """A suspended job's template can still be edited (Kueue then makes its Workload anew). Kueue's
    own writes change no resources: it suspends a job it evicts and gives an admitted one's pods
    its flavour's node selector. Refused, they would leave a job made before the policies (too
    large, pending) running and holding its quota; a finalizer's removal, undeletable."""
    config = p5()
    fits, larger = mpijob("8"), mpijob("16")
    (message,) = submit(config, larger, operation="UPDATE", old=fits)
    assert message.startswith("a pod of this MPIJob asks for 16 nvidia.com/gpu")
    assert submit(config, mpijob("8", replicas=4), operation="UPDATE", old=fits) == []
    evicted = copy.deepcopy(larger)
    evicted["spec"]["runPolicy"] = {"suspend": True}
    for replica in evicted["spec"]["mpiReplicaSpecs"].values():
        replica["template"]["spec"]["nodeSelector"] = {"platform/gpu-node-group": "p5-efa"}
    assert submit(config, evicted, operation="UPDATE", old=larger) == []
    released = copy.deepcopy(larger)
    larger["metadata"]["finalizers"] = ["kueue.x-k8s.io/resource-in-use"]
    assert submit(config, released, operation="UPDATE", old=larger) == []


def test_a_job_without_a_pod_template_is_left_to_its_operator():
    """The CRDs do not require a replica's template: the MPI Operator refuses such a job, and an
    expression that erred on it would refuse it here with a CEL error instead."""
    job = mpijob("8")
    del job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]
    assert submit(p5(), job) == []
    submitter = rayjob("8")
    submitter["spec"]["submitterPodTemplate"] = {"metadata": {"labels": {"a": "b"}}}
    assert submit(p5(), submitter) == []


def test_a_fractional_gpu_in_a_job_is_refused_as_its_pods_would_be():
    (message,) = submit(p5(), mpijob("0.5"))
    assert "cannot convert value to integer" in message


def test_the_platforms_and_the_guides_jobs_are_admitted():
    """docs/queues.md's examples (sized for p5-training) as tenants copy them: the MPIJob's
    `nvidia.com/gpu: 8` is an integer in the YAML."""
    config = p5()
    guide = (ROOT / "docs" / "queues.md").read_text()
    examples = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", guide, flags=re.DOTALL)]
    mpi = next(example for example in examples if example["kind"] == "MPIJob")
    (worker,) = mpi["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    assert worker["resources"]["limits"][GPU_RESOURCE] == 8
    for example in examples:
        assert submit(config, example) == [], example["kind"]


@pytest.mark.parametrize("profile", QUEUED)
def test_the_platforms_own_tenant_jobs_and_runtimes_are_admitted(profile):
    """verify's jobs and pods in a tenant namespace, and the pods of the Trainer runtimes of the
    groups the queues hold (each takes a whole node)."""
    config = profile_config(profile)
    tenants = {tenant.name for tenant in config.workloads.tenants}
    placed = [
        obj
        for objects in render(config, image="repo/image:tag").values()
        for obj in objects
        if obj.get("metadata", {}).get("namespace") in tenants and obj["kind"] in RESOURCES
    ]
    for obj in placed:
        assert submit(config, obj) == [], obj["metadata"]["name"]
    if not TRAINER.enabled(config):
        return
    running = {group.name for group in config.cluster.gpu_node_groups if group.desired_size}
    volumes = TenantVolumes(fsx=True, checkpoints=True)
    for runtime in runtime_objects(config.cluster.gpu_node_groups, TRAINER.settings(config), volumes, efa_image="r:t"):
        if runtime["metadata"]["name"].removeprefix("torch-") not in running:
            continue
        for replicated in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
            node = replicated["template"]["spec"]["template"]
            assert submit(config, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "n"}, **node}) == []


# The limits follow the profile.


def test_a_profile_without_kueue_has_no_policy():
    import yaml

    from tests.cases import FIXTURE_PROFILES

    doc = yaml.safe_load((FIXTURE_PROFILES / "jark.yaml").read_text())
    assert fit_objects(profile_config("jark"), pod_sources(profile_config("jark")))  # with Kueue: policies
    doc["addons"]["kueue"] = {"enabled": False}
    config = validate_profile(doc)
    assert not KUEUE.enabled(config) and fit_objects(config, pod_sources(config)) == []


def test_a_pool_of_one_gpu_types_refuses_two_gpus_and_any_efa():
    """s3-state's queues hold only Karpenter's pool of 1-GPU types, which attach no EFA."""
    config = profile_config("s3-state")
    assert submit(config, pod(container("worker", "1"))) == []
    (message,) = submit(config, pod(container("worker", "2")))
    assert "hold 1 (g6.xlarge, g6.2xlarge, g6.4xlarge, g6e.xlarge)" in message
    (message,) = submit(config, pod(container("worker", "1", "1")))
    assert message.startswith("this pod asks for 1 vpc.amazonaws.com/efa, and no node of the tenant queues has any")


def test_a_group_at_desired_size_0_holds_no_pod_of_the_queues():
    """odcr's reserved p5en and B300 groups run no node (desired_size 0): Kueue would admit an
    8-GPU pod to the pool's 1-GPU nodes only."""
    config = profile_config("odcr")
    (message,) = submit(config, pod(container("worker", "8")))
    assert "hold 1 (g6.xlarge," in message and "p5en" not in message


def test_the_policies_cover_the_kinds_the_profile_runs():
    names = {policy_name(source) for source in pod_sources(p5())}
    assert names == {
        f"tenant-{kind}-fit-a-node"
        for kind in ("pods", "workloads", "mpijobs", "rayjobs", "rayclusters", "rayservices", "trainjobs")
    }
    assert {source.name for source in pod_sources(profile_config("capacity-block"))} == {"pods", "workloads", "mpijobs"}
    kinds = {o["kind"] for o in fit_objects(p5(), pod_sources(p5()))}
    assert kinds == {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}


def test_no_policy_refuses_kueues_workloads():
    """A refused Workload is only logged by Kueue's reconciler (addons/kueue/fit.py): the job sits
    suspended, and its owner is told nothing. The jobs are refused instead."""
    for obj in fit_objects(p5(), pod_sources(p5())):
        if obj["kind"] == "ValidatingAdmissionPolicy":
            rules = obj["spec"]["matchConstraints"]["resourceRules"]
            assert all("kueue.x-k8s.io" not in rule["apiGroups"] for rule in rules)


def schema_at(schema: dict[str, Any], path: str) -> dict[str, Any]:
    for step in path.split("."):
        schema = schema["items"] if step == "[]" else schema["properties"][step]
    return schema


def test_the_custom_resources_paths_are_in_their_recorded_schemas():
    """The fields the policies read, in the CRDs at the pinned tags (tests/fixtures/crds)."""
    kinds = {}
    for path in sorted(RECORDED_CRDS.glob("*.json")):
        kinds.update(json.loads(path.read_text())["kinds"])
    rayjob_spec = kinds["ray.io/v1/RayJob"]["schema"]["properties"]["spec"]
    for path in (
        "rayClusterSpec.headGroupSpec.template.spec.containers",
        "rayClusterSpec.workerGroupSpecs.[].template.spec.initContainers",
        "submitterPodTemplate.spec.containers",
    ):
        assert schema_at(rayjob_spec, path)["type"] == "array", path
    trainjob_spec = kinds["trainer.kubeflow.org/v1alpha1/TrainJob"]["schema"]["properties"]["spec"]
    limits = schema_at(trainjob_spec, "trainer.resourcesPerNode.limits")["additionalProperties"]
    assert limits["x-kubernetes-int-or-string"] is True  # an integer reaches the policy as one
    versions = {f"{group}/{version}" for group, version, _ in (rule for s in pod_sources(p5()) for rule in s.rules)}
    assert {MPIJOB_API_VERSION, TRAINER_API_VERSION, "ray.io/v1"} <= versions


# CEL within what Kubernetes 1.31 compiles.

STANDARD = {"has", "all", "exists", "map", "filter", "size", "string", "int"}
KUBERNETES = {"quantity", "asInteger", "sum", "max", "indexOf"}


@pytest.mark.parametrize("profile", QUEUED)
def test_the_expressions_call_only_standard_cel_and_the_kubernetes_libraries(profile):
    """No cel-python extension (reduce, min as a macro), no optional field syntax, no
    two-variable comprehension (1.32+): a 1.31 API server compiles every expression. (Its
    compatibility version, one minor back, has both libraries: base.go.)"""
    for obj in fit_objects(profile_config(profile), pod_sources(profile_config(profile))):
        spec = obj["spec"]
        expressions = [
            *(item["expression"] for item in spec.get("variables", []) + spec.get("matchConditions", [])),
            *(v[key] for v in spec.get("validations", []) for key in ("expression", "messageExpression")),
        ]
        for expression in expressions:
            code = re.sub(r"'(?:[^'\\]|\\.)*'", "''", expression)  # string literals out
            called = set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\(", code))
            assert called <= STANDARD | KUBERNETES, called - STANDARD - KUBERNETES
            assert ".?" not in code and "[?" not in code
            # No escape to get wrong between Python, Terraform's JSON, the HCL export and CEL.
            assert "\\" not in expression and "${" not in expression and "%{" not in expression
            # cdktf's HCL export writes a string starting with [, { or " as it is, unquoted.
            assert expression[0] not in '[{"', expression


def test_a_message_expression_names_the_object_kind_from_the_request():
    validation = next(o for o in fit_objects(p5(), pod_sources(p5())) if o["kind"] == "ValidatingAdmissionPolicy")[
        "spec"
    ]
    text = evaluate(
        validation["validations"][0]["messageExpression"],
        {"variables": to_cel({"gpus": [16]}), "request": to_cel({"kind": {"kind": "Pod"}})},
    )
    assert str(text).startswith("this pod asks for 16 nvidia.com/gpu")
