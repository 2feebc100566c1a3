"""One profile's emulated deploy cycle, in a process of its own with its own emulator:

    python -m tests.emulator.cycle STACKS_DIR PROFILE [--protected]

STACKS_DIR is the test's own copy of the profile's synthesized stacks (the AWS layers). The cycle
is the product's own path: the cluster layer deployed, then storage and build at the same time
(neither reads the other), a no-change re-plan of all three at once (plans change nothing), a
destroy that protected data must refuse before deleting anything, and the full teardown
(DELETE_DATA): build and storage at the same time, then the cluster. The aws provider's fixed
waits (a lifecycle configuration's repeated reads, RDS's minute before polling, KMS) are sleep,
not CPU: independent layers, and the profiles' cycles (one process each), overlap them.

Every line it prints is prefixed with `[profile/layer]`; the last line is a JSON record of the
result, which tests/test_emulated_deploy.py reads.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from operate.layer_folders import PlanUnreadable
from operate.layers import LayerResult, Operator
from tests.emulator.local_test import EXCLUDED_TYPES, prepare, unexpected_drift
from tests.emulator.server import start_emulator
from tests.terraform import SlottedOperator

RESULT_PREFIX = "CYCLE-RESULT "
INDEPENDENT = ("storage", "build")  # both read only the cluster layer
_print_lock = threading.Lock()


def _printer(prefix: str) -> Callable[[str], None]:
    def log(line: str) -> None:
        with _print_lock:
            for part in str(line).splitlines() or [""]:
                print(f"[{prefix}] {part}", flush=True)

    return log


def _together(operators: dict[str, Operator], action: str, **kwargs: Any) -> list[LayerResult]:
    """The same action on independent layers at the same time, each in its own operator."""
    with ThreadPoolExecutor(max_workers=len(operators)) as pool:
        futures = [pool.submit(operator.run, action, [layer], **kwargs) for layer, operator in operators.items()]
        return [result for future in futures for result in future.result()]


def run_cycle(stacks_dir: Path, profile: str, *, protected: bool, env: dict[str, str]) -> dict[str, Any]:
    emulator = start_emulator()
    try:
        coverage = prepare(stacks_dir, ["cluster", *INDEPENDENT], emulator.endpoint)
        full_env = {**env, "AWS_ACCESS_KEY_ID": "emulator", "AWS_SECRET_ACCESS_KEY": "emulator"}
        operators = {
            layer: SlottedOperator(stacks_dir, log=_printer(f"{profile}/{layer}"), env=full_env, critical=True)
            for layer in ("cluster", *INDEPENDENT)
        }
        independent = {layer: operators[layer] for layer in INDEPENDENT}
        phases: dict[str, float] = {}
        started = time.monotonic()

        def phase(name: str, results: list[LayerResult]) -> None:
            phases[name] = round(time.monotonic() - started - sum(phases.values()), 1)
            failed = [r for r in results if not r.ok]
            if failed:
                raise AssertionError(f"{name}: {failed[0].layer}: {failed[0].detail}")

        phase("deploy", operators["cluster"].run("deploy", ["cluster"]) + _together(independent, "deploy"))
        replanned = _together(operators, "plan")  # plans change nothing: all three at once
        drift = {r.layer: unexpected_drift(operators[r.layer].plan_json(r.layer)) for r in replanned}
        if any(drift.values()):
            raise AssertionError(f"the re-plan changes more than the documented emulator drift: {drift}")
        phase("re-plan", replanned)
        whole = SlottedOperator(stacks_dir, log=_printer(f"{profile}/all"), env=full_env, critical=True)
        if protected:
            refused = whole.run("destroy", ["cluster", *INDEPENDENT])
            if refused[0].ok or "DELETE_DATA=1" not in refused[0].detail or not whole.resources("build"):
                raise AssertionError(f"protected data did not refuse the destroy before anything: {refused}")
        for layer, operator in operators.items():
            if layer in INDEPENDENT:  # their destroys run at once: neither reads the other's state meanwhile
                operator.report_what_is_left = lambda: None  # type: ignore[method-assign]
            operator.delete_data = True
            operator.confirm_data = lambda question: question.startswith("Delete this data of the ")
        phase("teardown", _together(independent, "destroy") + operators["cluster"].run("destroy", ["cluster"]))
        left = whole.deployed_layers()
        leaked = emulator.extensions
        if (
            left
            or leaked.placement_groups
            or leaked.access_entries
            or leaked.addons
            or leaked.pod_identities
            or leaked.cluster_security_groups
        ):
            raise AssertionError(f"left after the teardown: layers {left}, emulator {leaked}")
        return {
            "profile": profile,
            "ok": True,
            "seconds": round(time.monotonic() - started),
            "phases": phases,
            "coverage": coverage,
        }
    finally:
        emulator.stop()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("stacks_dir", type=Path)
    parser.add_argument("profile")
    parser.add_argument("--protected", action="store_true")
    args = parser.parse_args()
    try:
        record = run_cycle(args.stacks_dir, args.profile, protected=args.protected, env=dict(os.environ))
    except (AssertionError, PlanUnreadable, TimeoutError) as error:  # TimeoutError: no Terraform slot
        record = {"profile": args.profile, "ok": False, "error": str(error)}
    assert all(a.split(".")[0] in EXCLUDED_TYPES for c in record.get("coverage", {}).values() for a in c["excluded"])
    print(RESULT_PREFIX + json.dumps(record), flush=True)
    return 0 if record["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
