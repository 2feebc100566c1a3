"""The single-node topology check: the node has the catalog's GPUs and EFA devices (nvidia-smi
topo and libfabric's fi_info)."""

from __future__ import annotations

import re

from components.acceptance import CheckResult, ValidationTarget


def efa_devices(fi_info_log: str) -> set[str]:
    """Distinct EFA domains that libfabric reports (one per EFA device)."""
    return set(re.findall(r"^\s*domain:\s*(\S+)", fi_info_log, flags=re.MULTILINE))


def check_topology(log: str, target: ValidationTarget) -> CheckResult:
    expected = target.efa_interfaces
    seen = len(efa_devices(log))
    gpus = len(re.findall(r"^GPU\d+\s", log, flags=re.MULTILINE))
    if gpus < target.entry.gpu_count:
        return CheckResult(
            "topology-check",
            False,
            f"GPUs per node: nvidia-smi topo shows {gpus}, the catalog says {target.entry.gpu_count} "
            f"for {target.entry.name}",
        )
    if seen < expected:
        return CheckResult(
            "topology-check",
            False,
            f"EFA devices per node: fi_info shows {seen}, the catalog says {expected} for "
            f"{target.entry.name}: check the launch template interfaces and the EFA device plugin",
        )
    return CheckResult("topology-check", True, f"{gpus} GPUs and {seen} EFA devices on the node")
