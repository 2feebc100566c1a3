"""nodeadm user data for AL2023 node groups: a MIME multi-part document built at synth time.

AL2023 ignores `pre_bootstrap_user_data`-style scripts; nodeadm reads MIME parts instead: shell
scripts run before the node joins, and `application/node.eks.aws` parts are merged into the
NodeConfig that EKS generates for the managed node group.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

BOUNDARY = "==GPU-PLATFORM-BOUNDARY=="


@dataclass(frozen=True, kw_only=True)
class MimePart:
    content_type: str
    body: str


def node_config(*, raid0_local_nvme: bool) -> str:
    # Parallel, seekable image pulls: GPU images are many GB, and a node waits for them before work starts.
    spec: dict[str, Any] = {"featureGates": {"FastImagePull": True}}
    if raid0_local_nvme:
        # Instance-store NVMe as one RAID0 volume for containerd and kubelet: large images and
        # scratch data stay off the root EBS volume.
        spec["instance"] = {"localStorage": {"strategy": "RAID0"}}
    document = {"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig", "spec": spec}
    return yaml.safe_dump(document, sort_keys=False)


def mime_multipart(parts: list[MimePart]) -> str:
    lines = ["MIME-Version: 1.0", f'Content-Type: multipart/mixed; boundary="{BOUNDARY}"', ""]
    for part in parts:
        lines += [f"--{BOUNDARY}", f"Content-Type: {part.content_type}", "", part.body.rstrip("\n"), ""]
    lines.append(f"--{BOUNDARY}--")
    return "\n".join(lines) + "\n"


LUSTRE_OVER_EFA_SWITCH = "LUSTRE_OVER_EFA=0"
# The one GPU node set-up, for the managed groups' launch templates and Karpenter's GPU nodes alike.
BOOTSTRAP_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu-node-bootstrap.sh"


def gpu_node_mime(*, raid0_local_nvme: bool, lustre_over_efa: bool) -> str:
    """The GPU node set-up as a nodeadm MIME document: the bootstrap script (huge pages, the Lustre
    client, LNet over EFA when `lustre_over_efa`) and the NodeConfig (FastImagePull, and the
    instance-store RAID0 when `raid0_local_nvme`)."""
    bootstrap_script = BOOTSTRAP_SCRIPT.read_text()
    if LUSTRE_OVER_EFA_SWITCH not in bootstrap_script:
        raise ValueError(f"the node bootstrap script lost its {LUSTRE_OVER_EFA_SWITCH} switch")
    if lustre_over_efa:
        bootstrap_script = bootstrap_script.replace(LUSTRE_OVER_EFA_SWITCH, "LUSTRE_OVER_EFA=1", 1)
    return mime_multipart(
        [
            MimePart(content_type='text/x-shellscript; charset="us-ascii"', body=bootstrap_script),
            MimePart(content_type="application/node.eks.aws", body=node_config(raid0_local_nvme=raid0_local_nvme)),
        ]
    )


def gpu_node_user_data(*, raid0_local_nvme: bool, lustre_over_efa: bool) -> str:
    """Base64 of the MIME document, as launch templates take it."""
    document = gpu_node_mime(raid0_local_nvme=raid0_local_nvme, lustre_over_efa=lustre_over_efa)
    return base64.b64encode(document.encode()).decode()
