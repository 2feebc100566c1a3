"""Repairs for cdktf 0.21's HCL renderer, applied by `main.py hcl` before `terraform fmt`.

cdktf (archived upstream) renders three constructs this platform uses as invalid or deprecated HCL:
- a string attribute that embeds a `${...}` reference keeps its inner double quotes unescaped
  (IAM and key policies with an account id or ARN in them);
- a lifecycle `precondition` comes out as a list attribute instead of a nested block;
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

_ATTRIBUTE = re.compile(r'^(\s*[A-Za-z_][\w-]* = )"(.*)"\s*$')


def _escape_outside_interpolations(text: str) -> str:
    out, depth, index = [], 0, 0
    while index < len(text):
        if text.startswith("${", index):
            depth += 1
            out.append("${")
            index += 2
            continue
        char = text[index]
        if char == "}" and depth:
            depth -= 1
        elif char == "\\" and not depth and index + 1 < len(text):
            out.append(text[index:index + 2])  # already escaped
            index += 2
            continue
        elif char == '"' and not depth:
            char = '\\"'
        out.append(char)
        index += 1
    return "".join(out)


def _fix_string_line(line: str) -> str:
    match = _ATTRIBUTE.match(line)
    if not match or "${" not in match.group(2):
        return line
    return f'{match.group(1)}"{_escape_outside_interpolations(match.group(2))}"'


def _fix_preconditions(text: str) -> str:
    def block(match: re.Match[str]) -> str:
        indent, body = match.group(1), match.group(2)
        items = re.findall(r"\{\n(.*?)\n\s*\},?", body, flags=re.DOTALL)
        return "".join(f"{indent}precondition {{\n{item}\n{indent}}}\n" for item in items)

    return re.sub(r"^(\s*)precondition = \[\n(.*?)\n\s*\]\n", block, text, flags=re.MULTILINE | re.DOTALL)


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
    return _unquote_reference_lists(_fix_preconditions(text))
