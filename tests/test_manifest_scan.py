"""Manifest gate: checkov's kubernetes checks on every workload the platform runs itself, for every
shipped profile: the validation pods `make verify` applies (with the reference-image check too),
and the pod-making objects the addons and workloads layers apply through kubernetes_manifest (the
GPU health check's DaemonSet, MLflow's database setup Job), scanned beside those layers'
NetworkPolicies. Every failed check is fixed or accepted in tests/checkov_k8s_baseline.yaml with a
reason."""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from manifests.render import render
from tests.cases import IN_CI, SHIPPED, profile_config
from tests.synth_helpers import resources
from tests.test_policy import find_checkov

BASELINE = yaml.safe_load((Path(__file__).parent / "checkov_k8s_baseline.yaml").read_text())
IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/x/reference:v1"
WORKLOAD_KINDS = {"Pod", "Job", "CronJob", "DaemonSet", "Deployment", "StatefulSet", "ReplicaSet"}
LAYERS_WITH_OBJECTS = ("addons", "workloads")


def layer_objects(synthesized, profile: str, kinds: set[str]) -> list[tuple[str, dict]]:
    """(layer, object) for the objects of these kinds the layers apply. A name Terraform finishes
    at plan (a Job's digest) is cut to its stem: checkov leaves out an object whose name it cannot
    read, which is how the setup Job once went unscanned."""
    found = []
    for layer in LAYERS_WITH_OBJECTS:
        for body in resources(synthesized.stack(profile, layer), "kubernetes_manifest").values():
            manifest = body["manifest"]
            if isinstance(manifest, dict) and manifest.get("kind") in kinds:
                name = re.sub(r"-?\$\{.*$", "", manifest["metadata"]["name"])
                found.append((layer, {**manifest, "metadata": {**manifest["metadata"], "name": name}}))
    return found


def accepted(finding: dict) -> dict | None:
    return next(
        (
            e
            for e in BASELINE
            if e["check"] == finding["check_id"] and fnmatch.fnmatch(finding["resource"], e["resource"])
        ),
        None,
    )


@pytest.fixture(scope="module")
def scanned(tmp_path_factory, synthesized) -> dict:
    checkov = find_checkov()
    if checkov is None:
        if IN_CI:
            pytest.fail("CI needs checkov (make installs it into .tools/checkov)")
        pytest.skip("SKIPPING the manifest gate: checkov not installed (make test installs it)")
    folder = tmp_path_factory.mktemp("manifests")
    for profile in SHIPPED:
        for name, objects in render(profile_config(profile), image=IMAGE).items():
            (folder / f"{profile}-{name}").write_text(yaml.safe_dump_all(objects, sort_keys=False))
        for layer in LAYERS_WITH_OBJECTS:
            applied = [
                o for at, o in layer_objects(synthesized, profile, WORKLOAD_KINDS | {"NetworkPolicy"}) if at == layer
            ]
            (folder / f"{profile}-{layer}.yaml").write_text(yaml.safe_dump_all(applied, sort_keys=False))
    run = subprocess.run(
        [checkov, "-d", str(folder), "--framework", "kubernetes", "-o", "json", "--compact", "--skip-download"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    report = json.loads(run.stdout)
    return (report[0] if isinstance(report, list) else report)["results"]


def test_no_unaccepted_manifest_findings(scanned):
    new = sorted(
        {f"{f['check_id']} {f['resource']}: {f['check_name']}" for f in scanned["failed_checks"] if not accepted(f)}
    )
    assert not new, "fix these or accept them in tests/checkov_k8s_baseline.yaml:\n" + "\n".join(new)


def test_the_baseline_has_no_stale_entries(scanned):
    used = {(e["check"], e["resource"]) for f in scanned["failed_checks"] if (e := accepted(f))}
    stale = [e for e in BASELINE if (e["check"], e["resource"]) not in used]
    assert not stale, f"baseline entries that match nothing: {stale}"


def test_the_scan_really_ran_on_every_workload_the_layers_apply(scanned, synthesized):
    seen = {f["resource"] for f in scanned["passed_checks"] + scanned["failed_checks"]}
    expected = {
        f"{o['kind']}.{o['metadata']['namespace']}.{o['metadata']['name']}"
        for profile in SHIPPED
        for _, o in layer_objects(synthesized, profile, WORKLOAD_KINDS)
    }
    assert {"DaemonSet.gpu-operator.gpu-health-check", "Job.mlflow.mlflow-db-setup"} <= expected
    assert expected <= seen, f"not scanned: {sorted(expected - seen)}"


def test_the_scan_really_ran_on_every_check_pod(scanned):
    pods = {f["resource"] for f in scanned["passed_checks"] + scanned["failed_checks"]}
    assert {"Pod.gpu-validation.gpu-smoke-test", "Pod.gpu-validation.topology-check"} <= pods
    assert "Pod.gpu-validation.container-test" in pods and "Pod.ml-team.lustre-efa-check" in pods
    assert len(scanned["passed_checks"]) > 100
