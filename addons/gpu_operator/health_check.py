"""The GPU node health check: a DaemonSet on every GPU node, beside the node monitoring agent.

The agent reports faults the driver and DCGM raise as they happen (XIDs, NVLink, thermal) and EKS
node repair acts on its condition. This check looks for what shows only when asked: a GPU the
driver no longer reaches, missing EFA devices, and DCGM's health watches (PCIe, memory, InfoROM,
thermal, power, NVLink) read from the node's one host engine. A failing node is tainted so nothing
new lands on it (running jobs stay) and released after three complete, passing rounds in a row. Two containers share a
folder: the probe (DCGM image, privileged for the GPUs, host network for the host engine;
health-probe.sh) and the judge (plain Python, unprivileged; gpu_health.py), which alone talks to
the API server, as a service account that may read and patch nodes.

DCGM's active diagnostic (dcgmi diag, run by nvvs) is not used: the agent's host engine ships
without the CUDA plugins nvvs loads at every run level (aws/eks-node-monitoring-agent Dockerfile
at v1.7.0: the -core and -proprietary packages only; DCGM v4.6.0 nvvs/src/NvidiaValidationSuite.cpp
and TestFramework.inl), and against an engine it cannot reach dcgmi diag starts one of its own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from components.k8s.security import NOBODY, non_root_container
from components.labels import NODE_GROUP_LABEL
from components.node_monitoring import HOST_ENGINE
from profiles.catalog import CATALOG
from profiles.models import PlatformConfig
from profiles.versions import DCGM_IMAGE, PYTHON_IMAGE

NAME = "gpu-health-check"
LABELS = {"app.kubernetes.io/name": NAME}
HEALTH_CHECK_SELECTOR = ",".join(f"{key}={value}" for key, value in LABELS.items())
HERE = Path(__file__).parent
PROBE_SCRIPT = (HERE / "health-probe.sh").read_text()
JUDGE_SCRIPT = (HERE / "gpu_health.py").read_text()
# Nodes with NVIDIA GPUs, as GPU feature discovery labels them (the GPU Operator's own operands
# select on it).
GPU_PRESENT = "nvidia.com/gpu.present"
ON_GPU_NODES = {"matchExpressions": [{"key": GPU_PRESENT, "operator": "In", "values": ["true"]}]}
SCRIPTS, RESULTS = "/scripts", "/results"


def expectations(config: PlatformConfig) -> dict[str, Any]:
    """What a healthy GPU node shows: per managed node group (its label), the instance type's GPUs
    and the EFA devices the group attaches; for other GPU nodes (Karpenter's pool), the catalog's GPUs."""
    return {
        "group_label": NODE_GROUP_LABEL,
        "groups": {
            group.name: {
                "gpus": group.catalog_entry.gpu_count,
                "efa": group.catalog_entry.efa_interfaces if group.efa_enabled else 0,
            }
            for group in config.cluster.gpu_node_groups
        },
        "instance_types": {name: entry.gpu_count for name, entry in sorted(CATALOG.items())},
    }


def health_check_objects(namespace: str, config: PlatformConfig, interval_minutes: int) -> list[dict[str, Any]]:
    labels = dict(LABELS)
    meta = {"name": NAME, "namespace": namespace, "labels": labels}
    probe = {
        "name": "probe",
        "image": DCGM_IMAGE,
        "command": ["bash", f"{SCRIPTS}/health-probe.sh", RESULTS, str(interval_minutes * 60)],
        "env": [
            {"name": "HOST_ENGINE", "value": HOST_ENGINE},
            # The node monitoring agent, whose host engine this reads, runs where GPU node groups exist;
            # it schedules no engine on arm64 nodes, where the probe skips DCGM (health-probe.sh).
            {"name": "DCGM_HEALTH", "value": "1" if config.cluster.gpu_node_groups else "0"},
            # Every GPU, for nvidia-smi, without taking any from the scheduler (the node's jobs keep them):
            # the EKS AL2023 NVIDIA AMI makes nvidia containerd's default runtime (nodeadm), as the
            # agent's own host engine relies on.
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
            {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility"},
        ],
        "securityContext": {"privileged": True},
        "resources": {"requests": {"cpu": "20m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        "volumeMounts": [
            {"name": "scripts", "mountPath": SCRIPTS, "readOnly": True},
            {"name": "results", "mountPath": RESULTS},
        ],
    }
    judge = {
        "name": "judge",
        "image": PYTHON_IMAGE,
        "command": [
            "python3",
            f"{SCRIPTS}/gpu_health.py",
            RESULTS,
            f"{SCRIPTS}/expectations.json",
            str(interval_minutes * 60),
        ],
        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "securityContext": non_root_container(NOBODY),
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
        "volumeMounts": [
            {"name": "scripts", "mountPath": SCRIPTS, "readOnly": True},
            {"name": "results", "mountPath": RESULTS, "readOnly": True},
        ],
    }
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": NAME, "labels": labels},
            # Reading its node's labels and taints, and writing the quarantine taint and its reasons.
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": NAME, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}],
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta,
            "data": {
                "health-probe.sh": PROBE_SCRIPT,
                "gpu_health.py": JUDGE_SCRIPT,
                "expectations.json": json.dumps(expectations(config), sort_keys=True),
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": meta,
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": NAME,
                        # Like the node monitoring agent: it must fit on a node full of training pods.
                        "priorityClassName": "system-node-critical",
                        # The node's one host engine listens on the node (the agent's hostPort 5555).
                        "hostNetwork": True,
                        "dnsPolicy": "ClusterFirstWithHostNet",
                        "affinity": {
                            "nodeAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [ON_GPU_NODES]}
                            }
                        },
                        # The GPU taint, and its own quarantine taint: it must keep running to lift it.
                        "tolerations": [{"operator": "Exists"}],
                        # The judge's syscalls filtered too (the privileged probe runs unconfined whatever this says).
                        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                        "containers": [probe, judge],
                        "volumes": [
                            {"name": "scripts", "configMap": {"name": NAME}},
                            {"name": "results", "emptyDir": {"sizeLimit": "16Mi"}},
                        ],
                    },
                },
            },
        },
    ]
