"""Find a profile by name or path, parse its YAML and validate it into a PlatformConfig.

Every user error becomes a `ProfileError` whose `problems` are printable lines of the form
`path.to.field: message (got value; allowed: ...)`; no traceback reaches the user.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from profiles.base import FieldProblem
from profiles.models import PlatformConfig

PROFILES_DIR = Path(__file__).resolve().parent
DEFAULT_PROFILE = "g6-validation"


class ProfileError(Exception):
    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = problems
        super().__init__(f"{source}: " + "; ".join(problems))

    def render(self) -> str:
        lines = [f"profile {self.source} is not valid ({len(self.problems)} problem(s)):"]
        lines += [f"  - {problem}" for problem in self.problems]
        return "\n".join(lines)


def available_profiles() -> list[str]:
    return sorted(path.stem for path in PROFILES_DIR.glob("*.yaml"))


def resolve(name_or_path: str) -> Path:
    """A shipped profile's name, or the path of the user's own YAML file."""
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml") or "/" in name_or_path:
        if not candidate.is_file():
            raise ProfileError(name_or_path, [f"no such profile file: {candidate}"])
        return candidate
    shipped = PROFILES_DIR / f"{name_or_path}.yaml"
    if not shipped.is_file():
        raise ProfileError(
            name_or_path,
            [f"unknown profile {name_or_path!r}; available: {', '.join(available_profiles())}, "
             "or the path of your own YAML file"],
        )
    return shipped


def load_profile(name_or_path: str = DEFAULT_PROFILE) -> PlatformConfig:
    path = resolve(name_or_path)
    try:
        document = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ProfileError(str(path), [f"not valid YAML: {exc}"]) from None
    if not isinstance(document, dict):
        raise ProfileError(str(path), ["the profile must be a YAML mapping of settings"])
    return validate_profile(document, source=str(path))


def validate_profile(document: dict[str, Any], source: str = "<profile>") -> PlatformConfig:
    try:
        return PlatformConfig.model_validate(document)
    except ValidationError as exc:
        raise ProfileError(source, [describe(error) for error in exc.errors()]) from None


@dataclass(frozen=True)
class _Problem:
    loc: list[str | int]
    message: str
    value: Any
    allowed: str = ""


def _problem(error: ErrorDetails) -> _Problem:
    """Where the error is, what it says, the offending value and what is allowed."""
    loc = [part for part in error["loc"] if not _is_union_tag(part)]
    message = error["msg"].removeprefix("Value error, ")
    if loc and loc[-1] == "[key]":  # pydantic's marker for a bad mapping key
        loc, message = loc[:-1], f"bad key: {message}"
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, FieldProblem):
        return _Problem([*loc, *cause.field], str(cause), cause.value, cause.allowed)
    if error["type"] == "extra_forbidden":
        return _Problem(loc, "unknown setting", error.get("input"), ", ".join(_allowed_keys(error["loc"][:-1])))
    return _Problem(loc, message, error.get("input"))


def describe(error: ErrorDetails) -> str:
    """One pydantic error as `field.path: message (got value; allowed: ...)`."""
    problem = _problem(error)
    path = ".".join(str(part) for part in problem.loc) or "<profile>"
    if isinstance(problem.value, dict) and error["type"] in ("missing", "extra_forbidden"):
        details = f"allowed: {problem.allowed}" if problem.allowed else ""  # a mapping shows no value
    else:
        details = f"got {_show(problem.value)}" + (f"; allowed: {problem.allowed}" if problem.allowed else "")
    return f"{path}: {problem.message}" + (f" ({details})" if details else "")


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    text = repr(value)
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
