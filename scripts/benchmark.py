"""Benchmark synthesis against the provider-import floor (not a test: run it on a quiet machine).

    .venv/bin/python scripts/benchmark.py [--runs 3] [--suite-runs 1 (0 skips d)] [--eager]

Scenarios, each a fresh process, median wall time and peak memory (RSS of the process tree:
Python plus jsii's Node) over the runs, which take turns (a, b, c, a, b, c, ...):
  a  floor: import the three providers' bindings (aws, helm, kubernetes) and synthesize an empty
     stack (the floor the ratios have always been taken against, and the 1.15x bound with them:
     benchmarks/LOG.md, session 15, says why it stays fixed)
  a2 loaded floor: the same with only the bindings synthesis still loads (aws and helm: the
     Kubernetes side is rendered as data, components/rendered.py); b - a2 and c - a2 are the
     app's own work, b/a2 its share (c - a, kept for comparison with earlier figures, is short by
     the kubernetes import that a does and c no longer does)
  b  main job: `main.py synth` of the default profile
  c  every shipped profile synthesized in one process
  d  the test suite without the emulator
Prints each figure, the ratios b/a, b/a2 and c/a and the differences b - a2, c - a and c - a2,
and writes benchmarks/results[-eager].json.
--eager measures with GPU_PLATFORM_EAGER_BINDINGS=1 (the bindings' own eager imports).

    .venv/bin/python scripts/benchmark.py --proof-loop LABEL [--rev REV] [--no-emulator] [--runs 1]

The proof loop's figures for the code at REV (default HEAD, checked out in a temporary git
worktree and run with this checkout's .venv), recorded under LABEL (e.g. before, after) in
benchmarks/proof-loop.json:
  suite     the test suite as `make test` runs it (the emulated cycles in the background of the
            rest; --no-emulator leaves them out): wall time and peak RSS of the process tree
  emulator  each profile's emulated cycle (apply, re-plan, teardown), as the test reports it
  check     `make check`'s tests (the inner loop): wall time
  synth     the first `make synth` in a fresh clone (uv's download cache warm)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

FLOOR = """
import sys, toolchain
toolchain.prepare()
from cdktf import App, TerraformStack
from cdktf_cdktf_provider_aws.provider import AwsProvider
from cdktf_cdktf_provider_helm.provider import HelmProvider
from cdktf_cdktf_provider_kubernetes.provider import KubernetesProvider
app = App(outdir=sys.argv[1])
TerraformStack(app, "empty")
app.synth()
"""
FLOOR_LOADED = "\n".join(line for line in FLOOR.splitlines() if "provider_kubernetes" not in line)
ALL_PROFILES = """
import sys, toolchain
toolchain.prepare()
from profiles import available_profiles, load_profile
from pathlib import Path
from stacks.platform import synthesize
for name in available_profiles():
    config = load_profile(name)
    synthesize(config, f"{sys.argv[1]}/{name}", state_dir=Path(sys.argv[1]) / "state" / config.name)
"""


def _tree_rss_kib(root: int) -> int:
    """RSS of a process and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        pid = int(entry.name)
        children.setdefault(int(fields.get("PPid", "0").strip() or 0), []).append(pid)
        rss[pid] = int(fields.get("VmRSS", "0 kB").split()[0]) if "VmRSS" in fields else 0
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack += children.get(pid, [])
    return total


def _run_in(folder: Path, command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(seconds, peak MiB of the process tree, output) of one command run in `folder`."""
    started = time.monotonic()
    process = subprocess.Popen(
        command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    peak, stop = 0, threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, _tree_rss_kib(process.pid))
            stop.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output, _ = process.communicate()
    stop.set()
    sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{output[-3000:]}")
    return time.monotonic() - started, peak / 1024, output


def scenarios(
    commands: dict[str, Callable[[str], list[str]]], runs: int, env: dict[str, str]
) -> dict[str, dict[str, Any]]:
    """Each scenario `runs` times, interleaved (a, b, c, a, b, c, ...): a slow spell of a shared
    machine then falls on every scenario alike instead of on whichever ran during it."""
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command_for_run in commands.items():
            with tempfile.TemporaryDirectory() as folder:
                seconds, peak_mib, _ = _run_in(ROOT, command_for_run(folder), env)
                samples[name].append((seconds, peak_mib))
    return {
        name: {
            "median_seconds": round(statistics.median(s[0] for s in taken), 2),
            "peak_mib": round(max(s[1] for s in taken)),
            "runs": runs,
        }
        for name, taken in samples.items()
    }


def _worktree(rev: str, folder: str) -> Path:
    tree = Path(folder) / "tree"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev], check=True, capture_output=True
    )
    return tree


def proof_loop(label: str, rev: str, runs: int, emulator: bool) -> int:
    """Measure the proof loop at `rev` and record it under `label` in benchmarks/proof-loop.json."""
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", rev], capture_output=True, text=True, check=True
    ).stdout.strip()
    record: dict[str, Any] = {
        "commit": commit,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}",
    }
    with tempfile.TemporaryDirectory() as folder:
        tree = _worktree(rev, folder)
        try:
            env = {**os.environ, "PYTHONPATH": str(tree)}
            env.pop("CI", None)
            checkov = ROOT / ".tools" / "checkov" / "bin" / "checkov"  # the worktree has no .tools of its own
            if checkov.exists():
                env.setdefault("CHECKOV", str(checkov))
            for tool in ("promtool", "amtool"):
                if (ROOT / ".tools" / "bin" / tool).exists():
                    env.setdefault(tool.upper(), str(ROOT / ".tools" / "bin" / tool))
            pytest = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider"]

            selection = [] if emulator else ["-m", "not emulator"]
            suite = [
                _run_in(tree, [*pytest, *selection, "--basetemp", f"{folder}/t{i}"], {**env, "CI": "true"})
                for i in range(runs)
            ]
            record["make_test_pytest" if emulator else "suite_without_emulator"] = {
                "median_seconds": round(statistics.median(s[0] for s in suite), 1),
                "peak_gib": round(max(s[1] for s in suite) / 1024, 2),
                "runs": runs,
            }
            if emulator:
                found = re.findall(r"emulated deploy of (\S+) in (\d+)s", suite[-1][2])
                record["emulated_cycle_seconds"] = {profile: int(seconds) for profile, seconds in found}
            makefile = (tree / "Makefile").read_text()
            check_tests = re.search(r"^CHECK_TESTS := (.*?)\n(?!\t)", makefile, re.MULTILINE | re.DOTALL)
            # Older revisions list make check's test files; newer ones select them by marker.
            check_marks = re.search(r'GPU_PLATFORM_QUICK_CHECK=1 .* -m "([^"]+)" tests$', makefile, re.MULTILINE)
            if check_tests or check_marks:
                if check_tests:
                    names = check_tests.group(1).replace("\\\n", " ").split()
                    selection = ["-m", "not emulator", *(f"tests/test_{name}.py" for name in names)]
                else:
                    selection = ["-m", check_marks.group(1), "tests"]  # type: ignore[union-attr]
                seconds, _, _ = _run_in(
                    tree,
                    [*pytest, *selection, "--basetemp", f"{folder}/c"],
                    {**env, "GPU_PLATFORM_QUICK_CHECK": "1"},
                )
                record["make_check_pytest_seconds"] = round(seconds, 1)
            clone = Path(folder) / "clone"
            subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
            subprocess.run(["git", "-C", str(clone), "checkout", "-q", commit], check=True)
            started = time.monotonic()
            subprocess.run(
                ["make", "synth"],
                cwd=clone,
                check=True,
                capture_output=True,
                env={k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")},
            )
            record["first_make_synth_seconds"] = round(time.monotonic() - started, 1)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True)
    out = ROOT / "benchmarks" / "proof-loop.json"
    recorded = json.loads(out.read_text()) if out.exists() else {}
    recorded[label] = record
    out.write_text(json.dumps(recorded, indent=2) + "\n")
    print(json.dumps(record, indent=2))
    print(f"wrote {label} into {out.relative_to(ROOT)}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, help="runs per scenario (default 3; 1 with --proof-loop)")
    parser.add_argument("--suite-runs", type=int, default=1)
    parser.add_argument("--eager", action="store_true")
    parser.add_argument("--proof-loop", metavar="LABEL", help="measure the proof loop and record it under LABEL")
    parser.add_argument("--rev", default="HEAD", help="with --proof-loop: the commit to measure")
    parser.add_argument("--no-emulator", action="store_true", help="with --proof-loop: skip the emulated deploy")
    args = parser.parse_args()
    if args.proof_loop:
        return proof_loop(args.proof_loop, args.rev, runs=args.runs or 1, emulator=not args.no_emulator)
    args.runs = args.runs or 3
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CI", None)
    if args.eager:
        env["GPU_PLATFORM_EAGER_BINDINGS"] = "1"

    results: dict[str, Any] = scenarios(
        {
            "a_floor": lambda d: [PY, "-c", FLOOR, f"{d}/out"],
            "a2_floor_loaded": lambda d: [PY, "-c", FLOOR_LOADED, f"{d}/out"],
            "b_main_job": lambda d: [PY, "main.py", "synth", "--outdir", f"{d}/out"],
            "c_all_profiles": lambda d: [PY, "-c", ALL_PROFILES, d],
        },
        args.runs,
        env,
    )
    if args.suite_runs:  # 0 skips the (slow) suite
        suite = [PY, "-m", "pytest", "-q", "-m", "not emulator", "-p", "no:cacheprovider"]
        results |= scenarios(
            {"d_tests_without_emulator": lambda d: [*suite, "--basetemp", f"{d}/t"]}, args.suite_runs, env
        )
    floor = results["a_floor"]["median_seconds"]
    results["ratio_b_over_a"] = round(results["b_main_job"]["median_seconds"] / floor, 2)
    loaded_floor = results["a2_floor_loaded"]["median_seconds"]
    results["ratio_b_over_a2"] = round(results["b_main_job"]["median_seconds"] / loaded_floor, 2)
    results["b_minus_a2_seconds"] = round(results["b_main_job"]["median_seconds"] - loaded_floor, 2)
    results["ratio_c_over_a"] = round(results["c_all_profiles"]["median_seconds"] / floor, 2)
    results["c_minus_a_seconds"] = round(results["c_all_profiles"]["median_seconds"] - floor, 2)
    # c loads only aws and helm too: c - a is short by what a's kubernetes import costs.
    results["c_minus_a2_seconds"] = round(results["c_all_profiles"]["median_seconds"] - loaded_floor, 2)
    results["bindings"] = "eager" if args.eager else "lazy"
    results["date"] = datetime.now(UTC).strftime("%Y-%m-%d")
    results["machine"] = f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}"
    for key, value in results.items():
        print(f"{key:26} {value}")
    out = ROOT / "benchmarks" / f"results{'-eager' if args.eager else ''}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
