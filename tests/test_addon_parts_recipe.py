"""An add-on with parts in several layers is one package plus one catalog line: a throwaway add-on
(`echo`) with a Pod Identity role and a published record in the addons layer, an object and a
client label in every tenant namespace, a network path from the tenants to its pods, a verify
check and a rule the profile validator runs, written into a temporary copy of the repository.
Nothing else in the copy changes; the copy synthesizes every layer, its verify runs the check, its
validator the rule, and the copy still keeps the isolation rules (no module outside addons/ names an
add-on, no add-on names another). Starts its own jsii runtime."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.netpol import Peer, allowed
from tests.repo_copy import copy_repository

ROOT = Path(__file__).resolve().parents[1]

DEFINITION = '''
"""echo: a throwaway add-on with parts in several layers (tests/test_addon_parts_recipe.py)."""

from __future__ import annotations

from addons.definition import AddonDefinition, ReleaseConfig
from profiles.versions import ChartRef


class EchoConfig(ReleaseConfig):
    """echo's settings."""

    enabled: bool = False
    """Install echo."""


DEFINITION = AddonDefinition(
    key="echo",
    settings_type=EchoConfig,
    description="echo, a throwaway add-on (off by default).",
    pin=ChartRef(
        repository="https://stefanprodan.github.io/podinfo", chart="podinfo", version="6.9.2", app_version="6.9.2"
    ),
    namespace="echo",
)
SERVER = {"app.kubernetes.io/name": "echo-podinfo"}
PORT = 9898
CLIENT_LABEL = {"gpu-platform/echo-client": "true"}
'''

INSTALL = '''
"""Installs echo with a Pod Identity role of its own; the role's ARN is its record for later layers."""

from __future__ import annotations

from typing import Any

from cdktf_cdktf_provider_aws.data_aws_caller_identity import DataAwsCallerIdentity

from addons.echo import CLIENT_LABEL, DEFINITION, PORT, SERVER, EchoConfig
from addons.echo.parts import EchoIdentity
from components.helm.addon import AddonContext, Companions, HelmAddonSpec, RuntimePath
from components.helm.release import Values
from components.iam import PodIdentityBinding, pod_identity_association, pod_identity_role


class EchoValues(Values):
    service_account: dict[str, Any]


class EchoAddon(HelmAddonSpec[EchoConfig]):
    definition = DEFINITION
    release_name = "echo"

    def companions(self, ctx: AddonContext, settings: EchoConfig) -> Companions:
        binding = PodIdentityBinding(
            account_id=DataAwsCallerIdentity(ctx.scope, "echo-account").account_id,
            cluster_name=ctx.config.name,
            namespace=DEFINITION.namespace,
            service_account="echo",
        )
        role = pod_identity_role(ctx.scope, "echo-role", name=f"{ctx.config.name}-echo", binding=binding)
        association = pod_identity_association(
            ctx.scope, "echo-identity", role=role, binding=binding, cluster_name=ctx.cluster.cluster_name
        )
        return Companions(ready=(association,), record=EchoIdentity(role_arn=role.arn))

    def values(self, ctx: AddonContext, settings: EchoConfig) -> EchoValues:
        return EchoValues(service_account={"enabled": True, "name": "echo"})

    def network_allows(self, ctx: AddonContext, settings: EchoConfig) -> dict[str, dict[str, Any]]:
        clients = [{"namespaceSelector": {"matchLabels": CLIENT_LABEL}}]
        ingress = [{"from": clients, "ports": [{"protocol": "TCP", "port": PORT}]}]
        policy = {"podSelector": {"matchLabels": SERVER}, "policyTypes": ["Ingress"], "ingress": ingress}
        return {"allow-echo-clients": policy}

    def runtime_paths(self, settings: EchoConfig) -> tuple[RuntimePath, ...]:
        return (RuntimePath(what="tenants call echo", direction="Ingress", peer="tenants", port=PORT),)


ADDON = EchoAddon()
'''

PARTS = '''
"""echo's contributions: client access for the tenants, an object in each tenant namespace, the
record it hands later layers, and a read-only verify check."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from addons.echo import CLIENT_LABEL, DEFINITION, PORT, SERVER
from addons.parts import AddonParts, TenantPart
from components.acceptance import AcceptanceCheck, CheckResult, CheckRun, MultiNodeSite
from components.k8s.clients import ClientAccess
from profiles.models import PlatformConfig
from profiles.workloads import TenantConfig
from stacks.contracts import AddonRecord


@dataclass(frozen=True, kw_only=True)
class EchoIdentity(AddonRecord):
    """echo's identity, as later layers read it."""

    OUTPUTS: ClassVar[Mapping[str, str]] = {"role_arn": "role_arn"}

    role_arn: str
    """The IAM role echo's pods run as."""


class EchoParts(AddonParts):
    records: ClassVar[Mapping[str, type[AddonRecord]]] = {"addons": EchoIdentity}

    def clients(self, config: PlatformConfig) -> ClientAccess:
        server = {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "echo"}},
            "podSelector": {"matchLabels": SERVER},
        }
        egress = [{"to": [server], "ports": [{"protocol": "TCP", "port": PORT}]}]
        return ClientAccess(
            labels=CLIENT_LABEL,
            allow={"allow-echo": {"policyTypes": ["Egress"], "egress": egress}},
            env={"ECHO_URL": f"http://echo.echo:{PORT}"},
        )

    def tenant(self, config: PlatformConfig, tenant: TenantConfig) -> TenantPart:
        meta = {"name": "echo-endpoint", "namespace": tenant.name}
        return TenantPart(objects=({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {}},))

    def checks(self, config: PlatformConfig, site: MultiNodeSite | None) -> tuple[AcceptanceCheck, ...]:
        def run(check: CheckRun) -> CheckResult:
            asked = ["get", "deploy", "-n", "echo", "echo-podinfo", "-o", "jsonpath={.status.readyReplicas}"]
            count = int(check.kubectl(asked).stdout or 0)
            return CheckResult("echo-ready", count > 0, f"{count} echo pod(s) ready")

        return (AcceptanceCheck(name="echo-ready", run=run),)


PARTS = EchoParts(DEFINITION)
'''

PROFILE_RULES = '''
"""What echo needs of the whole profile: a tenant to serve."""

from __future__ import annotations

from collections.abc import Iterator

from addons.definition import PlatformConfig, ProfileRules
from profiles.base import FieldProblem


def _has_tenants(config: PlatformConfig) -> Iterator[FieldProblem]:
    if not config.workloads.tenants:
        yield FieldProblem(
            ("addons", "echo", "enabled"), True, "echo serves tenants and the profile has none", allowed="a tenant"
        )


RULES = ProfileRules(checks=(_has_tenants,))
'''

# Run in the copy: the profile validator runs echo's rule (only while echo is enabled).
VALIDATE_IN_THE_COPY = """
import yaml
from profiles import ProfileError, validate_profile

document = yaml.safe_load(open("copy-profile.yaml"))
document["workloads"]["tenants"] = []
try:
    validate_profile(document)
    print("accepted")
except ProfileError as refused:
    print(str(refused).replace(chr(10), " "))
document["addons"]["echo"]["enabled"] = False
validate_profile(document)
print("accepted without echo")
"""

# Run in the copy: verify with the suite's fake kubectl, and the add-on list the profile sees.
VERIFY_IN_THE_COPY = """
import json
from profiles import load_profile
from manifests.verify import run_checks
from tests.test_verify import FakeKubectl, log

config = load_profile("copy-profile.yaml")
results = run_checks(config, kubectl=FakeKubectl(log("nccl-good-p5.log")))
print(json.dumps([[r.name, r.passed, r.detail] for r in results]))
"""


def write_the_addon(copy: Path) -> None:
    package = copy / "addons" / "echo"
    package.mkdir()
    files = {"__init__.py": DEFINITION, "install.py": INSTALL, "parts.py": PARTS, "profile_rules.py": PROFILE_RULES}
    for name, text in files.items():
        (package / name).write_text(textwrap.dedent(text).lstrip())
    catalog = (copy / "addons" / "catalog.py").read_text()
    catalog = catalog.replace("from addons import (\n", "from addons import (\n    echo,\n", 1)
    catalog = re.sub(r"(DEFINITIONS[^=]*= \((?:\n    [^\n]*)*)\n\)", r"\1\n    echo.DEFINITION,\n)", catalog, count=1)
    assert catalog.count("echo") == 2
    (copy / "addons" / "catalog.py").write_text(catalog)


def run_in(copy: Path, *args: str, timeout: int = 600) -> str:
    env = {**os.environ, "PYTHONPATH": str(copy)}
    done = subprocess.run(list(args), cwd=copy, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_an_addon_with_parts_in_every_layer_is_one_package_and_one_catalog_line(tmp_path):
    copy = tmp_path / "repo"
    copy_repository(copy)
    write_the_addon(copy)
    shutil.copy(ROOT / "profiles" / "p5-training.yaml", copy / "copy-profile.yaml")
    run_in(
        copy,
        sys.executable,
        "-c",
        "import yaml, pathlib; p = pathlib.Path('copy-profile.yaml'); d = yaml.safe_load(p.read_text()); "
        "d['name'] = 'parts-lab'; d.setdefault('addons', {})['echo'] = {'enabled': True}; "
        "p.write_text(yaml.safe_dump(d))",
    )
    run_in(copy, sys.executable, "main.py", "synth", "--profile", "copy-profile.yaml", "--outdir", "out")

    def stack(layer: str) -> dict:
        return json.loads(next((copy / "out" / "stacks").glob(f"{layer}/cdk.tf.json")).read_text())

    addons, workloads = stack("addons"), stack("workloads")
    # The role in the addons layer: Pod Identity's trust, bound to echo's service account.
    (role,) = [r for r in addons["resource"]["aws_iam_role"].values() if r["name"] == "parts-lab-echo"]
    trust = json.loads(role["assume_role_policy"])["Statement"][0]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert trust["Condition"]["StringEquals"]["aws:RequestTag/kubernetes-service-account"] == "echo"
    associations = addons["resource"]["aws_eks_pod_identity_association"].values()
    assert any(a["namespace"] == "echo" and a["service_account"] == "echo" for a in associations)
    # Its record published under its key, described by the record's docstring.
    assert addons["output"]["echo_role_arn"]["description"] == "The IAM role echo's pods run as"

    def manifests(stack_json: dict) -> list[dict]:
        # A manifest with a value from another layer is an expression (a string), not an object.
        bodies = stack_json["resource"]["kubernetes_manifest"].values()
        return [body["manifest"] for body in bodies if isinstance(body["manifest"], dict)]

    tenant_objects = [m for m in manifests(workloads) if m["metadata"].get("namespace") == "ml-team"]
    (namespace,) = [m for m in manifests(workloads) if m["kind"] == "Namespace" and m["metadata"]["name"] == "ml-team"]
    assert namespace["metadata"]["labels"]["gpu-platform/echo-client"] == "true"
    assert {"ConfigMap", "echo-endpoint"} <= {v for m in tenant_objects for v in (m["kind"], m["metadata"]["name"])}
    # The network path, end to end: the tenant's egress and echo's ingress both admit it.
    policies = [m for m in manifests(workloads) + manifests(addons) if m["kind"] == "NetworkPolicy"]
    server = Peer(namespace="echo", labels={"app.kubernetes.io/name": "echo-podinfo"})
    tenant_pod = Peer(namespace="ml-team", namespace_labels=namespace["metadata"]["labels"])
    assert allowed(policies, namespace="ml-team", direction="Egress", peer=server, protocol="TCP", port=9898)
    assert allowed(
        policies,
        namespace="echo",
        direction="Ingress",
        peer=tenant_pod,
        protocol="TCP",
        port=9898,
        pod_labels={"app.kubernetes.io/name": "echo-podinfo"},
    )
    assert not allowed(
        policies,
        namespace="echo",
        direction="Ingress",
        peer=Peer(namespace="default"),
        protocol="TCP",
        port=9898,
        pod_labels={"app.kubernetes.io/name": "echo-podinfo"},
    )

    # The profile validator runs its rule while it is enabled, naming the field.
    refused, accepted = run_in(copy, sys.executable, "-c", VALIDATE_IN_THE_COPY).strip().splitlines()[-2:]
    assert "addons.echo.enabled" in refused and "echo serves tenants and the profile has none" in refused, refused
    assert accepted == "accepted without echo"

    # verify runs its check (read-only, with the platform's): the fake cluster has no echo pods.
    results = json.loads(run_in(copy, sys.executable, "-c", VERIFY_IN_THE_COPY).strip().splitlines()[-1])
    names = [name for name, _, _ in results]
    assert names.index("repair-loop") < names.index("echo-ready") < names.index("gpu-smoke-test")
    assert ["echo-ready", False, "0 echo pod(s) ready"] in results

    # Nothing outside the package names it, and it names no other add-on.
    rules = "test_only_addons_name_an_addon or test_no_addon_imports_another or test_imports_point_down"
    run_in(
        copy, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_architecture.py", "-k", rules
    )
