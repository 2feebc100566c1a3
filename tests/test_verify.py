"""The acceptance gate's parsing on recorded-shape outputs, and its kubectl flow with a fake runner."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from addons.kuberay.checks import check_ray
from addons.trainer.checks import check_trainjob
from components.acceptance import ValidationTarget
from manifests.checks.gpu_smoke import check_gpu_smoke
from manifests.checks.nccl import check_nccl, nccl_rows
from manifests.checks.repair_loop import check_repair_loop
from manifests.checks.topology import check_topology, efa_devices
from manifests.render import render
from manifests.verify import run_checks
from profiles import load_profile
from tests.test_nccl_transport import fixture as nccl_fixture

FIXTURES = Path(__file__).parent / "fixtures" / "verify"


def log(name: str) -> str:
    return (FIXTURES / name).read_text()


def torchrun_log(name: str = "torch-efa-healthy-p5.log") -> str:
    """A torchrun-check's pod logs (tests/fixtures/nccl/, without the fixture's header)."""
    return nccl_fixture(name)


@pytest.fixture(scope="module")
def p5():
    return ValidationTarget.for_profile(load_profile("p5-training"))


def test_a_healthy_full_sweep_passes_although_its_average_is_low(p5):
    text = log("nccl-good-p5.log")
    rows = nccl_rows(text)
    assert len(rows) == 29 and rows[0].size_bytes == 8 and rows[-1].size_bytes == 2 << 30  # -b 8 -e 2G -f 2
    average = float(text.split("# Avg bus bandwidth    :")[1].split()[0])
    assert average < p5.entry.nccl_min_busbw_gbytes_per_s, "the sweep average alone would fail a healthy fabric"
    result = check_nccl(text, p5)
    assert result.passed, result.detail
    assert "386.76 GB/s" in result.detail


def test_tcp_fallback_fails_with_reason(p5):
    result = check_nccl(log("nccl-tcp-fallback.log"), p5)
    assert not result.passed and "fell back to TCP sockets" in result.detail


def test_a_degraded_fabric_fails_with_threshold(p5):
    result = check_nccl(log("nccl-low-bandwidth-p5.log"), p5)
    assert not result.passed
    assert "is 95.86 GB/s, below 240.0 GB/s" in result.detail and "p5.48xlarge" in result.detail


def test_fewer_nics_than_the_catalog_fails(p5):
    result = check_nccl(log("nccl-few-nics-p5.log"), p5)
    assert not result.passed and "found 8 EFA NICs, the catalog says 32" in result.detail


def test_wrong_results_or_a_short_sweep_fail(p5):
    good = log("nccl-good-p5.log")
    lines = good.splitlines()
    wrong = "\n".join(line[:-1] + "3" if line.strip().startswith("2147483648") else line for line in lines)
    assert "wrong results" in check_nccl(wrong, p5).detail
    short = "\n".join(line for line in lines if not line.strip().startswith(("1073741824", "2147483648")))
    assert "sweep stopped at 536870912 bytes" in check_nccl(short, p5).detail


def test_unfinished_run_fails(p5):
    assert not check_nccl("NCCL INFO NET/OFI Selected provider is efa\n", p5).passed


def test_topology_counts_efa_devices_against_the_catalog(p5):
    assert len(efa_devices(log("topology-good-p5.log"))) == 32
    assert check_topology(log("topology-good-p5.log"), p5).passed
    missing = check_topology(log("topology-missing-efa-p5.log"), p5)
    assert not missing.passed
    assert "fi_info shows 16, the catalog says 32 for p5.48xlarge" in missing.detail


def test_gpu_smoke():
    assert check_gpu_smoke(log("gpu-smoke-good.log")).passed
    assert not check_gpu_smoke("No devices were found\n").passed


def dashboard_configmaps() -> dict:
    """The monitoring namespace's dashboard ConfigMaps as `kubectl get -o json` lists them: the
    platform's (as the addons layer writes them for p5-training) and one of the chart's own."""
    from addons.gpu_operator.dashboards import DASHBOARDS as GPU
    from addons.karpenter.dashboards import DASHBOARDS as KARPENTER
    from addons.kuberay.dashboards import DASHBOARDS as RAY
    from addons.kueue.dashboards import DASHBOARDS as QUEUES
    from addons.monitoring.dashboards import DASHBOARDS as EFA
    from components.dashboards import dashboard_config_maps

    maps = dashboard_config_maps("monitoring", GPU + KARPENTER + RAY + QUEUES + EFA)
    chart = {"kind": "ConfigMap", "data": {"k8s-resources-cluster.json": json.dumps({"uid": "efa86fd1d0c121a2"})}}
    return {"apiVersion": "v1", "kind": "List", "items": [*maps, chart]}


def health_check_pods(skip: str = "") -> str:
    """The health check's DaemonSet pods, one Running on each GPU node of nodes-p5.json."""
    from components.acceptance import gpu_node_names

    nodes = gpu_node_names(json.loads(log("nodes-p5.json"))["items"])
    items = [
        {"metadata": {"name": f"gpu-health-check-{i}"}, "spec": {"nodeName": node}, "status": {"phase": "Running"}}
        for i, node in enumerate(nodes)
        if node != skip
    ]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


def grafana_search(exclude: tuple[str, ...] = ()) -> list[dict]:
    """Grafana's /api/search?type=dash-db answer (one object per dashboard it has loaded)."""
    uids = {json.loads(text)["uid"] for m in dashboard_configmaps()["items"] for text in m["data"].values()}
    return [
        {"id": i, "uid": uid, "title": uid, "uri": f"db/{uid}", "url": f"/d/{uid}/{uid}", "type": "dash-db", "tags": []}
        for i, uid in enumerate(sorted(uids - set(exclude)), start=1)
    ]


# A model of objects that change over time (tests/compute_domain_model.py): it answers the kubectl
# calls that concern its objects, None to the rest.
Cluster = Callable[[list[str]], "subprocess.CompletedProcess[str] | None"]


class FakeKubectl:
    """Answers kubectl calls with recorded outputs, or from a cluster model where one is given;
    remembers what was applied."""

    def __init__(self, nccl_log: str, trainjob_log: str | None = None, cluster: Cluster | None = None):
        self.nccl_log = nccl_log
        self.cluster = cluster
        self.trainjob_log = torchrun_log() if trainjob_log is None else trainjob_log
        self.applied: list[str] = []
        self.calls: list[list[str]] = []
        self.sns_published = 0

    ray_state = "Complete"
    ray_outcome = "SUCCEEDED "
    grafana_missing: tuple[str, ...] = ()

    def __call__(self, args: list[str]) -> subprocess.CompletedProcess:
        self.calls.append(args)
        answered = self.cluster(args) if self.cluster is not None else None
        if answered is None:
            return self.recorded(args)
        if args[0] == "apply":
            self.applied.append(Path(args[2]).name)
        return answered

    def recorded(self, args: list[str]) -> subprocess.CompletedProcess:
        out = ""
        if args[:2] == ["get", "configmap"] and "grafana_dashboard=1" in args:
            out = json.dumps(dashboard_configmaps())
        elif args[0] == "exec" and "deploy/monitoring-grafana" in args:
            out = json.dumps(grafana_search(exclude=self.grafana_missing))
        elif args[:2] == ["get", "-n"] and args[3] == "rayjob/ray-check":
            out = self.ray_state if "jobDeploymentStatus" in args[-1] else self.ray_outcome
        elif args[:2] == ["get", "nodes"]:
            out = log("nodes-p5.json")
        elif args[:2] == ["get", "pods"] and "app.kubernetes.io/name=alertmanager" in args:
            out = "alertmanager-monitoring-kube-prometheus-alertmanager-0"
        elif args[0] == "exec" and "wget" in args:  # Alertmanager's /metrics: each read, one more publish to SNS
            self.sns_published += 1
            out = f'alertmanager_notifications_total{{integration="sns"}} {self.sns_published}\n'
        elif args[:2] == ["get", "pods"] and "app.kubernetes.io/name=eks-node-monitoring-agent" in args:
            out = log("agent-pods-p5.json")
        elif args[:2] == ["get", "pods"] and "app.kubernetes.io/name=gpu-health-check" in args:
            out = health_check_pods()
        elif args[0] == "apply":
            self.applied.append(Path(args[2]).name)
        elif args[0] == "logs" and any(arg.startswith("jobset.sigs.k8s.io/jobset-name=") for arg in args):
            out = self.trainjob_log
        elif args[0] == "logs" and "batch.kubernetes.io/job-name=ray-check" in args:
            out = log("ray-check-good-p5.log")
        elif args[0] == "logs":
            target = args[-1] if not args[-1].startswith("--") else "launcher"
            out = {
                "pod/gpu-smoke-test": log("gpu-smoke-good.log"),
                "pod/topology-check": log("topology-good-p5.log"),
                "pod/container-test": "GPU 0: ...\ncontainer-ok\n",
                "pod/mlflow-tracking-check": log("mlflow-check-good.log"),
            }.get(target, self.nccl_log)
        return subprocess.CompletedProcess(args, 0, out, "")


def test_run_checks_applies_everything_and_passes_a_healthy_cluster():
    kubectl = FakeKubectl(log("nccl-good-p5.log"))
    results = run_checks(load_profile("p5-training"), kubectl=kubectl, image="repo/img:v1")
    assert [r.name for r in results] == [
        "repair-loop",
        # The add-ons' read-only checks, in install order: monitoring before the GPU Operator.
        "grafana-dashboards",
        "alert-receiver",
        "gpu-health-check",
        "gpu-smoke-test",
        "topology-check",
        "container-test",
        "nccl-allreduce",
        # Then the add-ons' checks with objects, in install order: KubeRay, Trainer, MLflow.
        "ray-check",
        "torchrun-check",
        "mlflow-tracking-check",
    ]
    assert all(r.passed for r in results), results
    assert kubectl.applied == [
        "00-namespace.yaml",
        "gpu-smoke-test.yaml",
        "topology-check.yaml",
        "container-test.yaml",
        "mlflow-tracking-check.yaml",
        "nccl-allreduce.yaml",
        "ray-check.yaml",
        "torchrun-check.yaml",
    ]


def test_the_mpijob_starts_after_the_single_node_checks_finished_and_waits_for_its_workers():
    kubectl = FakeKubectl(log("nccl-good-p5.log"))
    run_checks(load_profile("p5-training"), kubectl=kubectl, image="repo/img:v1")
    steps = [
        call[0] + " " + (Path(call[2]).name if call[0] == "apply" else call[3])
        for call in kubectl.calls
        if call[0] in ("apply", "wait")
    ]
    mpijob = steps.index("apply nccl-allreduce.yaml")
    for pod in ("pod/gpu-smoke-test", "pod/topology-check", "pod/container-test"):
        assert steps.index(f"wait {pod}") < mpijob, steps
    (job,) = [o for objects in render(load_profile("p5-training")).values() for o in objects if o["kind"] == "MPIJob"]
    assert job["spec"]["launcherCreationPolicy"] == "WaitForWorkersReady"


def test_the_mpijob_runs_as_the_first_tenant_and_is_judged_there():
    """The multi-node check meets what a tenant's first job meets: it is submitted into the first
    tenant's namespace without a queue name, and verify waits for it and reads its launcher there."""
    config = load_profile("p5-training")
    tenant = config.workloads.tenants[0].name
    kubectl = FakeKubectl(log("nccl-good-p5.log"))
    run_checks(config, kubectl=kubectl)
    (job,) = render(config)["nccl-allreduce.yaml"]
    assert job["metadata"]["namespace"] == tenant and "labels" not in job["metadata"]
    assert job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 2
    (wait,) = [call for call in kubectl.calls if call[0] == "wait" and call[3] == "mpijob/nccl-allreduce"]
    assert wait[1:3] == ["-n", tenant]
    (logs,) = [call for call in kubectl.calls if call[0] == "logs" and any("job-role=launcher" in a for a in call)]
    assert logs[1:3] == ["-n", tenant]
    # Without tenants there is nobody to run as: the check stays in the validation namespace.
    alone = load_profile("p5-training").model_copy(deep=True)
    alone.workloads.tenants.clear()
    (job,) = render(alone)["nccl-allreduce.yaml"]
    assert job["metadata"]["namespace"] == "gpu-validation"


def test_a_second_run_checks_anew():
    """Finished pods and the MPIJob are deleted before anything is applied: re-applying an
    unchanged finished pod would leave the previous run's logs to be judged."""
    kubectl = FakeKubectl(log("nccl-good-p5.log"))
    run_checks(load_profile("p5-training"), kubectl=kubectl, image="repo/img:v1")
    first_apply = next(i for i, call in enumerate(kubectl.calls) if call[0] == "apply")
    deleted = [call[3] for call in kubectl.calls[:first_apply] if call[0] == "delete"]
    assert deleted == [
        "pod/gpu-smoke-test",
        "pod/topology-check",
        "pod/container-test",
        "mpijob/nccl-allreduce",
        "rayjob/ray-check",
        "trainjob/torchrun-check",
        "pod/mlflow-tracking-check",
    ]
    assert all("--ignore-not-found" in call for call in kubectl.calls if call[0] == "delete")
    assert not any(call[0] == "delete" for call in kubectl.calls[first_apply:])


def test_run_checks_reports_the_failing_check():
    results = run_checks(load_profile("p5-training"), kubectl=FakeKubectl(log("nccl-tcp-fallback.log")))
    failed = [r for r in results if not r.passed]
    assert [r.name for r in failed] == ["nccl-allreduce"]


def test_the_train_job_runs_last_in_a_tenant_namespace_through_its_queue():
    """After the MPIJob has finished (it frees the nodes), as a tenant submits it: in the tenant's
    namespace, with no queue name (Kueue gives it the tenant's LocalQueue), on the runtime of the
    checked group, on two nodes; verify waits for Trainer's Complete condition."""
    config = load_profile("p5-training")
    kubectl = FakeKubectl(log("nccl-good-p5.log"))
    run_checks(config, kubectl=kubectl)
    steps = [call for call in kubectl.calls if call[0] in ("apply", "wait")]
    names = [Path(call[2]).name if call[0] == "apply" else call[3] for call in steps]
    assert names.index("torchrun-check.yaml") > names.index("mpijob/nccl-allreduce")
    wait = steps[names.index("trainjob/torchrun-check")]
    assert wait[2] == config.workloads.tenants[0].name and "--for=condition=Complete" in wait
    (job,) = render(config)["torchrun-check.yaml"]
    assert job["metadata"]["namespace"] == config.workloads.tenants[0].name
    assert "labels" not in job["metadata"]
    assert job["spec"]["runtimeRef"]["name"] == "torch-p5-efa" and job["spec"]["trainer"]["numNodes"] == 2


@pytest.mark.parametrize(
    ("line", "passed"),
    [
        ("TRAINJOB_CHECK world=16 sum=16 backend=nccl", True),
        ("TRAINJOB_CHECK world=8 sum=8 backend=nccl", False),  # one node's ranks only
        ("TRAINJOB_CHECK world=16 sum=15 backend=nccl", False),  # a rank did not contribute
        ("TRAINJOB_CHECK world=16 sum=16 backend=gloo", False),  # on the CPU: CUDA did not start
        ("NCCL WARN timeout", False),
    ],
)
def test_the_train_job_check_needs_every_rank_of_both_nodes(p5, line, passed):
    healthy = torchrun_log().replace("TRAINJOB_CHECK world=16 sum=16 backend=nccl\n", "")
    result = check_trainjob(f"{healthy}noise\n{line}\n", p5, expected_ranks=16)
    assert result.passed is passed, result.detail


def test_a_healthy_train_job_says_it_ran_over_efa(p5):
    result = check_trainjob(torchrun_log(), p5, expected_ranks=16)
    assert result.passed and result.detail == "torchrun: 16 ranks, all-reduce sum 16 over Libfabric (efa, 32 NICs)"


@pytest.mark.parametrize(
    ("fixture", "cause"),
    [
        ("torch-public-image-socket-fallback-p5.log", "the image has no aws-ofi-nccl"),
        ("torch-no-efa-devices-socket-fallback-p5.log", "requested no vpc.amazonaws.com/efa devices"),
    ],
)
def test_a_train_job_that_summed_right_over_tcp_fails(p5, fixture, cause):
    """World size and sum are right over TCP sockets: the transport lines fail it."""
    result = check_trainjob(torchrun_log(fixture), p5, expected_ranks=16)
    assert not result.passed
    assert result.detail.startswith("torchrun: 16 ranks, all-reduce sum 16, but NCCL fell back to TCP sockets")
    assert cause in result.detail


def test_a_train_job_on_another_libfabric_provider_fails(p5):
    result = check_trainjob(torchrun_log("torch-tcp-provider-p5.log"), p5, expected_ranks=16)
    assert not result.passed and "tcp provider, not efa" in result.detail


def test_a_train_job_without_nccl_info_lines_fails_on_efa(p5):
    result = check_trainjob("TRAINJOB_CHECK world=16 sum=16 backend=nccl\n", p5, expected_ranks=16)
    assert not result.passed and "NCCL_DEBUG=INFO" in result.detail


def test_both_nccl_checks_run_with_nccl_debug_info():
    """verify's judge reads NCCL's INFO lines: the MPIJob's mpirun forwards NCCL_DEBUG=INFO to every
    rank and the TrainJob sets it for its trainer."""
    files = render(load_profile("p5-training"))
    (job,) = files["nccl-allreduce.yaml"]
    (launcher,) = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"]
    assert "-x NCCL_DEBUG=INFO" in " ".join(launcher["command"])
    (train_job,) = files["torchrun-check.yaml"]
    assert {"name": "NCCL_DEBUG", "value": "INFO"} in train_job["spec"]["trainer"]["env"]


def test_a_socket_fallback_fails_the_nccl_check_whatever_the_bandwidth(p5):
    """The plugin-less run's init lines before a table that would otherwise pass."""
    table = log("nccl-good-p5.log").split("# nThread", 1)[1]
    fallback = nccl_fixture("nccl-tests-no-plugin-socket-fallback-p5.log") + "# nThread" + table
    result = check_nccl(fallback, p5)
    assert not result.passed and "the image has no aws-ofi-nccl" in result.detail
    healthy = nccl_fixture("nccl-tests-efa-healthy-p5.log") + "# nThread" + table
    result = check_nccl(healthy, p5)
    assert result.passed and "over Libfabric (efa, 32 NICs)" in result.detail


def test_a_train_job_that_did_not_complete_fails_the_gate():
    results = run_checks(load_profile("p5-training"), kubectl=FakeKubectl(log("nccl-good-p5.log"), trainjob_log=""))
    assert [r.name for r in results if not r.passed] == ["torchrun-check"]


def test_a_tenant_queue_that_cannot_hold_a_node_fails_the_gate_instead_of_waiting():
    """The checked group runs no node, so the first tenant's queue holds none of it and Kueue
    would never admit the TrainJob; verify says so at once instead of waiting out its timeout."""
    import yaml as _yaml

    from profiles import validate_profile
    from tests.test_profiles import changed

    doc = _yaml.safe_load((Path(__file__).resolve().parents[1] / "profiles" / "p5-training.yaml").read_text())
    doc = changed(doc, cluster__gpu_node_groups__0__desired_size=0)
    config = validate_profile(doc)
    assert "torchrun-check.yaml" not in render(config)
    results = run_checks(config, kubectl=FakeKubectl(log("nccl-good-p5.log")))
    (trainjob,) = [r for r in results if r.name == "torchrun-check"]
    assert not trainjob.passed and "runs no node" in trainjob.detail
    # The NCCL and Ray jobs would wait for nodes that never come: they fail at once too, unapplied.
    for check in ("nccl-allreduce", "ray-check"):
        assert f"{check}.yaml" not in render(config)
        (result,) = [r for r in results if r.name == check]
        assert not result.passed and "runs 0 node(s)" in result.detail, result.detail


def test_the_ray_job_runs_as_the_first_tenant_between_the_mpijob_and_the_train_job():
    """As a tenant writes one: in the first tenant's namespace with no queue name, the cluster shut
    down when the job ends (Kueue refuses a RayJob otherwise), two workers of the checked group,
    each a whole node; verify waits for the job's SUCCEEDED status and reads the submitter's log."""
    config = load_profile("p5-training")
    tenant = config.workloads.tenants[0].name
    kubectl = FakeKubectl(log("nccl-good-p5.log"))
    results = run_checks(config, kubectl=kubectl)
    steps = [call for call in kubectl.calls if call[0] in ("apply", "wait")]
    names = [Path(call[2]).name if call[0] == "apply" else call[3] for call in steps]
    assert names.index("mpijob/nccl-allreduce") < names.index("ray-check.yaml") < names.index("job/ray-check")
    assert names.index("job/ray-check") < names.index("torchrun-check.yaml")
    polled = [c for c in kubectl.calls if c[:4] == ["get", "-n", tenant, "rayjob/ray-check"]]
    assert polled[0][-1] == "jsonpath={.status.jobDeploymentStatus}"
    assert ["logs", "-n", tenant, "-l", "batch.kubernetes.io/job-name=ray-check", "--tail=-1"] in kubectl.calls
    (ray,) = [r for r in results if r.name == "ray-check"]
    assert ray.passed, ray.detail
    script, job = render(config)["ray-check.yaml"]
    assert script["kind"] == "ConfigMap" and job["kind"] == "RayJob"
    assert job["metadata"]["namespace"] == script["metadata"]["namespace"] == tenant
    assert "labels" not in job["metadata"] and job["spec"]["shutdownAfterJobFinishes"] is True
    (workers,) = job["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert workers["replicas"] == 2
    limits = workers["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == "8" and limits["vpc.amazonaws.com/efa"] == "32"
    # The driver's script is valid Python and reads the node name the workers are given.
    compile(script["data"]["check.py"], "check.py", "exec")
    env = {e["name"]: e for e in workers["template"]["spec"]["containers"][0]["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert 'os.environ["NODE_NAME"]' in script["data"]["check.py"]


@pytest.mark.parametrize(
    ("line", "passed", "reason"),
    [
        ('RAY_CHECK [{"node": "a", "gpus": 8}, {"node": "b", "gpus": 8}]', True, "each of 2 nodes"),
        ('RAY_CHECK [{"node": "a", "gpus": 8}, {"node": "a", "gpus": 8}]', False, "on 1 node(s)"),
        ('RAY_CHECK [{"node": "a", "gpus": 8}, {"node": "b", "gpus": 4}]', False, "[8, 4] GPUs"),
        ('RAY_CHECK [{"node": "a", "gpus": 8}]', False, "on 1 node(s)"),
        ("RAY_CHECK not json", False, "not understood"),
        ("Job 'ray-check-zq8wd' failed", False, "printed no result"),
    ],
)
def test_the_ray_check_needs_both_nodes_with_all_their_gpus(p5, line, passed, reason):
    result = check_ray(f"2026-12-02 05:10:06,300\tINFO worker.py:1942 -- Connected\n{line}\n", p5)
    assert result.passed is passed and reason in result.detail, result.detail


def test_the_repair_loop_check_passes_when_every_gpu_node_is_monitored():
    result = check_repair_loop(log("nodes-p5.json"), log("agent-pods-p5.json"))
    assert result.passed and result.detail.startswith("2 GPU node(s) monitored"), result


def _without(document: str, drop) -> str:
    parsed = json.loads(document)
    parsed["items"] = [item for item in parsed["items"] if not drop(item)]
    return json.dumps(parsed)


def test_a_gpu_node_without_the_agent_or_its_condition_fails_the_gate():
    nodes, pods = log("nodes-p5.json"), log("agent-pods-p5.json")
    no_agent = _without(pods, lambda pod: pod["spec"]["nodeName"] == "ip-10-0-7-22.ec2.internal")
    result = check_repair_loop(nodes, no_agent)
    assert not result.passed and result.detail == "ip-10-0-7-22.ec2.internal: no running node monitoring agent"
    parsed = json.loads(nodes)
    conditions = parsed["items"][1]["status"]["conditions"]
    parsed["items"][1]["status"]["conditions"] = [c for c in conditions if c["type"] != "AcceleratedHardwareReady"]
    result = check_repair_loop(json.dumps(parsed), pods)
    assert not result.passed and "ip-10-0-7-21.ec2.internal: no AcceleratedHardwareReady condition" in result.detail
    parsed["items"][1]["status"]["conditions"] = [
        *conditions[:-1],
        {"type": "AcceleratedHardwareReady", "status": "False", "reason": "NvidiaXID79Error"},
    ]
    result = check_repair_loop(json.dumps(parsed), pods)
    assert not result.passed and "AcceleratedHardwareReady is False (NvidiaXID79Error)" in result.detail
    # The system node has neither: it is not a GPU node, so it is not judged.
    assert check_repair_loop(_without(nodes, lambda n: "gpu-training" in str(n)), pods).detail.startswith("no GPU node")


def test_the_smoke_test_runs_as_the_restricted_profile_asks_and_no_check_escalates():
    files = render(load_profile("p5-training"))
    (smoke,) = files["gpu-smoke-test.yaml"]
    pod, (container,) = smoke["spec"]["securityContext"], smoke["spec"]["containers"]
    assert pod == {"runAsNonRoot": True, "runAsUser": 65534, "seccompProfile": {"type": "RuntimeDefault"}}
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
    }
    (topology,) = files["topology-check.yaml"]
    assert topology["spec"]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert topology["spec"]["containers"][0]["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
    }
    for pod in (smoke, topology):
        assert pod["spec"]["automountServiceAccountToken"] is False  # no check talks to the API server


@pytest.mark.parametrize(
    ("state", "outcome"), [("Failed", "FAILED Job entrypoint command failed"), ("Complete", "STOPPED ")]
)
def test_a_ray_job_that_fails_is_reported_at_once_and_deleted(state, outcome):
    """KubeRay's end states are Complete and Failed: verify stops waiting at either, reports the
    job's status and message, and deletes the RayJob so its pods free the GPU nodes."""
    kubectl = FakeKubectl(log("nccl-good-p5.log"))
    kubectl.ray_state, kubectl.ray_outcome = state, outcome
    results = run_checks(load_profile("p5-training"), kubectl=kubectl)
    (ray,) = [r for r in results if r.name == "ray-check"]
    assert not ray.passed and outcome.split()[0] in ray.detail, ray.detail
    assert ["delete", "-n", "ml-team", "rayjob/ray-check", "--ignore-not-found", "--wait=false"] in kubectl.calls
    assert not any(c[0] == "logs" and "batch.kubernetes.io/job-name=ray-check" in c for c in kubectl.calls)


def test_grafana_must_serve_every_provisioned_dashboard():
    """verify asks the running Grafana (its search API, from inside its container) which dashboards
    it loaded, against every dashboard ConfigMap its sidecar should have read."""
    kubectl = FakeKubectl(log("nccl-good-p5.log"))
    kubectl.grafana_missing = ("karpenter",)
    results = run_checks(load_profile("p5-training"), kubectl=kubectl)
    (dashboards,) = [r for r in results if r.name == "grafana-dashboards"]
    assert not dashboards.passed and "karpenter" in dashboards.detail
    (ask,) = [c for c in kubectl.calls if c[0] == "exec" and "deploy/monitoring-grafana" in c]
    assert ask[:7] == ["exec", "-n", "monitoring", "deploy/monitoring-grafana", "-c", "grafana", "--"]
    assert "GF_SECURITY_ADMIN_PASSWORD" in ask[-1] and "/api/search?type=dash-db" in ask[-1]
    from addons.monitoring.checks import check_dashboards

    assert not check_dashboards("<html>login</html>", {"gpu-fleet"}).passed
    assert check_dashboards(json.dumps(grafana_search()), {"gpu-fleet", "karpenter"}).passed


def test_the_health_check_must_run_on_every_gpu_node_and_quarantine_nothing():
    from addons.gpu_operator.check import check_gpu_health
    from components.acceptance import gpu_node_names

    nodes = json.loads(log("nodes-p5.json"))
    names = gpu_node_names(nodes["items"])
    assert check_gpu_health(json.dumps(nodes), health_check_pods()).passed
    missing = check_gpu_health(json.dumps(nodes), health_check_pods(skip=names[0]))
    assert not missing.passed and f"{names[0]}: the health check does not run there" in missing.detail
    node = next(n for n in nodes["items"] if n["metadata"]["name"] == names[-1])
    node.setdefault("spec", {}).setdefault("taints", []).append(
        {"key": "platform/gpu-health", "value": "failed", "effect": "NoSchedule"}
    )
    node["metadata"].setdefault("annotations", {})["platform/gpu-health-reasons"] = "the driver reaches 7 of 8 GPUs"
    quarantined = check_gpu_health(json.dumps(nodes), health_check_pods())
    assert not quarantined.passed
    assert f"{names[-1]}: quarantined (the driver reaches 7 of 8 GPUs)" in quarantined.detail


def test_the_gate_fails_a_train_job_that_ran_over_tcp():
    """The public PyTorch image's run: every rank joined and summed, over sockets."""
    kubectl = FakeKubectl(
        log("nccl-good-p5.log"), trainjob_log=torchrun_log("torch-public-image-socket-fallback-p5.log")
    )
    results = run_checks(load_profile("p5-training"), kubectl=kubectl)
    (failed,) = [r for r in results if not r.passed]
    assert failed.name == "torchrun-check" and "fell back to TCP sockets" in failed.detail


def test_a_train_job_whose_image_is_not_pushed_fails_at_once_unapplied():
    kubectl = FakeKubectl(log("nccl-good-p5.log"))
    asked: list[str] = []

    def missing(project_image: str) -> str:
        asked.append(project_image)
        return "the runtime's image is gone"

    results = run_checks(load_profile("p5-training"), kubectl=kubectl, missing_image=missing)
    assert asked == ["pytorch-efa"]  # the EFA runtime's image, the build layer's
    (failed,) = [r for r in results if not r.passed]
    assert failed.name == "torchrun-check" and failed.detail == "the runtime's image is gone"
    assert "torchrun-check.yaml" not in kubectl.applied
    assert not any(call[0] == "wait" and call[3] == "trainjob/torchrun-check" for call in kubectl.calls)


def test_a_train_job_on_the_profiles_own_image_does_not_ask_for_the_build_layers():
    """With torch_image set, the runtime runs the profile's image: ECR's pytorch-efa is not asked
    about, and the TrainJob runs."""
    from profiles import validate_profile
    from tests.test_cuda_driver import p5

    asked: list[str] = []
    own = validate_profile(p5(addons__trainer__torch_image="registry.example.com/mine:1"))
    kubectl = FakeKubectl(log("nccl-good-p5.log"))
    results = run_checks(own, kubectl=kubectl, missing_image=lambda name: asked.append(name) or "gone")
    assert not asked
    assert "torchrun-check.yaml" in kubectl.applied
    assert [r.name for r in results if r.name == "torchrun-check"] == ["torchrun-check"]
