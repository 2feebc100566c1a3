"""The cluster's default StorageClass: EKS clusters have none, and Prometheus's and the notebooks'
volumes need one. Encrypted gp3 through the EBS CSI driver, bound where the pod lands
(WaitForFirstConsumer: a volume made before scheduling could sit in a zone without the pod's
node). Rendered as data (components/rendered.py), or as a construct for the HCL export."""

from __future__ import annotations

from typing import Any

from cdktf import ITerraformDependable
from constructs import Construct

from components.rendered import RenderedResource, render_as_data

STORAGE_CLASS = "gp3"
_ID = "gp3"  # the resource's Terraform name: kept if the class is ever renamed
_DEFAULT_CLASS_ANNOTATION = {"storageclass.kubernetes.io/is-default-class": "true"}
_ARGUMENTS: dict[str, Any] = {
    "allow_volume_expansion": True,
    "parameters": {"encrypted": "true", "type": "gp3"},
    "reclaim_policy": "Delete",
    "storage_provisioner": "ebs.csi.aws.com",
    "volume_binding_mode": "WaitForFirstConsumer",
}


def default_storage_class(scope: Construct) -> ITerraformDependable:
    """The `gp3` StorageClass, marked the default, to depend on."""
    if render_as_data():
        body = {**_ARGUMENTS, "metadata": {"annotations": _DEFAULT_CLASS_ANNOTATION, "name": STORAGE_CLASS}}
        return RenderedResource(scope, _ID, terraform_type="kubernetes_storage_class_v1", body=body)
    from cdktf_cdktf_provider_kubernetes.storage_class_v1 import StorageClassV1, StorageClassV1Metadata

    return StorageClassV1(
        scope,
        _ID,
        metadata=StorageClassV1Metadata(annotations=_DEFAULT_CLASS_ANNOTATION, name=STORAGE_CLASS),
        **_ARGUMENTS,
    )
