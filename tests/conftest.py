"""Shared test fixtures.

The provider bindings cost seconds to import, so every profile is synthesized once per test
session, in this process, and all tests read the shared result.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest

import toolchain
from profiles import load_profile
from tests.cases import (
    ALL_PROFILES,
    EMULATED_PROFILES,
    FIXTURES,
    HCL_PROFILES,
    IN_CI,
    QUICK,
    SHIPPED,
    TEST_SECRETS,
    profile_source,
)

ROOT = Path(__file__).resolve().parents[1]

# The bindings' run-time argument checks, which synthesis leaves out (toolchain.py), run in the
# tests, here and in the processes they start.
os.environ.setdefault("GPU_PLATFORM_BINDING_TYPE_CHECKS", "1")
toolchain.prepare()


class _OnFirstUse(dict):
    """profile -> its stacks, synthesized the first time a test asks for the profile."""

    def __init__(self, synthesize):
        super().__init__()
        self._synthesize = synthesize

    def __missing__(self, profile: str) -> dict[str, dict]:
        self[profile] = stacks = self._synthesize(profile)
        return stacks


class Synthesized:
    """Synthesized JSON of every shipped and fixture profile, keyed by profile and layer. The full
    suite synthesizes them all up front; the inner loop (QUICK) only the profiles its tests use."""

    def __init__(self, outroot: Path):
        self.outroot = outroot
        self.configs = {name: load_profile(profile_source(name)) for name in ALL_PROFILES}
        self.stacks: dict[str, dict[str, dict]] = _OnFirstUse(self._synthesize)

    def complete(self, *, eager: bool) -> Synthesized:
        """Every profile the tests run over (eager), else the default one; the rest on first use."""
        for name in SHIPPED + FIXTURES if eager else SHIPPED[:1]:
            self.folder(name)
        return self

    def folder(self, profile: str) -> Path:
        """The profile's output folder (cdktf.out/<profile> of the session), synthesized."""
        if profile not in self.stacks:
            self.stacks[profile] = self._synthesize(profile)
        return self.outroot / profile

    def _synthesize(self, name: str) -> dict[str, dict]:
        from stacks import LAYERS
        from stacks.platform import synthesize

        config = self.configs[name]
        outdir = self.outroot / name
        # Secrets present in the environment while synthesizing; restored afterwards.
        with mock.patch.dict(os.environ, TEST_SECRETS):
            synthesize(config, str(outdir), state_dir=self.outroot / "state" / config.name)
        return {layer: json.loads((outdir / "stacks" / layer / "cdk.tf.json").read_text()) for layer in LAYERS}

    def stack(self, profile: str, layer: str) -> dict:
        return self.stacks[profile][layer]

    def resources(self, profile: str, layer: str, resource_type: str) -> dict[str, dict]:
        return self.stack(profile, layer).get("resource", {}).get(resource_type, {})


@pytest.fixture(scope="session")
def synthesis(tmp_path_factory) -> Synthesized:
    """The session's synthesis, before any profile is synthesized (see `synthesized`)."""
    return Synthesized(tmp_path_factory.mktemp("synth"))


@pytest.fixture(scope="session")
def synthesized(synthesis) -> Synthesized:
    return synthesis.complete(eager=not QUICK)


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
        run = subprocess.run(
            [sys.executable, str(ROOT / "main.py"), "hcl", "--profile", profile, "--outdir", str(out / profile)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0, run.stderr
    return out


class EmulatedCycle:
    """One profile's emulated deploy cycle, running in its own process (tests/emulator/cycle.py)."""

    def __init__(self, profile: str, stacks: Path, *, protected: bool, env: dict[str, str], log: Path):
        from tests.emulator.cycle import RESULT_PREFIX

        self.profile, self.log, self.prefix = profile, log, RESULT_PREFIX
        command = [
            sys.executable,
            "-m",
            "tests.emulator.cycle",
            str(stacks),
            profile,
            *(["--protected"] if protected else []),
        ]
        with log.open("w") as out:
            self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)

    def wait(self, timeout: float = 1800) -> dict:
        self.process.wait(timeout=timeout)
        records = [
            line[len(self.prefix) :] for line in self.log.read_text().splitlines() if line.startswith(self.prefix)
        ]
        if not records:
            return {"profile": self.profile, "ok": False, "error": self.log.read_text()[-4000:]}
        record: dict = json.loads(records[-1])
        return record

    def lines(self) -> list[str]:
        return [line for line in self.log.read_text().splitlines() if not line.startswith(self.prefix)]


# How far the rest of the suite lowers its priority once the emulated cycles run (0: not at all).
SUITE_NICENESS_ENV = "GPU_PLATFORM_SUITE_NICENESS"
DEFAULT_SUITE_NICENESS = 10


def yield_cpu_to_the_cycles() -> None:
    """The cycles are the session's critical path (chains of Terraform runs and provider waits;
    p5-training's took 587 s in the suite and 431 s alone), the other tests need only throughput.
    From here on this process's later threads and the tools it starts run at a lower priority
    than the cycles, which were started at the default one: they yield the CPU when both want it
    (on a dedicated 2-core machine, make test went from 604 s to 521 s). On a runner shared with
    other work at the default priority the suite would yield to that too: set the variable to 0."""
    niceness = int(os.environ.get(SUITE_NICENESS_ENV, DEFAULT_SUITE_NICENESS))
    if niceness <= 0:
        return
    try:
        os.nice(niceness)
    except OSError as error:  # a sandbox without setpriority: the suite runs at its priority
        print(f"not lowering the suite's priority: {error}", file=sys.stderr)


@pytest.fixture(scope="session")
def emulated_cycles(synthesis, terraform, tmp_path_factory):
    """Start every emulated profile's cycle now, in the background (each as soon as its own profile
    is synthesized, before the other profiles are); tests collect them."""
    from stacks import AWS_ONLY_LAYERS

    root = tmp_path_factory.mktemp("emulated")
    from tests.terraform import SLOTS_DIR_ENV

    # One pool of Terraform slots for the cycles and the rest of the suite (tests/terraform.py).
    slots = root / "terraform-slots"
    slots.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TF_CLI_CONFIG_FILE": str(terraform.cli_config),
        SLOTS_DIR_ENV: str(slots),
    }
    cycles = {}
    for profile in EMULATED_PROFILES:
        stacks = root / profile / "stacks"
        for layer in AWS_ONLY_LAYERS:  # no Kubernetes API here: the other layers are not in this copy
            shutil.copytree(synthesis.folder(profile) / "stacks" / layer, stacks / layer)
        cycles[profile] = EmulatedCycle(
            profile,
            stacks,
            env=env,
            log=root / f"{profile}.log",
            protected=synthesis.configs[profile].storage.protect_from_destroy,
        )
    yield_cpu_to_the_cycles()
    session_env = pytest.MonkeyPatch()  # the rest of the suite's Terraform runs share the pool
    session_env.setenv(SLOTS_DIR_ENV, str(slots))
    try:
        yield cycles
    finally:
        for cycle in cycles.values():
            if cycle.process.poll() is None:
                cycle.process.kill()
        session_env.undo()


# Tests that start a jsii runtime of their own (~1.2-1.7 GiB each): run after the rest, when the
# emulated cycles are past their busiest phase, so the session's peak memory stays lower.
OWN_JSII_RUNTIME = (
    "tests/test_lazy_bindings.py",
    "tests/test_cli.py",
    "tests/test_addon_recipe.py",
    "tests/test_addon_parts_recipe.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The emulated cycles run in the background from the start; the tests that collect them last,
    and the tests that start their own jsii runtime just before those."""

    def order(item: pytest.Item) -> tuple[bool, bool]:
        own_runtime = "hcl_exported" in getattr(item, "fixturenames", ()) or item.nodeid.startswith(OWN_JSII_RUNTIME)
        return item.get_closest_marker("emulator") is not None, own_runtime

    items.sort(key=order)


@pytest.fixture(scope="session", autouse=True)
def _emulated_cycles_start_first(request):
    if any(item.get_closest_marker("emulator") for item in request.session.items):
        request.getfixturevalue("emulated_cycles")
