"""Build layer: a source bucket, and per reference implementation an ECR repository and a
CodeBuild project that builds and pushes its image."""

from __future__ import annotations

import shlex
from typing import Literal

from cdktf_cdktf_provider_aws.data_aws_caller_identity import DataAwsCallerIdentity
from constructs import Construct

from components.image_pipeline import ImagePipeline, ImagePipelineProps
from components.images import project_image_tag
from components.s3 import SecureBucket, SecureBucketProps
from profiles import PlatformConfig
from profiles.build import ReferenceImplementation, ref_image_tag
from profiles.built_images import build_implementations, image_architecture, tag_for_architecture
from profiles.storage import BucketLifecycle
from stacks.contracts import BuildOutputs
from stacks.layer import LayerStack, StateLocation


class BuildStack(LayerStack):
    def __init__(self, scope: Construct, layer: str, *, config: PlatformConfig, state: StateLocation):
        super().__init__(scope, layer, config=config, state=state)
        self.use_aws_provider()
        build = config.build
        # The profile's reference implementations and the project images the enabled add-ons run.
        implementations = build_implementations(config)
        account = DataAwsCallerIdentity(self, "account").account_id
        # Source archives are re-uploadable: no prevent_destroy, short version history.
        source = SecureBucket(
            self,
            "source-bucket",
            props=SecureBucketProps(
                bucket_name=f"{config.name}-build-src-{account}",
                prevent_destroy=False,
                lifecycle=BucketLifecycle(noncurrent_version_expiration_days=7),
            ),
        )
        pipelines = {
            impl: ImagePipeline(
                self,
                f"image-{impl}",
                props=ImagePipelineProps(
                    platform_name=config.name,
                    region=config.region,
                    account_id=account,
                    implementation=impl,
                    dockerfile="Dockerfile" if spec.project_image else spec.dockerfile,
                    image_tag=image_tag(spec, image_architecture(config, impl)),
                    source_bucket_name=source.name,
                    source_bucket_arn=source.arn,
                    compute_type=build.compute_type,
                    architecture=image_architecture(config, impl),
                    keep_images=build.keep_images,
                    timeout_minutes=build.build_timeout_minutes,
                ),
            )
            for impl, spec in implementations.items()
        }
        self.outputs = BuildOutputs(
            repository_urls={impl: p.repository_url for impl, p in pipelines.items()},
            image_tags={
                impl: image_tag(spec, image_architecture(config, impl)) for impl, spec in implementations.items()
            },
            project_names={impl: p.project_name for impl, p in pipelines.items()},
            source_bucket_name=source.name,
            build_commands={
                impl: build_command(
                    impl,
                    spec,
                    source_key=pipelines[impl].source_key,
                    bucket=source.name,
                    project=pipelines[impl].project_name,
                    region=config.region,
                )
                for impl, spec in implementations.items()
            },
        )
        self.publish(self.outputs)


def image_tag(spec: ReferenceImplementation, architecture: Literal["x86_64", "arm64"]) -> str:
    """A project image: its pinned versions and Dockerfile hash; a repository: its ref; either
    marked when built for arm64 (profiles/built_images.py)."""
    source = project_image_tag(spec.project_image) if spec.project_image else ref_image_tag(spec.ref)
    return tag_for_architecture(source, architecture)


def build_command(
    impl: str, spec: ReferenceImplementation, *, source_key: str, bucket: str, project: str, region: str
) -> str:
    """Shell commands that upload the source archive and start the build (run from the project root)."""
    q = shlex.quote  # profile text never reaches the shell unquoted
    if spec.project_image:
        archive = f"(cd {q(f'images/{spec.project_image}')} && zip -qr {q(f'../../{source_key}')} .)"
    else:
        checkout = q(f"{impl}-src")
        archive = (
            f"git clone --depth 1 --branch {q(spec.ref)} {q(spec.repository_url or '')} {checkout} && "
            f"(cd {checkout} && zip -qr {q(f'../{source_key}')} . -x '.git/*')"
        )
    return (
        f"{archive} && aws s3 cp {q(source_key)} {q(f's3://{bucket}/{source_key}')} && "
        f"aws codebuild start-build --region {q(region)} --project-name {q(project)}"
    )
