"""Repairs for cdktf 0.21's HCL renderer, applied by `main.py hcl` before `terraform fmt`.

cdktf (archived upstream) renders three constructs this platform uses as invalid or deprecated HCL:
- a string attribute that embeds a `${...}` reference keeps its inner double quotes unescaped
  (IAM and key policies with an account id or ARN in them);
- a lifecycle `precondition` or `postcondition` comes out as a list attribute instead of a nested block;
- `depends_on` and `ignore_changes` list quoted references, which Terraform accepts with a
  deprecation warning.
All three are fixed textually here; the result is checked with `terraform validate` in the tests.

The renderer escapes nothing else: a string is written between quotes as it is (only a double quote
not after a backslash gets one), a map key likewise, and a string with a line break becomes a
`<<EOF` heredoc whatever its lines read. Text of that kind could end a string or the heredoc and
go on as HCL, so `hcl_hazards` finds every such string in a stack's JSON, and the export refuses
to write one (main.py hcl). Profile text never gets there (profiles/models.py refuses quotes,
backslashes and line breaks in it); the check covers what the stacks compose around it.

One change goes beyond repair: policy documents (IAM, trust, key, bucket, queue) become
`jsonencode({...})` expressions instead of escaped JSON strings, as a team writing HCL would keep
them; policy scanners (checkov) evaluate those and not the strings.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from components.expressions import template_segments

# cdktf's renderer opens every heredoc as `<<EOF`; HCL ends it at the first line that reads EOF,
# with spaces or tabs around it or not (terraform 1.11 closes it at an indented `   EOF` too).
HEREDOC_MARKER = "EOF"
_LINE_BREAK = re.compile(r"\r\n|[\n\r]")  # how the renderer splits a string into heredoc lines


@dataclass(frozen=True)
class Hazard:
    """A string of a stack that cdktf's HCL renderer would not write as the data it is."""

    where: str
    value: str
    why: str

    def render(self) -> str:
        shown = self.value if len(self.value) <= 80 else self.value[:77] + "..."
        return f"{self.where}: {self.why} (got {shown!r}; allowed: text the renderer writes as it is)"


def hcl_hazards(document: Any, path: tuple[str, ...] = ()) -> Iterator[Hazard]:
    """Every string (value or map key) of a synthesized stack that would not stay one string of
    data in cdktf's HCL: a line reading EOF in a multi-line string (the heredoc would end there
    and its next lines be HCL), a quote, backslash or line break in a map key (written between
    quotes as it is). Values' quotes and backslashes the renderer escapes or not by attribute
    kind; profile text holds neither (profiles/plain_data.py UNSAFE_CHARACTERS)."""
    where = ".".join(path) or "<stack>"
    if isinstance(document, str):
        lines = _LINE_BREAK.split(document)
        if len(lines) > 1 and any(line.strip(" \t") == HEREDOC_MARKER for line in lines):
            yield Hazard(where, document, f"a line reading {HEREDOC_MARKER} would end the HCL heredoc early")
    elif isinstance(document, dict):
        for key, value in document.items():
            if key == "//":  # cdktf's metadata: not rendered
                continue
            if any(char in key for char in '"\\\n\r'):
                yield Hazard(
                    f"{where}[{key!r}]", key, "a quote, backslash or line break in a map key is written unescaped"
                )
            yield from hcl_hazards(value, (*path, str(key)))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield from hcl_hazards(value, (*path, str(index)))


# An attribute, or a map entry whose key is quoted (a ConfigMap's "name.json" = "...").
_ATTRIBUTE = re.compile(r'^(\s*(?:[A-Za-z_][\w-]*|"[^"]+") = )"(.*)"\s*$')


def _escape_outside_interpolations(text: str) -> str:
    """Escape the double quotes of a template's own text; expression source inside `${...}` (with
    its nested braces and quoted strings, which may hold templates of their own) stays as it is.
    A backslash in the text is kept with the character after it (cdktf writes it escaped)."""
    return "".join(
        part if sequence else re.sub(r'(\\.)|"', lambda m: m.group(1) or '\\"', part)
        for sequence, part in template_segments(text)
    )


def _fix_string_line(line: str) -> str:
    match = _ATTRIBUTE.match(line)
    if not match or "${" not in match.group(2):
        return line
    return f'{match.group(1)}"{_escape_outside_interpolations(match.group(2))}"'


def _fix_conditions(text: str) -> str:
    """`precondition = [{...}, ...]` (and postcondition) -> one nested block per condition."""

    def blocks(match: re.Match[str]) -> str:
        indent, kind, body = match.group(1), match.group(2), match.group(3)
        items = re.findall(r"\{\n(.*?)\n\s*\},?", body, flags=re.DOTALL)
        return "".join(f"{indent}{kind} {{\n{item}\n{indent}}}\n" for item in items)

    return re.sub(
        r"^(\s*)(precondition|postcondition) = \[\n(.*?)\n\s*\]\n", blocks, text, flags=re.MULTILINE | re.DOTALL
    )


def _unquote_reference_lists(text: str) -> str:
    out, inside = [], False
    for line in text.split("\n"):
        if re.match(r"^\s*(depends_on|ignore_changes) = \[\s*$", line):
            inside = True
        elif inside and re.match(r"^\s*\]", line):
            inside = False
        elif inside:
            out.append(re.sub(r'^(\s*)"([^"]+)"(,?)\s*$', r"\1\2\3", line))
            continue
        out.append(line)
    return "\n".join(out)


_POLICY_ATTRIBUTE = re.compile(r'^(\s*(?:assume_role_policy|policy) += )"(.*)"\s*$')


def _policy_as_jsonencode(line: str) -> str:
    """`policy = "{\\"Statement\\": ...}"` -> `policy = jsonencode({"Statement": ...})`. JSON is a valid
    HCL expression, and `${...}` references inside its strings stay references."""
    match = _POLICY_ATTRIBUTE.match(line)
    if not match:
        return line
    document = match.group(2).replace('\\"', '"').replace("\\\\", "\\")
    try:
        parsed = json.loads(document)
    except json.JSONDecodeError:
        return line
    if not isinstance(parsed, dict) or "Statement" not in parsed:
        return line
    return f"{match.group(1)}jsonencode({document})"


def repair_cdktf_hcl(text: str) -> str:
    text = "\n".join(_policy_as_jsonencode(_fix_string_line(line)) for line in text.split("\n"))
    return _unquote_reference_lists(_fix_conditions(text))
