"""What the Karpenter add-on hands the workloads layer: one typed record (binding-free)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class KarpenterNodes:
    """Karpenter's node identity and interruption queue, as its EC2NodeClasses need them."""

    node_role_name: str
    """The IAM role Karpenter's nodes run as."""
    interruption_queue: str
    """The SQS queue of EC2 interruption warnings Karpenter reads."""
