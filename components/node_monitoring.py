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
DCGM_REMOTE_HOSTENGINE_ENV = "DCGM_REMOTE_HOSTENGINE_INFO"

# The agent's own pods tolerate every taint; its host engine tolerates none by default, and the
# platform's GPU nodes carry nvidia.com/gpu=true:NoSchedule.
AGENT_CONFIGURATION: dict[str, Any] = {"dcgmAgent": {"tolerations": [{"operator": "Exists"}]}}
