"""Manifest gate: checkov's kubernetes checks on every pod spec this project writes, for every
shipped profile:
- the validation workloads `make verify` applies (with the reference-image check too);
- the DaemonSets and Jobs the addons and workloads layers apply through kubernetes_manifest (the
  GPU health check, MLflow's database setup Job), beside those layers' NetworkPolicies;
- pod templates inside custom resources (verify's MPIJob, RayJob and TrainJob; the workloads
  layer's ClusterTrainingRuntime), which checkov does not know: each is scanned as a Pod;
- container lists the project writes into Helm values (sidecars, init containers), each scanned
  as a Pod in its release's namespace.
Upstream's own manifests and charts (the MPI Operator's, every chart's pods) are not this gate's:
they are pinned and reviewed at their versions. Every failed check is fixed or accepted in
tests/checkov_k8s_baseline.yaml with a reason."""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from manifests.render import render
from tests.cases import IN_CI, SHIPPED, profile_config
from tests.synth_helpers import resources
from tests.test_policy import find_checkov

# Left out of `make check` (checkov's Kubernetes checks over every rendered object); `make test` runs it.
pytestmark = pytest.mark.slow

BASELINE = yaml.safe_load((Path(__file__).parent / "checkov_k8s_baseline.yaml").read_text())
IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/x/reference:v1"
# What checkov's kubernetes framework reads as workloads; any other kind's pod specs are lifted out.
WORKLOAD_KINDS = {"Pod", "Job", "CronJob", "DaemonSet", "Deployment", "StatefulSet", "ReplicaSet"}
LAYERS_WITH_OBJECTS = ("addons", "workloads")
# kubernetes_manifest resources whose manifest is not written here but read from upstream (a
# for_each over a downloaded, checksum-pinned file): outside this gate, named so nothing else is.
UPSTREAM_MANIFESTS = {"mpi-operator"}


def plain_name(name: str) -> str:
    """A name Terraform finishes at plan (a Job's digest) cut to its stem: checkov leaves out an
    object whose name it cannot read, which is how the setup Job once went unscanned."""
    return re.sub(r"-?\$\{.*$", "", name)


def pod_specs(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], dict, dict]]:
    """(path, pod spec, its template's metadata) for every pod spec inside `node`: a mapping whose
    `containers` is a list of containers with images."""
    if isinstance(node, dict):
        spec = node.get("spec")
        if isinstance(spec, dict) and is_container_list(spec.get("containers")):
            yield path, spec, node.get("metadata") or {}
            return
        for key, value in node.items():
            yield from pod_specs(value, (*path, str(key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from pod_specs(value, (*path, str(index)))


def is_container_list(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(c, dict) and "name" in c and "image" in c for c in value)
    )


def container_lists(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], list]]:
    """(path, containers) for every list of containers inside Helm values."""
    if is_container_list(node):
        yield path, node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from container_lists(value, (*path, str(key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from container_lists(value, (*path, str(index)))


def as_pod(name: str, namespace: str, spec: dict, labels: dict | None = None) -> dict:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def lifted(obj: dict) -> list[dict]:
    """The object as checkov should see it: itself if checkov reads its kind, else each pod
    template inside it as a Pod named `<name>.<path to the template>`."""
    meta = obj.get("metadata", {})
    name = plain_name(meta.get("name", ""))
    if obj.get("kind") in WORKLOAD_KINDS:
        return [{**obj, "metadata": {**meta, "name": name}}]
    return [
        # A cluster-scoped object's pods run in whichever namespace uses it: not `default`.
        as_pod(f"{name}.{'.'.join(path)}".lower(), meta.get("namespace", "any"), spec, template.get("labels"))
        for path, spec, template in pod_specs(obj.get("spec", {}), ("spec",))
    ]


def layer_objects(synthesized, profile: str) -> Iterator[tuple[str, dict]]:
    """(layer, object) for every Kubernetes object the layers apply through kubernetes_manifest,
    except the upstream manifests named above."""
    for layer in LAYERS_WITH_OBJECTS:
        for key, body in resources(synthesized.stack(profile, layer), "kubernetes_manifest").items():
            manifest = body["manifest"]
            if not isinstance(manifest, dict):
                assert key in UPSTREAM_MANIFESTS, f"{key} is not scanned"
                continue
            yield layer, manifest


def helm_pods(synthesized, profile: str) -> list[dict]:
    """Each container list the project writes into a Helm release's values, as a Pod."""
    pods = []
    for layer in LAYERS_WITH_OBJECTS:
        for release in resources(synthesized.stack(profile, layer), "helm_release").values():
            for document in release.get("values", []):
                for path, containers in container_lists(yaml.safe_load(document)):
                    name = f"{release['name']}.values.{'.'.join(path)}".lower()
                    pods.append(as_pod(name, release["namespace"], {"containers": containers}))
    return pods


def scanned_objects(synthesized, profile: str) -> dict[str, list[dict]]:
    """What the gate hands checkov for a profile, by file."""
    files = {
        name: [pod for obj in objects for pod in lifted(obj)]
        for name, objects in render(profile_config(profile), image=IMAGE).items()
    }
    for layer in LAYERS_WITH_OBJECTS:
        # NetworkPolicies too: checkov pairs them with the pods of their namespace.
        files[f"{layer}.yaml"] = [
            lifted_obj
            for at, obj in layer_objects(synthesized, profile)
            if at == layer
            for lifted_obj in (lifted(obj) if obj["kind"] != "NetworkPolicy" else [obj])
        ]
    files["helm-values.yaml"] = helm_pods(synthesized, profile)
    return files


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
        for name, objects in scanned_objects(synthesized, profile).items():
            (folder / f"{profile}-{name}").write_text(yaml.safe_dump_all(objects, sort_keys=False))
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


@pytest.mark.every_profile
def test_the_baseline_has_no_stale_entries(scanned):
    used = {(e["check"], e["resource"]) for f in scanned["failed_checks"] if (e := accepted(f))}
    stale = [e for e in BASELINE if (e["check"], e["resource"]) not in used]
    assert not stale, f"baseline entries that match nothing: {stale}"


def test_the_scan_really_ran_on_every_pod_spec_the_project_writes(scanned, synthesized):
    seen = {f["resource"] for f in scanned["passed_checks"] + scanned["failed_checks"]}
    expected = {
        f"{o['kind']}.{o['metadata']['namespace']}.{o['metadata']['name']}"
        for profile in SHIPPED
        for objects in scanned_objects(synthesized, profile).values()
        for o in objects
        if o["kind"] in WORKLOAD_KINDS
    }
    for example in (
        "DaemonSet.gpu-operator.gpu-health-check",  # a layer's own DaemonSet
        "Job.mlflow.mlflow-db-setup",  # a Job whose name Terraform finishes
        "Pod.mlflow.mlflow.values.initcontainers",  # MLflow's login sidecar, in Helm values
        "Pod.monitoring.kube-prometheus-stack.values.prometheus-node-exporter.sidecars",  # the EFA sidecar
        "Pod.*.nccl-allreduce.spec.mpireplicaspecs.worker.template",  # a custom resource's pods
    ):
        assert any(fnmatch.fnmatch(e, example.replace("kube-prometheus-stack", "*")) for e in expected), example
    assert expected <= seen, f"not scanned: {sorted(expected - seen)}"


@pytest.mark.every_profile
def test_the_scan_really_ran_on_every_check_pod(scanned):
    pods = {f["resource"] for f in scanned["passed_checks"] + scanned["failed_checks"]}
    assert {"Pod.gpu-validation.gpu-smoke-test", "Pod.gpu-validation.topology-check"} <= pods
    assert "Pod.gpu-validation.container-test" in pods and "Pod.ml-team.lustre-efa-check" in pods
    assert len(scanned["passed_checks"]) > 100
