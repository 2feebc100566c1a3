"""The GPU health check's acceptance check (`verify`, read-only): the checker DaemonSet
(addons/gpu_operator/health_check.py) runs on every GPU node, and no GPU node is quarantined."""

from __future__ import annotations

import json

from addons.gpu_operator.gpu_health import QUARANTINE_KEY, REASON_ANNOTATION
from addons.gpu_operator.health_check import HEALTH_CHECK_SELECTOR
from addons.gpu_operator.health_check import NAME as HEALTH_CHECK_NAME
from components.acceptance import AcceptanceCheck, CheckResult, CheckRun, gpu_node_names, running_on

HEALTH_CHECK = HEALTH_CHECK_NAME  # the check is named after the DaemonSet it looks at


def check_gpu_health(nodes_json: str, checker_pods_json: str) -> CheckResult:
    """The GPU health check runs on every GPU node, and no GPU node is quarantined by it (the
    reasons it annotated are reported)."""
    nodes = json.loads(nodes_json or "{}").get("items", [])
    gpu_nodes = set(gpu_node_names(nodes))
    if not gpu_nodes:
        return CheckResult(HEALTH_CHECK, False, "no GPU node is running: nothing can be checked")
    problems = [
        f"{name}: the health check does not run there" for name in sorted(gpu_nodes - running_on(checker_pods_json))
    ]
    for node in nodes:
        name = node["metadata"]["name"]
        if name in gpu_nodes and any(t.get("key") == QUARANTINE_KEY for t in node.get("spec", {}).get("taints") or []):
            reasons = node["metadata"].get("annotations", {}).get(REASON_ANNOTATION, "no reason recorded")
            problems.append(f"{name}: quarantined ({reasons})")
    if problems:
        return CheckResult(HEALTH_CHECK, False, "; ".join(problems))
    return CheckResult(HEALTH_CHECK, True, f"runs on all {len(gpu_nodes)} GPU nodes, none quarantined")


def gpu_health_check(namespace: str) -> AcceptanceCheck:
    def run(check: CheckRun) -> CheckResult:
        checkers = check.kubectl(["get", "pods", "-n", namespace, "-l", HEALTH_CHECK_SELECTOR, "-o", "json"])
        return check_gpu_health(check.nodes_json, checkers.stdout)

    return AcceptanceCheck(name=HEALTH_CHECK, run=run)
