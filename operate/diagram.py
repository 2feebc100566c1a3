"""A Mermaid diagram of the synthesized layers: their main resources and the remote-state edges.

It reads the Terraform JSON (never the Python stacks), so the README's picture is what
`cdktf synth` actually produced; tests/test_diagram.py keeps the README in sync.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

# The resource types worth a box, in the order they are drawn; everything else is detail.
MAIN_RESOURCES = {
    "aws_vpc": "VPC",
    "aws_subnet": "subnets",
    "aws_nat_gateway": "NAT gateways",
    "aws_vpc_endpoint": "VPC endpoints",
    "aws_eks_cluster": "EKS cluster",
    "aws_kms_key": "KMS key",
    "aws_eks_addon": "EKS managed add-ons",
    "aws_eks_node_group": "managed node groups",
    "aws_placement_group": "cluster placement group",
    "aws_fsx_lustre_file_system": "FSx for Lustre",
    "aws_fsx_data_repository_association": "FSx data repository associations",
    "aws_s3_bucket": "S3 buckets",
    "aws_ecr_repository": "ECR repositories",
    "aws_codebuild_project": "CodeBuild project",
    "aws_sns_topic": "SNS topics (alerts, heartbeat)",
    "aws_sqs_queue": "interruption queue",
    "aws_eks_pod_identity_association": "Pod Identity associations",
    "helm_release": "Helm",
    "kubernetes_manifest": "Kubernetes",
}

# cdktf names the data source that reads another stack's outputs after that stack.
_REMOTE_STATE_PREFIX = "cross-stack-reference-input-"
_OUTPUT_NAME = re.compile(r"[A-Za-z0-9_-]+")
_REFERENCE = re.compile(r"\$\{(?P<type>[a-z0-9_]+)\.[^.}]+\.(?P<attribute>[^}]+)\}")


def load_stacks(outdir: Path, layers: list[str]) -> dict[str, dict[str, Any]]:
    """The synthesized JSON of each layer under `outdir/stacks/<layer>/cdk.tf.json`."""
    return {layer: json.loads((outdir / "stacks" / layer / "cdk.tf.json").read_text()) for layer in layers}


def remote_state_edges(stacks: dict[str, dict[str, Any]]) -> list[tuple[str, str, list[str]]]:
    """(producer, consumer, outputs read) for every layer that reads another's state."""
    edges = []
    for consumer, stack in stacks.items():
        text = json.dumps(stack.get("resource", {})) + json.dumps(stack.get("data", {}))
        for source in stack.get("data", {}).get("terraform_remote_state", {}):
            producer = source.removeprefix(_REMOTE_STATE_PREFIX)
            marker = f"data.terraform_remote_state.{source}.outputs."
            # An output's name, whether the reference is a whole `${...}` or a bare one in an expression.
            names = {match[0] for part in text.split(marker)[1:] if (match := _OUTPUT_NAME.match(part))}
            produced = stacks.get(producer, {}).get("output", {})
            read = Counter(_attribute(produced.get(name, {}).get("value"), name) for name in names)
            outputs = sorted(f"{what} x{count}" if count > 1 else what for what, count in read.items())
            edges.append((producer, consumer, outputs))
    return sorted(edges)


def _attribute(value: Any, fallback: str) -> str:
    """`${aws_eks_cluster.eks_cluster_55B0C966.endpoint}` reads as `eks_cluster.endpoint`."""
    match = _REFERENCE.fullmatch(value) if isinstance(value, str) else None
    if not match:
        return fallback
    return f"{match['type'].removeprefix('aws_')}.{match['attribute'].replace('[0]', '')}"


def _box(resource_type: str, bodies: dict[str, Any]) -> str:
    label = MAIN_RESOURCES[resource_type]
    if resource_type == "helm_release":
        return f"{label}: " + ", ".join(sorted(body["name"] for body in bodies.values()))
    if resource_type == "kubernetes_manifest":
        kinds = Counter(body["manifest"]["kind"] for body in bodies.values() if isinstance(body.get("manifest"), dict))
        shown = (f"{kind} x{count}" if count > 1 else kind for kind, count in sorted(kinds.items()))
        return f"{label}: " + ", ".join(shown)
    return f"{label} x{len(bodies)}" if len(bodies) > 1 else label


def mermaid(stacks: dict[str, dict[str, Any]]) -> str:
    """The diagram as Mermaid `flowchart` text, one subgraph per layer in deploy order."""
    lines = ["flowchart LR"]
    for layer, stack in stacks.items():
        lines.append(f'  subgraph {layer}["{layer} layer"]')
        present = stack.get("resource", {})
        for resource_type in MAIN_RESOURCES:
            if present.get(resource_type):
                lines.append(f'    {layer}_{resource_type}["{_box(resource_type, present[resource_type])}"]')
        lines.append("  end")
    for producer, consumer, outputs in remote_state_edges(stacks):
        label = "<br/>".join(outputs) if outputs else "remote state"
        lines.append(f'  {producer} -- "{label}" --> {consumer}')
    return "\n".join(lines) + "\n"


README_START = "<!-- layers diagram: `make diagram` writes it, tests/test_diagram.py checks it -->"
README_END = "<!-- end of layers diagram -->"


def replace_in_readme(readme: str, diagram: str) -> str:
    """The README text with the block between the markers replaced by `diagram`."""
    head, start, rest = readme.partition(README_START)
    _, end, tail = rest.partition(README_END)
    if not (start and end):
        raise ValueError(f"README has no {README_START!r} ... {README_END!r} block")
    return f"{head}{README_START}\n```mermaid\n{diagram}```\n{README_END}{tail}"
