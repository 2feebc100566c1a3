"""The journey "a tenant's first multi-node job", walked across its seams with the job verify runs
as the first tenant (the NCCL MPIJob, written like docs/queues.md's example):

- Pod Security: the tenant namespace enforces baseline; the MPI Operator's pods (sshd as root,
  huge pages, a memory-backed /dev/shm, EFA devices) must pass it (tests/pod_security.py, from
  the upstream checks);
- ResourceQuota and LimitRange admit the launcher and both workers (tests/admission.py);
- NetworkPolicies let the launcher reach the workers' sshd, the workers call back to mpirun's
  daemons and to each other (NCCL's TCP bootstrap), and everyone reach DNS (tests/netpol.py);
- Kueue gives the job the tenant's queue without a queue name (tests/test_queues.py), and admits
  it from the tenant's share: with the device plugin it counts nvidia.com/gpu, in DRA mode the
  devices of the workers' claim templates (tests/kueue_model.py).
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from addons.kueue import DEFINITION as KUEUE
from addons.kueue.queues import queue_objects
from components.acceptance import ValidationTarget
from components.k8s.compute_domains import COMPUTE_DOMAIN_KIND
from components.k8s.mpi import JOB_NAME_LABEL, JOB_ROLE_LABEL, LAUNCHER_ROLE, MPIJOB_KIND, WORKER_ROLE
from components.k8s.tenant import SharedStorage, TenantProps, tenant_objects
from manifests.checks.nccl import NCCL_JOB
from manifests.launch import MPIRUN
from manifests.render import render
from profiles import validate_profile
from profiles.catalog import GPU_RESOURCE
from profiles.gpus import dra_claim_counts
from tests.admission import admit
from tests.cases import FIXTURE_PROFILES, FIXTURES, SHIPPED, profile_config
from tests.kueue_model import Cohort, workload_requests
from tests.netpol import Peer, allowed
from tests.pod_security import baseline_problems
from tests.synth_helpers import resources
from tests.test_compute_domains import channel_template_the_controller_makes
from tests.test_namespaces import created_namespaces
from tests.test_profiles import changed
from tests.test_queues import kueue_manages
from tests.test_workloads import KUBE_DNS, _tenant_objects

ALL = SHIPPED + FIXTURES
# Ports the MPI Operator's job uses besides sshd: PRRTE's daemons call back to mpirun on an
# ephemeral port, and NCCL's bootstrap listens on one on every rank.
SSH_PORT, EPHEMERAL_PORT = 22, 45123


def tenant_profiles() -> list[str]:
    """Profiles whose checked group runs the two nodes the job needs (verify fails the others at
    once: test_verify's test_a_tenant_queue_that_cannot_hold_a_node_fails_the_gate_instead_of_waiting)."""
    return [p for p in ALL if profile_config(p).workloads.tenants and f"{NCCL_JOB}.yaml" in render(profile_config(p))]


def test_every_shipped_profile_runs_the_multi_node_check():
    assert set(SHIPPED) <= set(tenant_profiles())


def nccl_job(config) -> dict:
    (job,) = (o for o in render(config)[f"{NCCL_JOB}.yaml"] if o["kind"] == MPIJOB_KIND)
    return job


def controller_templates(config) -> dict[str, dict]:
    """The channel ResourceClaimTemplates the ComputeDomain controller makes for the check's
    ComputeDomains (multi-node NVLink groups), as tests/test_compute_domains.py models them."""
    domains = [o for o in render(config)[f"{NCCL_JOB}.yaml"] if o["kind"] == COMPUTE_DOMAIN_KIND]
    made = [channel_template_the_controller_makes(domain) for domain in domains]
    return {t["metadata"]["name"]: t for t in made}


def pod(job: dict, role: str, index: int = 0) -> dict:
    """One pod of the MPIJob as the operator creates it: the template plus its role labels."""
    template = job["spec"]["mpiReplicaSpecs"][role.capitalize()]["template"]
    labels = {JOB_NAME_LABEL: job["metadata"]["name"], JOB_ROLE_LABEL: role}
    return {
        "metadata": {"name": f"{NCCL_JOB}-{role}-{index}", "labels": labels},
        "spec": copy.deepcopy(template["spec"]),
    }


def both_ways(policies: list[dict], tenant: str, source: dict, target: dict, port: int) -> bool:
    """Does the tenant's NetworkPolicy set let `source` open TCP `port` on `target` (egress of the
    one and ingress of the other), both pods of the tenant's namespace?"""
    out = allowed(
        policies,
        namespace=tenant,
        direction="Egress",
        peer=Peer(namespace=tenant, labels=target["metadata"]["labels"]),
        protocol="TCP",
        port=port,
        pod_labels=source["metadata"]["labels"],
    )
    into = allowed(
        policies,
        namespace=tenant,
        direction="Ingress",
        peer=Peer(namespace=tenant, labels=source["metadata"]["labels"]),
        protocol="TCP",
        port=port,
        pod_labels=target["metadata"]["labels"],
    )
    return out and into


def reaches_dns(policies: list[dict], tenant: str, pod_: dict) -> bool:
    return allowed(
        policies,
        namespace=tenant,
        direction="Egress",
        peer=KUBE_DNS,
        protocol="UDP",
        port=53,
        pod_labels=pod_["metadata"]["labels"],
    )


def queued_by_default(config, namespace: dict, framework: str) -> bool:
    """Kueue (when on) gives the tenant's job of this kind its namespace's LocalQueue."""
    tenant = namespace["metadata"]["name"]
    local = {
        o["metadata"]["name"]
        for o in queue_objects(config)
        if o["kind"] == "LocalQueue" and o["metadata"]["namespace"] == tenant
    }
    return kueue_manages(framework, namespace["metadata"]["labels"], local)


def test_the_baseline_evaluator_refuses_what_a_naive_reading_admits():
    """Baseline admits root, huge pages and EFA devices, but not one capability beyond the
    runtime's default set: an MPI worker that adds IPC_LOCK (as some EFA samples do, for locked
    memory) is refused, although "baseline allows root" would pass it."""
    worker = {"containers": [{"name": "worker", "image": "x", "securityContext": {"runAsUser": 0}}]}
    assert baseline_problems(worker) == []
    locked = copy.deepcopy(worker)
    locked["containers"][0]["securityContext"]["capabilities"] = {"add": ["IPC_LOCK"]}
    assert baseline_problems(locked) == ["container worker adds IPC_LOCK"]
    for broken in (
        {"hostNetwork": True},
        {"volumes": [{"name": "dev", "hostPath": {"path": "/dev"}}]},
        {"securityContext": {"seccompProfile": {"type": "Unconfined"}}},
        {"securityContext": {"sysctls": [{"name": "kernel.shmmax", "value": "1"}]}},
        {"initContainers": [{"name": "setup", "securityContext": {"privileged": True}}]},
    ):
        assert baseline_problems({**worker, **broken}), broken
    # The default set may be added back, and a safe sysctl set.
    allowed_spec = copy.deepcopy(worker)
    allowed_spec["containers"][0]["securityContext"]["capabilities"] = {"add": ["SYS_CHROOT", "NET_BIND_SERVICE"]}
    allowed_spec["securityContext"] = {"sysctls": [{"name": "net.ipv4.ip_local_port_range", "value": "1024 65000"}]}
    assert baseline_problems(allowed_spec) == []


@pytest.mark.parametrize("profile", tenant_profiles())
def test_verifys_multi_node_job_runs_as_the_first_tenant(synthesized, profile):
    config = synthesized.configs[profile]
    job = nccl_job(config)
    tenant = config.workloads.tenants[0].name
    dra = config.addons.gpu_operator.dra
    if dra and job["metadata"]["namespace"] != tenant:
        pytest.skip("DRA mode without a whole-node claim template in the tenant: covered below")
    assert job["metadata"]["namespace"] == tenant
    namespace, policies = created_namespaces(synthesized, profile)[tenant]
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
    launcher = pod(job, LAUNCHER_ROLE)
    workers = [pod(job, WORKER_ROLE, i) for i in range(job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"])]
    assert len(workers) == 2

    for each in (launcher, *workers):
        assert baseline_problems(each["spec"]) == [], each["metadata"]["name"]

    admitted = admit(
        [launcher, *workers],
        limit_ranges=_tenant_objects(synthesized, profile, tenant, "LimitRange"),
        quotas=_tenant_objects(synthesized, profile, tenant, "ResourceQuota"),
    )
    assert admitted.refused is None, admitted.refused

    def flow(source: dict, target: dict, port: int) -> bool:
        return both_ways(policies, tenant, source, target, port)

    assert flow(launcher, workers[0], SSH_PORT) and flow(launcher, workers[1], SSH_PORT)
    assert flow(workers[0], launcher, EPHEMERAL_PORT) and flow(workers[1], launcher, EPHEMERAL_PORT)
    assert flow(workers[0], workers[1], EPHEMERAL_PORT) and flow(workers[1], workers[0], EPHEMERAL_PORT)
    assert all(reaches_dns(policies, tenant, each) for each in (launcher, *workers))
    if KUEUE.enabled(config):
        assert queued_by_default(config, namespace, "kubeflow.org/mpijob")
        workload, preempted = admitted_by_the_queue(synthesized, profile, tenant, job)
        assert workload.flavor is not None and preempted == []
        assert workload.requests[GPU_RESOURCE] == 2 * max(g.catalog_entry.gpu_count for g in groups_of(config))


def groups_of(config) -> list:
    return [g for g in config.cluster.gpu_node_groups if g.desired_size >= 2]


def kueue_configuration(synthesized, profile: str) -> dict:
    release = next(
        body
        for body in resources(synthesized.stack(profile, "addons"), "helm_release").values()
        if body["name"] == "kueue"
    )
    return yaml.safe_load(yaml.safe_load(release["values"][0])["managerConfig"]["controllerManagerConfigYaml"])


def admitted_by_the_queue(synthesized, profile: str, tenant: str, job: dict):
    """The MPIJob's Workload (launcher and workers as its pod sets), counted as Kueue counts it with
    the platform's Configuration and the tenant's LimitRange and claim templates, then admitted (or
    not) by the tenant's ClusterQueue in the cohort, all idle."""
    specs = job["spec"]["mpiReplicaSpecs"]
    pod_sets = [(spec["template"], spec.get("replicas", 1)) for spec in specs.values()]
    templates = {
        t["metadata"]["name"]: t for t in _tenant_objects(synthesized, profile, tenant, "ResourceClaimTemplate")
    } | controller_templates(synthesized.configs[profile])
    requests = workload_requests(
        pod_sets,
        limit_ranges=_tenant_objects(synthesized, profile, tenant, "LimitRange"),
        claim_templates=templates,
        mappings=kueue_configuration(synthesized, profile)["resources"].get("deviceClassMappings", []),
    )
    # The queues as planned (a Capacity Block's flavour as its window opens it: before the block
    # starts the synthesized quota is 0, and the job waits).
    queues = [o for o in queue_objects(synthesized.configs[profile]) if o["kind"] == "ClusterQueue"]
    workload, preempted = Cohort.of(queues).admit(tenant, job["metadata"]["name"], requests)
    assert workload is not None, (requests, queues)
    return workload, preempted


@pytest.mark.parametrize("counts", [[1, 8], [8, 2]])
def test_in_dra_mode_the_job_claims_what_its_namespace_offers(counts):
    """In DRA mode a worker claims a whole node's GPUs through a ResourceClaimTemplate, which must
    exist in the namespace the job runs in. The tenant's namespace has one per `dra_gpu_counts`
    (made by the workloads layer's tenant objects), which always hold a whole node's count
    (g6e.48xlarge has 8 GPUs): a profile without it is refused (tests/test_dra.py)."""
    doc = yaml.safe_load((FIXTURE_PROFILES / "jark.yaml").read_text())
    doc = changed(doc, cluster__gpu_node_groups__0__desired_size=2, workloads__dra_gpu_counts=counts)
    config = validate_profile(doc)
    job = nccl_job(config)
    namespace = job["metadata"]["namespace"]
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    wanted = {claim["resourceClaimTemplateName"] for claim in worker["resourceClaims"]}
    storage = SharedStorage(
        region=config.region,
        fsx_file_system_id=None,
        fsx_dns_name=None,
        fsx_mount_name=None,
        fsx_capacity_gib=0,
        fsx_tenant_directories=False,
        bucket_names={},
    )
    tenants = [
        o
        for tenant in config.workloads.tenants
        for o in tenant_objects(
            TenantProps(config=tenant, storage=storage, gpu_quota=8, dra_gpu_counts=dra_claim_counts(config))
        )
    ]
    rendered = [o for objects in render(config).values() for o in objects]
    offered = {
        o["metadata"]["name"]
        for o in rendered + tenants
        if o["kind"] == "ResourceClaimTemplate" and o["metadata"]["namespace"] == namespace
    }
    assert wanted <= offered, (namespace, wanted, offered)
    assert (namespace == config.workloads.tenants[0].name) is (8 in counts)


def ray_pods(job: dict) -> tuple[dict, list[dict], dict]:
    """The RayJob's pods as KubeRay 1.7 labels them (ray-operator/controllers/ray/common/pod.go:
    ray.io/node-type head|worker, ray.io/cluster), and its submitter Job's pod (batch's job-name)."""
    cluster = job["spec"]["rayClusterSpec"]
    name = f"{job['metadata']['name']}-raycluster"
    head = {
        "metadata": {"name": f"{name}-head", "labels": {"ray.io/node-type": "head", "ray.io/cluster": name}},
        "spec": copy.deepcopy(cluster["headGroupSpec"]["template"]["spec"]),
    }
    (group,) = cluster["workerGroupSpecs"]
    workers = [
        {
            "metadata": {
                "name": f"{name}-worker-{i}",
                "labels": {"ray.io/node-type": "worker", "ray.io/cluster": name},
            },
            "spec": copy.deepcopy(group["template"]["spec"]),
        }
        for i in range(group["replicas"])
    ]
    submitter = {
        "metadata": {"name": f"{job['metadata']['name']}-submitter", "labels": {"job-name": job["metadata"]["name"]}},
        "spec": {"containers": [{"name": "ray-job-submitter", "image": "x", "resources": {}}]},
    }
    return head, workers, submitter


@pytest.mark.parametrize("profile", [p for p in tenant_profiles() if "ray-check.yaml" in render(profile_config(p))])
def test_verifys_ray_job_runs_as_the_first_tenant(synthesized, profile):
    """The RayJob check, as the tenant's first Ray job: admitted by baseline, quota and LimitRange;
    the submitter reaches the head's dashboard (8265), the workers its GCS (6379) and each other,
    the head the workers; the KubeRay operator (its own namespace) reaches the head's dashboard;
    Kueue gives it the tenant's queue."""
    from addons.kuberay.access import DASHBOARD_PORT, RAY_NAMESPACE

    config = synthesized.configs[profile]
    tenant = config.workloads.tenants[0].name
    _, job = render(config)["ray-check.yaml"]
    assert job["metadata"]["namespace"] == tenant
    namespace, policies = created_namespaces(synthesized, profile)[tenant]
    head, workers, submitter = ray_pods(job)
    for each in (head, *workers):
        assert baseline_problems(each["spec"]) == [], each["metadata"]["name"]
    admitted = admit(
        [head, *workers, submitter],
        limit_ranges=_tenant_objects(synthesized, profile, tenant, "LimitRange"),
        quotas=_tenant_objects(synthesized, profile, tenant, "ResourceQuota"),
    )
    assert admitted.refused is None, admitted.refused

    def flow(source: dict, target: dict, port: int) -> bool:
        return both_ways(policies, tenant, source, target, port)

    assert flow(submitter, head, DASHBOARD_PORT)
    assert all(flow(worker, head, 6379) and flow(head, worker, EPHEMERAL_PORT) for worker in workers)
    assert flow(workers[0], workers[1], EPHEMERAL_PORT) and flow(workers[1], workers[0], EPHEMERAL_PORT)
    _, operator_policies = created_namespaces(synthesized, profile)[RAY_NAMESPACE]
    operator = Peer(namespace=RAY_NAMESPACE, labels={"app.kubernetes.io/name": "kuberay-operator"})
    assert allowed(
        operator_policies,
        namespace=RAY_NAMESPACE,
        direction="Egress",
        peer=Peer(namespace=tenant, labels=head["metadata"]["labels"]),
        protocol="TCP",
        port=DASHBOARD_PORT,
        pod_labels=operator.labels,
    )
    assert allowed(
        policies,
        namespace=tenant,
        direction="Ingress",
        peer=operator,
        protocol="TCP",
        port=DASHBOARD_PORT,
        pod_labels=head["metadata"]["labels"],
    )
    if KUEUE.enabled(config):
        assert queued_by_default(config, namespace, "ray.io/rayjob")


def test_the_guides_ray_job_uses_the_image_verify_runs():
    """docs/queues.md's RayJob and verify's check run the same pinned Ray image (profiles/versions.py)."""
    import re
    from pathlib import Path

    from profiles.versions import RAY_IMAGE

    guide = (Path(__file__).resolve().parents[1] / "docs" / "queues.md").read_text()
    assert set(re.findall(r"image: (rayproject/ray:\S+)", guide)) == {RAY_IMAGE}


FAKE_RAY = '''
"""Enough of Ray for the check's script: placement groups, tasks scheduled into a bundle, and the
rule Ray applies when a task is placed in a bundle (python/ray/util/placement_group.py,
_validate_resource_shape: every resource the task asks for, its default CPU of 1 included, must
fit the bundle), then one node per bundle (STRICT_SPREAD)."""
import os

_gpu_ids = []


def init():
    pass


class _Group:
    def __init__(self, bundles, strategy):
        assert strategy == "STRICT_SPREAD"
        self.bundle_specs = bundles

    def ready(self):
        return "ready"


def get(value, timeout=None):
    return [v() for v in value] if isinstance(value, list) else value


def get_gpu_ids():
    return list(_gpu_ids)


def remote(num_gpus=0, num_cpus=1):
    def wrap(function):
        class Task:
            def options(self, scheduling_strategy):
                shape = {"CPU": num_cpus, "GPU": num_gpus}
                bundle = scheduling_strategy.placement_group.bundle_specs[scheduling_strategy.index]
                for name, amount in shape.items():
                    if amount and bundle.get(name, 0) < amount:
                        raise ValueError(f"Cannot schedule {function.__name__} with the placement group: "
                                         f"the resource shape {shape} cannot fit into any bundles")
                index = scheduling_strategy.index

                class Call:
                    def remote(self):
                        def run():
                            _gpu_ids[:] = range(num_gpus)
                            os.environ["NODE_NAME"] = f"node-{index}"
                            return function()
                        return run
                return Call()
        return Task()
    return wrap
'''
FAKE_RAY_UTIL = {
    "placement_group.py": (
        "from ray import _Group\n\ndef placement_group(bundles, strategy):\n    return _Group(bundles, strategy)\n"
    ),
    "scheduling_strategies.py": (
        "class PlacementGroupSchedulingStrategy:\n"
        "    def __init__(self, placement_group, placement_group_bundle_index):\n"
        "        self.placement_group, self.index = placement_group, placement_group_bundle_index\n"
    ),
}


def run_ray_script(tmp_path, script: str, nodes: int, gpus: int) -> subprocess.CompletedProcess:
    package = tmp_path / "ray"
    (package / "util").mkdir(parents=True)
    (package / "__init__.py").write_text(FAKE_RAY)
    (package / "util" / "__init__.py").write_text("")
    for name, text in FAKE_RAY_UTIL.items():
        (package / "util" / name).write_text(text)
    (tmp_path / "check.py").write_text(script)
    return subprocess.run(
        [sys.executable, str(tmp_path / "check.py"), str(nodes), str(gpus)],
        env={"PYTHONPATH": str(tmp_path), "PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_ray_checks_tasks_fit_their_bundles(tmp_path):
    """A task asks for a CPU by default: a GPU-only bundle cannot hold it and Ray refuses the task
    (the first version of the script did exactly that); the shipped script's bundles hold it."""
    from addons.kuberay.checks import RAY_CHECK_SCRIPT, check_ray

    done = run_ray_script(tmp_path / "now", RAY_CHECK_SCRIPT, 2, 8)
    assert done.returncode == 0, done.stderr
    p5 = ValidationTarget.for_profile(profile_config("p5-training"))
    assert check_ray(done.stdout, p5).passed, done.stdout
    gpu_only = RAY_CHECK_SCRIPT.replace('{"CPU": 1, "GPU": gpus}', '{"GPU": gpus}')
    assert gpu_only != RAY_CHECK_SCRIPT
    refused = run_ray_script(tmp_path / "before", gpu_only, 2, 8)
    assert refused.returncode != 0 and "cannot fit into any bundles" in refused.stderr


def run_launcher_wait(tmp_path, hosts: list[str], port: int, command: list[str]) -> subprocess.CompletedProcess:
    from components.k8s.mpi import HOSTFILE, SSH_PORT, WAIT_FOR_WORKERS, WAIT_MINUTES

    tmp_path.mkdir(parents=True)
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("".join(f"{host} slots=8\n" for host in hosts))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # getent resolves the names listed in `resolvable` only, as cluster DNS does once a worker exists.
    (bin_dir / "getent").write_text('#!/bin/sh\ngrep -qx "$2" "$RESOLVABLE" && echo "127.0.0.1 $2"\n')
    (bin_dir / "getent").chmod(0o755)
    (tmp_path / "resolvable").write_text("".join(f"{h}\n" for h in hosts if "missing" not in h))
    script = (
        WAIT_FOR_WORKERS.replace(HOSTFILE, str(hostfile))
        .replace(f"$host/{SSH_PORT}", f"127.0.0.1/{port}")
        .replace(f"SECONDS + {WAIT_MINUTES * 60}", "SECONDS + 2")
        .replace("sleep 5", "sleep 0.2")
    )
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "RESOLVABLE": str(tmp_path / "resolvable")}
    return subprocess.run(
        ["bash", "-c", script, "wait-for-workers", *command], env=env, capture_output=True, text=True, timeout=60
    )


def test_the_launcher_waits_for_every_worker_to_accept_ssh_then_runs_mpirun(tmp_path):
    """Under Kueue the MPI Operator creates the launcher with the workers (WaitForWorkersReady does
    not hold for a suspended job): the launcher's command waits until every hostfile entry resolves
    and accepts connections on the SSH port, then runs mpirun; a worker that never comes fails it."""
    import socket

    job = nccl_job(profile_config("p5-training"))
    command = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
    assert command[:2] == ["/bin/bash", "-c"] and command[3] == "wait-for-workers" and command[4] == MPIRUN
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        hosts = ["allreduce-worker-0.allreduce.ml-team.svc", "allreduce-worker-1.allreduce.ml-team.svc"]
        ran = run_launcher_wait(tmp_path / "up", hosts, port, ["echo", "mpirun ran"])
        assert ran.returncode == 0 and ran.stdout.strip() == "mpirun ran", ran.stderr
        missing = run_launcher_wait(tmp_path / "missing", [hosts[0], "missing-worker-1"], port, ["echo", "no"])
        assert missing.returncode == 1 and "missing-worker-1 did not accept SSH" in missing.stderr
        assert "no" not in missing.stdout
    closed = run_launcher_wait(tmp_path / "closed", hosts, port, ["echo", "no"])  # resolves, nothing listens
    assert closed.returncode == 1 and "did not accept SSH" in closed.stderr


def test_a_tenant_gpu_quota_below_two_nodes_fails_the_multi_node_checks_at_once():
    """Without Kueue only the tenant's ResourceQuota stands between the job and the nodes: with a
    quota of one node's GPUs the second worker would be refused and the job would wait out
    verify's timeout. The checks are not rendered and verify says why."""
    doc = yaml.safe_load((Path(__file__).resolve().parents[1] / "profiles" / "p5-training.yaml").read_text())
    doc = changed(doc, addons__kueue={"enabled": False}, workloads__tenants=[{"name": "ml-team", "gpu_quota": 8}])
    config = validate_profile(doc)
    files = render(config)
    assert "nccl-allreduce.yaml" not in files and "ray-check.yaml" not in files
    roomy = validate_profile(changed(doc, workloads__tenants=[{"name": "ml-team", "gpu_quota": 16}]))
    assert {"nccl-allreduce.yaml", "ray-check.yaml"} <= set(render(roomy))


def test_the_guides_mpijob_waits_for_its_workers_too():
    """docs/queues.md's MPIJob is what tenants copy: its launcher waits for the hostfile's workers
    (from the MPI Operator's hostfile path) before mpirun, as verify's does."""
    import re

    from components.k8s.mpi import HOSTFILE, SSH_PORT, after_workers

    guide = (Path(__file__).resolve().parents[1] / "docs" / "queues.md").read_text()
    jobs = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", guide, flags=re.DOTALL)]
    (job,) = [j for j in jobs if j["kind"] == "MPIJob"]
    (launcher,) = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"]
    assert launcher["command"] == after_workers([])  # the wait; mpirun in its args (test_launch_mpirun.py)
    script = launcher["command"][2]
    assert HOSTFILE in script and f"/dev/tcp/$host/{SSH_PORT}" in script
