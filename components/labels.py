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
# A tenant's namespace carries this label (value: the tenant's name); Kueue manages jobs there.
TENANT_LABEL = "platform/tenant"

# Every node, managed or Karpenter-launched: IMDSv2 only, with a PUT response hop limit of 1, so
# the token never reaches a pod's own network namespace and no pod can read the node role's
# credentials. Host-network pods (aws-node, kube-proxy, the Pod Identity agent, the EFA and
# NVIDIA device plugins, the FSx CSI node) still reach IMDS; everything that needs AWS
# credentials in a pod gets them from Pod Identity (CSI controllers, Karpenter, tenants).
IMDS_HOP_LIMIT = 1
# The root volume's device on the AL2023 AMIs.
ROOT_DEVICE_NAME = "/dev/xvda"
