"""Typed models of the CRD kinds the platform renders (Karpenter NodePool and EC2NodeClass,
Kubeflow MPIJob). The Kubernetes OpenAPI schemas do not know them, so these models are their
schema: builders construct them, and a misspelled field is an error at synth time."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from components.k8s.mpi import MPIJOB_API_VERSION, MPIJOB_KIND


class K8sModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)

    def manifest(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)


class ObjectMeta(K8sModel):
    name: str
    namespace: str | None = None
    labels: dict[str, str] | None = None


class Requirement(K8sModel):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: list[str] | None = None


class Taint(K8sModel):
    key: str
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class NodeClassRef(K8sModel):
    group: Literal["karpenter.k8s.aws"] = "karpenter.k8s.aws"
    kind: Literal["EC2NodeClass"] = "EC2NodeClass"
    name: str


class NodeClaimSpec(K8sModel):
    node_class_ref: NodeClassRef
    requirements: list[Requirement]
    taints: list[Taint] | None = None
    expire_after: str
    termination_grace_period: str | None = None


class NodeClaimTemplateMeta(K8sModel):
    labels: dict[str, str]


class NodeClaimTemplate(K8sModel):
    metadata: NodeClaimTemplateMeta
    spec: NodeClaimSpec


DisruptionReason = Literal["Empty", "Drifted", "Underutilized"]


class Budget(K8sModel):
    """How many of a pool's nodes Karpenter may disrupt at once, for which reasons."""

    nodes: str
    reasons: list[DisruptionReason] | None = None


class Disruption(K8sModel):
    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized"]
    consolidate_after: str
    budgets: list[Budget] | None = None


class NodePoolSpec(K8sModel):
    template: NodeClaimTemplate
    disruption: Disruption
    limits: dict[str, str]


class NodePool(K8sModel):
    api_version: Literal["karpenter.sh/v1"] = "karpenter.sh/v1"
    kind: Literal["NodePool"] = "NodePool"
    metadata: ObjectMeta
    spec: NodePoolSpec


class SelectorTerm(K8sModel):
    tags: dict[str, str] | None = None
    id: str | None = None
    alias: str | None = None


class CapacityReservationSelectorTerm(K8sModel):
    """karpenter-provider-aws v1.14.1 pkg/apis/v1/ec2nodeclass.go: id or tags (ORed between terms)."""

    id: str | None = None
    tags: dict[str, str] | None = None


class MetadataOptions(K8sModel):
    http_endpoint: Literal["enabled", "disabled"] = "enabled"
    http_tokens: Literal["required", "optional"]
    http_put_response_hop_limit: int = Field(ge=1, le=64)


class Ebs(K8sModel):
    volume_size: str
    volume_type: Literal["gp3"] = "gp3"
    encrypted: bool
    delete_on_termination: bool = True


class BlockDeviceMapping(K8sModel):
    device_name: str
    ebs: Ebs
    root_volume: bool = True


class Ec2NodeClassSpec(K8sModel):
    role: str
    ami_selector_terms: list[SelectorTerm]
    subnet_selector_terms: list[SelectorTerm]
    security_group_selector_terms: list[SelectorTerm]
    capacity_reservation_selector_terms: list[CapacityReservationSelectorTerm] | None = None
    metadata_options: MetadataOptions
    block_device_mappings: list[BlockDeviceMapping]
    instance_store_policy: Literal["RAID0"] | None = None
    user_data: str | None = None
    tags: dict[str, str] | None = None


class Ec2NodeClass(K8sModel):
    api_version: Literal["karpenter.k8s.aws/v1"] = "karpenter.k8s.aws/v1"
    kind: Literal["EC2NodeClass"] = "EC2NodeClass"
    metadata: ObjectMeta
    spec: Ec2NodeClassSpec


class ReplicaSpec(K8sModel):
    replicas: int = Field(ge=1)
    template: dict[str, Any]  # a PodTemplateSpec: validated against the Kubernetes OpenAPI schema


class RunPolicy(K8sModel):
    clean_pod_policy: Literal["None", "Running", "All"] = "Running"
    backoff_limit: int | None = None
    active_deadline_seconds: int | None = None


class MpiJobSpec(K8sModel):
    slots_per_worker: int = Field(ge=1)
    run_policy: RunPolicy
    launcher_creation_policy: Literal["AtStartup", "WaitForWorkersReady"] = "AtStartup"
    """v0.8.0: WaitForWorkersReady creates the launcher once every worker is Ready
    (mpi_job_controller.go: countReadyWorkerPods(worker) == len(worker))."""
    mpi_implementation: Literal["OpenMPI", "Intel", "MPICH"] = "OpenMPI"
    mpi_replica_specs: dict[Literal["Launcher", "Worker"], ReplicaSpec] = Field(alias="mpiReplicaSpecs")


class MpiJob(K8sModel):
    api_version: Literal["kubeflow.org/v2beta1"] = "kubeflow.org/v2beta1"
    kind: Literal["MPIJob"] = "MPIJob"
    metadata: ObjectMeta
    spec: MpiJobSpec


class AlertRule(K8sModel):
    """One alerting rule of a PrometheusRule (prometheus-operator monitoring.coreos.com/v1 Rule)."""

    alert: str = Field(pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*$")
    expr: str = Field(min_length=1)
    for_: str = Field("0m", alias="for", pattern=r"^\d+[smhd]$")
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class RuleGroup(K8sModel):
    name: str = Field(min_length=1)
    rules: list[AlertRule] = Field(min_length=1)


class PrometheusRuleSpec(K8sModel):
    groups: list[RuleGroup] = Field(min_length=1)


class NamespacedMeta(K8sModel):
    name: str
    namespace: str


class PrometheusRule(K8sModel):
    api_version: Literal["monitoring.coreos.com/v1"] = "monitoring.coreos.com/v1"
    kind: Literal["PrometheusRule"] = "PrometheusRule"
    metadata: NamespacedMeta
    spec: PrometheusRuleSpec


CRD_MODELS: dict[tuple[str, str], type[K8sModel]] = {
    ("monitoring.coreos.com/v1", "PrometheusRule"): PrometheusRule,
    ("karpenter.sh/v1", "NodePool"): NodePool,
    ("karpenter.k8s.aws/v1", "EC2NodeClass"): Ec2NodeClass,
    (MPIJOB_API_VERSION, MPIJOB_KIND): MpiJob,
}


def pod_templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod templates inside a CRD object, to validate as core v1 PodTemplate objects."""
    if obj.get("kind") == "MPIJob":
        return [spec["template"] for spec in obj["spec"]["mpiReplicaSpecs"].values()]
    return []
