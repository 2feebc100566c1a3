"""Property: profiles generated around the shipped ones are either refused with field-level
problems (never a traceback) or synthesize only names AWS accepts.

Hypothesis runs derandomized (a fixed seed), so every run tries the same profiles and a
failure reproduces; it prints the smallest failing change it finds."""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from profiles import ProfileError, validate_profile
from profiles.loader import PROFILES_DIR
from profiles.models import PlatformConfig
from profiles.naming import DerivedName, name_problems
from stacks import LAYERS
from tests.cases import SHIPPED
from tests.test_naming import names_in_stacks

# Left out of `make check` (a hundred generated profiles, each validated and synthesized); `make test` runs it.
pytestmark = pytest.mark.slow

SHIPPED_DOCS = {name: yaml.safe_load((PROFILES_DIR / f"{name}.yaml").read_text()) for name in SHIPPED}
TOP_LEVEL = set(PlatformConfig.model_fields)

# Names near the edges of the rules: reserved prefixes, lengths at the limits, the platform's
# own namespaces, names one derived name apart; then any name the field pattern allows; then
# near-misses of the pattern (upper case, dots, underscores, empty, too long).
NAMEISH = st.one_of(
    st.sampled_from(
        [
            "xn--gpu",
            "sthree-x",
            "amzn-s3-demo-a",
            "system",
            "kube-system",
            "monitoring",
            "argo",
            "a" * 30,
            "a" * 32,
            "x",
            "x-identity",
            "x-build",
            "tenant-x",
        ]
    ),
    st.from_regex(r"[a-z][a-z0-9-]{0,30}[a-z0-9]", fullmatch=True),
    st.text(alphabet="abz09-_.A", min_size=0, max_size=40),
)
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 10**7), st.text(max_size=12), st.lists(st.integers(0, 3), max_size=2)
)


def leaf_paths(node: Any, path: tuple = ()) -> list[tuple]:
    if isinstance(node, dict):
        return [p for key, value in node.items() for p in leaf_paths(value, (*path, key))] or [path]
    if isinstance(node, list):
        return [p for index, value in enumerate(node) for p in leaf_paths(value, (*path, index))] or [path]
    return [path]


def set_path(doc: dict, path: tuple, value: Any) -> None:
    node: Any = doc
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value


@st.composite
def profiles_near_the_shipped(draw) -> dict:
    doc = copy.deepcopy(SHIPPED_DOCS[draw(st.sampled_from(sorted(SHIPPED_DOCS)))])
    for change in draw(
        st.lists(st.sampled_from(["name", "tenants", "node_group", "argo", "reference"]), min_size=1, max_size=3)
    ):
        if change == "name":
            doc["name"] = draw(NAMEISH)
        elif change == "tenants":
            doc.setdefault("workloads", {})["tenants"] = [{"name": n} for n in draw(st.lists(NAMEISH, max_size=3))]
        elif change == "node_group":
            doc["cluster"]["gpu_node_groups"][0]["name"] = draw(NAMEISH)
        elif change == "argo":
            doc.setdefault("addons", {})["argo_workflows"] = {"enabled": True, "namespace": draw(NAMEISH)}
        else:
            doc.setdefault("build", {})["reference_implementations"] = {draw(NAMEISH): {"project_image": "nccl-tests"}}
    if draw(st.booleans()):  # and sometimes any value in any place
        set_path(doc, draw(st.sampled_from(leaf_paths(doc))), draw(SCALARS))
    return doc


def synthesized_stacks(config: PlatformConfig) -> dict[str, dict]:
    from stacks.platform import synthesize

    with tempfile.TemporaryDirectory() as scratch:
        synthesize(config, f"{scratch}/out", state_dir=Path(scratch) / "state")
        return {layer: json.loads(Path(f"{scratch}/out/stacks/{layer}/cdk.tf.json").read_text()) for layer in LAYERS}


@settings(
    max_examples=100, derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(profiles_near_the_shipped())
def test_a_profile_is_refused_field_by_field_or_synthesizes_valid_names(doc):
    try:
        config = validate_profile(doc)
    except ProfileError as error:
        event("refused")
        assert error.problems
        for problem in error.problems:
            field = problem.split(": ", 1)[0]
            assert field.split(".", 1)[0] in TOP_LEVEL, f"not tied to a profile field: {problem}"
        return
    event("accepted")
    for rule, name in names_in_stacks(synthesized_stacks(config), config.name):
        assert not name_problems(DerivedName(("name",), name, rule, name)), (rule, name)
