"""The GPU rules fire on the same faults whichever way pods get GPUs (issue 47, item 2): each fault is
fed to promtool twice, as the series the device plugin mode shows (kube-state-metrics' nvidia_com_gpu)
and as those DRA mode shows (the DCGM exporter's GPUs, with its own copy of every allocated one, the
node's instance type label, the pods' claim templates), and the same alert or record must come out.
Where the series come from at the pinned versions: addons/gpu_operator/gpu_counts.py and
tests/fixtures/metrics/contract.json."""

from __future__ import annotations

import pytest

from addons.gpu_operator import DEFINITION
from addons.gpu_operator.gpu_counts import NODE_ALLOCATABLE, NODE_CAPACITY, POD_REQUESTED
from addons.gpu_operator.rules import DRA_GPU_RULES, GPU_RULES
from components.dashboards import metric_names, queries
from components.node_monitoring import CRITICAL_XIDS
from tests import test_alert_rules
from tests.test_alert_rules import run

promtool = test_alert_rules.promtool  # the fixture

MODES = {"device-plugin": GPU_RULES, "dra": DRA_GPU_RULES}
NODE = "gpu-node-1"
INSTANCE_TYPE = "p5.48xlarge"  # 8 GPUs (profiles/catalog.py)
EXPORTER = {"namespace": DEFINITION.namespace, "pod": "nvidia-dcgm-exporter-dra-x7k2p", "container": "exporter"}
WORKLOAD = {"namespace": "ml-team", "pod": "train-0", "container": "trainer"}
# What the DRA-mode exporter adds to a GPU's series for the pod whose claim holds it.
DRA_CLAIM = {"dra_claim_name": "train-0-gpu-abcde", "dra_driver_name": "gpu.nvidia.com", "dra_pool_name": NODE}


def selector(metric: str, labels: dict[str, str]) -> str:
    return metric + "{" + ",".join(f'{key}="{value}"' for key, value in labels.items()) + "}"


def gpu_labels(index: int) -> dict[str, str]:
    return {"gpu": str(index), "UUID": f"GPU-{index:04d}", "Hostname": NODE}


def dcgm(metric: str, index: int, values: str, holder: dict[str, str] | None) -> dict:
    """One GPU's series as the exporter writes it for `holder` (None: no pod; the scrape target's
    labels fill in, under honorLabels, as the exporter's own)."""
    labels = {**gpu_labels(index), **(holder or {})}
    return {"series": selector(metric, labels), "values": values}


def node_gpus(mode: str, offered: str, allocated: tuple[int, ...] = ()) -> list[dict]:
    """An 8-GPU node whose offered GPUs follow `offered` (a promtool value string, e.g. "8x5 7x15"):
    device plugin mode, its capacity and allocatable; DRA mode, its instance type label and the
    exporter's GPUs (GPU 7 drops out while fewer than 8 are offered), each GPU in `allocated` twice."""
    if mode == "device-plugin":
        labels = {"node": NODE, "resource": "nvidia_com_gpu", "unit": "integer"}
        steps = len(expand(offered))
        return [
            {"series": selector("kube_node_status_capacity", labels), "values": f"8x{steps - 1}"},
            {"series": selector("kube_node_status_allocatable", labels), "values": offered},
        ]
    series = [
        {
            "series": selector(
                "kube_node_labels", {"node": NODE, "label_node_kubernetes_io_instance_type": INSTANCE_TYPE}
            ),
            "values": f"1x{len(expand(offered)) - 1}",
        }
    ]
    for index in range(8):
        present = [count > index for count in expand(offered)]
        values = " ".join("50" if here else "stale" for here in present)
        series.append(dcgm("DCGM_FI_DEV_GPU_UTIL", index, values, EXPORTER))
        if index in allocated:
            series.append(dcgm("DCGM_FI_DEV_GPU_UTIL", index, values, {**WORKLOAD, **DRA_CLAIM}))
    return series


def expand(values: str) -> list[int]:
    """promtool's "a x n" notation, one number per step (only the "Nxk" and "N" forms used here)."""
    out: list[int] = []
    for part in values.split():
        value, _, times = part.partition("x")
        out += [int(value)] * (int(times) + 1 if times else 1)
    return out


def dropped(mode: str) -> dict:
    rule = next(r for r in MODES[mode]["groups"][0]["rules"] if r.get("alert") == "GpuAllocatableDropped")
    return {
        "exp_labels": {"severity": "critical", "node": NODE},
        "exp_annotations": {
            "summary": f"Node {NODE} offers 1 GPU(s) fewer than it has",
            "description": rule["annotations"]["description"],
        },
    }


def on_node(record: str) -> str:
    return f'{record}{{node="{NODE}"}}'


FAULTS = [
    # (what, offered GPUs over 20 minutes, allocated GPUs, fires at 15m)
    ("a GPU lost for over five minutes", "8x5 7x15", (), True),
    ("the same, with GPUs allocated to a pod", "8x5 7x15", (0, 1, 2), True),
    ("a blip that recovered", "8x5 7x2 8x13", (), False),
    ("a healthy node", "8x20", (), False),
    ("a healthy node with every GPU allocated", "8x20", tuple(range(8)), False),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("what", "offered", "allocated", "fires"), FAULTS, ids=[f[0] for f in FAULTS])
def test_a_node_offering_fewer_gpus_pages_in_both_modes(promtool, tmp_path, mode, what, offered, allocated, fires):
    test = {
        "interval": "1m",
        "input_series": node_gpus(mode, offered, allocated),
        "alert_rule_test": [
            {"eval_time": "15m", "alertname": "GpuAllocatableDropped", "exp_alerts": [dropped(mode)] if fires else []}
        ],
        "promql_expr_test": [
            # One source of a node's GPUs, the same numbers in both modes (an allocated GPU counted once).
            {
                "expr": NODE_CAPACITY,
                "eval_time": "15m",
                "exp_samples": [{"labels": on_node(NODE_CAPACITY), "value": 8}],
            },
            {
                "expr": NODE_ALLOCATABLE,
                "eval_time": "15m",
                "exp_samples": [{"labels": on_node(NODE_ALLOCATABLE), "value": expand(offered)[15]}],
            },
        ],
    }
    result = run(promtool, tmp_path, [test], MODES[mode])
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_node_harness_can_fail(promtool, tmp_path):
    """A DRA node whose exporter lists every GPU does not page: expecting it to fails."""
    test = {
        "interval": "1m",
        "input_series": node_gpus("dra", "8x20", tuple(range(8))),
        "alert_rule_test": [{"eval_time": "15m", "alertname": "GpuAllocatableDropped", "exp_alerts": [dropped("dra")]}],
    }
    assert run(promtool, tmp_path, [test], DRA_GPU_RULES).returncode != 0


def pod_gpus(mode: str, pod: str, gpus: int, phase: str) -> list[dict]:
    """A pod in ml-team asking for `gpus` GPUs (0: none) in `phase`, as kube-state-metrics shows it."""
    who = {"namespace": "ml-team", "pod": pod, "uid": f"uid-{pod}"}
    series = [{"series": selector("kube_pod_status_phase", {**who, "phase": phase}), "values": "1x20"}]
    if gpus and mode == "device-plugin":
        labels = {**who, "container": "trainer", "resource": "nvidia_com_gpu", "unit": "integer"}
        series.append({"series": selector("kube_pod_container_resource_requests", labels), "values": f"{gpus}x20"})
    elif gpus:
        # The platform's claim templates are gpu-<count> (components/k8s/gpus.py); the claim's
        # name stays empty until the claim is created.
        labels = {**who, "claim_name": "gpu", "resourceclaim_name": "", "resourceclaim_template_name": f"gpu-{gpus}"}
        series.append({"series": selector("kube_pod_resourceclaim_info", labels), "values": "1x20"})
    return series


@pytest.mark.parametrize("mode", MODES)
def test_pending_gpu_pods_are_counted_the_same_in_both_modes(promtool, tmp_path, mode):
    series = [
        *pod_gpus(mode, "train-0", 8, "Pending"),
        *pod_gpus(mode, "notebook-0", 1, "Running"),
        *pod_gpus(mode, "cpu-only", 0, "Pending"),
    ]
    requested = [
        {"labels": f'{POD_REQUESTED}{{namespace="ml-team", pod="{pod}"}}', "value": gpus}
        for pod, gpus in (("notebook-0", 1), ("train-0", 8))
    ]
    test = {
        "interval": "1m",
        "input_series": series,
        "promql_expr_test": [
            {"expr": POD_REQUESTED, "eval_time": "5m", "exp_samples": requested},
            {
                "expr": "namespace:gpu_requesting_pods_pending:count",
                "eval_time": "5m",
                "exp_samples": [
                    {"labels": 'namespace:gpu_requesting_pods_pending:count{namespace="ml-team"}', "value": 1}
                ],
            },
        ],
    }
    result = run(promtool, tmp_path, [test], MODES[mode])
    assert result.returncode == 0, result.stdout + result.stderr


def holders(mode: str) -> list[dict[str, str] | None]:
    """Who a GPU allocated to train-0 has series for: the workload, and in DRA mode the exporter too."""
    return [{**WORKLOAD, **DRA_CLAIM}, EXPORTER] if mode == "dra" else [WORKLOAD]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("alert", "metric", "values", "value"),
    [
        ("GpuCriticalXid", "DCGM_FI_DEV_XID_ERRORS", f"{CRITICAL_XIDS[0]}x10", str(CRITICAL_XIDS[0])),
        ("GpuXidCodeReported", "DCGM_FI_DEV_XID_ERRORS", "13x10", "13"),
        ("GpuRowRemapFailed", "DCGM_FI_DEV_ROW_REMAP_FAILURE", "1x10", "1"),
    ],
)
def test_a_fault_on_an_allocated_gpu_raises_one_alert_with_its_pod(
    promtool, tmp_path, mode, alert, metric, values, value
):
    """In DRA mode the exporter reports an allocated GPU twice (its own admin claim and the pod's):
    the alert still fires once, naming the pod that holds the GPU, as in device plugin mode."""
    series = [dcgm(metric, 0, values, holder) for holder in holders(mode)]
    rule = next(r for r in MODES[mode]["groups"][0]["rules"] if r.get("alert") == alert)
    labels = {**gpu_labels(0), **holders(mode)[0]}
    annotations = {
        key: text.replace("{{ $labels.gpu }}", "0")
        .replace("{{ $labels.Hostname }}", NODE)
        .replace("{{ $labels.hostname }}", "")
        .replace("{{ $value }}", value)
        for key, text in rule["annotations"].items()
    }
    expected = {"exp_labels": {**rule["labels"], **labels}, "exp_annotations": annotations}
    test = {
        "interval": "30s",
        "input_series": series,
        "alert_rule_test": [{"eval_time": "5m", "alertname": alert, "exp_alerts": [expected]}],
    }
    result = run(promtool, tmp_path, [test], MODES[mode])
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("mode", MODES)
def test_an_idle_allocated_gpu_warns_once_in_both_modes(promtool, tmp_path, mode):
    series = [dcgm("DCGM_FI_DEV_GPU_UTIL", 0, "0x40", holder) for holder in holders(mode)]
    rule = next(r for r in MODES[mode]["groups"][0]["rules"] if r.get("alert") == "GpuAllocatedIdle")
    expected = {
        "exp_labels": {**rule["labels"], **gpu_labels(0), **holders(mode)[0]},
        "exp_annotations": {
            "summary": "GPU 0 of pod ml-team/train-0 has been idle for 30 minutes",
            "description": rule["annotations"]["description"],
        },
    }
    test = {
        "interval": "1m",
        "input_series": series,
        "alert_rule_test": [{"eval_time": "35m", "alertname": "GpuAllocatedIdle", "exp_alerts": [expected]}],
    }
    result = run(promtool, tmp_path, [test], MODES[mode])
    assert result.returncode == 0, result.stdout + result.stderr


# The series whose meaning depends on the mode: only the GPU-count recording rules may read them.
MODE_SERIES = {
    "kube_node_status_capacity",
    "kube_node_status_allocatable",
    "kube_pod_container_resource_requests",
    "kube_pod_resourceclaim_info",
    "kube_node_labels",
}
COUNTS = {NODE_CAPACITY, NODE_ALLOCATABLE, POD_REQUESTED}


@pytest.mark.parametrize("mode", MODES)
def test_gpus_are_counted_in_one_place(mode):
    rules = MODES[mode]["groups"][0]["rules"]
    assert {rule.get("record") for rule in rules} >= COUNTS
    for rule in rules:
        if rule.get("record") not in COUNTS:
            assert not metric_names(rule["expr"]) & MODE_SERIES, rule.get("alert") or rule["record"]


def test_the_gpu_dashboards_count_gpus_through_the_rules():
    from addons.gpu_operator.dashboards import DASHBOARDS

    read = {name for model in DASHBOARDS for expr in queries(model) for name in metric_names(expr)}
    assert not read & MODE_SERIES
    assert {NODE_CAPACITY, NODE_ALLOCATABLE, POD_REQUESTED} <= read


def per_node_queries() -> list[str]:
    """The GPU fleet's panels that add up or average a node's GPUs."""
    from addons.gpu_operator.dashboards import DASHBOARDS

    return [
        expr for model in DASHBOARDS for expr in queries(model) if expr.startswith(("sum by (Host", "avg by (Host"))
    ]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("expr", per_node_queries())
def test_per_node_panels_count_each_gpu_once_in_both_modes(promtool, tmp_path, mode, expr):
    """Two GPUs, GPU 0 allocated to train-0 (in DRA mode also on the exporter's own series): the
    node's sum or average is the same in both modes."""
    (metric,) = metric_names(expr)
    counter = "rate(" in expr
    series = [
        dcgm(metric, index, "0+60x10" if counter else f"{value}x10", holder)
        for index, value in ((0, 100), (1, 50))
        for holder in (holders(mode) if index == 0 else [EXPORTER])
    ]
    each = [1.0, 1.0] if counter else [100, 50]
    expected = sum(each) if expr.startswith("sum") else sum(each) / len(each)
    test = {
        "interval": "1m",
        "input_series": series,
        "promql_expr_test": [
            {"expr": expr, "eval_time": "8m", "exp_samples": [{"labels": f'{{Hostname="{NODE}"}}', "value": expected}]}
        ],
    }
    result = run(promtool, tmp_path, [test], MODES[mode])
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_fleet_has_per_node_panels():
    assert len(per_node_queries()) >= 4
