"""The bindings' run-time argument checks: synthesis leaves them out (toolchain.py), the tests
run them, and a wrong argument still fails synthesis, in the jsii kernel."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cdktf import App, TerraformOutput, TerraformStack

import toolchain

ROOT = Path(__file__).resolve().parents[1]
WRONG_ARGUMENT = """
import toolchain
toolchain.prepare()
import typeguard
from cdktf import App, TerraformOutput, TerraformStack
assert typeguard.check_type.skipped_by_toolchain
TerraformOutput(TerraformStack(App(), "layer"), "out", value="v", description=123)
"""


def test_the_suite_runs_the_binding_checks():
    assert toolchain.binding_type_checks_enabled()
    with pytest.raises(TypeError, match="argument description must be one of"):
        TerraformOutput(TerraformStack(App(), "layer"), "out", value="v", description=123)  # type: ignore[arg-type]


@pytest.mark.slow  # a jsii runtime of its own
def test_without_them_the_jsii_kernel_still_refuses_a_wrong_argument():
    env = {k: v for k, v in os.environ.items() if k != "GPU_PLATFORM_BINDING_TYPE_CHECKS"}
    run = subprocess.run(
        [sys.executable, "-c", WRONG_ARGUMENT],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1
    assert "Unable to deserialize value as cdktf.TerraformOutputConfig" in run.stderr, run.stderr[-2000:]
