"""components/expressions.py: text becomes HCL that Terraform reads back as exactly that text.
Checked by the real Terraform: each built template is an output of a tiny configuration."""

from __future__ import annotations

import json

import pytest

from components.expressions import Expression, interpolated, matches, quoted_template, string_literal

TEXTS = [
    "plain",
    'quote " and backslash \\ and \\s',
    "tab\tnewline\ncr\r",
    "${not.a.ref}",
    "%{ if x }y%{ endif }",
    "$${already}",
    "trailing $",
    "dollar $ brace {",
    "\x01 control",
]


def test_terraform_reads_every_built_string_back_as_its_text(terraform, tmp_path):
    outputs = {}
    for index, text in enumerate(TEXTS):
        outputs[f"literal_{index}"] = {"value": f"${{{string_literal(text)}}}"}
        outputs[f"template_{index}"] = {"value": interpolated(text)}
        outputs[f"quoted_{index}"] = {"value": f"${{{quoted_template(text)}}}"}
    outputs["money"] = {"value": interpolated("cost $", Expression("1 + 1"))}
    outputs["split"] = {"value": interpolated("a$", "{b}")}
    outputs["regex"] = {"value": matches("^[^/&%\\\\\\s]{12,}$", '"has space 123456"')}
    (tmp_path / "main.tf.json").write_text(json.dumps({"output": outputs}))
    init = terraform.run(tmp_path, "init", "-backend=false", "-input=false", "-no-color")
    assert init.returncode == 0, init.stderr
    applied = terraform.run(tmp_path, "apply", "-auto-approve", "-input=false", "-no-color")
    assert applied.returncode == 0, applied.stderr + applied.stdout
    shown = json.loads(terraform.run(tmp_path, "output", "-json").stdout)
    for index, text in enumerate(TEXTS):
        for kind in ("literal", "template", "quoted"):
            assert shown[f"{kind}_{index}"]["value"] == text, (kind, text)
    assert shown["money"]["value"] == "cost $2"
    assert shown["split"]["value"] == "a${b}"
    assert shown["regex"]["value"] is False


@pytest.mark.parametrize("text", TEXTS)
def test_string_literals_never_hold_a_live_template_sequence(text):
    literal = string_literal(text)
    assert "${" not in literal.replace("$${", "") and "%{" not in literal.replace("%%{", "")
