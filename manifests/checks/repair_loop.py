"""The GPU repair loop's parts on the nodes as they are (read-only): the EKS node monitoring
agent runs on every GPU node, and each reports the condition EKS node repair acts on."""

from __future__ import annotations

import json

from components.acceptance import CheckResult, gpu_node_names, running_on

# The repair loop's parts on GPU nodes: the EKS node monitoring agent (the EKS add-on's DaemonSet,
# labelled by its chart, aws/eks-node-monitoring-agent charts/.../_helpers.tpl at v1.7.0) runs on
# each, and each carries the condition it sets on NVIDIA nodes (cmd/eks-node-monitoring-agent/
# main.go: AcceleratedHardwareReady, True with reason NvidiaGPUIsReady once NVIDIA hardware is
# seen), which EKS node repair acts on. The agent turns it False for a fault, or with reason
# DCGMError when it cannot reach the DCGM host engine: either fails this check by name.
REPAIR_CHECK = "repair-loop"


AGENT_NAMESPACE = "kube-system"


AGENT_SELECTOR = "app.kubernetes.io/name=eks-node-monitoring-agent"


REPAIR_CONDITION = "AcceleratedHardwareReady"


def check_repair_loop(nodes_json: str, agent_pods_json: str) -> CheckResult:
    nodes = json.loads(nodes_json or "{}").get("items", [])
    gpu_nodes = gpu_node_names(nodes)
    if not gpu_nodes:
        return CheckResult(REPAIR_CHECK, False, "no GPU node is running: nothing can be checked")
    agents = running_on(agent_pods_json)
    problems = []
    for node in nodes:
        name = node["metadata"]["name"]
        if name not in gpu_nodes:
            continue
        if name not in agents:
            problems.append(f"{name}: no running node monitoring agent")
        condition = next((c for c in node["status"].get("conditions", []) if c["type"] == REPAIR_CONDITION), None)
        if condition is None:
            problems.append(f"{name}: no {REPAIR_CONDITION} condition (EKS would not repair a GPU fault)")
        elif condition["status"] != "True":
            problems.append(f"{name}: {REPAIR_CONDITION} is {condition['status']} ({condition.get('reason', '')})")
    if problems:
        return CheckResult(REPAIR_CHECK, False, "; ".join(problems))
    return CheckResult(REPAIR_CHECK, True, f"{len(gpu_nodes)} GPU node(s) monitored and reporting {REPAIR_CONDITION}")
