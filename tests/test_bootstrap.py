"""The GPU node bootstrap script, run by bash on a fake system tree (BOOTSTRAP_ROOT) with stub
system tools: it finishes on a GPU node without EFA, and configures LNet over every EFA device
when the file system is EFA-enabled."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu-node-bootstrap.sh"
TOOLS = ("rpm", "dnf", "modprobe", "lnetctl", "ip", "systemctl")


def node(tmp_path: Path, efa_devices: int) -> Path:
    root = tmp_path / "root"
    for folder in ("proc/sys/vm", "etc/sysctl.d", "dev"):
        (root / folder).mkdir(parents=True)
    (root / "proc/sys/vm/nr_hugepages").write_text("0\n")
    (root / "dev/kmsg").write_text("")
    if efa_devices:
        for index in range(efa_devices):
            (root / "sys/class/infiniband" / f"rdmap{index}s0").mkdir(parents=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        # Each stub records its arguments; `ip` answers the default route, lnetctl prints nets.
        body = {
            "ip": 'echo "default via 10.0.0.1 dev ens5 proto dhcp"',
            "lnetctl": 'if [ "$1" = net ] && [ "$2" = show ]; then echo "net type: efa"; fi',
        }.get(tool, "true")
        (bin_dir / tool).write_text(f'#!/bin/bash\necho "{tool} $*" >> "{tmp_path}/calls"\n{body}\n')
        (bin_dir / tool).chmod(0o755)
    return root


def run(tmp_path: Path, root: Path, *, lustre_over_efa: bool) -> subprocess.CompletedProcess[str]:
    script = SCRIPT.read_text()
    if lustre_over_efa:
        script = script.replace("LUSTRE_OVER_EFA=0", "LUSTRE_OVER_EFA=1", 1)
    (tmp_path / "script.sh").write_text(script)
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "BOOTSTRAP_ROOT": str(root)}
    return subprocess.run(["bash", str(tmp_path / "script.sh")], env=env, capture_output=True, text=True, timeout=60)


def calls(tmp_path: Path) -> list[str]:
    path = tmp_path / "calls"
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.parametrize("lustre_over_efa", [False, True])
def test_a_gpu_node_without_efa_finishes(tmp_path, lustre_over_efa):
    root = node(tmp_path, efa_devices=0)
    done = run(tmp_path, root, lustre_over_efa=lustre_over_efa)
    assert done.returncode == 0, done.stderr
    assert "EFA devices visible: 0" in done.stderr
    assert (root / "proc/sys/vm/nr_hugepages").read_text().strip() == "5128"
    assert not any(call.startswith("lnetctl") for call in calls(tmp_path))  # no EFA: LNet stays on TCP


def test_lustre_over_efa_adds_an_efa_network_per_device(tmp_path):
    root = node(tmp_path, efa_devices=4)
    done = run(tmp_path, root, lustre_over_efa=True)
    assert done.returncode == 0, done.stderr
    assert "EFA devices visible: 4" in done.stderr
    efa_nets = [c for c in calls(tmp_path) if c.startswith("lnetctl net add --net efa")]
    assert [c.split("--if ")[1].split()[0] for c in efa_nets] == [f"rdmap{i}s0" for i in range(4)]
    assert "lnetctl net add --net tcp --if ens5" in calls(tmp_path)
    # EFA is preferred over tcp once every network exists. The saved configuration (imported by the
    # lnet service on reboot) is written before the policy, which Lustre 2.15's import refuses in
    # an export (LU-16572); the service adds the policy itself after each import.
    order = calls(tmp_path)
    preferred = order.index("lnetctl udsp add --src efa --priority 0")
    assert preferred > max(order.index(c) for c in efa_nets) and preferred > order.index("lnetctl export --backup")
    assert (root / "etc/lnet.conf").exists()
    drop_in = (root / "etc/systemd/system/lnet.service.d/prefer-efa.conf").read_text().splitlines()
    assert drop_in == ["[Service]", "ExecStartPost=/usr/sbin/lnetctl udsp add --src efa --priority 0"]


def test_without_lustre_over_efa_the_efa_devices_are_only_counted(tmp_path):
    root = node(tmp_path, efa_devices=2)
    done = run(tmp_path, root, lustre_over_efa=False)
    assert done.returncode == 0, done.stderr
    assert "EFA devices visible: 2" in done.stderr and not any(c.startswith("lnetctl") for c in calls(tmp_path))
