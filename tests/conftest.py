"""Shared test fixtures.

The provider bindings cost seconds to import, so every profile is synthesized once per test
session, in this process, and all tests read the shared result.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest

import toolchain
from profiles import load_profile
from tests.cases import FIXTURES, HCL_PROFILES, IN_CI, SHIPPED, TEST_SECRETS, profile_source

ROOT = Path(__file__).resolve().parents[1]

toolchain.prepare()

class Synthesized:
    """Synthesized JSON of every shipped and fixture profile, keyed by profile and layer."""

    def __init__(self, outroot: Path):
        from stacks import LAYERS
        from stacks.platform import synthesize

        self.outroot = outroot
        self.stacks: dict[str, dict[str, dict]] = {}
        self.configs = {}
        for name in SHIPPED + FIXTURES:
            config = load_profile(profile_source(name))
            outdir = outroot / name
            # Secrets present in the environment while synthesizing; restored afterwards.
            with mock.patch.dict(os.environ, TEST_SECRETS):
                synthesize(config, str(outdir), state_dir=outroot / "state" / config.name)
            self.configs[name] = config
            self.stacks[name] = {
                layer: json.loads((outdir / "stacks" / layer / "cdk.tf.json").read_text()) for layer in LAYERS
            }

    def stack(self, profile: str, layer: str) -> dict:
        return self.stacks[profile][layer]

    def resources(self, profile: str, layer: str, resource_type: str) -> dict[str, dict]:
        return self.stack(profile, layer).get("resource", {}).get(resource_type, {})


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory) -> Synthesized:
    return Synthesized(tmp_path_factory.mktemp("synth"))


@pytest.fixture(scope="session")
def terraform(tmp_path_factory):
    from tests.terraform import Terraform

    ready = Terraform.prepare(tmp_path_factory.mktemp("terraform"))
    if isinstance(ready, str):
        if IN_CI:
            pytest.fail(f"CI needs Terraform with the offline provider mirror: {ready}")
        pytest.skip(f"SKIPPING terraform checks: {ready}")
    return ready


@pytest.fixture(scope="session")
def report(request):
    """Write a line to the terminal even when output is captured (measurements CI should show)."""
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")

    def write(line: str = "") -> None:
        if reporter is None or capture is None:
            print(line)
            return
        with capture.global_and_fixture_disabled():
            reporter.write_line(line)

    return write


@pytest.fixture(scope="session")
def hcl_exported(tmp_path_factory) -> Path:
    """`main.py hcl` for HCL_PROFILES, each into <tmp>/<profile>/stacks/<layer>/cdk.tf."""
    # HCL rendering is chosen when cdktf's Node process starts, so it needs processes of its own:
    # one after the other, as each holds a jsii runtime (~1.2 GiB) next to this session's own.
    out = tmp_path_factory.mktemp("hcl")
    for profile in HCL_PROFILES:
        run = subprocess.run([sys.executable, str(ROOT / "main.py"), "hcl", "--profile", profile, "--outdir",
                              str(out / profile)], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
    return out
