"""toolchain.py's process set-up (lazy bindings, the preload, reused type hints) changes how fast
synthesis starts, never what it writes or checks."""

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


PRELOAD = """
import sys, tempfile, time, toolchain
from pathlib import Path
toolchain.preload_bindings()
from profiles import load_profile
config = load_profile("gpu-validation")  # the main thread validates meanwhile
deadline = time.monotonic() + 100
while toolchain.preload_running() and time.monotonic() < deadline:
    time.sleep(0.05)
def bindings():
    return {name for name in sys.modules if name.startswith(toolchain.LAZY_PACKAGES) and "._" not in name}
preloaded = bindings()
print(sorted(name for name in toolchain.PRELOADED_PACKAGES if name in sys.modules))
print(any(name.startswith(("stacks", "components")) or name.endswith(".install") for name in sys.modules))
from stacks.platform import synthesize
with tempfile.TemporaryDirectory() as folder:
    synthesize(config, folder + "/out", state_dir=Path(folder) / "state")
print(sorted(bindings() - preloaded))
"""


def test_the_preload_imports_the_bindings_synthesis_needs_and_no_app_module():
    """The background load imports the binding packages and every binding submodule synthesis
    then uses, never the app's own modules (two threads importing one package tree could deadlock
    on its module locks)."""
    run = subprocess.run(
        [sys.executable, "-c", PRELOAD],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert run.returncode == 0, run.stderr
    packages, app_modules, imported_later = run.stdout.splitlines()
    assert packages == str(sorted(toolchain.PRELOADED_PACKAGES))
    assert app_modules == "False"
    assert imported_later == "[]", "the source scan missed binding submodules that synthesis imports"


def test_every_profile_is_byte_identical_with_eager_bindings(synthesized, tmp_path):
    names = SHIPPED + FIXTURES
    args = [arg for name in names for arg in (name, profile_source(name))]
    run = subprocess.run(
        [sys.executable, "-c", EAGER_SYNTH.replace("{OUT}", str(tmp_path)), *args],
        cwd=ROOT,
        env={**os.environ, "GPU_PLATFORM_EAGER_BINDINGS": "1", "PYTHONPATH": str(ROOT)},
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
