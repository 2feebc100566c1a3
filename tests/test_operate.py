"""The operate commands with a fake terraform, kubectl and aws CLI: order, plans shown and saved,
confirmation, progress, outputs, and a destroy that can only ever touch the profile's cluster."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from operate.cleanup import pre_destroy_cleanup
from operate.cluster_access import ClusterAccessError, ClusterTarget, bind_kubectl
from operate.layer_folders import PlanUnreadable
from operate.layers import LAYERS, Operator, select_layers
from operate.owned import PlatformObjects, platform_objects
from operate.plans import destroy_preview, summarize_plan
from profiles import load_profile

FAKE_TERRAFORM = """#!/usr/bin/env python3
import json, os, sys, time
folder = sys.argv[1].split("=", 1)[1]
layer = os.path.basename(folder)
command = sys.argv[2]
if command == "plan":
    out = [a.split("=", 1)[1] for a in sys.argv if a.startswith("-out=")]
    if out:
        # Terraform rewrites the plan file in place; the same size and, here, the same mtime:
        # only its content tells two plans apart.
        log_file = os.environ["FAKE_TF_LOG"]
        planned = open(log_file).read().count(f"{layer} plan") if os.path.exists(log_file) else 0
        path = os.path.join(folder, out[0])
        open(path, "w").write(f"plan {planned:04d} with TF_VAR values")
        os.utime(path, ns=(10**18, 10**18))
tunnel = os.environ.get("TF_VAR_api_tunnel")
with open(os.environ["FAKE_TF_LOG"], "a") as log:
    log.write(f"{layer} {command}" + (f" via {tunnel}" if tunnel else "") + "\\n")
if command == "show" and os.environ.get("FAKE_TF_SHOW_FAILS"):
    sys.stderr.write("Error: Failed to read the given file as a state or plan file\\n")
    sys.exit(1)
if command == "show":
    shown = os.path.join(folder, [a for a in sys.argv[3:] if not a.startswith("-")][0])
    print(json.dumps({"plan_file": open(shown).read() if os.path.exists(shown) else None, "resource_changes": [
        {"address": f"aws_vpc.{layer}", "change": {"actions": ["create"]}},
        {"address": f"aws_iam_role.{layer}", "change": {"actions": ["delete", "create"]}},
        {"address": "data.aws_caller_identity.a", "change": {"actions": ["read"]}},
    ]}))
elif command == "output":
    if os.environ.get("FAKE_TF_STATE") == "unreadable":
        sys.stderr.write("Error: Failed to load state: AccessDenied\\n")
        sys.exit(1)
    applied = open(os.environ["FAKE_TF_LOG"]).read().split("\\n")
    if os.environ.get("FAKE_TF_STATE") == "fresh" and f"{layer} apply" not in applied:
        print("{}")
        sys.exit(0)
    outputs = {"cluster_name": {"value": "gpu-validation", "sensitive": False},
               "certificate_authority": {"value": "c2VjcmV0", "sensitive": True},
               "cross-stack-output-x": {"value": "plumbing", "sensitive": False}}
    if os.environ.get("FAKE_TF_ENDPOINT"):
        outputs["endpoint"] = {"value": os.environ["FAKE_TF_ENDPOINT"], "sensitive": False}
    print(json.dumps(outputs))
elif command == "state":
    print("\\n".join(json.loads(os.environ.get("FAKE_TF_RESOURCES", "{}")).get(layer, [])))
if command == "apply" and os.environ.get("FAKE_TF_SLOW"):
    time.sleep(float(os.environ["FAKE_TF_SLOW"]))
if layer == os.environ.get("FAKE_TF_FAIL") and command in ("apply", "plan"):
    sys.stderr.write(f"Error: something broke in {layer}\\n")
    sys.exit(1)
sys.exit(2 if command == "plan" else 0)
"""


@pytest.fixture(autouse=True)
def _no_account_binding(monkeypatch):
    """These tests drive the operator with fake tools and no AWS CLI; the account binding, which
    asks AWS first, has its own tests (tests/test_account_binding.py)."""
    import main

    monkeypatch.setattr(main.common, "refuse_other_account", lambda *_, **__: None)


@pytest.fixture
def fake_terraform(tmp_path):
    binary = tmp_path / "terraform"
    # -S: the fake needs only the standard library, and starts faster without site's set-up.
    binary.write_text(FAKE_TERRAFORM.replace("#!/usr/bin/env python3", f"#!{sys.executable} -S"))
    binary.chmod(0o755)
    for layer in LAYERS:
        (tmp_path / "stacks" / layer).mkdir(parents=True)
        (tmp_path / "stacks" / layer / "cdk.tf.json").write_text("{}")
    return binary


def operator(
    tmp_path,
    binary,
    *,
    fail=None,
    lines=None,
    confirm=None,
    cleanup=None,
    slow=None,
    heartbeat=30,
    state=None,
    preflight=None,
    resources=None,
    delete_data=False,
    confirm_data=None,
):
    log = tmp_path / "calls.log"
    env = {"FAKE_TF_LOG": str(log), "FAKE_TF_RESOURCES": json.dumps(resources or {})}
    if state:
        env["FAKE_TF_STATE"] = state
    if fail:
        env["FAKE_TF_FAIL"] = fail
    if slow:
        env["FAKE_TF_SLOW"] = str(slow)
    op = Operator(
        tmp_path / "stacks",
        terraform=str(binary),
        env=env,
        log=(lines.append if lines is not None else lambda _: None),
        confirm=confirm or (lambda _: True),
        cleanup=cleanup or (lambda _: None),
        heartbeat_seconds=heartbeat,
        preflight=preflight or (lambda _: []),
        delete_data=delete_data,
        confirm_data=confirm_data or (lambda _: False),
    )
    return op, log


def with_upstreams(tmp_path: Path) -> None:
    """The fake stacks read their upstream layers' state, as the synthesized ones do."""
    reads = {
        "storage": ["cluster"],
        "build": ["cluster"],
        "addons": ["cluster", "storage", "build"],
        "workloads": ["cluster", "storage", "addons"],
    }
    for layer, upstreams in reads.items():
        data = {f"cross-stack-reference-input-{u}": {"backend": "local"} for u in upstreams}
        (tmp_path / "stacks" / layer / "cdk.tf.json").write_text(json.dumps({"data": {"terraform_remote_state": data}}))


def calls(log: Path) -> list[str]:
    return log.read_text().split("\n")[:-1] if log.exists() else []


def test_deploy_plans_shows_confirms_and_applies_every_layer_in_order(tmp_path, fake_terraform):
    lines: list[str] = []
    asked: list[str] = []
    op, log = operator(tmp_path, fake_terraform, lines=lines, confirm=lambda q: asked.append(q) or True)
    results = op.run("deploy", select_layers("all"))
    assert [r.layer for r in results] == list(LAYERS) and all(r.ok for r in results)
    applies = [c.split()[0] for c in calls(log) if c.endswith(" apply")]
    assert applies == list(LAYERS)
    assert asked == [f"Apply these changes to the {layer} layer?" for layer in LAYERS]
    # The plan is shown before the question, and the outputs after the apply.
    assert "    + aws_vpc.cluster" in lines and "  -/+ aws_iam_role.cluster" in lines
    assert "  Plan: 2 to add, 0 to change, 1 to destroy." in lines
    assert '  cluster.cluster_name = "gpu-validation"' in lines
    assert "  cluster.certificate_authority = (sensitive)" in lines
    assert not any("cross-stack-output" in line for line in lines)


def test_a_declined_layer_is_left_alone_and_stops_the_run(tmp_path, fake_terraform):
    op, log = operator(tmp_path, fake_terraform, confirm=lambda q: "storage" not in q)
    results = op.run("deploy", select_layers("all"))
    assert [(r.layer, r.ok) for r in results] == [("cluster", True), ("storage", False)]
    assert "not approved" in results[-1].detail
    assert "storage apply" not in calls(log) and "build init" not in calls(log)


def test_deploy_stops_at_the_first_failing_layer_with_its_error(tmp_path, fake_terraform):
    lines: list[str] = []
    op, log = operator(tmp_path, fake_terraform, fail="storage", lines=lines)
    results = op.run("deploy", select_layers("all"))
    assert [(r.layer, r.ok) for r in results] == [("cluster", True), ("storage", False)]
    assert "something broke in storage" in results[-1].detail
    assert not any(c.startswith("build") for c in calls(log))
    assert any("something broke in storage" in line for line in lines)


def test_plan_shows_the_plan_and_keeps_it(tmp_path, fake_terraform):
    lines: list[str] = []
    op, log = operator(tmp_path, fake_terraform, lines=lines)
    (result,) = op.run("plan", select_layers("cluster"))
    assert result.ok and result.detail == "changes"
    assert calls(log) == ["cluster init", "cluster plan", "cluster show"]  # no apply
    assert "    + aws_vpc.cluster" in lines
    assert f"  saved plan: {tmp_path / 'stacks' / 'cluster' / 'tfplan'}" in lines


def test_a_saved_plan_is_shown_once_until_it_is_replaced(tmp_path, fake_terraform):
    """`terraform show -json` loads every provider schema: the emulated cycle's drift check reads
    the plan the summary already showed, and must not pay for it twice, nor read a stale plan.
    The fake rewrites the plan file in place with the same size and mtime, as a no-change
    re-plan can: only the operator's own planning tells it the file changed."""
    op, log = operator(tmp_path, fake_terraform)
    plan_file = tmp_path / "stacks" / "cluster" / "tfplan"
    op.run("plan", ["cluster"])
    assert op.plan_json("cluster")["plan_file"] == "plan 0000 with TF_VAR values"
    assert calls(log).count("cluster show") == 1
    op.run("plan", ["cluster"])  # a new plan, indistinguishable by its file's size and mtime
    assert calls(log).count("cluster show") == 2
    assert op.plan_json("cluster")["plan_file"] == "plan 0001 with TF_VAR values"
    assert calls(log).count("cluster show") == 2
    plan_file.write_text("plan 9999 with TF_VAR values")  # replaced behind the operator's back
    assert op.plan_json("cluster")["plan_file"] == "plan 9999 with TF_VAR values"
    assert calls(log).count("cluster show") == 3
    plan_file.unlink()
    op.plan_json("cluster")  # no plan file: nothing cached to trust
    op.plan_json("cluster")
    assert calls(log).count("cluster show") == 5


def test_an_unreadable_plan_fails_the_layer_before_anything_is_asked_or_applied(tmp_path, fake_terraform, monkeypatch):
    """An empty summary would read as 'no changes', or as a destroy that deletes no data."""
    monkeypatch.setenv("FAKE_TF_SHOW_FAILS", "1")
    asked: list[str] = []
    op, log = operator(tmp_path, fake_terraform, confirm=lambda q: asked.append(q) or True, delete_data=True)
    (result,) = op.run("destroy", ["cluster"])
    assert not result.ok and "terraform show failed" in result.detail and "as a state or plan file" in result.detail
    assert asked == [] and "cluster apply" not in calls(log)
    with pytest.raises(PlanUnreadable):
        op.plan_json("cluster")  # and it is not remembered as an empty plan
    with pytest.raises(PlanUnreadable):
        op.plan_json("cluster")


def test_long_terraform_runs_report_progress(tmp_path, fake_terraform):
    lines: list[str] = []
    op, _ = operator(tmp_path, fake_terraform, lines=lines, slow=1.5, heartbeat=0.4)
    op.run("deploy", select_layers("cluster"))
    assert any(line.startswith("      cluster: terraform apply still running") for line in lines)


def test_destroy_runs_in_reverse_and_cleans_each_kubernetes_layer_after_its_approval(tmp_path, fake_terraform):
    events: list[str] = []
    op, log = operator(
        tmp_path, fake_terraform, cleanup=events.append, confirm=lambda q: events.append(q.split()[-2]) or True
    )
    results = op.run("destroy", select_layers("all"))
    assert events == ["workloads", "workloads", "addons", "addons", "build", "storage", "cluster"]
    assert [r.layer for r in results] == list(reversed(LAYERS))
    assert [c.split()[0] for c in calls(log) if c.endswith(" apply")] == list(reversed(LAYERS))


def test_a_declined_first_question_deletes_nothing(tmp_path, fake_terraform):
    cleanups: list[str] = []
    op, log = operator(tmp_path, fake_terraform, cleanup=cleanups.append, confirm=lambda _: False)
    (result,) = op.run("destroy", select_layers("all"))
    assert not result.ok and "not approved" in result.detail
    assert cleanups == [] and not any(c.endswith(" apply") for c in calls(log))


def test_aws_only_destroy_needs_no_kubernetes_cleanup(tmp_path, fake_terraform):
    cleanups: list[str] = []
    op, _ = operator(tmp_path, fake_terraform, cleanup=cleanups.append)
    op.run("destroy", ["cluster", "storage", "build"])
    assert cleanups == []


def test_an_unreachable_cluster_stops_the_destroy_before_anything_is_destroyed(tmp_path, fake_terraform):
    def unreachable(_: str) -> None:
        raise ClusterAccessError("cluster gpu-validation does not answer")

    op, log = operator(tmp_path, fake_terraform, cleanup=unreachable)
    with pytest.raises(ClusterAccessError):
        op.run("destroy", select_layers("all"))
    assert not any(c.endswith(" apply") for c in calls(log))


def test_unknown_layer():
    with pytest.raises(ValueError, match="choose all, aws or one of cluster, storage, build, addons, workloads"):
        select_layers("network")
    assert select_layers("aws") == ["cluster", "storage", "build"]


def test_plan_summary_counts_like_terraform():
    plan = {
        "resource_changes": [
            {"address": "a.b", "change": {"actions": ["update"]}},
            {"address": "a.c", "change": {"actions": ["no-op"]}},
            {"address": "a.d", "change": {"actions": ["delete"]}},
        ]
    }
    assert summarize_plan(plan) == ["    ~ a.b", "    - a.d", "  Plan: 0 to add, 1 to change, 1 to destroy."]


def test_destroy_preview_names_the_data_the_plan_deletes_and_nothing_else():
    plan = {
        "resource_changes": [
            {"address": "aws_s3_bucket.data", "type": "aws_s3_bucket", "change": {"actions": ["delete"]}},
            {
                "address": "aws_fsx_lustre_file_system.fs",
                "type": "aws_fsx_lustre_file_system",
                "change": {"actions": ["no-op"]},
            },
            {"address": "aws_iam_role.r", "type": "aws_iam_role", "change": {"actions": ["delete"]}},
        ]
    }
    assert destroy_preview(plan) == ["  DELETES aws_s3_bucket.data: the bucket and every object version in it"]
    assert destroy_preview({"resource_changes": []}) == []  # nothing deployed: nothing announced


# ------------------------------------------------------------------ kubectl bound to the cluster

TARGET = ClusterTarget(
    name="gpu-validation", region="us-west-2", endpoint="https://ABC.gr7.us-west-2.eks.amazonaws.com"
)


class FakeCli:
    """Answers aws / kubectl calls; records them. `server` is what the kubeconfig points at;
    `config set-cluster` changes it (and the TLS server name) as kubectl would."""

    def __init__(
        self, *, server: str = TARGET.endpoint, reachable: bool = True, objects: dict[str, list[dict]] | None = None
    ):
        self.server, self.reachable, self.objects = server, reachable, objects or {}
        self.tls_server_name = ""
        self.calls: list[list[str]] = []

    def __call__(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        self.calls.append(args)
        if args[:2] == ["eks", "update-kubeconfig"]:
            return subprocess.CompletedProcess(args, 0, "", "")
        rest = args[4:]  # after --kubeconfig K --context C
        if rest[:2] == ["config", "view"]:
            shown = {
                "jsonpath={.clusters[0].cluster.server}": self.server,
                "jsonpath={.clusters[0].cluster.tls-server-name}": self.tls_server_name,
                "jsonpath={.contexts[0].context.cluster}": f"arn:aws:eks:us-west-2:111122223333:cluster/{TARGET.name}",
            }
            return subprocess.CompletedProcess(args, 0, shown[rest[-1]], "")
        if rest[:2] == ["config", "set-cluster"]:
            assert rest[2] == f"arn:aws:eks:us-west-2:111122223333:cluster/{TARGET.name}", rest
            options = dict(option.removeprefix("--").split("=", 1) for option in rest[3:])
            self.server, self.tls_server_name = options["server"], options["tls-server-name"]
            return subprocess.CompletedProcess(args, 0, "", "")
        if rest[:2] == ["get", "--raw"]:
            return subprocess.CompletedProcess(args, 0 if self.reachable else 1, "{}", "dial tcp: i/o timeout")
        if rest[0] == "get":
            return subprocess.CompletedProcess(args, 0, json.dumps({"items": self.objects.get(rest[1], [])}), "")
        if rest[0] == "delete":  # a cluster without finalizers: a deleted object is gone at once
            kind = {"pvc": "persistentvolumeclaims", "service": "services"}.get(rest[1], rest[1])
            namespace = rest[rest.index("-n") + 1] if "-n" in rest else None
            self.objects[kind] = [
                item
                for item in self.objects.get(kind, [])
                if (item["metadata"]["name"], item["metadata"].get("namespace")) != (rest[2], namespace)
            ]
        return subprocess.CompletedProcess(args, 0, "", "")

    @property
    def deletes(self) -> list[list[str]]:
        return [call[4:] for call in self.calls if len(call) > 4 and call[4] == "delete"]


def test_kubectl_never_uses_the_current_context(tmp_path):
    cli = FakeCli()
    kubeconfig = tmp_path / "kubeconfig"
    kubectl = bind_kubectl(TARGET, kubeconfig, aws=cli, kubectl=cli)
    kubectl(["get", "pods"])
    update = cli.calls[0]
    assert update[:2] == ["eks", "update-kubeconfig"]
    assert update[update.index("--name") + 1] == "gpu-validation"
    assert update[update.index("--kubeconfig") + 1] == str(kubeconfig)
    for call in cli.calls[1:]:
        assert call[:4] == ["--kubeconfig", str(kubeconfig), "--context", "platform-gpu-validation"], call


def test_a_kubeconfig_for_another_cluster_is_refused(tmp_path):
    cli = FakeCli(server="https://OTHER.gr7.us-west-2.eks.amazonaws.com")
    with pytest.raises(ClusterAccessError, match="not at the cluster layer's endpoint"):
        bind_kubectl(TARGET, tmp_path / "kubeconfig", aws=cli, kubectl=cli)


def test_through_a_tunnel_kubectl_connects_locally_and_checks_tls_as_the_endpoint(tmp_path):
    cli = FakeCli()
    kubectl = bind_kubectl(TARGET, tmp_path / "kubeconfig", tunnel="https://localhost:8443", aws=cli, kubectl=cli)
    assert (cli.server, cli.tls_server_name) == ("https://localhost:8443", "ABC.gr7.us-west-2.eks.amazonaws.com")
    # The kubeconfig is pointed at the forward only after it was checked to be this cluster's.
    order = [call[4:6] for call in cli.calls[1:]]
    assert order.index(["config", "set-cluster"]) > order.index(["config", "view"])
    kubectl(["get", "pods"])
    assert cli.calls[-1][:4] == ["--kubeconfig", str(tmp_path / "kubeconfig"), "--context", "platform-gpu-validation"]


def test_a_tunnel_never_redirects_a_kubeconfig_written_for_another_cluster(tmp_path):
    cli = FakeCli(server="https://OTHER.gr7.us-west-2.eks.amazonaws.com")
    with pytest.raises(ClusterAccessError, match="not at the cluster layer's endpoint"):
        bind_kubectl(TARGET, tmp_path / "kubeconfig", tunnel="https://localhost:8443", aws=cli, kubectl=cli)
    assert not any(call[4:6] == ["config", "set-cluster"] for call in cli.calls)


def test_a_silent_tunnel_names_the_ways_to_reach_the_api(tmp_path):
    cli = FakeCli(reachable=False)
    with pytest.raises(ClusterAccessError) as error:
        bind_kubectl(TARGET, tmp_path / "kubeconfig", tunnel="https://localhost:8443", aws=cli, kubectl=cli)
    message = str(error.value)
    assert "does not answer through the forward https://localhost:8443" in message
    assert "AWS-StartPortForwardingSessionToRemoteHost" in message and "private_endpoint_access.cidrs" in message
    assert cli.deletes == []


def test_destroy_through_a_tunnel_cleans_up_and_destroys_through_the_forward(tmp_path, fake_terraform, monkeypatch):
    """The destroy path as `main.py destroy` wires it, with fake terraform, aws and kubectl."""
    import main
    import operate.cluster_access

    claim = {"metadata": {"name": "scratch", "namespace": "ml-team"}, "spec": {"storageClassName": "gp3"}}
    cli = FakeCli(objects={"persistentvolumeclaims": [claim]})
    monkeypatch.setattr(
        operate.cluster_access,
        "bind_kubectl",
        lambda target, kubeconfig, *, tunnel=None: bind_kubectl(
            target, kubeconfig, tunnel=tunnel, aws=cli, kubectl=cli
        ),
    )
    config = load_profile("gpu-validation")
    op, log = operator(tmp_path, fake_terraform)
    op.env |= {"TF_VAR_api_tunnel": "https://localhost:8443", "FAKE_TF_ENDPOINT": TARGET.endpoint}
    op.cleanup = lambda layer: main.common.cleanup_profile_cluster(config, op, tmp_path / "kubeconfig", layer)
    (result,) = op.run("destroy", ["workloads"])
    assert result.ok, result.detail
    assert (cli.server, cli.tls_server_name) == ("https://localhost:8443", "ABC.gr7.us-west-2.eks.amazonaws.com")
    assert [call[:5] for call in cli.deletes] == [["delete", "pvc", "scratch", "-n", "ml-team"]]
    # Terraform (the kubernetes provider's plan and apply) got the same forward.
    assert {line for line in calls(log) if line.startswith("workloads ")} >= {
        "workloads plan via https://localhost:8443",
        "workloads apply via https://localhost:8443",
    }


def test_an_unreachable_cluster_is_an_error_not_zero_deletions(tmp_path):
    cli = FakeCli(reachable=False)
    with pytest.raises(ClusterAccessError, match="does not answer"):
        bind_kubectl(TARGET, tmp_path / "kubeconfig", aws=cli, kubectl=cli)
    assert cli.deletes == []


def test_cleanup_deletes_only_what_the_platform_owns(tmp_path):
    cli = FakeCli(
        objects={
            "nodepools.karpenter.sh": [{"metadata": {"name": "gpu"}}, {"metadata": {"name": "someone-elses"}}],
            "nodeclaims.karpenter.sh": [
                {"metadata": {"name": "gpu-x1", "labels": {"karpenter.sh/nodepool": "gpu"}}},
                {"metadata": {"name": "other-x1", "labels": {"karpenter.sh/nodepool": "someone-elses"}}},
            ],
            "services": [
                {"metadata": {"name": "proxy-public", "namespace": "jupyterhub"}, "spec": {"type": "LoadBalancer"}},
                {"metadata": {"name": "shop", "namespace": "default"}, "spec": {"type": "LoadBalancer"}},
                {"metadata": {"name": "api", "namespace": "jupyterhub"}, "spec": {"type": "ClusterIP"}},
            ],
            "persistentvolumeclaims": [
                {"metadata": {"name": "claim-alice", "namespace": "jupyterhub"}, "spec": {"storageClassName": "gp3"}},
                {"metadata": {"name": "db", "namespace": "default"}, "spec": {"storageClassName": "gp3"}},
                {"metadata": {"name": "fsx", "namespace": "ml-team"}, "spec": {"storageClassName": ""}},
            ],
        }
    )
    kubectl = bind_kubectl(TARGET, tmp_path / "kubeconfig", aws=cli, kubectl=cli)
    owned = PlatformObjects(namespaces=("jupyterhub", "ml-team"), node_pools=("cpu", "gpu"))
    deleted = pre_destroy_cleanup(kubectl, owned, log=lambda _: None)
    assert deleted == [
        "nodepools.karpenter.sh/gpu",
        "nodeclaims.karpenter.sh/gpu-x1",
        "service/jupyterhub/proxy-public",
        "pvc/jupyterhub/claim-alice",
    ]
    # Each delete only marks the object; the clean-up's own bounded waits follow.
    assert all("--wait=false" in call for call in cli.deletes)


def test_a_failing_listing_stops_the_cleanup(tmp_path):
    def broken(args: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(args, 1, "", "error: You must be logged in to the server (Unauthorized)")

    with pytest.raises(ClusterAccessError, match="Unauthorized"):
        pre_destroy_cleanup(broken, PlatformObjects(namespaces=(), node_pools=()), log=lambda _: None)


def test_each_layer_cleans_only_the_namespaces_and_pools_it_owns():
    config = load_profile(str(Path(__file__).parent / "fixtures/profiles/jark.yaml"))
    addons, workloads = platform_objects(config, "addons"), platform_objects(config, "workloads")
    assert {"monitoring", "gpu-operator", "jupyterhub", "workflows"} <= set(addons.namespaces)
    assert addons.node_pools == ()
    # jark runs DRA: no GPU pool (Karpenter ignores ResourceClaims), so only the CPU pool is its.
    tenants = {tenant.name for tenant in config.workloads.tenants}
    assert len(tenants) == 4  # jark's tenants, and verify's namespace
    assert set(workloads.namespaces) == {*tenants, "gpu-validation"} and workloads.node_pools == ("cpu",)
    assert platform_objects(load_profile("gpu-validation"), "workloads").node_pools == ("cpu", "gpu")
    for owned in (addons, workloads):
        assert "kube-system" not in owned.namespaces and "default" not in owned.namespaces
    assert (
        platform_objects(config, "cluster")
        == platform_objects(config, "storage")
        == PlatformObjects(namespaces=(), node_pools=())
    )


def test_the_nccl_job_runs_the_image_the_build_layer_built(tmp_path, fake_terraform, capsys):
    """The build layer's nccl-tests repository and the Dockerfile's tag, unless overridden."""
    import main
    from components.images import project_image_tag
    from profiles.versions import NCCL_TESTS_IMAGE

    config = load_profile("gpu-validation")

    class Built:
        def outputs(self, layer):
            assert layer == "build"
            return {"repository_urls": {"value": {"nccl-tests": "111122223333.dkr.ecr.us-west-2.amazonaws.com/x"}}}

    tag = project_image_tag("nccl-tests")
    asked: list[list[str]] = []

    def ecr(has_tag: bool):
        def aws(args: list[str]) -> subprocess.CompletedProcess[str]:
            asked.append(args)
            error = "" if has_tag else f"An error occurred (ImageNotFoundException): imageTag={tag} not found"
            return subprocess.CompletedProcess(args, 0 if has_tag else 254, "{}", error)

        return aws

    built = main.verify.nccl_test_image(config, Built(), None, aws=ecr(True))
    assert built == f"111122223333.dkr.ecr.us-west-2.amazonaws.com/x:{tag}"
    assert asked[-1] == [
        "ecr",
        "describe-images",
        "--region",
        "us-west-2",
        "--repository-name",
        "x",
        "--image-ids",
        f"imageTag={tag}",
    ]
    # Not pushed yet: the public image, and the user is told why.
    assert main.verify.nccl_test_image(config, Built(), None, aws=ecr(False)) == NCCL_TESTS_IMAGE
    told = capsys.readouterr().err
    assert f"x:{tag} is not in ECR (An error occurred (ImageNotFoundException)" in told
    assert "build_commands.nccl-tests" in told
    assert main.verify.nccl_test_image(config, Built(), "mine:1", aws=ecr(False)) == "mine:1"

    def no_cli(args: list[str]) -> subprocess.CompletedProcess[str]:
        raise FileNotFoundError("aws")

    assert main.verify.nccl_test_image(config, Built(), None, aws=no_cli) == NCCL_TESTS_IMAGE
    assert "cannot ask ECR" in capsys.readouterr().err
    assert main.verify.nccl_test_image(config, None, None) == NCCL_TESTS_IMAGE  # nothing deployed yet


def test_verify_says_at_once_when_a_build_layer_image_is_not_pushed():
    """The EFA runtime runs the build layer's pytorch-efa image by its Dockerfile's tag; until the
    build has pushed it the runtime's pods cannot start, and no public image can stand in (none
    has aws-ofi-nccl): verify names the build command instead of waiting out its timeout. Which
    check runs which image is the check's (tests/test_verify.py); this is how ECR is asked."""
    import main
    from components.images import project_image_tag

    config = load_profile("p5-training")
    repository = "111122223333.dkr.ecr.us-east-1.amazonaws.com/p5-training/pytorch-efa"

    class Built:
        def outputs(self, layer):
            assert layer == "build"
            return {"repository_urls": {"value": {"pytorch-efa": repository}}}

    tag = project_image_tag("pytorch-efa")
    asked: list[list[str]] = []

    def ecr(code: int, error: str = ""):
        def aws(args: list[str]) -> subprocess.CompletedProcess[str]:
            asked.append(args)
            return subprocess.CompletedProcess(args, code, "{}", error)

        return aws

    missing_of = main.verify.project_image_missing
    assert missing_of(config, Built(), "pytorch-efa", aws=ecr(0)) is None
    assert asked[-1][-3:] == ["p5-training/pytorch-efa", "--image-ids", f"imageTag={tag}"]
    missing = missing_of(config, Built(), "pytorch-efa", aws=ecr(254, "ImageNotFoundException"))
    assert missing is not None
    assert f"{repository}:{tag} is not in ECR (ImageNotFoundException)" in missing
    assert "build_commands.pytorch-efa" in missing

    def no_cli(args: list[str]) -> subprocess.CompletedProcess[str]:
        raise FileNotFoundError("aws")

    assert missing_of(config, Built(), "pytorch-efa", aws=no_cli) is None  # cannot tell: the pods will
    # An image the profile does not build is not the build layer's to check.
    asked.clear()
    assert missing_of(config, Built(), "not-built", aws=ecr(254, "ImageNotFoundException")) is None and not asked


# ------------------------------------------------------------------ a fresh account, pre-flight, outputs


def test_plan_on_a_fresh_account_plans_the_first_layer_and_names_what_to_apply(tmp_path, fake_terraform):
    with_upstreams(tmp_path)
    lines: list[str] = []
    op, log = operator(tmp_path, fake_terraform, lines=lines, state="fresh")
    results = op.run("plan", select_layers("all"))
    assert [(r.layer, r.ok) for r in results] == [(layer, True) for layer in LAYERS]
    assert results[0].detail == "changes"
    for result in results[1:]:
        assert result.detail.startswith("not planned: it reads the outputs of cluster"), result.detail
        assert "make deploy LAYER=cluster" in result.detail
    assert [c for c in calls(log) if c.endswith(" plan")] == ["cluster plan"]  # Terraform's error never reached


def test_plan_with_the_cluster_applied_plans_every_layer(tmp_path, fake_terraform):
    with_upstreams(tmp_path)
    op, _ = operator(tmp_path, fake_terraform)
    results = op.run("plan", select_layers("all"))
    assert [r.detail for r in results] == ["changes"] * len(LAYERS)


def test_deploying_one_layer_before_its_upstream_stops_with_the_order(tmp_path, fake_terraform):
    with_upstreams(tmp_path)
    op, log = operator(tmp_path, fake_terraform, state="fresh")
    (result,) = op.run("deploy", ["addons"])
    assert not result.ok and "cluster then storage then build" in result.detail
    assert not any(c.endswith((" plan", " apply")) for c in calls(log))


def test_a_full_deploy_on_a_fresh_account_applies_upstreams_first(tmp_path, fake_terraform):
    with_upstreams(tmp_path)
    op, _ = operator(tmp_path, fake_terraform, state="fresh")
    results = op.run("deploy", select_layers("all"))
    assert all(r.ok for r in results) and [r.layer for r in results] == list(LAYERS)


def test_an_unreadable_upstream_state_fails_the_layer_with_terraforms_reason(tmp_path, fake_terraform):
    with_upstreams(tmp_path)
    op, _ = operator(tmp_path, fake_terraform, state="unreadable")
    results = op.run("plan", select_layers("all"))
    assert results[-1].layer == "storage" and not results[-1].ok and "AccessDenied" in results[-1].detail


def test_a_failed_preflight_applies_nothing(tmp_path, fake_terraform):
    lines: list[str] = []
    seen: list[list[str]] = []
    op, log = operator(
        tmp_path, fake_terraform, lines=lines, preflight=lambda layers: seen.append(layers) or ["variable x is not set"]
    )
    results = op.run("deploy", select_layers("all"))
    assert seen == [list(LAYERS)] and calls(log) == []
    assert not results[0].ok and "variable x is not set" in results[0].detail
    assert "deploy stopped before any layer was applied:" in lines and "  - variable x is not set" in lines


def test_plan_and_destroy_have_no_deploy_preflight(tmp_path, fake_terraform):
    op, _ = operator(tmp_path, fake_terraform, preflight=lambda _: pytest.fail("pre-flight ran"))
    op.run("plan", select_layers("all"))
    op.run("destroy", ["cluster"])


def test_outputs_of_an_unreadable_state_raise(tmp_path, fake_terraform):
    from operate.layer_folders import StateUnreadable

    op, _ = operator(tmp_path, fake_terraform, state="unreadable")
    with pytest.raises(StateUnreadable, match="AccessDenied"):
        op.output_lines("cluster")


# ------------------------------------------------------------------ teardown


def protected_storage(tmp_path: Path) -> None:
    stack = {
        "resource": {
            "aws_s3_bucket": {"data": {"bucket": "b", "force_destroy": False, "lifecycle": {"prevent_destroy": True}}},
            "aws_db_instance": {"db": {"deletion_protection": True, "lifecycle": {"prevent_destroy": True}}},
            "aws_iam_role": {"r": {"name": "r"}},
        }
    }
    (tmp_path / "stacks" / "storage" / "cdk.tf.json").write_text(json.dumps(stack))


STORAGE_DEPLOYED = {
    "storage": ["aws_s3_bucket.data", "aws_db_instance.db", "aws_iam_role.r"],
    "cluster": ["aws_eks_cluster.c"],
}


def test_protected_data_refuses_a_full_destroy_before_anything_is_deleted(tmp_path, fake_terraform):
    protected_storage(tmp_path)
    lines: list[str] = []
    op, log = operator(tmp_path, fake_terraform, lines=lines, resources=STORAGE_DEPLOYED)
    (result,) = op.run("destroy", select_layers("all"))
    assert not result.ok and "aws_s3_bucket.data (storage)" in result.detail
    assert "aws_db_instance.db (storage)" in result.detail
    assert "DELETE_DATA=1" in result.detail and "make pause" in result.detail
    assert not any(c.endswith((" plan", " apply")) for c in calls(log))
    assert "destroy stopped before anything was deleted:" in lines
    # Short lines, the choices first.
    assert lines[lines.index("destroy stopped before anything was deleted:") + 1].startswith(
        "  - Choose one: make destroy DELETE_DATA=1 deletes everything"
    )
    assert all(len(line) <= 100 for line in lines), lines


def test_a_layer_still_used_above_is_not_destroyed(tmp_path, fake_terraform):
    with_upstreams(tmp_path)
    op, log = operator(
        tmp_path, fake_terraform, resources={"workloads": ["kubernetes_namespace.t"], "cluster": ["aws_eks_cluster.c"]}
    )
    (result,) = op.run("destroy", ["cluster"])
    assert not result.ok and "still used by workloads" in result.detail
    assert not any(c.endswith((" plan", " apply")) for c in calls(log))
    (result,) = op.run("destroy", ["addons"])
    assert "make destroy LAYER=workloads" in result.detail


def test_full_teardown_asks_by_name_then_lifts_protection_then_destroys(tmp_path, fake_terraform):
    protected_storage(tmp_path)
    lines: list[str] = []
    asked: list[str] = []
    override = tmp_path / "stacks" / "storage" / "zz_delete_data_override.tf.json"
    seen: dict = {}

    def confirm(question: str) -> bool:
        if "Destroy" in question and "storage" in question:
            seen.update(json.loads(override.read_text())["resource"])
        return True

    op, log = operator(
        tmp_path,
        fake_terraform,
        lines=lines,
        resources=STORAGE_DEPLOYED,
        delete_data=True,
        confirm=confirm,
        confirm_data=lambda q: asked.append(q) or True,
    )
    results = op.run("destroy", select_layers("all"))
    assert all(r.ok for r in results), results
    assert asked == ["Delete this data of the storage layer?"]
    storage_calls = [c for c in calls(log) if c.startswith("storage") and c.endswith((" apply", " plan"))]
    assert storage_calls == ["storage apply", "storage plan", "storage apply"]  # lifted, then destroyed
    assert seen == {
        "aws_s3_bucket": {"data": {"lifecycle": {"prevent_destroy": False}, "force_destroy": True}},
        "aws_db_instance": {"db": {"lifecycle": {"prevent_destroy": False}, "deletion_protection": False}},
    }
    lift = [c for c in calls(log) if c == "storage apply"]
    assert len(lift) == 2  # the targeted lift, then the destroy
    assert not override.exists()  # the next deploy protects the data again
    assert "    aws_s3_bucket.data: the bucket and every object version in it" in lines


def test_full_teardown_declined_by_name_keeps_the_data_and_its_protection(tmp_path, fake_terraform):
    protected_storage(tmp_path)
    op, log = operator(
        tmp_path, fake_terraform, resources=STORAGE_DEPLOYED, delete_data=True, confirm_data=lambda _: False
    )
    results = op.run("destroy", select_layers("all"))
    assert results[-1].layer == "storage" and not results[-1].ok and "not confirmed" in results[-1].detail
    assert [c for c in calls(log) if c.startswith("storage") and c.endswith("apply")] == []
    assert not (tmp_path / "stacks" / "storage" / "zz_delete_data_override.tf.json").exists()


def test_destroy_says_what_is_left_and_how_to_remove_it(tmp_path, fake_terraform):
    lines: list[str] = []
    op, _ = operator(
        tmp_path,
        fake_terraform,
        lines=lines,
        resources={"cluster": ["aws_eks_cluster.c"], "storage": ["aws_s3_bucket.b"]},
    )
    op.run("destroy", ["workloads"])
    assert any(line.startswith("still deployed: cluster, storage (the cluster layer bills") for line in lines)
    assert "  remove: make destroy LAYER=storage (layers go top-down: storage then cluster)" in lines


def test_saved_plans_are_owner_only_and_deleted_once_applied(tmp_path, fake_terraform):
    stack = {"terraform": {"backend": {"local": {"path": "../../state.tfstate"}}}}
    (tmp_path / "stacks" / "cluster" / "cdk.tf.json").write_text(json.dumps(stack))
    state = tmp_path / "state.tfstate"
    state.write_text("{}")
    state.chmod(0o644)
    op, _ = operator(tmp_path, fake_terraform)
    op.run("plan", ["cluster"])
    plan = tmp_path / "stacks" / "cluster" / "tfplan"
    assert plan.stat().st_mode & 0o777 == 0o600 and state.stat().st_mode & 0o777 == 0o600
    op.run("deploy", ["cluster"])
    assert not plan.exists()


def test_full_teardown_lifts_nothing_that_is_not_deployed(tmp_path, fake_terraform):
    """A re-run after a half-finished teardown: an apply on an empty layer would create the very
    data it is about to delete."""
    protected_storage(tmp_path)
    asked: list[str] = []
    op, log = operator(
        tmp_path,
        fake_terraform,
        resources={"cluster": ["aws_eks_cluster.c"]},
        delete_data=True,
        confirm_data=lambda q: asked.append(q) or True,
    )
    op.run("destroy", ["storage"])
    steps = [c for c in calls(log) if c in ("storage plan", "storage apply")]
    assert asked == [] and steps[0] == "storage plan"  # no lifting apply before the destroy plan


def test_the_lift_targets_only_resources_whose_protection_an_apply_records():
    from operate.plans import needs_apply, protection_override

    stack = {
        "resource": {
            "aws_s3_bucket": {"b": {"force_destroy": False, "lifecycle": {"prevent_destroy": True}}},
            "aws_fsx_lustre_file_system": {"f": {"lifecycle": {"prevent_destroy": True}}},
            "aws_ecr_repository": {"r": {"name": "r"}},
            "aws_iam_role": {"x": {}},
        }
    }
    override = protection_override(stack)
    assert override["aws_fsx_lustre_file_system"] == {"f": {"lifecycle": {"prevent_destroy": False}}}
    assert override["aws_ecr_repository"] == {"r": {"force_delete": True}} and "aws_iam_role" not in override
    assert sorted(needs_apply(override)) == ["aws_ecr_repository.r", "aws_s3_bucket.b"]


def test_terraform_never_inherits_a_workspace_or_extra_arguments(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_WORKSPACE", "someone-elses")
    monkeypatch.setenv("TF_CLI_ARGS_apply", "-auto-approve")
    monkeypatch.setenv("TF_CLI_ARGS", "-target=aws_vpc.x")
    monkeypatch.setenv("AWS_PROFILE", "kept")
    env = Operator(tmp_path).env
    assert not any(k == "TF_WORKSPACE" or k.startswith("TF_CLI_ARGS") for k in env)
    assert env["AWS_PROFILE"] == "kept" and env["TF_INPUT"] == "0"


# ------------------------------------------------------------------ tools that are not installed


def test_an_operator_without_terraform_says_so_and_runs_nothing(tmp_path, fake_terraform):
    from operate.tools import ToolMissing

    (tmp_path / "empty").mkdir()
    op = Operator(tmp_path / "stacks", env={"PATH": str(tmp_path / "empty")}, log=lambda _: None)
    with pytest.raises(ToolMissing, match=r"^terraform is not installed \(or not on PATH\): install Terraform 1.10"):
        op.run("plan", ["cluster"])


def test_kubectl_and_the_aws_cli_that_are_not_installed_are_named(tmp_path, monkeypatch):
    from operate.cluster_access import run_aws
    from operate.kubectl import kubectl
    from operate.tools import ToolMissing

    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolMissing, match=r"^kubectl is not installed \(or not on PATH\): install kubectl, https://"):
        kubectl(["version"])
    with pytest.raises(
        ToolMissing, match=r"^aws is not installed \(or not on PATH\): install the AWS CLI v2, https://"
    ):
        run_aws(["sts", "get-caller-identity"])


def test_a_destroy_whose_clean_up_has_no_kubectl_stops_before_it_deletes(tmp_path, fake_terraform, monkeypatch, capsys):
    """`main.py destroy` with terraform on PATH but neither kubectl nor the AWS CLI: the clean-up,
    which runs before the layer's apply, names the missing tool; nothing is destroyed."""
    import main

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "terraform").symlink_to(fake_terraform)
    outdir = tmp_path / "out"
    (outdir / "stacks").mkdir(parents=True)
    (outdir / "stacks" / "workloads").symlink_to(tmp_path / "stacks" / "workloads")
    log = tmp_path / "calls.log"
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("FAKE_TF_LOG", str(log))
    monkeypatch.setenv("FAKE_TF_ENDPOINT", TARGET.endpoint)
    monkeypatch.setattr(main.common, "synthesize_profile", lambda config, outdir: None)
    code = main.main(["destroy", "--layer", "workloads", "--yes", "--outdir", str(outdir)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("aws is not installed (or not on PATH): install the AWS CLI v2")
    assert "workloads plan" in calls(log) and "workloads apply" not in calls(log)


def test_a_cluster_lost_at_the_second_layers_clean_up_names_the_layer_already_destroyed(
    tmp_path, fake_terraform, monkeypatch, capsys
):
    """The workloads layer is destroyed, then the addons layer's clean-up cannot reach the cluster:
    the destroy did delete something, and says which layer."""
    import main

    def cleanup(config, operator, kubeconfig, layer):
        if layer == "addons":
            raise ClusterAccessError("cluster gpu-validation does not answer")

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "terraform").symlink_to(fake_terraform)
    outdir = tmp_path / "out"
    outdir.mkdir()
    (outdir / "stacks").symlink_to(tmp_path / "stacks")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_TF_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setattr(main.common, "synthesize_profile", lambda config, outdir: None)
    monkeypatch.setattr(main.common, "cleanup_profile_cluster", cleanup)
    monkeypatch.setattr(main.common, "settle_profile_cluster", lambda *_: None)
    assert main.main(["destroy", "--yes", "--outdir", str(outdir)]) == 1
    said = " ".join(capsys.readouterr().err.split())
    assert "destroy stopped after destroying workloads, before the next layer's clean-up deleted anything" in said
    assert "before deleting anything in the cluster" not in said
    assert "workloads apply" in calls(tmp_path / "calls.log") and "addons apply" not in calls(tmp_path / "calls.log")


# ------------------------------------------------------------------ the typed name, never --yes


def destroy_storage_with_main(tmp_path, fake_terraform, monkeypatch, *args: str, terminal: bool) -> int:
    """`main.py destroy --layer storage ...` with the fake terraform on PATH, protected data
    deployed in the storage layer, and a terminal on stdin or none."""
    import main

    protected_storage(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if not (bin_dir / "terraform").exists():
        (bin_dir / "terraform").symlink_to(fake_terraform)
    outdir = tmp_path / "out"
    outdir.mkdir(exist_ok=True)
    if not (outdir / "stacks").exists():
        (outdir / "stacks").symlink_to(tmp_path / "stacks")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_TF_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("FAKE_TF_RESOURCES", json.dumps(STORAGE_DEPLOYED))
    monkeypatch.setattr(main.common, "synthesize_profile", lambda config, outdir: None)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: terminal, raising=False)
    return main.main(["destroy", "--layer", "storage", "--outdir", str(outdir), *args])


def data_deleted(tmp_path: Path) -> bool:
    """Did the destroy lift the data's protection or apply the destroy plan (the fake's log)?"""
    return any(call == "storage apply" for call in calls(tmp_path / "calls.log"))


def test_yes_approves_the_plans_but_the_data_still_asks_for_its_name(tmp_path, fake_terraform, monkeypatch):
    asked: list[str] = []
    monkeypatch.setattr("builtins.input", lambda prompt: asked.append(prompt) or "yes")
    code = destroy_storage_with_main(tmp_path, fake_terraform, monkeypatch, "--yes", "--delete-data", terminal=True)
    assert code == 1 and len(asked) == 1
    assert asked[0].startswith("Delete this data of the storage layer?")
    assert "Type the profile name (gpu-validation) to confirm" in asked[0]
    assert not data_deleted(tmp_path)  # "yes" is not the profile's name
    asked.clear()
    monkeypatch.setattr("builtins.input", lambda prompt: asked.append(prompt) or "gpu-validation")
    code = destroy_storage_with_main(tmp_path, fake_terraform, monkeypatch, "--yes", "--delete-data", terminal=True)
    assert code == 0 and len(asked) == 1 and data_deleted(tmp_path)


def test_without_a_terminal_yes_and_delete_data_refuse_before_anything_runs(
    tmp_path, fake_terraform, monkeypatch, capsys
):
    monkeypatch.setattr("builtins.input", lambda prompt: pytest.fail("no terminal: nothing may be asked"))
    code = destroy_storage_with_main(tmp_path, fake_terraform, monkeypatch, "--yes", "--delete-data", terminal=False)
    err = capsys.readouterr().err
    assert code == 2 and calls(tmp_path / "calls.log") == []  # not even an init
    assert err.splitlines()[0].startswith("Run it on a terminal to type the profile name, or confirm the deletion")
    assert "make destroy DELETE_DATA=1 CONFIRM_DELETE_DATA=gpu-validation AUTO_APPROVE=1" in " ".join(err.split())
    assert all(len(line) <= 100 for line in err.splitlines())


def test_ci_confirms_the_data_by_the_profiles_name_with_a_warning(tmp_path, fake_terraform, monkeypatch, capsys):
    monkeypatch.setattr("builtins.input", lambda prompt: pytest.fail("confirmed by the flag: nothing may be asked"))
    args = ("--yes", "--delete-data", "--confirm-delete-data", "gpu-validation")
    code = destroy_storage_with_main(tmp_path, fake_terraform, monkeypatch, *args, terminal=False)
    err = capsys.readouterr().err
    assert code == 0 and data_deleted(tmp_path)
    assert err.startswith("warning: --confirm-delete-data=gpu-validation: the protected data of gpu-validation")
    assert "Delete this data of the storage layer? Confirmed by --confirm-delete-data=gpu-validation." in err


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--yes", "--delete-data", "--confirm-delete-data", "p5-training"), "is not the name of profile"),
        (("--yes", "--confirm-delete-data", "gpu-validation"), "Add --delete-data"),
    ],
)
def test_a_wrong_name_or_no_delete_data_refuses_before_anything_runs(
    tmp_path, fake_terraform, monkeypatch, capsys, args, said
):
    code = destroy_storage_with_main(tmp_path, fake_terraform, monkeypatch, *args, terminal=True)
    assert code == 2 and said in capsys.readouterr().err
    assert calls(tmp_path / "calls.log") == []


def test_the_destroy_question_lists_what_the_clean_up_deletes(tmp_path, fake_terraform):
    """Approving a Kubernetes layer's destroy also lets the clean-up delete what Terraform's plan
    does not show (nodes, load balancers, volumes): the question names it first."""
    from operate.cleanup import cleanup_preview

    owned = {
        "workloads": PlatformObjects(
            namespaces=("ml-team", "gpu-validation"),
            node_pools=("gpu", "cpu"),
            cluster_queues=("ml-team",),
            terraform_claims=(("ml-team", "fsx"),),
        ),
        "addons": platform_objects(load_profile("gpu-validation"), "addons"),
    }
    asked: list[str] = []
    op, _ = operator(tmp_path, fake_terraform, confirm=lambda q: asked.append(q) or True)
    op.cleanup_preview = lambda layer: cleanup_preview(owned[layer]) if layer in owned else []
    op.run("destroy", select_layers("all"))
    workloads, addons, *aws = asked
    assert workloads.startswith("Before Terraform destroys the workloads layer, its clean-up deletes in the cluster:")
    for words in (
        "ClusterQueues (ml-team) stop admitting and evict their jobs",
        "every workload whose pods mount ml-team/fsx is deleted",
        "NodePools gpu, cpu and every node they launched",
        "every LoadBalancer Service in ml-team, gpu-validation, and with it its AWS load balancer",
        "every PersistentVolumeClaim a storage class provisioned in ml-team, gpu-validation, and with it its volume",
    ):
        assert (
            f"  - the tenants' {words}" in workloads
            or f"  - {words}" in workloads
            or f"  - the Karpenter {words}" in workloads
        ), words
    assert workloads.endswith("Destroy these changes to the workloads layer, and clean up first?")
    assert "monitoring" in addons and "NodePools" not in addons
    assert aws == [f"Destroy these changes to the {layer} layer?" for layer in ("build", "storage", "cluster")]
