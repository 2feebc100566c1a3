"""The GPU node health check's judge: reads what the probe container wrote about its node, decides,
and quarantines or releases the node. Python's standard library only: it runs as a script in a
plain Python image (from a ConfigMap), and the tests import the same functions.

What the probe writes into a new folder each round, then renames to `latest` (health-probe.sh):
- gpus.csv, gpus.rc, gpus.err: `nvidia-smi --query-gpu=index,pci.bus_id,uuid --format=csv,noheader`
  (one "0, 00000000:53:00.0, GPU-..." line per GPU the driver can reach), its exit status, its errors;
- efa.count: the EFA devices in /sys/class/infiniband;
- health.json, health.rc and health.err: `dcgmi health -g 0 -c -j`, DCGM's health watches on every
  GPU, read from the node's one host engine (the node monitoring agent's); or health.unavailable,
  why not; or health.none where no host engine is expected (no node monitoring agent);
- watches.set: present when the engine had no watches and the probe set them (`dcgmi health -s a`):
  that round is not complete;
- at: when the round finished (epoch seconds).

The verdict: the node is failing when the driver reaches fewer GPUs than its instance type has,
when it shows fewer EFA devices than its node group attaches, when DCGM's health report says
Failure, or when the probe has stopped finishing rounds (nvidia-smi or dcgmi hung on a wedged
driver). A failing node is tainted QUARANTINE_TAINT (NoSchedule: running jobs stay, nothing new
lands) and annotated with the reasons; the taint is lifted after PASSES_TO_RELEASE rounds in a row
in which every check ran (DCGM's report included, where a host engine is expected) and passed.
DCGM's Warning is reported, not quarantined; a host engine that does not answer fails nothing (the
node monitoring agent's own condition covers it) but keeps a quarantined node quarantined.
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
# DCGM's health verdicts (dcgmi/Health.cpp HelperHealthToString, DCGM v4.6.0).
HEALTH_FAILED, HEALTH_WARNING = "Failure", "Warning"


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
    """Every check ran (DCGM's health report included, where a host engine is expected)."""
    notes: tuple[str, ...] = ()
    """What was seen without failing the node (a DCGM warning, a host engine that did not answer)."""


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


# The entity group DCGM files node-wide findings under (DCGM_FE_NONE, "None"): the IMEX daemon's
# state among them, which it reports as a Failure on every NVLink instance that runs no IMEX domain
# (modules/health/DcgmHealthWatch.cpp MonitorImex at v4.6.0); the node monitoring agent ignores that
# code on standard GPU instances too (monitors/nvidia/dcgm/dcgm_healthcheck.go at v1.7.0).
NODE_WIDE = "None"


def health_report(text: str) -> tuple[list[str], list[str]]:
    """(failures, warnings) of a `dcgmi health -c -j` answer, "GPU <id> <system>: <messages>" each.
    Its layout is dcgmi's JSON output tree (dcgmi/DcgmiOutput.cpp at v4.6.0: sections under "body",
    a box's text under "value", nested boxes under "children", extra lines under "overflow"),
    filled by Health::GenerateOutputFromResponse: "Overall Health", then per entity group and id,
    "Errors" with one box per health system. The verdict is read per system of each GPU entity,
    not from "Overall Health", which node-wide findings also raise."""
    body = json.loads(text)["body"]
    if "Overall Health" not in body:
        raise KeyError("Overall Health")
    failures: list[str] = []
    warnings: list[str] = []
    for group, boxes in body.items():
        if group in ("Overall Health", NODE_WIDE):
            continue
        for entity, box in boxes.get("children", {}).items():
            for system, found in box.get("children", {}).get("Errors", {}).get("children", {}).items():
                level = found.get("value", "?")
                finding = f"{group} {entity} {system} {level}: {' '.join(found.get('overflow', []))}".rstrip(": ")
                (failures if level == HEALTH_FAILED else warnings).append(finding)
    return failures, warnings


# The files every round has; a round without one of them (being replaced as it was read) is not judged.
ROUND_FILES = ("gpus.csv", "gpus.rc", "gpus.err", "efa.count", "at")


class IncompleteRound(Exception):
    """The round's folder lacks a file: it is not judged (an absent GPU list must never read as 0 GPUs)."""


def judge(round_dir: Path, expected: Expected) -> Verdict:
    """The verdict on one round of the probe's files."""
    missing = [name for name in ROUND_FILES if not (round_dir / name).exists()]
    answered = (round_dir / "health.rc").exists()
    expected_none = (round_dir / "health.none").exists()
    if missing or not (answered or expected_none or (round_dir / "health.unavailable").exists()):
        raise IncompleteRound(f"{round_dir} lacks {', '.join(missing) or 'the DCGM report'}")

    def read(name: str) -> str:
        return (round_dir / name).read_text()

    reasons = gpu_problems(read("gpus.csv"), int(read("gpus.rc").strip() or 1), read("gpus.err"), expected.gpus)
    efa = int(read("efa.count").strip() or 0)
    if expected.efa and efa < expected.efa:
        reasons.append(f"{efa} of {expected.efa} EFA devices present")
    notes: list[str] = []
    complete = expected_none or (answered and read("health.rc").strip() == "0")
    if complete and answered:
        try:
            failures, warnings = health_report(read("health.json"))
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
            complete, notes = False, [f"DCGM's health report was not understood: {read('health.json')[:200]!r}"]
        else:
            reasons += [f"DCGM health: {finding}" for finding in failures]
            notes += [f"DCGM health warning: {finding}" for finding in warnings]
    elif answered:
        notes.append(f"dcgmi health failed: {(read('health.json') + read('health.err')).strip()[:200]}")
    elif not expected_none:
        notes.append(read("health.unavailable").strip())
    if (round_dir / "watches.set").exists():
        # Watches just set see nothing yet: this round proves nothing about DCGM.
        complete = False
        notes.append("DCGM's health watches were not set (the host engine restarted): set now")
    return Verdict(healthy=not reasons, reasons=tuple(reasons), complete=complete, notes=tuple(notes))


def stalled(since: float, now: float, interval_seconds: int) -> Verdict | None:
    """A probe whose last round (or, before its first, the judge's start) is older than three
    intervals and five minutes has stopped: on a wedged driver nvidia-smi and dcgmi hang where no
    time limit can kill them."""
    age = now - since
    if age <= 3 * interval_seconds + 300:
        return None
    reason = f"the probe finished no round for {int(age // 60)} minutes (nvidia-smi or dcgmi hung?)"
    return Verdict(healthy=False, reasons=(reason,), complete=False)


def expected_for(labels: dict[str, str], expectations: dict[str, Any]) -> Expected:
    """Node labels -> what it should show: its managed node group's figures, else its instance
    type's GPUs (Karpenter's GPU pool attaches no EFA)."""
    group = expectations["groups"].get(labels.get(expectations["group_label"], ""))
    if group:
        return Expected(gpus=group["gpus"], efa=group["efa"])
    return Expected(gpus=expectations["instance_types"].get(labels.get("node.kubernetes.io/instance-type", "")), efa=0)


# Complete, passing rounds in a row before a quarantine is lifted: DCGM's count-over-time checks
# see the last minute only, so one quiet round does not clear a node.
PASSES_TO_RELEASE = 3


def node_patch(
    node: dict[str, Any], verdict: Verdict, now: str, *, passes: int = PASSES_TO_RELEASE
) -> dict[str, Any] | None:
    """The merge patch that quarantines or releases the node (None: nothing to change). It
    carries the node's resourceVersion, so a concurrent change makes it fail and the next round
    tries again; the taint list is written whole, as a merge patch replaces lists."""
    taints = node.get("spec", {}).get("taints") or []
    quarantined = any(t.get("key") == QUARANTINE_KEY for t in taints)
    if not verdict.healthy and not quarantined:
        new_taints = [*taints, dict(QUARANTINE_TAINT)]
        note = f"{now}: " + "; ".join(verdict.reasons)
    elif verdict.healthy and verdict.complete and quarantined and passes >= PASSES_TO_RELEASE:
        new_taints = [t for t in taints if t.get("key") != QUARANTINE_KEY]
        note = f"{now}: passed every check {passes} rounds in a row"
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


def now_text() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def main() -> int:
    results, node_name = Path(sys.argv[1]), os.environ["NODE_NAME"]
    expectations = json.loads(Path(sys.argv[2]).read_text())
    interval = int(sys.argv[3])
    api, judged, started, passes = Api(), "", time.time(), 0
    while True:
        latest, stamp = results / "latest", ""
        try:
            stamp = (latest / "at").read_text().strip() if (latest / "at").exists() else ""
            verdict = None
            if stamp and stamp != judged:
                node = api.call("GET", f"/api/v1/nodes/{node_name}")
                verdict = judge(latest, expected_for(node["metadata"].get("labels", {}), expectations))
                if (latest / "at").read_text().strip() != stamp:
                    raise IncompleteRound("a new round replaced this one while it was read")
                passes = passes + 1 if verdict.healthy and verdict.complete else 0
            elif (verdict := stalled(int(stamp) if stamp else started, time.time(), interval)) is not None:
                node = api.call("GET", f"/api/v1/nodes/{node_name}")
                passes = 0
            if verdict is not None:
                print(f"{now_text()} {verdict}", flush=True)
                patch = node_patch(node, verdict, now_text(), passes=passes)
                if patch is not None:
                    api.call("PATCH", f"/api/v1/nodes/{node_name}", patch)
                judged = stamp  # only once the round's verdict is on the node: a failed call retries
        except Exception as error:  # a round that fails is retried
            print(f"{now_text()} round {stamp or '(none yet)'} not judged: {error}", file=sys.stderr, flush=True)
        time.sleep(30)


if __name__ == "__main__":
    sys.exit(main())
