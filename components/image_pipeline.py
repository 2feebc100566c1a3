"""One reference implementation's image pipeline: an ECR repository and the CodeBuild project
that builds the image from a source archive in S3 and pushes it there."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from cdktf_cdktf_provider_aws.cloudwatch_log_group import CloudwatchLogGroup
from cdktf_cdktf_provider_aws.codebuild_project import (
    CodebuildProject,
    CodebuildProjectArtifacts,
    CodebuildProjectEnvironment,
    CodebuildProjectEnvironmentEnvironmentVariable,
    CodebuildProjectLogsConfig,
    CodebuildProjectLogsConfigCloudwatchLogs,
    CodebuildProjectSource,
)
from cdktf_cdktf_provider_aws.ecr_repository import (
    EcrRepository,
    EcrRepositoryEncryptionConfiguration,
    EcrRepositoryImageScanningConfiguration,
)
from constructs import Construct

from components.iam import ServiceRole, ServiceRoleProps, allow, policy_document
from components.leaf_resources import LeafType
from profiles.versions import CODEBUILD_ENVIRONMENT_TYPES, CODEBUILD_IMAGES

# Nothing reads the lifecycle policy, so it is rendered as data (components/leaf_resources.py).
LIFECYCLE_POLICY = LeafType("aws_ecr_lifecycle_policy", "EcrLifecyclePolicy")

# The project's own build steps, inline: nothing is expected from the source but its Dockerfile.
# (No "${" in it: Terraform would read that as an interpolation.) The repositories' tags are
# immutable and a tag names its source, so a build whose tag is already pushed has nothing to do:
# pushing it again would fail (ImageTagAlreadyExistsException) although the image is right.
BUILDSPEC = """version: 0.2
phases:
  pre_build:
    commands:
      - >-
        aws ecr get-login-password --region "$AWS_DEFAULT_REGION"
        | docker login --username AWS --password-stdin "$(echo "$REPOSITORY_URI" | cut -d/ -f1)"
  build:
    commands:
      - >-
        if aws ecr describe-images --region "$AWS_DEFAULT_REGION" --repository-name "$REPOSITORY_NAME"
        --image-ids "imageTag=$IMAGE_TAG" >/dev/null 2>&1;
        then echo "$REPOSITORY_URI:$IMAGE_TAG is already in ECR: nothing to build";
        else docker build --file "$DOCKERFILE" --tag "$REPOSITORY_URI:$IMAGE_TAG" .
        && docker push "$REPOSITORY_URI:$IMAGE_TAG";
        fi
"""


@dataclass(frozen=True)
class ImagePipelineDefaults:
    log_retention_days: int = 30


DEFAULTS = ImagePipelineDefaults()


@dataclass(frozen=True, kw_only=True)
class ImagePipelineProps:
    platform_name: str
    """The platform's name: prefix of the repository, project and role names."""
    region: str
    """The platform's region."""
    account_id: str
    """The account the project runs in (CodeBuild assumes the role only for this project)."""
    implementation: str
    """The reference implementation's name (validated: lowercase letters, digits, inner hyphens)."""
    dockerfile: str
    """The Dockerfile's path inside the source archive."""
    image_tag: str
    """The tag the build pushes (ECR tags are immutable: a new source needs a new tag)."""
    source_bucket_name: str
    """Bucket the source archive is uploaded to."""
    source_bucket_arn: str
    """ARN of that bucket (the build role reads only its archive there)."""
    compute_type: str
    """CodeBuild compute type."""
    architecture: Literal["x86_64", "arm64"]
    """The CPU architecture the image is built for: CodeBuild builds it on a machine of that
    architecture, in its Docker-capable standard image (privileged mode runs `docker build`)."""
    keep_images: int
    """ECR keeps the newest N images."""
    timeout_minutes: int
    """Build timeout."""


class ImagePipeline(Construct):
    """Exposes `repository_url`, `project_name` and `source_key`."""

    def __init__(self, scope: Construct, id_: str, *, props: ImagePipelineProps):
        super().__init__(scope, id_)
        name = f"{props.platform_name}-{props.implementation}"
        repository = EcrRepository(
            self,
            "repository",
            name=f"{props.platform_name}/{props.implementation}",
            image_tag_mutability="IMMUTABLE",
            image_scanning_configuration=EcrRepositoryImageScanningConfiguration(scan_on_push=True),
            encryption_configuration=[EcrRepositoryEncryptionConfiguration(encryption_type="KMS")],
        )
        LIFECYCLE_POLICY.add(
            self,
            "keep-newest",
            repository=repository.name,
            policy=json.dumps(
                {
                    "rules": [
                        {
                            "rulePriority": 1,
                            "description": f"keep the newest {props.keep_images} images",
                            "selection": {
                                "tagStatus": "any",
                                "countType": "imageCountMoreThan",
                                "countNumber": props.keep_images,
                            },
                            "action": {"type": "expire"},
                        }
                    ]
                }
            ),
        )

        self._source_key = f"{props.implementation}.zip"
        logs = CloudwatchLogGroup(
            self, "logs", name=f"/aws/codebuild/{name}", retention_in_days=DEFAULTS.log_retention_days
        )
        role = ServiceRole(
            self,
            "role",
            props=ServiceRoleProps(
                name=f"{name}-build",
                service="codebuild.amazonaws.com",
                # Confused-deputy guard: CodeBuild may assume the role only for this account's project.
                trust_conditions={
                    "StringEquals": {"aws:SourceAccount": props.account_id},
                    "ArnLike": {"aws:SourceArn": f"arn:aws:codebuild:{props.region}:{props.account_id}:project/{name}"},
                },
                inline_policy=policy_document(
                    allow(["logs:CreateLogStream", "logs:PutLogEvents"], [logs.arn, f"{logs.arn}:*"]),
                    allow(["s3:GetObject", "s3:GetObjectVersion"], f"{props.source_bucket_arn}/{self._source_key}"),
                    allow(["ecr:GetAuthorizationToken"], "*"),
                    allow(
                        [
                            "ecr:BatchCheckLayerAvailability",
                            "ecr:BatchGetImage",
                            "ecr:CompleteLayerUpload",
                            "ecr:DescribeImages",
                            "ecr:GetDownloadUrlForLayer",
                            "ecr:InitiateLayerUpload",
                            "ecr:PutImage",
                            "ecr:UploadLayerPart",
                        ],
                        repository.arn,
                    ),
                ),
            ),
        )
        variables = {
            "REPOSITORY_URI": repository.repository_url,
            "REPOSITORY_NAME": repository.name,
            "IMAGE_TAG": props.image_tag,
            "DOCKERFILE": props.dockerfile,
        }
        project = CodebuildProject(
            self,
            "project",
            name=name,
            description=f"Builds and pushes the {props.implementation} image",
            service_role=role.arn,
            build_timeout=props.timeout_minutes,
            source=CodebuildProjectSource(
                type="S3",
                location=f"{props.source_bucket_name}/{self._source_key}",
                buildspec=BUILDSPEC,
            ),
            artifacts=CodebuildProjectArtifacts(type="NO_ARTIFACTS"),
            environment=CodebuildProjectEnvironment(
                compute_type=props.compute_type,
                image=CODEBUILD_IMAGES[props.architecture],
                type=CODEBUILD_ENVIRONMENT_TYPES[props.architecture],
                privileged_mode=True,
                image_pull_credentials_type="CODEBUILD",
                environment_variable=[
                    CodebuildProjectEnvironmentEnvironmentVariable(name=key, value=value, type="PLAINTEXT")
                    for key, value in variables.items()
                ],
            ),
            logs_config=CodebuildProjectLogsConfig(
                cloudwatch_logs=CodebuildProjectLogsConfigCloudwatchLogs(group_name=logs.name, status="ENABLED"),
            ),
            depends_on=role.attachments,
        )
        self._repository_url = repository.repository_url
        self._project_name = project.name

    @property
    def source_key(self) -> str:
        """The source archive's key in the source bucket."""
        return self._source_key

    @property
    def repository_url(self) -> str:
        """The ECR repository's URL."""
        return self._repository_url

    @property
    def project_name(self) -> str:
        """The CodeBuild project's name."""
        return self._project_name
