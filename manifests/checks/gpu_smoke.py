"""The single-node GPU check: nvidia-smi in a pod given GPUs lists them."""

from __future__ import annotations

import re

from components.acceptance import CheckResult


def check_gpu_smoke(log: str) -> CheckResult:
    gpus = re.findall(r"^GPU \d+: .+\(UUID: GPU-[0-9a-f-]+\)", log, flags=re.MULTILINE)
    if not gpus:
        return CheckResult("gpu-smoke-test", False, "nvidia-smi listed no GPU: is the device plugin running?")
    return CheckResult("gpu-smoke-test", True, f"nvidia-smi sees {len(gpus)} GPU(s)")
