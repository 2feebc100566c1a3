"""The GPU node health check's judge: reads what the probe container wrote about its node, decides,
and quarantines or releases the node. Python's standard library only: it runs as a script in a
plain Python image (from a ConfigMap), and the tests import the same functions.

What the probe writes into a new folder each round, then renames to `latest` (health-probe.sh):
- gpus.csv, gpus.rc, gpus.err: `nvidia-smi --query-gpu=index,pci.bus_id,uuid --format=csv,noheader`
  (one "0, 00000000:53:00.0, GPU-..." line per GPU the driver can reach), its exit status, its errors;
- apps.csv: `nvidia-smi --query-compute-apps=pid,gpu_uuid --format=csv,noheader` (empty: no process
  uses a GPU, so the node is idle and the DCGM diagnostic may run);
- efa.count: the EFA devices in /sys/class/infiniband;
- diag.json, diag.rc (idle nodes only; `dcgmi diag -r 1 -j` against the node's one host engine, the
  node monitoring agent's), or diag.skipped when a process used a GPU;
- at: when the round finished (epoch seconds).

The verdict: the node is failing when the driver reaches fewer GPUs than its instance type has,
when it shows fewer EFA devices than its node group attaches, or when a DCGM diagnostic test
fails. A failing node is tainted QUARANTINE_TAINT (NoSchedule: running jobs stay, nothing new
lands) and annotated with the reasons; the taint is lifted only after a round in which every check
ran (the diagnostic included) and passed.
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

QUARANTINE_KEY = "platform/gpu-health"
QUARANTINE_TAINT = {"key": QUARANTINE_KEY, "value": "failed", "effect": "NoSchedule"}
REASON_ANNOTATION = "platform/gpu-health-reasons"
# DCGM's result strings (dcgmi/Diag.cpp HelperDisplayDiagResult, DCGM v4.6.0).
DIAG_FAILED = "Fail"


@dataclass(frozen=True)
class Expected:
    """What a healthy node of this kind shows."""

    gpus: int | None
    """GPUs of the instance type (None: not in the platform's catalog, not checked)."""
    efa: int
    """EFA devices its node group attaches (0: none expected, not checked)."""


@dataclass(frozen=True)
class Verdict:
    healthy: bool
    reasons: tuple[str, ...]
    complete: bool
    """Every check ran (the diagnostic was not skipped for a busy node)."""


def gpus_found(csv_text: str) -> int:
    """GPUs listed by nvidia-smi's CSV query (lines with an index, a PCI bus id and a UUID)."""
    count = 0
    for line in csv_text.splitlines():
        fields = [field.strip() for field in line.split(",")]
        if len(fields) == 3 and fields[0].isdigit() and fields[2].startswith("GPU-"):
            count += 1
    return count


def gpu_problems(csv_text: str, returncode: int, errors: str, expected: int | None) -> list[str]:
    found = gpus_found(csv_text)
    problems = []
    if returncode != 0:
        first = next((line.strip() for line in errors.splitlines() if line.strip()), f"exit status {returncode}")
        problems.append(f"nvidia-smi failed: {first}")
    if expected is not None and found < expected:
        problems.append(f"the driver reaches {found} of {expected} GPUs")
    return problems


def diag_problems(text: str) -> list[str]:
    """Failed tests of a `dcgmi diag -j` answer (DCGM v4.6.0 layout: testing/python3/dcgm_diag_schema.json),
    or why the answer says nothing."""
    try:
        answer = json.loads(text)
    except json.JSONDecodeError:
        return [f"the DCGM diagnostic answered no JSON: {text.strip()[:200]!r}"]
    body = answer.get("DCGM Diagnostic", {}) if isinstance(answer, dict) else {}
    if body.get("runtime_error"):
        return [f"the DCGM diagnostic could not run: {body['runtime_error']}"]
    categories = body.get("test_categories")
    if not categories:
        return ["the DCGM diagnostic ran no test"]
    problems = []
    for category in categories:
        for test in category.get("tests", []):
            failed = [r for r in test.get("results", []) if r.get("status") == DIAG_FAILED]
            if test.get("test_summary", {}).get("status") == DIAG_FAILED or failed:
                where = ", ".join(f"{r.get('entity_group', '?')} {r.get('entity_id', '?')}" for r in failed)
                warnings = [w.get("warning", "") for r in failed for w in r.get("warnings", [])]
                detail = f" on {where}" if where else ""
                reason = f": {warnings[0]}" if warnings else ""
                problems.append(
                    f"DCGM {category.get('category', '?')} test {test.get('name', '?')} failed{detail}{reason}"
                )
    return problems


# The files every round has; a round without one of them (being replaced as it was read) is not judged.
ROUND_FILES = ("gpus.csv", "gpus.rc", "gpus.err", "efa.count", "at")


class IncompleteRound(Exception):
    """The round's folder lacks a file: it is not judged (an absent GPU list must never read as 0 GPUs)."""


def judge(round_dir: Path, expected: Expected) -> Verdict:
    """The verdict on one round of the probe's files."""
    missing = [name for name in ROUND_FILES if not (round_dir / name).exists()]
    if missing or not ((round_dir / "diag.json").exists() or (round_dir / "diag.skipped").exists()):
        raise IncompleteRound(f"{round_dir} lacks {', '.join(missing) or 'the diagnostic'}")

    def read(name: str) -> str:
        return (round_dir / name).read_text()

    reasons = gpu_problems(read("gpus.csv"), int(read("gpus.rc").strip() or 1), read("gpus.err"), expected.gpus)
    efa = int(read("efa.count").strip() or 0)
    if expected.efa and efa < expected.efa:
        reasons.append(f"{efa} of {expected.efa} EFA devices present")
    complete = not (round_dir / "diag.skipped").exists()
    if complete:
        reasons += diag_problems(read("diag.json"))
    return Verdict(healthy=not reasons, reasons=tuple(reasons), complete=complete)


def expected_for(labels: dict[str, str], expectations: dict[str, Any]) -> Expected:
    """Node labels -> what it should show: its managed node group's figures, else its instance
    type's GPUs (Karpenter's GPU pool attaches no EFA)."""
    group = expectations["groups"].get(labels.get(expectations["group_label"], ""))
    if group:
        return Expected(gpus=group["gpus"], efa=group["efa"])
    return Expected(gpus=expectations["instance_types"].get(labels.get("node.kubernetes.io/instance-type", "")), efa=0)


def node_patch(node: dict[str, Any], verdict: Verdict, now: str) -> dict[str, Any] | None:
    """The merge patch that quarantines or releases the node (None: nothing to change). It
    carries the node's resourceVersion, so a concurrent change makes it fail and the next round
    tries again; the taint list is written whole, as a merge patch replaces lists."""
    taints = node.get("spec", {}).get("taints") or []
    quarantined = any(t.get("key") == QUARANTINE_KEY for t in taints)
    if not verdict.healthy and not quarantined:
        new_taints = [*taints, dict(QUARANTINE_TAINT)]
        note = f"{now}: " + "; ".join(verdict.reasons)
    elif verdict.healthy and verdict.complete and quarantined:
        new_taints = [t for t in taints if t.get("key") != QUARANTINE_KEY]
        note = f"{now}: passed every check"
    else:
        return None
    return {
        "metadata": {"resourceVersion": node["metadata"]["resourceVersion"], "annotations": {REASON_ANNOTATION: note}},
        "spec": {"taints": new_taints},
    }


class Api:
    """The API server, as the pod's service account (in-cluster: token, CA and address)."""

    ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")

    def __init__(self) -> None:
        host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
        self.base = f"https://{host}:{port}"
        self.context = ssl.create_default_context(cafile=str(self.ACCOUNT / "ca.crt"))

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        token = (self.ACCOUNT / "token").read_text().strip()  # re-read: projected tokens rotate
        request = urllib.request.Request(
            self.base + path,
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/merge-patch+json"},
        )
        with urllib.request.urlopen(request, context=self.context, timeout=30) as response:
            answer: dict[str, Any] = json.loads(response.read())
            return answer


def main() -> int:
    results, node_name = Path(sys.argv[1]), os.environ["NODE_NAME"]
    expectations = json.loads(Path(sys.argv[2]).read_text())
    api, seen = Api(), ""
    while True:
        latest = results / "latest"
        stamp = (latest / "at").read_text().strip() if (latest / "at").exists() else ""
        if stamp and stamp != seen:
            seen = stamp
            try:
                node = api.call("GET", f"/api/v1/nodes/{node_name}")
                verdict = judge(latest, expected_for(node["metadata"].get("labels", {}), expectations))
                if (latest / "at").read_text().strip() != stamp:
                    raise IncompleteRound("a new round replaced this one while it was read")
                print(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {verdict}", flush=True)
                patch = node_patch(node, verdict, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
                if patch is not None:
                    api.call("PATCH", f"/api/v1/nodes/{node_name}", patch)
            except Exception as error:  # a round that fails is retried with the next one
                print(f"round {stamp} not judged: {error}", file=sys.stderr, flush=True)
        time.sleep(10)


if __name__ == "__main__":
    sys.exit(main())
