"""An S3 bucket with the hardening every platform bucket gets: versioning, default encryption,
public access fully blocked, owner-enforced objects, a TLS-only policy and lifecycle rules."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdktf import TerraformResourceLifecycle
from cdktf_cdktf_provider_aws.s3_bucket import S3Bucket
from constructs import Construct

from components.iam import deny_insecure_transport, policy_document
from components.leaf_resources import LeafType
from profiles.storage import DATA_BUCKET_PURPOSES, BucketLifecycle

DATA_BUCKETS = DATA_BUCKET_PURPOSES

# The bucket's companions: nothing reads them, so they are rendered as data (components/leaf_resources.py).
PUBLIC_ACCESS_BLOCK = LeafType("aws_s3_bucket_public_access_block", "S3BucketPublicAccessBlock")
OWNERSHIP_CONTROLS = LeafType("aws_s3_bucket_ownership_controls", "S3BucketOwnershipControls")
VERSIONING = LeafType("aws_s3_bucket_versioning", "S3BucketVersioningA")
ENCRYPTION = LeafType(
    "aws_s3_bucket_server_side_encryption_configuration", "S3BucketServerSideEncryptionConfigurationA"
)
BUCKET_POLICY = LeafType("aws_s3_bucket_policy", "S3BucketPolicy")
LIFECYCLE = LeafType("aws_s3_bucket_lifecycle_configuration", "S3BucketLifecycleConfiguration")


@dataclass(frozen=True, kw_only=True)
class SecureBucketProps:
    bucket_name: str
    """The bucket's globally unique name."""
    prevent_destroy: bool
    """Refuse to destroy the bucket (lifecycle prevent_destroy)."""
    lifecycle: BucketLifecycle = field(default_factory=BucketLifecycle)
    """Version expiry, multipart clean-up and tiering. Default: the profile model's defaults."""


class SecureBucket(Construct):
    """Exposes `name` and `arn`."""

    def __init__(self, scope: Construct, id_: str, *, props: SecureBucketProps):
        super().__init__(scope, id_)
        bucket = S3Bucket(
            self,
            "bucket",
            bucket=props.bucket_name,
            force_destroy=False,
            lifecycle=TerraformResourceLifecycle(prevent_destroy=props.prevent_destroy),
        )
        self._name = bucket.bucket
        self._arn = bucket.arn
        bucket_id = bucket.id  # each attribute read is a round trip to jsii: read once, used six times
        PUBLIC_ACCESS_BLOCK.add(
            self,
            "public-access-block",
            bucket=bucket_id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
        )
        OWNERSHIP_CONTROLS.add(self, "ownership", bucket=bucket_id, rule={"object_ownership": "BucketOwnerEnforced"})
        VERSIONING.add(self, "versioning", bucket=bucket_id, versioning_configuration={"status": "Enabled"})
        # SSE-S3: works unchanged with FSx data repository associations and Mountpoint.
        ENCRYPTION.add(
            self,
            "encryption",
            bucket=bucket_id,
            rule=[{"apply_server_side_encryption_by_default": {"sse_algorithm": "AES256"}}],
        )
        BUCKET_POLICY.add(
            self,
            "tls-only",
            bucket=bucket_id,
            policy=policy_document(
                deny_insecure_transport("s3", [self._arn, f"{self._arn}/*"]),
            ),
        )
        rules: list[dict[str, Any]] = [
            {
                "id": "expire-noncurrent-and-abort-uploads",
                "status": "Enabled",
                "filter": [{"prefix": ""}],
                "noncurrent_version_expiration": [
                    {"noncurrent_days": props.lifecycle.noncurrent_version_expiration_days}
                ],
                "abort_incomplete_multipart_upload": [
                    {"days_after_initiation": props.lifecycle.abort_incomplete_multipart_upload_days}
                ],
            }
        ]
        if props.lifecycle.intelligent_tiering_after_days is not None:
            rules.append(
                {
                    "id": "intelligent-tiering",
                    "status": "Enabled",
                    "filter": [{"prefix": ""}],
                    "transition": [
                        {"days": props.lifecycle.intelligent_tiering_after_days, "storage_class": "INTELLIGENT_TIERING"}
                    ],
                }
            )
        LIFECYCLE.add(self, "lifecycle", bucket=bucket_id, rule=rules)

    @property
    def name(self) -> str:
        """The bucket's name."""
        return self._name

    @property
    def arn(self) -> str:
        """The bucket's ARN."""
        return self._arn
