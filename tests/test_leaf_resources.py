"""Leaf AWS resources (components/leaf_resources.py) are rendered as data into one element per
layer, and write what the binding's construct writes. The byte comparison of every profile is in
tests/test_manifests_as_data.py; these are the paths no profile reaches, and the refusals."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
from collections.abc import Callable
from unittest import mock

import pytest
from cdktf import App, TerraformIterator, TerraformStack
from cdktf_cdktf_provider_aws.iam_role import IamRole
from constructs import Construct

import addons
import components
from components.leaf_resources import LeafType
from components.rendered import render_as_data

LIFECYCLE = LeafType("aws_s3_bucket_lifecycle_configuration", "S3BucketLifecycleConfiguration")
ATTACHMENT = LeafType("aws_iam_role_policy_attachment", "IamRolePolicyAttachment")
INLINE = LeafType("aws_iam_role_policy", "IamRolePolicy")


def _nested_blocks_and_none(stack: TerraformStack) -> None:
    # Multi-word arguments inside a list of blocks: jsii would drop them from a dict (the binding
    # reads camelCase); None inside a block is left out, as the binding leaves it out.
    LIFECYCLE.add(
        Construct(stack, "bucket"),
        "lifecycle",
        bucket="b",
        rule=[
            {
                "id": "r",
                "status": "Enabled",
                "filter": [{"prefix": ""}],
                "noncurrent_version_expiration": [{"noncurrent_days": 30, "newer_noncurrent_versions": None}],
                "abort_incomplete_multipart_upload": [{"days_after_initiation": 7}],
            }
        ],
    )


def _dependencies_both_ways(stack: TerraformStack) -> None:
    # A leaf after a typed resource and after another leaf; a typed resource after a leaf.
    role = IamRole(stack, "role", name="r", assume_role_policy="{}")
    scope = Construct(stack, "role-policies")
    attachment = ATTACHMENT.add(scope, "managed", role=role.name, policy_arn="arn:aws:iam::aws:policy/P")
    INLINE.add(scope, "inline", role=role.id, name="r", policy="{}", depends_on=(role, attachment))
    IamRole(stack, "after", name="after", assume_role_policy="{}", depends_on=[attachment])


def _leaves_at_the_stack_and_deep(stack: TerraformStack) -> None:
    ATTACHMENT.add(stack, "at-top", role="r", policy_arn="p")
    ATTACHMENT.add(Construct(Construct(stack, "a"), "b"), "deep", role="r", policy_arn="p")


def _an_id_with_a_path_separator(stack: TerraformStack) -> None:
    # constructs rewrites "/" in an id to "--": the address must be the construct's, or moving
    # between the JSON and the HCL export would replace the resource.
    ATTACHMENT.add(Construct(stack, "role"), "service-role/AmazonEKS", role="r", policy_arn="p")


MAP_OF_BLOCKS = LeafType("aws_lexv2models_bot_version", "Lexv2ModelsBotVersion", module="lexv2_models_bot_version")


def _a_map_of_blocks(stack: TerraformStack) -> None:
    # A map whose values are blocks: each value is made the block's struct, the keys kept.
    MAP_OF_BLOCKS.add(
        stack,
        "version",
        bot_id="b",
        locale_specification={"en_US": {"source_bot_version": "DRAFT"}},
    )


@pytest.mark.parametrize(
    ("build", "nested"),
    [
        (_nested_blocks_and_none, False),
        (_dependencies_both_ways, False),
        (_leaves_at_the_stack_and_deep, False),
        (_leaves_at_the_stack_and_deep, True),
        (_an_id_with_a_path_separator, False),
        (_a_map_of_blocks, False),
    ],
    ids=lambda value: value.__name__.strip("_") if callable(value) else None,
)
def test_leaves_write_what_their_constructs_write(build: Callable[[TerraformStack], None], nested: bool):
    def synthesized_json() -> dict:
        app = App()
        stack = TerraformStack(Construct(app, "stage") if nested else app, "layer")
        build(stack)
        return stack.to_terraform()

    assert render_as_data()
    rendered = synthesized_json()
    with mock.patch.dict(os.environ, {"GPU_PLATFORM_PLAIN_CONSTRUCTS": "1"}):
        constructed = synthesized_json()
    assert json.dumps(rendered, sort_keys=True) == json.dumps(constructed, sort_keys=True)
    if build is _nested_blocks_and_none:  # the case a dict handed to jsii gets wrong
        (lifecycle,) = constructed["resource"]["aws_s3_bucket_lifecycle_configuration"].values()
        assert lifecycle["rule"][0]["noncurrent_version_expiration"] == [{"noncurrent_days": 30}]
        assert lifecycle["rule"][0]["abort_incomplete_multipart_upload"] == [{"days_after_initiation": 7}]
    if build is _a_map_of_blocks:
        (version,) = constructed["resource"]["aws_lexv2models_bot_version"].values()
        assert version["locale_specification"] == {"en_US": {"source_bot_version": "DRAFT"}}
    if build is _dependencies_both_ways:
        (after,) = [body for body in rendered["resource"]["aws_iam_role"].values() if body["name"] == "after"]
        (attachment_id,) = rendered["resource"]["aws_iam_role_policy_attachment"]
        assert after["depends_on"] == [f"aws_iam_role_policy_attachment.{attachment_id}"]


def test_a_layers_leaves_are_one_element():
    """However many leaves a layer has, cdktf holds one element for them (each element is a round
    trip to Node, and more to name it)."""
    stack = TerraformStack(App(), "layer")
    before = len(stack.node.find_all())
    for index in range(5):
        ATTACHMENT.add(Construct(stack, f"role-{index}"), "managed", role="r", policy_arn="p")
    assert len(stack.node.find_all()) == before + 5 + 1  # the five scopes and one element
    assert len(stack.to_terraform()["resource"]["aws_iam_role_policy_attachment"]) == 5


def test_two_leaves_of_one_id_in_one_scope_are_refused():
    """As cdktf refuses two constructs of one id: the second would silently replace the first."""
    scope = Construct(TerraformStack(App(), "layer"), "role")
    ATTACHMENT.add(scope, "managed", role="r", policy_arn="p")
    with pytest.raises(ValueError, match="already a construct at layer/role/managed"):
        INLINE.add(scope, "managed", role="r", policy="{}")


def test_a_leaf_refuses_another_stacks_dependency():
    app = App()
    role = IamRole(TerraformStack(app, "cluster"), "role", name="r", assume_role_policy="{}")
    with pytest.raises(ValueError, match="of the cluster stack"):
        ATTACHMENT.add(TerraformStack(app, "addons"), "managed", role="r", policy_arn="p", depends_on=(role,))


def test_a_leaf_refuses_meta_arguments_and_unknown_arguments():
    stack = TerraformStack(App(), "layer")
    with pytest.raises(TypeError, match="takes no count"):
        ATTACHMENT.add(stack, "counted", role="r", policy_arn="p", count=2)
    with (
        mock.patch.dict(os.environ, {"GPU_PLATFORM_PLAIN_CONSTRUCTS": "1"}),
        pytest.raises(TypeError, match="has no argument polcy_arn"),
    ):
        ATTACHMENT.add(stack, "misspelt", role="r", polcy_arn="p")


def test_a_leaf_refuses_a_token_in_its_id():
    """cdktf refuses it too: the logical id would hold the token's number, which depends on the
    order tokens were made in."""
    stack = TerraformStack(App(), "layer")
    role = IamRole(stack, "role", name="r", assume_role_policy="{}")
    with pytest.raises(ValueError, match="holds a token"):
        ATTACHMENT.add(stack, f"attach-{role.name}", role="r", policy_arn="p")


def test_a_leaf_refuses_what_is_not_plain_json():
    """A dynamic block's iterator would be written as an expression where Terraform's JSON syntax
    wants a block; the binding writes a `dynamic` block. Refused in both ways, naming the place."""
    stack = TerraformStack(App(), "layer")
    iterator = TerraformIterator.from_list(["a", "b"])
    dynamic = iterator.dynamic({"id": iterator.value, "status": "Enabled"})
    with pytest.raises(TypeError, match="rule is a"):
        LIFECYCLE.add(stack, "dynamic", bucket="b", rule=dynamic)
    with pytest.raises(TypeError, match=r"rule\[0\]\.filter is a"):
        LIFECYCLE.add(stack, "object", bucket="b", rule=[{"id": "r", "filter": object()}])


def test_the_construct_way_names_a_misspelt_block_argument_and_a_block_given_bare():
    """Both would be written silently as data; the construct way (run over every profile by the
    byte comparison) names them."""
    stack = TerraformStack(App(), "layer")
    with mock.patch.dict(os.environ, {"GPU_PLATFORM_PLAIN_CONSTRUCTS": "1"}):
        with pytest.raises(TypeError, match="has no argument filtr"):
            LIFECYCLE.add(stack, "misspelt", bucket="b", rule=[{"id": "r", "status": "Enabled", "filtr": []}])
        with pytest.raises(TypeError, match="given as one dict"):
            LIFECYCLE.add(stack, "bare", bucket="b", rule={"id": "r", "status": "Enabled"})


def declared_leaf_types() -> dict[str, LeafType]:
    """Every LeafType a module of the app declares (also used by test_manifests_as_data's check of
    the bindings synthesis loads)."""
    declared: dict[str, LeafType] = {}
    for package in (components, addons):
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            for value in vars(importlib.import_module(module.name)).values():
                if isinstance(value, LeafType):
                    declared[value.terraform_type] = value
    return declared


def test_every_declared_leaf_names_its_bindings_class():
    """The construct way imports the type's bindings module and takes the class by name: a wrong
    name fails only there (the HCL export), so each is checked here."""
    declared = declared_leaf_types()
    assert len(declared) >= 20, sorted(declared)
    for leaf in declared.values():
        construct = getattr(importlib.import_module(leaf.binding_module), leaf.construct)
        assert leaf.terraform_type == construct.TF_RESOURCE_TYPE, leaf
