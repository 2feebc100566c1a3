"""The Lustre check: direct I/O to FSx from a GPU node moves its bytes over the node's EFA devices."""

from __future__ import annotations

import re

from components.acceptance import CheckResult
from manifests.render import LUSTRE_EFA_CHECK, LUSTRE_EFA_CHECK_MARKER


def check_lustre_efa(log: str) -> CheckResult:
    """The Lustre check's line: the node has EFA devices, and they moved at least half the bytes the
    direct I/O sent through the file system (2x its size: written, then read back). Over LNet's
    tcp network they move next to nothing."""
    found = re.search(rf"{re.escape(LUSTRE_EFA_CHECK_MARKER)}devices=(\d+) moved_bytes=(\d+) efa_bytes=(-?\d+)", log)
    if not found:
        return CheckResult(LUSTRE_EFA_CHECK, False, "the check printed no result (see the pod's log)")
    devices, moved, over_efa = (int(group) for group in found.groups())
    if devices == 0:
        return CheckResult(LUSTRE_EFA_CHECK, False, "the node shows no EFA device: Lustre cannot use EFA there")
    mib = moved >> 20
    if over_efa * 2 < moved:
        return CheckResult(
            LUSTRE_EFA_CHECK,
            False,
            f"Lustre traffic did not use EFA: the node's EFA devices moved {over_efa >> 20} MiB while "
            f"{mib} MiB went through the file system (LNet is on tcp; see `lnetctl net show` on the node)",
        )
    return CheckResult(
        LUSTRE_EFA_CHECK, True, f"{mib} MiB of direct I/O to FSx moved {over_efa >> 20} MiB over {devices} EFA devices"
    )
