"""What each layer gives the layers after it: one typed contract per layer.

A layer stack fills its contract with values (mostly tokens that cdktf turns into remote-state
references in the consuming stack) and publishes the fields marked `published(...)` as Terraform
outputs, so the outputs a user sees and the values later layers read come from one list.
Binding-free: importing this module loads no provider bindings.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, TypeVar

from profiles.docstrings import own_attribute_docstrings


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


class AddonRecord:
    """Base of a typed record an add-on hands the layers after the one that made it (a frozen
    dataclass, each attribute documented by the string under it). `OUTPUTS` names the attributes
    the layer publishes as Terraform outputs, `<add-on key>_<name>` (attribute -> name), each
    described by its attribute's docstring: the record documents itself once, for code and outputs."""

    OUTPUTS: ClassVar[Mapping[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        missing = sorted(set(cls.OUTPUTS) - set(attribute_docstrings(cls)))
        if missing:
            raise TypeError(f"{cls.__name__}: no docstring for published attribute(s) {', '.join(missing)}")

    @classmethod
    def described_outputs(cls, key: str) -> dict[str, tuple[str, str]]:
        """attribute -> (output name, description) for the add-on `key`."""
        docs = attribute_docstrings(cls)
        return {attribute: (f"{key}_{name}", docs[attribute]) for attribute, name in cls.OUTPUTS.items()}


RecordT = TypeVar("RecordT", bound=AddonRecord)


def published_records(*, description: str) -> Any:
    """A contract field holding the add-ons' records from its layer (add-on key -> record), each of
    whose `OUTPUTS` the layer publishes."""
    return field(default_factory=dict, metadata={"records": description})


def addon_record(records: Mapping[str, AddonRecord], key: str, kind: type[RecordT]) -> RecordT | None:
    """The record the add-on `key` made in a layer (None: it made none, being off), checked to be
    the type the add-on itself defines."""
    record = records.get(key)
    if record is not None and not isinstance(record, kind):
        raise TypeError(f"add-on {key}'s record is a {type(record).__name__}, not a {kind.__name__}")
    return record


def attribute_docstrings(cls: type) -> dict[str, str]:
    """Attribute -> the string literal written under it in the class body (one line, without the
    final period, as Terraform output descriptions read)."""
    return {name: " ".join(doc.split()).removesuffix(".") for name, doc in own_attribute_docstrings(cls).items()}


def terraform_outputs(contract: object) -> Iterator[tuple[str, Any, Output]]:
    """(output name, value, how) for every published field of a contract that has a value."""
    for spec in fields(contract):  # type: ignore[arg-type]
        how = spec.metadata.get("output")
        value = getattr(contract, spec.name)
        if "records" in spec.metadata:
            for key, record in sorted(value.items()):
                for attribute, (name, description) in record.described_outputs(key).items():
                    yield name, getattr(record, attribute), Output(description=description)
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
    gpu_local_zone_subnet_id: str | None = published(
        description="The private subnet in cluster.vpc.gpu_local_zone the GPU node groups run in (none without one)"
    )
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
    addon_records: Mapping[str, AddonRecord] = published_records(
        description="What the enabled add-ons keep in the storage layer (MLflow's database and bucket)"
    )
    """The add-ons' records from this layer, by add-on key (`addon_record` reads one, typed)."""


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
    addon_records: Mapping[str, AddonRecord] = published_records(
        description="What the enabled add-ons hand the workloads layer (Karpenter's node identity)"
    )
    """The add-ons' records from this layer, by add-on key (`addon_record` reads one, typed)."""
