"""The IAM gate: every policy document of every stack of every profile, parsed from the
synthesized JSON (inline, trust, key, bucket and queue policies; attached AWS managed policies by
name), judged by rules that checkov cannot apply to policies stored as JSON strings. And checkov's
own IAM checks over the HCL export, where policies are jsonencode() expressions it does evaluate."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from stacks import LAYERS
from tests.cases import FIXTURES, HCL_PROFILES, IN_CI, SHIPPED
from tests.iam_gate import MANAGED_POLICIES, policies, problems_of, stack_problems
from tests.test_policy import BASELINE, accepted, find_checkov

PROFILES = SHIPPED + FIXTURES


@pytest.mark.parametrize("profile", PROFILES)
def test_every_policy_document_passes_the_gate(synthesized, profile):
    platform = synthesized.configs[profile].name
    stacks = synthesized.stacks[profile].values()
    seen = sum(len(document["Statement"]) for stack in stacks for _, _, document in policies(stack))
    problems = [problem for stack in stacks for problem in stack_problems(stack, platform=platform)]
    assert seen > 20, "the gate found too few policy statements to be reading the stacks"
    assert problems == []


@pytest.mark.parametrize("profile", PROFILES)
def test_only_known_managed_policies_are_attached(synthesized, profile):
    for layer in LAYERS:
        attachments = synthesized.stack(profile, layer).get("resource", {}).get("aws_iam_role_policy_attachment", {})
        for body in attachments.values():
            name = body["policy_arn"].removeprefix("arn:aws:iam::aws:policy/")
            assert name in MANAGED_POLICIES, f"{body['policy_arn']}: say why the platform needs it"


# The gate's rules, each shown to refuse what it is meant to refuse.
BAD_STATEMENTS = [
    ("identity", {"Effect": "Allow", "Action": ["ec2:RunInstances"], "Resource": "*"}, "without a scoping condition"),
    ("identity", {"Effect": "Allow", "Action": "iam:PassRole", "Resource": "*"}, "not one role"),
    (
        "identity",
        {"Effect": "Allow", "Action": "iam:PassRole", "Resource": "arn:aws:iam::1:role/x"},
        "without iam:PassedToService",
    ),
    ("identity", {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::demo-*/*"}, "S3 access"),
    ("identity", {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::other-data/*"}, "S3 access"),
    (
        "trust",
        {"Effect": "Allow", "Principal": {"Service": "pods.eks.amazonaws.com"}, "Action": "sts:AssumeRole"},
        "without aws:SourceAccount",
    ),
    (
        "trust",
        {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"},
        "decide whether",
    ),
    ("resource", {"Effect": "Allow", "Principal": "*", "Action": "sqs:SendMessage", "Resource": "x"}, "everyone"),
    # admin-equivalent statements that an action/resource check reading only literal '*' lets through
    ("identity", {"Effect": "Allow", "Action": "*", "Resource": "arn:aws:*:*:*:*"}, "the action wildcard '*'"),
    ("identity", {"Effect": "Allow", "Action": "*", "Resource": "arn:aws:*:*:*:*"}, "without a scoping condition"),
    (
        "identity",
        {
            "Effect": "Allow",
            "Action": "ec2:TerminateInstances",
            "Resource": "arn:aws:ec2:us-west-2:111122223333:instance/*",
        },
        "without a scoping condition",
    ),
    (
        "identity",
        {
            "Effect": "Allow",
            "Action": "iam:*",
            "Resource": "*",
            "Condition": {"StringEquals": {"aws:RequestedRegion": "us-west-2"}},
        },
        "the action wildcard 'iam:*'",
    ),
    (
        "identity",
        {
            "Effect": "Allow",
            "Action": "iam:CreateRole",
            "Resource": "*",
            "Condition": {"StringEquals": {"aws:RequestedRegion": "us-west-2"}},
        },
        "without a scoping condition",
    ),
    (
        "identity",
        {"Effect": "Allow", "Action": "secretsmanager:GetSecretValue", "Resource": "*"},
        "without a scoping condition",
    ),
    ("identity", {"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}, "NotAction"),
    ("identity", {"Effect": "Allow", "Action": "s3:ListBucket", "NotResource": "arn:aws:s3:::x"}, "NotResource"),
    ("trust", {"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}, "AWS principal '*'"),
    (
        "trust",
        {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::999988887777:root"}, "Action": "sts:AssumeRole"},
        "not this account",
    ),
    (
        "resource",
        {
            "Effect": "Allow",
            "Principal": {"Service": "events.amazonaws.com"},
            "Action": "sqs:SendMessage",
            "Resource": "x",
        },
        "confused deputy",
    ),
]


@pytest.mark.parametrize("kind, statement, words", BAD_STATEMENTS)
def test_the_gate_refuses(kind, statement, words):
    found = problems_of("aws_x.y", kind, statement, platform="demo")
    assert any(words in problem for problem in found), found


def test_the_gate_accepts_scoped_statements():
    good = [
        ("identity", {"Effect": "Allow", "Action": ["ec2:DescribeSubnets", "pricing:GetProducts"], "Resource": "*"}),
        (
            "identity",
            {
                "Effect": "Allow",
                "Action": "s3:GetObject",
                "Resource": "arn:aws:s3:::demo-datasets-${data.aws_caller_identity.a.account_id}/team/*",
            },
        ),
        ("identity", {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "${aws_s3_bucket.b.arn}/*"}),
        (
            "trust",
            {
                "Effect": "Allow",
                "Principal": {"Service": "codebuild.amazonaws.com"},
                "Action": "sts:AssumeRole",
                "Condition": {"StringEquals": {"aws:SourceAccount": "1"}},
            },
        ),
    ]
    for kind, statement in good:
        assert problems_of("aws_x.y", kind, statement, platform="demo") == []


# ------------------------------------------------------------------ checkov IAM checks on the HCL


def checkov_iam_checks(checkov: str) -> list[str]:
    """Ids of checkov's Terraform checks on IAM policies (any resource type with a policy)."""
    listing = subprocess.run(
        [checkov, "--list", "--framework", "terraform"], capture_output=True, text=True, timeout=300
    )
    ids = set()
    for line in listing.stdout.splitlines():
        cells = [cell.strip() for cell in line.split("|")]
        if (
            len(cells) > 5
            and re.fullmatch(r"CKV2?_AWS_\d+", cells[2] or "")
            and ("iam" in cells[4].lower() or "IAM" in cells[5])
        ):
            ids.add(cells[2])
    return sorted(ids)


@pytest.fixture(scope="session")
def hcl_iam_findings(hcl_exported) -> list[dict]:
    checkov = find_checkov()
    if checkov is None:
        if IN_CI:
            pytest.fail("CI needs checkov (make installs it into .tools/checkov)")
        pytest.skip("SKIPPING HCL IAM scan: checkov not installed (make test installs it)")
    checks = checkov_iam_checks(checkov)
    assert {"CKV_AWS_289", "CKV_AWS_290", "CKV_AWS_355"} <= set(checks)
    failed = []
    for profile in HCL_PROFILES:
        run = subprocess.run(
            [
                checkov,
                "-d",
                str(hcl_exported / profile / "stacks"),
                "--framework",
                "terraform",
                "--check",
                ",".join(checks),
                "-o",
                "json",
                "--compact",
                "--quiet",
                "--skip-download",
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        reports = json.loads(run.stdout) if run.stdout.strip() else []
        for report in reports if isinstance(reports, list) else [reports]:
            failed += report.get("results", {}).get("failed_checks", [])
    return failed


@pytest.mark.slow  # checkov on the HCL export (make check runs the gate itself)
def test_hcl_export_passes_checkovs_iam_checks(hcl_iam_findings):
    unaccepted = [f"{f['check_id']} {f['resource']}" for f in hcl_iam_findings if accepted(f) is None]
    assert unaccepted == [], f"fix these or accept them in tests/checkov_baseline.yaml with a reason: {unaccepted}"
    assert all(entry["why"] for entry in BASELINE)


@pytest.mark.slow  # checkov on the HCL export (make check runs the gate itself)
def test_checkov_reads_jsonencode_policies(tmp_path: Path):
    """The HCL scan has teeth: the unscoped policy the platform once had fails it."""
    checkov = find_checkov()
    if checkov is None:
        if IN_CI:
            pytest.fail("CI needs checkov")
        pytest.skip("SKIPPING: checkov not installed")
    (tmp_path / "main.tf").write_text(
        'resource "aws_iam_role_policy" "wide" {\n  role = "r"\n  name = "wide"\n'
        '  policy = jsonencode({ "Version" : "2012-10-17", "Statement" : [{ "Effect" : "Allow", '
        '"Action" : ["ec2:RunInstances", "ec2:CreateTags", "iam:PassRole"], "Resource" : "*" }] })\n}\n'
    )
    run = subprocess.run(
        [
            checkov,
            "-d",
            str(tmp_path),
            "--framework",
            "terraform",
            "-o",
            "json",
            "--compact",
            "--quiet",
            "--skip-download",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    failed = {f["check_id"] for f in json.loads(run.stdout)["results"]["failed_checks"]}
    assert {"CKV_AWS_289", "CKV_AWS_290", "CKV_AWS_355"} <= failed
