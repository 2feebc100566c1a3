"""Node labels, taints and node settings that several layers must agree on (node groups, Karpenter
pools, add-on schedulers, notebook profiles). One definition, imported everywhere."""

from __future__ import annotations

GPU_TAINT_KEY = "nvidia.com/gpu"
# Managed node groups spell effects in the EKS API's vocabulary, pods in Kubernetes'.
GPU_TAINT_EKS = {"key": GPU_TAINT_KEY, "value": "true", "effect": "NO_SCHEDULE"}
GPU_TAINT_K8S = {"key": GPU_TAINT_KEY, "value": "true", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}

ROLE_LABEL = "role"
SYSTEM_NODES = {ROLE_LABEL: "system"}
GPU_TRAINING_ROLE = "gpu-training"
EFA_LABEL = "platform/efa"
EFA_NODES = {EFA_LABEL: "true"}
NODE_GROUP_LABEL = "platform/gpu-node-group"
# Karpenter pools label their nodes with this key (values: cpu, gpu).
NODE_POOL_LABEL = "platform/node-pool"

# Every node, managed or Karpenter-launched: IMDSv2 only, with this PUT response hop limit.
# 2 hops: pods on the host network (and containers behind a bridge) can still reach IMDSv2.
IMDS_HOP_LIMIT = 2
# The root volume's device on the AL2023 AMIs.
ROOT_DEVICE_NAME = "/dev/xvda"
