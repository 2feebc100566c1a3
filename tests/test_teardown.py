"""The teardown journey: `make destroy DELETE_DATA=1` of a deployed profile, walked through the real
Operator and clean-up against a cluster that models Kubernetes' and Karpenter's finalizers
(tests/cluster_model.py) and a Terraform that destroys the synthesized layers in dependency order,
waiting for each Kubernetes object as the kubernetes provider does.

What each component expects of the others here (the contract, cited in tests/cluster_model.py):
a claim goes only once no scheduled pod mounts it; Terraform waits for each object it deletes and
deletes a namespace's objects before the namespace; Karpenter drains and terminates NodeClaims
while it runs (the addons layer); the EBS CSI driver (the cluster layer) deletes released volumes.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess

import pytest

import main
import operate.cleanup
import operate.cluster_access
from addons.karpenter.pools import TERMINATION_GRACE_PERIOD
from operate.cleanup import Waiter, after_destroy, pre_destroy_cleanup
from operate.cluster_access import ClusterAccessError
from operate.layers import LAYERS, Operator, TeardownStuck
from operate.owned import PlatformObjects, platform_objects, terraform_claims
from tests.cases import QUICK, SHIPPED, profile_config
from tests.cluster_model import (
    PVC_PROTECTION,
    SYSTEM_NODE,
    Cluster,
    World,
    duration_seconds,
    install_fake_terraform,
    running_platform,
)

# Karpenter v1's duration fields (pkg/apis/v1/nodepool.go at v1.14.1, terminationGracePeriod's
# kubebuilder pattern).
KARPENTER_DURATION = re.compile(r"([0-9]+(s|m|h))+")
# Every shipped profile, and the one fixture with JupyterHub (a LoadBalancer and the hub's claim).
# jark (every add-on on) adds the most finalizers; make check runs the default profile only.
TEARDOWN_PROFILES = SHIPPED if QUICK else (*SHIPPED, "jark")


def deployed(synthesized, profile: str, tmp_path) -> tuple[World, Operator]:
    """A deployed profile: its synthesized stacks, every layer's state full, its cluster at work,
    and the Operator wired as `main.py destroy --delete-data` wires it (confirmations given)."""
    stacks_dir = tmp_path / "stacks"
    shutil.copytree(synthesized.folder(profile) / "stacks", stacks_dir)
    stacks = synthesized.stacks[profile]
    config = profile_config(profile)
    world = World(tmp_path / "world.json", stacks, cluster_name=config.name, cluster=running_platform(stacks))
    op = Operator(
        stacks_dir,
        terraform=str(install_fake_terraform(tmp_path)),
        env={"FAKE_CLUSTER": str(world.path)},
        log=lambda _: None,
        confirm=lambda _: True,
        delete_data=True,
        confirm_data=lambda _: True,
    )
    op.cleanup = lambda layer: main.common.cleanup_profile_cluster(config, op, tmp_path / "kubeconfig", layer)
    op.settle = lambda layer: main.common.settle_profile_cluster(config, op, tmp_path / "kubeconfig", layer)
    return world, op


def said(message: str) -> str:
    """A message as one line: it is printed wrapped (operate/messages.py)."""
    return " ".join(message.split())


class Clock:
    """A simulated clock for the clean-up's waits, and the model's clock when given to a Cluster."""

    def __init__(self, cluster: Cluster | None = None):
        self.now = 0.0
        self.cluster = cluster
        if cluster is not None:
            cluster.now = self.now

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        if self.cluster is not None:
            self.cluster.now = self.now


@pytest.fixture
def bound_to_the_model(monkeypatch):
    """kubectl, as main.profile_kubectl binds it, is the model's; the clean-up's waits run on the
    model's clock, which the fake terraform advances too while it waits."""
    worlds: list[World] = []

    def sleep(seconds: float) -> None:  # the world the test appends, once it has
        worlds[-1].advance(seconds)

    monkeypatch.setattr(operate.cleanup, "Waiter", functools.partial(Waiter, clock=lambda: worlds[-1].now, sleep=sleep))

    def bind(target, kubeconfig, *, tunnel=None):
        return worlds[-1].kubectl

    monkeypatch.setattr(operate.cluster_access, "bind_kubectl", bind)
    return worlds


def test_the_model_holds_a_mounted_claim_as_kubernetes_does(synthesized):
    """The case a fake without finalizers gets wrong: deleting and waiting for Prometheus's claim
    while Prometheus runs times out, and the claim stays Terminating; once the release is
    uninstalled, the claim and its volume go."""
    cluster = running_platform(synthesized.stacks[SHIPPED[0]])
    claim = next(c for c in cluster.of_kind("PersistentVolumeClaim") if c["metadata"]["name"].startswith("prometheus-"))
    name, namespace = claim["metadata"]["name"], claim["metadata"]["namespace"]
    waited = cluster.kubectl(["delete", "pvc", name, "-n", namespace, "--wait=true", "--timeout=15m"])
    assert waited.returncode == 1 and "timed out waiting for the condition" in waited.stderr
    assert cluster.find("PersistentVolumeClaim", namespace, name)["metadata"]["finalizers"] == [PVC_PROTECTION]
    release = next(d for d in cluster.of_kind("StatefulSet"))["metadata"]["annotations"]["meta.helm.sh/release-name"]
    cluster.uninstall(release, namespace)
    assert cluster.find("PersistentVolumeClaim", namespace, name) is None
    assert not [v for v in cluster.of_kind("PersistentVolume") if v["spec"]["claimRef"]["name"] == name]


def test_an_unscheduled_pod_does_not_hold_a_claim():
    """podUsesPVC counts only scheduled pods: a pod evicted and pending holds nothing."""
    cluster = Cluster()
    cluster.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c", "namespace": "t"}})
    pod = cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "t"},
            "spec": {"nodeName": "", "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]},
        }
    )
    assert cluster.kubectl(["delete", "pvc", "c", "-n", "t"]).returncode == 0
    assert cluster.exists(pod)


@pytest.mark.parametrize("profile", TEARDOWN_PROFILES)
def test_a_full_teardown_finishes_and_leaves_nothing_billing(profile, synthesized, tmp_path, bound_to_the_model):
    world, op = deployed(synthesized, profile, tmp_path)
    bound_to_the_model.append(world)
    results = op.run("destroy", list(LAYERS))
    assert [r.layer for r in results] == list(reversed(LAYERS)), results
    assert all(r.ok for r in results), [r.detail for r in results if not r.ok]
    assert all(not world.state(layer) for layer in LAYERS)
    # What the cluster held when its layer went: nothing that bills outside Terraform's state.
    cluster = world.cluster
    assert cluster.of_kind("PersistentVolume") == [] and cluster.of_kind("NodeClaim") == []
    assert [s for s in cluster.of_kind("Service") if s["spec"].get("type") == "LoadBalancer"] == []


@pytest.mark.parametrize("profile", TEARDOWN_PROFILES)
def test_after_the_kubernetes_layers_no_volume_node_or_load_balancer_is_left(
    profile, synthesized, tmp_path, bound_to_the_model
):
    world, op = deployed(synthesized, profile, tmp_path)
    bound_to_the_model.append(world)
    results = op.run("destroy", ["workloads", "addons"])
    assert all(r.ok for r in results), [r.detail for r in results if not r.ok]
    cluster = world.cluster
    assert cluster.of_kind("PersistentVolumeClaim") == []
    assert [v["metadata"]["name"] for v in cluster.of_kind("PersistentVolume")] == []
    assert cluster.of_kind("NodeClaim") == [] and cluster.of_kind("Service") == []
    owned = {
        ns for layer in ("addons", "workloads") for ns in platform_objects(profile_config(profile), layer).namespaces
    }
    assert not [n for n in cluster.of_kind("Namespace") if n["metadata"]["name"] in owned]


def test_a_teardown_stopped_on_its_volumes_resumes(synthesized, tmp_path, bound_to_the_model):
    """Terraform destroyed the workloads layer, but its volumes are not deleted yet (the CSI driver
    is not answering): the layer fails, naming the volumes, and the destroy goes no further. The
    next destroy finds nothing in the layer's state, still waits for the volumes, then goes on."""
    world, op = deployed(synthesized, SHIPPED[0], tmp_path)
    bound_to_the_model.append(world)
    world.path.write_text(world.path.read_text().replace('"csi_driver": true', '"csi_driver": false'))
    (stopped,) = op.run("destroy", ["workloads", "addons"])
    assert not stopped.ok and stopped.layer == "workloads"
    detail = said(stopped.detail)
    assert "volumes are not deleted" in detail and "pvc-ml-team-scratch" in detail
    assert detail.startswith("Fix:") and "run the destroy again" in detail
    assert all(len(line) <= 100 for line in stopped.detail.splitlines())
    assert world.state("workloads") == [] and world.state("addons")  # Terraform's part of workloads is done
    world.path.write_text(world.path.read_text().replace('"csi_driver": false', '"csi_driver": true'))
    op._resources.clear()
    results = op.run("destroy", ["workloads", "addons"])
    assert [(r.layer, r.ok) for r in results] == [("workloads", True), ("addons", True)], results
    assert world.cluster.of_kind("PersistentVolume") == []


def test_terraform_owned_claims_are_read_from_the_stack(synthesized):
    claims = terraform_claims(synthesized.stack(SHIPPED[0], "workloads"))
    assert ("ml-team", "fsx") in claims
    assert terraform_claims(synthesized.stack(SHIPPED[0], "addons")) == ()


def _blocked_drains(cluster: Cluster) -> None:
    """A tenant's pods on the GPU pool's node that Karpenter may not evict: one under a budget that
    allows no disruption, one annotated karpenter.sh/do-not-disrupt."""
    cluster.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "keep", "namespace": "ml-team"},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"job": "train"}}},
        }
    )
    for pod in cluster.of_kind("Pod"):
        if pod["metadata"]["name"].startswith("notebook-gpu"):
            pod["metadata"]["labels"] = {"job": "train"}
    cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "eval",
                "namespace": "ml-team",
                "annotations": {"karpenter.sh/do-not-disrupt": "true"},
            },
            "spec": {"nodeName": "gpu-node-1", "terminationGracePeriodSeconds": 600},
        }
    )


def test_a_pools_grace_period_ends_a_drain_that_a_budget_or_do_not_disrupt_blocks(synthesized):
    """Karpenter respects PodDisruptionBudgets and karpenter.sh/do-not-disrupt while it drains,
    until the NodeClaim's terminationGracePeriod (from its NodePool) has passed; then it deletes the
    pods whatever blocks them. The platform's pools set one that ends within the clean-up's wait."""
    cluster = running_platform(synthesized.stacks[SHIPPED[0]])
    _blocked_drains(cluster)
    clock = Clock(cluster)
    owned = PlatformObjects(
        namespaces=("ml-team",),
        node_pools=("cpu", "gpu"),
        node_drain_minutes=duration_seconds(TERMINATION_GRACE_PERIOD) // 60,
    )
    pre_destroy_cleanup(cluster.kubectl, owned, log=lambda _: None, waiter=Waiter(clock=clock, sleep=clock.sleep))
    assert cluster.of_kind("NodeClaim") == [] and cluster.find("Pod", "ml-team", "eval") is None
    grace = duration_seconds(TERMINATION_GRACE_PERIOD)
    assert grace <= clock.now <= grace + 60


def test_the_pools_grace_period_fits_in_the_clean_ups_wait_for_nodes(synthesized):
    pools = [
        body["manifest"]
        for body in synthesized.stack(SHIPPED[0], "workloads")["resource"]["kubernetes_manifest"].values()
        if isinstance(body["manifest"], dict) and body["manifest"]["kind"] == "NodePool"
    ]
    assert {pool["metadata"]["name"] for pool in pools} == {"cpu", "gpu"}
    # The clean-up acts on exactly the pools the layer creates (Karpenter's contributed capacity).
    owned = platform_objects(synthesized.configs[SHIPPED[0]], "workloads")
    assert set(owned.node_pools) == {"cpu", "gpu"}
    for pool in pools:
        grace = pool["spec"]["template"]["spec"]["terminationGracePeriod"]
        assert KARPENTER_DURATION.fullmatch(grace), grace
        # Then EC2 terminates the instance: some minutes of the clean-up's wait are left for that.
        assert duration_seconds(grace) + 10 * 60 <= operate.cleanup.nodes_gone_seconds(owned)


def test_a_drain_blocked_on_a_node_launched_without_a_grace_period_names_the_pods(synthesized):
    """A NodeClaim keeps the spec it was launched with (its spec is immutable): one launched before
    its pool had a terminationGracePeriod waits for its pods without limit. The clean-up stops in
    bounded time and names the pods, the budget and the annotation that hold the drain."""
    cluster = running_platform(synthesized.stacks[SHIPPED[0]])
    for claim in cluster.of_kind("NodeClaim"):
        claim["spec"].pop("terminationGracePeriod", None)
    _blocked_drains(cluster)
    clock = Clock(cluster)
    owned = PlatformObjects(
        namespaces=("ml-team",),
        node_pools=("cpu", "gpu"),
        node_drain_minutes=duration_seconds(TERMINATION_GRACE_PERIOD) // 60,
    )
    with pytest.raises(TeardownStuck) as stuck:
        pre_destroy_cleanup(cluster.kubectl, owned, log=lambda _: None, waiter=Waiter(clock=clock, sleep=clock.sleep))
    fix, why = said(stuck.value.fix), said(stuck.value.why)
    assert "gpu-abcde" in why and "ml-team/notebook-gpu-x" in why and "ml-team/eval" in why
    assert "PodDisruptionBudget" in fix and "karpenter.sh/do-not-disrupt" in fix
    assert "NodeClaims gpu-abcde launched before their NodePool had a terminationGracePeriod" in why
    assert fix.startswith("Fix:") and "run the destroy again" in fix
    assert 75 * 60 <= clock.now <= 75 * 60 + 10


def test_a_claim_still_mounted_after_the_destroy_names_its_pod(synthesized):
    cluster = running_platform(synthesized.stacks[SHIPPED[0]])
    clock = Clock()
    claim = next(c for c in cluster.of_kind("PersistentVolumeClaim") if c["metadata"]["name"].startswith("prometheus-"))
    owned = PlatformObjects(namespaces=(claim["metadata"]["namespace"],), node_pools=())
    with pytest.raises(TeardownStuck, match=r"mounted by monitoring/prometheus-monitoring-0"):
        after_destroy(cluster.kubectl, owned, log=lambda _: None, waiter=Waiter(clock=clock, sleep=clock.sleep))
    assert 15 * 60 <= clock.now <= 15 * 60 + 10


def test_the_queues_stop_admitting_before_any_job_is_stopped(synthesized, tmp_path, bound_to_the_model):
    """A stopped job frees quota: unless its ClusterQueue holds first, Kueue admits the next queued
    job onto the claims Terraform is about to delete (kueue clusterqueue_types.go, stopPolicy)."""
    world, op = deployed(synthesized, SHIPPED[0], tmp_path)
    bound_to_the_model.append(world)
    (result,) = op.run("destroy", ["workloads"])
    assert result.ok, result.detail
    verbs = [call[0] for call in world.calls if call[0] in ("patch", "delete")]
    patches = [call for call in world.calls if call[0] == "patch"]
    queues = platform_objects(profile_config(SHIPPED[0]), "workloads").cluster_queues
    assert queues and [call[2] for call in patches] == list(queues)
    assert all('"HoldAndDrain"' in call[-1] for call in patches)
    assert verbs.index("delete") > max(i for i, verb in enumerate(verbs) if verb == "patch")


def _lost_after_the_first_delete(cluster: Cluster, lose):
    """The model's kubectl until the clean-up has deleted something; then `lose(args)` answers the
    next listing (the API became unreachable, or kubectl hung)."""
    deleted: list[list[str]] = []

    def run(args: list[str]):
        if deleted and args[0] == "get":
            return lose(args)
        if args[0] == "delete":
            deleted.append(args)
        return cluster.kubectl(args)

    return run


def _unreachable(args: list[str]) -> subprocess.CompletedProcess[str]:
    stderr = "Unable to connect to the server: dial tcp 10.0.1.5:443: i/o timeout"
    return subprocess.CompletedProcess(args, 1, "", stderr)


def _hung(args: list[str]) -> subprocess.CompletedProcess[str]:
    raise subprocess.TimeoutExpired(["kubectl", *args], 3600)


@pytest.mark.parametrize("lose", [_unreachable, _hung], ids=["unreachable", "kubectl-timeout"])
def test_a_cluster_lost_after_a_deletion_is_a_stuck_teardown_that_says_what_was_deleted(synthesized, lose):
    """Once the clean-up has deleted something, "stopped before deleting anything" would be false,
    and a hung kubectl would end in a traceback: both say what was deleted and that the destroy
    resumes."""
    cluster = running_platform(synthesized.stacks[SHIPPED[0]])
    owned = platform_objects(profile_config(SHIPPED[0]), "workloads", synthesized.stack(SHIPPED[0], "workloads"))
    clock = Clock()
    with pytest.raises(TeardownStuck) as stuck:
        pre_destroy_cleanup(
            _lost_after_the_first_delete(cluster, lose),
            owned,
            log=lambda _: None,
            waiter=Waiter(clock=clock, sleep=clock.sleep),
        )
    fix, why = said(stuck.value.fix), said(stuck.value.why)
    assert fix.startswith("Fix:") and "run the destroy again" in fix
    assert "MPIJob.v2beta1.kubeflow.org/ml-team/train" in why
    assert "10.0.1.5:443" in why or "did not answer within 3600 s" in why


def test_a_kubectl_that_hangs_before_any_deletion_stops_as_unreachable(synthesized):
    """Nothing deleted yet: the destroy stops as for an unreachable cluster (nothing was deleted)."""
    cluster = running_platform(synthesized.stacks[SHIPPED[0]])
    owned = platform_objects(profile_config(SHIPPED[0]), "workloads", synthesized.stack(SHIPPED[0], "workloads"))
    with pytest.raises(ClusterAccessError, match=r"^kubectl patch clusterqueues.* did not answer within 3600 s$"):
        pre_destroy_cleanup(_hung, owned, log=lambda _: None)
    assert cluster.of_kind("NodeClaim")


def test_a_kubectl_that_hangs_after_the_destroy_is_no_traceback():
    """after_destroy's kubectl hangs: a ClusterAccessError, which main.settle_profile_cluster turns
    into a stuck teardown (Terraform has deleted things by then)."""
    with pytest.raises(ClusterAccessError, match=r"^kubectl get persistentvolumeclaims .* did not answer"):
        after_destroy(_hung, PlatformObjects(namespaces=("ml-team",), node_pools=()), log=lambda _: None)


def test_the_clean_up_gives_the_pods_it_stops_their_grace_period(synthesized):
    """A training job that checkpoints takes its terminationGracePeriodSeconds (here 40 minutes)
    to stop: the clean-up waits for it as long as that, not a fixed 20 minutes."""
    cluster = running_platform(synthesized.stacks[SHIPPED[0]])
    for pod in cluster.of_kind("Pod"):
        if pod["metadata"]["name"].startswith("train-"):
            pod["spec"]["terminationGracePeriodSeconds"] = 40 * 60
    clock = Clock(cluster)
    owned = platform_objects(profile_config(SHIPPED[0]), "workloads", synthesized.stack(SHIPPED[0], "workloads"))
    pre_destroy_cleanup(cluster.kubectl, owned, log=lambda _: None, waiter=Waiter(clock=clock, sleep=clock.sleep))
    assert 40 * 60 <= clock.now < 40 * 60 + 5 * 60
    assert not [p for p in cluster.of_kind("Pod") if p["metadata"]["name"].startswith("train-")]


def test_a_pod_past_its_grace_period_is_named_with_it(synthesized):
    """A pod that is still there after its grace period and the margin (its node is gone, say)."""
    cluster = running_platform(synthesized.stacks[SHIPPED[0]])
    for pod in cluster.of_kind("Pod"):
        if pod["metadata"]["name"] == "train-worker-0":
            pod["spec"]["terminationGracePeriodSeconds"] = 600
            pod["metadata"]["finalizers"] = ["example.com/keep"]  # nothing removes it
    clock = Clock(cluster)
    owned = platform_objects(profile_config(SHIPPED[0]), "workloads", synthesized.stack(SHIPPED[0], "workloads"))
    with pytest.raises(TeardownStuck) as stuck:
        pre_destroy_cleanup(cluster.kubectl, owned, log=lambda _: None, waiter=Waiter(clock=clock, sleep=clock.sleep))
    why = said(stuck.value.why)
    assert "ml-team/train-worker-0 (grace period 600 s)" in why and "after 15 minutes" in why
    assert 15 * 60 <= clock.now <= 15 * 60 + 10


def test_terraform_waits_for_a_namespace_as_long_as_its_pods_may_take(synthesized, tmp_path, bound_to_the_model):
    """Terraform deletes a tenant's namespace; the namespace controller then deletes the pods the
    clean-up left (they mount none of Terraform's claims) with their grace periods. The provider's
    default delete timeout (10 minutes) would fail the destroy half-way on a 40-minute one."""
    world, op = deployed(synthesized, SHIPPED[0], tmp_path)
    bound_to_the_model.append(world)
    cluster = world.cluster
    deployment = cluster.create(
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "eval", "namespace": "ml-team"}}
    )
    pod = cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "eval-x",
                "namespace": "ml-team",
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": "eval",
                        "uid": deployment["metadata"]["uid"],
                    },
                ],
            },
            "spec": {"nodeName": SYSTEM_NODE, "terminationGracePeriodSeconds": 40 * 60},
        }
    )
    saved = json.loads(world.path.read_text())
    saved["cluster"]["objects"] = cluster.objects
    world.path.write_text(json.dumps(saved))
    (result,) = op.run("destroy", ["workloads"])
    assert result.ok, result.detail
    assert not world.cluster.exists(pod) and world.now >= 40 * 60


def test_every_namespace_waits_for_deletion_as_long_as_the_clean_up_waits_for_pods(synthesized):
    for layer in ("addons", "workloads"):
        namespaces = [
            body
            for body in synthesized.stack(SHIPPED[0], layer)["resource"]["kubernetes_manifest"].values()
            if isinstance(body["manifest"], dict) and body["manifest"]["kind"] == "Namespace"
        ]
        assert namespaces
        for body in namespaces:
            assert duration_seconds(body["timeouts"]["delete"]) == operate.cleanup.PODS_GONE_MAX_SECONDS


def _leftover(cluster: Cluster, namespace: str) -> dict:
    """An object whose controller is gone (an operator uninstalled by hand): its finalizer stays."""
    return cluster.create(
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": namespace, "finalizers": ["example.com/cleanup"]},
        }
    )


def _save(world: World, cluster: Cluster) -> None:
    saved = json.loads(world.path.read_text())
    saved["cluster"]["objects"] = cluster.objects
    world.path.write_text(json.dumps(saved))


def test_deleting_a_terminating_namespace_again_is_no_conflict():
    """The API at the pinned Kubernetes returns a Terminating namespace on a second DELETE (a 409
    Conflict only before 1.17, kubernetes/kubernetes#84122): the provider then waits for it."""
    cluster = Cluster(now=0.0)
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}})
    _leftover(cluster, "t")
    assert cluster.kubectl(["delete", "namespace", "t", "--wait=false"]).returncode == 0
    again = cluster.kubectl(["delete", "namespace", "t", "--wait=false"])
    assert again.returncode == 0 and "Conflict" not in again.stderr
    namespace = cluster.find("Namespace", None, "t")
    assert namespace["status"]["phase"] == "Terminating"
    assert [c["message"] for c in namespace["status"]["conditions"]] == [
        "Some resources are remaining: widgets.example.com has 1 resource instances",
        "Some content in the namespace has finalizers remaining: example.com/cleanup in 1 resource instances",
    ]


def test_a_resumed_destroy_names_what_holds_a_terminating_namespace(synthesized, tmp_path, bound_to_the_model):
    """The first destroy's Terraform deleted the tenant's namespace and timed out on it: something
    with a finalizer no controller removes is left in it. The next destroy must not wait for
    Terraform to time out again without a word: the clean-up waits a bounded time for the
    namespace, then names what holds it, before Terraform runs."""
    world, op = deployed(synthesized, SHIPPED[0], tmp_path)
    bound_to_the_model.append(world)
    cluster = world.cluster
    _leftover(cluster, "ml-team")
    _save(world, cluster)
    (first,) = op.run("destroy", ["workloads"])
    assert not first.ok and 'Timed out when waiting for resource "ml-team"' in first.detail
    op._resources.clear()
    started = world.now
    (resumed,) = op.run("destroy", ["workloads"])
    detail = said(resumed.detail)
    assert not resumed.ok and detail.startswith("Fix:")
    assert "ml-team" in detail and "example.com/cleanup in 1 resource instances" in detail
    assert "widgets.example.com has 1 resource instances" in detail
    applies = [line for line in (tmp_path / "terraform.log").read_text().splitlines() if line == "workloads apply"]
    assert len(applies) == 1  # the resumed destroy stopped before Terraform
    assert world.now - started <= 6 * 60


def test_a_terminating_namespace_is_waited_for_as_long_as_its_pods_take(synthesized):
    """A resumed destroy finds a tenant's namespace Terminating, a pod in it within its 20-minute
    grace period: the clean-up waits for the namespace to go, then Terraform finds it gone."""
    cluster = running_platform(synthesized.stacks[SHIPPED[0]])
    clock = Clock(cluster)
    cluster.create(  # it mounts none of Terraform's claims: the clean-up does not stop it itself
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "eval", "namespace": "ml-team"},
            "spec": {"nodeName": SYSTEM_NODE, "terminationGracePeriodSeconds": 20 * 60},
        }
    )
    assert cluster.kubectl(["delete", "namespace", "ml-team", "--wait=false"]).returncode == 0
    owned = platform_objects(profile_config(SHIPPED[0]), "workloads", synthesized.stack(SHIPPED[0], "workloads"))
    pre_destroy_cleanup(cluster.kubectl, owned, log=lambda _: None, waiter=Waiter(clock=clock, sleep=clock.sleep))
    assert cluster.find("Namespace", None, "ml-team") is None
    assert 20 * 60 <= clock.now <= 25 * 60 + 10
