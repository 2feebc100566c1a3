"""Plan, deploy or destroy layers in order, stopping at the first failure with Terraform's error."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from operate.cleanup import pre_destroy_cleanup
from stacks import LAYERS

KUBERNETES_LAYERS = ("addons", "workloads")
Action = Literal["plan", "deploy", "destroy"]


@dataclass(frozen=True)
class LayerResult:
    layer: str
    ok: bool
    seconds: float
    detail: str  # "no changes" / "changes" / Terraform's error output


def select_layers(layer: str) -> list[str]:
    if layer == "all":
        return list(LAYERS)
    if layer not in LAYERS:
        raise ValueError(f"unknown layer {layer!r}; choose all or one of {', '.join(LAYERS)}")
    return [layer]


class Operator:
    """Runs Terraform in `stacks_dir/<layer>` (cdktf.out/stacks), non-interactively."""

    def __init__(self, stacks_dir: Path, *, terraform: str = "terraform", env: dict[str, str] | None = None,
                 log: Callable[[str], None] = print, cleanup: Callable[[], object] | None = None):
        self.stacks_dir = stacks_dir
        self.terraform = terraform
        self.env = {**os.environ, "TF_IN_AUTOMATION": "1", "TF_INPUT": "0", **(env or {})}
        self.log = log
        self.cleanup = cleanup if cleanup is not None else pre_destroy_cleanup

    def _tf(self, layer: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.terraform, f"-chdir={self.stacks_dir / layer}", *args, "-no-color"],
                              capture_output=True, text=True, env=self.env, timeout=3600)

    def run(self, action: Action, layers: list[str]) -> list[LayerResult]:
        ordered = [layer for layer in LAYERS if layer in layers]
        if action == "destroy":
            ordered.reverse()
            if any(layer in KUBERNETES_LAYERS for layer in ordered):
                self.log("pre-destroy clean-up of controller-created resources")
                self.cleanup()
        results = []
        for index, layer in enumerate(ordered, 1):
            self.log(f"[{index}/{len(ordered)}] {layer}: {action} ...")
            started = time.monotonic()
            ok, detail = self._layer(action, layer)
            results.append(LayerResult(layer, ok, round(time.monotonic() - started, 1), detail))
            self.log(f"[{index}/{len(ordered)}] {layer}: {'ok' if ok else 'FAILED'} "
                     f"({results[-1].seconds}s){': ' + detail if ok else ''}")
            if not ok:
                self.log(detail)
                break
        return results

    def _layer(self, action: Action, layer: str) -> tuple[bool, str]:
        init = self._tf(layer, "init", "-input=false")
        if init.returncode != 0:
            return False, f"terraform init failed:\n{init.stderr or init.stdout}"
        if action == "destroy":
            done = self._tf(layer, "destroy", "-auto-approve", "-input=false")
            return done.returncode == 0, "destroyed" if done.returncode == 0 else done.stderr or done.stdout
        plan = self._tf(layer, "plan", "-input=false", "-detailed-exitcode", "-out=tfplan")
        if plan.returncode == 1:
            return False, f"terraform plan failed:\n{plan.stderr or plan.stdout}"
        changes = "changes" if plan.returncode == 2 else "no changes"
        if action == "plan":
            return True, changes
        applied = self._tf(layer, "apply", "-input=false", "-auto-approve", "tfplan")
        return (
            applied.returncode == 0,
            "applied " + changes if applied.returncode == 0 else applied.stderr or applied.stdout,
        )

    def plan_json(self, layer: str) -> dict[str, Any]:
        """The saved plan of a layer as JSON (after `plan`)."""
        import json

        shown = self._tf(layer, "show", "-json", "tfplan")
        plan: dict[str, Any] = json.loads(shown.stdout)
        return plan
