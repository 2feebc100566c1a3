"""Before the cluster layer: the account's EC2 quotas and the GPU groups' reservations, read through
the AWS CLI, against the profile (operate/capacity.py). The AWS answers are recorded in the AWS
CLI's JSON output format (service-quotas get-service-quota; ec2 describe-capacity-reservations),
and the deploy's pre-flight runs the checks through a fake `aws` on PATH."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from operate.capacity import judge_reservation, quota_problems, reservation_problems
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
    problems, notes = quota_problems(p5, Aws(quotas={code: 0.0 for code in codes}))
    assert len(problems) == len(launch)
    (p_quota,) = [p for p in problems if "L-417A185B" in p]
    assert "is 0 vCPUs; the deploy launches 384 (p5-efa: 2 x p5.48xlarge)" in p_quota
    assert f"--quota-code L-417A185B --region {p5.region} --desired-value 384" in p_quota
    assert any("L-417A185B" in note and "may use 768" in note for note in notes)  # max_size 4: told, not fatal
    assert quota_problems(p5, Aws(quotas={code: 384.0 if code == "L-417A185B" else 1e6 for code in codes}))[0] == []
    # Without servicequotas:GetServiceQuota the deploy is not stopped; the quota is noted as unread.
    problems, notes = quota_problems(p5, Aws())
    assert problems == [] and len(notes) == len(codes) and "AccessDeniedException" in notes[0]


def test_a_cli_that_does_not_answer_is_a_note_not_a_crash():
    def slow(args):
        raise subprocess.TimeoutExpired(args, 120)

    problems, notes = quota_problems(ODCR, slow)
    assert problems == [] and "did not answer in time" in notes[0]


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
    printed: list[str] = []
    problems = capacity_problems(BLOCK, str(aws), note=printed.append)
    # A Capacity Block counts against no On-Demand quota; the system nodes' Standard quota does.
    assert any("L-1216C47A" in p and "is 0 vCPUs" in p for p in problems)
    assert not any("L-417A185B" in p for p in problems)
    assert any("is expired, not" in p for p in problems)
    assert any(line.startswith("note: ") for line in printed)  # the largest sizes' shortfall, told
    printed.clear()
    assert capacity_problems(BLOCK, str(tmp_path / "no-aws-here"), note=printed.append) == []
    assert printed == [
        f"EC2 quotas and reservations not checked: the AWS CLI ({tmp_path / 'no-aws-here'}) is not on PATH"
    ]


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
