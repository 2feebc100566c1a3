"""AWS names a profile may use: regions, their availability zones and EC2 instance types, read
from profiles/aws_facts.json (recorded by scripts/record_aws_facts.py from botocore and moto, with
their versions in the file; tests/test_aws_facts.py keeps the two in step)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

FACTS = Path(__file__).resolve().parent / "aws_facts.json"


@cache
def _facts() -> dict[str, Any]:
    facts: dict[str, Any] = json.loads(FACTS.read_text())
    return facts


def regions() -> tuple[str, ...]:
    return tuple(_facts()["regions"])


def zones(region: str) -> dict[str, str]:
    """The region's availability zones (name -> zone ID) as recorded; empty when not recorded."""
    found: dict[str, str] = _facts()["regions"].get(region, {}).get("zones", {})
    return found


@cache
def instance_types() -> frozenset[str]:
    return frozenset(_facts()["instance_types"])


def vcpus(instance_type: str) -> int:
    """The instance type's default vCPUs (what EC2's vCPU-based quotas count)."""
    count: int = _facts()["instance_types"][instance_type]
    return count
