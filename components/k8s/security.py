"""Security contexts for the containers the platform's own add-on pods run (binding-free)."""

from __future__ import annotations

from typing import Any


def non_root_container(user: int, *, group: int | None = None) -> dict[str, Any]:
    """A container that runs as `user` (never root), cannot gain privileges, holds no capability,
    has a read-only root and the runtime's default seccomp filter: what a pod that only reads,
    computes and writes its own volumes needs. A fresh dict each time, so YAML carries no anchors."""
    identity: dict[str, Any] = {"runAsNonRoot": True, "runAsUser": user}
    if group is not None:
        identity["runAsGroup"] = group
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
        **identity,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
