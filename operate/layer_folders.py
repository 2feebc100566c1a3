"""Terraform in the synthesized layer folders: running it (with a heartbeat while it runs long, and
owner-only files), and reading what a layer is: its stack, its state's resources and outputs, its
saved plan, the layers it reads from, whether its configuration validates. The Operator
(operate/layers.py) plans, applies and destroys on top of it."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from operate.terraform_init import registry_unreachable
from operate.tools import require_tool
from stacks import LAYERS

PLAN_FILE = "tfplan"

# Files Terraform writes hold secrets (state, backups, saved plans): created owner-only.
TERRAFORM_UMASK = 0o077

Validation = Literal["valid", "INVALID", "not checked"]


class StateUnreadable(RuntimeError):
    """Terraform could not read a layer's state (credentials, bucket, lock)."""


class PlanUnreadable(RuntimeError):
    """`terraform show` could not read a layer's saved plan: nothing it would change is known."""


REMOTE_STATE_PREFIX = "cross-stack-reference-input-"


class LayerFolders:
    """Terraform in `stacks_dir/<layer>`. The Operator sets the attributes."""

    stacks_dir: Path
    terraform: str
    env: dict[str, str]
    log: Callable[[str], None]
    heartbeat_seconds: float
    _outputs: dict[str, dict[str, Any]]
    _resources: dict[str, list[str]]
    _shown: dict[str, tuple[tuple[int, int, int], dict[str, Any]]]

    def _tf(self, layer: str, *args: str) -> subprocess.CompletedProcess[str]:
        return self.terraform_in(self.stacks_dir / layer, *args, label=layer)

    def terraform_in(self, folder: Path, *args: str, label: str = "") -> subprocess.CompletedProcess[str]:
        """Run Terraform in `folder`, logging a progress line while it runs longer than the heartbeat.
        Raises ToolMissing when there is no Terraform to run."""
        command = [require_tool(self.terraform, self.env.get("PATH")), f"-chdir={folder}", *args, "-no-color"]
        started = time.monotonic()
        # umask 077: every file Terraform creates (a local state and its .backup, the saved plan,
        # .terraform/) is its owner's only from the first write. Terraform keeps an existing
        # file's mode when it rewrites it; the state folder's claim tightens those (state_claim.py).
        with subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env, umask=TERRAFORM_UMASK
        ) as process:
            while True:
                try:
                    stdout, stderr = process.communicate(timeout=self.heartbeat_seconds)
                    break
                except subprocess.TimeoutExpired:
                    self.log(
                        f"      {label or folder.name}: terraform {args[0]} still running "
                        f"({time.monotonic() - started:.0f}s)"
                    )
        return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)

    def validate(self, layer: str) -> tuple[Validation, str]:
        """`terraform validate` of a layer with its real providers, in a data folder of its own
        (the layer's backend and deploy folder are untouched): valid, INVALID, or not checked when
        the providers could not be downloaded (then nothing is known of the configuration)."""
        data_dir = str(self.stacks_dir / layer / ".terraform-validate")
        saved, self.env = self.env, {**self.env, "TF_DATA_DIR": data_dir}
        try:
            init = self._tf(layer, "init", "-backend=false", "-input=false")
            said = (init.stderr or init.stdout).strip()
            if init.returncode != 0:
                return ("not checked" if registry_unreachable(said) else "INVALID"), f"terraform init failed:\n{said}"
            checked = self._tf(layer, "validate")
            return ("valid" if checked.returncode == 0 else "INVALID"), (checked.stdout + checked.stderr).strip()
        finally:
            self.env = saved

    def deployed_layers(self) -> list[str]:
        """The layers whose state holds resources, read anew."""
        self._resources.clear()
        return [layer for layer in self.synthesized_layers() if self.resources(layer)]

    def synthesized_layers(self) -> list[str]:
        return [layer for layer in LAYERS if (self.stacks_dir / layer / "cdk.tf.json").is_file()]

    def _initialised(self, layer: str) -> None:
        """`terraform init` once, before the first read of a layer's state (raises StateUnreadable)."""
        if not (self.stacks_dir / layer / ".terraform").is_dir():
            init = self._tf(layer, "init", "-input=false")
            if init.returncode != 0:
                raise StateUnreadable(f"{layer}: terraform init failed: {(init.stderr or init.stdout).strip()}")

    def resources(self, layer: str) -> list[str]:
        """The managed resources in the layer's state (none before its first apply)."""
        if layer not in self._resources:
            self._initialised(layer)
            listed = self._tf(layer, "state", "list")
            if listed.returncode != 0 and "No state file was found" not in listed.stderr:
                raise StateUnreadable(f"{layer}: cannot read its state: {(listed.stderr or listed.stdout).strip()}")
            self._resources[layer] = [
                line
                for line in listed.stdout.splitlines()
                if line and not line.startswith("data.") and ".data." not in line
            ]
        return self._resources[layer]

    def upstream_layers(self, layer: str) -> list[str]:
        """The layers whose outputs this layer reads, in deploy order."""
        sources = self.stack(layer).get("data", {}).get("terraform_remote_state", {})
        named = {name.removeprefix(REMOTE_STATE_PREFIX) for name in sources}
        return [upstream for upstream in LAYERS if upstream in named]

    def missing_upstream(self, layer: str, applied_here: list[str]) -> list[str]:
        """Upstream layers with no outputs yet (and not applied earlier in this run)."""
        return [
            upstream
            for upstream in self.upstream_layers(layer)
            if upstream not in applied_here and not self.outputs(upstream)
        ]

    def stack(self, layer: str) -> dict[str, Any]:
        synthesized: dict[str, Any] = json.loads((self.stacks_dir / layer / "cdk.tf.json").read_text())
        return synthesized

    def plan_json(self, layer: str) -> dict[str, Any]:
        """The saved plan of a layer as JSON (after `plan`), shown once per plan file."""
        try:
            stat = (self.stacks_dir / layer / PLAN_FILE).stat()
        except FileNotFoundError:
            stat = None
        identity = (stat.st_ino, stat.st_size, stat.st_mtime_ns) if stat else None
        cached = self._shown.get(layer)
        if identity and cached and cached[0] == identity:
            return cached[1]
        shown = self._tf(layer, "show", "-json", PLAN_FILE)
        if shown.returncode != 0:  # an empty summary would read as "no changes", or a destroy of nothing
            raise PlanUnreadable(f"terraform show failed:\n{shown.stderr or shown.stdout}")
        plan: dict[str, Any] = json.loads(shown.stdout or "{}")
        if identity:
            self._shown[layer] = (identity, plan)
        return plan

    def outputs(self, layer: str) -> dict[str, Any]:
        """The layer's outputs (name -> {value, sensitive}); empty before its first apply. Raises
        StateUnreadable when Terraform cannot read the state. Read once per run and layer."""
        if layer not in self._outputs:
            self._initialised(layer)
            shown = self._tf(layer, "output", "-json")
            if shown.returncode != 0:
                raise StateUnreadable(f"{layer}: cannot read its state: {(shown.stderr or shown.stdout).strip()}")
            self._outputs[layer] = json.loads(shown.stdout or "{}")
        return self._outputs[layer]

    def output_lines(self, layer: str) -> list[str]:
        lines = []
        for name, output in sorted(self.outputs(layer).items()):
            if name.startswith("cross-stack-output-"):
                continue  # plumbing between layers, not for people
            value = "(sensitive)" if output.get("sensitive") else json.dumps(output.get("value"))
            lines.append(f"  {layer}.{name} = {value}")
        return lines
