"""A profile bound to its account: `account_id` sets every layer's allowed_account_ids, and plan,
deploy and destroy stop before Terraform runs when the credentials are another account's."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

import main
from operate.account import account_refusal
from profiles import validate_profile
from profiles.yaml_core import dump_profile
from tests.test_profiles import assert_reported, mutated

ROOT = Path(__file__).resolve().parents[1]
ACCOUNT = "012345678901"


def aws_answering(account: str | None, calls: list[list[str]] | None = None):
    def aws(args: list[str]) -> subprocess.CompletedProcess[str]:
        if calls is not None:
            calls.append(args)
        if account is None:
            return subprocess.CompletedProcess(args, 253, "", "Unable to locate credentials.")
        return subprocess.CompletedProcess(args, 0, f"{account}\n", "")

    return aws


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (
            12345678901,
            ["write the account ID in quotes:", "leading zeros", "allowed: the 12-digit account ID in quotes"],
        ),
        ("12345678901", ["not in the expected form", "12 digits"]),
        ("1234567890123", ["not in the expected form"]),
        ("١٢٣٤٥٦٧٨٩٠١٢", ["not in the expected form"]),  # Arabic-Indic digits, which \d admits
        ("12345678901a", ["not in the expected form"]),
    ],
)
def test_account_id_is_twelve_ascii_digits_in_quotes(value, words):
    assert_reported(mutated(account_id=value), "account_id", words)


@pytest.mark.parametrize("written", ["123456789012", "12345678901", "1.2e+11"])
def test_an_unquoted_account_id_is_refused_without_a_guess(tmp_path, capsys, written):
    """YAML reads 012345670123 as the octal number 1402433619: padding it would name another account,
    so the refusal asks for quotes and names no ID of its own."""
    text = yaml.safe_dump(mutated(account_id="ACCOUNT_AS_TYPED"), sort_keys=False)
    (tmp_path / "profile.yaml").write_text(text.replace("ACCOUNT_AS_TYPED", written))
    assert main.main(["validate", "--profile", str(tmp_path / "profile.yaml")]) == 2
    (line,) = [line for line in capsys.readouterr().err.splitlines() if "account_id: " in line]
    read = yaml.safe_load(f"v: {written}")["v"]
    assert "write the account ID in quotes" in line and f"got {read!r}" in line, line
    assert re.findall(r"[0-9]{12}", line.replace(f"got {read!r}", "")) == [], line


def test_an_unquoted_account_id_with_a_leading_zero_is_refused_as_yaml_reads_it_two_ways(tmp_path, capsys):
    """YAML 1.1 reads 012345670123 as the octal number 1402433619, YAML 1.2 as 12345670123: the loader
    refuses it before any field, and the way out it names is the ID as typed, in quotes."""
    text = yaml.safe_dump(mutated(account_id="ACCOUNT_AS_TYPED"), sort_keys=False)
    (tmp_path / "profile.yaml").write_text(text.replace("ACCOUNT_AS_TYPED", "012345670123"))
    assert main.main(["validate", "--profile", str(tmp_path / "profile.yaml")]) == 2
    (line,) = [line for line in capsys.readouterr().err.splitlines() if "account_id: " in line]
    assert "reads 012345670123 as the number 1402433619, YAML 1.2 as 12345670123" in line, line
    assert "'012345670123' in quotes for text" in line, line


def test_account_id_is_optional_and_kept_as_written():
    assert validate_profile(mutated()).account_id is None
    assert validate_profile(mutated(account_id=ACCOUNT)).account_id == ACCOUNT


def test_credentials_of_another_account_are_refused_and_unreadable_ones_stop_too():
    config = validate_profile(mutated(account_id=ACCOUNT))
    calls: list[list[str]] = []
    assert account_refusal(config, "plan", aws_answering(ACCOUNT, calls)) is None
    assert calls == [["sts", "get-caller-identity", "--query", "Account", "--output", "text", "--region", "us-west-2"]]
    other = account_refusal(config, "deploy", aws_answering("210987654321"))
    assert other is not None and other.user_error
    assert "account_id: the credentials belong to account 210987654321" in other.message
    assert f"allowed: {ACCOUNT}" in other.message and other.message.startswith(f"Use credentials of account {ACCOUNT}")
    unread = account_refusal(config, "plan", aws_answering(None))
    assert unread is not None and not unread.user_error and "Unable to locate credentials" in unread.message
    unbound = validate_profile(mutated())
    assert account_refusal(unbound, "plan", aws_answering(None, calls)) is None and len(calls) == 1


@pytest.mark.parametrize("command", ["plan", "deploy", "destroy"])
def test_make_plan_deploy_destroy_exit_2_before_anything_is_synthesized(tmp_path, monkeypatch, capsys, command):
    import main
    from operate import cluster_access

    if shutil.which("terraform") is None:
        pytest.skip("SKIPPING: terraform is not on PATH (the commands require it first)")
    document = yaml.safe_load((ROOT / "profiles" / "gpu-validation.yaml").read_text())
    document |= {"name": "bound", "account_id": ACCOUNT}
    profile = tmp_path / "bound.yaml"
    profile.write_text(dump_profile(document))
    monkeypatch.setattr(main.common, "STATE_ROOT", tmp_path / "state")
    monkeypatch.setattr(cluster_access, "run_aws", aws_answering("210987654321"))

    def never(*_):
        raise AssertionError("synthesized (and so about to run Terraform) with another account's credentials")

    monkeypatch.setattr(main.common, "synthesize_profile", never)
    assert main.main([command, "--profile", str(profile), "--yes", "--outdir", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    assert f"refusing to {command} bound" in error and "210987654321" in error


@pytest.mark.parametrize(
    "command",
    [["pause", "--yes"], ["resume", "--yes"], ["verify"], ["quotas", "--check"]],
    ids=" ".join,
)
def test_the_commands_that_act_on_the_live_platform_stop_for_another_account(tmp_path, monkeypatch, capsys, command):
    """pause and resume call EKS and kubectl directly, verify runs jobs on the cluster, quotas
    --check reads the account: with another account's credentials each would act on (or report
    of) another account's platform of the same name. Each exits 2 before it synthesizes or asks
    AWS anything but whose credentials these are; unreadable credentials stop them with 1."""
    import main
    from operate import capacity, cluster_access

    document = yaml.safe_load((ROOT / "profiles" / "gpu-validation.yaml").read_text())
    document |= {"name": "bound", "account_id": ACCOUNT}
    profile = tmp_path / "bound.yaml"
    profile.write_text(dump_profile(document))
    calls: list[list[str]] = []
    monkeypatch.setattr(main.common, "STATE_ROOT", tmp_path / "state")
    monkeypatch.setattr(cluster_access, "run_aws", aws_answering("210987654321", calls))

    def never(*_, **__):
        raise AssertionError("went on with another account's credentials")

    monkeypatch.setattr(main.common, "synthesize_profile", never)
    monkeypatch.setattr(capacity, "account_check", never)
    argv = [command[0], "--profile", str(profile), *command[1:]]
    if command[0] != "quotas":
        argv += ["--outdir", str(tmp_path / "out")]
    assert main.main(argv) == 2
    error = " ".join(capsys.readouterr().err.split())
    assert "refusing to" in error and "bound" in error and "belong to account 210987654321" in error
    assert [call[:2] for call in calls] == [["sts", "get-caller-identity"]]

    monkeypatch.setattr(cluster_access, "run_aws", aws_answering(None))
    assert main.main(argv) == 1
    assert "could not be read: Unable to locate credentials" in " ".join(capsys.readouterr().err.split())


def test_every_aws_provider_of_every_layer_allows_only_the_profiles_account(tmp_path):
    from stacks import LAYERS
    from stacks.platform import synthesize

    synthesize(validate_profile(mutated(account_id=ACCOUNT)), str(tmp_path / "out"), state_dir=tmp_path / "state")
    for layer in LAYERS:
        stack = json.loads((tmp_path / "out" / "stacks" / layer / "cdk.tf.json").read_text())
        providers = stack["provider"]["aws"]
        assert providers and all(p["allowed_account_ids"] == [ACCOUNT] for p in providers), layer


def _unbound_profile(tmp_path: Path, region: str = "us-west-2") -> Path:
    document = yaml.safe_load((ROOT / "profiles" / "gpu-validation.yaml").read_text())
    document |= {"name": "unbound", "region": region}
    document["cluster"]["vpc"]["availability_zones"] = [f"{region}a", f"{region}b"]
    document.pop("account_id", None)
    profile = tmp_path / "unbound.yaml"
    profile.write_text(yaml.safe_dump(document))
    return profile


def test_a_profile_without_account_id_is_bound_by_its_first_plan(tmp_path, monkeypatch, capsys):
    """Issue 44 item 4 without account_id: the first plan records the credentials' account and the
    profile's region in state/<name>/.account-binding (0600); a plan with another account's
    credentials, or after the profile's region changed, exits 2 before anything is synthesized;
    the same account and region pass."""
    from operate import cluster_access

    if shutil.which("terraform") is None:
        pytest.skip("SKIPPING: terraform is not on PATH (the commands require it first)")
    monkeypatch.setattr(main.common, "STATE_ROOT", tmp_path / "state")
    synthesized: list[str] = []

    class Planned(Exception):
        pass

    def synthesize(*_, **__):
        synthesized.append("synth")
        raise Planned  # stands for Terraform: the test stops here

    monkeypatch.setattr(main.common, "synthesize_profile", synthesize)
    profile = _unbound_profile(tmp_path)
    argv = ["plan", "--profile", str(profile), "--outdir", str(tmp_path / "out")]

    monkeypatch.setattr(cluster_access, "run_aws", aws_answering(ACCOUNT))
    with pytest.raises(Planned):
        main.main(argv)
    marker = tmp_path / "state" / "unbound" / ".account-binding"
    assert json.loads(marker.read_text()) == {"account_id": ACCOUNT, "region": "us-west-2"}
    assert marker.stat().st_mode & 0o777 == 0o600
    assert synthesized == ["synth"]

    monkeypatch.setattr(cluster_access, "run_aws", aws_answering("210987654321"))
    capsys.readouterr()
    assert main.main(argv) == 2
    error = " ".join(capsys.readouterr().err.split())
    assert f"bound to account {ACCOUNT}" in error and "belong to account 210987654321" in error
    assert "set account_id: '210987654321'" in error and f"Use credentials of account {ACCOUNT}" in error
    assert synthesized == ["synth"], "planned with another account's credentials"

    monkeypatch.setattr(cluster_access, "run_aws", aws_answering(ACCOUNT))
    with pytest.raises(Planned):
        main.main(argv)
    assert synthesized == ["synth", "synth"]

    moved = _unbound_profile(tmp_path, region="eu-west-1")
    assert main.main(["plan", "--profile", str(moved), "--outdir", str(tmp_path / "out")]) == 2
    error = " ".join(capsys.readouterr().err.split())
    assert "region: its state is bound to region us-west-2" in error and "now says eu-west-1" in error
    assert synthesized == ["synth", "synth"]
    assert json.loads(marker.read_text()) == {"account_id": ACCOUNT, "region": "us-west-2"}


def test_unreadable_credentials_stop_an_unbound_profile_with_1_and_record_nothing(tmp_path, monkeypatch, capsys):
    from operate import cluster_access

    monkeypatch.setattr(main.common, "STATE_ROOT", tmp_path / "state")
    monkeypatch.setattr(cluster_access, "run_aws", aws_answering(None))
    monkeypatch.setattr(main.common, "synthesize_profile", lambda *_: pytest.fail("synthesized"))
    argv = ["pause", "--yes", "--profile", str(_unbound_profile(tmp_path)), "--outdir", str(tmp_path / "out")]
    assert main.main(argv) == 1
    assert "could not be read: Unable to locate credentials" in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "state" / "unbound" / ".account-binding").exists()


def test_quotas_check_compares_with_the_binding_but_records_none(tmp_path, monkeypatch):
    from operate import capacity, cluster_access
    from operate.capacity import AccountCheck

    monkeypatch.setattr(main.common, "STATE_ROOT", tmp_path / "state")
    monkeypatch.setattr(cluster_access, "run_aws", aws_answering(ACCOUNT))
    monkeypatch.setattr(capacity, "account_check", lambda *_: AccountCheck())
    argv = ["quotas", "--check", "--profile", str(_unbound_profile(tmp_path))]
    assert main.main(argv) == 0
    assert not (tmp_path / "state" / "unbound" / ".account-binding").exists()


def test_offline_commands_do_not_ask_aws(tmp_path, monkeypatch):
    from operate import cluster_access

    monkeypatch.setattr(main.common, "STATE_ROOT", tmp_path / "state")
    monkeypatch.setattr(cluster_access, "run_aws", lambda args: pytest.fail(f"asked AWS: {args}"))
    assert main.main(["quotas", "--profile", str(_unbound_profile(tmp_path))]) == 0
    assert not (tmp_path / "state" / "unbound" / ".account-binding").exists()


def test_the_s3_binding_is_written_once_and_read_back():
    from operate.state_claim import Binding, bind_s3

    stored: dict[str, str] = {}

    def aws(args: list[str]) -> subprocess.CompletedProcess[str]:
        key = args[args.index("--key") + 1]
        if args[1] == "get-object":
            if key not in stored:
                return subprocess.CompletedProcess(args, 254, "", "An error occurred (NoSuchKey)")
            Path(args[-1]).write_text(stored[key])
            return subprocess.CompletedProcess(args, 0, "", "")
        stored[key] = Path(args[args.index("--body") + 1]).read_text()
        return subprocess.CompletedProcess(args, 0, "", "")

    where = "s3://b/p/n/account-binding"
    ask = {"account": ACCOUNT, "region": "us-west-2", "aws": aws}
    assert bind_s3("b", "p", "us-east-1", "n", record=False, **ask) is None and not stored  # type: ignore[arg-type]
    assert bind_s3("b", "p", "us-east-1", "n", record=True, **ask) == Binding(ACCOUNT, "us-west-2", where)  # type: ignore[arg-type]
    other = bind_s3("b", "p", "us-east-1", "n", account="210987654321", region="eu-west-1", record=True, aws=aws)
    assert other == Binding(ACCOUNT, "us-west-2", where)
