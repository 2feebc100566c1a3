"""A pydantic validation error as the line a user reads: `path.to.field: message (got value;
allowed: ...)`, with the allowed keys, the choices and a did-you-mean where there is one."""

from __future__ import annotations

import difflib
import re
import reprlib
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_core import ErrorDetails

from profiles.base import PATTERN_WORDS, FieldProblem, did_you_mean
from profiles.models import PlatformConfig


@dataclass(frozen=True)
class _Problem:
    loc: list[str | int]
    message: str
    value: Any
    allowed: str = ""


# The profile models are strict (profiles.base.Strict): YAML's value is taken as written, never
# converted, so a quoted "no" is text, not false, and "3" or 3.0 is not a whole number. What each
# refused type error allows, in the words of a profile.
TYPE_WORDS = {
    "bool_type": "true or false, unquoted (a quoted 'no' or 'false' is text)",
    "int_type": "a whole number, unquoted (e.g. 3, not '3', 3.0 or true)",
    "int_from_float": "a whole number, unquoted (e.g. 3, not '3', 3.0 or true)",
    "float_type": "a number, unquoted",
    "string_type": "text; quote a value YAML would read as a number, true/false or null (e.g. '3')",
    "list_type": "a list, e.g. [a, b]",
    "dict_type": "a mapping of key: value lines",
    "model_type": "a mapping of settings",
    "model_attributes_type": "a mapping of settings",
    "datetime_type": "an ISO 8601 time with its zone, e.g. 2027-03-01T11:30:00Z",
}


def _problem(error: ErrorDetails) -> _Problem:
    """Where the error is, what it says, the offending value and what is allowed."""
    loc = [part for part in error["loc"] if not _is_union_tag(part)]
    message = error["msg"].removeprefix("Value error, ")
    if loc and loc[-1] == "[key]":  # pydantic's marker for a bad mapping key
        loc, message = loc[:-1], f"bad key: {message}"
    prefix = "bad key: " if message.startswith("bad key: ") else ""
    value = error.get("input")
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, FieldProblem):
        return _Problem([*loc, *cause.field], str(cause), cause.value, cause.allowed)
    if error["type"] == "string_pattern_mismatch":
        pattern = str((error.get("ctx") or {}).get("pattern", ""))
        words = PATTERN_WORDS.get(pattern, "a value of the form the field's description gives")
        return _Problem(loc, f"{prefix}not in the expected form", value, words)
    if error["type"] == "extra_forbidden":
        allowed = _allowed_keys(error["loc"][:-1])
        key = loc[-1] if loc else None
        message = _with_hint("unknown setting", key, allowed)
        if message == "unknown setting" and isinstance(key, str):
            message = _misplaced_hint(key, [part for part in loc[:-1] if isinstance(part, str)])
        return _Problem(loc, message, value, ", ".join(allowed))
    if error["type"] in ("literal_error", "enum"):
        choices = _quoted_choices(str((error.get("ctx") or {}).get("expected", "")))
        message = _with_hint(f"{prefix}not one of the allowed values", value, choices)
        return _Problem(loc, message, value, ", ".join(choices))
    if error["type"] == "union_tag_invalid":  # e.g. capacity.type: the discriminator names the field
        ctx = error.get("ctx") or {}
        choices = _quoted_choices(str(ctx.get("expected_tags", "")))
        field = str(ctx.get("discriminator", "type")).strip("'")
        tag = ctx.get("tag")
        return _Problem([*loc, field], _with_hint(f"unknown {field}", tag, choices), tag, ", ".join(choices))
    return _Problem(loc, message, value, TYPE_WORDS.get(error["type"]) or _bound(error))


def _bound(error: ErrorDetails) -> str:
    """What a bounded number or length allows, from the bound pydantic reports."""
    ctx = error.get("ctx") or {}
    words = {"le": "at most", "lt": "less than", "ge": "at least", "gt": "more than"}
    return next((f"{word} {ctx[key]}" for key, word in words.items() if key in ctx), "")


def _misplaced_hint(key: str, parent: list[str]) -> str:
    """ "unknown setting" plus where a key of that name (or a near miss) does belong, for a key
    written at the wrong level, e.g. a top-level `tenants:` that belongs under `workloads`."""
    elsewhere = [path for path in _field_paths(PlatformConfig, ()) if path[:-1] != tuple(parent)]
    names = sorted({path[-1] for path in elsewhere})
    close = set(difflib.get_close_matches(key, names, n=3, cutoff=0.8))
    places = [".".join(path) for path in elsewhere if path[-1] == key or path[-1] in close]
    if not places or len(places) > 3:
        return "unknown setting"
    return f"unknown setting here; it belongs at {' or '.join(places)}"


def _field_paths(model: type[BaseModel], prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Every setting's path in the profile (lists and mappings of models are walked through)."""
    paths: list[tuple[str, ...]] = []
    for name, field in model.model_fields.items():
        path = (*prefix, name)
        paths.append(path)
        for inner in _models_in(field.annotation):
            if len(path) < 6:  # the profile tree is shallow; the bound keeps a recursive model finite
                paths += _field_paths(inner, path)
    return paths


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [found for arg in getattr(annotation, "__args__", ()) for found in _models_in(arg)]


def _with_hint(message: str, value: Any, choices: list[str]) -> str:
    hint = did_you_mean(value, choices)
    return f"{message}; {hint}" if hint else message


def _quoted_choices(expected: str) -> list[str]:
    """pydantic lists choices as "'a', 'b' or 'c'"; return ['a', 'b', 'c']."""
    return re.findall(r"'([^']*)'", expected)


def describe(error: ErrorDetails) -> str:
    """One pydantic error as `field.path: message (got value; allowed: ...)`."""
    problem = _problem(error)
    path = ".".join(str(part) for part in problem.loc) or "<profile>"
    if isinstance(problem.value, dict) and error["type"] in ("missing", "extra_forbidden"):
        details = f"allowed: {problem.allowed}" if problem.allowed else ""  # a mapping shows no value
    else:
        details = f"got {show(problem.value)}" + (f"; allowed: {problem.allowed}" if problem.allowed else "")
    return f"{path}: {problem.message}" + (f" ({details})" if details else "")


_REPR = reprlib.Repr()
_REPR.maxstring, _REPR.maxother, _REPR.maxlist, _REPR.maxlevel = 78, 78, 6, 2


def show(value: Any) -> str:
    """A short rendering of a bad value, bounded before it is built (a value can be huge)."""
    if isinstance(value, dict):
        return "a mapping"
    if value is None:
        return "nothing (unset)"
    text = _REPR.repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_union_tag(part: Any) -> bool:
    # Discriminated unions add the tag (e.g. 'capacity_block') to the location.
    return isinstance(part, str) and part in ("on_demand", "odcr", "capacity_block")


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    """The field names of the model at `loc`, walking the model tree (best effort)."""
    model: Any = PlatformConfig
    for part in loc:
        if isinstance(part, int) or _is_union_tag(part):
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or part not in model.model_fields:
            return []
        model = _inner_model(model.model_fields[part].annotation, loc)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return list(model.model_fields)
    return []


def _inner_model(annotation: Any, loc: tuple[Any, ...]) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    variants = [found for arg in getattr(annotation, "__args__", ()) if (found := _inner_model(arg, loc)) is not None]
    for variant in variants:
        # A discriminated union: pick the variant whose tag appears in the location.
        tag = variant.model_fields.get("type")
        if tag is not None and any(value in loc for value in getattr(tag.annotation, "__args__", ())):
            return variant
    return variants[0] if len(variants) == 1 else None
