"""P6e-GB200 UltraServers in a profile (docs/gb200.md): the type is sold only as UltraServers through
Capacity Blocks, one block per UltraServer (u-p6e-gb200x36: 9 instances, u-p6e-gb200x72: 18), and its
NVLink reaches across nodes only through IMEX, which the platform runs as the DRA driver's
ComputeDomains in GPU Operator DRA mode. The gb200 fixture is such a profile; each rule is shown
failing on a change of it. Then verify's NCCL check on such a group, against a model of the job's
ComputeDomain as the DRA driver, Kueue and kubectl treat it (tests/compute_domain_model.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

import manifests.checks.nccl as nccl_module
from components.acceptance import POLL_SECONDS, CheckResult
from components.k8s.compute_domains import compute_domain, compute_domain_name
from manifests.checks.nccl import NCCL_JOB, NCCL_NODES
from manifests.verify import run_checks
from profiles import load_profile, validate_profile
from profiles.capacity import CapacityBlock
from profiles.loader import parse_profile_text
from tests.cases import FIXTURE_PROFILES
from tests.compute_domain_model import NEVER, DomainCluster
from tests.test_nccl_transport import fixture as nccl_fixture
from tests.test_profiles import DELETE, changed, problems
from tests.test_verify import FIXTURES as VERIFY_FIXTURES
from tests.test_verify import Cluster, FakeKubectl

GB200 = FIXTURE_PROFILES / "gb200.yaml"
# As the loader reads it (times stay text).
BASE = parse_profile_text(GB200.read_bytes(), "gb200")
GROUP = "cluster__gpu_node_groups__0"


def test_the_fixture_is_one_ultraserver_block_in_dra_mode():
    config = load_profile(str(GB200))
    (group,) = config.cluster.gpu_node_groups
    assert group.instance_type == "p6e-gb200.36xlarge"
    assert isinstance(group.capacity, CapacityBlock)
    assert (group.capacity.ultraserver_type, group.capacity.instance_count, group.max_size) == ("u-p6e-gb200x36", 9, 9)
    assert config.addons.gpu_operator.dra  # type: ignore[attr-defined]


def reported(doc: dict, field: str, *words: str) -> None:
    found = [line for line in problems(doc) if line.startswith(f"{field}: ")]
    assert found, problems(doc)
    assert all(word in found[0] for word in words), found[0]


def test_gb200_is_refused_outside_an_ultraserver_block():
    on_demand = changed(BASE, **{f"{GROUP}__capacity": {"type": "on_demand"}})
    reported(on_demand, "cluster.gpu_node_groups.0.capacity", "sold only as UltraServers", "u-p6e-gb200x36")
    instances = changed(BASE, **{f"{GROUP}__capacity__ultraserver_type": DELETE})
    reported(instances, "cluster.gpu_node_groups.0.capacity", "sold only as UltraServers")


@pytest.mark.parametrize(
    ("ultraserver", "count", "words"),
    [
        ("u-p6e-gb200x72", 9, ["one u-p6e-gb200x72, which has 18 instances", "allowed: 18"]),
        ("u-p6e-gb200x36", 18, ["one u-p6e-gb200x36, which has 9 instances", "allowed: 9"]),
    ],
)
def test_an_ultraserver_block_holds_exactly_its_ultraservers_instances(ultraserver, count, words):
    doc = changed(
        BASE,
        **{
            f"{GROUP}__capacity__ultraserver_type": ultraserver,
            f"{GROUP}__capacity__instance_count": count,
            f"{GROUP}__max_size": min(count, 9),
            f"{GROUP}__desired_size": min(count, 9),
        },
    )
    reported(doc, "cluster.gpu_node_groups.0.capacity.instance_count", *words)


def test_the_group_stays_within_the_ultraserver():
    doc = changed(BASE, **{f"{GROUP}__max_size": 10})
    reported(
        doc,
        "cluster.gpu_node_groups.0.max_size",
        "larger than its Capacity Block",
        "at most capacity.instance_count (9)",
    )


def test_an_x72_block_holds_18_nodes():
    doc = changed(
        BASE,
        **{
            f"{GROUP}__capacity__ultraserver_type": "u-p6e-gb200x72",
            f"{GROUP}__capacity__instance_count": 18,
            f"{GROUP}__max_size": 18,
        },
    )
    (group,) = validate_profile(doc).cluster.gpu_node_groups
    assert group.max_size == 18


def test_an_ultraserver_type_on_a_type_sold_as_single_instances_is_refused():
    doc = changed(
        BASE,
        **{f"{GROUP}__instance_type": "p5.48xlarge", f"{GROUP}__capacity__instance_count": 9},
    )
    reported(
        doc,
        "cluster.gpu_node_groups.0.capacity.ultraserver_type",
        "not an UltraServer type of p5.48xlarge",
        "sold as single instances",
    )


@pytest.mark.parametrize("gpu_operator", [{"dra": False}, {"enabled": False}], ids=["device-plugin", "no-operator"])
def test_gb200_needs_the_dra_drivers_compute_domains(gpu_operator):
    doc = changed(BASE, addons__gpu_operator=gpu_operator)
    reported(
        doc,
        "cluster.gpu_node_groups.0.instance_type",
        "node group gb200-nvl36",
        "IMEX",
        "allowed: with DRA mode on (addons.gpu_operator: {enabled: true, dra: true})",
    )


# verify's NCCL check on the group (manifests/checks/nccl.py and compute_domain.py), run against the
# job's ComputeDomain as the DRA driver, Kueue and kubectl treat it (tests/compute_domain_model.py).

DOMAIN = f"computedomain/{compute_domain_name(NCCL_JOB)}"


def mnnvl_log() -> str:
    """A healthy multi-node NVLink run: its init lines and a full results table."""
    table = (VERIFY_FIXTURES / "nccl-good-p5.log").read_text()
    return nccl_fixture("nccl-tests-mnnvl-healthy-gb200.log") + table[table.index("# nThread") :]


def verify_nccl(
    *, previous_num_nodes: int | None = None, job: Cluster | None = None, **model: Any
) -> tuple[CheckResult, FakeKubectl, DomainCluster]:
    """verify on the gb200 fixture; `previous_num_nodes`: an earlier run left its ComputeDomain;
    `job`: answers the kubectl calls about the MPIJob before the model does (None: not its call)."""
    config = load_profile(str(GB200))
    cluster = DomainCluster(job=NCCL_JOB, namespace=config.workloads.tenants[0].name, **model)
    if previous_num_nodes is not None:
        cluster.previous_run(previous_num_nodes)

    def answers(args: list[str]) -> subprocess.CompletedProcess[str] | None:
        return (job(args) if job else None) or cluster(args)

    kubectl = FakeKubectl(mnnvl_log(), cluster=answers)
    results = run_checks(config, kubectl=kubectl, sleep=cluster.sleep)
    (nccl,) = [r for r in results if r.name.startswith(NCCL_JOB)]
    return nccl, kubectl, cluster


def kinds_applied(cluster: DomainCluster) -> list[list[str]]:
    return [kinds for _, kinds in cluster.applied]


def test_the_mpijob_is_applied_once_the_controller_has_made_the_channel_template():
    """In one apply, Kueue would find no template to count the channel claim from and mark the job
    inadmissible (admitted late, after its backoff)."""
    nccl, _, cluster = verify_nccl()
    assert nccl.passed, nccl.detail
    assert kinds_applied(cluster) == [["ComputeDomain"], ["MPIJob"]]
    (domain_at, _), (job_at, _) = cluster.applied
    template = cluster.templates[-1]
    assert domain_at < template.created <= job_at  # verify polled until the controller had made it
    assert cluster.inadmissible == []
    assert cluster.admitted == job_at


def test_the_run_is_judged_once_every_imex_daemon_of_the_job_is_ready(monkeypatch):
    """numNodes is the job's node count, so the domain says Ready only with a ready IMEX daemon on
    each node, and verify waits for that before it waits for the job; with numNodes 0 the domain says
    Ready before any daemon has started."""
    nccl, kubectl, cluster = verify_nccl()
    assert nccl.passed, nccl.detail
    assert cluster.domains[-1].spec["numNodes"] == NCCL_NODES
    assert cluster.ready_daemons_when_seen_ready == [NCCL_NODES]
    waits = [call[3] for call in kubectl.calls if call[0] == "wait"]
    assert waits.index(DOMAIN) < waits.index(f"mpijob/{NCCL_JOB}")
    (ready,) = [call for call in kubectl.calls if call[0] == "wait" and call[3] == DOMAIN and "delete" not in call[4]]
    assert ready[4:] == ["--for=jsonpath={.status.status}=Ready", "--timeout=30m"]

    monkeypatch.setattr(nccl_module, "compute_domain", lambda namespace, job, _nodes: compute_domain(namespace, job, 0))
    _, _, zero = verify_nccl()
    assert zero.ready_daemons_when_seen_ready == [0], "the old numNodes: Ready with no daemon up"


@pytest.mark.parametrize("previous_num_nodes", [0, NCCL_NODES])
def test_a_rerun_waits_until_the_previous_domain_and_its_template_are_gone(previous_num_nodes):
    """The previous run's objects are deleted without waiting (the controller takes their finalizers
    off while the single-node checks run), the job before its domain; before the new domain is
    applied verify waits, bounded, until the old one and its template are gone. A previous domain of
    the same spec (every re-run from now on) is the quiet case: applied over it, the apply succeeds as
    a patch of the terminating domain, and the old template, still there by name, would pass the poll."""
    nccl, kubectl, cluster = verify_nccl(previous_num_nodes=previous_num_nodes)
    assert nccl.passed, nccl.detail
    deletes = [call for call in kubectl.calls if call[0] == "delete" and call[3] in (DOMAIN, f"mpijob/{NCCL_JOB}")]
    assert [call[3] for call in deletes] == [f"mpijob/{NCCL_JOB}", DOMAIN]
    assert deletes[1][-1] == "--wait=false"
    tenant = cluster.namespace
    template = f"resourceclaimtemplate/{NCCL_JOB}-channel"
    for obj in (DOMAIN, template):
        assert ["wait", "-n", tenant, obj, "--for=delete", "--timeout=30m"] in kubectl.calls
    old, new = cluster.domains
    assert old.gone <= cluster.applied[0][0] == new.created
    assert cluster.templates[0].gone <= new.created < cluster.templates[1].created
    assert cluster.applied_over_terminating == [] and cluster.inadmissible == []


def test_a_previous_domain_that_never_goes_fails_the_check_instead_of_hanging():
    """A controller that never takes the finalizer off: `kubectl delete --wait` would wait a week."""
    nccl, _, cluster = verify_nccl(previous_num_nodes=2, finalizers_after=NEVER)
    assert not nccl.passed
    assert f"the previous run's {DOMAIN} in {cluster.namespace} was still being deleted after 30 minutes" in nccl.detail
    assert "nvidia-dra-driver-controller" in nccl.detail and "timed out waiting" in nccl.detail
    assert cluster.applied == []


def test_a_template_that_never_comes_fails_the_check_and_deletes_the_domain():
    nccl, kubectl, cluster = verify_nccl(template_after=NEVER)
    assert not nccl.passed
    assert nccl.detail.startswith(
        f"ComputeDomain {compute_domain_name(NCCL_JOB)} in {cluster.namespace}: its controller made no "
        f"ResourceClaimTemplate {NCCL_JOB}-channel within 30 minutes"
    )
    assert "nvidia-dra-driver-controller" in nccl.detail and "kubectl describe computedomain" in nccl.detail
    assert kinds_applied(cluster) == [["ComputeDomain"]]  # the MPIJob never went in
    assert 30 * 60 <= cluster.now - cluster.applied[0][0] <= 30 * 60 + POLL_SECONDS  # bounded by the timeout
    released = kubectl.calls[-1]
    assert released == ["delete", "-n", cluster.namespace, DOMAIN, "--ignore-not-found", "--wait=false"]
    assert cluster.domains[-1].deleting < NEVER


def test_a_domain_without_a_ready_daemon_on_every_node_fails_the_check_and_is_released():
    nccl, kubectl, cluster = verify_nccl(daemons_after=(90.0, NEVER))
    assert not nccl.passed
    assert nccl.detail.startswith(f"ComputeDomain {compute_domain_name(NCCL_JOB)} in {cluster.namespace} was not Ready")
    assert "1 of 2 IMEX daemons ready (gb200-node-0 Ready, gb200-node-1 NotReady)" in nccl.detail
    assert "kubectl get pods -A -l resource.nvidia.com/computeDomain=cd-uid-1" in nccl.detail
    tenant = cluster.namespace
    ready = ["wait", "-n", tenant, DOMAIN, "--for=jsonpath={.status.status}=Ready", "--timeout=30m"]
    # Then verify reads the domain's status and releases the job and its domain; it neither waits for
    # the job nor judges its log.
    assert kubectl.calls[kubectl.calls.index(ready) + 1 :] == [
        ["get", "-n", tenant, DOMAIN, "-o", "json"],
        ["delete", "-n", tenant, f"mpijob/{NCCL_JOB}", "--ignore-not-found", "--wait=false"],
        ["delete", "-n", tenant, DOMAIN, "--ignore-not-found", "--wait=false"],
    ]


def test_a_domain_no_daemon_registered_with_points_at_the_workers_and_the_daemon_pods():
    """No daemon listed: either no worker was scheduled, or the workers wait (ContainerCreating) for a
    daemon pod that did not start on their node; the daemon registers itself only once it runs
    (dra-driver-nvidia-gpu v0.4.1 cmd/compute-domain-daemon/cdclique.go 298-314)."""
    nccl, _, cluster = verify_nccl(daemons_after=())
    assert not nccl.passed
    assert "no IMEX daemon has registered with it" in nccl.detail
    assert "kubectl get workloads -n research" in nccl.detail
    assert "kubectl get pods -A -l resource.nvidia.com/computeDomain=cd-uid-1" in nccl.detail
    assert cluster.domains[-1].deleting < NEVER


def job_wait_times_out(args: list[str]) -> subprocess.CompletedProcess[str] | None:
    if args[0] == "wait" and args[3] == f"mpijob/{NCCL_JOB}":
        timed_out = f"error: timed out waiting for the condition on mpijobs/{NCCL_JOB}"
        return subprocess.CompletedProcess(args, 1, "", timed_out)
    return None


def mpijob_refused(args: list[str]) -> subprocess.CompletedProcess[str] | None:
    if args[0] == "apply" and "kind: MPIJob" in Path(args[2]).read_text():
        return subprocess.CompletedProcess(args, 1, "", 'admission webhook "vmpijob.kb.io" denied the request')
    return None


def test_a_job_that_does_not_succeed_is_released_with_its_domain():
    nccl, kubectl, cluster = verify_nccl(job=job_wait_times_out)
    assert nccl.detail.startswith(f"the MPIJob in {cluster.namespace} did not succeed")
    deletes = [call[3] for call in kubectl.calls if call[0] == "delete" and call[-1] == "--wait=false"]
    assert deletes[-2:] == [f"mpijob/{NCCL_JOB}", DOMAIN]
    assert cluster.domains[-1].deleting < NEVER


def test_a_refused_mpijob_releases_the_domain_applied_for_it():
    nccl, kubectl, cluster = verify_nccl(job=mpijob_refused)
    assert not nccl.passed and "denied the request" in nccl.detail
    assert kinds_applied(cluster) == [["ComputeDomain"]]
    assert kubectl.calls[-1] == ["delete", "-n", cluster.namespace, DOMAIN, "--ignore-not-found", "--wait=false"]
    assert cluster.domains[-1].deleting < NEVER
