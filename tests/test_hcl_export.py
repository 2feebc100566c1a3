"""HCL export for teams leaving cdktf: the AWS layers' HCL is valid Terraform too."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stacks import LAYERS
from tests.cases import AWS_LAYERS
from tests.cases import HCL_PROFILES as PROFILES

# Left out of `make check` (cdktf's HCL export of every layer, a process each); `make test` runs it.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def validated(hcl_exported, terraform, tmp_path_factory) -> dict[str, list[dict]]:
    stacks = {
        f"{profile}-{layer}": (hcl_exported / profile / "stacks" / layer / "cdk.tf").read_text()
        for profile in PROFILES
        for layer in AWS_LAYERS
    }
    for hcl in stacks.values():
        assert hcl.lstrip().startswith("terraform {") and 'resource "aws_' in hcl
    return terraform.validate_many(stacks, tmp_path_factory.mktemp("validate-hcl"))


@pytest.mark.parametrize("layer", AWS_LAYERS)
@pytest.mark.parametrize("profile", PROFILES)
def test_hcl_of_aws_layers_is_valid(validated, profile, layer):
    assert validated[f"{profile}-{layer}"] == []


def test_hcl_and_json_describe_the_same_resources(hcl_exported, synthesized):
    import re

    for layer in LAYERS:
        hcl = (hcl_exported / "p5-training" / "stacks" / layer / "cdk.tf").read_text()
        in_hcl = set(re.findall(r'^resource "([^"]+)" "([^"]+)"', hcl, flags=re.MULTILINE))
        in_json = {
            (t, n) for t, items in synthesized.stack("p5-training", layer).get("resource", {}).items() for n in items
        }
        assert in_hcl == in_json, layer


def test_repair_escapes_quotes_around_interpolations_only():
    from operate.hcl import repair_cdktf_hcl

    broken = 'policy = "{"Principal": {"AWS": "arn:aws:iam::${data.a.b.account_id}:root"}}"'
    assert (
        repair_cdktf_hcl(broken)
        == 'policy = "{\\"Principal\\": {\\"AWS\\": \\"arn:aws:iam::${data.a.b.account_id}:root\\"}}"'
    )
    fine = 'assume_role_policy = "{\\"Action\\": \\"x\\"}"'
    assert repair_cdktf_hcl(fine) == fine


def test_repair_leaves_expression_source_alone_nested_braces_and_strings_included():
    """Inside `${...}` the text is HCL source: a regex quantifier `{12,}` does not end the
    interpolation, and quotes of string literals (which may hold templates) stay unescaped."""
    from operate.hcl import repair_cdktf_hcl

    condition = 'condition = "${can(regex("^[^/]{12,}$", var.p))}"'
    assert repair_cdktf_hcl(condition) == condition
    for_each = 'for_each = "${{ for d in local.x : "${d.kind}/${d.name}" => d if d.kind != "Namespace" }}"'
    assert repair_cdktf_hcl(for_each) == for_each
    mixed = 'name = "a "quoted" ${lower("X}")} $${literal} "end""'
    assert repair_cdktf_hcl(mixed) == 'name = "a \\"quoted\\" ${lower("X}")} $${literal} \\"end\\""'


def test_repair_turns_precondition_lists_into_blocks():
    from operate.hcl import repair_cdktf_hcl

    broken = 'lifecycle {\n  precondition = [\n{\ncondition = "${a == 1}"\nerror_message = "bad"\n},\n]\n}\n'
    assert (
        repair_cdktf_hcl(broken)
        == 'lifecycle {\n  precondition {\ncondition = "${a == 1}"\nerror_message = "bad"\n  }\n}\n'
    )
    assert repair_cdktf_hcl(broken.replace("precondition", "postcondition")) == (
        'lifecycle {\n  postcondition {\ncondition = "${a == 1}"\nerror_message = "bad"\n  }\n}\n'
    )


def test_repair_unquotes_reference_lists():
    from operate.hcl import repair_cdktf_hcl

    assert (
        repair_cdktf_hcl('depends_on = [\n"aws_iam_role.a",\n"aws_eks_addon.b"\n]')
        == "depends_on = [\naws_iam_role.a,\naws_eks_addon.b\n]"
    )
    assert (
        repair_cdktf_hcl('ignore_changes = [\n"scaling_config[0].desired_size",\n]')
        == "ignore_changes = [\nscaling_config[0].desired_size,\n]"
    )
    assert repair_cdktf_hcl('tags = [\n"keep",\n]') == 'tags = [\n"keep",\n]'


@pytest.mark.parametrize("profile", PROFILES)
def test_hcl_state_paths_resolve_to_the_profiles_state(hcl_exported, synthesized, profile):
    """The backend and every remote-state reference of the HCL name the same files as the JSON
    stacks do: state/<name>/<layer>.tfstate in the project, whatever folder the HCL is in."""
    name = synthesized.configs[profile].name
    state = ROOT / "state" / name
    for layer in LAYERS:
        folder = hcl_exported / profile / "stacks" / layer
        hcl = (folder / "cdk.tf").read_text()
        backend = re.search(r'backend "local" \{\s*path\s*=\s*"([^"]+)"', hcl)
        assert backend, f"{layer}: no local backend"
        assert (folder / backend.group(1)).resolve() == state / f"{layer}.tfstate"
        for upstream, path in re.findall(
            r'data "terraform_remote_state" "cross-stack-reference-input-(\w+)" \{.*?path\s*=\s*"([^"]+)"',
            hcl,
            flags=re.DOTALL,
        ):
            assert (folder / path).resolve() == state / f"{upstream}.tfstate", (layer, upstream)


def test_a_line_reading_eof_in_a_string_is_a_hazard_as_terraform_ends_the_heredoc_there(tmp_path):
    """cdktf writes every multi-line string as `<<EOF ... EOF` whatever its lines say; Terraform
    ends the heredoc at the first line reading EOF, indented or not, and reads the next lines as
    HCL (a `data "external"` block, say). hcl_hazards finds each such string, and only those."""
    import shutil
    import subprocess

    from operate.hcl import hcl_hazards

    hostile = ["a\nEOF\nb", "a\n   EOF  \nb", "a\r\n\tEOF\r\nb", "a\rEOF"]
    harmless = ["EOF", "a\nEOFX\nb", "a\n# EOF\nb", "a\nEOF;\nb", "one line with EOF in it"]
    document = {"resource": {"t": {"n": {"v": hostile, "w": harmless, "m": {'k"ey': "x", "a\\b": "y", "ok": "z"}}}}}
    found = {(hazard.where, hazard.value) for hazard in hcl_hazards(document)}
    assert found == {
        *((f"resource.t.n.v.{index}", value) for index, value in enumerate(hostile)),
        ("resource.t.n.m['k\"ey']", 'k"ey'),
        ("resource.t.n.m['a\\\\b']", "a\\b"),
    }
    assert list(hcl_hazards({"//": {"metadata": "a\nEOF\n"}})) == []  # cdktf does not render its metadata
    if shutil.which("terraform") is None:
        pytest.skip("no terraform on PATH to confirm where HCL ends a heredoc")
    for value in hostile[:3]:
        lines = value.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        (tmp_path / "main.tf").write_text("locals {\nx = <<EOF\n" + "\n".join(lines) + "\nEOF\n}\n")
        parsed = subprocess.run(
            ["terraform", "fmt", "-check", "-no-color", str(tmp_path)], capture_output=True, text=True
        )
        assert "Argument or block definition required" in parsed.stderr, (value, parsed.stderr)
    (tmp_path / "main.tf").write_text("locals {\nx = <<EOF\n" + "\n".join(["a", "EOFX", "# EOF", "b"]) + "\nEOF\n}\n")
    assert subprocess.run(["terraform", "fmt", "-no-color", str(tmp_path)], capture_output=True).returncode == 0


def test_the_hcl_export_refuses_and_removes_what_the_renderer_would_not_keep_as_data(tmp_path, monkeypatch, capsys):
    """The export checks every layer's configuration before it repairs or formats anything, and
    leaves no HCL behind when a string would end its heredoc (exit status 2, naming the string)."""
    import argparse
    import os

    import main
    from profiles import load_profile
    from stacks import LAYERS

    class Stack:
        def __init__(self, document):
            self.document = document

        def to_terraform(self):
            return self.document

    def synthesize(config, outdir):
        for layer in LAYERS:
            (outdir / "stacks" / layer).mkdir(parents=True, exist_ok=True)
            (outdir / "stacks" / layer / "cdk.tf").write_text("terraform {\n}\n")
        clean = {"resource": {"aws_s3_bucket": {"b": {"bucket": "x"}}}}
        hostile = {"resource": {"helm_release": {"r": {"values": ['a: b\n  EOF\ndata "external" "x" {}\n']}}}}
        return argparse.Namespace(**{layer: Stack(hostile if layer == "addons" else clean) for layer in LAYERS})

    monkeypatch.setattr(main.common, "synthesize_profile", synthesize)
    # command_hcl sets SYNTH_HCL_OUTPUT for the jsii runtime it would start: undone after the test
    # (setitem records the variable's absence; delenv of an absent one would record nothing).
    monkeypatch.setitem(os.environ, "SYNTH_HCL_OUTPUT", os.environ.get("SYNTH_HCL_OUTPUT", ""))
    config = load_profile("gpu-validation")
    args = argparse.Namespace(outdir=str(tmp_path / "hcl"), profile="gpu-validation")
    assert main.synth.command_hcl(config, args) == main.EXIT_USER_ERROR
    assert not list((tmp_path / "hcl").rglob("cdk.tf"))
    error = capsys.readouterr().err
    assert "addons: resource.helm_release.r.values.0: a line reading EOF would end the HCL heredoc early" in error
    assert "nothing was written" in error
