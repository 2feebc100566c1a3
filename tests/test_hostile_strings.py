"""Property: profile text is data. A hostile string put into any string field of a profile (the
model's fields, walked from PlatformConfig, mapping keys included) is either refused naming that
field, or is text that no output can read as code: no Terraform template sequence (`${`, `%{`:
Terraform JSON evaluates them in every string, keys included), nothing that ends an HCL string or
heredoc (a double quote, a backslash, a line break), no NUL.

The binding-free validation path only (no synthesis): a few seconds. Hypothesis runs derandomized,
so a failure reproduces; the one synthesized example is test_accepted_odd_text_stays_data_in_json_and_hcl.
"""

from __future__ import annotations

import copy
import functools
import json
import tempfile
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from profiles import ProfileError, validate_profile
from profiles.loader import parse_profile_text, resolve
from profiles.models import PlatformConfig
from tests.cases import ALL_PROFILES, profile_source

KEY = "{key}"  # path steps: a mapping's key, a mapping's value, a list's item
VALUE = "{value}"
ITEM = "[]"

# Hostile text: template sequences, heredoc ends, quotes, backslashes, NUL, line breaks and
# Unicode's line separators, and harmless-looking text around them.
HOSTILE = [
    '${file("/etc/hostname")}',
    "${path.cwd}",
    "%{ if true }x%{ endif }",
    "a\nEOF\nb",
    "\nEOF\n",
    'x\n  EOF\ndata "external" "x" { program = ["id"] }\n',
    'a"b',
    '" == "" ? file("/etc/hostname") : "',
    "a\\",
    'a\\"b',
    "a\x00b",
    "a\rb",
    "a\u2028b",
    "a\u2029b",
    "a\u0085b",
    "EOF",
    "a$",
    "%",
    "$${x}",
    "'; id #",
]
TEXT = st.one_of(
    st.sampled_from(HOSTILE),
    st.lists(st.sampled_from(["${", "%{", "}", "$", "%", "{", '"', "\\", "\n", "EOF", "\x00", "\u2028", "a", "-", " "]))
    .map("".join)
    .filter(bool),
    st.text(min_size=1, max_size=12),
)


def is_inert(text: str) -> bool:
    """Text no output reads as code, judged independently of the profile's own rules."""
    return not any(part in text for part in ("${", "%{", '"', "\\", "\n", "\r", "\x00"))


def _is_text(annotation: Any) -> bool:
    annotation = typing.get_args(annotation)[0] if typing.get_origin(annotation) is typing.Annotated else annotation
    if annotation is str:
        return True
    return typing.get_origin(annotation) is typing.Literal and all(
        isinstance(a, str) for a in typing.get_args(annotation)
    )


def string_fields(annotation: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The path of every string the model takes (a field, a list item, a mapping key or value)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return string_fields(typing.get_args(annotation)[0], path)
    if _is_text(annotation):
        return [path]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [
            found
            for name, field in annotation.model_fields.items()
            for found in string_fields(field.annotation, (*path, name))
        ]
    if origin in (list, tuple, set, frozenset):
        return [found for arg in typing.get_args(annotation) for found in string_fields(arg, (*path, ITEM))]
    if origin is dict:
        key, value = typing.get_args(annotation)
        return [*([(*path, KEY)] if _is_text(key) else []), *string_fields(value, (*path, VALUE))]
    if origin in (typing.Union, types.UnionType):
        return sorted({found for arg in typing.get_args(annotation) for found in string_fields(arg, path)})
    return []


FIELDS = sorted(set(string_fields(PlatformConfig)))


@functools.cache
def _bases() -> list[dict]:
    return [parse_profile_text(resolve(profile_source(name)).read_bytes(), name) for name in ALL_PROFILES]


def placed(path: tuple[str, ...], value: str) -> tuple[dict, str]:
    """A shipped or fixture profile with `value` at `path` (one that already has the most of the
    path), and the dotted path the loader names it by. Missing mappings and lists are made; a new
    list item of a model starts empty (the model's own required fields then refuse it too)."""

    def reached(doc: Any) -> int:
        node: Any = doc
        for count, step in enumerate(path):
            if step in (KEY, VALUE, ITEM) and node:
                node = next(iter(node.values())) if isinstance(node, dict) else node[0]
            elif isinstance(node, dict) and step in node:
                node = node[step]
            else:
                return count
        return len(path)

    doc = copy.deepcopy(max(_bases(), key=reached))
    node: Any = doc
    dotted: list[str] = []
    for index, step in enumerate(path):
        last, after = index == len(path) - 1, path[index + 1] if index + 1 < len(path) else None
        empty: Any = [] if after == ITEM else {}
        if step == KEY:  # a new entry under the hostile key, its value copied from an existing one
            node[value] = copy.deepcopy(next(iter(node.values()), "v"))
            dotted.append(value)
        elif step == VALUE:
            key = next(iter(node), "x")
            node[key] = value if last else node.get(key, empty)
            node, _ = node[key], dotted.append(key)
        elif step == ITEM:
            if last:
                node[:] = [value]
            elif not node:
                node.append(empty)
            node, _ = node[0], dotted.append("0")
        else:
            node[step] = value if last else node.get(step) or empty
            node, _ = node[step], dotted.append(step)
    return doc, ".".join(dotted)


def check(path: tuple[str, ...], value: str) -> str:
    doc, dotted = placed(path, value)
    try:
        validate_profile(doc)
    except ProfileError as error:
        if any(problem.startswith(f"{dotted}: ") for problem in error.problems):
            return "refused"
        assert is_inert(value), f"{dotted} = {value!r}: refused, but not for this field: {error.problems}"
        return "refused elsewhere"
    assert is_inert(value), f"{dotted} = {value!r} was accepted"
    return "accepted"


def test_every_string_field_of_the_model_is_walked():
    """The walk finds the fields a reviewer would name (so a new model type is not skipped)."""
    dotted = {".".join(path) for path in FIELDS}
    for expected in (
        "name",
        "tags.{key}",
        "tags.{value}",
        "cluster.admin_principal_arns.[]",
        "cluster.gpu_node_groups.[].labels.{key}",
        "build.reference_implementations.{key}",
        "build.reference_implementations.{value}.project_image",
        "addons.jupyterhub.oidc.scopes.[]",
        "addons.trainer.torch_image",
        "workloads.tenants.[].editors.[]",
        "state.key_prefix",
    ):
        assert expected in dotted, expected
    assert len(FIELDS) > 60


@pytest.mark.parametrize("path", FIELDS, ids=[".".join(p) for p in FIELDS])
def test_template_sequences_and_string_ends_are_refused_in_every_string_field(path):
    """The hostile strings that are code somewhere are refused in every field, naming it."""
    for value in HOSTILE:
        outcome = check(path, value)
        if not is_inert(value):
            assert outcome == "refused", (path, value)


@settings(
    max_examples=300, derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.sampled_from(FIELDS), TEXT)
def test_any_text_in_any_string_field_is_refused_there_or_inert(path, value):
    check(path, value)


def test_accepted_odd_text_stays_data_in_json_and_hcl():
    """The text the free fields accept (a lone EOF, a trailing $ or %, a quote mark of another
    kind) comes out of synthesis as plain text: in no string of any layer inside a template
    sequence, and in none that cdktf's HCL renderer would not keep as data."""
    from components.expressions import template_segments
    from operate.hcl import hcl_hazards
    from stacks import LAYERS
    from stacks.platform import synthesize

    odd = ["EOF", "user$", "%", "o'neil", "`id`"]
    doc = copy.deepcopy(next(d for d in _bases() if d.get("addons", {}).get("jupyterhub", {}).get("enabled")))
    jupyterhub = doc["addons"]["jupyterhub"]
    # Usernames are ASCII names now (addons/jupyterhub); an OAuth client id still takes any VSCHAR
    # but space (RFC 6749 A.1), so the odd text rides there, and EOF in the allow-list.
    jupyterhub["allowed_users"] = ["EOF"]
    jupyterhub["oidc"]["client_id"] = "".join(odd[1:])
    config = validate_profile(doc)
    with tempfile.TemporaryDirectory() as scratch:
        synthesize(config, f"{scratch}/out", state_dir=Path(scratch) / "state")
        stacks = {layer: json.loads(Path(f"{scratch}/out/stacks/{layer}/cdk.tf.json").read_text()) for layer in LAYERS}
    carried = 0

    def strings(node: Any) -> list[str]:
        if isinstance(node, str):
            return [node]
        if isinstance(node, dict):
            return [s for key, value in node.items() for s in (*strings(key), *strings(value))]
        if isinstance(node, list):
            return [s for item in node for s in strings(item)]
        return []

    for layer, stack in stacks.items():
        assert list(hcl_hazards(stack)) == [], layer
        for text in strings(stack):
            for sequence, part in template_segments(text):
                if sequence:
                    assert not any(word in part for word in odd[1:]), (layer, part)
            carried += any(word in text for word in odd[1:])
    assert carried, "the accepted text reached no layer: the example tests nothing"
