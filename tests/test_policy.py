"""Policy gate: checkov on every stack of every shipped profile. Every failed check is fixed or
accepted in tests/checkov_baseline.yaml (checkov ignores skip comments inside JSON)."""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from stacks import LAYERS
from tests.cases import IN_CI, SHIPPED

# Left out of `make check` (checkov over every synthesized stack); `make test` runs it.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
BASELINE = yaml.safe_load((Path(__file__).parent / "checkov_baseline.yaml").read_text())


def find_checkov() -> str | None:
    explicit = os.environ.get("CHECKOV")
    local = ROOT / ".tools" / "checkov" / "bin" / "checkov"
    return explicit or (str(local) if local.exists() else shutil.which("checkov"))


def resource_id(finding: dict) -> str:
    # checkov prints "resource.<id>" for some checks and "<type>.<id>" for graph checks.
    return finding["resource"].split(".", 1)[1]


def accepted(finding: dict) -> dict | None:
    return next(
        (
            entry
            for entry in BASELINE
            if entry["check"] == finding["check_id"] and fnmatch.fnmatch(resource_id(finding), entry["resource"])
        ),
        None,
    )


@pytest.fixture(scope="session")
def findings(synthesized, report) -> dict[tuple[str, str], dict]:
    """(profile, layer) -> {"passed": n, "failed": [findings]} from one checkov run per profile."""
    checkov = find_checkov()
    if checkov is None:
        if IN_CI:
            pytest.fail("CI needs checkov (make installs it into .tools/checkov)")
        pytest.skip("SKIPPING policy gate: checkov not installed (make test installs it)")

    def scan(profile: str) -> dict:
        stacks = synthesized.outroot / profile / "stacks"
        run = subprocess.run(
            [checkov, "-d", str(stacks), "--framework", "terraform_json", "-o", "json", "--compact", "--skip-download"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        return json.loads(run.stdout)

    with ThreadPoolExecutor(max_workers=len(SHIPPED)) as pool:
        reports = dict(zip(SHIPPED, pool.map(scan, SHIPPED), strict=True))
    results = {}
    empty = {"results": {"failed_checks": [], "passed_checks": []}}
    for profile, raw in reports.items():
        scanned = empty if raw == [] else raw
        for layer in synthesized.stacks[profile]:
            results[(profile, layer)] = {"passed": 0, "failed": []}
        for outcome, key in (("passed_checks", "passed"), ("failed_checks", "failed")):
            for finding in scanned["results"][outcome]:
                layer = Path(finding["file_path"]).parts[1]
                if key == "passed":
                    results[(profile, layer)]["passed"] += 1
                else:
                    results[(profile, layer)]["failed"].append(finding)
    report("")
    report("checkov per stack (passed / failed, of which accepted):")
    for (profile, layer), result in sorted(results.items()):
        accepted_count = sum(1 for f in result["failed"] if accepted(f))
        report(
            f"  {profile:15} {layer:10} {result['passed']:4} / {len(result['failed']):3} ({accepted_count} accepted)"
        )
    return results


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("profile", SHIPPED)
def test_no_unaccepted_policy_findings(findings, profile, layer):
    result = findings[(profile, layer)]
    new = [f"{f['check_id']} {f['resource']}: {f['check_name']}" for f in result["failed"] if not accepted(f)]
    assert not new, "fix these or accept them in tests/checkov_baseline.yaml:\n" + "\n".join(new)


def test_the_scan_really_ran(findings):
    assert sum(result["passed"] for result in findings.values()) > 100


def test_baseline_has_no_stale_entries(findings):
    used = Counter(
        entry["check"] + entry["resource"]
        for result in findings.values()
        for finding in result["failed"]
        if (entry := accepted(finding))
    )
    stale = [f"{e['check']} {e['resource']}" for e in BASELINE if e["check"] + e["resource"] not in used]
    assert not stale, f"baseline entries that match nothing: {stale}"
    assert all(entry.get("why") for entry in BASELINE)
