"""Customer-managed KMS keys: rotated yearly, with an alias, and a key policy that only lets the
account administer the key through IAM (what may use it is decided by IAM policies)."""

from __future__ import annotations

from typing import Any

from cdktf_cdktf_provider_aws.kms_key import KmsKey
from constructs import Construct

from components.iam import policy_document
from components.leaf_resources import LeafType

# Nothing reads an alias, so it is rendered as data (components/leaf_resources.py).
ALIAS = LeafType("aws_kms_alias", "KmsAlias")

# A deleted key can be recovered for this long (AWS allows 7-30 days).
DELETION_WINDOW_DAYS = 30


def account_administered_key(
    scope: Construct,
    id_: str,
    *,
    description: str,
    alias: str,
    account_id: str,
    service_statements: tuple[dict[str, Any], ...] = (),
) -> KmsKey:
    """The key (construct id `id_`) and its alias `alias/<alias>` (construct id `<id_>-alias`).
    `service_statements`: grants to AWS service principals, which IAM policies cannot give (e.g. a
    CloudWatch alarm publishing to a topic encrypted with the key)."""
    key = KmsKey(
        scope,
        id_,
        description=description,
        enable_key_rotation=True,
        deletion_window_in_days=DELETION_WINDOW_DAYS,
        policy=policy_document(
            {
                "Sid": "AccountAdministersThroughIam",
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:aws:iam::{account_id}:root"},
                "Action": "kms:*",
                "Resource": "*",
            },
            *service_statements,
        ),
    )
    ALIAS.add(scope, f"{id_}-alias", name=f"alias/{alias}", target_key_id=key.key_id)
    return key
