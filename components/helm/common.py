"""Value models shared by several charts."""

from __future__ import annotations

from pydantic import Field

from components.helm.release import Values
from components.labels import GPU_TOLERATION, SYSTEM_NODES


class Toggle(Values):
    enabled: bool


class Toleration(Values):
    key: str
    operator: str
    effect: str


GPU_TOLERATIONS = [Toleration(**GPU_TOLERATION)]


class Placement(Values):
    """Where a controller runs: on the system nodes."""

    node_selector: dict[str, str] = Field(default_factory=lambda: dict(SYSTEM_NODES))
