"""The Lustre check: direct I/O to FSx from a GPU node moves its bytes over the node's EFA devices."""

from __future__ import annotations

import re
from typing import Any

from components.acceptance import CheckResult, ValidationTarget, locked_down_container
from components.k8s.check_pods import check_pod
from profiles import tenancy
from profiles.models import PlatformConfig
from profiles.versions import CUDA_IMAGE

LUSTRE_EFA_CHECK = "lustre-efa-check"


LUSTRE_EFA_CHECK_MARKER = "LUSTRE_EFA_CHECK "


LUSTRE_EFA_CHECK_MIB = 1024


# Direct I/O (no client page cache) of LUSTRE_EFA_CHECK_MIB written and read back through the
# tenant's FSx volume, between two readings of the node's EFA port counters (tx_bytes and rx_bytes
# of every device: the EFA driver's basic port statistics, all traffic through the device; sysfs
# is world-readable and not namespaced). LNet's traffic over EFA (kefalnd) shows in them; over its
# tcp network it does not. The node's other EFA traffic only adds (verify runs this check alone).
LUSTRE_EFA_CHECK_SCRIPT = f"""
set -eu
efa_bytes() {{
  total=0
  for counter in /sys/class/infiniband/*/ports/*/hw_counters/tx_bytes \\
      /sys/class/infiniband/*/ports/*/hw_counters/rx_bytes; do
    [ -r "$counter" ] && total=$((total + $(cat "$counter")))
  done
  echo "$total"
}}
devices=$(ls /sys/class/infiniband 2>/dev/null | wc -l)
file=/fsx/.{LUSTRE_EFA_CHECK}-$(hostname)
before=$(efa_bytes)
dd if=/dev/zero of="$file" bs=16M count={LUSTRE_EFA_CHECK_MIB // 16} oflag=direct status=none
dd if="$file" of=/dev/null bs=16M iflag=direct status=none
after=$(efa_bytes)
rm -f "$file"
moved={2 * LUSTRE_EFA_CHECK_MIB << 20}
echo "{LUSTRE_EFA_CHECK_MARKER}devices=$devices moved_bytes=$moved efa_bytes=$((after - before))"
"""


def lustre_efa_check_applies(config: PlatformConfig, target: ValidationTarget) -> bool:
    """verify owes the Lustre-over-EFA check where the file system is EFA-enabled, the checked
    group has EFA (its nodes set LNet up with efa networks) and a tenant has an FSx volume."""
    fsx = config.storage.fsx
    return (
        fsx.enabled
        and fsx.efa_enabled
        and target.group.efa_enabled
        and fsx.tenant_directories
        and bool(config.workloads.tenants)
    )


def lustre_efa_check_pod(target: ValidationTarget, tenant: str) -> dict[str, Any]:
    """As the first tenant, on a node of the checked group, through the tenant's FSx volume. It asks
    for no GPU or EFA interface: it reads the EFA counters of the node, it does not use EFA itself."""
    pod = check_pod(
        LUSTRE_EFA_CHECK,
        target,
        {
            "name": "lustre",
            "image": CUDA_IMAGE,
            "command": ["/bin/sh", "-c", LUSTRE_EFA_CHECK_SCRIPT],
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "1Gi"}},
            "volumeMounts": [{"name": "fsx", "mountPath": "/fsx"}],
            # Root owns the tenant's directory: root writes there as its owner, with no capability.
            "securityContext": locked_down_container(),
        },
        gpus=0,
        volumes=[{"name": "fsx", "persistentVolumeClaim": {"claimName": tenancy.FSX_VOLUME}}],
        securityContext={"seccompProfile": {"type": "RuntimeDefault"}},
    )
    pod["metadata"]["namespace"] = tenant
    pod["spec"].pop("resourceClaims", None)
    return pod


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
