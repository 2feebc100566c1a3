"""Every name the stacks give an AWS resource satisfies that resource's naming rules, and the
profile validator knows each of them in advance (its formulas match the components')."""

from __future__ import annotations

import re

import pytest

from addons.registry import ADDONS
from manifests.checks.target import NAMESPACE as VALIDATION_NAMESPACE
from profiles.models import PLATFORM_NAMESPACES
from profiles.naming import ACCOUNT, RULES, DerivedName, derived_names, name_problems
from tests.cases import FIXTURES, SHIPPED
from tests.synth_helpers import resources
from tests.test_profiles import mutated, problems

# resource type -> (attribute holding its name, naming rule)
NAMED = {
    "aws_iam_role": ("name", "iam_role"),
    "aws_cloudwatch_event_rule": ("name", "event_rule"),
    "aws_sqs_queue": ("name", "sqs_queue"),
    "aws_sns_topic": ("name", "sns_topic"),
    "aws_cloudwatch_metric_alarm": ("alarm_name", "metric_alarm"),
    "aws_s3_bucket": ("bucket", "s3_bucket"),
    "aws_ecr_repository": ("name", "ecr_repository"),
    "aws_codebuild_project": ("name", "codebuild_project"),
    "aws_launch_template": ("name", "launch_template"),
    "aws_eks_node_group": ("node_group_name", "node_group"),
    "aws_security_group": ("name", "security_group"),
    "aws_db_instance": ("identifier", "rds_identifier"),
}
ACCOUNT_TOKEN = re.compile(r"\$\{data\.aws_caller_identity\.[\w-]+\.account_id\}")
# The cluster's name, referenced in its own stack or read from the cluster layer's remote state.
CLUSTER_NAME_TOKEN = re.compile(
    r"\$\{(aws_eks_cluster\.[\w-]+\.name|data\.terraform_remote_state\.[^}]*"
    r"aws_eks_cluster[\w-]*name)\}"
)


def names_in_json(synthesized, profile: str) -> set[tuple[str, str]]:
    return names_in_stacks(synthesized.stacks[profile], synthesized.configs[profile].name)


def names_in_stacks(stacks: dict[str, dict], cluster_name: str) -> set[tuple[str, str]]:
    """(naming rule, name) of every named AWS resource, with tokens replaced by sample values."""
    found = set()
    for stack in stacks.values():
        for resource_type, (attribute, rule) in NAMED.items():
            for body in resources(stack, resource_type).values():
                if attribute in body:
                    name = CLUSTER_NAME_TOKEN.sub(cluster_name, body[attribute])
                    found.add((rule, ACCOUNT_TOKEN.sub(ACCOUNT, name)))
    return found


@pytest.mark.parametrize("profile", SHIPPED + FIXTURES)
def test_every_synthesized_name_follows_its_rules_and_was_foreseen(synthesized, profile):
    found = names_in_json(synthesized, profile)
    assert len(found) > 10
    for rule, name in found:
        assert not name_problems(DerivedName(("name",), name, rule, name)), (rule, name)
    foreseen = {(d.kind, d.name) for d in derived_names(synthesized.configs[profile].name_sources)}
    unforeseen = {(rule, name) for rule, name in found if rule != "node_group" or name != "system"} - foreseen
    assert unforeseen == set(), "the validator's formulas miss names the stacks create"


def test_the_rules_refuse_what_aws_refuses():
    assert RULES["event_rule"].problem("x" * 65)
    assert RULES["iam_role"].problem("role with space")
    assert RULES["ecr_repository"].problem("a--b/c")
    assert not RULES["ecr_repository"].problem("a-b/c_d.e")
    assert name_problems(DerivedName(("name",), "x", "s3_bucket", "xn--data-123"))


@pytest.mark.parametrize("profile", SHIPPED + FIXTURES)
def test_every_namespace_the_platform_creates_is_closed_to_tenants(synthesized, profile):
    """Read from the synthesized addons layer, not from the catalog the list is built from: a
    namespace an add-on creates that a tenant could also claim would be found here."""
    config = synthesized.configs[profile]
    created = {
        obj["manifest"]["metadata"]["name"]
        for obj in resources(synthesized.stack(profile, "addons"), "kubernetes_manifest").values()
        if isinstance(obj.get("manifest"), dict) and obj["manifest"].get("kind") == "Namespace"
    }
    chosen = {a.release_namespace(a.settings(config)) for a in ADDONS if a.definition.namespace_setting}
    assert created and created - chosen <= set(PLATFORM_NAMESPACES), created - set(PLATFORM_NAMESPACES)
    assert VALIDATION_NAMESPACE in PLATFORM_NAMESPACES


@pytest.mark.parametrize("namespace", PLATFORM_NAMESPACES)
def test_a_tenant_cannot_take_a_platform_namespace(namespace):
    found = "\n".join(problems(mutated(workloads__tenants=[{"name": namespace}])))
    assert "workloads.tenants.0.name" in found and "namespace the platform creates" in found


def test_rds_identifiers_refuse_what_rds_refuses():
    rule = RULES["rds_identifier"]
    assert rule.problem("gpu-lab-mlflow") is None
    for bad in ("gpu--lab-mlflow", "1gpu-mlflow", "gpu-mlflow-", "Gpu-mlflow", "a" * 64):
        assert rule.problem(bad), bad
