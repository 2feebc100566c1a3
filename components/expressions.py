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

from collections.abc import Callable

_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def template_text(text: str) -> str:
    """Literal text inside a Terraform template: `${` and `%{` stay text, not sequences."""
    return text.replace("${", "$${").replace("%{", "%%{")


def string_literal(value: str) -> str:
    """An HCL quoted string literal whose value is exactly `value`."""
    escaped = "".join(_ESCAPES.get(char, char if char >= " " else f"\\u{ord(char):04x}") for char in value)
    return f'"{template_text(escaped)}"'


def holds_interpolation(text: str) -> bool:
    """Whether `text` holds an interpolation sequence: a cdktf token (`${TfToken[...]}`, resolved
    only at synthesis) or an expression."""
    return "${" in text


def expression(source: str) -> str:
    """A synthesized string whose value is the HCL expression `source` (e.g. a condition)."""
    return "${" + source + "}"


class Expression:
    """HCL expression source to be evaluated inside a template (`interpolated`, `quoted_template`)."""

    __slots__ = ("source",)

    def __init__(self, source: str):
        self.source = source


def _template(parts: tuple[str | Expression, ...], escape_text: Callable[[str], str]) -> str:
    """Adjacent text parts are joined before escaping (a `$` and a `{` in two parts stay text), and
    a `$` right before an evaluated part is written as the expression "$" (`$${` would be text)."""
    out: list[str] = []
    text = ""
    for part in (*parts, None):
        if isinstance(part, str):
            text += part
            continue
        if part is not None and text.endswith("$"):
            out.append(escape_text(text[:-1]) + expression('"$"'))
        else:
            out.append(escape_text(text))
        text = ""
        if part is not None:
            out.append(expression(part.source))
    return "".join(out)


def interpolated(*parts: str | Expression) -> str:
    """A synthesized template string: text parts stay literal, Expression parts are evaluated."""
    return _template(parts, template_text)


def quoted_template(*parts: str | Expression) -> str:
    """An HCL quoted template inside expression source, e.g. a for expression's key."""
    return '"' + _template(parts, lambda text: string_literal(text)[1:-1]) + '"'


def matches(pattern: str, subject: str) -> str:
    """A condition: `subject` (expression source) matches the RE2 `pattern` in full or in part,
    as the pattern's own anchors say."""
    return expression(f"can(regex({string_literal(pattern)}, {subject}))")


def template_segments(text: str) -> list[tuple[bool, str]]:
    """A synthesized template split into (is_sequence, text) parts: its own text, and each
    top-level `${...}` / `%{...}` sequence whole (nested braces, and quoted strings that may hold
    templates of their own, included). Escaped `$${` / `%%{` are text."""
    segments: list[tuple[bool, str]] = []
    modes, index, start = ["text"], 0, 0  # modes: text, string (in an expression), expr, brace
    while index < len(text):
        mode, char = modes[-1], text[index]
        step = 1
        if mode in ("text", "string"):
            if text.startswith(("$${", "%%{"), index):
                step = 3
            elif text.startswith(("${", "%{"), index):
                if len(modes) == 1:
                    segments.append((False, text[start:index]))
                    start = index
                modes.append("expr")
                step = 2
            elif char == "\\" and mode == "string":
                step = 2
            elif char == '"' and mode == "string":
                modes.pop()
        elif char == "{":
            modes.append("brace")
        elif char == "}":
            modes.pop()
            if len(modes) == 1:
                segments.append((True, text[start : index + 1]))
                start = index + 1
        elif char == '"':
            modes.append("string")
        index += step
    segments.append((False, text[start:]))
    return [(sequence, part) for sequence, part in segments if part]
