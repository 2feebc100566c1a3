"""What Karpenter needs of the whole profile: no GPU pool where its pods would claim GPUs through DRA."""

from __future__ import annotations

from collections.abc import Iterator

from addons.definition import PlatformConfig, ProfileRules
from addons.karpenter import DEFINITION
from profiles.base import FieldProblem
from profiles.gpus import dra_mode, karpenter_gpu_pool


# Karpenter and ResourceClaims at the pin (1.14.1, kubernetes-sigs/karpenter and
# aws/karpenter-provider-aws at tag v1.14.1):
# - the option ignore-dra-requests defaults to true (pkg/operator/options/options.go 133; the chart's
#   settings.ignoreDRARequests, charts/karpenter/values.yaml 217), and with it the scheduler refuses
#   a pod with ResourceClaims, "not yet supported by Karpenter"
#   (pkg/controllers/provisioning/scheduling/scheduler.go 583-586), permanently (537-540);
# - with it false, a new NodeClaim is simulated with the devices its instance types'
#   DynamicResources.ResourceSliceTemplates describe (scheduling/dra.go 69-75, 122-126;
#   nodeclaim.go 180-187, 225-235: no instance type survives without them), and the AWS provider
#   fills none (no DynamicResources or ResourceSliceTemplate anywhere in karpenter-provider-aws
#   v1.14.1): no instance type offers a GPU device, so a DRA GPU pod never gets a node either way.
def _no_gpu_pool_in_dra_mode(config: PlatformConfig) -> Iterator[FieldProblem]:
    """A GPU pool set in a DRA profile is refused: the platform makes none (Karpenter would never
    launch its nodes for pods that claim GPUs), and settings that silently do nothing mislead."""
    if karpenter_gpu_pool(config) or not dra_mode(config):
        return
    if "gpu_pool" in config.workloads.model_fields_set:
        version = DEFINITION.version(DEFINITION.settings(config))
        yield FieldProblem(
            ("workloads", "gpu_pool"),
            ", ".join(
                f"{key}: {value}" for key, value in config.workloads.gpu_pool.model_dump(exclude_defaults=True).items()
            )
            or "the defaults",
            f"Karpenter {version} launches no node for a pod with ResourceClaims "
            "(ignoreDRARequests, and the AWS provider describes no DRA devices of any instance type): in DRA mode "
            "GPUs run on cluster.gpu_node_groups and the platform makes no Karpenter GPU pool",
            allowed="no workloads.gpu_pool in DRA mode, or addons.gpu_operator.dra: false (the device plugin, "
            "whose nvidia.com/gpu Karpenter provisions for)",
        )


RULES = ProfileRules(checks=(_no_gpu_pool_in_dra_mode,))
