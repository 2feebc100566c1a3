"""Terraform expressions built from Python values: the one place that escapes text for HCL.

A synthesized string that contains `${...}` is a Terraform template, and the text between the
braces is HCL expression source, in the JSON and in the HCL export alike. A Python value placed in
that source must become an HCL quoted string literal: a backslash, a double quote or a control
character must be escaped (HCL knows only `\\\\ \\" \\n \\r \\t \\uNNNN \\UNNNNNNNN`; `\\s` or `\\d` is a
parse error that makes Terraform refuse the whole configuration), and `${` / `%{` must be doubled,
or Terraform reads them as template sequences inside the literal. Plain template text (an error
message around an interpolation) needs only the doubling.

Every component that writes a condition, a template or an interpolation builds it here;
tests/test_architecture.py refuses a hand-written `${` f-string anywhere else.
"""

from __future__ import annotations

_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def template_text(text: str) -> str:
    """Literal text inside a Terraform template: `${` and `%{` stay text, not sequences."""
    return text.replace("${", "$${").replace("%{", "%%{")


def string_literal(value: str) -> str:
    """An HCL quoted string literal whose value is exactly `value`."""
    escaped = "".join(_ESCAPES.get(char, char if char >= " " else f"\\u{ord(char):04x}") for char in value)
    return f'"{template_text(escaped)}"'


def expression(source: str) -> str:
    """A synthesized string whose value is the HCL expression `source` (e.g. a condition)."""
    return "${" + source + "}"


class Expression:
    """HCL expression source to be evaluated inside a template (`interpolated`, `quoted_template`)."""

    __slots__ = ("source",)

    def __init__(self, source: str):
        self.source = source


def interpolated(*parts: str | Expression) -> str:
    """A synthesized template string: text parts stay literal, Expression parts are evaluated."""
    return "".join(expression(part.source) if isinstance(part, Expression) else template_text(part) for part in parts)


def quoted_template(*parts: str | Expression) -> str:
    """An HCL quoted template inside expression source, e.g. a for expression's key."""
    return '"' + "".join(expression(part.source) if isinstance(part, Expression) else string_literal(part)[1:-1]
                         for part in parts) + '"'


def matches(pattern: str, subject: str) -> str:
    """A condition: `subject` (expression source) matches the RE2 `pattern` in full or in part,
    as the pattern's own anchors say."""
    return expression(f"can(regex({string_literal(pattern)}, {subject}))")
