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
from components.k8s.compute_domains import CHANNEL_CLAIM_NAME, compute_domain, with_channel
from components.k8s.gpus import container_claims, pod_claims
from tests.k8s_validation import RECORDED_CRDS, validate_object

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
    domain = compute_domain("vision", "allreduce")
    validate_object(domain, "1.34")
    assert domain["metadata"] == {"name": "allreduce-compute-domain", "namespace": "vision"}
    assert domain["spec"]["numNodes"] == 0  # deprecated; 0 is the pin's advice with DNS-named IMEX daemons
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
