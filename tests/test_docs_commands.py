"""Every shell snippet in the docs runs as written: each is executed by bash against stub
commands (aws, make, terraform, kubectl, npm, cdktf) that record their arguments. Each `make`
call must name a real target and only variables the Makefile reads; the state-bucket recipe makes
the right AWS calls in us-east-1 and elsewhere."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
STUBBED = ("aws", "make", "terraform", "kubectl", "npm", "cdktf")
MAKE_VARIABLES = {
    "PROFILE",
    "LAYER",
    "AUTO_APPROVE",
    "DELETE_DATA",
    "CONFIRM_DELETE_DATA",
    "SKIP_QUOTA_CHECK",
    "TO",
    "PYTEST_ARGS",
    "MIRROR",
    "TENANT",
}


def snippets() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        for index, match in enumerate(re.finditer(r"```(sh|bash|shell)\n(.*?)```", doc.read_text(), re.DOTALL)):
            found.append((f"{doc.relative_to(ROOT)}#{index}", match.group(2)))
    return found


SNIPPETS = snippets()


def run_snippet(text: str, tmp_path: Path) -> list[list[str]]:
    stubs = tmp_path / "bin"
    stubs.mkdir(exist_ok=True)
    log = tmp_path / "calls"
    log.write_text("")
    for name in STUBBED:
        (stubs / name).write_text(
            f'#!/bin/bash\nprintf "%q " {name} "$@" >> {shlex.quote(str(log))}\necho >> {shlex.quote(str(log))}\n'
        )
        (stubs / name).chmod(0o755)
    env = {"PATH": f"{stubs}:/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", text], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return [shlex.split(line) for line in log.read_text().splitlines()]


def makefile_targets() -> set[str]:
    targets = set()
    for line in (ROOT / "Makefile").read_text().splitlines():
        match = re.match(r"^([a-z][a-z -]*):(?!=)", line)
        if match:
            targets.update(match.group(1).split())
    return targets


def test_the_docs_have_shell_snippets():
    assert len(SNIPPETS) >= 5


@pytest.mark.parametrize(("where", "text"), SNIPPETS, ids=[where for where, _ in SNIPPETS])
def test_every_snippet_runs_as_written(where, text, tmp_path):
    calls = run_snippet(text, tmp_path)
    assert calls, f"{where}: no command ran"
    targets = makefile_targets()
    for call in calls:
        if call[0] != "make":
            continue
        words = call[1:]
        assert words and all(w in targets for w in words if "=" not in w), f"{where}: {call}"
        assert {w.split("=")[0] for w in words if "=" in w} <= MAKE_VARIABLES, f"{where}: {call}"


def test_the_state_bucket_recipe_works_in_every_region(tmp_path):
    (recipe,) = [text for _, text in SNIPPETS if "create-bucket" in text]
    for region, constraint in (
        ("us-west-2", ["--create-bucket-configuration", "LocationConstraint=us-west-2"]),
        ("us-east-1", []),
    ):
        calls = run_snippet(recipe.replace("REGION=us-west-2", f"REGION={region}"), tmp_path)
        assert [call[2] for call in calls] == [
            "create-bucket",
            "put-bucket-versioning",
            "put-bucket-encryption",
            "put-public-access-block",
        ]
        assert calls[0] == [
            "aws",
            "s3api",
            "create-bucket",
            "--bucket",
            "my-org-gpu-platform-state",
            "--region",
            region,
            *constraint,
        ]


def test_every_make_target_the_docs_name_exists():
    targets = makefile_targets()
    named = set()
    for doc in DOCS:
        named |= set(re.findall(r"`make ([a-z-]+)", doc.read_text()))
    assert named <= targets, named - targets


def test_links_between_the_docs_resolve():
    for doc in DOCS:
        for target in re.findall(r"\]\(((?!https?://)[^)#]+)(?:#[^)]*)?\)", doc.read_text()):
            assert (doc.parent / target).exists(), f"{doc.relative_to(ROOT)} links to a missing {target}"


def test_the_readme_is_the_newcomers_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 200
    for section in (
        "## Two commands",
        "## Before you deploy",
        "## Profiles",
        "## Deploy, verify, tear down",
        "## Troubleshooting",
        "## Where to read more",
    ):
        assert section in readme
