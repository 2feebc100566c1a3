"""Find a profile by name or path, parse its YAML and validate it into a PlatformConfig.

Every user error becomes a `ProfileError` whose `problems` are printable lines of the form
`path.to.field: message (got value; allowed: ...)`; no traceback reaches the user.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from profiles import yaml_core
from profiles.base import did_you_mean
from profiles.models import PlatformConfig
from profiles.problems import describe, show

PROFILES_DIR = Path(__file__).resolve().parent
DEFAULT_PROFILE = "gpu-validation"
# The shipped profiles are this fixed list: a user's own file saved next to them is a user profile
# (loaded by its path), never a shipped one that the snapshot tests would then expect.
SHIPPED_PROFILES = ("gpu-validation", "p5-training", "p5en-training")


MAX_PROFILE_BYTES = 256 * 1024
MAX_DEPTH = 24
MAX_NODES = 20_000


class ProfileError(Exception):
    def __init__(self, source: str, problems: list[str], *, not_found: bool = False):
        self.source = source
        self.problems = problems
        self.not_found = not_found
        super().__init__(f"{source}: " + "; ".join(problems))

    def render(self) -> str:
        what = "not found" if self.not_found else f"is not valid ({len(self.problems)} problem(s))"
        lines = [f"profile {self.source} {what}:"]
        lines += [f"  - {problem}" for problem in self.problems]
        return "\n".join(lines)


def available_profiles() -> list[str]:
    return list(SHIPPED_PROFILES)


def shipped_names() -> dict[str, str]:
    """The `name` of each shipped profile (its output and state folder) -> the shipped profile."""
    names = {}
    for profile in SHIPPED_PROFILES:
        document = yaml.safe_load((PROFILES_DIR / f"{profile}.yaml").read_text())
        names[document["name"]] = profile
    return names


def resolve(name_or_path: str) -> Path:
    """A shipped profile's name, or the path of the user's own YAML file."""
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml") or "/" in name_or_path:
        if not candidate.is_file():
            raise ProfileError(name_or_path, [f"no such profile file: {candidate}"], not_found=True)
        return candidate
    shipped = PROFILES_DIR / f"{name_or_path}.yaml"
    if name_or_path not in SHIPPED_PROFILES or not shipped.is_file():
        hint = did_you_mean(name_or_path, available_profiles())
        hint = f"{hint} " if hint else ""
        raise ProfileError(
            name_or_path,
            [
                f"unknown profile {name_or_path!r}; {hint}available: {', '.join(available_profiles())}, "
                "or the path of your own YAML file"
            ],
            not_found=True,
        )
    return shipped


# The YAML core schema's types (YAML 1.2): all a profile holds. Every other tag is refused, written
# (`!!binary`, `!!set`, `!!timestamp`, `!!python/...`, a custom `!foo`) or implied (a `<<` merge key).
CORE_TAGS = {f"tag:yaml.org,2002:{kind}" for kind in ("str", "int", "float", "bool", "null", "seq", "map")}
# The tag a plain scalar gets when YAML 1.1 and 1.2 read it differently (profiles/yaml_core.py).
AMBIGUOUS = "tag:profiles.invalid,2026:yaml-1.1-or-1.2"


class RefusedYaml(yaml.MarkedYAMLError):
    """Valid YAML that a profile never holds; `problem` says what and how to write it instead."""


def _short_tag(tag: str) -> str:
    return "!!" + tag.removeprefix("tag:yaml.org,2002:") if tag.startswith("tag:yaml.org,2002:") else tag


class _ProfileLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses what a profile never needs and a hostile file could use:
    duplicate keys (YAML would keep the last silently), deep nesting, alias expansion beyond a
    small number of nodes (an alias bomb), and every tag outside YAML's core schema. The last
    makes a profile plain data by construction: text, numbers, true/false, null, lists and
    mappings, the only values the template check and the field types see. A `!!binary` or
    `!!set` value would otherwise reach pydantic as bytes or a set, around that check. Unquoted
    dates and times stay text (YAML 1.1 would make them datetimes); a field that takes a time
    parses the text itself."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0
        self._root: yaml.Node | None = None

    def construct_document(self, node: Any) -> Any:
        self._root = node
        return super().construct_document(node)

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        # A plain scalar YAML 1.1 and 1.2 read as different values, or a number in a form a profile
        # never writes: marked, to be refused once the field it stands at is known.
        if kind is yaml.ScalarNode and implicit[0] and yaml_core.ambiguity(value) is not None:
            return AMBIGUOUS
        return super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        if node.tag == AMBIGUOUS:
            message, allowed = yaml_core.ambiguity(node.value) or ("", "")
            raise RefusedYaml(None, None, _refused(self, node, message, allowed), node.start_mark)
        if node.tag not in CORE_TAGS:
            raise RefusedYaml(None, None, _refusal(node, _path_to(self._root, node)), node.start_mark)
        return super().construct_object(node, deep=deep)

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        self._nodes += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.YAMLError(f"nested deeper than {MAX_DEPTH} levels")
            if self._nodes > MAX_NODES:
                raise yaml.YAMLError(f"more than {MAX_NODES} values (aliases expanding without end?)")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if isinstance(key, (str, int, float, bool)) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first on line {seen[key]})", key_node.start_mark
                )
            if isinstance(key, (str, int, float, bool)):
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _refusal(node: yaml.Node, path: str) -> str:
    """`field.path: message (got value; allowed: ...)` for a node of a type a profile never holds."""
    where = f"line {node.start_mark.line + 1}, column {node.start_mark.column + 1}"
    shown = (
        show(node.value)
        if isinstance(node, yaml.ScalarNode)
        else "a list"
        if isinstance(node, yaml.SequenceNode)
        else "a mapping"
    )
    if node.tag == "tag:yaml.org,2002:merge":
        message, got, allowed = "a YAML merge key is not allowed in a profile", "<<", "the settings written out"
    elif node.tag == "tag:yaml.org,2002:value":
        message, got, allowed = "a lone = is YAML's value key, not text", shown, f"quoted text ('{node.value}')"
    else:
        message, got = (
            f"the YAML tag {_short_tag(node.tag)} is not allowed in a profile",
            f"{_short_tag(node.tag)} {shown}",
        )
        allowed = (
            "text, numbers, true/false, null, lists and mappings, untagged or with one of YAML's core tags "
            "(!!str, !!int, !!float, !!bool, !!null, !!seq, !!map); quote a text value"
        )
    return f"{path or '<profile>'}: {message}, on {where} (got {got}; allowed: {allowed})"


def _path_to(root: yaml.Node | None, target: yaml.Node) -> str:
    """The dotted settings path of `target` under `root` ('' when it is the root or not found): the
    field a refused node stands at, to name next to its line."""
    stack: list[tuple[yaml.Node, tuple[str, ...]]] = [(root, ())] if root is not None else []
    seen: set[int] = set()
    while stack:
        node, path = stack.pop()
        if node is target:
            return ".".join(path)
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                name = str(key.value) if isinstance(key, yaml.ScalarNode) else "<key>"
                stack += [(key, (*path, name)), (value, (*path, name))]
        elif isinstance(node, yaml.SequenceNode):
            stack += [(item, (*path, str(index))) for index, item in enumerate(node.value)]
    return ""


# Plain scalars resolve by the YAML 1.2 core schema (profiles/yaml_core.py), not SafeLoader's YAML 1.1
# one: no timestamps (unquoted dates and times stay text), no yes/no/on/off, octal 010, 0x, 0b, 1_000
# or base-60 1:30. The merge `<<` and value `=` keys still resolve, to be refused by name.
_ProfileLoader.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in (
    ("bool", yaml_core.BOOL, "tTfF"),
    ("int", yaml_core.INT, "-+0123456789"),
    ("float", yaml_core.FLOAT, "-+.0123456789"),
    ("null", yaml_core.NULL, ["~", "n", "N", ""]),
    ("merge", re.compile("<<"), "<"),
    ("value", re.compile("="), "="),
):
    _ProfileLoader.add_implicit_resolver(yaml_core.CORE + _tag, re.compile(rf"^(?:{_pattern.pattern})$"), list(_first))


def _explicit(kind: str, pattern: re.Pattern[str], allowed: str) -> Any:
    """The constructor of the core tag !!<kind>, for its implicit and its explicit uses: a value
    outside the YAML 1.2 core form of its tag (`!!int 2.0`, `!!bool maybe`, `!!null '1234'`) is
    refused, naming the field and line, where SafeLoader would raise a Python error or drop it."""
    base = _ProfileLoader.yaml_constructors[yaml_core.CORE + kind]

    def construct(loader: _ProfileLoader, node: Any) -> Any:
        value = loader.construct_scalar(node)  # a ConstructorError for a tagged list or mapping
        if pattern.fullmatch(value) and not (kind == "int" and len(value) > yaml_core.MAX_DIGITS):
            return base(loader, node)
        message = f"{_short_tag(node.tag)} {show(value)} is not a value of that tag in YAML 1.2's core schema"
        raise RefusedYaml(None, None, _refused(loader, node, message, allowed), node.start_mark)

    return construct


def _refused(loader: _ProfileLoader, node: yaml.Node, message: str, allowed: str) -> str:
    where = f"line {node.start_mark.line + 1}, column {node.start_mark.column + 1}"
    path = _path_to(loader._root, node) or "<profile>"
    return f"{path}: {message}, on {where} (got {show(node.value)}; allowed: {allowed})"


for _kind, _core_pattern, _allowed in (
    ("int", yaml_core.DECIMAL, "a whole number in decimal, e.g. !!int 10"),
    ("float", yaml_core.FLOAT, "a number, e.g. !!float 1.5"),
    ("bool", yaml_core.BOOL, "true or false"),
    ("null", yaml_core.NULL, "nothing, ~ or null: a null holds no text"),
):
    _ProfileLoader.add_constructor(yaml_core.CORE + _kind, _explicit(_kind, _core_pattern, _allowed))


def _count_alias_expansion(document: Any, budget: int = MAX_NODES) -> None:
    """Aliases share objects, so a small file can stand for a huge tree: count it bounded."""
    stack, seen = [document], 0
    while stack:
        node = stack.pop()
        seen += 1
        if seen > budget:
            raise yaml.YAMLError(f"more than {budget} values once aliases are expanded (an alias bomb?)")
        if isinstance(node, dict):
            stack.extend(node.values())
            stack.extend(node.keys())
        elif isinstance(node, list):
            stack.extend(node)


def parse_profile_text(raw: bytes, source: str) -> dict[str, Any]:
    """The profile's mapping, or a ProfileError naming the file (and line) for any other content."""
    if len(raw) > MAX_PROFILE_BYTES:
        raise ProfileError(source, [f"the file is {len(raw)} bytes; a profile is at most {MAX_PROFILE_BYTES}"])
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ProfileError(
            source,
            [f"not UTF-8 text (byte {exc.start}): a binary file, or another encoding? Save the profile as UTF-8"],
        ) from None
    if "\x00" in text:
        raise ProfileError(source, ["not a text file (it contains NUL characters)"])
    try:
        document = yaml.load(text, Loader=_ProfileLoader)
        _count_alias_expansion(document)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        if isinstance(exc, RefusedYaml):  # the message names the field and the line itself
            raise ProfileError(source, [str(exc.problem)]) from None
        raise ProfileError(source, [f"not valid YAML: {where}{exc.problem or exc.context}"]) from None
    except (yaml.YAMLError, RecursionError) as exc:
        message = str(exc) if isinstance(exc, yaml.YAMLError) else f"nested deeper than {MAX_DEPTH} levels"
        raise ProfileError(source, [f"not valid YAML: {message}"]) from None
    if document is None:
        raise ProfileError(source, ["the profile is empty: start from a shipped one (profiles/*.yaml)"])
    if not isinstance(document, dict):
        kind = {str: "line of text", list: "list", int: "number", float: "number", bool: "true/false"}.get(
            type(document), "value"
        )
        raise ProfileError(
            source, [f"the profile must be a YAML mapping of settings (name: value lines), not a {kind}"]
        )
    return document


def load_profile(name_or_path: str = DEFAULT_PROFILE) -> PlatformConfig:
    path = resolve(name_or_path)
    config = validate_profile(parse_profile_text(path.read_bytes(), str(path)), source=str(path))
    owner = shipped_names().get(config.name)
    if owner is not None and path.resolve() != (PROFILES_DIR / f"{owner}.yaml").resolve():
        raise ProfileError(
            str(path),
            [
                f"name: {config.name!r} is the name of the shipped profile {owner}, whose output and state "
                f"folders it would share (got {config.name!r}; allowed: any other name, e.g. {path.stem!r})"
            ],
        )
    return config


def validate_profile(document: dict[str, Any], source: str = "<profile>") -> PlatformConfig:
    try:
        return PlatformConfig.model_validate(document)
    except ValidationError as exc:
        raise ProfileError(source, [describe(error) for error in exc.errors()]) from None
