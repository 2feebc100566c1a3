"""Before the cluster layer: the account's EC2 quotas and the GPU groups' reservations, read through
the AWS CLI, against the profile (operate/capacity.py). The AWS answers are recorded in the AWS
CLI's JSON output format (service-quotas get-service-quota; ec2 describe-capacity-reservations),
and the deploy's pre-flight runs the checks through a fake `aws` on PATH."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from operate.capacity import quota_problems, reservation_problems
from operate.preflight import capacity_problems
from profiles import load_profile
from profiles.quotas import quota_needs
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
        "TotalInstanceCount": 2,
        "AvailableInstanceCount": 2,
        "EbsOptimized": True,
        "EphemeralStorage": False,
        "State": "scheduled",
        "StartDate": "2099-02-27T11:30:00+00:00",
        "EndDate": "2099-03-01T11:30:00+00:00",
        "EndDateType": "limited",
        "InstanceMatchCriteria": "targeted",
        "CreateDate": "2099-02-01T09:12:44+00:00",
        "Tags": [],
        "ReservationType": "capacity-block",
    }
    return json.dumps({"CapacityReservations": [{**found, **changes}]})


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


def test_a_quota_below_the_profiles_need_is_named_with_the_request_to_raise_it():
    needs = {need.code: need.vcpus for need in quota_needs(ODCR)}
    low = {code: 0.0 for code in needs}
    problems, notes = quota_problems(ODCR, Aws(quotas=low))
    assert len(problems) == len(needs) and notes == []
    (p_quota,) = [p for p in problems if "L-417A185B" in p]
    assert f"is 0 vCPUs; the profile needs {needs['L-417A185B']}" in p_quota
    assert f"--quota-code L-417A185B --region {ODCR.region} --desired-value {needs['L-417A185B']}" in p_quota
    assert quota_problems(ODCR, Aws(quotas={code: float(vcpus) for code, vcpus in needs.items()})) == ([], [])
    # Without servicequotas:GetServiceQuota the deploy is not stopped; the quota is noted as unread.
    problems, notes = quota_problems(ODCR, Aws())
    assert problems == [] and len(notes) == len(needs) and "AccessDeniedException" in notes[0]


def test_a_capacity_block_as_ec2_describes_it_matches_the_profile():
    assert reservation_problems(BLOCK, Aws(reservation=reservation_answer())) == []


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"State": "cancelled"}, "is cancelled, not active or payment-pending or scheduled"),
        ({"InstanceType": "p5e.48xlarge"}, "is for p5e.48xlarge, the group runs p5.48xlarge"),
        ({"AvailabilityZone": "us-east-1a"}, "is in us-east-1a, the profile says us-east-1b"),
        ({"TotalInstanceCount": 1}, "holds 1 instances; the group's capacity.instance_count is 2"),
        ({"EndDate": "2099-03-01T10:30:00+00:00"}, "ends at 2099-03-01T10:30:00Z; capacity.ends_at says"),
        ({"ReservationType": "default"}, "is an On-Demand reservation; the profile says capacity type capacity_block"),
    ],
)
def test_a_block_ec2_describes_otherwise_stops_the_deploy_by_name(changes, expected):
    (problem,) = reservation_problems(BLOCK, Aws(reservation=reservation_answer(**changes)))
    assert problem.startswith("gpu_node_groups p5-block: reservation cr-0123456789abcdef0 ") and expected in problem


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
    # The group that targets a resource group of reservations is not looked up by id.
    (asked,) = [call for call in aws.calls if call[1] == "describe-capacity-reservations"]
    assert asked[asked.index("--capacity-reservation-ids") + 1] == "cr-0fedcba9876543210"
    (missing,) = reservation_problems(ODCR, Aws())
    assert "cannot be found in us-west-2" in missing and "NotFound" in missing


def test_the_deploys_preflight_runs_them_through_the_aws_cli(tmp_path):
    """capacity_problems calls the `aws` it is given, with the operator's environment: a fake CLI
    on disk answering the quota as 0 and the block as EC2 would."""
    answers = tmp_path / "answers"
    answers.mkdir()
    (answers / "quota.json").write_text(quota_answer("L-417A185B", 0.0))
    (answers / "reservation.json").write_text(reservation_answer(State="expired"))
    aws = tmp_path / "aws"
    aws.write_text(
        "#!/bin/sh\n"
        f'case "$1" in service-quotas) cat {answers}/quota.json ;; ec2) cat {answers}/reservation.json ;; esac\n'
    )
    aws.chmod(0o755)
    problems = capacity_problems(BLOCK, str(aws))
    # A Capacity Block counts against no On-Demand quota; the system nodes' Standard quota does.
    assert any("L-1216C47A" in p and "is 0 vCPUs" in p for p in problems)
    assert not any("L-417A185B" in p for p in problems)
    assert any("is expired, not" in p for p in problems)
    assert capacity_problems(BLOCK, str(tmp_path / "no-aws-here")) == []  # no CLI: the API checks say so


def test_the_capacity_checks_run_only_before_the_cluster_layer():
    from operate import preflight

    source = Path(preflight.__file__).read_text()
    assert '*(capacity_problems(config, aws, operator.env) if "cluster" in layers else [])' in source


def test_make_quotas_check_reads_the_account_and_fails_on_a_shortfall(monkeypatch, capsys):
    import main
    from operate import cluster_access

    monkeypatch.setattr(cluster_access, "run_aws", Aws(quotas={}, reservation=reservation_answer(State="expired")))
    assert main.main(["quotas", "--profile", str(FIXTURE_PROFILES / "capacity-block.yaml"), "--check"]) == 1
    err = capsys.readouterr().err
    assert "could not be read" in err and "is expired, not" in err
    monkeypatch.setattr(
        cluster_access,
        "run_aws",
        Aws(
            quotas={
                "L-1216C47A": 1e6,
                "L-DB2E81BA": 1e6,
                "L-417A185B": 1e6,
                "L-34B43A08": 1e6,
                "L-3819A6DF": 1e6,
                "L-7212CCBC": 1e6,
            },
            reservation=reservation_answer(),
        ),
    )
    assert main.main(["quotas", "--profile", str(FIXTURE_PROFILES / "capacity-block.yaml"), "--check"]) == 0
    assert "fit the profile" in capsys.readouterr().out
