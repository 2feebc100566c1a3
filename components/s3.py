"""An S3 bucket with the hardening every platform bucket gets: versioning, default encryption,
public access fully blocked, owner-enforced objects, a TLS-only policy and lifecycle rules."""

from __future__ import annotations

from dataclasses import dataclass, field

from cdktf import TerraformResourceLifecycle
from cdktf_cdktf_provider_aws.s3_bucket import S3Bucket
from cdktf_cdktf_provider_aws.s3_bucket_lifecycle_configuration import (
    S3BucketLifecycleConfiguration,
    S3BucketLifecycleConfigurationRule,
    S3BucketLifecycleConfigurationRuleAbortIncompleteMultipartUpload,
    S3BucketLifecycleConfigurationRuleFilter,
    S3BucketLifecycleConfigurationRuleNoncurrentVersionExpiration,
    S3BucketLifecycleConfigurationRuleTransition,
)
from cdktf_cdktf_provider_aws.s3_bucket_ownership_controls import (
    S3BucketOwnershipControls,
    S3BucketOwnershipControlsRule,
)
from cdktf_cdktf_provider_aws.s3_bucket_policy import S3BucketPolicy
from cdktf_cdktf_provider_aws.s3_bucket_public_access_block import S3BucketPublicAccessBlock
from cdktf_cdktf_provider_aws.s3_bucket_server_side_encryption_configuration import (
    S3BucketServerSideEncryptionConfigurationA,
    S3BucketServerSideEncryptionConfigurationRuleA,
    S3BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultA,
)
from cdktf_cdktf_provider_aws.s3_bucket_versioning import S3BucketVersioningA, S3BucketVersioningVersioningConfiguration
from constructs import Construct

from components.iam import deny_insecure_transport, policy_document
from profiles.storage import DATA_BUCKET_PURPOSES, BucketLifecycle

DATA_BUCKETS = DATA_BUCKET_PURPOSES


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
        S3BucketPublicAccessBlock(
            self,
            "public-access-block",
            bucket=bucket_id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
        )
        S3BucketOwnershipControls(
            self,
            "ownership",
            bucket=bucket_id,
            rule=S3BucketOwnershipControlsRule(object_ownership="BucketOwnerEnforced"),
        )
        S3BucketVersioningA(
            self,
            "versioning",
            bucket=bucket_id,
            versioning_configuration=S3BucketVersioningVersioningConfiguration(status="Enabled"),
        )
        # SSE-S3: works unchanged with FSx data repository associations and Mountpoint.
        S3BucketServerSideEncryptionConfigurationA(
            self,
            "encryption",
            bucket=bucket_id,
            rule=[
                S3BucketServerSideEncryptionConfigurationRuleA(
                    apply_server_side_encryption_by_default=(
                        S3BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultA(
                            sse_algorithm="AES256"
                        )
                    ),
                )
            ],
        )
        S3BucketPolicy(
            self,
            "tls-only",
            bucket=bucket_id,
            policy=policy_document(
                deny_insecure_transport("s3", [self._arn, f"{self._arn}/*"]),
            ),
        )
        rules = [
            S3BucketLifecycleConfigurationRule(
                id="expire-noncurrent-and-abort-uploads",
                status="Enabled",
                filter=[S3BucketLifecycleConfigurationRuleFilter(prefix="")],
                noncurrent_version_expiration=[
                    S3BucketLifecycleConfigurationRuleNoncurrentVersionExpiration(
                        noncurrent_days=props.lifecycle.noncurrent_version_expiration_days
                    )
                ],
                abort_incomplete_multipart_upload=[
                    S3BucketLifecycleConfigurationRuleAbortIncompleteMultipartUpload(
                        days_after_initiation=props.lifecycle.abort_incomplete_multipart_upload_days
                    )
                ],
            )
        ]
        if props.lifecycle.intelligent_tiering_after_days is not None:
            rules.append(
                S3BucketLifecycleConfigurationRule(
                    id="intelligent-tiering",
                    status="Enabled",
                    filter=[S3BucketLifecycleConfigurationRuleFilter(prefix="")],
                    transition=[
                        S3BucketLifecycleConfigurationRuleTransition(
                            days=props.lifecycle.intelligent_tiering_after_days, storage_class="INTELLIGENT_TIERING"
                        )
                    ],
                )
            )
        S3BucketLifecycleConfiguration(self, "lifecycle", bucket=bucket_id, rule=rules)

    @property
    def name(self) -> str:
        """The bucket's name."""
        return self._name

    @property
    def arn(self) -> str:
        """The bucket's ARN."""
        return self._arn
