"""Blocks rendered as data (components/rendered.py: Kubernetes objects, Jobs and StorageClass, the
kubernetes provider, a layer's published outputs) are the JSON a construct per block writes (a
`Manifest` per object, a `TerraformOutput` per output, ...), byte for byte, under the same
addresses; only the construct tree is smaller, and the kubernetes bindings are never loaded."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import pytest
from cdktf import (
    App,
    TerraformCount,
    TerraformDataSource,
    TerraformElement,
    TerraformIterator,
    TerraformResource,
    TerraformStack,
)
from constructs import Construct

from components.k8s.for_each import ObjectsForEachProps, objects_for_each
from components.k8s.job import CompletedJob, CompletedJobProps
from components.k8s.namespaces import NAMESPACE_DELETE_TIMEOUT_MINUTES
from components.k8s.objects import KubernetesObjects, KubernetesObjectsProps
from components.k8s.storage_class import default_storage_class
from components.logical_ids import unique_id
from components.rendered import render_as_data
from stacks import LAYERS
from stacks.platform import synthesize
from tests.cases import FIXTURES, SHIPPED, TEST_SECRETS, profile_source
from tests.test_leaf_resources import declared_leaf_types


@pytest.mark.parametrize(
    "path",
    [
        ["single"],
        ["with.dots and spaces"],
        ["tenant-ml-team", "namespace-ml-team"],
        ["group", "Default", "object"],  # hidden from the id and the hash
        ["group", "Resource", "object"],  # hashed, not shown
        ["tenant-ml", "ml", "x"],  # a component its predecessor ends with is not repeated
        ["a" * 150, "b" * 150],  # the readable part is cut at 240 characters
        ["c" * 300],  # one component too long to be the id by itself
    ],
)
def test_logical_ids_are_cdktfs(path):
    stack = TerraformStack(App(), "layer")
    scope: Construct = stack
    for component in path[:-1]:
        scope = Construct(scope, component)
    element = TerraformElement(scope, path[-1], "kubernetes_manifest")
    assert unique_id(path) == element.friendly_unique_id


@pytest.mark.parametrize("profile", SHIPPED + FIXTURES)
def test_json_is_byte_identical_with_a_manifest_per_object(synthesized, profile):
    """The session's synthesis renders objects as data; the same profile with a `Manifest` per
    object writes the same bytes in every layer."""
    assert render_as_data()
    folder = synthesized.folder(profile)
    config = synthesized.configs[profile]
    # The same depth below the output root as the session's, so the relative state paths match.
    plain_root = folder.parent.parent / f"{folder.parent.name}-plain"
    with mock.patch.dict(os.environ, {**TEST_SECRETS, "GPU_PLATFORM_PLAIN_CONSTRUCTS": "1"}):
        assert not render_as_data()
        synthesize(config, str(plain_root / profile), state_dir=plain_root / "state" / config.name)
    for layer in LAYERS:
        data_json = (folder / "stacks" / layer / "cdk.tf.json").read_bytes()
        plain_json = (plain_root / profile / "stacks" / layer / "cdk.tf.json").read_bytes()
        assert data_json == plain_json, f"{profile} {layer}: the two ways differ"


SYNTH_AND_LIST_BINDINGS = """
import sys, toolchain
toolchain.prepare()
from pathlib import Path
from profiles import load_profile
from stacks.platform import synthesize
for index, source in enumerate(sys.argv[2:]):
    config = load_profile(source)
    synthesize(config, f"{sys.argv[1]}/{index}", state_dir=Path(sys.argv[1]) / "state" / str(index))
print(sorted(name for name in sys.modules if name.startswith("cdktf_cdktf_provider_")))
"""


# A process of its own (4 s): `make test` runs it; what `make check` can break here, the JSON, the
# byte comparison above checks in-process.
@pytest.mark.slow
def test_synthesis_never_loads_the_kubernetes_bindings_nor_a_leaf_types(tmp_path):
    """Every profile synthesizes without importing the kubernetes provider's bindings (whose import
    has Node load that provider's assembly), nor the binding module of an AWS type rendered as data
    (components/leaf_resources.py: 3-40 ms each, and a JavaScript module Node loads at the first
    creation); the AWS and Helm bindings are loaded as before."""
    sources = [profile_source(profile) for profile in SHIPPED + FIXTURES]
    env = {**os.environ, **TEST_SECRETS}
    env.pop("GPU_PLATFORM_PLAIN_CONSTRUCTS", None)
    done = subprocess.run(
        [sys.executable, "-c", SYNTH_AND_LIST_BINDINGS, str(tmp_path), *sources],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parents[1],
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded = done.stdout.strip().splitlines()[-1]
    assert "cdktf_cdktf_provider_aws" in loaded and "cdktf_cdktf_provider_helm" in loaded, loaded
    assert "cdktf_cdktf_provider_kubernetes" not in loaded, loaded
    modules = set(ast.literal_eval(loaded))
    assert "cdktf_cdktf_provider_aws.iam_role" in modules, modules  # typed constructs still import theirs
    leaves = {leaf.binding_module for leaf in declared_leaf_types().values()}
    assert not leaves & modules, sorted(leaves & modules)


def test_object_groups_are_not_a_construct_per_object(synthesized, tmp_path):
    """No Kubernetes object is a `Manifest` construct: groups, Jobs and the for_each objects are all rendered."""
    # Imported here, not at collection: the import has Node load the kubernetes provider's
    # assembly (about a second of each `make check` worker's collection otherwise).
    from cdktf_cdktf_provider_kubernetes.manifest import Manifest

    profile = SHIPPED[0]
    config = synthesized.configs[profile]
    platform = synthesize(config, str(tmp_path / profile), state_dir=tmp_path / "state")
    for layer in ("addons", "workloads"):
        stack = getattr(platform, layer)
        constructs = sum(isinstance(node, Manifest) for node in stack.node.find_all())
        written = len(synthesized.resources(profile, layer, "kubernetes_manifest"))
        assert written > 20 and constructs == 0, (layer, constructs, written)


def test_rendered_objects_wait_for_their_namespace_and_other_groups(tmp_path: Path):
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "team"}}
    app = App(outdir=str(tmp_path))
    stack = TerraformStack(app, "layer")
    first = KubernetesObjects(stack, "first", props=KubernetesObjectsProps(objects=(namespace, config_map)))
    KubernetesObjects(
        stack,
        "second",
        props=KubernetesObjectsProps(
            objects=({**config_map, "metadata": {"name": "d", "namespace": "team"}},),
            depends_on=(first.dependable("namespace-team"),),
        ),
    )
    resources = stack.to_terraform()["resource"]["kubernetes_manifest"]
    ns_id, cm_id, other_id = (
        unique_id(p)
        for p in (["first", "namespace-team"], ["first", "configmap-team-c"], ["second", "configmap-team-d"])
    )
    assert set(resources) == {ns_id, cm_id, other_id}
    assert resources[ns_id]["timeouts"] == {"delete": f"{NAMESPACE_DELETE_TIMEOUT_MINUTES}m"}
    assert resources[cm_id]["depends_on"] == [f"kubernetes_manifest.{ns_id}"]
    assert resources[other_id]["depends_on"] == [f"kubernetes_manifest.{ns_id}"]
    assert resources[cm_id]["//"]["metadata"] == {"path": "layer/first/configmap-team-c", "uniqueId": cm_id}
    with pytest.raises(TypeError, match="resources and data sources"):
        KubernetesObjects(stack, "third", props=KubernetesObjectsProps(objects=(namespace,), depends_on=(stack,)))  # type: ignore[arg-type]


_NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
_JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"namespace": "team"},
    "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}},
}


def _job(scope: Construct, *, after: tuple = ()) -> CompletedJob:
    return CompletedJob(
        scope, "setup", props=CompletedJobProps(job=_JOB, name="setup", timeout_minutes=5, depends_on=after)
    )


def _job_without_dependencies(stack: TerraformStack) -> None:
    _job(stack)


def _job_after_a_data_source_and_counted_resources(stack: TerraformStack) -> None:
    download = TerraformDataSource(stack, "download", terraform_resource_type="http")
    counted = TerraformResource(stack, "counted", terraform_resource_type="terraform_data", count=TerraformCount.of(2))
    each = TerraformResource(
        stack, "each", terraform_resource_type="terraform_data", for_each=TerraformIterator.from_list(["a", "b"])
    )
    _job(stack, after=(download, counted, each))


def _objects_after_a_typed_resource_and_a_job(stack: TerraformStack) -> None:
    first = TerraformResource(stack, "first", terraform_resource_type="terraform_data")
    job = _job(stack)
    KubernetesObjects(
        stack, "objects", props=KubernetesObjectsProps(objects=(_NAMESPACE,), depends_on=(first, job.resource))
    )


def _typed_blocks_after_rendered_ones(stack: TerraformStack) -> None:
    job = _job(stack)
    each = objects_for_each(
        stack, "each", props=ObjectsForEachProps(for_each="${{}}", manifest="${each.value}", depends_on=(job.resource,))
    )
    TerraformResource(stack, "after", terraform_resource_type="terraform_data", depends_on=[job.resource, each])


def _stack_below_a_construct(stack: TerraformStack) -> None:
    """The stack is built under a construct of the App (not the layers' layout): cdktf names blocks
    from the stack down, and a typed block depending on a rendered one writes cdktf's name."""
    storage_class = default_storage_class(stack)
    _job(stack, after=(storage_class,))
    TerraformResource(stack, "after", terraform_resource_type="terraform_data", depends_on=[storage_class])


@pytest.mark.parametrize(
    ("build", "nested"),
    [
        (_job_without_dependencies, False),
        (_job_after_a_data_source_and_counted_resources, False),
        (_objects_after_a_typed_resource_and_a_job, False),
        (_typed_blocks_after_rendered_ones, False),
        (_stack_below_a_construct, True),
    ],
    ids=lambda value: value.__name__.strip("_") if callable(value) else None,
)
def test_rendered_blocks_off_the_profiles_paths_write_what_their_constructs_write(
    build: Callable[[TerraformStack], None], nested: bool
):
    """Paths no profile reaches (so the byte comparison above cannot see them), built both ways."""

    def synthesized_json() -> str:
        app = App()
        stack = TerraformStack(Construct(app, "stage") if nested else app, "layer")
        build(stack)
        return json.dumps(stack.to_terraform(), sort_keys=True)

    assert render_as_data()
    rendered = synthesized_json()
    with mock.patch.dict(os.environ, {"GPU_PLATFORM_PLAIN_CONSTRUCTS": "1"}):
        assert not render_as_data()
        constructed = synthesized_json()
    assert rendered == constructed


def test_a_rendered_block_refuses_to_depend_on_another_stacks_block():
    """Its address would name nothing in its own stack (Terraform: reference to undeclared resource)."""
    app = App()
    storage_class = default_storage_class(TerraformStack(app, "addons"))
    with pytest.raises(ValueError, match="of the addons stack"):
        _job(TerraformStack(app, "workloads"), after=(storage_class,))


def _declared(stack: dict) -> set[str]:
    resources = {f"{kind}.{name}" for kind, items in stack.get("resource", {}).items() for name in items}
    data = {f"data.{kind}.{name}" for kind, items in stack.get("data", {}).items() for name in items}
    return resources | data | {f"module.{name}" for name in stack.get("module", {})}


@pytest.mark.parametrize("profile", SHIPPED + FIXTURES)
def test_every_depends_on_names_a_block_of_its_own_stack(synthesized, profile):
    """What `terraform validate` would check, for the layers it cannot validate here (the helm and
    kubernetes providers have no binary on these machines; `terraform init` does not resolve
    depends_on): rendered blocks write their depends_on as addresses computed in Python."""
    for layer in LAYERS:
        stack = synthesized.stack(profile, layer)
        declared = _declared(stack)
        for kind, items in stack.get("resource", {}).items():
            for name, body in items.items():
                missing = [address for address in body.get("depends_on", []) if address not in declared]
                assert not missing, f"{profile} {layer} {kind}.{name} depends on undeclared {missing}"


def test_a_layer_stack_is_a_child_of_the_app():
    """Rendered objects and outputs name themselves by their path below the App's child: a layer
    under any other construct is refused before it could write addresses cdktf does not use."""
    from profiles import load_profile
    from stacks.layer import LayerStack, StateLocation

    with pytest.raises(TypeError, match="child of the App"):
        LayerStack(
            Construct(App(), "stage"),
            "addons",
            config=load_profile(SHIPPED[0]),
            state=StateLocation(local_dir="state"),
        )
