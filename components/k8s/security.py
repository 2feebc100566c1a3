"""Security contexts for the pods and containers the platform runs (binding-free)."""

from __future__ import annotations

from typing import Any

NOBODY = 65534  # the conventional unprivileged user; images that need none of their own run as it


def _identity(user: int, group: int | None) -> dict[str, Any]:
    identity: dict[str, Any] = {"runAsNonRoot": True, "runAsUser": user}
    if group is not None:
        identity["runAsGroup"] = group
    return identity


def non_root_pod(user: int, *, group: int | None = None) -> dict[str, Any]:
    """A pod whose containers run as `user` (never root) under the runtime's default seccomp
    filter. A fresh dict each time, so YAML carries no anchors."""
    return {**_identity(user, group), "seccompProfile": {"type": "RuntimeDefault"}}


def non_root_container(user: int, *, group: int | None = None) -> dict[str, Any]:
    """A container that runs as `user` (never root), cannot gain privileges, holds no capability,
    has a read-only root and the runtime's default seccomp filter: what a pod that only reads,
    computes and writes its own volumes needs. A fresh dict each time, so YAML carries no anchors."""
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
        **_identity(user, group),
        "seccompProfile": {"type": "RuntimeDefault"},
    }
