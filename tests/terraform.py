"""Run Terraform offline against synthesized stacks, with the machine's provider mirror.

The mirror is found the way `make plan|deploy` find it (operate/providers.py); Terraform reads a
CLI config written for it (TF_CLI_CONFIG_FILE), so a user's own ~/.terraformrc plays no part.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from operate.layers import Operator
from operate.providers import find_provider_mirror, mirror_cli_config
from profiles.versions import AWS_PROVIDER_VERSION

# What `terraform init` reports when a provider has no binary here (no mirror, no registry): the
# configuration was loaded in full before Terraform looked for providers.
PROVIDER_UNAVAILABLE = ("Failed to query available provider packages", "Failed to install provider")


def registry_reachable(timeout: float = 3.0) -> bool:
    try:
        with socket.create_connection(("registry.terraform.io", 443), timeout=timeout):
            return True
    except OSError:
        return False


# The Terraform runs that start providers, which the whole session may run at once: the emulated
# cycles' and the rest of the suite's alike (each such run is ~0.5 GiB of aws provider and about
# as much of Terraform decoding its schema). A pool of lock files in the folder this variable
# names; the session sets it while the emulated cycles run (`make check` runs none: no pool).
SLOTS_DIR_ENV = "TERRAFORM_SLOTS_DIR"
# Four, so that both cycles' storage and build applies run at once (with three, one of the four
# deploy-phase applies, at times p5-training's storage on the critical chain, waited for a slot).
SLOTS = 4
# The cycles are the session's critical path: the rest of the suite may hold at most this many
# slots and the cycles try the others first, so the cycles always have two; the rest are shared
# first come, first served.
SUITE_SLOTS = 2
# How long a run waits for a slot before it fails (a run hung in another process holds one).
SLOT_WAIT_SECONDS = 900
# Commands that read files and state only: they start no provider and take no slot (checked with
# TF_LOG=trace on Terraform 1.11: `state show` starts the provider to decode the resource).
WITHOUT_PROVIDERS = frozenset({"init", "output", "fmt", "version", "workspace"})
STATE_WITHOUT_PROVIDERS = frozenset({"list", "pull", "push", "mv", "rm", "replace-provider"})


def starts_providers(args: tuple[str, ...] | list[str]) -> bool:
    words = [a for a in args if not a.startswith("-")]
    command = words[0] if words else ""
    if command == "state":
        return len(words) < 2 or words[1] not in STATE_WITHOUT_PROVIDERS
    return command not in WITHOUT_PROVIDERS


@contextmanager
def terraform_slot(args: tuple[str, ...] | list[str], *, critical: bool = False) -> Iterator[None]:
    """Hold one of the session's slots while a Terraform run that starts providers goes on.
    `critical` (the emulated cycles) may take any slot, the rest of the suite the first
    SUITE_SLOTS only."""
    folder = os.environ.get(SLOTS_DIR_ENV)
    if not folder or not starts_providers(args):
        yield
        return
    order = range(SLOTS - 1, -1, -1) if critical else range(SUITE_SLOTS)
    deadline = time.monotonic() + SLOT_WAIT_SECONDS
    while True:
        for index in order:
            handle = open(Path(folder) / f"slot-{index}", "a")  # noqa: SIM115 (held until released)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
                handle.close()
            return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"waited {SLOT_WAIT_SECONDS} s for a Terraform slot in {folder} (terraform {' '.join(args)}): "
                "a run elsewhere in the session holds them all"
            )
        time.sleep(0.5)


class SlottedOperator(Operator):
    """The product's Operator, its provider-starting Terraform runs taking a slot of the pool
    (`critical` for the emulated cycles)."""

    def __init__(self, *args: Any, critical: bool = False, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.critical = critical

    def terraform_in(self, folder: Path, *args: str, label: str = "") -> subprocess.CompletedProcess[str]:
        with terraform_slot(args, critical=self.critical):
            return super().terraform_in(folder, *args, label=label)


@dataclass(frozen=True)
class Terraform:
    binary: str
    mirror: Path | None  # None: providers come from the registry
    cli_config: Path

    @classmethod
    def prepare(cls, workdir: Path) -> Terraform | str:
        """A ready Terraform, or the reason there is none: the offline mirror when this machine
        has one, else the registry when it is reachable (a networked CI runner)."""
        binary = shutil.which("terraform")
        if binary is None:
            return "terraform is not on PATH"
        mirror = find_provider_mirror()
        if mirror is not None and (mirror / "registry.terraform.io/hashicorp/aws").is_dir():
            return cls(binary, mirror, mirror_cli_config(mirror, workdir / "terraform.rc"))
        if registry_reachable():
            workdir.mkdir(parents=True, exist_ok=True)
            direct = workdir / "terraform.rc"
            direct.write_text("provider_installation {\n  direct {}\n}\n")
            return cls(binary, None, direct)
        return (
            f"no hashicorp/aws {AWS_PROVIDER_VERSION} provider mirror found (set TF_PROVIDER_MIRROR, or run "
            "make provider-mirror where the registry is reachable) and the registry is not reachable"
        )

    def run(self, workdir: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        full_env = {
            **os.environ,
            "TF_CLI_CONFIG_FILE": str(self.cli_config),
            "TF_IN_AUTOMATION": "1",
            "CHECKPOINT_DISABLE": "1",
            **(env or {}),
        }
        with terraform_slot(args):
            return subprocess.run(
                [self.binary, f"-chdir={workdir}", *args], capture_output=True, text=True, env=full_env, timeout=600
            )

    def test(self, stack_json: dict, test_file: str, workdir: Path) -> subprocess.CompletedProcess:
        """`terraform test` of one stack (backend removed) with the given .tftest.hcl text."""
        workdir.mkdir(parents=True, exist_ok=True)
        stack = {**stack_json, "terraform": {k: v for k, v in stack_json["terraform"].items() if k != "backend"}}
        (workdir / "cdk.tf.json").write_text(json.dumps(stack))
        (workdir / "checks.tftest.hcl").write_text(test_file)
        init = self.run(workdir, "init", "-backend=false", "-input=false", "-no-color")
        assert init.returncode == 0, init.stderr
        return self.run(workdir, "test", "-no-color")

    def validate_many(self, stacks: dict[str, dict | str], workdir: Path) -> dict[str, list[dict]]:
        """Validate many stacks in one Terraform run (the provider schema loads once): each stack
        becomes a child module of a generated root. Returns each stack's diagnostics."""
        workdir.mkdir(parents=True, exist_ok=True)
        root: dict = {"module": {}}
        for name, stack in stacks.items():
            folder = workdir / name
            folder.mkdir()
            if isinstance(stack, str):
                # HCL: drop the backend block (a child module may not have one).
                (folder / "cdk.tf").write_text(re.sub(r'\n\s*backend "\w+" \{[^}]*\}', "", stack))
            else:
                terraform_block = {k: v for k, v in stack["terraform"].items() if k != "backend"}
                # Without its provider block a child module uses the root's one provider instance:
                # Terraform starts a provider process (~240 MiB) per configured instance, and 20
                # stacks at once were most of the suite's peak memory. Provider blocks are validated
                # in the HCL exports (test_hcl_export) and used for real by the emulated deploy.
                body = {k: v for k, v in stack.items() if k != "provider"}
                (folder / "cdk.tf.json").write_text(json.dumps({**body, "terraform": terraform_block}))
            root["module"][name] = {"source": f"./{name}"}
        (workdir / "main.tf.json").write_text(json.dumps(root))
        init = self.run(workdir, "init", "-backend=false", "-input=false", "-no-color")
        if init.returncode != 0:
            raise AssertionError(f"terraform init failed: {init.stderr}{init.stdout}")
        result = json.loads(self.run(workdir, "validate", "-json", "-no-color").stdout)
        found: dict[str, list[dict]] = {name: [] for name in stacks}
        for diagnostic in result.get("diagnostics", []):
            filename = diagnostic.get("range", {}).get("filename", "")
            owners = [name for name in stacks if filename.startswith(f"{name}/")] or list(stacks)
            for owner in owners:
                found[owner].append(diagnostic)
        return found

    def load(self, stacks: dict[str, str | dict], workdir: Path) -> dict[str, LoadResult]:
        """`terraform init` of each stack as its own root (JSON or HCL text; backend kept, not
        initialised), concurrently. Terraform loads and checks the whole configuration before it
        installs providers, so configuration errors are reported whether or not every provider
        has a binary here. (`validate_many` validates the stacks whose providers do.)"""
        workdir.mkdir(parents=True, exist_ok=True)

        def one(name: str) -> LoadResult:
            folder = workdir / name
            folder.mkdir()
            stack = stacks[name]
            if isinstance(stack, str):
                (folder / "cdk.tf").write_text(stack)
            else:
                (folder / "cdk.tf.json").write_text(json.dumps(stack))
            init = self.run(folder, "init", "-backend=false", "-input=false", "-json")
            diagnostics = _json_diagnostics(init.stdout)
            missing = [d["detail"] for d in diagnostics if d["summary"].startswith(PROVIDER_UNAVAILABLE)]
            errors = [
                d
                for d in diagnostics
                if d["severity"] == "error"
                and not d["summary"].startswith(
                    (*PROVIDER_UNAVAILABLE, "Terraform encountered problems during initialisation")
                )
            ]
            if init.returncode != 0 and not errors and not missing:  # failed, and not for a known reason
                errors = [
                    {"severity": "error", "summary": "terraform init failed", "detail": init.stdout + init.stderr}
                ]
            return LoadResult(errors=errors, providers_missing=missing)

        with ThreadPoolExecutor(max_workers=4) as pool:
            return dict(zip(stacks, pool.map(one, stacks), strict=True))


@dataclass(frozen=True)
class LoadResult:
    errors: list[dict]
    """Configuration errors: none is the only good answer."""
    providers_missing: list[str]
    """Providers with no binary here (init stopped there, after loading the configuration)."""


def _json_diagnostics(stdout: str) -> list[dict]:
    found = []
    for line in stdout.splitlines():
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if message.get("type") == "diagnostic":
            found.append(message["diagnostic"])
    return found


def describe(diagnostics: list[dict]) -> str:
    return "\n".join(
        f"{d['severity']}: {d['summary']}: {d.get('detail', '')} at "
        f"{d.get('range', {}).get('filename')}:{d.get('range', {}).get('start', {}).get('line')}"
        for d in diagnostics
    )
