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
import os
import re
import shutil
from pathlib import Path

import pytest

from operate.layers import Operator
from stacks import LAYERS
from tests.cases import AWS_LAYERS, FIXTURES, HCL_PROFILES, SHIPPED
from tests.terraform import SlottedOperator, describe

# Left out of `make check` (terraform loads every layer and its HCL export); `make test` runs it.
pytestmark = pytest.mark.slow

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
    assert operator.validate("build") == ("valid", "Success! The configuration is valid.")
    outcome, detail = operator.validate("broken")
    assert outcome == "INVALID" and "bucketz" in detail
    assert not (tmp_path / "stacks" / "build" / ".terraform").exists()  # the deploy folder is untouched


# What Terraform 1.11.4 printed for `terraform init` with no registry reachable (a direct-only CLI
# config, HTTPS_PROXY at a closed port), and for a configuration error it finds before any download.
NO_REGISTRY = """Initializing provider plugins...
- Finding hashicorp/helm versions matching "3.0.2"...
Error: Failed to query available provider packages

Could not retrieve the list of available versions for provider
hashicorp/helm: could not connect to registry.terraform.io: failed to request
discovery document: Get
"https://registry.terraform.io/.well-known/terraform.json": dial tcp: lookup
registry.terraform.io on 10.255.255.53:53: no such host
"""
BAD_CONFIGURATION = """Error: Terraform encountered problems during initialisation, including problems
with the configuration, described below.

Error: Invalid type specification

  on cdk.tf.json line 1, in variable.x:
The keyword "nonsense" is not a valid type specification.
"""


def test_an_unreachable_registry_is_told_apart_from_a_configuration_error():
    from operate.terraform_init import registry_unreachable

    assert registry_unreachable(NO_REGISTRY)
    assert not registry_unreachable(BAD_CONFIGURATION)
    assert not registry_unreachable(BAD_CONFIGURATION + NO_REGISTRY)  # the configuration is wrong anyway
    # A provider the registry answers for but cannot match is the configuration's fault.
    assert not registry_unreachable(
        "Error: Failed to query available provider packages\nCould not retrieve the list of available versions "
        "for provider hashicorp/helm: no available releases match the given constraints 99.0.0"
    )


def fake_init(tmp_path: Path, said: str) -> str:
    """A terraform whose init fails with `said` on stderr (and whose validate would succeed)."""
    import sys

    (tmp_path / "said").write_text(said)
    binary = tmp_path / "bin" / "terraform"
    binary.parent.mkdir()
    binary.write_text(
        f"#!{sys.executable}\nimport sys\n"
        f"if sys.argv[2] == 'init':\n    sys.stderr.write(open({str(tmp_path / 'said')!r}).read())\n    sys.exit(1)\n"
        "print('Success! The configuration is valid.')\n"
    )
    binary.chmod(0o755)
    return str(binary)


@pytest.mark.parametrize(
    ("said", "outcome", "exit_code"), [(NO_REGISTRY, "not checked", 1), (BAD_CONFIGURATION, "INVALID", 1)]
)
def test_make_validate_without_a_registry_says_not_checked_never_invalid(
    tmp_path, monkeypatch, capsys, said, outcome, exit_code
):
    import main

    binary = fake_init(tmp_path, said)
    monkeypatch.setattr(main.common, "synthesize_profile", lambda config, outdir: None)
    monkeypatch.setenv("PATH", f"{Path(binary).parent}:{os.environ['PATH']}")
    for layer in ("cluster", "storage"):
        (tmp_path / "out" / "stacks" / layer).mkdir(parents=True)
    code = main.main(["validate", "--layer", "cluster", "--outdir", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == exit_code
    assert out.splitlines()[0] == f"{outcome} gpu-validation cluster:"
    if outcome == "not checked":
        assert "INVALID" not in out + err
        assert err.strip().startswith("Run make validate where registry.terraform.io answers")
        assert "cluster was not checked (neither valid nor invalid)" in " ".join(err.split())
    else:
        assert "Invalid type specification" in out and err == ""


def test_terraform_itself_without_a_registry_is_not_checked(tmp_path):
    """The real Terraform, its registry unreachable (a proxy at a closed port), on a layer needing
    a provider from the registry: not checked. A configuration error it finds first: INVALID."""
    binary = shutil.which("terraform")
    if binary is None:
        pytest.skip("SKIPPING: terraform is not on PATH")
    direct = tmp_path / "direct.tfrc"
    direct.write_text("provider_installation {\n  direct {}\n}\n")
    helm = {"terraform": {"required_providers": {"helm": {"source": "hashicorp/helm", "version": "3.0.2"}}}}
    for layer, stack in (("ok", helm), ("broken", {**helm, "variable": {"x": {"type": "nonsense"}}})):
        (tmp_path / "stacks" / layer).mkdir(parents=True)
        (tmp_path / "stacks" / layer / "cdk.tf.json").write_text(json.dumps(stack))
    closed = "http://127.0.0.1:9"
    env = {"TF_CLI_CONFIG_FILE": str(direct), "HTTPS_PROXY": closed, "HTTP_PROXY": closed, "NO_PROXY": ""}
    operator = Operator(tmp_path / "stacks", terraform=binary, env=env, log=lambda _: None)
    outcome, detail = operator.validate("ok")
    assert outcome == "not checked", detail
    assert "Failed to query available provider packages" in detail
    outcome, detail = operator.validate("broken")
    assert outcome == "INVALID" and "Invalid type specification" in detail


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 (Terraform talks to network mirrors over HTTPS only)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "mirror.pem", tmp_path / "mirror.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_file, key_file


@pytest.mark.parametrize("status", [503, 429])
def test_a_provider_mirror_refusing_or_missing_a_provider_is_not_checked(tmp_path, status):
    """The real Terraform, against a network mirror answering every request with an error status and
    against a filesystem mirror without the provider: neither says anything of the configuration,
    so validate says not checked, never INVALID (which would send the user to fix valid code)."""
    import http.server
    import ssl
    import threading

    binary = shutil.which("terraform")
    if binary is None:
        pytest.skip("SKIPPING: terraform is not on PATH")

    class Refusing(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    cert, key = _self_signed(tmp_path)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    helm = {"terraform": {"required_providers": {"helm": {"source": "hashicorp/helm", "version": "3.0.2"}}}}
    (tmp_path / "stacks" / "ok").mkdir(parents=True)
    (tmp_path / "stacks" / "ok" / "cdk.tf.json").write_text(json.dumps(helm))
    (tmp_path / "empty").mkdir()
    mirrors = {
        "network": f'network_mirror {{\n    url = "https://127.0.0.1:{server.server_port}/"\n  }}',
        "filesystem": f'filesystem_mirror {{\n    path = "{tmp_path / "empty"}"\n  }}',
    }
    try:
        for kind, block in mirrors.items():
            config = tmp_path / f"{kind}.tfrc"
            config.write_text(f"provider_installation {{\n  {block}\n}}\n")
            env = {"TF_CLI_CONFIG_FILE": str(config), "SSL_CERT_FILE": str(cert)}
            operator = Operator(tmp_path / "stacks", terraform=binary, env=env, log=lambda _: None)
            outcome, detail = operator.validate("ok")
            assert outcome == "not checked", (kind, detail)
            said = " ".join(detail.split())
            assert (f"{status} " in said) if kind == "network" else ("not found in any of the search locations" in said)
    finally:
        server.shutdown()
