"""toolchain.py's process set-up (lazy bindings, reused type hints, the bindings' argument checks
left out) changes how fast synthesis starts, never what it writes."""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import toolchain
from stacks import LAYERS
from tests.cases import FIXTURES, SHIPPED, profile_source

# Left out of `make check` (a second jsii runtime synthesizes every profile with eager bindings); `make test` runs it.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
EAGER_SYNTH = """
import sys, toolchain
toolchain.prepare()
from profiles import load_profile
from pathlib import Path
from stacks.platform import synthesize
for name, source in zip(sys.argv[1::2], sys.argv[2::2]):
    config = load_profile(source)
    synthesize(config, f"{OUT}/{name}", state_dir=Path("{OUT}") / "state" / config.name)
"""


def test_this_session_uses_lazy_bindings():
    import cdktf_cdktf_provider_aws

    assert toolchain.lazy_bindings_enabled()
    assert "cdktf_cdktf_provider_aws.xray_group" not in sys.modules  # never imported by the app
    assert cdktf_cdktf_provider_aws.xray_group.XrayGroup  # ... yet reachable on demand


def test_every_profile_is_byte_identical_with_eager_bindings(synthesized, tmp_path):
    names = SHIPPED + FIXTURES
    args = [arg for name in names for arg in (name, profile_source(name))]
    run = subprocess.run(
        [sys.executable, "-c", EAGER_SYNTH.replace("{OUT}", str(tmp_path)), *args],
        cwd=ROOT,
        # Without the bindings' argument checks, as synthesis runs (the session keeps them).
        env={
            **{k: v for k, v in os.environ.items() if k != "GPU_PLATFORM_BINDING_TYPE_CHECKS"},
            "GPU_PLATFORM_EAGER_BINDINGS": "1",
            "PYTHONPATH": str(ROOT),
        },
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    for name in names:
        lazy, eager = synthesized.outroot / name / "stacks", tmp_path / name / "stacks"
        for layer in LAYERS:
            assert filecmp.cmp(lazy / layer / "cdk.tf.json", eager / layer / "cdk.tf.json", shallow=False), (
                name,
                layer,
            )


def test_binding_type_hints_are_evaluated_once_and_still_checked(tmp_path):
    """The reused hints are the bindings' own: a wrong argument type is refused on every call."""
    from cdktf import App, TerraformStack
    from cdktf_cdktf_provider_aws.iam_role import IamRole

    toolchain.prepare()
    stack = TerraformStack(App(outdir=str(tmp_path)), "hints")
    for attempt in range(2):  # the second call uses the hints evaluated by the first
        with pytest.raises(TypeError, match="type of argument name must be one of"):
            IamRole(stack, f"role-{attempt}", name=5, assume_role_policy="{}")
    assert typing.get_type_hints.reuses_binding_stubs

    def plain(value: int) -> str:
        return str(value)

    assert typing.get_type_hints(plain) == {"value": int, "return": str}  # other callers unchanged
