"""Emulated deploy: the AWS layers of a profile applied, re-planned (no changes expected beyond
documented emulator drift) and torn down against moto on 127.0.0.1, through the same Operator the
`deploy` / `destroy` commands use. Each profile's cycle (tests/emulator/cycle.py) runs in a process
of its own with its own emulator, started by the session as soon as the stacks are synthesized, so
the cycles' waiting overlaps the rest of the suite; these tests, run last, collect them. Only the
cycle's own copy of the JSON gets the local-test provider override and loses the documented
exclusions."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.cases import EMULATED_PROFILES

pytestmark = pytest.mark.emulator


@pytest.mark.parametrize("profile", EMULATED_PROFILES)
def test_apply_replan_teardown(emulated_cycles, profile, report):
    record = emulated_cycles[profile].wait()
    report("")
    for line in emulated_cycles[profile].lines():
        report(line)
    assert record["ok"], record.get("error")
    report(
        f"emulated deploy of {profile} in {record['seconds']}s "
        f"({', '.join(f'{phase} {seconds}s' for phase, seconds in record['phases'].items())}):"
    )
    for layer, counts in record["coverage"].items():
        report(
            f"  {layer:8} applied {counts['resources']:3}, excluded {len(counts['excluded'])}"
            + (f" ({', '.join(counts['excluded'])})" if counts["excluded"] else "")
        )
    assert record["coverage"]["storage"]["resources"] > 0 and record["coverage"]["cluster"]["resources"] > 0


NICENESS_OF = """
import os
from tests.conftest import yield_cpu_to_the_cycles
before = os.nice(0)
yield_cpu_to_the_cycles()
print(before, os.nice(0))
"""


@pytest.mark.parametrize(("setting", "lowered_by"), [(None, 10), ("3", 3), ("0", 0)])
def test_the_rest_of_the_suite_yields_the_cpu_to_the_cycles_unless_told_not_to(setting, lowered_by):
    from tests.conftest import ROOT, SUITE_NICENESS_ENV

    env = {k: v for k, v in os.environ.items() if k != SUITE_NICENESS_ENV}
    if setting is not None:
        env[SUITE_NICENESS_ENV] = setting
    run = subprocess.run(
        [sys.executable, "-c", NICENESS_OF], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60
    )
    assert run.returncode == 0, run.stderr
    before, after = map(int, run.stdout.split())
    assert after == min(before + lowered_by, 19)  # this session itself may already run lowered (19 is the floor)
