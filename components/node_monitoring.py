"""GPU fault detection: the EKS node monitoring agent, and the one DCGM host engine per GPU node.

The agent (EKS add-on eks-node-monitoring-agent) watches each node and sets conditions that EKS
node auto-repair acts on; on GPU instance types its chart also runs `dcgm-server`, an nv-hostengine
DaemonSet with hostPort 5555, which the agent (host network) reaches at localhost:5555. The GPU
Operator's DCGM exporter would otherwise embed a second host engine in its own pod. The platform
keeps the operator's standalone DCGM off, points the exporter at the agent's engine
(DCGM_REMOTE_HOSTENGINE_INFO=localhost:5555) and runs it on the host network, set explicitly: GPU
Operator v26.7.0 would switch the host network on only for that variable in its built-in
template, which it reads before applying the chart's env entries (controllers/object_controls.go,
TransformDCGMExporter). Each GPU node has exactly one host engine, the agent's.

The agent schedules its host engine on amd64 nodes only (facts below): where GPU groups are arm64
(P6e-GB200's Grace), the exporter embeds its own engine (GPU Operator's default), which is then the
node's one engine; the health check's DCGM part, a client of the agent's engine, is off there. A
profile that mixes both architectures sets the exporter once for all GPU nodes: it embeds its own,
so x86_64 nodes run two engines (the agent's and the exporter's); docs/gb200.md says what that costs.

The facts read from the agent's source at its pin (components/node_monitoring_agent.json): the
XIDs it treats as fatal (a node condition, hence repair), where its host engine listens, and the
instance types its host engine is scheduled on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

AGENT_ADDON: Literal["eks-node-monitoring-agent"] = "eks-node-monitoring-agent"
_FACTS: dict[str, Any] = json.loads((Path(__file__).with_name("node_monitoring_agent.json")).read_text())
CRITICAL_XIDS: tuple[int, ...] = tuple(_FACTS["critical_xids"])
HOST_ENGINE: str = _FACTS["host_engine"]
DCGM_INSTANCE_TYPES: frozenset[str] = frozenset(_FACTS["dcgm_instance_types"])
# Its host engine is scheduled on amd64 nodes only, whatever the instance type (and on arm64 the
# agent's own NVIDIA monitoring is off): a P6e-GB200 (Grace, arm64) node has no agent engine.
DCGM_ARCHITECTURES: frozenset[str] = frozenset(_FACTS["dcgm_architectures"])
_KUBERNETES_ARCH = {"x86_64": "amd64", "arm64": "arm64"}  # kubernetes.io/arch of each catalog architecture


def agent_host_engine_on(architecture: str) -> bool:
    """Whether the agent runs its host engine on GPU nodes of this catalog architecture."""
    return _KUBERNETES_ARCH[architecture] in DCGM_ARCHITECTURES


DCGM_REMOTE_HOSTENGINE_ENV = "DCGM_REMOTE_HOSTENGINE_INFO"

# The agent's own pods tolerate every taint; its host engine tolerates none by default, and the
# platform's GPU nodes carry nvidia.com/gpu=true:NoSchedule.
AGENT_CONFIGURATION: dict[str, Any] = {"dcgmAgent": {"tolerations": [{"operator": "Exists"}]}}


def agent_engine_on_every_gpu_node(architectures: list[str]) -> bool:
    """Whether every GPU node (of these catalog architectures, one per group) has the agent's host
    engine, so the exporter can use it instead of embedding its own."""
    return bool(architectures) and all(agent_host_engine_on(arch) for arch in architectures)
