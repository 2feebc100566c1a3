"""What the monitoring add-on hands the later layers: one typed record (binding-free)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from stacks.contracts import AddonRecord


@dataclass(frozen=True, kw_only=True)
class AlertDelivery(AddonRecord):
    """Where Alertmanager publishes (tokens of the addons layer)."""

    OUTPUTS: ClassVar[Mapping[str, str]] = {"topic_arn": "alert_topic_arn"}

    topic_arn: str
    """The SNS topic critical alerts and the dead-man's switch reach: subscribe people to it."""
    heartbeat_topic_arn: str
    """The heartbeat topic's ARN."""
