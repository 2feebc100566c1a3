"""What each layer gives the layers after it: one typed contract per layer.

A layer stack fills its contract with values (mostly tokens that cdktf turns into remote-state
references in the consuming stack) and publishes the fields marked `published(...)` as Terraform
outputs, so the outputs a user sees and the values later layers read come from one list.
Binding-free: importing this module loads no provider bindings.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any

from components.karpenter_nodes import KarpenterNodes
from components.mlflow_backend import MlflowBackend


@dataclass(frozen=True, kw_only=True)
class Output:
    """How one contract field is published as a Terraform output."""

    sensitive: bool = False
    """Hide the value in plans and `terraform output` (it still lands in the state)."""
    description: str | None = None
    """Shown by `terraform output`."""
    per_key: str | None = None
    """Publish a mapping as one output per key, named by this template (`{key}` is replaced)."""


def published(*, description: str, sensitive: bool = False, per_key: str | None = None) -> Any:
    """A contract field that is also a Terraform output of its layer (unset when None), with the
    description `terraform output` shows; every field is documented (tests/test_contracts.py)."""
    return field(metadata={"output": Output(sensitive=sensitive, description=description, per_key=per_key)})


def published_record(record: type, *, prefix: str, outputs: dict[str, str]) -> Any:
    """A contract field holding a typed record (None when its feature is off), each of whose fields
    `outputs` publishes as `<prefix><name>` (attribute -> name), described by that attribute's
    docstring in the record's class: the record documents itself once, for code and outputs alike."""
    docs = attribute_docstrings(record)
    missing = sorted(set(outputs) - set(docs))
    if missing:
        raise TypeError(f"{record.__name__}: no docstring for published attribute(s) {', '.join(missing)}")
    described = {attribute: (name, docs[attribute]) for attribute, name in outputs.items()}
    return field(metadata={"record": (prefix, described)})


def attribute_docstrings(cls: type) -> dict[str, str]:
    """Attribute -> the string literal written under it in the class body (one line, without the
    final period, as Terraform output descriptions read)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs = {}
    for item, following in itertools.pairwise(body):
        if (
            isinstance(item, ast.AnnAssign)
            and isinstance(item.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[item.target.id] = " ".join(following.value.value.split()).removesuffix(".")
    return docs


def terraform_outputs(contract: object) -> Iterator[tuple[str, Any, Output]]:
    """(output name, value, how) for every published field of a contract that has a value."""
    for spec in fields(contract):  # type: ignore[arg-type]
        how = spec.metadata.get("output")
        value = getattr(contract, spec.name)
        if "record" in spec.metadata and value is not None:
            prefix, outputs = spec.metadata["record"]
            for attribute, (name, description) in outputs.items():
                yield f"{prefix}{name}", getattr(value, attribute), Output(description=description)
            continue
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

    cluster_name: str = published(description="The EKS cluster's name")
    endpoint: str = published(description="The EKS API server endpoint (private unless the profile opens it)")
    certificate_authority: str = published(sensitive=True, description="The cluster CA certificate, base64")
    region: str
    """The profile's region (plain text from the profile, not an output)."""
    vpc_id: str = published(description="The platform's VPC")
    vpc_cidr: str
    """The VPC's CIDR (plain text from the profile: NetworkPolicies name it at synthesis)."""
    private_subnet_ids: list[str] = published(description="Private subnets, one per availability zone")
    gpu_subnet_id: str = published(description="The private subnet of the GPU availability zone (EFA stays in one AZ)")
    node_security_group_id: str = published(description="The EKS cluster security group every node carries")
    efa_security_group_id: str | None = published(
        description="The security group EFA interfaces carry (all traffic among themselves)"
    )
    node_role_arn: str = published(description="The IAM role the managed node groups run as")
    node_role_name: str
    """That role's name (Karpenter's node class and access entry use it)."""
    kms_key_arn: str = published(description="The KMS key that encrypts the cluster's Secrets")
    configure_kubectl: str = published(description="Point kubectl at the cluster")


@dataclass(frozen=True, kw_only=True)
class StorageOutputs:
    """The storage layer: data buckets and the shared file system (None when FSx is off)."""

    bucket_names: dict[str, str] = published(per_key="{key}_bucket_name", description="The data bucket's name")
    bucket_arns: dict[str, str] = published(per_key="{key}_bucket_arn", description="The data bucket's ARN")
    fsx_file_system_id: str | None = published(description="The FSx for Lustre file system")
    fsx_dns_name: str | None = published(description="The file system's DNS name (for mounts)")
    fsx_mount_name: str | None = published(description="The file system's Lustre mount name")
    mlflow: MlflowBackend | None = published_record(
        MlflowBackend,
        prefix="mlflow_",
        outputs={
            "address": "db_address",
            "database": "db_name",
            "username": "db_username",
            "owner_role": "db_owner_role",
            "master_username": "db_master_username",
            "resource_id": "db_resource_id",
            "secret_arn": "db_secret_arn",
            "kms_key_arn": "kms_key_arn",
            "bucket_name": "artifact_bucket_name",
            "bucket_arn": "artifact_bucket_arn",
        },
    )

    def records(self) -> tuple[object, ...]:
        """The typed records add-ons may ask for (`AddonContext.record`): those the layer made."""
        return tuple(record for record in (self.mlflow,) if record is not None)


@dataclass(frozen=True, kw_only=True)
class BuildOutputs:
    """The build layer: where images land and how to build them."""

    repository_urls: dict[str, str] = published(description="The ECR repository URL, per implementation")
    image_tags: dict[str, str] = published(description="The tag each build pushes, per implementation")
    project_names: dict[str, str] = published(description="The CodeBuild project, per implementation")
    source_bucket_name: str = published(description="The bucket build sources are uploaded to")
    build_commands: dict[str, str] = published(
        description="Upload a source archive and start the build, per implementation"
    )


@dataclass(frozen=True, kw_only=True)
class AddonsOutputs:
    """The addons layer: installed releases and what the workloads layer builds on."""

    releases: dict[str, str] = published(description="The installed add-ons' release names, by add-on")
    storage_class: str
    """The default StorageClass's name (plain text)."""
    karpenter: KarpenterNodes | None = published_record(
        KarpenterNodes,
        prefix="karpenter_",
        outputs={"node_role_name": "node_role_name", "interruption_queue": "interruption_queue"},
    )
