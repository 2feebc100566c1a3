"""The AWS names MLflow's resources take (its database, artifact bucket, security group and roles),
checked against AWS's naming rules with the platform's other names."""

from __future__ import annotations

from collections.abc import Iterator

from addons.definition import ProfileRules
from profiles.naming import ACCOUNT


def _aws_names(name: str) -> Iterator[tuple[str, str]]:
    yield "rds_identifier", f"{name}-mlflow"
    yield "s3_bucket", f"{name}-mlflow-artifacts-{ACCOUNT}"
    yield "security_group", f"{name}-mlflow-db"
    yield "iam_role", f"{name}-mlflow"
    yield "iam_role", f"{name}-mlflow-db-setup"


RULES = ProfileRules(aws_names=_aws_names)
