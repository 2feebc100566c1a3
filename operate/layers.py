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
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from operate.messages import bullet, wrap
from operate.tools import require_tool
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
PLAN_FILE = "tfplan"
# Files Terraform writes hold secrets (state, backups, saved plans): created owner-only.
TERRAFORM_UMASK = 0o077
# Written only by a destroy with delete_data, in the synthesized folder (the next synth removes it).
PROTECTION_OVERRIDE = "zz_delete_data_override.tf.json"
# Resources whose destruction deletes data (the destroy preview names them).
DATA_RESOURCES = {
    "aws_s3_bucket": "bucket and every object version in it",
    "aws_fsx_lustre_file_system": "file system (PERSISTENT ones keep a final backup, billed until you delete it)",
    "aws_ecr_repository": "image repository and its images",
    "aws_db_instance": "database (a protected one keeps a final snapshot, encrypted with the layer's KMS key, which "
    "the same destroy schedules for deletion in 30 days: copy or restore the snapshot before then)",
}
_SYMBOLS = {
    ("create",): "+",
    ("delete",): "-",
    ("update",): "~",
    ("delete", "create"): "-/+",
    ("create", "delete"): "+/-",
}


Validation = Literal["valid", "INVALID", "not checked"]
# Terraform's diagnostics when `init` could not download a provider (Terraform 1.10 and 1.11), and
# what their detail says when no registry answered: DNS, TCP, TLS or HTTP failures on the way to
# registry.terraform.io or the provider's download.
PROVIDER_DOWNLOAD_FAILED = ("Failed to query available provider packages", "Failed to install provider")
REGISTRY_UNREACHABLE = (
    "could not connect to",
    "failed to request discovery document",
    "could not query provider registry",
    "dial tcp",
    "connection refused",
    "no such host",
    "i/o timeout",
    "TLS handshake timeout",
    "Client.Timeout exceeded",
    "context deadline exceeded",
    # A registry or network mirror that answers with an error status (a 5xx, 429 Too Many Requests):
    # Terraform retries, then gives up with these words (terraform internal/getproviders).
    "please try again later",
    "failed to query provider mirror",
    "unsuccessful request to",
    # A filesystem mirror (TF_CLI_CONFIG_FILE) that lacks a provider: nothing of the configuration is known.
    "was not found in any of the search locations",
)


def registry_unreachable(init_output: str) -> bool:
    """Did `terraform init` fail because no provider registry answered (not for the configuration)?
    Terraform wraps its diagnostics at the terminal's width: whitespace is not compared."""
    said = " ".join(init_output.split())
    if "including problems with the configuration" in said:  # it found errors in the configuration too
        return False
    return any(failed in said for failed in PROVIDER_DOWNLOAD_FAILED) and any(
        marker in said for marker in REGISTRY_UNREACHABLE
    )


class StateUnreadable(RuntimeError):
    """Terraform could not read a layer's state (credentials, bucket, lock)."""


class PlanUnreadable(RuntimeError):
    """`terraform show` could not read a layer's saved plan: nothing it would change is known."""


REMOTE_STATE_PREFIX = "cross-stack-reference-input-"


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


def summarize_plan(plan: dict[str, Any]) -> list[str]:
    """Terraform's changes as `+ create aws_x.y` lines and its `Plan: ...` summary line."""
    lines, counts = [], {"add": 0, "change": 0, "destroy": 0}
    for change in plan.get("resource_changes", []):
        actions = tuple(change["change"]["actions"])
        if actions in (("no-op",), ("read",)):
            continue
        counts["add"] += "create" in actions
        counts["change"] += actions == ("update",)
        counts["destroy"] += "delete" in actions
        lines.append(f"  {_SYMBOLS.get(actions, '?'):>3} {change['address']}")
    lines.append(f"  Plan: {counts['add']} to add, {counts['change']} to change, {counts['destroy']} to destroy.")
    return lines


def destroy_preview(plan: dict[str, Any]) -> list[str]:
    """The data a destroy plan deletes, from the plan itself (nothing when it deletes nothing)."""
    return [
        f"  DELETES {change['address']}: the {DATA_RESOURCES[change['type']]}"
        for change in plan.get("resource_changes", [])
        if "delete" in change["change"]["actions"] and change.get("type") in DATA_RESOURCES
    ]


def protected_resources(stack: dict[str, Any]) -> list[str]:
    """Addresses of the stack's resources with prevent_destroy."""
    return [
        f"{resource_type}.{name}"
        for resource_type, bodies in stack.get("resource", {}).items()
        for name, body in bodies.items()
        if body.get("lifecycle", {}).get("prevent_destroy")
    ]


# Attributes a destroy of data needs set first; Terraform stores them (and RDS acts on them) only
# through an apply. prevent_destroy, a configuration-only lifecycle setting, needs none.
EMPTIED_BY_DESTROY = {"aws_s3_bucket": {"force_destroy": True}, "aws_ecr_repository": {"force_delete": True}}


def protection_override(stack: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A Terraform override (plain `*_override.tf.json`) that lets a destroy delete the stack's
    data: prevent_destroy and deletion protection off, every bucket and image repository emptied
    by the destroy. Final backups and snapshots stay as the stack sets them."""
    override: dict[str, dict[str, Any]] = {}
    for resource_type, bodies in stack.get("resource", {}).items():
        for name, body in bodies.items():
            lifted: dict[str, Any] = dict(EMPTIED_BY_DESTROY.get(resource_type, {}))
            if body.get("lifecycle", {}).get("prevent_destroy"):
                lifted["lifecycle"] = {"prevent_destroy": False}
            if body.get("deletion_protection"):
                lifted["deletion_protection"] = False
            if lifted:
                override.setdefault(resource_type, {})[name] = lifted
    return override


def needs_apply(override: dict[str, dict[str, Any]]) -> list[str]:
    """Addresses whose override changes more than the lifecycle (an apply must record it)."""
    return [
        f"{resource_type}.{name}"
        for resource_type, bodies in override.items()
        for name, lifted in bodies.items()
        if set(lifted) - {"lifecycle"}
    ]


class Operator:
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
