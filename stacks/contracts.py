"""What each layer gives the layers after it: one typed contract per layer.

A layer stack fills its contract with values (mostly tokens that cdktf turns into remote-state
references in the consuming stack) and publishes the fields marked `published(...)` as Terraform
outputs, so the outputs a user sees and the values later layers read come from one list.
Binding-free: importing this module loads no provider bindings.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any


@dataclass(frozen=True, kw_only=True)
class Output:
    """How one contract field is published as a Terraform output."""

    sensitive: bool = False
    """Hide the value in plans and `terraform output` (it still lands in the state)."""
    description: str | None = None
    """Shown by `terraform output`."""
    per_key: str | None = None
    """Publish a mapping as one output per key, named by this template (`{key}` is replaced)."""


def published(*, sensitive: bool = False, description: str | None = None, per_key: str | None = None) -> Any:
    """A contract field that is also a Terraform output of its layer (unset when None)."""
    return field(metadata={"output": Output(sensitive=sensitive, description=description, per_key=per_key)})


def terraform_outputs(contract: object) -> Iterator[tuple[str, Any, Output]]:
    """(output name, value, how) for every published field of a contract that has a value."""
    for spec in fields(contract):  # type: ignore[arg-type]
        how = spec.metadata.get("output")
        value = getattr(contract, spec.name)
        if how is None or value is None:
            continue
        if how.per_key is None:
            yield spec.name, value, how
        else:
            for key, item in value.items():
                yield how.per_key.format(key=key), item, how


@dataclass(frozen=True, kw_only=True)
class ClusterOutputs:
    """The cluster layer: network, control plane and node identity."""

    cluster_name: str = published()
    endpoint: str = published()
    certificate_authority: str = published(sensitive=True)
    region: str
    vpc_id: str = published()
    vpc_cidr: str
    private_subnet_ids: list[str] = published()
    gpu_subnet_id: str = published()
    node_security_group_id: str = published()
    efa_security_group_id: str | None = published()
    node_role_arn: str = published()
    node_role_name: str
    kms_key_arn: str = published()
    configure_kubectl: str = published(description="Point kubectl at the cluster")


@dataclass(frozen=True, kw_only=True)
class StorageOutputs:
    """The storage layer: data buckets and the shared file system (None when FSx is off)."""

    bucket_names: dict[str, str] = published(per_key="{key}_bucket_name")
    bucket_arns: dict[str, str] = published(per_key="{key}_bucket_arn")
    fsx_file_system_id: str | None = published()
    fsx_dns_name: str | None = published()
    fsx_mount_name: str | None = published()
    mlflow_db_address: str | None = published(description="MLflow's PostgreSQL host (private)")
    mlflow_db_name: str | None = published()
    mlflow_db_username: str | None = published()
    mlflow_db_secret_arn: str | None = published(
        description="The RDS-managed secret with MLflow's database password (read it in Secrets Manager)")
    mlflow_kms_key_arn: str | None = published()
    mlflow_artifact_bucket_name: str | None = published()
    mlflow_artifact_bucket_arn: str | None = published()


@dataclass(frozen=True, kw_only=True)
class BuildOutputs:
    """The build layer: where images land and how to build them."""

    repository_urls: dict[str, str] = published()
    image_tags: dict[str, str] = published(description="The tag each build pushes, per implementation")
    project_names: dict[str, str] = published()
    source_bucket_name: str = published()
    build_commands: dict[str, str] = published(
        description="Upload a source archive and start the build, per implementation")


@dataclass(frozen=True, kw_only=True)
class AddonsOutputs:
    """The addons layer: installed releases and what the workloads layer builds on."""

    releases: dict[str, str] = published()
    storage_class: str
    karpenter_node_role_name: str | None = published()
    karpenter_interruption_queue: str | None = published()
