"""Kueue follows a Capacity Block's window: the block's flavour admits nothing before the block
starts or after its drain, and admits the tenants' jobs in between. Walked through the Kueue
evaluator built from Kueue v0.19.2's source (tests/kueue_model.py), over the ClusterQueues the
workloads layer applies and the JSON patches its CronJobs run at the window's edges (the mechanism
and its upstream source: addons/kueue/window.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from addons.kueue.window import FIELD_MANAGER, apply_patch, cluster_objects_at
from profiles import load_profile
from profiles.catalog import EFA_RESOURCE, GPU_RESOURCE
from tests.kueue_model import Cohort
from tests.test_capacity_blocks import AFTER, BEFORE, BLOCK_PROFILE, DRAINING, DURING, ENDS, STARTS

CONFIG = load_profile(str(BLOCK_PROFILE))
FLAVOR = "group-p5-block"
# One p5 node's worth: 8 GPUs and its 32 EFA interfaces. Only the block's nodes have EFA, so the
# job can go nowhere else (Karpenter's GPU pool holds GPUs but no EFA interface).
P5_NODE = {GPU_RESOURCE: 8, EFA_RESOURCE: 32}


def objects(now: datetime) -> list[dict]:
    return cluster_objects_at(CONFIG, now)


def cluster_queues(found: list[dict]) -> list[dict]:
    return [o for o in found if o["kind"] == "ClusterQueue"]


def cron_jobs(found: list[dict]) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in found if o["kind"] == "CronJob"}


def admitted_flavor(queues: list[dict]) -> str | None:
    workload, _ = Cohort.of(queues).admit("ml-team", "trainer", dict(P5_NODE))
    return None if workload is None else workload.flavor


@pytest.mark.parametrize(
    ("now", "flavor"), [(BEFORE, None), (DURING, FLAVOR), (DRAINING, None), (AFTER, None)], ids=str
)
def test_an_apply_at_any_time_gives_the_block_quota_only_inside_its_window(now, flavor):
    assert admitted_flavor(cluster_queues(objects(now))) == flavor


def test_outside_the_window_every_quota_of_the_block_is_zero():
    (queue,) = cluster_queues(objects(BEFORE))
    (gpus,) = [g for g in queue["spec"]["resourceGroups"] if GPU_RESOURCE in g["coveredResources"]]
    block = next(f for f in gpus["flavors"] if f["name"] == FLAVOR)
    assert {r["name"]: r["nominalQuota"] for r in block["resources"]} == {GPU_RESOURCE: "0", EFA_RESOURCE: "0"}
    # The other flavours keep theirs (Karpenter's pool: the profile's default gpu_limit of 8).
    pool = next(f for f in gpus["flavors"] if f["name"] == "pool-gpu")
    assert {r["name"]: r["nominalQuota"] for r in pool["resources"]}[GPU_RESOURCE] == "8"


def run(cron_job: dict, queues: list[dict]) -> list[dict]:
    """What the CronJob's pod does: each container's `kubectl patch clusterqueue NAME --type=json -p=...`."""
    by_name = {q["metadata"]["name"]: q for q in queues}
    for container in cron_job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]:
        command, kind, name, *flags = container["args"]
        assert (command, kind) == ("patch", "clusterqueue") and "--type=json" in flags
        assert f"--field-manager={FIELD_MANAGER}" in flags
        (patch,) = [flag.removeprefix("-p=") for flag in flags if flag.startswith("-p=")]
        by_name[name] = apply_patch(by_name[name], json.loads(patch))
    return list(by_name.values())


def test_applied_before_the_block_the_cron_jobs_open_it_at_the_start_and_close_it_at_the_drain():
    found = objects(BEFORE)
    jobs = cron_jobs(found)
    opening, closing = jobs["block-p5-block-open"], jobs["block-p5-block-close"]
    # At the minute of each edge, in UTC, once a year (a later synthesis drops an edge once passed).
    assert (opening["spec"]["schedule"], opening["spec"]["timeZone"]) == ("30 11 27 2 *", "Etc/UTC")
    assert closing["spec"]["schedule"] == "30 10 1 3 *"  # 60 minutes before 2099-03-01T11:30Z
    queues = cluster_queues(found)
    assert admitted_flavor(queues) is None
    opened = run(opening, queues)
    assert admitted_flavor(opened) == FLAVOR
    assert admitted_flavor(run(closing, opened)) is None
    # The quota the CronJob opens is the one an apply inside the window writes.
    assert opened == cluster_queues(objects(DURING))


def test_inside_the_window_only_the_drain_and_the_warning_are_ahead():
    jobs = cron_jobs(objects(DURING))
    assert set(jobs) == {"block-p5-block-close", "block-p5-block-warn"}
    assert admitted_flavor(run(jobs["block-p5-block-close"], cluster_queues(objects(DURING)))) is None


@pytest.mark.parametrize("now", [DRAINING, AFTER], ids=["draining", "ended"])
def test_past_the_drain_nothing_is_scheduled_and_nothing_is_installed(now):
    assert not [o for o in objects(now) if o["kind"] not in ("ResourceFlavor", "ClusterQueue")]


def test_a_patch_for_a_reordered_queue_is_refused_instead_of_changing_another_flavour():
    queues = cluster_queues(objects(BEFORE))
    opening = cron_jobs(objects(BEFORE))["block-p5-block-open"]
    (gpus,) = [g for g in queues[0]["spec"]["resourceGroups"] if GPU_RESOURCE in g["coveredResources"]]
    gpus["flavors"].reverse()
    with pytest.raises(ValueError, match="test failed"):
        run(opening, queues)


def test_jobs_are_warned_with_the_time_left_in_their_namespace():
    found = objects(DURING)
    warn = cron_jobs(found)["block-p5-block-warn"]
    block = CONFIG.cluster.gpu_node_groups[0].capacity
    warned_at = ENDS - timedelta(minutes=block.drain_minutes + block.warn_minutes)
    assert warn["spec"]["schedule"] == f"{warned_at.minute} {warned_at.hour} {warned_at.day} {warned_at.month} *"
    (container,) = warn["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["create", "-f", "/events/ml-team.json"]
    (events,) = [o for o in found if o["kind"] == "ConfigMap"]
    event = json.loads(events["data"]["ml-team.json"])
    assert event["type"] == "Warning" and event["metadata"]["namespace"] == "ml-team"
    assert event["involvedObject"] == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "name": "default",
        "namespace": "ml-team",
    }
    assert "drains at 2099-03-01 10:30 UTC, in 30 minutes" in event["message"]
    assert STARTS < warned_at < ENDS


def test_the_cron_jobs_run_unprivileged_on_system_nodes_and_may_touch_only_the_tenants_queues():
    found = objects(BEFORE)
    for job in cron_jobs(found).values():
        pod = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True and pod["nodeSelector"] == {"role": "system"}
        for container in pod["containers"]:
            assert container["securityContext"]["allowPrivilegeEscalation"] is False
            assert container["image"].startswith("registry.k8s.io/kubectl:v")
    (role,) = [o for o in found if o["kind"] == "ClusterRole"]
    assert role["rules"] == [
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["clusterqueues"],
            "verbs": ["get", "patch"],
            "resourceNames": ["ml-team"],
        },
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    ]


def test_profiles_without_a_block_get_no_window_objects():
    for name in ("gpu-validation", "p5-training"):
        assert not [o for o in cluster_objects_at(load_profile(name), BEFORE) if o["kind"] == "CronJob"]


def test_the_window_objects_and_events_are_valid_kubernetes_objects():
    from tests.k8s_validation import validate_object

    found = objects(BEFORE)
    events = [json.loads(text) for o in found if o["kind"] == "ConfigMap" for text in o["data"].values()]
    for obj in [*found, *events]:
        validate_object(obj, CONFIG.cluster.kubernetes_version)


def test_the_end_of_block_alert_fires_only_for_queues_on_the_block_in_the_warning_time(tmp_path):
    """promtool evaluates the rule: a block of 1970-01-01 (drain at 23:00, warned from 22:30), so
    the evaluation times stay small. Kueue's usage gauge says which queues hold the block's GPUs."""
    import subprocess

    import yaml

    from addons.kueue.window import alert_rule_object, block_alert_rules
    from profiles import validate_profile
    from profiles.loader import parse_profile_text
    from tests.test_alert_rules import ROOT

    promtool = ROOT / ".tools" / "bin" / "promtool"
    if not promtool.exists():
        pytest.skip("SKIPPING: promtool not found (make check fetches it)")
    doc = parse_profile_text(BLOCK_PROFILE.read_bytes(), "capacity-block")
    doc["cluster"]["gpu_node_groups"][0]["capacity"] |= {
        "starts_at": "1970-01-01T00:00:00Z",
        "ends_at": "1970-01-02T00:00:00Z",
    }
    rules = block_alert_rules(validate_profile(doc))
    assert rules is not None
    (rule,) = rules["groups"][0]["rules"]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))

    def expected(minutes: int) -> dict:
        annotations = {
            key: text.replace("{{ $labels.cluster_queue }}", "ml-team").replace(
                '{{ $value | printf "%.0f" }}', str(minutes)
            )
            for key, text in rule["annotations"].items()
        }
        return {"exp_labels": {**rule["labels"], "cluster_queue": "ml-team"}, "exp_annotations": annotations}

    usage = 'kueue_cluster_queue_resource_usage{{cluster_queue="{q}",flavor="{f}",resource="nvidia.com/gpu"}}'
    series = [
        {"series": usage.format(q="ml-team", f=FLAVOR), "values": "8x1500"},
        {"series": usage.format(q="idle-team", f=FLAVOR), "values": "0x1500"},
        {"series": usage.format(q="pool-team", f="pool-gpu"), "values": "4x1500"},
    ]
    tests = [
        {
            "interval": "1m",
            "input_series": series,
            "alert_rule_test": [
                {"eval_time": "22h20m", "alertname": "CapacityBlockEnding", "exp_alerts": []},
                {"eval_time": "22h45m", "alertname": "CapacityBlockEnding", "exp_alerts": [expected(15)]},
                {"eval_time": "23h05m", "alertname": "CapacityBlockEnding", "exp_alerts": []},
            ],
        }
    ]
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "tests": tests}))
    result = subprocess.run(
        [str(promtool), "test", "rules", "tests.yaml"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (obj,) = alert_rule_object(validate_profile(doc))
    assert obj["kind"] == "PrometheusRule" and obj["spec"] == rules


def test_the_workloads_layer_applies_the_window_closed_with_its_cron_jobs_and_alert(synthesized):
    """The fixture's block lies ahead: the layer's ClusterQueue has the block closed, the CronJobs
    of all three edges and the alert are there."""
    from tests.synth_helpers import resources

    manifests = [
        body["manifest"]
        for body in resources(synthesized.stack("capacity-block", "workloads"), "kubernetes_manifest").values()
    ]
    kinds = {(m["kind"], m["metadata"]["name"]) for m in manifests}
    assert {("CronJob", f"block-p5-block-{edge}") for edge in ("open", "close", "warn")} <= kinds
    assert ("PrometheusRule", "capacity-blocks") in kinds
    (queue,) = [m for m in manifests if m["kind"] == "ClusterQueue"]
    assert admitted_flavor([queue]) is None


def test_terraform_takes_back_the_queues_the_cron_jobs_patched(synthesized):
    """A CronJob's JSON patch makes its field manager the owner of the ClusterQueue's
    spec.resourceGroups, an atomic list (Kueue v0.19.2 apis/kueue/v1beta2/clusterqueue_types.go 73),
    so the next apply that changes any quota (a tenant's share, a new flavour, the block removed)
    conflicts with it: hashicorp/kubernetes applies as "Terraform" without force by default
    (v2.38.0 manifest/provider/plan.go 72-76) and fails on the conflict (apply.go 376-392).
    Terraform's quota is computed for its own moment, so it takes the fields back."""
    from tests.synth_helpers import resources

    bodies = resources(synthesized.stack("capacity-block", "workloads"), "kubernetes_manifest").values()
    queues = [body for body in bodies if body["manifest"]["kind"] == "ClusterQueue"]
    assert queues
    for body in queues:
        assert body.get("field_manager", {}).get("force_conflicts") is True, body["manifest"]["metadata"]["name"]


@pytest.mark.parametrize(
    ("now", "edge"),
    [(BEFORE, STARTS), (DURING, ENDS - timedelta(minutes=60 + 30)), (DRAINING, None), (AFTER, None)],
    ids=str,
)
def test_the_queues_refuse_a_plan_made_too_close_to_the_next_edge(now, edge):
    """Kubernetes counts a CronJob's schedule from its creationTimestamp (pkg/controller/cronjob/
    utils.go, mostRecentScheduleTime): synthesized before an edge and applied after it, the CronJob
    never runs and the queues stay as synthesized for the whole window. Their plan is refused from
    PLAN_MARGIN_MINUTES before the next edge (the fixture's defaults: warned 30 minutes before a
    60-minute drain)."""
    from addons.kueue.window import PLAN_MARGIN_MINUTES, plan_deadline

    deadline = plan_deadline(CONFIG, now)
    if edge is None:
        assert deadline is None
    else:
        assert deadline is not None and deadline.at == edge - timedelta(minutes=PLAN_MARGIN_MINUTES)
        assert f"{edge:%Y-%m-%d %H:%M} UTC" in deadline.why and "Synthesize again" in deadline.why


def test_the_workloads_layer_refuses_a_stale_plan_of_the_queues(synthesized):
    from tests.synth_helpers import resources

    bodies = resources(synthesized.stack("capacity-block", "workloads"), "kubernetes_manifest").values()
    window = [b for b in bodies if b["manifest"]["kind"] in ("ClusterQueue", "CronJob")]
    assert window
    for body in window:
        (condition,) = body["lifecycle"]["precondition"]
        assert condition["condition"] == "${timecmp(plantimestamp(), local.queues_plan_before) < 0}"
        assert "Capacity Block" in condition["error_message"]
    stamp = synthesized.stack("capacity-block", "workloads")["locals"]["queues_plan_before"]
    assert stamp == "2099-02-27T11:20:00Z"  # the block's start, less the margin


@pytest.mark.parametrize(("hours", "refused"), [(-1, True), (1, False)])
def test_terraform_refuses_a_plan_after_the_deadline_and_not_a_destroy(tmp_path, hours, refused):
    """The deadline's condition, evaluated by Terraform itself (built-in terraform_data: no provider)."""
    import shutil
    import subprocess

    from components.plan_deadline import PlanDeadline

    if shutil.which("terraform") is None:
        pytest.skip("no terraform on PATH")
    deadline = PlanDeadline(at=datetime.now(UTC) + timedelta(hours=hours), why="stale")
    config = {
        "locals": {"queues_plan_before": deadline.stamp},
        "resource": {
            "terraform_data": {
                "queues": {
                    "input": "x",
                    "lifecycle": {
                        "precondition": [
                            {
                                "condition": PlanDeadline.condition("local.queues_plan_before"),
                                "error_message": deadline.why,
                            }
                        ]
                    },
                }
            }
        },
    }
    (tmp_path / "main.tf.json").write_text(json.dumps(config))

    def tf(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["terraform", *args], cwd=tmp_path, capture_output=True, text=True, timeout=120)

    assert tf("init", "-input=false").returncode == 0
    plan = tf("plan", "-input=false", "-no-color")
    assert (plan.returncode != 0 and "stale" in plan.stderr) is refused, plan.stderr
    assert tf("plan", "-destroy", "-input=false", "-no-color").returncode == 0
