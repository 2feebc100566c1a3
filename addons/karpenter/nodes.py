"""What the Karpenter add-on hands the workloads layer: one typed record (binding-free)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from stacks.contracts import AddonRecord


@dataclass(frozen=True, kw_only=True)
class KarpenterNodes(AddonRecord):
    """Karpenter's node identity and interruption queue, as its EC2NodeClasses need them."""

    OUTPUTS: ClassVar[Mapping[str, str]] = {
        "node_role_name": "node_role_name",
        "interruption_queue": "interruption_queue",
    }

    node_role_name: str
    """The IAM role Karpenter's nodes run as."""
    interruption_queue: str
    """The SQS queue of EC2 interruption warnings Karpenter reads."""
