"""Reading synthesized stacks: find resources by construct path, follow ${...} references."""

from __future__ import annotations

import re

from stacks.contracts import ClusterOutputs

REF = re.compile(r"^\$\{([a-z0-9_]+)\.([^.}]+)\.([^}]+)\}$")


def resources(stack: dict, resource_type: str, section: str = "resource") -> dict[str, dict]:
    return stack.get(section, {}).get(resource_type, {})


def path_of(body: dict) -> str:
    return body["//"]["metadata"]["path"]


def by_path(stack: dict, resource_type: str, suffix: str, section: str = "resource") -> tuple[str, dict]:
    """The one resource (or data source) of a type whose construct path ends with `suffix`."""
    found = [
        (key, body) for key, body in resources(stack, resource_type, section).items() if path_of(body).endswith(suffix)
    ]
    assert len(found) == 1, f"{len(found)} {resource_type} at *{suffix}: {[path_of(b) for _, b in found]}"
    return found[0]


def ref(resource_type: str, logical_id: str, attribute: str = "id") -> str:
    return f"${{{resource_type}.{logical_id}.{attribute}}}"


def target(stack: dict, reference: str) -> tuple[str, str, dict]:
    """Follow `${type.id.attr}` to (type, id, body) in the same stack."""
    match = REF.match(reference)
    assert match, f"not a plain reference: {reference}"
    resource_type, logical_id, _ = match.groups()
    return resource_type, logical_id, resources(stack, resource_type)[logical_id]


def example_cluster_outputs(**changes: object) -> ClusterOutputs:
    """A cluster layer's contract with plain placeholder values (for parts that build plain data)."""
    values: dict = {
        "cluster_name": "example",
        "endpoint": "https://example.eks.amazonaws.com",
        "certificate_authority": "Q0E=",
        "region": "us-west-2",
        "vpc_id": "vpc-0example",
        "vpc_cidr": "10.0.0.0/16",
        "private_subnet_ids": ["subnet-0a", "subnet-0b"],
        "gpu_subnet_id": "subnet-0a",
        "gpu_local_zone_subnet_id": None,
        "node_security_group_id": "sg-0nodes",
        "efa_security_group_id": None,
        "node_role_arn": "arn:aws:iam::111122223333:role/example-nodes",
        "node_role_name": "example-nodes",
        "kms_key_arn": "arn:aws:kms:us-west-2:111122223333:key/example",
        "configure_kubectl": "aws eks update-kubeconfig --name example",
    }
    return ClusterOutputs(**{**values, **changes})
