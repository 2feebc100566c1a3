"""Plan, deploy or destroy layers in order with plain Terraform, stopping at the first failure.

Every layer is planned into a saved plan file (stacks/<layer>/tfplan) whose summary is shown;
deploy and destroy apply exactly that plan, and only after `confirm` approves it. Long Terraform
runs print a progress line at least every `heartbeat_seconds`.

A layer reads its upstream layers' outputs from their state (the synthesized
`terraform_remote_state` data sources name them). A layer whose upstream state has no outputs yet
cannot be planned: `plan` says which layer to apply first instead of failing in Terraform, and
`deploy` checks, before it applies anything, everything the later layers need (`preflight`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from operate.layer_folders import (
    PLAN_FILE,
    LayerFolders,
    PlanUnreadable,
    StateUnreadable,
)
from operate.messages import bullet, wrap
from operate.plans import (
    DATA_RESOURCES,
    destroy_preview,
    needs_apply,
    protected_resources,
    protection_override,
    summarize_plan,
)
from stacks import AWS_ONLY_LAYERS, LAYERS

KUBERNETES_LAYERS = ("addons", "workloads")


class TeardownStuck(RuntimeError):
    """A Kubernetes layer's teardown cannot go on (a bounded wait ran out, or the cluster stopped
    answering after something was deleted): `fix` says how to release what holds it and that running
    the destroy again resumes, `why` names what is left. Printed fix first (operate/messages.py)."""

    def __init__(self, fix: str, why: str):
        super().__init__(f"{fix}\n{why}")
        self.fix = fix
        self.why = why

    def told(self, context: str) -> str:
        """The message as printed: the fix, then `context` (where the teardown stopped) and why,
        wrapped at operate.messages.WIDTH."""
        return "\n".join(wrap(f"{self.fix}\n{context}: {self.why}"))


Action = Literal["plan", "deploy", "destroy"]
# Written only by a destroy with delete_data, in the synthesized folder (the next synth removes it).
PROTECTION_OVERRIDE = "zz_delete_data_override.tf.json"


@dataclass(frozen=True)
class LayerResult:
    layer: str
    ok: bool
    seconds: float
    detail: str  # "no changes" / "changes" / "applied ..." / Terraform's error output


def select_layers(layer: str) -> list[str]:
    """`all`, `aws` (the layers that need no cluster API: what CI can plan) or one layer."""
    if layer == "all":
        return list(LAYERS)
    if layer == "aws":
        return list(AWS_ONLY_LAYERS)
    if layer not in LAYERS:
        raise ValueError(f"unknown layer {layer!r}; choose all, aws or one of {', '.join(LAYERS)}")
    return [layer]


class Operator(LayerFolders):
    """Runs Terraform in `stacks_dir/<layer>` (cdktf.out/<profile>/stacks)."""

    def __init__(
        self,
        stacks_dir: Path,
        *,
        terraform: str = "terraform",
        env: dict[str, str] | None = None,
        log: Callable[[str], None] = print,
        confirm: Callable[[str], bool] = lambda _: True,
        cleanup: Callable[[str], object] = lambda _: None,
        cleanup_preview: Callable[[str], list[str]] = lambda _: [],
        settle: Callable[[str], object] = lambda _: None,
        heartbeat_seconds: float = 30,
        preflight: Callable[[list[str]], list[str]] = lambda _: [],
        delete_data: bool = False,
        confirm_data: Callable[[str], bool] = lambda _: False,
    ):
        self.stacks_dir = stacks_dir
        self.terraform = terraform
        # TF_WORKSPACE and TF_CLI_ARGS* from the caller's shell would change which state a layer
        # uses or what a reviewed plan's apply does (-target, -auto-approve): never passed on.
        inherited = {k: v for k, v in os.environ.items() if k != "TF_WORKSPACE" and not k.startswith("TF_CLI_ARGS")}
        self.env = {**inherited, "TF_IN_AUTOMATION": "1", "TF_INPUT": "0", "CHECKPOINT_DISABLE": "1", **(env or {})}
        self.log = log
        self.confirm = confirm
        self.cleanup = cleanup
        self.cleanup_preview = cleanup_preview
        self.settle = settle
        self.preflight = preflight
        self.delete_data = delete_data
        self.confirm_data = confirm_data
        self.heartbeat_seconds = heartbeat_seconds
        self._outputs: dict[str, dict[str, Any]] = {}
        self.results: list[LayerResult] = []
        """The layers the last `run` got through so far (also when it stopped on an exception)."""
        self._resources: dict[str, list[str]] = {}
        # The last saved plan shown, per layer, with the plan file's identity when it was read:
        # `terraform show -json` loads the providers' schemas (a few seconds, ~600 MB), once per plan.
        self._shown: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}

    def run(self, action: Action, layers: list[str]) -> list[LayerResult]:
        ordered = [layer for layer in LAYERS if layer in layers]
        for stale in self.stacks_dir.glob(f"*/{PROTECTION_OVERRIDE}"):  # left by an interrupted destroy
            stale.unlink()
        if action == "destroy":
            ordered.reverse()
        stopped = self._stop_before_starting(action, ordered)
        if stopped:
            return [stopped]
        results: list[LayerResult] = []
        self.results = results
        for index, layer in enumerate(ordered, 1):
            self.log(f"[{index}/{len(ordered)}] {layer}: {action} ...")
            started = time.monotonic()
            try:
                missing = self.missing_upstream(layer, applied_here=ordered[: index - 1] if action == "deploy" else [])
            except StateUnreadable as error:
                results.append(LayerResult(layer, False, 0.0, str(error)))
                self.log(f"[{index}/{len(ordered)}] {layer}: FAILED: {error}")
                break
            if missing and action in ("plan", "deploy"):
                detail = (
                    f"not planned: it reads the outputs of {', '.join(missing)}, which "
                    f"{'is' if len(missing) == 1 else 'are'} not applied yet; apply "
                    f"{' then '.join(missing)} first (make deploy LAYER={missing[0]})"
                )
                results.append(LayerResult(layer, action == "plan", 0.0, detail))
                self.log(f"[{index}/{len(ordered)}] {layer}: {detail}")
                if action == "deploy":
                    break
                continue
            ok, detail = self._layer(action, layer)
            results.append(LayerResult(layer, ok, round(time.monotonic() - started, 1), detail))
            self.log(
                f"[{index}/{len(ordered)}] {layer}: {'ok' if ok else 'FAILED'} "
                f"({results[-1].seconds}s){': ' + detail if ok else ''}"
            )
            if not ok:
                self.log(detail)
                break
        if action == "destroy":
            self.report_what_is_left()
        return results

    def _stop_before_starting(self, action: Action, ordered: list[str]) -> LayerResult | None:
        """The deploy pre-flight and the destroy refusals: problems found here change nothing."""
        if action == "plan":
            return None
        try:
            problems = self.preflight(ordered) if action == "deploy" else self.destroy_refusals(ordered)
        except StateUnreadable as error:
            problems = [str(error)]
        if not problems:
            return None
        unchanged = "any layer was applied" if action == "deploy" else "anything was deleted"
        self.log(f"{action} stopped before {unchanged}:")
        for problem in problems:
            for line in bullet(problem):
                self.log(line)
        return LayerResult(ordered[0], False, 0.0, ("pre-flight: " if action == "deploy" else "") + "; ".join(problems))

    def destroy_refusals(self, ordered: list[str]) -> list[str]:
        """Why this destroy must not start: a layer above one being destroyed still has resources,
        or protected data would stop it half-way (storage can't go, so the cluster under it stays)."""
        refusals = []
        for layer in ordered:
            dependents = [
                d
                for d in self.synthesized_layers()
                if layer in self.upstream_layers(d) and d not in ordered and self.resources(d)
            ]
            if dependents:
                refusals.append(
                    f"the {layer} layer is still used by {', '.join(dependents)}, which still "
                    f"{'has' if len(dependents) == 1 else 'have'} resources: destroy "
                    f"{' then '.join(reversed(dependents))} first (make destroy LAYER={dependents[-1]})"
                )
        protected = [
            (layer, address)
            for layer in ordered
            for address in protected_resources(self.stack(layer))
            if address in self.resources(layer)
        ]
        if protected and not self.delete_data:
            names = ", ".join(f"{address} ({layer})" for layer, address in protected)
            refusals.append(
                "Choose one: make destroy DELETE_DATA=1 deletes everything, data included (you type the "
                "profile name); make pause stops paying for nodes and keeps the data; make destroy "
                "LAYER=workloads, then LAYER=addons removes only the layers above storage.\n"
                f"Why: protected data would stop this destroy half-way and leave the cluster running: {names}."
            )
        return refusals

    def report_what_is_left(self) -> None:
        """After a destroy: which layers still hold resources (and bill), and how to remove them."""
        try:
            left = self.deployed_layers()
        except StateUnreadable as error:
            self.log(f"could not read what is left: {error}")
            return
        if not left:
            self.log("nothing of this profile is left deployed")
            return
        self.log(
            f"still deployed: {', '.join(left)}"
            + (
                " (the cluster layer bills for the EKS control plane, NAT gateways and its nodes)"
                if "cluster" in left
                else ""
            )
        )
        self.log(f"  remove: make destroy LAYER={left[-1]} (layers go top-down: {' then '.join(reversed(left))})")

    def _layer(self, action: Action, layer: str) -> tuple[bool, str]:
        init = self._tf(layer, "init", "-input=false")
        if init.returncode != 0:
            return False, f"terraform init failed:\n{init.stderr or init.stdout}"
        if action == "destroy" and self.delete_data:
            try:
                stopped = self._lift_protection(layer)
                ok, detail = (False, stopped) if stopped else self._plan_and_apply(action, layer)
            finally:  # the next deploy protects the data again
                (self.stacks_dir / layer / PROTECTION_OVERRIDE).unlink(missing_ok=True)
        else:
            ok, detail = self._plan_and_apply(action, layer)
        # What the destroy released (volumes) goes after Terraform is done, also on a resumed
        # destroy that finds nothing left in the state: while the cluster is there to ask.
        if ok and action == "destroy" and layer in KUBERNETES_LAYERS and self.resources("cluster"):
            try:
                self.settle(layer)
            except TeardownStuck as error:
                return False, error.told(f"The {layer} layer is destroyed, but what it released is not gone yet")
        return ok, detail

    def _plan_and_apply(self, action: Action, layer: str) -> tuple[bool, str]:
        self._shown.pop(layer, None)  # the plan file is about to be replaced
        plan = self._tf(
            layer,
            "plan",
            "-input=false",
            "-detailed-exitcode",
            f"-out={PLAN_FILE}",
            *(["-destroy"] if action == "destroy" else []),
        )
        self._owner_only(layer)
        if plan.returncode == 1:
            return False, f"terraform plan failed:\n{plan.stderr or plan.stdout}"
        try:
            planned = self.plan_json(layer)
        except PlanUnreadable as error:
            return False, str(error)
        for line in summarize_plan(planned):
            self.log(line)
        if action == "destroy":
            for line in destroy_preview(planned):
                self.log(line)
        if action == "plan":
            self.log(f"  saved plan: {self.stacks_dir / layer / PLAN_FILE}")
            return True, "changes" if plan.returncode == 2 else "no changes"
        if plan.returncode == 0:
            return True, "no changes"
        return self._apply(action, layer)

    def _apply(self, action: Action, layer: str) -> tuple[bool, str]:
        """Apply the saved plan once `confirm` approves it."""
        verb = "Destroy" if action == "destroy" else "Apply"
        question = f"{verb} these changes to the {layer} layer?"
        preview = self.cleanup_preview(layer) if action == "destroy" and layer in KUBERNETES_LAYERS else []
        if preview:  # what the approval also lets the clean-up delete, outside Terraform's plan
            question = (
                f"Before Terraform destroys the {layer} layer, its clean-up deletes in the cluster:\n"
                + "".join(f"  - {line}\n" for line in preview)
                + f"Destroy these changes to the {layer} layer, and clean up first?"
            )
        if not self.confirm(question):
            lifted = (
                f" (its data's protection was lifted: make deploy LAYER={layer} restores it)"
                if action == "destroy" and (self.stacks_dir / layer / PROTECTION_OVERRIDE).exists()
                else ""
            )
            return False, f"not approved: {layer} left as it is{lifted}"
        if action == "destroy" and layer in KUBERNETES_LAYERS:
            self.log(f"clean-up of what controllers made for the {layer} layer")
            try:
                self.cleanup(layer)  # raises ClusterAccessError (nothing deleted) when the cluster is not the profile's
            except TeardownStuck as error:
                return False, error.told(f"The {layer} layer's clean-up stopped before Terraform's destroy")
        applied = self._tf(layer, "apply", "-input=false", PLAN_FILE)
        self._outputs.pop(layer, None)  # changed by the apply
        # A saved plan holds the variables' values (the admin passwords) in plain text: once
        # applied it has no further use.
        (self.stacks_dir / layer / PLAN_FILE).unlink(missing_ok=True)
        self._owner_only(layer)
        if applied.returncode != 0:
            return False, applied.stderr or applied.stdout
        if action == "deploy":
            for line in self.output_lines(layer):
                self.log(line)
        return True, "destroyed" if action == "destroy" else "applied changes"

    def _owner_only(self, layer: str) -> None:
        """The saved plan and a local state file hold secrets: readable by their owner only."""
        local = self.stack(layer).get("terraform", {}).get("backend", {}).get("local", {}).get("path")
        for path in (self.stacks_dir / layer / PLAN_FILE, *([self.stacks_dir / layer / local] if local else [])):
            if path.exists():
                path.chmod(0o600)

    def _lift_protection(self, layer: str) -> str | None:
        """With delete_data: name the layer's data that is deployed, have the user confirm it by
        name, then lift the protection through an override file (and an apply targeted at exactly
        the resources whose protection is an API or state setting), so the destroy plan can delete
        it. Returns why it stopped, or None."""
        override = protection_override(self.stack(layer))
        deployed = set(self.resources(layer))
        override = {
            resource_type: kept
            for resource_type, bodies in override.items()
            if (kept := {n: o for n, o in bodies.items() if f"{resource_type}.{n}" in deployed})
        }
        if not override:
            return None
        self.log(f"  the {layer} layer's destroy DELETES this data for good:")
        for resource_type, bodies in override.items():
            for name in bodies:
                self.log(f"    {resource_type}.{name}: the {DATA_RESOURCES.get(resource_type, 'resource')}")
        if not self.confirm_data(f"Delete this data of the {layer} layer?"):
            return f"not confirmed: {layer} and its data left as they are"
        path = self.stacks_dir / layer / PROTECTION_OVERRIDE
        path.write_text(json.dumps({"resource": override}, indent=2))
        targets = needs_apply(override)
        if targets:
            self.log(f"  lifting the protection of {len(targets)} resource(s) ({path.name}), then destroying")
            lifted = self._tf(layer, "apply", "-input=false", "-auto-approve", *(f"-target={t}" for t in targets))
            self._resources.pop(layer, None)
            if lifted.returncode != 0:
                path.unlink()
                return f"could not lift the protection:\n{lifted.stderr or lifted.stdout}"
        return None
