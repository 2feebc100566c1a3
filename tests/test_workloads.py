"""The workloads layer's Kubernetes objects: schema-valid, consistent with the other layers."""

from __future__ import annotations

import copy
import ipaddress
import json
import re
from pathlib import Path

import kubernetes_validate
import pydantic
import pytest
import yaml

from addons.contributions import tenant_gpu_quota
from addons.karpenter.pools import GPU_POOL, node_pools
from components.labels import GPU_TAINT_K8S, NODE_POOL_LABEL
from manifests.render import render
from profiles import load_profile
from profiles.catalog import CATALOG
from profiles.gpus import gpu_capacity
from tests.cases import FIXTURES, SHIPPED, profiles_where
from tests.k8s_validation import validate_object
from tests.netpol import Peer, allowed
from tests.synth_helpers import resources

ALL = SHIPPED + FIXTURES


def objects(synthesized, profile) -> list[dict]:
    return [
        body["manifest"] for body in resources(synthesized.stack(profile, "workloads"), "kubernetes_manifest").values()
    ]


def of_kind(items, kind):
    return [o for o in items if o["kind"] == kind]


@pytest.mark.parametrize("profile", ALL)
def test_every_stack_rendered_object_validates(synthesized, profile):
    version = synthesized.configs[profile].cluster.kubernetes_version
    found = objects(synthesized, profile)
    assert found
    for obj in found:
        validate_object(obj, version)


@pytest.mark.parametrize("profile", ALL)
def test_every_validation_manifest_validates(synthesized, profile):
    config = synthesized.configs[profile]
    files = render(config, image="123456789012.dkr.ecr.us-west-2.amazonaws.com/x/nccl-tests:v1")
    if not config.cluster.gpu_node_groups:
        assert files == {}
        return
    assert set(files) == {
        "00-namespace.yaml",
        "gpu-smoke-test.yaml",
        "topology-check.yaml",
        "container-test.yaml",
        # Two nodes or none: the checked group must run both (jark's keeps one up for notebooks).
        *(["nccl-allreduce.yaml"] if max(g.desired_size for g in config.cluster.gpu_node_groups) >= 2 else []),
        *(
            ["ray-check.yaml"]
            if config.addons.kuberay.enabled
            and config.workloads.tenants
            and not config.addons.gpu_operator.dra
            and max(g.desired_size for g in config.cluster.gpu_node_groups) >= 2
            else []
        ),
        # Lustre over EFA: an EFA file system, an EFA group, and a tenant directory to mount.
        *(
            ["lustre-efa-check.yaml"]
            if config.storage.fsx.enabled
            and config.storage.fsx.efa_enabled
            and config.storage.fsx.data_repository_associations
            and config.workloads.tenants
            and next((g for g in config.cluster.gpu_node_groups if g.efa_enabled), None)
            else []
        ),
        *(["mlflow-tracking-check.yaml"] if config.addons.mlflow.enabled else []),
        # The TrainJob check runs in a tenant's namespace (not in DRA mode: its runtime asks for nvidia.com/gpu).
        *(
            ["torchrun-check.yaml"]
            if config.addons.trainer.enabled and config.workloads.tenants and not config.addons.gpu_operator.dra
            else []
        ),
    }
    for items in files.values():
        for obj in items:
            validate_object(obj, config.cluster.kubernetes_version)
            yaml.safe_load(yaml.safe_dump(obj))  # plain YAML that kubectl can apply


def test_an_invalid_pod_is_caught():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"containerz": []}}
    with pytest.raises(kubernetes_validate.ValidationError, match="'containers' is a required property"):
        validate_object(pod, "1.33")


def test_a_misspelled_crd_field_is_caught(synthesized):
    pool = next(obj for obj in objects(synthesized, "gpu-validation") if obj["kind"] == "NodePool")
    validate_object(pool, "1.33")  # the synthesized pool itself is valid
    misspelled = copy.deepcopy(pool)
    misspelled["spec"]["weigth"] = 1
    with pytest.raises(pydantic.ValidationError, match=r"spec\.weigth\n  Extra inputs are not permitted"):
        validate_object(misspelled, "1.33")


@pytest.mark.parametrize("profile, expected", [("p5-training", 32), ("p5en-training", 16), ("gpu-validation", 1)])
def test_nccl_job_requests_every_efa_interface(synthesized, profile, expected):
    (job,) = render(synthesized.configs[profile])["nccl-allreduce.yaml"]
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]
    assert worker["replicas"] >= 2
    (container,) = worker["template"]["spec"]["containers"]
    instance_type = synthesized.configs[profile].cluster.gpu_node_groups[0].instance_type
    for section in ("requests", "limits"):
        resources_ = container["resources"][section]
        assert resources_["vpc.amazonaws.com/efa"] == str(expected) == str(CATALOG[instance_type].efa_interfaces)
        assert resources_["nvidia.com/gpu"] == str(CATALOG[instance_type].gpu_count)
        assert resources_["hugepages-2Mi"]
    assert {"name": "dshm", "mountPath": "/dev/shm"} in container["volumeMounts"]
    (shm,) = [v for v in worker["template"]["spec"]["volumes"] if v["name"] == "dshm"]
    assert shm["emptyDir"]["medium"] == "Memory"
    # The memory-backed /dev/shm counts against the memory limit: the ranks need room beside it.
    shm_gib = int(shm["emptyDir"]["sizeLimit"].removesuffix("Gi"))
    memory_gib = int(container["resources"]["limits"]["memory"].removesuffix("Gi"))
    assert memory_gib >= shm_gib + 4 * CATALOG[instance_type].gpu_count
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env == {"FI_PROVIDER": "efa", "FI_EFA_FORK_SAFE": "1"}
    assert job["spec"]["slotsPerWorker"] == CATALOG[instance_type].gpu_count


@pytest.mark.parametrize("profile", ALL)
def test_pvcs_live_with_their_consumers(synthesized, profile):
    found = objects(synthesized, profile)
    tenants = {t.name for t in synthesized.configs[profile].workloads.tenants}
    pvs = {o["metadata"]["name"]: o for o in of_kind(found, "PersistentVolume")}
    pvcs = of_kind(found, "PersistentVolumeClaim")
    assert pvcs and len(pvcs) == len(pvs)
    for pvc in pvcs:
        namespace = pvc["metadata"]["namespace"]
        assert namespace in tenants
        pv = pvs[pvc["spec"]["volumeName"]]
        assert pv["spec"]["claimRef"] == {"namespace": namespace, "name": pvc["metadata"]["name"]}
        assert pv["spec"]["storageClassName"] == pvc["spec"]["storageClassName"] == ""  # static, never dynamic


def test_static_volumes_reference_the_storage_layer(synthesized):
    pvs = {o["metadata"]["name"]: o for o in of_kind(objects(synthesized, "p5-training"), "PersistentVolume")}
    fsx = pvs["ml-team-fsx"]["spec"]["csi"]
    assert fsx["driver"] == "fsx.csi.aws.com"
    remote = "${data.terraform_remote_state.cross-stack-reference-input-storage.outputs."
    assert fsx["volumeHandle"].startswith(remote)
    assert set(fsx["volumeAttributes"]) == {"dnsname", "mountname"}
    # The tenant mounts its own directory only (a Lustre fileset mount), not the file system root.
    assert fsx["volumeAttributes"]["mountname"].startswith(remote)
    assert fsx["volumeAttributes"]["mountname"].endswith("}/ml-team")
    assert pvs["ml-team-fsx"]["spec"]["capacity"] == {"storage": "4800Gi"}
    s3 = pvs["ml-team-s3-datasets"]["spec"]
    assert s3["csi"]["driver"] == "s3.csi.aws.com" and s3["csi"]["volumeAttributes"]["bucketName"].startswith(remote)
    assert "prefix ml-team/" in s3["mountOptions"]
    assert "ml-team-fsx" not in {
        o["metadata"]["name"] for o in of_kind(objects(synthesized, "odcr"), "PersistentVolume")
    }


@pytest.mark.parametrize("profile", ALL)
def test_tenant_namespace_guardrails(synthesized, profile):
    found = objects(synthesized, profile)
    for tenant in synthesized.configs[profile].workloads.tenants:
        mine = [o for o in found if o["metadata"].get("namespace") == tenant.name]
        (quota,) = of_kind(mine, "ResourceQuota")
        dra = synthesized.configs[profile].addons.gpu_operator.dra
        gpu_key = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices" if dra else "requests.nvidia.com/gpu"
        assert quota["spec"]["hard"][gpu_key] == str(tenant_gpu_quota(synthesized.configs[profile], tenant))
        assert of_kind(mine, "LimitRange")
        policies = {p["metadata"]["name"]: p["spec"] for p in of_kind(mine, "NetworkPolicy")}
        assert policies["default-deny"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
        assert policies["allow-same-namespace"]["ingress"] == [{"from": [{"podSelector": {}}]}]
        dns = policies["allow-dns"]["egress"][0]
        assert {"protocol": "UDP", "port": 53} in dns["ports"]
        assert dns["to"][0]["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}
        assert_tenant_flows(of_kind(found, "NetworkPolicy"), tenant.name, synthesized.configs[profile])


KUBE_DNS = Peer(namespace="kube-system", labels={"k8s-app": "kube-dns"})


def assert_tenant_flows(policies, tenant: str, config) -> None:
    """The flows a tenant's pods need (DNS, Pod Identity, AWS APIs over HTTPS, its own pods) and
    the ones they must not have (IMDS, other namespaces, plain HTTP or SSH to anywhere)."""
    vpc = ipaddress.ip_network(config.cluster.vpc.cidr)
    node_ip = str(vpc.network_address + 10)

    def egress(peer: Peer, port: int, protocol: str = "TCP") -> bool:
        return allowed(policies, namespace=tenant, direction="Egress", peer=peer, protocol=protocol, port=port)

    must = {
        "DNS over UDP": egress(KUBE_DNS, 53, "UDP"),
        "DNS over TCP": egress(KUBE_DNS, 53),
        "Pod Identity agent": egress(Peer(ip="169.254.170.23"), 80),
        "S3 (gateway endpoint: public ranges)": egress(Peer(ip="52.217.10.20"), 443),
        "STS interface endpoint in the VPC": egress(Peer(ip=node_ip), 443),
        "own pods, any port": egress(Peer(namespace=tenant), 29500),
        "ingress from own pods": allowed(
            policies, namespace=tenant, direction="Ingress", peer=Peer(namespace=tenant), protocol="TCP", port=2222
        ),
        "Prometheus scrapes": allowed(
            policies,
            namespace=tenant,
            direction="Ingress",
            peer=Peer(namespace="monitoring"),
            protocol="TCP",
            port=8080,
        ),
    }
    must_not = {
        "IMDS": egress(Peer(ip="169.254.169.254"), 80),
        "IMDS over 443": egress(Peer(ip="169.254.169.254"), 443),
        "another namespace's pods": egress(Peer(namespace="other-team"), 8080),
        "plain HTTP to the internet": egress(Peer(ip="93.184.216.34"), 80),
        "SSH to a node": egress(Peer(ip=node_ip), 22),
        "kubelet on a node": egress(Peer(ip=node_ip), 10250),
        "ingress from another namespace": allowed(
            policies,
            namespace=tenant,
            direction="Ingress",
            peer=Peer(namespace="other-team"),
            protocol="TCP",
            port=8080,
        ),
    }
    assert [flow for flow, ok in must.items() if not ok] == [], "flows a tenant needs are blocked"
    assert [flow for flow, ok in must_not.items() if ok] == [], "flows a tenant must not have are open"


def test_network_policies_are_enforced_by_the_vpc_cni(synthesized):
    addons = resources(synthesized.stack("gpu-validation", "cluster"), "aws_eks_addon")
    (cni,) = [a for a in addons.values() if a["addon_name"] == "vpc-cni"]
    assert json.loads(cni["configuration_values"]) == {"enableNetworkPolicy": "true"}


def test_tenant_identity_is_scoped_to_its_prefix(synthesized):
    stack = synthesized.stack("gpu-validation", "workloads")
    (association,) = resources(stack, "aws_eks_pod_identity_association").values()
    assert (association["namespace"], association["service_account"]) == ("ml-team", "workload")
    (policy,) = resources(stack, "aws_iam_role_policy").values()
    statements = json.loads(policy["policy"])["Statement"]
    listing = next(s for s in statements if s["Action"] == ["s3:ListBucket"])
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["ml-team/", "ml-team/*"]}}
    objects_ = next(s for s in statements if "s3:GetObject" in s["Action"])
    assert all(resource.endswith("/ml-team/*") for resource in objects_["Resource"])


@pytest.mark.parametrize("profile", profiles_where(lambda c: GPU_POOL in node_pools(c)))
def test_gpu_pool_taint_matches_node_groups_and_gpu_operator(synthesized, profile):
    found = objects(synthesized, profile)
    pools = {o["metadata"]["name"]: o for o in of_kind(found, "NodePool")}
    gpu_claim = pools["gpu"]["spec"]["template"]
    assert gpu_claim["spec"]["taints"] == [GPU_TAINT_K8S]
    assert gpu_claim["metadata"]["labels"] == {NODE_POOL_LABEL: "gpu"}
    assert "taints" not in pools["cpu"]["spec"]["template"]["spec"]
    for group in resources(synthesized.stack(profile, "cluster"), "aws_eks_node_group").values():
        if group["ami_type"].endswith("NVIDIA"):
            (taint,) = group["taint"]
            assert (taint["key"], taint["value"]) == (GPU_TAINT_K8S["key"], GPU_TAINT_K8S["value"])
    operator = next(
        r
        for r in resources(synthesized.stack(profile, "addons"), "helm_release").values()
        if r["name"] == "gpu-operator"
    )
    tolerations = yaml.safe_load(operator["values"][0])["daemonsets"]["tolerations"]
    assert any(
        t["key"] == GPU_TAINT_K8S["key"] and t["operator"] == "Exists" and t["effect"] == GPU_TAINT_K8S["effect"]
        for t in tolerations
    )


def test_karpenter_node_class_wiring(synthesized):
    node_classes = of_kind(objects(synthesized, "gpu-validation"), "EC2NodeClass")
    assert sorted(c["metadata"]["name"] for c in node_classes) == ["default", "gpu"]
    for node_class in node_classes:
        spec = node_class["spec"]
        assert spec["role"].startswith("${data.terraform_remote_state.cross-stack-reference-input-addons.")
        assert spec["securityGroupSelectorTerms"][0]["id"].startswith(
            "${data.terraform_remote_state.cross-stack-reference-input-cluster."
        )
        assert spec["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "gpu-validation"}}]
        assert spec["metadataOptions"]["httpTokens"] == "required"
    pools = {o["metadata"]["name"]: o for o in of_kind(objects(synthesized, "gpu-validation"), "NodePool")}
    assert pools["gpu"]["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "gpu"
    assert pools["cpu"]["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "default"
    gpu_req = {r["key"]: r["values"] for r in pools["gpu"]["spec"]["template"]["spec"]["requirements"]}
    assert gpu_req["node.kubernetes.io/instance-type"] == ["g6.xlarge", "g6.2xlarge", "g6.4xlarge", "g6e.xlarge"]
    assert pools["gpu"]["spec"]["disruption"]["consolidationPolicy"] == "WhenEmpty"
    assert pools["gpu"]["spec"]["limits"] == {"nvidia.com/gpu": "8"}


def test_dra_claim_templates_only_in_dra_mode(synthesized):
    claims = of_kind(objects(synthesized, "jark"), "ResourceClaimTemplate")
    for tenant in synthesized.configs["jark"].workloads.tenants:
        names = sorted(c["metadata"]["name"] for c in claims if c["metadata"]["namespace"] == tenant.name)
        assert names == ["gpu-1", "gpu-8"], tenant.name
    request = claims[0]["spec"]["spec"]["devices"]["requests"][0]
    assert claims[0]["apiVersion"] == "resource.k8s.io/v1"
    assert set(request) == {"name", "exactly"} and request["exactly"]["deviceClassName"] == "gpu.nvidia.com"
    assert not of_kind(objects(synthesized, "p5-training"), "ResourceClaimTemplate")


@pytest.mark.parametrize("profile", ALL)
def test_workloads_layer_uses_only_the_providers_it_needs(synthesized, profile):
    stack = synthesized.stack(profile, "workloads")
    assert set(stack["provider"]) == set(stack["terraform"]["required_providers"]) == {"aws", "kubernetes"}
    (kubernetes,) = stack["provider"]["kubernetes"]
    assert kubernetes["exec"][0]["args"][:2] == ["eks", "get-token"]


def test_gpu_pool_nodes_are_never_replaced_for_drift_while_busy(synthesized):
    pools = {o["metadata"]["name"]: o for o in of_kind(objects(synthesized, "gpu-validation"), "NodePool")}
    disruption = pools["gpu"]["spec"]["disruption"]
    assert disruption["consolidationPolicy"] == "WhenEmpty"
    assert {"nodes": "0", "reasons": ["Drifted"]} in disruption["budgets"]
    assert "budgets" not in pools["cpu"]["spec"]["disruption"]  # CPU nodes may roll to new AMIs


# ------------------------------------------------------------------ a tenant's first multi-node job


def sample_worker(name: str, gpus: int, efa: int) -> dict:
    """A worker written like the public training samples (AWS's FSDP and NCCL examples): only GPUs
    and EFA interfaces, as limits; nothing about CPU or memory."""
    limits = {"nvidia.com/gpu": str(gpus), **({"vpc.amazonaws.com/efa": str(efa)} if efa else {})}
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "trainer", "resources": {"limits": limits}}]}}


def _tenant_objects(synthesized, profile: str, tenant: str, kind: str) -> list[dict]:
    return [
        b["manifest"]
        for b in resources(synthesized.stack(profile, "workloads"), "kubernetes_manifest").values()
        if b["manifest"].get("kind") == kind and b["manifest"]["metadata"].get("namespace") == tenant
    ]


@pytest.mark.parametrize("profile", SHIPPED)
def test_a_two_node_job_like_the_public_samples_is_admitted_without_an_oom_sized_limit(synthesized, profile):
    from tests.admission import admit

    config = synthesized.configs[profile]
    group = max(config.cluster.gpu_node_groups, key=lambda g: (g.efa_enabled, g.catalog_entry.gpu_count))
    entry = group.catalog_entry
    efa = entry.efa_interfaces if group.efa_enabled else 0
    for tenant in config.workloads.tenants:
        workers = [sample_worker(f"worker-{i}", entry.gpu_count, efa) for i in range(2)]
        admitted = admit(
            workers,
            limit_ranges=_tenant_objects(synthesized, profile, tenant.name, "LimitRange"),
            quotas=_tenant_objects(synthesized, profile, tenant.name, "ResourceQuota"),
        )
        assert admitted.refused is None, admitted.refused
        for pod in admitted.pods:
            limits = pod["spec"]["containers"][0]["resources"]["limits"]
            assert "memory" not in limits and "cpu" not in limits, limits  # nothing the sample did not ask for
        # A worker that asks for most of a node's CPUs, without a limit, is admitted too.
        big = sample_worker("cpu-heavy", entry.gpu_count, efa)
        big["spec"]["containers"][0]["resources"]["requests"] = {"cpu": str(entry.vcpus // 2)}
        assert (
            admit(
                [big],
                limit_ranges=_tenant_objects(synthesized, profile, tenant.name, "LimitRange"),
                quotas=_tenant_objects(synthesized, profile, tenant.name, "ResourceQuota"),
            ).refused
            is None
        )


def test_the_admission_model_refuses_what_the_old_tenant_defaults_refused():
    """The old defaults: quota 8 GPUs / 64 CPUs, and a LimitRange default limit of 2 CPU / 4Gi."""
    from tests.admission import admit

    old_range = {
        "spec": {
            "limits": [
                {
                    "type": "Container",
                    "defaultRequest": {"cpu": "250m", "memory": "512Mi"},
                    "default": {"cpu": "2", "memory": "4Gi"},
                }
            ]
        }
    }
    old_quota = {
        "metadata": {"name": "compute"},
        "spec": {"hard": {"requests.cpu": "64", "requests.memory": "256Gi", "requests.nvidia.com/gpu": "8"}},
    }
    two_nodes = [sample_worker(f"worker-{i}", 8, 32) for i in range(2)]
    refused = admit(two_nodes, limit_ranges=[old_range], quotas=[old_quota])
    assert refused.refused is not None and "requests.nvidia.com/gpu 16 > 8" in refused.refused
    assert refused.pods[0]["spec"]["containers"][0]["resources"]["limits"]["memory"] == "4Gi"  # OOM-sized
    big = sample_worker("cpu-heavy", 8, 32)
    big["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "96"}
    assert "above its limit" in (admit([big], limit_ranges=[old_range], quotas=[]).refused or "")


def test_tenant_gpu_quota_defaults_to_the_profiles_capacity_without_kueue():
    config = load_profile("p5-training")
    (group,) = config.cluster.gpu_node_groups
    expected = group.max_size * 8 + (config.workloads.gpu_pool.gpu_limit if config.addons.karpenter.enabled else 0)
    assert gpu_capacity(config) == expected >= 16
    from profiles import validate_profile
    from tests.test_profiles import changed

    doc = yaml.safe_load((Path(__file__).resolve().parents[1] / "profiles" / "p5-training.yaml").read_text())
    unqueued = validate_profile(changed(doc, addons__kueue={"enabled": False}))
    assert all(tenant_gpu_quota(unqueued, t) == expected for t in unqueued.workloads.tenants)
    # With Kueue, what the tenant's queue can hold (tests/test_shares.py): less than everything.
    assert all(tenant_gpu_quota(config, t) < expected for t in config.workloads.tenants)


def _mime_parts(document: str) -> dict[str, str]:
    import email

    message = email.message_from_string(document)
    return {part.get_content_type(): part.get_payload() for part in message.walk() if not part.is_multipart()}


WITH_KARPENTER_AND_GPU_GROUPS = profiles_where(lambda c: GPU_POOL in node_pools(c) and bool(c.cluster.gpu_node_groups))


@pytest.mark.parametrize("profile", WITH_KARPENTER_AND_GPU_GROUPS)
def test_karpenter_gpu_nodes_get_the_managed_groups_node_set_up(synthesized, profile):
    import base64

    templates = resources(synthesized.stack(profile, "cluster"), "aws_launch_template")
    managed = [_mime_parts(base64.b64decode(t["user_data"]).decode()) for t in templates.values() if "user_data" in t]
    assert managed, "no GPU launch template"
    classes = {o["metadata"]["name"]: o for o in objects(synthesized, profile) if o["kind"] == "EC2NodeClass"}
    pools = {o["metadata"]["name"]: o for o in objects(synthesized, profile) if o["kind"] == "NodePool"}
    gpu_class = classes[pools["gpu"]["spec"]["template"]["spec"]["nodeClassRef"]["name"]]["spec"]
    # As Terraform renders it: the JSON escapes the script's own ${VAR}s as $${VAR}.
    karpenter = _mime_parts(gpu_class["userData"].replace("$${", "${").replace("%%{", "%{"))

    def script(text: str) -> str:  # the LNet-over-EFA switch follows each group's EFA setting
        return re.sub(r"^LUSTRE_OVER_EFA=[01]$", "LUSTRE_OVER_EFA=?", text, flags=re.MULTILINE)

    for parts in managed:
        assert script(karpenter["text/x-shellscript"]) == script(parts["text/x-shellscript"])  # one script
        managed_config = yaml.safe_load(parts["application/node.eks.aws"])["spec"]
        karpenter_config = yaml.safe_load(karpenter["application/node.eks.aws"])["spec"]
        assert karpenter_config["featureGates"] == managed_config["featureGates"]  # FastImagePull
    assert gpu_class["instanceStorePolicy"] == "RAID0"  # Karpenter's own instance-store RAID0
    assert "userData" not in classes[pools["cpu"]["spec"]["template"]["spec"]["nodeClassRef"]["name"]]["spec"]


def test_some_profiles_run_karpenter_beside_gpu_groups():
    assert WITH_KARPENTER_AND_GPU_GROUPS


# Karpenter v1's NodePool CRD (charts/karpenter-crd at 1.14.1, spec.template.spec.expireAfter):
# a duration in s, m, h, or "Never".
KARPENTER_EXPIRE_AFTER = re.compile(r"^(([0-9]+(s|m|h))+|Never)$")


def test_gpu_nodes_never_expire_under_a_job_by_default(synthesized):
    """Karpenter's expiration is forceful (it drains a node at expireAfter whatever runs there): the
    GPU pool's nodes never expire unless the profile says so; they leave when empty."""
    pools = {o["metadata"]["name"]: o for o in objects(synthesized, "p5-training") if o["kind"] == "NodePool"}
    gpu, cpu = pools["gpu"]["spec"], pools["cpu"]["spec"]
    assert gpu["template"]["spec"]["expireAfter"] == "Never"
    assert gpu["disruption"]["consolidationPolicy"] == "WhenEmpty"
    assert cpu["template"]["spec"]["expireAfter"].endswith("h")
    for spec in (gpu, cpu):
        assert KARPENTER_EXPIRE_AFTER.match(spec["template"]["spec"]["expireAfter"])
    chosen = load_profile("p5-training").model_copy(deep=True)
    assert chosen.workloads.gpu_pool.expire_after_hours is None


@pytest.mark.parametrize("profile", profiles_where(lambda c: c.addons.karpenter.enabled))
def test_karpenter_nodes_run_the_same_ami_release_as_the_managed_groups(synthesized, profile):
    release = synthesized.configs[profile].cluster.ami_release_version
    expected = f"al2023@v{release.rsplit('-', 1)[1]}" if release else "al2023@latest"
    for node_class in of_kind(objects(synthesized, profile), "EC2NodeClass"):
        assert node_class["spec"]["amiSelectorTerms"] == [{"alias": expected}]
