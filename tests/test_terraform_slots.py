"""The session's pool of Terraform slots (tests/terraform.py): a run that starts providers waits
for a free slot, one that only reads files or state never waits, the rest of the suite never
takes the slots kept for the emulated cycles, and without a pool nothing waits."""

from __future__ import annotations

import fcntl
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.terraform import SLOTS, SLOTS_DIR_ENV, SUITE_SLOTS, Terraform, starts_providers, terraform_slot

# Left out of `make check` (waits on real processes holding Terraform slots); `make test` runs it.
pytestmark = pytest.mark.slow

FAKE = f"#!{sys.executable}\nimport sys\nprint(' '.join(sys.argv[2:]))\n"


@contextmanager
def slots_held(count: int, *, critical: bool) -> Iterator[None]:
    """`count` provider runs hold a slot each until the block ends."""
    release, held = threading.Event(), threading.Barrier(count + 1)

    def hold() -> None:
        with terraform_slot(["plan", "-input=false"], critical=critical):
            held.wait()
            release.wait()

    holders = [threading.Thread(target=hold, daemon=True) for _ in range(count)]
    for holder in holders:
        holder.start()
    try:
        held.wait(timeout=10)
        yield
    finally:
        release.set()
        for holder in holders:
            holder.join(timeout=10)
    assert not any(holder.is_alive() for holder in holders)


def run_in_background(terraform: Terraform, folder: Path, *args: str) -> tuple[threading.Thread, list[str]]:
    out: list[str] = []
    thread = threading.Thread(target=lambda: out.append(terraform.run(folder, *args).stdout.strip()))
    thread.start()
    return thread, out


@pytest.fixture
def fake(tmp_path, monkeypatch) -> Terraform:
    monkeypatch.setenv(SLOTS_DIR_ENV, str(tmp_path))
    binary = tmp_path / "terraform"
    binary.write_text(FAKE)
    binary.chmod(0o755)
    return Terraform(str(binary), None, tmp_path / "terraform.rc")


@pytest.mark.parametrize(
    ("args", "starts"),
    [
        (("init", "-backend=false"), False),
        (("output", "-json"), False),
        (("state", "list"), False),
        (("state", "rm", "aws_s3_bucket.a"), False),
        (("state", "show", "aws_s3_bucket.a"), True),  # decodes the resource with the provider's schema
        (("show", "-json", "tfplan"), True),
        (("-no-color", "validate"), True),  # options before the command
        (("test", "-no-color"), True),
        (("apply", "-input=false", "tfplan"), True),
    ],
)
def test_which_runs_start_providers(args, starts):
    assert starts_providers(args) is starts


def test_a_provider_run_waits_for_a_slot_and_a_state_read_does_not(tmp_path, fake):
    with slots_held(SLOTS, critical=True):
        validate, validated = run_in_background(fake, tmp_path, "validate", "-json")
        for reader in (("init", "-backend=false"), ("output", "-json"), ("state", "list")):
            thread, out = run_in_background(fake, tmp_path, *reader)
            thread.join(timeout=10)
            assert out == [" ".join(reader)], f"{reader[0]} waited for a slot"
        validate.join(timeout=1.5)
        assert validate.is_alive() and not validated, "validate ran with every slot taken"
    validate.join(timeout=10)
    assert validated == ["validate -json"]


def test_the_suite_never_takes_the_slots_kept_for_the_cycles(tmp_path, fake):
    with slots_held(SUITE_SLOTS, critical=False):  # the suite's share, all taken
        test, tested = run_in_background(fake, tmp_path, "test")
        test.join(timeout=1.5)
        assert test.is_alive() and not tested, "the suite took a slot kept for the cycles"
        with slots_held(SLOTS - SUITE_SLOTS, critical=True):  # the cycles still get theirs
            pass
    test.join(timeout=10)
    assert tested == ["test"]


def test_the_cycles_take_the_slots_the_suite_cannot_first(tmp_path, fake):
    def free(index: int) -> bool:
        with open(tmp_path / f"slot-{index}", "a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            fcntl.flock(handle, fcntl.LOCK_UN)
            return True

    with slots_held(1, critical=True):
        assert [free(i) for i in range(SLOTS)] == [True] * (SLOTS - 1) + [False]


def test_without_a_pool_nothing_waits(monkeypatch):
    monkeypatch.delenv(SLOTS_DIR_ENV, raising=False)
    entered: list[object] = []

    def enter_more_than_a_pool_allows() -> None:
        for _ in range(SLOTS + 2):
            context = terraform_slot(["apply"], critical=True)
            context.__enter__()
            entered.append(context)

    thread = threading.Thread(target=enter_more_than_a_pool_allows, daemon=True)
    thread.start()
    thread.join(timeout=10)
    assert len(entered) == SLOTS + 2, "a run waited with no pool set"
