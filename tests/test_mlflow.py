"""MLflow: the storage layer's database and artifact bucket, the addons layer's release, identity
and NetworkPolicies, the tracking URI's wiring into notebooks, workflows and tenants, the database
login sidecar, and the validation check."""

from __future__ import annotations

import fnmatch
import importlib.util
import ipaddress
import json
import os
import re
import stat
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from addons.catalog import CHARTS
from addons.contributions import tenant_additions
from addons.mlflow import POSTGRES_MAJOR_VERSION as MLFLOW_POSTGRES_MAJOR_VERSION
from addons.mlflow import access as mlflow_access
from addons.mlflow.check import MLFLOW_CHECK, MLFLOW_CHECK_ARTIFACT, MLFLOW_CHECK_METRIC, check_mlflow
from addons.mlflow.install import ADMIN_PASSWORD_RULE, AUTH_DATABASE, DB_LOGIN_SECRET, PASSFILE, SCRIPT_SOURCE
from addons.mlflow.store import APP_USERNAME
from components.images import project_image_tag
from components.k8s.tenant import SharedStorage, TenantProps, tenant_objects
from manifests.render import render
from profiles import available_profiles, load_profile
from profiles.workloads import TenantConfig
from tests.cases import ALL_PROFILES, FIXTURES, SHIPPED, profile_source
from tests.netpol import Peer, allowed
from tests.synth_helpers import resources

ALL = SHIPPED + FIXTURES
WITH_MLFLOW = tuple(p for p in ALL if load_profile(profile_source(p)).addons.mlflow.enabled)
WITHOUT_MLFLOW = tuple(p for p in ALL if p not in WITH_MLFLOW)
REMOTE_STORAGE = "${data.terraform_remote_state.cross-stack-reference-input-storage.outputs."


def example_backend():
    """The storage layer's record as plain values (no Terraform tokens)."""
    from addons.mlflow.backend import MlflowBackend

    return MlflowBackend(
        address="db.example.internal",
        database="mlflow",
        username=APP_USERNAME,
        owner_role="mlflow_owner",
        master_username="mlflow",
        resource_id="db-ABC",
        secret_arn="arn:aws:secretsmanager:us-west-2:123456789012:secret:rds!db",
        kms_key_arn="arn:aws:kms:us-west-2:123456789012:key/x",
        bucket_name="b",
        bucket_arn="arn:aws:s3:::b",
    )


def the(items: dict) -> dict:
    (item,) = items.values()
    return item


def mlflow_release(synthesized, profile) -> dict:
    (release,) = [
        r for r in resources(synthesized.stack(profile, "addons"), "helm_release").values() if r["name"] == "mlflow"
    ]
    return release


REMOTE_BUILD = "${data.terraform_remote_state.cross-stack-reference-input-build.outputs."
EXAMPLE_IMAGE = "111122223333.dkr.ecr.us-west-2.amazonaws.com/p/mlflow:mlflow3.15.1-0123456789ab"


def built_mlflow_image(synthesized, profile) -> tuple[str, str]:
    """The MLflow image the addons layer names: a reference to the build layer's output that is
    image-mlflow's ECR repository URL, and the tag that build pushes (images/mlflow's)."""
    repository = chart_values(mlflow_release(synthesized, profile))["image"]["repository"]
    assert repository.startswith(REMOTE_BUILD), repository
    output = synthesized.stack(profile, "build")["output"][repository[len(REMOTE_BUILD) : -1]]["value"]
    assert re.fullmatch(r"\$\{aws_ecr_repository\.image-mlflow_repository_\w+\.repository_url\}", output), output
    return repository, project_image_tag("mlflow")


def chart_values(release: dict) -> dict:
    (document,) = release["values"]
    return yaml.safe_load(document)


def addon_objects(synthesized, profile) -> list[dict]:
    return [
        b["manifest"]
        for b in resources(synthesized.stack(profile, "addons"), "kubernetes_manifest").values()
        if isinstance(b["manifest"], dict) and "kind" in b["manifest"]
    ]


def test_shipped_profiles_run_mlflow_and_one_fixture_does_not():
    enabled = {p: load_profile(profile_source(p)).addons.mlflow.enabled for p in ALL_PROFILES}
    assert all(enabled[p] for p in available_profiles())  # the choice (and its cost) is explained in each profile
    assert not all(enabled.values())  # and the off path is synthesized too (in the full suite)


# --- storage layer -------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", WITH_MLFLOW)
def test_database_is_private_encrypted_backed_up_and_its_password_is_rds_managed(synthesized, profile):
    config = synthesized.configs[profile]
    protect, database = config.storage.protect_from_destroy, config.addons.mlflow.database
    stack = synthesized.stack(profile, "storage")
    db = the(resources(stack, "aws_db_instance"))
    (key_id,) = resources(stack, "aws_kms_key")
    assert (db["engine"], db["engine_version"]) == ("postgres", MLFLOW_POSTGRES_MAJOR_VERSION)
    assert db["storage_encrypted"] is True and db["kms_key_id"] == f"${{aws_kms_key.{key_id}.arn}}"
    # RDS makes and rotates the password in Secrets Manager under the same key; none is written anywhere.
    assert db["manage_master_user_password"] is True
    assert db["master_user_secret_kms_key_id"] == db["kms_key_id"]
    assert not {"password", "password_wo"} & set(db)
    assert db["publicly_accessible"] is False
    # IAM authentication (and any change) takes effect when this layer is applied, not in the next
    # maintenance window: the addons layer's server logs in with IAM tokens right after.
    assert db["iam_database_authentication_enabled"] is True and db["apply_immediately"] is True
    assert db["backup_retention_period"] == database.backup_retention_days >= 1
    assert (db["instance_class"], db["multi_az"]) == (database.instance_class, database.multi_az)
    # Data protection follows storage.protect_from_destroy, like the buckets and the file system.
    assert db["deletion_protection"] is protect and db["lifecycle"]["prevent_destroy"] is protect
    assert db["skip_final_snapshot"] is (not protect)
    assert ("final_snapshot_identifier" in db) is protect
    subnets = the(resources(stack, "aws_db_subnet_group"))["subnet_ids"]
    assert "cross-stack-reference-input-cluster" in json.dumps(subnets)  # the cluster's private subnets
    assert db["db_subnet_group_name"].startswith("${aws_db_subnet_group.")


@pytest.mark.parametrize("profile", WITH_MLFLOW)
def test_database_admits_postgres_only_from_cluster_nodes(synthesized, profile):
    stack = synthesized.stack(profile, "storage")
    db = the(resources(stack, "aws_db_instance"))
    (group_ref,) = db["vpc_security_group_ids"]
    group_id = group_ref.removeprefix("${aws_security_group.").removesuffix(".id}")
    group = resources(stack, "aws_security_group")[group_id]
    assert "ingress" not in group and "egress" not in group  # rules are separate resources, listed here
    rules = [
        r
        for r in resources(stack, "aws_vpc_security_group_ingress_rule").values()
        if r["security_group_id"] == group_ref
    ]
    assert len(rules) == 1
    (rule,) = rules
    assert (rule["ip_protocol"], rule["from_port"], rule["to_port"]) == ("tcp", 5432, 5432)
    # The nodes (and pods) use the EKS cluster security group.
    assert "cidr_ipv4" not in rule and rule["referenced_security_group_id"].endswith("cluster_security_group_id}")
    # The node group's egress is explicit: one path to the database, nothing wider.
    (egress,) = [
        r
        for r in resources(stack, "aws_vpc_security_group_egress_rule").values()
        if r.get("referenced_security_group_id") == group_ref
    ]
    assert (egress["from_port"], egress["to_port"]) == (5432, 5432)


@pytest.mark.parametrize("profile", WITHOUT_MLFLOW)
def test_no_database_and_no_release_without_mlflow(synthesized, profile):
    assert not resources(synthesized.stack(profile, "storage"), "aws_db_instance")
    names = {r["name"] for r in resources(synthesized.stack(profile, "addons"), "helm_release").values()}
    assert "mlflow" not in names


# --- addons layer --------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", WITH_MLFLOW)
def test_release_runs_authenticated_private_server_on_rds_and_s3(synthesized, profile):
    settings = synthesized.configs[profile].addons.mlflow
    release = mlflow_release(synthesized, profile)
    values = chart_values(release)
    assert (release["chart"], release["version"]) == ("mlflow", CHARTS["mlflow"].version)
    repository, tag = built_mlflow_image(synthesized, profile)
    assert values["image"] == {"repository": repository, "tag": tag}
    # The chart's own init containers (the ini-file initializer, and the migration one, off) too.
    assert values["initImages"] == {name: values["image"] for name in ("iniFileInitializer", "mlflowDbMigration")}
    assert values["backendStore"]["postgres"]["driver"] == values["auth"]["postgres"]["driver"] == "psycopg2"
    assert values["service"]["type"] == "ClusterIP"
    assert values["auth"]["enabled"] is True and values["auth"]["appName"] == "basic-auth"
    tenants = len(synthesized.configs[profile].workloads.tenants)
    expected = settings.default_permission or ("NO_PERMISSIONS" if tenants > 1 else "READ")
    assert values["auth"]["defaultPermission"] == expected
    assert values["backendStore"]["postgres"]["host"].startswith(REMOTE_STORAGE)
    assert values["auth"]["postgres"]["database"] == AUTH_DATABASE
    # Artifacts through the server to the artifact bucket (clients need no S3 access).
    assert values["artifactRoot"]["proxiedArtifactStorage"] is True
    assert values["artifactRoot"]["s3"]["bucket"].startswith(REMOTE_STORAGE)
    assert "mlflow_artifacts" in values["artifactRoot"]["s3"]["bucket"]
    # /metrics sits behind basic auth: no monitor that would scrape 401s.
    assert values["serviceMonitor"] == {"enabled": False}
    # The database login never passes through values: the chart's Secret has an empty password,
    # the sidecar mints IAM tokens for the application role; the master's secret is not named.
    assert values["backendStore"]["existingDatabaseSecret"]["name"] == DB_LOGIN_SECRET
    assert values["extraEnvVars"]["PGPASSFILE"] == PASSFILE
    (sidecar,) = values["initContainers"]
    assert sidecar["restartPolicy"] == "Always" and "startupProbe" in sidecar
    assert sidecar["image"] == f"{repository}:{tag}"
    env = {e["name"]: e["value"] for e in sidecar["env"]}
    assert env["PGUSER"] == APP_USERNAME and "DB_SECRET_ARN" not in env
    assert "master_user_secret" not in release["values"][0]
    assert not re.search(r"(?i)password\s*[:=]\s*\S", release["values"][0].replace("passwordKey: password", ""))


def test_admin_password_from_variable_is_sensitive_and_checked(synthesized):
    release = mlflow_release(synthesized, "gpu-validation")
    assert release["set_sensitive"] == [{"name": "auth.adminPassword", "value": "${var.mlflow_admin_password}"}]
    variable = synthesized.stack("gpu-validation", "addons")["variable"]["mlflow_admin_password"]
    assert variable["sensitive"] is True
    rule = re.compile(ADMIN_PASSWORD_RULE)
    assert rule.fullmatch("correct-horse-battery")
    for bad in (
        "short-pass",
        "has/slash-in-it",
        "has&ampersand1",
        "percent%sign123",
        "back\\slash-12345",
        "with space-1234",
    ):
        assert not rule.fullmatch(bad), bad  # sed (the chart's ini writer) or configparser would corrupt it
    condition = variable["validation"][0]["condition"]
    assert "var.mlflow_admin_password" in condition


def test_admin_password_from_existing_secret_is_not_in_terraform(synthesized):
    release = mlflow_release(synthesized, "jark")
    values = chart_values(release)
    assert values["auth"]["existingAdminSecret"]["name"] == "mlflow-admin"
    assert "set_sensitive" not in release
    assert "mlflow_admin_password" not in synthesized.stack("jark", "addons").get("variable", {})


@pytest.mark.parametrize("profile", WITH_MLFLOW)
def test_server_role_reaches_its_bucket_and_its_database_user_only(synthesized, profile):
    stack = synthesized.stack(profile, "addons")
    region = synthesized.configs[profile].region
    (role,) = [r for r in resources(stack, "aws_iam_role").values() if r["name"].endswith("-mlflow")]
    trust = json.loads(role["assume_role_policy"])["Statement"][0]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    tags = trust["Condition"]["StringEquals"]
    assert (tags["aws:RequestTag/kubernetes-namespace"], tags["aws:RequestTag/kubernetes-service-account"]) == (
        "mlflow",
        "mlflow",
    )
    by_action = role_statements(stack, role)
    assert set(by_action) == {
        "s3:ListBucket",
        "s3:AbortMultipartUpload",
        "s3:DeleteObject",
        "s3:GetObject",
        "s3:PutObject",
        "rds-db:connect",
    }
    assert "mlflow_artifacts" in by_action["s3:ListBucket"]["Resource"]
    assert by_action["s3:GetObject"]["Resource"].endswith("/*")
    # A token for the application role of this one instance (rds-db ARNs name the resource id).
    database_user = by_action["rds-db:connect"]["Resource"]
    assert database_user.startswith(f"arn:aws:rds-db:{region}:${{data.aws_caller_identity.")
    assert re.search(
        r":dbuser:\$\{data\.terraform_remote_state\.[^}]*resource_id\}/" + APP_USERNAME + "$", database_user
    )
    associations = {
        a["service_account"]: a
        for a in resources(stack, "aws_eks_pod_identity_association").values()
        if a["namespace"] == "mlflow"
    }
    assert set(associations) == {"mlflow", "mlflow-db-setup"}
    release = mlflow_release(synthesized, profile)
    assert any("aws_eks_pod_identity_association.mlflow" in d for d in release["depends_on"])


def role_statements(stack: dict, role: dict) -> dict[str, dict]:
    """The role's inline policy statements, by action."""
    role_key = next(k for k, r in resources(stack, "aws_iam_role").items() if r is role)
    (policy,) = [
        p for p in resources(stack, "aws_iam_role_policy").values() if f"aws_iam_role.{role_key}." in p["role"]
    ]
    return {action: s for s in json.loads(policy["policy"])["Statement"] for action in s["Action"]}


@pytest.mark.parametrize("profile", WITH_MLFLOW)
def test_only_the_setup_job_reads_the_master_password(synthesized, profile):
    """The master user's secret is the setup job's alone: its role reads that secret (decrypted only
    through Secrets Manager) and nothing else, and only the setup job's service account assumes it."""
    stack = synthesized.stack(profile, "addons")
    region = synthesized.configs[profile].region
    (role,) = [r for r in resources(stack, "aws_iam_role").values() if r["name"].endswith("-mlflow-db-setup")]
    tags = json.loads(role["assume_role_policy"])["Statement"][0]["Condition"]["StringEquals"]
    assert tags["aws:RequestTag/kubernetes-service-account"] == "mlflow-db-setup"
    by_action = role_statements(stack, role)
    assert set(by_action) == {"secretsmanager:GetSecretValue", "kms:Decrypt"}
    assert "master_user_secret" in by_action["secretsmanager:GetSecretValue"]["Resource"]
    assert by_action["kms:Decrypt"]["Condition"] == {
        "StringEquals": {"kms:ViaService": f"secretsmanager.{region}.amazonaws.com"}
    }
    # No other role of the layer names the secret.
    role_key = next(k for k, r in resources(stack, "aws_iam_role").items() if r is role)
    naming_it = [
        p["role"] for p in resources(stack, "aws_iam_role_policy").values() if "master_user_secret" in p["policy"]
    ]
    assert len(naming_it) == 1 and f"aws_iam_role.{role_key}." in naming_it[0]


@pytest.mark.parametrize("profile", WITH_MLFLOW)
def test_only_client_namespaces_reach_the_server_and_the_server_reaches_only_its_stores(synthesized, profile):
    policies = [o for o in addon_objects(synthesized, profile) if o["kind"] == "NetworkPolicy"]
    server = {"app.kubernetes.io/name": "mlflow"}
    vpc = synthesized.configs[profile].cluster.vpc.cidr
    database_ip = str(next(ipaddress.ip_network(vpc).hosts()))

    def ingress(peer: Peer, port: int = 5000) -> bool:
        return allowed(
            policies, namespace="mlflow", direction="Ingress", peer=peer, protocol="TCP", port=port, pod_labels=server
        )

    client = Peer(namespace="team-a", namespace_labels=dict(mlflow_access.CLIENT_LABEL))
    assert ingress(client)
    assert not ingress(client, port=8080)
    assert not ingress(Peer(namespace="team-b"))  # no client label
    assert not ingress(Peer(ip="203.0.113.10"))

    def egress(peer: Peer, port: int) -> bool:
        return allowed(
            policies, namespace="mlflow", direction="Egress", peer=peer, protocol="TCP", port=port, pod_labels=server
        )

    assert egress(Peer(ip=database_ip), 5432)
    assert egress(Peer(ip="52.94.0.10"), 443)  # Secrets Manager, S3, STS
    assert egress(Peer(ip="169.254.170.23"), 80)  # the Pod Identity agent
    assert not egress(Peer(ip="169.254.169.254"), 80)  # IMDS stays out of reach
    assert not egress(Peer(ip="52.94.0.10"), 5432)  # PostgreSQL only inside the VPC


def test_tenants_get_the_tracking_uri_and_a_way_to_the_server_only_with_mlflow():
    shared = SharedStorage(
        region="us-west-2",
        fsx_file_system_id=None,
        fsx_dns_name=None,
        fsx_mount_name=None,
        fsx_capacity_gib=1200,
        fsx_tenant_directories=False,
        bucket_names={},
    )
    tenant = TenantConfig(name="team-a")

    def objects(profile: str) -> list[dict]:
        config = load_profile(profile_source(profile))
        additions = tenant_additions(config, tenant)
        return tenant_objects(
            TenantProps(config=tenant, storage=shared, dra_gpu_counts=(), gpu_quota=8, additions=additions)
        )

    with_mlflow, without = objects("p5-training"), objects("odcr")
    namespace = next(o for o in with_mlflow if o["kind"] == "Namespace")
    assert namespace["metadata"]["labels"].items() >= mlflow_access.CLIENT_LABEL.items()
    (config_map,) = [o for o in with_mlflow if o["kind"] == "ConfigMap"]
    assert config_map["data"] == {"MLFLOW_TRACKING_URI": mlflow_access.TRACKING_URI}
    server = Peer(namespace="mlflow", labels={"app.kubernetes.io/name": "mlflow"})
    policies = [o for o in with_mlflow if o["kind"] == "NetworkPolicy"]
    assert allowed(policies, namespace="team-a", direction="Egress", peer=server, protocol="TCP", port=5000)
    assert not allowed(
        policies,
        namespace="team-a",
        direction="Egress",
        peer=Peer(namespace="mlflow", labels={"app": "other"}),
        protocol="TCP",
        port=5000,
    )
    plain = [o for o in without if o["kind"] == "NetworkPolicy"]
    assert not allowed(plain, namespace="team-a", direction="Egress", peer=server, protocol="TCP", port=5000)
    assert not [o for o in without if o["kind"] == "ConfigMap"]


def test_notebooks_and_workflows_get_the_tracking_uri(synthesized):
    by_name = {
        r["name"]: chart_values(r) for r in resources(synthesized.stack("jark", "addons"), "helm_release").values()
    }
    assert by_name["jupyterhub"]["singleuser"]["extraEnv"] == {"MLFLOW_TRACKING_URI": mlflow_access.TRACKING_URI}
    assert by_name["argo-workflows"]["mainContainer"]["env"] == mlflow_access.tracking_env()
    namespaces = {o["metadata"]["name"]: o for o in addon_objects(synthesized, "jark") if o["kind"] == "Namespace"}
    for client in ("jupyterhub", "workflows"):
        assert namespaces[client]["metadata"]["labels"].items() >= mlflow_access.CLIENT_LABEL.items()
    allows = {
        (o["metadata"]["namespace"], o["metadata"]["name"])
        for o in addon_objects(synthesized, "jark")
        if o["kind"] == "NetworkPolicy"
    }
    assert {("jupyterhub", "allow-mlflow"), ("workflows", "allow-mlflow")} <= allows


def test_tracking_uri_is_the_release_service():
    assert mlflow_access.TRACKING_URI == "http://mlflow.mlflow.svc.cluster.local:80"


def mlflow_allows_host(allowed: list[str], host: str) -> bool:
    """MLflow's Host-header check (mlflow/server/security_utils.py): exact, or fnmatch when the
    pattern has a '*'."""
    return "*" in allowed or any(fnmatch.fnmatch(host, a) if "*" in a else host == a for a in allowed)


@pytest.mark.parametrize("profile", WITH_MLFLOW)
def test_the_server_accepts_the_host_headers_its_clients_send(synthesized, profile):
    allowed = chart_values(mlflow_release(synthesized, profile))["serverAllowedHosts"]
    service_host = urlsplit(mlflow_access.TRACKING_URI).hostname
    for host in (
        service_host,
        f"{service_host}:80",  # the tracking URI, with and without its default port
        "mlflow.mlflow",
        "mlflow.mlflow.svc:80",  # short names inside the cluster
        "localhost:5000",
        "127.0.0.1:5000",
    ):  # kubectl port-forward
        assert mlflow_allows_host(allowed, host), host
    for host in ("evil.example.com", "10.0.0.5:5000", "mlflow.other-namespace.svc.cluster.local"):
        assert not mlflow_allows_host(allowed, host), host  # still a DNS-rebinding guard
    assert "*" not in allowed


# --- the database login sidecar ------------------------------------------------------------------


def login_module():
    spec = importlib.util.spec_from_file_location("db_login", SCRIPT_SOURCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse_passfile_line(line: str) -> list[str]:
    """libpq's reading of one password-file line: ':' separates fields, backslash escapes."""
    fields, current, escaped = [], "", False
    for char in line.rstrip("\n"):
        if escaped:
            current, escaped = current + char, False
        elif char == "\\":
            escaped = True
        elif char == ":":
            fields.append(current)
            current = ""
        else:
            current += char
    return [*fields, current]


def test_password_file_is_owner_only_and_escaped_as_libpq_reads_it(tmp_path):
    module = login_module()
    path = tmp_path / "pgpass"
    password = "p:ss\\wo:rd!"
    module.write_passfile(str(path), "mlflow", password)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert parse_passfile_line(path.read_text()) == ["*", "*", "*", "mlflow", password]
    module.write_passfile(str(path), "mlflow", "rotated")  # replaced in place, no temporary left behind
    assert parse_passfile_line(path.read_text())[-1] == "rotated"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pgpass"]


def test_sidecar_writes_a_fresh_iam_token_that_libpq_reads_back(tmp_path):
    """The token is botocore's own (a presigned rds-db connect request, made offline from the
    role's credentials): it has ':' in it, which the password file escapes, and the file follows
    each new token. Ready once the first one is written."""
    import botocore.session

    module = login_module()
    session = botocore.session.get_session()
    session.set_credentials("AKIDEXAMPLE", "secret", "session-token")
    rds = session.create_client("rds", region_name="us-west-2")
    environ = {
        "PGPASSFILE": str(tmp_path / "pgpass"),
        "READY_FILE": str(tmp_path / "ready"),
        "PGHOST": "mlflow.abc.us-west-2.rds.amazonaws.com",
        "PGPORT": "5432",
        "PGUSER": APP_USERNAME,
        "AWS_REGION": "us-west-2",
    }
    module.refresh(rds, environ)
    assert (tmp_path / "ready").exists()
    host, port, database, user, token = parse_passfile_line((tmp_path / "pgpass").read_text())
    assert (host, port, database, user) == ("*", "*", "*", APP_USERNAME)
    query = parse_qs(urlsplit("https://" + token).query)
    assert token.startswith(f"{environ['PGHOST']}:5432/?")
    assert query["Action"] == ["connect"] and query["DBUser"] == [APP_USERNAME]
    assert query["X-Amz-Expires"] == ["900"] and query["X-Amz-Security-Token"] == ["session-token"]
    assert "/us-west-2/rds-db/aws4_request" in query["X-Amz-Credential"][0]
    module.refresh(rds, {**environ, "PGUSER": "someone-else"})
    assert parse_passfile_line((tmp_path / "pgpass").read_text())[3] == "someone-else"


def test_sidecar_script_ships_in_a_config_map(synthesized):
    (script,) = [
        o
        for o in addon_objects(synthesized, "gpu-validation")
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "mlflow-db-login-script"
    ]
    assert script["data"]["db_login.py"] == Path(SCRIPT_SOURCE).read_text()
    assert script["data"]["db_setup.py"] == Path(SCRIPT_SOURCE).with_name("db_setup.py").read_text()
    (secret,) = [
        o
        for o in addon_objects(synthesized, "gpu-validation")
        if o["kind"] == "Secret" and o["metadata"]["name"] == DB_LOGIN_SECRET
    ]
    assert secret["data"]["password"] == ""  # libpq then reads the password file


# --- validation ----------------------------------------------------------------------------------


def test_validation_check_logs_and_reads_back_as_the_admin():
    config = load_profile("gpu-validation")
    (pod,) = render(config)["mlflow-tracking-check.yaml"]
    assert (pod["metadata"]["name"], pod["metadata"]["namespace"]) == (MLFLOW_CHECK, "mlflow")
    env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
    assert env["MLFLOW_TRACKING_URI"]["value"] == mlflow_access.TRACKING_URI
    assert env["MLFLOW_TRACKING_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": mlflow_access.CHART_ADMIN_SECRET,
        "key": "password",
    }
    jark = load_profile(profile_source("jark"))
    (pod,) = render(jark)["mlflow-tracking-check.yaml"]
    env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
    assert env["MLFLOW_TRACKING_USERNAME"]["valueFrom"]["secretKeyRef"]["name"] == "mlflow-admin"


def check_line(**changes) -> str:
    result = {
        "run_id": "0a1b2c",
        "metrics": {MLFLOW_CHECK_METRIC[0]: MLFLOW_CHECK_METRIC[1]},
        "artifact": MLFLOW_CHECK_ARTIFACT[1],
        **changes,
    }
    return "2026/11/30 INFO mlflow: created experiment\nMLFLOW_CHECK " + json.dumps(result) + "\n"


def test_tracking_check_passes_only_when_both_read_back():
    assert check_mlflow(check_line()).passed
    failures = {
        "no result": check_mlflow("Traceback (most recent call last):\n  ...\nRestException: 401\n"),
        "not json": check_mlflow("MLFLOW_CHECK {run_id: 1"),
        "no run": check_mlflow(check_line(run_id="")),
        "metric": check_mlflow(check_line(metrics={MLFLOW_CHECK_METRIC[0]: 0.5})),
        "artifact": check_mlflow(check_line(artifact="")),
    }
    assert not any(result.passed for result in failures.values())
    assert "read back as 0.5" in failures["metric"].detail
    assert "no result line" in failures["no result"].detail


PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def test_the_sidecar_fetches_rds_cas_once_before_the_first_token(tmp_path):
    """verify-full needs RDS's CA bundle: fetched once into the pod's memory volume, before the
    server may start; an answer that is not certificates is refused."""
    module = login_module()
    fetched: list[str] = []
    order: list[str] = []

    def fetch(url: str) -> bytes:
        fetched.append(url)
        order.append("fetch")
        return PEM.encode()

    class Tokens:
        def generate_db_auth_token(self, **request):
            order.append("token")
            return "token"

    environ = {
        "PGPASSFILE": str(tmp_path / "pgpass"),
        "READY_FILE": str(tmp_path / "ready"),
        "PGHOST": "db",
        "PGPORT": "5432",
        "PGUSER": APP_USERNAME,
        "AWS_REGION": "us-west-2",
        "PGSSLROOTCERT": str(tmp_path / "rds-ca.pem"),
        "RDS_CA_BUNDLE_URL": "https://truststore.pki.rds.amazonaws.com/global/global-bundle.pem",
    }
    module.refresh(Tokens(), environ, fetch=fetch)
    assert order == ["fetch", "token"] and (tmp_path / "rds-ca.pem").read_text() == PEM
    module.refresh(Tokens(), environ, fetch=fetch)
    assert fetched == [environ["RDS_CA_BUNDLE_URL"]]  # once
    with pytest.raises(ValueError, match="did not answer a certificate bundle"):
        module.ensure_ca_bundle(str(tmp_path / "other.pem"), "https://x", fetch=lambda url: b"<html>")


def setup_job(synthesized, profile) -> tuple[str, dict]:
    stack = synthesized.stack(profile, "addons")
    ((key, job),) = [
        (k, r)
        for k, r in resources(stack, "kubernetes_manifest").items()
        if isinstance(r["manifest"], dict) and r["manifest"].get("kind") == "Job"
    ]
    return key, job


@pytest.mark.parametrize("profile", WITH_MLFLOW)
def test_the_setup_job_completes_before_the_server_starts(synthesized, profile):
    """Terraform waits for the Job's Complete condition, and the server's release depends on it;
    the Job itself waits for its namespace objects (its service account, the scripts, the
    NetworkPolicies that let it reach the database) and its Pod Identity association."""
    key, job = setup_job(synthesized, profile)
    assert job["wait"] == {"condition": [{"status": "True", "type": "Complete"}]}
    assert {"spec.selector", "spec.template.metadata.labels"} <= set(job["computed_fields"])
    assert f"kubernetes_manifest.{key}" in mlflow_release(synthesized, profile)["depends_on"]
    depends = " ".join(job["depends_on"])
    assert "aws_eks_pod_identity_association.mlflow-db-setup-identity_association" in depends
    # The server's permissions change only after the job: a platform whose server used the master
    # password keeps it until the database has the server's role (a failed setup changes nothing).
    stack = synthesized.stack(profile, "addons")
    (server_policy,) = [p for p in resources(stack, "aws_iam_role_policy").values() if p["name"].endswith("-mlflow")]
    assert server_policy["depends_on"] == [f"kubernetes_manifest.{key}"]
    (server_association,) = [
        a for a in resources(stack, "aws_eks_pod_identity_association").values() if a["service_account"] == "mlflow"
    ]
    assert f"kubernetes_manifest.{key}" in server_association["depends_on"]
    assert "mlflow-identity" not in depends  # and the job never waits for the server's role
    for needed in ("serviceaccount-mlflow-mlflow-db-setup", "configmap-mlflow-mlflow-db-login-script"):
        assert needed in depends, needed
    assert "networkpolicy-mlflow-allow-postgres" in depends
    manifest = job["manifest"]
    pod = manifest["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "mlflow-db-setup" and pod["restartPolicy"] == "Never"
    (container,) = pod["containers"]
    repository, tag = built_mlflow_image(synthesized, profile)
    assert container["image"] == f"{repository}:{tag}"  # the build layer's, from ECR
    env = {e["name"]: e["value"] for e in container["env"]}
    assert "master_user_secret" in env["DB_SECRET_ARN"] and env["PGSSLMODE"] == "verify-full"
    assert (env["APP_ROLE"], env["OWNER_ROLE"]) == (APP_USERNAME, "mlflow_owner")
    # The name follows the database and the image: Terraform hashes this synthesis's digest of the
    # spec with the database's address and secret and the image's repository, so a new database
    # (its roles made again) or a new repository gets a new Job; the tag is in the spec itself.
    other_layer = r"data\.terraform_remote_state\.cross-stack-reference-input-(storage|build)\.outputs\.[^,\]]*"
    assert re.fullmatch(
        r"mlflow-db-setup-\$\{substr\(sha256\(join\(\"\|\", \[\"[0-9a-f]{16}\", "
        + other_layer
        + r"address, "
        + other_layer
        + r"secret_arn, "
        + other_layer
        + r"repository_url\]\)\), 0, 10\)\}",
        manifest["metadata"]["name"],
    )
    # Failing on its own deadline before Terraform's wait gives up leaves a Failed Job to read.
    assert manifest["spec"]["activeDeadlineSeconds"] < int(job["timeouts"]["create"].removesuffix("m")) * 60


def test_a_changed_setup_script_makes_a_new_job():
    """A Job's pod template cannot change: the name carries a digest of the spec, and the spec a
    digest of the scripts, so changing either runs the setup again under a new name."""
    from addons.mlflow import login as install
    from components.k8s.job import job_name

    backend = example_backend()
    first = job_name("mlflow-db-setup", install.db_setup_job(backend, "us-west-2", EXAMPLE_IMAGE))
    assert re.fullmatch(r"mlflow-db-setup-[0-9a-f]{10}", first)
    assert job_name("mlflow-db-setup", install.db_setup_job(backend, "us-west-2", EXAMPLE_IMAGE)) == first  # stable
    original = install.scripts_digest
    try:
        install.scripts_digest = lambda: "changed"
        assert job_name("mlflow-db-setup", install.db_setup_job(backend, "us-west-2", EXAMPLE_IMAGE)) != first
    finally:
        install.scripts_digest = original


def test_a_job_naming_a_value_known_only_at_plan_must_say_so():
    """A value of another layer in the spec that the name does not follow would leave the old Job
    in place and its template unchangeable: refused until it is listed."""
    from cdktf import Fn, Token

    from components.k8s.job import job_name

    later = Fn.upper("db.example")  # stands for another layer's output: unresolved until synthesis
    job = {"spec": {"template": {"spec": {"containers": [{"env": [{"name": "PGHOST", "value": later}]}]}}}}
    with pytest.raises(ValueError, match="resolves later"):
        job_name("setup", job)
    named = job_name("setup", job, resolved_later=(later,))
    assert named.startswith("setup-") and Token.is_unresolved(named)  # Terraform finishes the name


def test_server_and_sidecar_verify_the_databases_certificate_and_name(synthesized):
    """sslmode=require encrypts but accepts any server; verify-full checks the chain to RDS's CAs and
    that the certificate names the database's host (libpq's PGSSLMODE and PGSSLROOTCERT)."""
    from addons.mlflow.login import RDS_CA_BUNDLE

    release = next(
        r
        for r in resources(synthesized.stack("gpu-validation", "addons"), "helm_release").values()
        if r["name"] == "mlflow"
    )
    values = yaml.safe_load(release["values"][0])
    server_env = values["extraEnvVars"]  # the chart takes a name -> value map
    (sidecar,) = values["initContainers"]
    sidecar_env = {e["name"]: e["value"] for e in sidecar["env"]}
    for env in (server_env, sidecar_env):
        assert env["PGSSLMODE"] == "verify-full" and env["PGSSLROOTCERT"] == RDS_CA_BUNDLE
    assert sidecar_env["RDS_CA_BUNDLE_URL"].startswith("https://truststore.pki.rds.amazonaws.com/")


def test_between_several_tenants_mlflow_shares_nothing_unless_the_profile_says_so():
    """MLflow keeps every team's runs, metrics and artifacts in one store behind its server (the
    artifacts under the server's role, not the tenants' S3 prefixes): its permissions are the only
    wall between teams. Two tenants: others' experiments are invisible by default; one: readable."""
    from addons.mlflow import default_permission
    from profiles import validate_profile
    from tests.test_profiles import mutated

    mlflow = {"mlflow": {"enabled": True}}
    two = validate_profile(mutated(addons=mlflow, workloads={"tenants": [{"name": "team-a"}, {"name": "team-b"}]}))
    assert default_permission(two) == "NO_PERMISSIONS"
    one = validate_profile(mutated(addons=mlflow, workloads={"tenants": [{"name": "team-a"}]}))
    assert default_permission(one) == "READ"
    chosen = validate_profile(
        mutated(
            addons={"mlflow": {"enabled": True, "default_permission": "READ"}},
            workloads={"tenants": [{"name": "team-a"}, {"name": "team-b"}]},
        )
    )
    assert default_permission(chosen) == "READ"  # the profile's choice stands


def test_a_change_of_the_default_permission_rolls_the_server():
    """The chart rolls its pod only for configmap.yaml (mlflow-1.11.5 templates/deployment.yaml
    checksum/config) and MLflow reads its auth file once, at start: the permission rides in a pod
    annotation, so a second tenant (NO_PERMISSIONS) reaches the running server."""
    from addons.mlflow import DEFINITION as MLFLOW_DEFINITION
    from addons.mlflow import default_permission
    from addons.mlflow.install import mlflow_values
    from profiles import validate_profile
    from tests.test_profiles import mutated

    backend = example_backend()

    def annotation(tenants: list[str]) -> str:
        config = validate_profile(
            mutated(addons={"mlflow": {"enabled": True}}, workloads={"tenants": [{"name": t} for t in tenants]})
        )
        values = mlflow_values(
            MLFLOW_DEFINITION.settings(config),
            backend,
            region=config.region,
            permission=default_permission(config),
            image=tuple(EXAMPLE_IMAGE.rsplit(":", 1)),
        ).model_dump(by_alias=True)
        return values["podAnnotations"]["gpu-platform/mlflow-default-permission"]

    assert annotation(["team-a"]) == "READ" and annotation(["team-a", "team-b"]) == "NO_PERMISSIONS"


def _images(node: object) -> list[str]:
    """Every `image:` string of a values document or an object (YAML-parsed or JSON), any depth."""
    if isinstance(node, dict):
        own = [node["image"]] if isinstance(node.get("image"), str) else []
        if isinstance(node.get("repository"), str) and isinstance(node.get("tag"), str):
            own.append(f"{node['repository']}:{node['tag']}")  # the chart's image blocks
        return own + [image for value in node.values() for image in _images(value)]
    if isinstance(node, list):
        return [image for value in node for image in _images(value)]
    return []


def mlflow_images(synthesized, profile) -> list[str]:
    """Every image reference MLflow's pods run in the profile: the chart's values (server, init
    images, the login sidecar), the objects of its namespace (the setup Job) and verify's check."""
    values = chart_values(mlflow_release(synthesized, profile))
    objects = [o for o in addon_objects(synthesized, profile) if o.get("metadata", {}).get("namespace") == "mlflow"]
    check = render(synthesized.configs[profile])["mlflow-tracking-check.yaml"]
    return [*_images(values), *_images(objects), *_images(check)]


@pytest.mark.parametrize("profile", WITH_MLFLOW)
def test_mlflow_runs_only_the_build_layers_image_or_pinned_official_ones(synthesized, profile):
    """No personal image: every MLflow container runs the build layer's images/mlflow from the
    profile's own ECR repository (the build stack's, in the profile's region and account), by the
    tag its build pushes, or an official image the code pins."""
    from tests.test_docs_images import pinned_images

    repository, tag = built_mlflow_image(synthesized, profile)
    found = mlflow_images(synthesized, profile)
    assert f"{repository}:{tag}" in found and len(found) >= 5  # server, 2 init images, sidecar, job
    official = {image for image in pinned_images() if image.startswith(("public.ecr.aws/docker/library/",))}
    for image in found:
        assert image == f"{repository}:{tag}" or image in official, image
    stack = synthesized.stack(profile, "build")
    (ecr,) = [r for r in resources(stack, "aws_ecr_repository").values() if r["name"].endswith("/mlflow")]
    assert ecr["name"] == f"{synthesized.configs[profile].name}/mlflow"
    assert stack["provider"]["aws"][0]["region"] == synthesized.configs[profile].region


@pytest.mark.parametrize("profile", ALL)
@pytest.mark.parametrize("layer", ["cluster", "storage", "build", "addons", "workloads"])
def test_no_layer_names_an_mlflow_image_from_a_registry(synthesized, profile, layer):
    """The only MLflow image anywhere is the build layer's (`<repository reference>:mlflow<version>-
    <hash>`): no `<namespace>/mlflow:<tag>` of Docker Hub or any other registry, in any layer."""
    text = json.dumps(synthesized.stack(profile, layer))
    assert re.findall(r"[\w.-]+/mlflow:[\w.-]+", text) == []


def test_the_tracking_check_needs_only_the_standard_library_on_the_pinned_python():
    """The check pod runs the platform's pinned official Python image (no MLflow client, so no
    second MLflow image), the script given the metric and the artifact it logs as arguments."""
    import ast
    import sys

    from addons.mlflow.check import MLFLOW_CHECK_MARKER, MLFLOW_CHECK_SCRIPT
    from profiles.versions import PYTHON_IMAGE

    (pod,) = render(load_profile("gpu-validation"))["mlflow-tracking-check.yaml"]
    (container,) = pod["spec"]["containers"]
    assert container["image"] == PYTHON_IMAGE
    assert container["command"] == [
        "python",
        "-c",
        MLFLOW_CHECK_SCRIPT,
        MLFLOW_CHECK_METRIC[0],
        str(MLFLOW_CHECK_METRIC[1]),
        *MLFLOW_CHECK_ARTIFACT,
    ]
    tree = ast.parse(MLFLOW_CHECK_SCRIPT)
    imported = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    assert imported and imported <= set(sys.stdlib_module_names), imported
    assert f'"{MLFLOW_CHECK_MARKER}"' in MLFLOW_CHECK_SCRIPT  # the line check_mlflow reads
