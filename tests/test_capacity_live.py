"""Before the cluster layer: the account's EC2 quotas and the GPU groups' reservations, read through
the AWS CLI, against the profile (operate/capacity.py). The AWS answers are recorded in the AWS
CLI's JSON output format (service-quotas get-service-quota; ec2 describe-capacity-reservations),
and the deploy's pre-flight runs the checks through a fake `aws` on PATH."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from operate.capacity import judge_reservation, quota_check, reservation_check
from operate.preflight import capacity_problems
from profiles import load_profile
from profiles.quotas import launch_needs, quota_needs
from tests.cases import FIXTURE_PROFILES

BLOCK = load_profile(str(FIXTURE_PROFILES / "capacity-block.yaml"))
ODCR = load_profile(str(FIXTURE_PROFILES / "odcr.yaml"))


def quota_answer(code: str, value: float) -> str:
    return json.dumps(
        {
            "Quota": {
                "ServiceCode": "ec2",
                "ServiceName": "Amazon Elastic Compute Cloud (Amazon EC2)",
                "QuotaArn": f"arn:aws:servicequotas:us-east-1:123456789012:ec2/{code}",
                "QuotaCode": code,
                "QuotaName": "Running On-Demand P instances",
                "Value": value,
                "Unit": "None",
                "Adjustable": True,
                "GlobalQuota": False,
                "QuotaAppliedAtLevel": "ACCOUNT",
            }
        }
    )


def reservation_answer(**changes: object) -> str:
    found = {
        "CapacityReservationId": "cr-0123456789abcdef0",
        "OwnerId": "123456789012",
        "CapacityReservationArn": "arn:aws:ec2:us-east-1:123456789012:capacity-reservation/cr-0123456789abcdef0",
        "AvailabilityZoneId": "use1-az6",
        "InstanceType": "p5.48xlarge",
        "InstancePlatform": "Linux/UNIX",
        "AvailabilityZone": "us-east-1b",
        "Tenancy": "default",
        "TotalInstanceCount": 0,
        "AvailableInstanceCount": 0,
        "EbsOptimized": True,
        "EphemeralStorage": False,
        "State": "scheduled",
        "StartDate": "2099-02-27T11:30:00+00:00",
        "EndDate": "2099-03-01T11:30:00+00:00",
        "EndDateType": "limited",
        "InstanceMatchCriteria": "targeted",
        "CreateDate": "2099-02-01T09:12:44+00:00",
        # Not started yet: no instances; the count the block will hold is in EC2's tag.
        "Tags": [{"Key": "aws:ec2capacityreservation:incrementalRequestedQuantity", "Value": "2"}],
        "ReservationType": "capacity-block",
    }
    return json.dumps({"CapacityReservations": [{**found, **changes}]})


def reservation_problems(config, aws, now=None) -> list[str]:
    """The problems a reservation check finds when EC2 answered every question."""
    check = reservation_check(config, aws, now)
    assert check.unread == [] and check.notes == [], check
    return check.problems


class Aws:
    """The AWS CLI, answering from recorded responses; remembers what it was asked."""

    def __init__(self, quotas: dict[str, float] | None = None, reservation: str | None = None):
        self.quotas, self.reservation, self.calls = quotas or {}, reservation, []

    def __call__(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        self.calls.append(args)
        if args[:2] == ["service-quotas", "get-service-quota"]:
            code = args[args.index("--quota-code") + 1]
            if code not in self.quotas:
                return subprocess.CompletedProcess(args, 254, "", "An error occurred (AccessDeniedException)")
            return subprocess.CompletedProcess(args, 0, quota_answer(code, self.quotas[code]), "")
        if args[:2] == ["ec2", "describe-capacity-reservations"]:
            if self.reservation is None:
                error = "An error occurred (InvalidCapacityReservationId.NotFound)"
                return subprocess.CompletedProcess(args, 254, "", error)
            return subprocess.CompletedProcess(args, 0, self.reservation, "")
        raise AssertionError(args)


def test_a_quota_below_what_the_deploy_launches_stops_it_and_a_ceiling_is_a_note():
    """The deploy launches the system group and the On-Demand GPU groups at desired_size; groups in
    a reservation use quota the reservation holds already, and Karpenter launches nothing at apply.
    Below that, the deploy stops with the request that raises the quota; below the profile's
    largest sizes (max_size, Karpenter's limits), it is told."""
    # The ODCR groups launch inside their reservations, and g6-no-efa starts at 0: only the system group.
    assert [need.code for need in launch_needs(ODCR)] == ["L-1216C47A"]
    p5 = load_profile("p5-training")
    launch = {need.code: need for need in launch_needs(p5)}
    assert launch["L-417A185B"].vcpus == 2 * 192  # desired_size 2 p5.48xlarge, not max_size 4
    codes = {need.code for need in quota_needs(p5)} | set(launch)
    check = quota_check(p5, Aws(quotas={code: 0.0 for code in codes}))
    assert len(check.problems) == len(launch) and check.unread == []
    (p_quota,) = [p for p in check.problems if "L-417A185B" in p]
    assert p_quota.startswith(f"Ask for more of EC2 quota L-417A185B (Running On-Demand P instances) in {p5.region}")
    assert "is 0 vCPUs; the deploy launches 384 (p5-efa: 2 x p5.48xlarge)" in p_quota
    assert f"--quota-code L-417A185B --region {p5.region} --desired-value 384" in p_quota
    assert any("L-417A185B" in note and "may use 768" in note for note in check.notes)  # max_size 4: told
    fits = quota_check(p5, Aws(quotas={code: 384.0 if code == "L-417A185B" else 1e6 for code in codes}))
    assert fits.problems == [] and fits.unread == []


def test_a_quota_that_cannot_be_read_is_unread_never_fitting():
    """Without servicequotas:GetServiceQuota nothing is known of the quotas: each is unread, with
    the AWS CLI's reason, and none is a note or taken as fitting."""
    p5 = load_profile("p5-training")
    codes = {need.code for need in quota_needs(p5)} | {need.code for need in launch_needs(p5)}
    check = quota_check(p5, Aws())
    assert check.problems == [] and check.notes == [] and len(check.unread) == len(codes)
    (p_quota,) = [line for line in check.unread if "L-417A185B" in line]
    assert p_quota.startswith(f"EC2 quota L-417A185B (Running On-Demand P instances) in {p5.region}: ")
    assert "this identity may not read it (An error occurred (AccessDeniedException))" in p_quota
    # Some read, some not: only those read are judged.
    some = quota_check(p5, Aws(quotas={"L-417A185B": 0.0}))
    assert len(some.unread) == len(codes) - 1 and any("L-417A185B" in p for p in some.problems)


def test_a_cli_that_does_not_answer_is_unread_not_a_crash():
    def slow(args):
        raise subprocess.TimeoutExpired(args, 120)

    check = quota_check(ODCR, slow)
    assert check.problems == [] and check.unread and "did not answer in time" in check.unread[0]


def test_a_capacity_block_as_ec2_describes_it_matches_the_profile():
    assert reservation_problems(BLOCK, Aws(reservation=reservation_answer())) == []
    # Zone names are this account's own: a block named by zone ID matches whatever name it has here.
    assert reservation_problems(BLOCK, Aws(reservation=reservation_answer(AvailabilityZone="us-east-1d"))) == []


def test_a_reservation_named_by_zone_name_is_compared_by_name():
    group = ODCR.cluster.gpu_node_groups[1]
    assert group.capacity is not None and group.capacity.availability_zone == "us-west-2c"
    found = {"InstanceType": group.instance_type, "State": "active", "TotalInstanceCount": group.desired_size}
    assert not any("is in" in p for p in judge_reservation(group, {**found, "AvailabilityZone": "us-west-2c"}))
    assert "is in us-west-2a, the profile says us-west-2c" in judge_reservation(
        group, {**found, "AvailabilityZone": "us-west-2a", "AvailabilityZoneId": "usw2-az3"}
    )


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"State": "cancelled"}, "is cancelled, not active or payment-pending or scheduled"),
        ({"InstanceType": "p5e.48xlarge"}, "is for p5e.48xlarge, the group runs p5.48xlarge"),
        # The block's profile names zones by ID: EC2's zone ID is compared, not this account's name.
        ({"AvailabilityZoneId": "use1-az4"}, "is in use1-az4, the profile says use1-az6"),
        (
            {"Tags": [{"Key": "aws:ec2capacityreservation:incrementalRequestedQuantity", "Value": "1"}]},
            "holds 1 instances; the group's capacity.instance_count is 2",
        ),
        ({"State": "active", "TotalInstanceCount": 1, "Tags": []}, "holds 1 instances"),
        ({"EndDate": "2099-03-01T10:30:00+00:00"}, "ends at 2099-03-01T10:30:00Z; capacity.ends_at says"),
        (
            {"StartDate": "2099-02-28T11:30:00+00:00"},
            "starts at 2099-02-28T11:30:00Z; capacity.starts_at says 2099-02-27T11:30:00Z, so the group would scale up",
        ),
        ({"ReservationType": "default"}, "is an On-Demand reservation; the profile says capacity type capacity_block"),
    ],
)
def test_a_block_ec2_describes_otherwise_stops_the_deploy_by_name(changes, expected):
    (problem,) = reservation_problems(BLOCK, Aws(reservation=reservation_answer(**changes)))
    assert problem.startswith("gpu_node_groups p5-block: reservation cr-0123456789abcdef0 ") and expected in problem


def test_a_block_not_started_without_the_tag_and_an_old_cli_are_not_judged_on_what_they_lack():
    no_tag = reservation_answer(Tags=[])
    assert reservation_problems(BLOCK, Aws(reservation=no_tag)) == []
    old_cli = json.loads(reservation_answer())
    del old_cli["CapacityReservations"][0]["ReservationType"]
    assert reservation_problems(BLOCK, Aws(reservation=json.dumps(old_cli))) == []


def test_a_block_whose_drain_has_passed_is_left_to_synthesis_warning():
    from datetime import datetime

    after = datetime(2099, 3, 1, 11, 0, tzinfo=BLOCK.cluster.gpu_node_groups[0].capacity.ends_at.tzinfo)
    assert reservation_problems(BLOCK, Aws(reservation=reservation_answer(State="expired")), now=after) == []


def test_an_odcr_is_checked_and_a_missing_one_named():
    odcr = reservation_answer(
        CapacityReservationId="cr-0fedcba9876543210",
        InstanceType="p6-b300.48xlarge",
        AvailabilityZone="us-west-2c",
        ReservationType="default",
        State="active",
        TotalInstanceCount=8,
        EndDateType="unlimited",
    )
    aws = Aws(reservation=odcr)
    assert reservation_problems(ODCR, aws) == []
    # Pending for the few minutes EC2 takes to fill it: launches may already succeed.
    assert reservation_problems(ODCR, Aws(reservation=odcr.replace('"active"', '"pending"'))) == []
    # The group that targets a resource group of reservations is not looked up by id.
    (asked,) = [call for call in aws.calls if call[1] == "describe-capacity-reservations"]
    assert asked[asked.index("--capacity-reservation-ids") + 1] == "cr-0fedcba9876543210"
    (missing,) = reservation_problems(ODCR, Aws())
    assert "cannot be found in us-west-2" in missing and "NotFound" in missing


def fake_cli(tmp_path: Path, quota: str | None, reservation: str | None, error: str = "") -> Path:
    """An `aws` on disk: it prints the recorded answer to each question, or, for a question with
    no answer, `error` on stderr with the AWS CLI's exit status 255 (as the real CLI does when it
    has no credentials)."""
    answers = tmp_path / "answers"
    answers.mkdir(exist_ok=True)
    for name, answer in (("quota", quota), ("reservation", reservation)):
        (answers / f"{name}.json").unlink(missing_ok=True)
        if answer is not None:
            (answers / f"{name}.json").write_text(answer)
    (answers / "error").write_text(error)
    aws = tmp_path / "bin" / "aws"
    aws.parent.mkdir(exist_ok=True)
    aws.write_text(
        f"#!{sys.executable}\n"
        "import pathlib, sys\n"
        f"answers = pathlib.Path({str(answers)!r})\n"
        'answer = answers / {"service-quotas": "quota.json", "ec2": "reservation.json"}[sys.argv[1]]\n'
        "if answer.is_file():\n"
        "    print(answer.read_text())\n"
        "else:\n"
        '    sys.stderr.write((answers / "error").read_text() + "\\n")\n'
        "    sys.exit(255)\n"
    )
    aws.chmod(0o755)
    return aws


NO_CREDENTIALS = 'Unable to locate credentials. You can configure credentials by running "aws configure".'


def test_the_deploys_preflight_runs_them_through_the_aws_cli(tmp_path):
    """capacity_problems calls the `aws` it is given, with the operator's environment: a fake CLI
    on disk answering the quota as 0 and the block as EC2 would."""
    aws = fake_cli(tmp_path, quota_answer("L-417A185B", 0.0), reservation_answer(State="expired"))
    printed: list[str] = []
    problems = capacity_problems(BLOCK, str(aws), note=printed.append)
    # A Capacity Block counts against no On-Demand quota; the system nodes' Standard quota does.
    assert any("L-1216C47A" in p and "is 0 vCPUs" in p for p in problems)
    assert not any("L-417A185B" in p for p in problems)
    assert any("is expired, not" in p for p in problems)
    assert any(line.startswith("note: ") for line in printed)  # the largest sizes' shortfall, told
    assert all(len(line) <= 100 for line in printed), printed


def test_the_preflight_stops_on_what_it_could_not_read_unless_told_to_skip_it(tmp_path):
    """No credentials: not one quota or reservation is read. The deploy stops, naming each and the
    flag that goes on without them; with the flag, a warning names each and the deploy goes on."""
    aws = fake_cli(tmp_path, None, None, error=NO_CREDENTIALS)
    codes = {need.code for need in [*quota_needs(BLOCK), *launch_needs(BLOCK)]}
    printed: list[str] = []
    (problem,) = capacity_problems(BLOCK, str(aws), note=printed.append)
    first, *rest = problem.splitlines()
    assert "make deploy SKIP_QUOTA_CHECK=1" in first  # the way on, first
    assert all(any(f"EC2 quota {code} " in line for line in rest) for code in codes)
    assert any("reservation cr-0123456789abcdef0" in line for line in rest)
    assert all("no usable AWS credentials here" in line and "Unable to locate credentials" in line for line in rest[1:])
    assert printed == []
    skipped = capacity_problems(BLOCK, str(aws), note=printed.append, skip_unread=True)
    assert skipped == []
    assert printed[0] == "warning: --skip-quota-check: deploying without these, which could not be read:"
    told = " ".join(" ".join(printed).split())
    assert all(f"EC2 quota {code} " in told for code in codes) and "reservation cr-0123456789abcdef0" in told
    assert all(len(line) <= 100 for line in printed)


def test_skipping_never_hides_a_shortfall_that_was_read(tmp_path):
    aws = fake_cli(tmp_path, quota_answer("L-1216C47A", 0.0), None, error="An error occurred (ThrottlingException)")
    printed: list[str] = []
    problems = capacity_problems(BLOCK, str(aws), note=printed.append, skip_unread=True)
    assert any("L-1216C47A" in p and "is 0 vCPUs" in p for p in problems)
    assert "throttled: try again shortly" in " ".join(" ".join(printed).split())  # the reservation, not read


def test_without_the_aws_cli_the_preflight_stops_naming_it(tmp_path):
    printed: list[str] = []
    (problem,) = capacity_problems(BLOCK, str(tmp_path / "no-aws-here"), note=printed.append)
    assert "SKIP_QUOTA_CHECK=1" in problem.splitlines()[0]
    assert "- every EC2 quota and reservation: no-aws-here is not installed (or not on PATH): install" in problem
    assert capacity_problems(BLOCK, str(tmp_path / "no-aws-here"), note=printed.append, skip_unread=True) == []
    assert printed[0].startswith("warning: --skip-quota-check")


def test_a_reservation_ec2_does_not_know_is_a_problem_and_one_not_asked_about_is_unread():
    (missing,) = reservation_problems(ODCR, Aws())  # InvalidCapacityReservationId.NotFound
    assert "cannot be found in us-west-2" in missing

    def denied(args):
        return subprocess.CompletedProcess(args, 254, "", "An error occurred (UnauthorizedOperation)")

    check = reservation_check(ODCR, denied)
    assert check.problems == [] and len(check.unread) == 1
    assert check.unread[0].startswith("gpu_node_groups ") and "this identity may not read it" in check.unread[0]


def test_the_capacity_checks_run_only_before_the_cluster_layer(tmp_path):
    from operate.preflight import deploy_preflight

    aws = fake_cli(tmp_path, None, None, error=NO_CREDENTIALS)

    class NoVariables:
        def __init__(self):
            self.env: dict[str, str] = {}

        def stack(self, layer):
            return {}

        def outputs(self, layer):
            return {}

    check = deploy_preflight(BLOCK, NoVariables(), str(aws))  # type: ignore[arg-type]
    assert check(["storage", "build"]) == []
    (problem,) = check(["cluster", "storage"])
    assert "SKIP_QUOTA_CHECK=1" in problem
    assert deploy_preflight(BLOCK, NoVariables(), str(aws), skip_quota_check=True)(["cluster"]) == []  # type: ignore[arg-type]


def run_make_quotas(monkeypatch, tmp_path, aws: Path | None) -> int:
    """main.py quotas --check with `aws` as the only AWS CLI on PATH (or none)."""
    import main

    monkeypatch.setenv("PATH", str(aws.parent if aws else tmp_path / "nothing"))
    return main.main(["quotas", "--profile", str(FIXTURE_PROFILES / "capacity-block.yaml"), "--check"])


def items(printed: str) -> list[str]:
    """The printed lines, each list item's wrapped lines joined back into one."""
    joined: list[str] = []
    for line in printed.splitlines():
        if line.startswith("  ") and joined:
            joined[-1] += " " + line.strip()
        else:
            joined.append(line)
    return joined


def test_make_quotas_check_without_credentials_reads_nothing_and_says_so(monkeypatch, tmp_path, capsys):
    aws = fake_cli(tmp_path, None, None, error=NO_CREDENTIALS)
    assert run_make_quotas(monkeypatch, tmp_path, aws) == 1
    out, err = capsys.readouterr()
    assert "fit the profile" not in out + err
    codes = {need.code for need in [*quota_needs(BLOCK), *launch_needs(BLOCK)]}
    lines = items(err)
    for code in codes:  # each quota, with what stopped it
        (line,) = [line for line in lines if f"EC2 quota {code} " in line]
        assert "no usable AWS credentials here" in line
    assert any("reservation cr-0123456789abcdef0" in line for line in lines)
    assert lines[-1].startswith(f"not checked: {len(codes) + 1} of the account's quotas and reservations")


def test_make_quotas_check_reads_the_account_and_fails_on_a_shortfall(monkeypatch, tmp_path, capsys):
    everything = {"L-1216C47A", "L-DB2E81BA", "L-417A185B", "L-34B43A08", "L-3819A6DF", "L-7212CCBC"}
    expired = fake_cli(tmp_path, quota_answer("L-1216C47A", 1e6), reservation_answer(State="expired"))
    assert run_make_quotas(monkeypatch, tmp_path, expired) == 1
    err = capsys.readouterr().err
    assert "is expired, not" in err and "could not be read" not in err
    assert {need.code for need in [*quota_needs(BLOCK), *launch_needs(BLOCK)]} <= everything
    fits = fake_cli(tmp_path, quota_answer("L-1216C47A", 1e6), reservation_answer())
    assert run_make_quotas(monkeypatch, tmp_path, fits) == 0
    assert "fit the profile" in capsys.readouterr().out


def test_make_quotas_check_fails_when_only_some_could_be_read(monkeypatch, tmp_path, capsys):
    throttling = "An error occurred (ThrottlingException)"
    throttled = fake_cli(tmp_path, quota_answer("L-1216C47A", 1e6), None, error=throttling)
    assert run_make_quotas(monkeypatch, tmp_path, throttled) == 1
    out, err = capsys.readouterr()
    assert "fit the profile" not in out and "throttled: try again shortly" in " ".join(err.split())
    assert err.splitlines()[-1].startswith("not checked: 1 of the account's quotas and reservations")
