"""AWS and Kubernetes naming rules, and every name the platform derives from a profile.

Each derived name is checked at validation time against the rule of the resource it names, and
a problem names the profile field that produced it, its value, and the limit. The formulas here
mirror the components' (a test checks every name in the synthesized JSON against these rules).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from profiles import tenancy
from profiles.s3_names import bucket_name_problem
from profiles.storage import DATA_BUCKET_PURPOSES

# The longest account id an AWS name may carry (12 digits).
ACCOUNT = "123456789012"
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


# The namespace the platform's Prometheus runs in: every namespace the platform guards admits its
# metric scrapes (components/k8s/namespaces.py), and the monitoring add-on installs there.
METRICS_NAMESPACE = "monitoring"


@dataclass(frozen=True)
class NameRule:
    what: str
    max_length: int
    pattern: re.Pattern[str]
    allowed: str  # the pattern in words

    def problem(self, name: str) -> str | None:
        if not 1 <= len(name) <= self.max_length:
            return f"{self.what} {name!r} is {len(name)} characters long; at most {self.max_length} are allowed"
        if not self.pattern.fullmatch(name):
            return f"{self.what} {name!r} is not a valid name: {self.allowed}"
        return None


RULES: dict[str, NameRule] = {
    "iam_role": NameRule("IAM role name", 64, re.compile(r"[A-Za-z0-9_+=,.@-]+"), "letters, digits and +=,.@_-"),
    "event_rule": NameRule("EventBridge rule name", 64, re.compile(r"[.\-_A-Za-z0-9]+"), "letters, digits and .-_"),
    "sqs_queue": NameRule("SQS queue name", 80, re.compile(r"[A-Za-z0-9_-]+"), "letters, digits, - and _"),
    "sns_topic": NameRule("SNS topic name", 256, re.compile(r"[A-Za-z0-9_-]+"), "letters, digits, - and _"),
    "metric_alarm": NameRule("CloudWatch alarm name", 255, re.compile(r"[ -~]+"), "printable ASCII"),
    "s3_bucket": NameRule(
        "S3 bucket name",
        63,
        re.compile(r"[a-z0-9][a-z0-9.-]*[a-z0-9]"),
        "lowercase letters, digits, dots and hyphens, starting and ending alphanumeric",
    ),
    "ecr_repository": NameRule(
        "ECR repository name",
        256,
        re.compile(r"(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*"),
        "lowercase letters and digits, with single . _ - or / between them",
    ),
    "ecr_namespace": NameRule(
        "ECR repository name",
        256,
        re.compile(r"(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*"),
        "lowercase letters and digits, with single . _ - or / between them",
    ),
    "codebuild_project": NameRule(
        "CodeBuild project name",
        150,
        re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*"),
        "letters, digits, - and _, starting alphanumeric",
    ),
    "launch_template": NameRule(
        "launch template name", 128, re.compile(r"[a-zA-Z0-9().\-/_]+"), "letters, digits and ().-/_"
    ),
    "node_group": NameRule(
        "EKS node group name",
        63,
        re.compile(r"[0-9A-Za-z][A-Za-z0-9_-]*"),
        "letters, digits, - and _, starting alphanumeric",
    ),
    "security_group": NameRule(
        "security group name",
        255,
        re.compile(r"[A-Za-z0-9_ .:/()#,@\[\]+=&;{}!$*-]+"),
        "letters, digits, spaces and ._-:/()#,@[]+=&;{}!$*",
    ),
    "rds_identifier": NameRule(
        "RDS DB instance identifier",
        63,
        re.compile(r"[a-z](-?[a-z0-9])*"),
        "lowercase letters, digits and single inner hyphens, starting with a letter",
    ),
    "dns_label": NameRule("Kubernetes name", 63, _DNS_LABEL, "lowercase letters, digits and inner hyphens"),
    "dns_subdomain": NameRule(
        "Kubernetes object name",
        253,
        re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"),
        "dot-separated lowercase labels",
    ),
}
KARPENTER_EVENT_RULES = (
    "scheduled-change",
    "spot-interruption",
    "rebalance",
    "state-change",
    "reservation-interruption",
)


@dataclass(frozen=True)
class DerivedName:
    field: tuple[str | int, ...]  # the profile field that produced it
    value: object  # that field's value
    kind: str  # a key of RULES
    name: str


@dataclass(frozen=True, kw_only=True)
class NameSources:
    """The profile values names are derived from."""

    name: str
    gpu_node_groups: tuple[str, ...]
    tenants: tuple[str, ...]
    reference_implementations: tuple[str, ...]
    addon_images: tuple[tuple[str, str], ...] = ()
    """(add-on key, image) for each project image an enabled add-on has the build layer build under
    the image's name (AddonDefinition.project_images), beside the profile's own implementations."""
    addon_names: tuple[tuple[str, str], ...] = ()
    """(naming rule, name) of the AWS resources the enabled add-ons create (ProfileRules.aws_names)."""


def derived_names(sources: NameSources) -> Iterator[DerivedName]:
    """Every AWS and Kubernetes name the stacks derive from the profile."""
    name = sources.name
    at = ("name",)
    for suffix in ("cluster", "node", "ebs-csi", "fsx-csi", "s3-csi", "karpenter", "karpenter-node"):
        yield DerivedName(at, name, "iam_role", f"{name}-{suffix}")
    yield DerivedName(at, name, "sqs_queue", f"{name}-karpenter")
    for rule in KARPENTER_EVENT_RULES:
        yield DerivedName(at, name, "event_rule", f"{name}-karpenter-{rule}")
    for purpose in ("datasets", "checkpoints", "build-src"):
        yield DerivedName(at, name, "s3_bucket", f"{name}-{purpose}-{ACCOUNT}")
    for group in ("efa", "fsx", "endpoints"):
        yield DerivedName(at, name, "security_group", f"{name}-{group}")
    yield DerivedName(at, name, "launch_template", f"{name}-system")
    # The monitoring add-on's alert delivery (addons/monitoring/notifications.py), named when it is off too.
    yield DerivedName(at, name, "iam_role", f"{name}-alertmanager")
    for topic in ("alerts", "alertmanager-heartbeat"):
        yield DerivedName(at, name, "sns_topic", f"{name}-{topic}")
    yield DerivedName(at, name, "metric_alarm", f"{name}-alertmanager-heartbeat-missing")
    # The platform's name is the ECR repositories' namespace: checked on its own, against the name.
    yield DerivedName(at, name, "ecr_namespace", f"{name}/image")
    for rule, derived in sources.addon_names:
        yield DerivedName(at, name, rule, derived)
    field: tuple[str | int, ...]
    for index, group in enumerate(sources.gpu_node_groups):
        field = ("cluster", "gpu_node_groups", index, "name")
        yield DerivedName(field, group, "node_group", group)
        yield DerivedName(field, group, "launch_template", f"{name}-{group}")
    for index, tenant in enumerate(sources.tenants):
        field = ("workloads", "tenants", index, "name")
        yield DerivedName(field, tenant, "iam_role", tenancy.role_name(name, tenant))
        for volume in (tenancy.FSX_VOLUME, *(tenancy.s3_volume(purpose) for purpose in DATA_BUCKET_PURPOSES)):
            yield DerivedName(field, tenant, "dns_subdomain", tenancy.persistent_volume(tenant, volume))
    built = [(("build", "reference_implementations", impl), impl) for impl in sources.reference_implementations]
    built += [(("addons", key, "enabled"), image) for key, image in sources.addon_images]
    for field, impl in built:
        yield DerivedName(field, impl, "iam_role", f"{name}-{impl}-build")
        yield DerivedName(field, impl, "ecr_repository", f"{name}/{impl}")
        yield DerivedName(field, impl, "codebuild_project", f"{name}-{impl}")


def name_problems(derived: DerivedName) -> list[str]:
    rule = RULES[derived.kind]
    problems = [problem] if (problem := rule.problem(derived.name)) else []
    if derived.kind == "s3_bucket" and not problems and (problem := bucket_name_problem(derived.name)):
        problems.append(problem)
    return problems
