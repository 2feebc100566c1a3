"""verify's Lustre-over-EFA check: the pod's script run by sh on a fake sysfs with a fake dd whose
I/O moves bytes through the EFA counters (LNet on its efa networks) or not (LNet on tcp), the
parser on the lines it prints, the pod as the first tenant's, and where verify runs it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from components.acceptance import ValidationTarget
from manifests.checks.lustre_efa import LUSTRE_EFA_CHECK_MIB, LUSTRE_EFA_CHECK_SCRIPT, check_lustre_efa
from manifests.render import render
from manifests.verify import run_checks
from profiles import load_profile, tenancy, validate_profile
from tests.admission import admit
from tests.pod_security import baseline_problems
from tests.test_profiles import changed
from tests.test_verify import FakeKubectl, log

PROFILE = "p5en-training"  # EFA-enabled PERSISTENT_2 file system, EFA GPU group, tenant directories
FAKE_DD = """#!/bin/sh
# Writes of=FILE (bs x count bytes) or reads if=FILE; with OVER_EFA=1 the bytes show in the EFA
# port counters (tx for writes, rx for reads), as kefalnd's traffic does.
for arg; do
  case $arg in if=*) in=${arg#if=} ;; of=*) out=${arg#of=} ;; bs=16M) bs=16777216 ;; count=*) n=${arg#count=} ;; esac
done
if [ "$out" != /dev/null ]; then bytes=$((bs * n)); truncate -s "$bytes" "$out"; kind=tx_bytes
else bytes=$(wc -c < "$in"); kind=rx_bytes; fi
[ "$OVER_EFA" = 1 ] || exit 0
for counter in "$SYSFS"/class/infiniband/*/ports/1/hw_counters/$kind; do
  echo $(( $(cat "$counter") + bytes / DEVICES )) > "$counter"
done
"""


def run_script(tmp_path: Path, *, devices: int, over_efa: bool, shell: str = "sh") -> str:
    sysfs, fsx, bin_dir = tmp_path / "sys", tmp_path / "fsx", tmp_path / "bin"
    for index in range(devices):
        counters = sysfs / "class/infiniband" / f"rdmap{index}s0" / "ports/1/hw_counters"
        counters.mkdir(parents=True)
        (counters / "tx_bytes").write_text("123456789\n")
        (counters / "rx_bytes").write_text("987654321\n")
    fsx.mkdir(parents=True)
    bin_dir.mkdir(parents=True)
    (bin_dir / "dd").write_text(FAKE_DD)
    (bin_dir / "dd").chmod(0o755)
    script = LUSTRE_EFA_CHECK_SCRIPT.replace("/sys/", f"{sysfs}/").replace("/fsx/", f"{fsx}/")
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "SYSFS": str(sysfs),
        "OVER_EFA": "1" if over_efa else "0",
        "DEVICES": str(max(devices, 1)),
    }
    done = subprocess.run([shell, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert not list(fsx.iterdir()), "the check leaves no file behind"
    return done.stdout


@pytest.mark.parametrize("shell", [s for s in ("sh", "bash", "dash") if shutil.which(s)])
def test_lustre_over_efa_passes_and_over_tcp_fails(tmp_path, shell):
    over_efa = run_script(tmp_path / "efa", devices=16, over_efa=True, shell=shell)
    assert f"moved_bytes={2 * LUSTRE_EFA_CHECK_MIB << 20}" in over_efa
    result = check_lustre_efa(over_efa)
    assert result.passed, result.detail
    assert "over 16 EFA devices" in result.detail
    over_tcp = check_lustre_efa(run_script(tmp_path / "tcp", devices=16, over_efa=False, shell=shell))
    assert not over_tcp.passed and "did not use EFA" in over_tcp.detail and "moved 0 MiB" in over_tcp.detail
    no_device = check_lustre_efa(run_script(tmp_path / "none", devices=0, over_efa=False, shell=shell))
    assert not no_device.passed and "no EFA device" in no_device.detail


@pytest.mark.parametrize(
    ("line", "passed"),
    [
        ("LUSTRE_EFA_CHECK devices=16 moved_bytes=2147483648 efa_bytes=2200000000", True),
        ("LUSTRE_EFA_CHECK devices=16 moved_bytes=2147483648 efa_bytes=1073741824", True),  # half: the bound
        ("LUSTRE_EFA_CHECK devices=16 moved_bytes=2147483648 efa_bytes=1073741823", False),
        ("LUSTRE_EFA_CHECK devices=16 moved_bytes=2147483648 efa_bytes=5120", False),  # LNet pings only
        ("dd: error writing '/fsx/x': No space left on device", False),
    ],
)
def test_the_parser_needs_half_the_moved_bytes_over_efa(line, passed):
    assert check_lustre_efa(f"{line}\n").passed is passed


def test_the_pod_is_the_first_tenants_on_the_checked_group(synthesized):
    config = synthesized.configs[PROFILE]
    tenant = config.workloads.tenants[0].name
    (pod,) = render(config)["lustre-efa-check.yaml"]
    assert pod["metadata"]["namespace"] == tenant
    target = ValidationTarget.for_profile(config)
    assert pod["spec"]["nodeSelector"] == {"platform/gpu-node-group": target.group.name}
    (volume,) = pod["spec"]["volumes"]
    assert volume["persistentVolumeClaim"]["claimName"] == tenancy.FSX_VOLUME
    from tests.test_workloads import _tenant_objects

    claims = {c["metadata"]["name"] for c in _tenant_objects(synthesized, PROFILE, tenant, "PersistentVolumeClaim")}
    assert tenancy.FSX_VOLUME in claims
    assert baseline_problems(pod["spec"]) == []
    admitted = admit(
        [pod],
        limit_ranges=_tenant_objects(synthesized, PROFILE, tenant, "LimitRange"),
        quotas=_tenant_objects(synthesized, PROFILE, tenant, "ResourceQuota"),
    )
    assert admitted.refused is None, admitted.refused
    limits = pod["spec"]["containers"][0]["resources"]["limits"]
    assert "nvidia.com/gpu" not in limits and "vpc.amazonaws.com/efa" not in limits


@pytest.mark.parametrize(
    ("change", "applies"),
    [
        ({}, True),
        ({"storage__fsx__efa_enabled": False}, False),
        ({"cluster__gpu_node_groups__0__efa_enabled": False}, False),
        ({"storage__fsx__data_repository_associations": []}, False),  # no tenant directory to mount
    ],
)
def test_the_check_exists_only_where_lustre_can_use_efa(change, applies):
    doc = yaml.safe_load((Path(__file__).resolve().parents[1] / "profiles" / f"{PROFILE}.yaml").read_text())
    config = validate_profile(changed(doc, **change))
    assert ("lustre-efa-check.yaml" in render(config)) is applies


class LustreKubectl(FakeKubectl):
    def __call__(self, args: list[str]) -> subprocess.CompletedProcess:
        if args[0] == "logs" and args[-1] == "pod/lustre-efa-check":
            self.calls.append(args)
            line = "LUSTRE_EFA_CHECK devices=16 moved_bytes=2147483648 efa_bytes=2181038080\n"
            return subprocess.CompletedProcess(args, 0, line, "")
        return super().__call__(args)


def test_verify_runs_it_alone_between_the_single_node_and_the_multi_node_checks():
    config = load_profile(PROFILE)
    kubectl = LustreKubectl(log("nccl-good-p5.log"))
    results = run_checks(config, kubectl=kubectl)
    steps = [
        call[0] + " " + (Path(call[2]).name if call[0] == "apply" else call[3])
        for call in kubectl.calls
        if call[0] in ("apply", "wait")
    ]
    lustre = steps.index("apply lustre-efa-check.yaml")
    assert steps.index("wait pod/topology-check") < lustre < steps.index("wait pod/lustre-efa-check")
    assert steps.index("wait pod/lustre-efa-check") < steps.index("apply nccl-allreduce.yaml")
    wait = next(c for c in kubectl.calls if c[0] == "wait" and c[3] == "pod/lustre-efa-check")
    assert wait[1:3] == ["-n", config.workloads.tenants[0].name]
    (result,) = [r for r in results if r.name == "lustre-efa-check"]
    assert result.passed, result.detail
