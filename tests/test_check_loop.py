"""`make check` selects its tests by marker, not by a list: every test file is in it unless a test
is marked slow, every_profile or emulator. The gates a change most often breaks (the IAM gate over
the synthesized policies, the runtime paths, the add-on recipe) must be in it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MUST_RUN = {
    "tests/test_iam_gate.py::test_every_policy_document_passes_the_gate",
    "tests/test_iam_gate.py::test_the_gate_refuses",
    "tests/test_runtime_paths.py::test_every_declared_path_is_open_or_closed_as_declared",
    "tests/test_addon_recipe.py::test_an_addon_added_by_the_recipe_validates_synthesizes_and_is_in_the_schema",
    "tests/test_teardown.py::test_a_full_teardown_finishes_and_leaves_nothing_billing",
}


def check_selection() -> str:
    found = re.search(r'GPU_PLATFORM_QUICK_CHECK=1 .* -m "([^"]+)" tests$', (ROOT / "Makefile").read_text(), re.M)
    assert found, "make check no longer selects tests by marker"
    return found.group(1)


@pytest.mark.slow  # a pytest collection of its own
def test_make_check_runs_the_gates_a_change_breaks():
    files = sorted({name.split("::")[0] for name in MUST_RUN})
    pytest_args = ["--collect-only", "-q", "-p", "no:cacheprovider", "-m", check_selection()]
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", *pytest_args, *files],
        cwd=ROOT,
        env={**os.environ, "GPU_PLATFORM_QUICK_CHECK": "1"},
        capture_output=True,
        text=True,
        timeout=600,  # a collection only, but the suite may hold both cores meanwhile
    )
    assert collected.returncode == 0, collected.stdout + collected.stderr
    selected = {line.split("[")[0] for line in collected.stdout.splitlines() if "::" in line}
    assert selected >= MUST_RUN, f"left out of make check: {sorted(MUST_RUN - selected)}"


def test_make_check_leaves_out_what_is_marked():
    selection = check_selection()
    for marker in ("emulator", "slow", "every_profile"):
        assert f"not {marker}" in selection
    assert "CHECK_TESTS" not in (ROOT / "Makefile").read_text()
