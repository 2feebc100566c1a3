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
