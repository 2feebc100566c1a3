"""How a profile's plain (unquoted) scalars are read: by the YAML 1.2 core schema, and never where
YAML 1.1 would read the same text as another value.

- YAML 1.2.2, 10.3.2 "Tag Resolution" of the core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution):
  null `null | Null | NULL | ~ | (empty)`; bool `true | True | TRUE | false | False | FALSE`;
  int `[-+]?[0-9]+` (and 0o/0x forms); float `[-+]?(\\.[0-9]+ | [0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?`,
  `[-+]?\\.(inf|Inf|INF)`, `\\.nan|\\.NaN|\\.NAN`; everything else is a string.
- YAML 1.1's type library (https://yaml.org/type/bool.html, /int.html, /float.html), which
  PyYAML's SafeLoader, and with it many tools, follows: yes/no/on/off are booleans, 010 is octal 8,
  0b10 binary, 0x2 hexadecimal, 1_000 has digit separators, 1:30 is base 60 (90).

A profile is read by the tools and the people around it, not only by this loader: a value that
the two versions read differently (`max_size: 010`, `protect_from_destroy: off`) is refused, with
the way to write it that both read alike, instead of being taken one way silently. So are the
forms of the 1.2 core schema a profile has no use for and 1.1 reads otherwise (0o7, 0x2), a
leading `+` and leading zeros: a number has one spelling, in decimal.
"""

from __future__ import annotations

import re

import yaml

CORE = "tag:yaml.org,2002:"
NULL = re.compile(r"~|null|Null|NULL|")
BOOL = re.compile(r"true|True|TRUE|false|False|FALSE")
INT = re.compile(r"[-+]?[0-9]+")
FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)")
# The 1.2 core schema's other int forms (octal 0o, hexadecimal 0x): refused, never read.
CORE_OCTAL_OR_HEX = re.compile(r"0o[0-7]+|0x[0-9a-fA-F]+")
# A whole number as a profile writes it: decimal, no sign but '-', no leading zero.
DECIMAL = re.compile(r"-?(0|[1-9][0-9]*)")
# No profile setting takes a number beyond int64 (19 digits); Python refuses int() past 4300.
MAX_DIGITS = 100
SCALAR_TAGS = {CORE + kind for kind in ("null", "bool", "int", "float")}
YAML11_WORDS = "YAML 1.1 (PyYAML and many tools)"


def resolve_core(value: str) -> str:
    """The YAML 1.2 core schema tag of a plain scalar."""
    for kind, pattern in (("null", NULL), ("bool", BOOL), ("int", INT), ("float", FLOAT)):
        if pattern.fullmatch(value):
            return CORE + kind
    return CORE + "str"


def _yaml11(value: str) -> tuple[str, object]:
    """The tag and value YAML 1.1 (PyYAML's SafeLoader) gives the plain scalar `value`."""
    candidates = yaml.SafeLoader.yaml_implicit_resolvers.get(value[:1], [])
    tag = next((tag for tag, pattern in candidates if pattern.match(value)), CORE + "str")
    if tag not in SCALAR_TAGS:  # a profile keeps dates as text; << and = are refused by name (loader.py)
        return CORE + "str", value
    if len(value) > MAX_DIGITS:  # a number too long to show, or to convert (int() stops at 4300 digits)
        return tag, NotImplemented
    try:
        return tag, yaml.SafeLoader("").construct_object(yaml.ScalarNode(tag, value))
    except ValueError:
        return tag, NotImplemented


def _cut(value: str) -> str:
    """`value` shortened for a message (a number of thousands of digits is shown by its ends)."""
    return value if len(value) <= 40 else f"{value[:20]}...{value[-10:]}"


def _shown(tag: str, value: object) -> str:
    if tag == CORE + "str":
        return f"the text {_cut(str(value))!r}"
    if tag == CORE + "bool":
        return str(value).lower()
    if value is NotImplemented:
        return "a number"
    return "null" if value is None else f"the number {_cut(repr(value))}"


def ambiguity(value: str) -> tuple[str, str] | None:
    """(message, allowed) when the plain scalar `value` is refused: YAML 1.1 and 1.2 read it as
    different values, or it is a number in a form a profile does not write; None otherwise."""
    core = resolve_core(value)
    if core != CORE + "str" or CORE_OCTAL_OR_HEX.fullmatch(value):
        if len(value) > MAX_DIGITS:
            return f"a number of {len(value)} characters", "a number of at most 19 digits: none is larger than int64"
        if (form := _number_form(value, core)) is not None:
            return form
    old_tag, old = _yaml11(value)
    if old_tag == core:
        return None
    new = yaml.SafeLoader("").construct_object(yaml.ScalarNode(core, value)) if core != CORE + "str" else value
    message = f"{YAML11_WORDS} reads {_cut(value)} as {_shown(old_tag, old)}, YAML 1.2 as {_shown(core, new)}"
    quoted = f"{_cut(value)!r} in quotes for text"
    if old_tag == CORE + "bool":
        return message, f"{str(old).lower()} for true/false, or {quoted}"
    if core == CORE + "str":
        return message, f"{_shown(old_tag, old).removeprefix('the number ')}, in plain decimal, or {quoted}"
    return message, f"{new!r}, written so, or {quoted}"


def _number_form(value: str, core: str) -> tuple[str, str] | None:
    """A number (of at most MAX_DIGITS characters) written in a form a profile does not take: a
    + sign, a leading zero, octal or hexadecimal. (message, allowed), or None."""
    quoted = f"{value!r} in quotes for text"
    if core in (CORE + "int", CORE + "float") and value.startswith("+"):
        return "a number with a + sign", f"{value[1:]}, without the sign, or {quoted}"
    old_tag, old = _yaml11(value)
    if core == CORE + "int" and not DECIMAL.fullmatch(value):
        number = int(value)
        reading = f"{YAML11_WORDS} reads {value} as {_shown(old_tag, old)}, YAML 1.2 as {number}"
        return f"a number with a leading zero: {reading}", f"{number}, without the leading zero, or {quoted}"
    if core == CORE + "str":  # CORE_OCTAL_OR_HEX
        number = int(value, 0)
        base = "hexadecimal" if value.startswith("0x") else "octal"
        return (
            f"a number in {base}, which YAML 1.2 reads as {number} and {YAML11_WORDS} as {_shown(old_tag, old)}; "
            "a profile writes numbers in decimal",
            f"{number}, or {quoted}",
        )
    return None


class _QuotingDumper(yaml.SafeDumper):
    """SafeDumper quoting every string a profile would not read back as that string: PyYAML leaves
    012345678901 or 1e3 plain, text to YAML 1.1, and the profile loader refuses them."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    plain_elsewhere = ambiguity(value) is not None or resolve_core(value) != CORE + "str"
    return dumper.represent_scalar(CORE + "str", value, style="'" if plain_elsewhere else None)


_QuotingDumper.add_representer(str, _represent_str)


def dump_profile(document: object) -> str:
    """`document` as YAML that the profile loader reads back as the same values."""
    return yaml.dump(document, Dumper=_QuotingDumper, sort_keys=False, allow_unicode=True)
