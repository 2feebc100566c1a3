"""The session's pool of Terraform slots (tests/terraform.py): a run that starts providers waits
for a free slot, one that only reads files or state never waits, and without a pool nothing does."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from tests.terraform import SLOTS, SLOTS_DIR_ENV, Terraform, terraform_slot

FAKE = f"#!{sys.executable}\nimport sys\nprint(' '.join(sys.argv[2:]))\n"


def hold_every_slot() -> tuple[threading.Event, list[threading.Thread]]:
    release, held = threading.Event(), threading.Barrier(SLOTS + 1)

    def hold() -> None:
        with terraform_slot(["plan", "-input=false"]):
            held.wait()
            release.wait()

    holders = [threading.Thread(target=hold) for _ in range(SLOTS)]
    for holder in holders:
        holder.start()
    held.wait(timeout=10)
    return release, holders


def run_in_background(terraform: Terraform, folder: Path, *args: str) -> tuple[threading.Thread, list[str]]:
    out: list[str] = []
    thread = threading.Thread(target=lambda: out.append(terraform.run(folder, *args).stdout.strip()))
    thread.start()
    return thread, out


def test_a_provider_run_waits_for_a_slot_and_a_state_read_does_not(tmp_path, monkeypatch):
    monkeypatch.setenv(SLOTS_DIR_ENV, str(tmp_path))
    binary = tmp_path / "terraform"
    binary.write_text(FAKE)
    binary.chmod(0o755)
    terraform = Terraform(str(binary), None, tmp_path / "terraform.rc")
    release, holders = hold_every_slot()
    try:
        validate, validated = run_in_background(terraform, tmp_path, "validate", "-json")
        for reader in (("init", "-backend=false"), ("output", "-json"), ("state", "list")):
            thread, out = run_in_background(terraform, tmp_path, *reader)
            thread.join(timeout=10)
            assert out == [" ".join(reader)], f"{reader[0]} waited for a slot"
        validate.join(timeout=1.5)
        assert validate.is_alive() and not validated, "validate ran with every slot taken"
    finally:
        release.set()
        for holder in holders:
            holder.join()
    validate.join(timeout=10)
    assert validated == ["validate -json"]


def test_without_a_pool_nothing_waits(tmp_path, monkeypatch):
    monkeypatch.delenv(SLOTS_DIR_ENV, raising=False)
    entered = []
    for _ in range(SLOTS + 2):  # nested: more runs at once than a pool would allow
        context = terraform_slot(["apply"])
        context.__enter__()
        entered.append(context)
    for context in reversed(entered):
        context.__exit__(None, None, None)
    assert len(entered) == SLOTS + 2
