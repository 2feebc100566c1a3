"""ComputeDomains (Multi-Node NVLink, GB200) at the GPU Operator pin: the CRDs GPU Operator v26.7.0
ships (tests/fixtures/crds/gpu-operator-v26.7.0.json, recorded from NVIDIA/gpu-operator at v26.7.0,
deployments/gpu-operator/crds/) judge what the platform renders, so a field that does not exist at the
pin (an invented nvswitchEnabled, a misspelled computeDomain) fails here, not on a cluster."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from addons.gpu_operator.install import gpu_operator_values
from addons.kueue import KueueConfig
from addons.kueue.install import IMEX_CHANNEL_RESOURCE, manager_configuration
from components.acceptance import ValidationTarget
from components.k8s.compute_domains import CHANNEL_CLAIM_NAME, CHANNEL_DEVICE_CLASS, compute_domain, with_channel
from components.k8s.gpus import claim_template, container_claims, pod_claims
from manifests.checks.nccl import NCCL_JOB, NCCL_NODES, check_nccl
from manifests.render import render
from profiles import load_profile
from profiles.catalog import EFA_RESOURCE, GPU_RESOURCE
from tests.cases import profile_source
from tests.k8s_validation import RECORDED_CRDS, validate_object
from tests.kueue_model import Inadmissible, dra_pod_set_requests
from tests.test_nccl_transport import fixture as nccl_fixture
from tests.test_verify import FIXTURES as VERIFY_FIXTURES

GPUCLUSTER = ("nvidia.com/v1alpha1", "GPUCluster")


def rendered(*, dra: bool) -> dict[str, Any]:
    return gpu_operator_values(dra=dra, service_monitor=True, shared_host_engine=True).model_dump(
        by_alias=True, exclude_none=True
    )


def gpucluster(dra_driver: dict[str, Any]) -> dict[str, Any]:
    """The GPUCluster the chart's templates/gpucluster.yaml renders from values.draDriver (v26.7.0): the
    computeDomains block goes into spec.draDriver.computeDomains as given."""
    return {
        "apiVersion": GPUCLUSTER[0],
        "kind": GPUCLUSTER[1],
        "metadata": {"name": "gpu-cluster"},
        "spec": {"draDriver": dra_driver},
    }


def test_the_recorded_crds_name_their_source():
    recorded = json.loads((RECORDED_CRDS / "gpu-operator-v26.7.0.json").read_text())
    assert (recorded["repository"], recorded["tag"]) == ("NVIDIA/gpu-operator", "v26.7.0")
    paths = {key: entry["source"]["path"] for key, entry in recorded["kinds"].items()}
    assert paths == {
        "nvidia.com/v1alpha1/GPUCluster": "deployments/gpu-operator/crds/nvidia.com_gpuclusters.yaml",
        "resource.nvidia.com/v1beta1/ComputeDomain": (
            "deployments/gpu-operator/crds/resource.nvidia.com_computedomains.yaml"
        ),
    }


def test_dra_mode_turns_compute_domains_on_through_the_gpuclusters_own_field():
    values = rendered(dra=True)
    assert values["draDriver"] == {"computeDomains": {"enabled": True}}
    validate_object(gpucluster(values["draDriver"]), "1.34")


def test_without_dra_there_is_no_dra_driver_block():
    assert "draDriver" not in rendered(dra=False)


@pytest.mark.parametrize(
    "dra_driver",
    [
        # The seed's warning: fields that configure nothing at the pin.
        {"computeDomains": {"enabled": True}, "nvswitchEnabled": True},
        {"computeDomains": {"enabled": True, "graceHopperMode": True}},
        {"computeDomain": {"enabled": True}},
        {"computeDomains": {"enabled": "yes"}},
    ],
)
def test_fields_that_do_not_exist_at_the_pin_are_refused(dra_driver):
    with pytest.raises(jsonschema.ValidationError):
        validate_object(gpucluster(dra_driver), "1.34")


def domain_with(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": "job-cd", "namespace": "vision"},
        "spec": spec,
    }


def test_a_compute_domain_needs_num_nodes_and_a_channel_template_name():
    validate_object(domain_with({"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": "job-channel"}}}), "1.34")
    validate_object(
        domain_with({"numNodes": 2, "channel": {"resourceClaimTemplate": {"name": "c"}, "allocationMode": "All"}}),
        "1.34",
    )
    for bad in (
        {"channel": {"resourceClaimTemplate": {"name": "c"}}},  # numNodes is required at v1beta1
        {"numNodes": 2, "channel": {}},  # so is the template's name
        {"numNodes": 2, "channel": {"resourceClaimTemplate": {"name": "c"}, "allocationMode": "Many"}},
        {"numNodes": 2, "channel": {"resourceClaimTemplate": {"name": "c"}}, "imexChannels": 1},
    ):
        with pytest.raises(jsonschema.ValidationError):
            validate_object(domain_with(bad), "1.34")


def worker_pod_spec() -> dict[str, Any]:
    """A DRA worker as verify's NCCL MPIJob writes it (manifests/checks/nccl.py): a GPU claim."""
    return {
        "containers": [
            {"name": "worker", "image": "example.com/nccl:1", "resources": {"claims": container_claims()}},
        ],
        "resourceClaims": pod_claims(4),
    }


def test_a_jobs_pods_claim_the_channel_its_compute_domain_makes():
    domain = compute_domain("vision", "allreduce", 2)
    validate_object(domain, "1.34")
    assert domain["metadata"] == {"name": "allreduce-compute-domain", "namespace": "vision"}
    # The job's node count, so that status.status says Ready only once each node's IMEX daemon is
    # (components/k8s/compute_domains.py); it holds no pod with the default feature gates.
    assert domain["spec"]["numNodes"] == 2
    original = worker_pod_spec()
    spec = with_channel(original, "allreduce")
    assert original == worker_pod_spec(), "the caller's spec is not changed"
    template = domain["spec"]["channel"]["resourceClaimTemplate"]["name"]
    claims = {claim["name"]: claim["resourceClaimTemplateName"] for claim in spec["resourceClaims"]}
    assert claims == {"gpu": "gpu-4", CHANNEL_CLAIM_NAME: template}
    assert spec["containers"][0]["resources"]["claims"] == [{"name": "gpu"}, {"name": CHANNEL_CLAIM_NAME}]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w", "namespace": "vision"}, "spec": spec}
    validate_object(pod, "1.34")


def test_every_container_claims_the_channel_even_without_a_gpu_claim():
    spec = with_channel({"containers": [{"name": "a", "image": "x:1"}, {"name": "b", "image": "x:1"}]}, "j")
    assert [c["resources"]["claims"] for c in spec["containers"]] == [[{"name": CHANNEL_CLAIM_NAME}]] * 2
    assert spec["resourceClaims"] == [{"name": CHANNEL_CLAIM_NAME, "resourceClaimTemplateName": "j-channel"}]


# The platform's multi-node job on a P6e-GB200 group (the gb200 fixture): verify's NCCL MPIJob with its
# own ComputeDomain, every worker claiming the domain's channel and NCCL told to use multi-node NVLink.


def channel_template_the_controller_makes(domain: dict[str, Any]) -> dict[str, Any]:
    """The ResourceClaimTemplate the ComputeDomain controller creates for a ComputeDomain, reduced to
    what Kueue and the scheduler read: named by spec.channel.resourceClaimTemplate.name, in the
    domain's namespace, one request `channel` of one device of the default-channel class
    (kubernetes-sigs/dra-driver-nvidia-gpu templates/compute-domain-workload-claim-template.tmpl.yaml,
    cmd/compute-domain-controller/resourceclaimtemplate.go; read at v25.8.1 and HEAD). Its opaque
    channel config (domain ID, allocation mode) is left out."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": domain["spec"]["channel"]["resourceClaimTemplate"]["name"],
            "namespace": domain["metadata"]["namespace"],
        },
        "spec": {
            "spec": {
                "devices": {"requests": [{"name": "channel", "exactly": {"deviceClassName": CHANNEL_DEVICE_CLASS}}]}
            }
        },
    }


def nccl_file(profile: str) -> list[dict[str, Any]]:
    return render(load_profile(profile_source(profile)))[f"{NCCL_JOB}.yaml"]


def test_the_gb200_multi_node_job_brings_its_compute_domain_and_claims_its_channel():
    domain, job = nccl_file("gb200")
    assert (domain["kind"], job["kind"]) == ("ComputeDomain", "MPIJob")
    namespace = job["metadata"]["namespace"]
    assert domain == compute_domain(namespace, NCCL_JOB, NCCL_NODES)
    assert domain["spec"]["numNodes"] == job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == NCCL_NODES
    for obj in (domain, job, channel_template_the_controller_makes(domain)):
        validate_object(obj, "1.35")
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    claims = {c["name"]: c["resourceClaimTemplateName"] for c in worker["resourceClaims"]}
    assert claims == {"gpu": "gpu-4", CHANNEL_CLAIM_NAME: domain["spec"]["channel"]["resourceClaimTemplate"]["name"]}
    (container,) = worker["containers"]
    assert container["resources"]["claims"] == [{"name": "gpu"}, {"name": CHANNEL_CLAIM_NAME}]
    # Every EFA interface of the node, as on any EFA group: 4 on P6e-GB200 (cards 1, 5, 9, 13).
    assert container["resources"]["limits"][EFA_RESOURCE] == "4"
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
    forwarded = [launcher[i + 1] for i, arg in enumerate(launcher) if arg == "-x"]
    assert "NCCL_MNNVL_ENABLE=1" in forwarded and "NCCL_DEBUG=INFO" in forwarded


def test_a_job_on_a_group_without_multi_node_nvlink_has_no_compute_domain():
    objects = nccl_file("jark")  # DRA mode, g6e.48xlarge: NVLink stops at the node
    assert [o["kind"] for o in objects] == ["MPIJob"]
    worker = objects[0]["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    assert CHANNEL_CLAIM_NAME not in {c["name"] for c in worker["resourceClaims"]}
    launcher = objects[0]["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
    assert not any("NCCL_MNNVL_ENABLE" in arg for arg in launcher)


def test_kueue_admits_the_channel_claim_only_because_its_class_is_mapped():
    """Kueue v0.19.2 refuses a Workload claiming a DeviceClass no mapping names (tests/kueue_model.py
    cites pkg/dra/claims.go); the platform maps the channel class, and counts a worker's GPUs as ever."""
    domain, job = nccl_file("gb200")
    namespace = job["metadata"]["namespace"]
    templates = {
        t["metadata"]["name"]: t for t in (claim_template(namespace, 4), channel_template_the_controller_makes(domain))
    }
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    mappings = manager_configuration(KueueConfig(), dra=True)["resources"]["deviceClassMappings"]
    assert dra_pod_set_requests(worker, templates, mappings) == {GPU_RESOURCE: 4, IMEX_CHANNEL_RESOURCE: 1}
    with pytest.raises(Inadmissible, match=f"DeviceClass {CHANNEL_DEVICE_CLASS} is not mapped"):
        dra_pod_set_requests(worker, templates, [m for m in mappings if m["name"] == GPU_RESOURCE])


def test_verify_judges_the_gb200_run_by_multi_node_nvlink():
    target = ValidationTarget.for_profile(load_profile(profile_source("gb200")))
    assert target is not None and target.entry.multi_node_nvlink
    table = (VERIFY_FIXTURES / "nccl-good-p5.log").read_text()
    table = table[table.index("# nThread") :]  # the results table; the MNNVL judge reads no threshold
    healthy = check_nccl(nccl_fixture("nccl-tests-mnnvl-healthy-gb200.log") + table, target)
    assert healthy.passed, healthy.detail
    assert "multi-node NVLink (one clique of 8 ranks" in healthy.detail
    # An EFA run, healthy as an EFA run, is not an NVLink run.
    efa = check_nccl((VERIFY_FIXTURES / "nccl-good-p5.log").read_text(), target)
    assert not efa.passed and "no `comm ... MNNVL` line" in efa.detail
