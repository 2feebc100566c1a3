"""The EFA counter exporter: the node-exporter sidecar's script, run by a POSIX sh on a fake sysfs
as the EFA driver lays it out, writes what promtool accepts as exposition text; and the values
hand node-exporter and the sidecar what the chart (prometheus-node-exporter 4.56.1) mounts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from addons.monitoring.install import EFA_COUNTERS_SCRIPT, EFA_SYSFS, EFA_TEXTFILE_DIR, NodeExporterValues
from tests.synth_helpers import resources
from tests.test_alert_rules import promtool  # noqa: F401 (the fixture)

SCRIPT = Path(__file__).resolve().parents[1] / "addons" / "monitoring" / "efa-counters.sh"


def fake_sysfs(root: Path, devices: dict[str, dict[str, str]]) -> Path:
    """<root>/devices/.../infiniband/<device> with its counters, linked from class/infiniband as on a node."""
    for device, counters in devices.items():
        real = root / "devices" / "pci0000:00" / device / "infiniband" / device
        (real / "ports" / "1" / "hw_counters").mkdir(parents=True)
        for name, value in counters.items():
            (real / "ports" / "1" / "hw_counters" / name).write_text(value)
        (root / "class" / "infiniband").mkdir(parents=True, exist_ok=True)
        (root / "class" / "infiniband" / device).symlink_to(real)
    return root


def run_once(sysfs: Path, out: Path) -> str:
    done = subprocess.run(["sh", str(SCRIPT), str(sysfs), str(out), "0"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return out.read_text()


def test_every_efa_port_counter_becomes_a_counter_promtool_accepts(tmp_path, promtool):  # noqa: F811
    counters = {"tx_bytes": "123456789\n", "rx_drops": "3\n", "retrans_timeout_events": "0\n", "lifespan": "12\n"}
    sysfs = fake_sysfs(tmp_path / "sys", {"rdmap16s27": counters, "rdmap32s27": {**counters, "tx_bytes": "5\n"}})
    text = run_once(sysfs, tmp_path / "efa.prom")
    assert 'node_efa_tx_bytes_total{device="rdmap16s27",port="1"} 123456789' in text
    assert 'node_efa_tx_bytes_total{device="rdmap32s27",port="1"} 5' in text
    assert 'node_efa_rx_drops_total{device="rdmap16s27",port="1"} 3' in text
    assert "lifespan" not in text  # a setting (the refresh period), not a counter
    assert text.count("# TYPE node_efa_tx_bytes_total counter") == 1
    checked = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_node_without_efa_or_with_odd_files_writes_only_what_it_can(tmp_path):
    assert run_once(tmp_path / "empty-sys", tmp_path / "none.prom") == ""
    sysfs = fake_sysfs(tmp_path / "sys", {"efa_0": {"tx_bytes": "N/A\n", "rx-bytes": "1\n", "rx_pkts": "9\n"}})
    assert (
        run_once(sysfs, tmp_path / "odd.prom").splitlines()[-1] == 'node_efa_rx_pkts_total{device="efa_0",port="1"} 9'
    )


def test_the_script_is_inert_inside_terraform_json():
    assert "${" not in EFA_COUNTERS_SCRIPT and "%{" not in EFA_COUNTERS_SCRIPT


def test_node_exporter_reads_what_the_sidecar_writes(synthesized):
    stack = synthesized.stack("p5-training", "addons")
    release = next(r for r in resources(stack, "helm_release").values() if r["chart"] == "kube-prometheus-stack")
    exporter = yaml.safe_load(release["values"][0])["prometheus-node-exporter"]
    assert exporter == NodeExporterValues().model_dump(by_alias=True)
    (sidecar,) = exporter["sidecars"]
    assert sidecar["image"].startswith("quay.io/prometheus/node-exporter:v") and "distroless" not in sidecar["image"]
    assert sidecar["args"] == [EFA_SYSFS, f"{EFA_TEXTFILE_DIR}/efa.prom", "15"]
    assert f"--collector.textfile.directory={EFA_TEXTFILE_DIR}" in exporter["extraArgs"]
    # kube-prometheus-stack's own arguments are kept (a values list replaces the chart's).
    assert any(arg.startswith("--collector.filesystem.mount-points-exclude=") for arg in exporter["extraArgs"])
    (shared,) = exporter["sidecarVolumeMount"]
    assert (shared["mountPath"], shared["readOnly"]) == (EFA_TEXTFILE_DIR, False)
    (host,) = exporter["sidecarHostVolumeMounts"]
    assert (host["hostPath"], host["mountPath"], host["readOnly"]) == ("/sys", EFA_SYSFS, True)
