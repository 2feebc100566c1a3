"""Terraform itself loads every layer of every profile, and evaluates every variable validation.

`terraform init` reads and checks the whole configuration before it installs providers, so this
needs no provider binary: the addons and workloads layers (helm, kubernetes, http providers, none
of which has a binary here) are loaded exactly as a user's `terraform init` loads them. Where every
provider of a layer installs (the AWS layers here), the layer is validated too, in
tests/test_terraform_validate.py. A variable validation is evaluated by `terraform test` on a
variables-only configuration, which needs no provider either.
"""

from __future__ import annotations

import json
import re

import pytest

from stacks import LAYERS
from tests.cases import AWS_LAYERS, FIXTURES, HCL_PROFILES, SHIPPED
from tests.terraform import SlottedOperator, describe

CASES = [(profile, layer) for profile in SHIPPED + FIXTURES for layer in LAYERS]

# Values each validated variable must accept and refuse, chosen from the rule's reason (see the
# variable's component), not from its regex: a new validated variable needs its row here.
VARIABLE_EXAMPLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "api_tunnel": (
        ("", "https://localhost:8443", "https://127.0.0.1:1"),
        (
            "http://localhost:8443",
            "https://localhost",
            "https://localhost:8443/",
            "https://bastion.internal:443",
            "https://0123ABCD.gr7.us-west-2.eks.amazonaws.com",
            "https://localhost:8443 ",
            "${not-a-template}",
        ),
    ),
    "grafana_admin_password": (
        ("exactly-12ch", "a much longer pass phrase with spaces", "${not-a-template}"),
        ("", "eleven-char"),
    ),
    "mlflow_admin_password": (
        ("Abcdefgh1234", "pa$$-word-#+=!?", "${not-a-template}"),
        (
            "",
            "short-1",
            "has space 1234",
            "slash/1234567890",
            "amp&12345678901",
            "pct%123456789",
            "back\\slash12345",
            "tab\there1234567",
            "newline\n1234567",
        ),
    ),
}


@pytest.fixture(scope="module")
def loaded(synthesized, terraform, tmp_path_factory):
    stacks = {f"{profile}-{layer}": synthesized.stack(profile, layer) for profile, layer in CASES}
    return terraform.load(stacks, tmp_path_factory.mktemp("load"))


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("profile", SHIPPED + FIXTURES)
def test_terraform_loads_the_layer(loaded, profile, layer):
    result = loaded[f"{profile}-{layer}"]
    assert result.errors == [], describe(result.errors)
    if layer in AWS_LAYERS:  # their one provider is in the mirror (test_terraform_validate validates them)
        assert result.providers_missing == []


@pytest.mark.parametrize("profile", HCL_PROFILES)
def test_terraform_loads_the_hcl_export_of_every_layer(hcl_exported, terraform, tmp_path, profile):
    stacks = {layer: (hcl_exported / profile / "stacks" / layer / "cdk.tf").read_text() for layer in LAYERS}
    for layer, result in terraform.load(stacks, tmp_path).items():
        assert result.errors == [], f"{layer}: {describe(result.errors)}"
    formatted = terraform.run(hcl_exported / profile / "stacks", "fmt", "-check", "-recursive")
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr


def test_the_load_check_fails_on_an_invalid_escape(synthesized, terraform, tmp_path):
    """The defect this check exists for: `\\s` inside an HCL string literal of a validation."""
    stack = json.loads(json.dumps(synthesized.stack("gpu-validation", "addons")))
    variable = stack["variable"]["mlflow_admin_password"]
    variable["validation"][0]["condition"] = '${can(regex("^[^/&%\\\\\\s]{12,}$", var.mlflow_admin_password))}'
    found = terraform.load({"old": stack, "current": synthesized.stack("gpu-validation", "addons")}, tmp_path)
    assert any("validation" in d["summary"].lower() for d in found["old"].errors), describe(found["old"].errors)
    assert found["current"].errors == [] and found["current"].providers_missing  # helm etc. have no binary here


def _validated_variables(synthesized) -> dict[str, dict]:
    found: dict[str, dict] = {}
    for profile in SHIPPED + FIXTURES:
        for layer in LAYERS:
            for name, body in synthesized.stack(profile, layer).get("variable", {}).items():
                if body.get("validation"):
                    assert found.setdefault(name, body) == body, f"{name} differs between profiles"
    return found


def _hcl_string(value: str) -> str:
    return json.dumps(value).replace("${", "$${").replace("%{", "%%{")


def test_every_variable_validation_is_evaluated_by_terraform(synthesized, terraform, tmp_path):
    variables = _validated_variables(synthesized)
    assert set(variables) == set(VARIABLE_EXAMPLES), "every validated variable needs examples, and only those"
    good = {name: accepts[0] for name, (accepts, _) in VARIABLE_EXAMPLES.items()}
    runs = []
    for name, (accepts, refuses) in VARIABLE_EXAMPLES.items():
        for index, value in enumerate(accepts + refuses):
            values = {**good, name: value}
            body = "\n".join(f"    {key} = {_hcl_string(val)}" for key, val in values.items())
            expect = f"  expect_failures = [var.{name}]\n" if index >= len(accepts) else ""
            runs.append(f'run "{name}_{index}" {{\n  command = plan\n  variables {{\n{body}\n  }}\n{expect}}}\n')
    (tmp_path / "variables.tf.json").write_text(json.dumps({"variable": variables}))
    (tmp_path / "variables.tftest.hcl").write_text("\n".join(runs))
    init = terraform.run(tmp_path, "init", "-backend=false", "-input=false", "-no-color")
    assert init.returncode == 0, init.stderr
    tested = terraform.run(tmp_path, "test", "-no-color")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    passed = len(re.findall(r'^\s*run "[^"]+"\.\.\. pass$', tested.stdout, flags=re.MULTILINE))
    assert passed == sum(len(a) + len(r) for a, r in VARIABLE_EXAMPLES.values()), tested.stdout


def test_make_validate_runs_terraform_validate_apart_from_the_deploy_folder(synthesized, terraform, tmp_path):
    for name, stack in (
        ("build", synthesized.stack("gpu-validation", "build")),
        (
            "broken",
            {**synthesized.stack("gpu-validation", "build"), "resource": {"aws_s3_bucket": {"b": {"bucketz": "x"}}}},
        ),
    ):
        (tmp_path / "stacks" / name).mkdir(parents=True)
        (tmp_path / "stacks" / name / "cdk.tf.json").write_text(json.dumps(stack))
    operator = SlottedOperator(
        tmp_path / "stacks",
        terraform=terraform.binary,
        env={"TF_CLI_CONFIG_FILE": str(terraform.cli_config)},
        log=lambda _: None,
    )
    assert operator.validate("build") == (True, "Success! The configuration is valid.")
    ok, detail = operator.validate("broken")
    assert not ok and "bucketz" in detail
    assert not (tmp_path / "stacks" / "build" / ".terraform").exists()  # the deploy folder is untouched
