"""Repairs for cdktf 0.21's HCL renderer, applied by `main.py hcl` before `terraform fmt`.

cdktf (archived upstream) renders three constructs this platform uses as invalid or deprecated HCL:
- a string attribute that embeds a `${...}` reference keeps its inner double quotes unescaped
  (IAM and key policies with an account id or ARN in them);
- a lifecycle `precondition` or `postcondition` comes out as a list attribute instead of a nested block;
- `depends_on` and `ignore_changes` list quoted references, which Terraform accepts with a
  deprecation warning.
All three are fixed textually here; the result is checked with `terraform validate` in the tests.

One change goes beyond repair: policy documents (IAM, trust, key, bucket, queue) become
`jsonencode({...})` expressions instead of escaped JSON strings, as a team writing HCL would keep
them; policy scanners (checkov) evaluate those and not the strings.
"""

from __future__ import annotations

import json
import re

from components.expressions import template_segments

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
