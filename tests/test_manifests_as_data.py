"""Blocks rendered as data (components/rendered.py: Kubernetes objects, Jobs and StorageClass, the
kubernetes provider, a layer's published outputs) are the JSON a construct per block writes (a
`Manifest` per object, a `TerraformOutput` per output, ...), byte for byte, under the same
addresses; only the construct tree is smaller, and the kubernetes bindings are never loaded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
from cdktf import App, TerraformElement, TerraformStack
from cdktf_cdktf_provider_kubernetes.manifest import Manifest
from constructs import Construct

from components.k8s.namespaces import NAMESPACE_DELETE_TIMEOUT_MINUTES
from components.k8s.objects import KubernetesObjects, KubernetesObjectsProps
from components.logical_ids import unique_id
from components.rendered import render_as_data
from stacks import LAYERS
from stacks.platform import synthesize
from tests.cases import FIXTURES, SHIPPED, TEST_SECRETS, profile_source


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


def test_synthesis_never_loads_the_kubernetes_bindings(tmp_path):
    """Every profile synthesizes without importing the kubernetes provider's bindings (whose import
    has Node load that provider's assembly); the AWS and Helm bindings are loaded as before."""
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


def test_object_groups_are_not_a_construct_per_object(synthesized, tmp_path):
    """No Kubernetes object is a `Manifest` construct: groups, Jobs and the for_each objects are all rendered."""
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
    with pytest.raises(TypeError, match="other rendered blocks"):
        KubernetesObjects(stack, "third", props=KubernetesObjectsProps(objects=(namespace,), depends_on=(stack,)))  # type: ignore[arg-type]
