"""Kubeflow Trainer: the platform's runtimes validate against Trainer's CRDs at the pinned v2.3.0
(recorded in tests/fixtures/crds/), lead to the GPU node group they are named for with its whole
node's GPUs and EFA interfaces, mount the tenant's own volumes, and a TrainJob in a tenant
namespace is queued by Kueue and gets a flavour for every pod set."""

from __future__ import annotations

import copy
import ipaddress

import jsonschema
import pytest

from addons.kueue import DEFINITION as KUEUE
from addons.kueue.queues import LOCAL_QUEUE, queue_objects
from addons.trainer import DEFINITION as TRAINER
from addons.trainer.install import WEBHOOK_PORT
from addons.trainer.runtimes import CHECKPOINTS, runtime_name
from components.labels import NODE_GROUP_LABEL
from profiles import tenancy
from profiles.catalog import EFA_RESOURCE, GPU_RESOURCE
from tests.cases import profiles_where
from tests.k8s_validation import validate_object
from tests.netpol import Peer, allowed
from tests.synth_helpers import resources
from tests.test_namespaces import created_namespaces
from tests.test_queues import kueue_manages, pod_set_gets_a_flavour

TRAINED = profiles_where(TRAINER.enabled)


def runtimes(synthesized, profile: str) -> dict[str, dict]:
    return {
        body["manifest"]["metadata"]["name"]: body["manifest"]
        for body in resources(synthesized.stack(profile, "workloads"), "kubernetes_manifest").values()
        if body["manifest"]["kind"] == "ClusterTrainingRuntime"
    }


def node_pod(runtime: dict) -> dict:
    (job,) = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    assert job["name"] == "node"
    return job["template"]["spec"]["template"]["spec"]


def test_the_shipped_profiles_run_trainer():
    assert {"gpu-validation", "p5-training", "p5en-training"} <= set(TRAINED)


def test_the_recorded_crd_refuses_what_a_loose_model_accepts():
    """v1alpha1 has no mlPolicy.torch.numProcPerNode (it moved to the TrainJob); a model that
    only checks the YAML's shape accepts it, the pinned CRD does not."""
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "r"},
        "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {"replicatedJobs": []}}},
    }
    validate_object(runtime, "1.35")
    broken = copy.deepcopy(runtime)
    broken["spec"]["mlPolicy"]["torch"] = {"numProcPerNode": 8}
    with pytest.raises(jsonschema.ValidationError):
        validate_object(broken, "1.35")


@pytest.mark.parametrize("profile", TRAINED)
def test_a_runtime_per_gpu_group_with_the_whole_nodes_devices_and_the_tenants_volumes(synthesized, profile):
    config = synthesized.configs[profile]
    found = runtimes(synthesized, profile)
    assert set(found) == {runtime_name(group) for group in config.cluster.gpu_node_groups}
    for group in config.cluster.gpu_node_groups:
        runtime = found[runtime_name(group)]
        validate_object(runtime, config.cluster.kubernetes_version)
        pod = node_pod(runtime)
        assert pod["nodeSelector"] == {NODE_GROUP_LABEL: group.name}
        (container,) = pod["containers"]
        assert container["name"] == "node" and container["image"] == TRAINER.settings(config).torch_image
        limits = container["resources"]["limits"]
        assert limits[GPU_RESOURCE] == str(group.catalog_entry.gpu_count)
        if group.efa_enabled:
            assert limits[EFA_RESOURCE] == str(group.catalog_entry.max_efa_interfaces)
            assert {"name": "FI_PROVIDER", "value": "efa"} in container["env"]
        claims = {v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"] if "persistentVolumeClaim" in v}
        # The names every tenant namespace's claims have: each TrainJob mounts its own tenant's.
        tenant_claims = {
            body["manifest"]["metadata"]["name"]
            for body in resources(synthesized.stack(profile, "workloads"), "kubernetes_manifest").values()
            if body["manifest"]["kind"] == "PersistentVolumeClaim"
            and body["manifest"]["metadata"]["namespace"] == config.workloads.tenants[0].name
        }
        assert claims <= tenant_claims and CHECKPOINTS in claims
        assert (tenancy.FSX_VOLUME in claims) == (tenancy.FSX_VOLUME in tenant_claims)
        assert any(v.get("emptyDir", {}).get("medium") == "Memory" for v in pod["volumes"])


def train_job(namespace: str, runtime: str, nodes: int) -> dict:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "fit", "namespace": namespace},
        "spec": {
            "runtimeRef": {"name": runtime, "kind": "ClusterTrainingRuntime", "apiGroup": "trainer.kubeflow.org"},
            "trainer": {"numNodes": nodes, "command": ["torchrun", "train.py"]},
        },
    }


@pytest.mark.parametrize("profile", [p for p in TRAINED if p in profiles_where(KUEUE.enabled)])
def test_a_tenants_two_node_train_job_is_queued_and_every_pod_set_gets_a_flavour(synthesized, profile):
    config = synthesized.configs[profile]
    tenant = config.workloads.tenants[0].name
    group = max(config.cluster.gpu_node_groups, key=lambda g: g.catalog_entry.gpu_count)
    job = train_job(tenant, runtime_name(group), 2)
    validate_object(job, config.cluster.kubernetes_version)
    labels = created_namespaces(synthesized, profile)[tenant][0]["metadata"]["labels"]
    assert kueue_manages("trainer.kubeflow.org/trainjob", labels, {LOCAL_QUEUE})
    # Trainer makes one pod set of the runtime's node job (numNodes pods).
    container = node_pod(runtimes(synthesized, profile)[runtime_name(group)])["containers"][0]
    requests = {**container["resources"]["limits"], **container["resources"]["requests"]}
    for queue in (o for o in queue_objects(config) if o["kind"] == "ClusterQueue"):
        assert pod_set_gets_a_flavour(requests, queue)


@pytest.mark.parametrize("profile", TRAINED)
def test_the_api_server_reaches_trainers_and_jobsets_webhooks(synthesized, profile):
    _, policies = created_namespaces(synthesized, profile)[TRAINER.namespace]
    vpc = ipaddress.ip_network(synthesized.configs[profile].cluster.vpc.cidr)
    control_plane = Peer(ip=str(next(vpc.hosts())))
    assert allowed(
        policies,
        namespace=TRAINER.namespace,
        direction="Ingress",
        peer=control_plane,
        protocol="TCP",
        port=WEBHOOK_PORT,
    )


def test_trainer_and_dra_are_refused_together():
    from profiles import ProfileError, validate_profile
    from tests.test_profiles import mutated

    with pytest.raises(ProfileError) as error:
        validate_profile(
            mutated(addons={"gpu_operator": {"dra": True}, "kueue": {"enabled": False}, "trainer": {"enabled": True}})
        )
    assert "addons.trainer.enabled" in "\n".join(error.value.problems)


@pytest.mark.parametrize("profile", TRAINED)
def test_kueue_can_never_place_a_runtime_pod_on_the_karpenter_pool(synthesized, profile):
    """Kueue matches a flavour on the flavour's own label keys (kueue v0.19.2
    pkg/scheduler/flavorassigner/flavorassigner.go, the node-selector and required-affinity
    checks): the pool's flavour has no group label, so only the runtime's required affinity on
    the pool label keeps a job that named fewer resources (no EFA) off it."""
    config = synthesized.configs[profile]
    flavours = {
        o["metadata"]["name"]: o["spec"].get("nodeLabels", {})
        for o in queue_objects(config)
        if o["kind"] == "ResourceFlavor"
    }
    for runtime in runtimes(synthesized, profile).values():
        pod = node_pod(runtime)
        terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        for name, labels in flavours.items():
            selector_fits = all(labels[key] == value for key, value in pod["nodeSelector"].items() if key in labels)
            affinity_fits = any(
                all(
                    (e["operator"] == "DoesNotExist" and e["key"] not in labels)
                    or (e["operator"] == "In" and labels.get(e["key"]) in e["values"])
                    for e in term["matchExpressions"]
                    if e["key"] in labels or e["operator"] == "DoesNotExist"
                )
                for term in terms
            )
            group = pod["nodeSelector"][NODE_GROUP_LABEL]
            assert (selector_fits and affinity_fits) == (name in ("default", f"group-{group}")), (
                name,
                runtime["metadata"]["name"],
            )
