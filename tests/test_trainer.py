"""Kubeflow Trainer: the platform's runtimes validate against Trainer's CRDs at the pinned v2.3.0
(recorded in tests/fixtures/crds/), lead to the GPU node group they are named for with its whole
node's GPUs and EFA interfaces, mount the tenant's own volumes, and a TrainJob in a tenant
namespace is queued by Kueue and gets a flavour for every pod set."""

from __future__ import annotations

import copy
import ipaddress
import re

import jsonschema
import pytest

from addons.kueue import DEFINITION as KUEUE
from addons.kueue.queues import LOCAL_QUEUE, queue_objects
from addons.trainer import DEFINITION as TRAINER
from addons.trainer import EFA_TORCH_PROJECT_IMAGE, PUBLIC_TORCH_IMAGE
from addons.trainer.install import WEBHOOK_PORT
from addons.trainer.runtimes import (
    CHECKPOINT_DIR_ENV,
    CHECKPOINTS,
    COLLECTIVE_TIMEOUT_ENV,
    COLLECTIVE_TIMEOUT_SECONDS,
    MAX_RESTARTS,
    NCCL_WATCHDOG_ENV,
    NO_RESTART_EXIT_CODES,
    PROGRESS_FILE,
    PROGRESS_FILE_ENV,
    PROGRESS_TIMEOUT_SECONDS,
    RESTART_ATTEMPT_ENV,
    TRAINJOB_NAME_ENV,
    TenantVolumes,
    fault_env,
    runtime_image,
    runtime_name,
    runtime_objects,
)
from components.images import project_image_tag
from components.labels import NODE_GROUP_LABEL
from profiles import tenancy
from profiles.built_images import building_for
from profiles.catalog import EFA_RESOURCE, GPU_RESOURCE
from tests.cases import profile_config, profiles_where
from tests.k8s_validation import validate_object
from tests.netpol import Peer, allowed
from tests.synth_helpers import resources
from tests.test_namespaces import created_namespaces
from tests.test_queues import kueue_manages, pod_set_gets_a_flavour

TRAINED = profiles_where(TRAINER.enabled)
REMOTE_BUILD = "${data.terraform_remote_state.cross-stack-reference-input-build.outputs."


def runtimes(synthesized, profile: str) -> dict[str, dict]:
    return {
        body["manifest"]["metadata"]["name"]: body["manifest"]
        for body in resources(synthesized.stack(profile, "workloads"), "kubernetes_manifest").values()
        if body["manifest"]["kind"] == "ClusterTrainingRuntime"
    }


def node_pod(runtime: dict) -> dict:
    (job,) = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    assert job["name"] == "node"
    return job["template"]["spec"]["template"]["spec"]


@pytest.mark.every_profile
def test_the_shipped_profiles_run_trainer():
    assert {"gpu-validation", "p5-training", "p5en-training"} <= set(TRAINED)


def test_the_recorded_crd_refuses_what_a_loose_model_accepts():
    """v1alpha1 has no mlPolicy.torch.numProcPerNode (it moved to the TrainJob); a model that
    only checks the YAML's shape accepts it, the pinned CRD does not."""
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "r"},
        "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {"replicatedJobs": []}}},
    }
    validate_object(runtime, "1.35")
    broken = copy.deepcopy(runtime)
    broken["spec"]["mlPolicy"]["torch"] = {"numProcPerNode": 8}
    with pytest.raises(jsonschema.ValidationError):
        validate_object(broken, "1.35")


@pytest.mark.parametrize("profile", TRAINED)
def test_a_runtime_per_gpu_group_with_the_whole_nodes_devices_and_the_tenants_volumes(synthesized, profile):
    config = synthesized.configs[profile]
    found = runtimes(synthesized, profile)
    assert set(found) == {runtime_name(group) for group in config.cluster.gpu_node_groups}
    for group in config.cluster.gpu_node_groups:
        runtime = found[runtime_name(group)]
        validate_object(runtime, config.cluster.kubernetes_version)
        pod = node_pod(runtime)
        assert pod["nodeSelector"] == {NODE_GROUP_LABEL: group.name}
        (container,) = pod["containers"]
        assert container["name"] == "node" and container["image"] == expected_image(synthesized, profile, group)
        limits = container["resources"]["limits"]
        assert limits[GPU_RESOURCE] == str(group.catalog_entry.gpu_count)
        if group.efa_enabled:
            assert limits[EFA_RESOURCE] == str(group.catalog_entry.efa_interfaces)
            assert {"name": "FI_PROVIDER", "value": "efa"} in container["env"]
        claims = {v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"] if "persistentVolumeClaim" in v}
        # The names every tenant namespace's claims have: each TrainJob mounts its own tenant's.
        tenant_claims = {
            body["manifest"]["metadata"]["name"]
            for body in resources(synthesized.stack(profile, "workloads"), "kubernetes_manifest").values()
            if body["manifest"]["kind"] == "PersistentVolumeClaim"
            and body["manifest"]["metadata"]["namespace"] == config.workloads.tenants[0].name
        }
        assert claims <= tenant_claims and CHECKPOINTS in claims
        assert (tenancy.FSX_VOLUME in claims) == (tenancy.FSX_VOLUME in tenant_claims)
        assert any(v.get("emptyDir", {}).get("medium") == "Memory" for v in pod["volumes"])


def expected_image(synthesized, profile: str, group) -> str:
    """The profile's torch_image; else on an EFA group the build layer's pytorch-efa repository
    (read from the build layer's state) with the tag its build pushes; else the public image."""
    config = synthesized.configs[profile]
    if TRAINER.settings(config).torch_image is not None:
        return TRAINER.settings(config).torch_image
    if not group.efa_enabled:
        return PUBLIC_TORCH_IMAGE
    impl = building_for(config, EFA_TORCH_PROJECT_IMAGE, group.catalog_entry.architecture)
    assert impl is not None
    repository = synthesized.stack(profile, "build")["output"]["repository_urls"]["value"][impl]
    pushed = synthesized.stack(profile, "build")["output"]["image_tags"]["value"][impl]
    # The build layer's repository URL, as the workloads layer reads it from the build layer's state.
    (output,) = [
        name
        for name, body in synthesized.stack(profile, "build")["output"].items()
        if name.startswith("cross-stack-output-") and body["value"] == repository
    ]
    return f"{REMOTE_BUILD}{output}}}:{pushed}"


@pytest.mark.parametrize(
    "profile", [p for p in TRAINED if any(g.efa_enabled for g in profile_config(p).cluster.gpu_node_groups)]
)
def test_efa_runtimes_run_the_build_layers_pytorch_efa_image_by_a_tag_it_pushes(synthesized, profile):
    """Repositories are IMMUTABLE and tags content-derived: the runtime names the repository the
    build layer made and the tag its CodeBuild project pushes (the project's IMAGE_TAG), and asks
    NCCL for the INFO lines that name the network it chose."""
    config = synthesized.configs[profile]
    build = synthesized.stack(profile, "build")
    efa_group = next(group for group in config.cluster.gpu_node_groups if group.efa_enabled)
    impl = building_for(config, EFA_TORCH_PROJECT_IMAGE, efa_group.catalog_entry.architecture)
    assert impl is not None and TRAINER.settings(config).torch_image is None
    (project,) = [
        body for body in resources(build, "aws_codebuild_project").values() if body["name"].endswith(f"-{impl}")
    ]
    variables = {v["name"]: v["value"] for v in project["environment"]["environment_variable"]}
    assert variables["IMAGE_TAG"] == project_image_tag(EFA_TORCH_PROJECT_IMAGE)
    for group in (g for g in config.cluster.gpu_node_groups if g.efa_enabled):
        (container,) = node_pod(runtimes(synthesized, profile)[runtime_name(group)])["containers"]
        repository, tag = container["image"].rsplit(":", 1)
        assert tag == variables["IMAGE_TAG"]
        assert repository.startswith("${data.terraform_remote_state.cross-stack-reference-input-build.outputs.")
        assert {"name": "NCCL_DEBUG", "value": "INFO"} in container["env"]
        assert {"name": "FI_PROVIDER", "value": "efa"} in container["env"]


def _p5_with(**changes):
    from profiles import validate_profile
    from tests.test_cuda_driver import p5

    return validate_profile(p5(**changes))


def test_efa_runtimes_without_the_pytorch_efa_build_are_refused_by_name():
    """The public PyTorch image has no aws-ofi-nccl: an EFA group's runtime with it would run NCCL
    over TCP. A profile that neither builds pytorch-efa nor names an image is refused."""
    from profiles import ProfileError

    with pytest.raises(ProfileError) as error:
        _p5_with(build__reference_implementations={"nccl-tests": {"project_image": "nccl-tests"}})
    text = "\n".join(error.value.problems)
    assert "addons.trainer.torch_image" in text and "p5-efa" in text
    assert "build.reference_implementations.pytorch-efa: {project_image: pytorch-efa}" in text


def test_a_profiles_own_torch_image_is_kept_on_every_group():
    config = _p5_with(
        build__reference_implementations={},
        addons__trainer__torch_image="123456789012.dkr.ecr.us-east-1.amazonaws.com/t/own:v1",
    )
    (group,) = config.cluster.gpu_node_groups
    assert (
        runtime_image(group, TRAINER.settings(config), None) == "123456789012.dkr.ecr.us-east-1.amazonaws.com/t/own:v1"
    )


def test_groups_without_efa_run_the_public_image_and_need_no_build():
    config = _p5_with(build__reference_implementations={}, cluster__gpu_node_groups__0__efa_enabled=False)
    (group,) = config.cluster.gpu_node_groups
    (runtime,) = runtime_objects(
        [group], TRAINER.settings(config), TenantVolumes(fsx=False, checkpoints=False), efa_image=None
    )
    (container,) = node_pod(runtime)["containers"]
    assert container["image"] == PUBLIC_TORCH_IMAGE
    # No libfabric settings and no NCCL_DEBUG; the watchdog and the contract as on every runtime.
    assert container["env"] == fault_env(TenantVolumes(fsx=False, checkpoints=False))


def train_job(namespace: str, runtime: str, nodes: int) -> dict:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "fit", "namespace": namespace},
        "spec": {
            "runtimeRef": {"name": runtime, "kind": "ClusterTrainingRuntime", "apiGroup": "trainer.kubeflow.org"},
            "trainer": {"numNodes": nodes, "command": ["torchrun", "train.py"]},
        },
    }


@pytest.mark.parametrize("profile", [p for p in TRAINED if p in profiles_where(KUEUE.enabled)])
def test_a_tenants_two_node_train_job_is_queued_and_every_pod_set_gets_a_flavour(synthesized, profile):
    config = synthesized.configs[profile]
    tenant = config.workloads.tenants[0].name
    group = max(config.cluster.gpu_node_groups, key=lambda g: g.catalog_entry.gpu_count)
    job = train_job(tenant, runtime_name(group), 2)
    validate_object(job, config.cluster.kubernetes_version)
    labels = created_namespaces(synthesized, profile)[tenant][0]["metadata"]["labels"]
    assert kueue_manages("trainer.kubeflow.org/trainjob", labels, {LOCAL_QUEUE})
    # Trainer makes one pod set of the runtime's node job (numNodes pods).
    container = node_pod(runtimes(synthesized, profile)[runtime_name(group)])["containers"][0]
    requests = {**container["resources"]["limits"], **container["resources"]["requests"]}
    for queue in (o for o in queue_objects(config) if o["kind"] == "ClusterQueue"):
        assert pod_set_gets_a_flavour(requests, queue)


@pytest.mark.parametrize("profile", TRAINED)
def test_the_api_server_reaches_trainers_and_jobsets_webhooks(synthesized, profile):
    _, policies = created_namespaces(synthesized, profile)[TRAINER.namespace]
    vpc = ipaddress.ip_network(synthesized.configs[profile].cluster.vpc.cidr)
    control_plane = Peer(ip=str(next(vpc.hosts())))
    assert allowed(
        policies,
        namespace=TRAINER.namespace,
        direction="Ingress",
        peer=control_plane,
        protocol="TCP",
        port=WEBHOOK_PORT,
    )


def test_trainer_and_dra_are_refused_together():
    from profiles import ProfileError, validate_profile
    from tests.test_profiles import mutated

    with pytest.raises(ProfileError) as error:
        validate_profile(
            mutated(addons={"gpu_operator": {"dra": True}, "kueue": {"enabled": False}, "trainer": {"enabled": True}})
        )
    assert "addons.trainer.enabled" in "\n".join(error.value.problems)


@pytest.mark.parametrize("profile", TRAINED)
def test_kueue_can_never_place_a_runtime_pod_on_the_karpenter_pool(synthesized, profile):
    """Kueue matches a flavour on the flavour's own label keys (kueue v0.19.2
    pkg/scheduler/flavorassigner/flavorassigner.go, the node-selector and required-affinity
    checks): the pool's flavour has no group label, so only the runtime's required affinity on
    the pool label keeps a job that named fewer resources (no EFA) off it."""
    config = synthesized.configs[profile]
    flavours = {
        o["metadata"]["name"]: o["spec"].get("nodeLabels", {})
        for o in queue_objects(config)
        if o["kind"] == "ResourceFlavor"
    }
    for runtime in runtimes(synthesized, profile).values():
        pod = node_pod(runtime)
        terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        for name, labels in flavours.items():
            selector_fits = all(labels[key] == value for key, value in pod["nodeSelector"].items() if key in labels)
            affinity_fits = any(
                all(
                    (e["operator"] == "DoesNotExist" and e["key"] not in labels)
                    or (e["operator"] == "In" and labels.get(e["key"]) in e["values"])
                    for e in term["matchExpressions"]
                    if e["key"] in labels or e["operator"] == "DoesNotExist"
                )
                for term in terms
            )
            group = pod["nodeSelector"][NODE_GROUP_LABEL]
            assert (selector_fits and affinity_fits) == (name in ("default", f"group-{group}")), (
                name,
                runtime["metadata"]["name"],
            )


def test_the_guides_train_job_on_an_efa_runtime_runs_the_runtimes_efa_image():
    """docs/queues.md's TrainJob runs on p5-training's EFA group: naming the public PyTorch image
    there would put NCCL on TCP sockets, so it names no image and gets the runtime's."""
    import re
    from pathlib import Path

    import yaml

    guide = (Path(__file__).resolve().parents[1] / "docs" / "queues.md").read_text()
    (job,) = [
        doc
        for doc in (yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", guide, flags=re.DOTALL))
        if doc["kind"] == "TrainJob"
    ]
    config = profile_config("p5-training")
    (group,) = [g for g in config.cluster.gpu_node_groups if runtime_name(g) == job["spec"]["runtimeRef"]["name"]]
    assert group.efa_enabled and "image" not in job["spec"]["trainer"]


def node_job(runtime: dict) -> dict:
    (job,) = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    return job["template"]["spec"]


@pytest.mark.parametrize("profile", TRAINED)
def test_every_runtime_restarts_the_whole_gang_a_bounded_number_of_times(synthesized, profile):
    """A failed node pod fails its Job at once (backoffLimit 0, never restarted in place), and the
    JobSet recreates every Job, old pods gone first: a disruption without counting, an exit code
    that says the code or its data is wrong never, anything else up to MAX_RESTARTS times."""
    for runtime in runtimes(synthesized, profile).values():
        policy = runtime["spec"]["template"]["spec"]["failurePolicy"]
        assert policy["maxRestarts"] == MAX_RESTARTS > 0 and policy["restartStrategy"] == "BlockingRecreate"
        assert [(r["name"], r["action"]) for r in policy["rules"]] == [
            ("Disruption", "RestartJobSetAndIgnoreMaxRestarts"),
            ("NoRestartExitCode", "FailJobSet"),
            ("AnyOtherFailure", "RestartJobSet"),
        ]
        job = node_job(runtime)
        assert job["backoffLimit"] == 0 and job["template"]["spec"]["restartPolicy"] == "Never"
        assert job["podFailurePolicy"]["rules"][1]["onExitCodes"]["containerName"] == "node"


# What happens to a failed node pod, as Kubernetes' Job controller and JobSet v0.12.0 decide it:
# the Job's failure (matchPodFailurePolicy in kubernetes pkg/controller/job/pod_failure_policy.go,
# its two messages verbatim), then the first JobSet rule whose reasons and message patterns match
# (jobset pkg/controllers/failure_policy.go ruleIsApplicable), RestartJobSet if none.
def job_failure(pod_failure_policy: dict, *, exit_code: int, disrupted: bool) -> tuple[str, str]:
    pod = "ml-team/fit-node-0-1-x"
    for index, rule in enumerate(pod_failure_policy["rules"]):
        if rule["action"] != "FailJob":
            continue
        if disrupted and {"type": "DisruptionTarget", "status": "True"} in rule.get("onPodConditions", []):
            return (
                "PodFailurePolicy",
                f"Pod {pod} has condition DisruptionTarget matching FailJob rule at index {index}",
            )
        codes = rule.get("onExitCodes")
        if codes and codes["operator"] == "In" and exit_code in codes["values"]:
            message = (
                f"Container node for pod {pod} failed with exit code {exit_code} matching FailJob rule at index {index}"
            )
            return "PodFailurePolicy", message
    return "BackoffLimitExceeded", "Job has reached the specified backoff limit"


def jobset_action(failure_policy: dict, reason: str, message: str) -> str:
    for rule in failure_policy["rules"]:
        if rule.get("onJobFailureReasons") and reason not in rule["onJobFailureReasons"]:
            continue
        patterns = rule.get("onJobFailureMessagePatterns")
        if patterns and not any(re.search(p, message) for p in patterns):
            continue
        return rule["action"]
    return "RestartJobSet"


@pytest.mark.parametrize(
    ("exit_code", "disrupted", "action"),
    [
        (143, True, "RestartJobSetAndIgnoreMaxRestarts"),  # drained or evicted: SIGTERM, DisruptionTarget
        (137, True, "RestartJobSetAndIgnoreMaxRestarts"),  # killed after the grace period
        (78, True, "RestartJobSetAndIgnoreMaxRestarts"),  # a disruption is a disruption, whatever the code
        (1, False, "RestartJobSet"),  # torchrun: a worker failed here, or a peer was lost
        (137, False, "RestartJobSet"),  # OOM-killed
        (134, False, "RestartJobSet"),  # SIGABRT: PyTorch's NCCL watchdog ending a hung collective
        *((code, False, "FailJobSet") for code in NO_RESTART_EXIT_CODES),
        (7, False, "RestartJobSet"),  # "exit code 7" must not match a pattern meant for 78
        (164, False, "RestartJobSet"),
    ],
)
def test_the_failure_policy_tells_a_disruption_and_a_code_error_from_the_rest(exit_code, disrupted, action):
    config = _p5_with()
    (runtime,) = runtime_objects(
        config.cluster.gpu_node_groups,
        TRAINER.settings(config),
        TenantVolumes(fsx=True, checkpoints=True),
        efa_image="i:t",
    )
    reason, message = job_failure(node_job(runtime)["podFailurePolicy"], exit_code=exit_code, disrupted=disrupted)
    assert jobset_action(runtime["spec"]["template"]["spec"]["failurePolicy"], reason, message) == action


def test_the_recorded_crd_checks_the_failure_policy():
    """The recorded CRD knows JobSet's actions and the Job's pod failure policy: a misspelt action
    or a field JobSet does not have is refused (the test above would not see either)."""
    config = _p5_with()
    (runtime,) = runtime_objects(
        config.cluster.gpu_node_groups,
        TRAINER.settings(config),
        TenantVolumes(fsx=True, checkpoints=True),
        efa_image="i:t",
    )
    validate_object(runtime, "1.35")
    wrong_action = copy.deepcopy(runtime)
    wrong_action["spec"]["template"]["spec"]["failurePolicy"]["rules"][0]["action"] = "RestartGang"
    unknown_field = copy.deepcopy(runtime)
    unknown_field["spec"]["template"]["spec"]["failurePolicy"]["backoffSeconds"] = 60
    for broken in (wrong_action, unknown_field):
        with pytest.raises(jsonschema.ValidationError):
            validate_object(broken, "1.35")


@pytest.mark.parametrize("profile", TRAINED)
def test_every_runtime_sets_the_nccl_watchdog_and_the_training_contract(synthesized, profile):
    """Every runtime (NCCL on every GPU group) states PyTorch's watchdog settings and gives the
    training code its contract: the collective timeout, its TrainJob's name and restart attempt
    from the pod's JobSet label and annotation, and a checkpoint directory of the job's own, on the
    tenant's FSx directory where there is one."""
    for runtime in runtimes(synthesized, profile).values():
        (container,) = node_pod(runtime)["containers"]
        env = {e["name"]: e for e in container["env"]}
        for setting in NCCL_WATCHDOG_ENV:
            assert env[setting["name"]] == setting
        assert env["TORCH_NCCL_ASYNC_ERROR_HANDLING"]["value"] == "3"  # tear down on a failed collective
        assert env[COLLECTIVE_TIMEOUT_ENV]["value"] == str(COLLECTIVE_TIMEOUT_SECONDS)
        assert env[TRAINJOB_NAME_ENV]["valueFrom"]["fieldRef"]["fieldPath"] == (
            "metadata.labels['jobset.sigs.k8s.io/jobset-name']"
        )
        assert env[RESTART_ATTEMPT_ENV]["valueFrom"]["fieldRef"]["fieldPath"] == (
            "metadata.annotations['jobset.sigs.k8s.io/restart-attempt']"
        )
        names = [e["name"] for e in container["env"]]
        # Kubernetes expands $(NAME) only from variables listed before it.
        assert names.index(TRAINJOB_NAME_ENV) < names.index(CHECKPOINT_DIR_ENV)
        mounts = {m["mountPath"] for m in container["volumeMounts"]}
        expected = "/fsx/checkpoints" if "/fsx" in mounts else "/checkpoints"
        assert env[CHECKPOINT_DIR_ENV]["value"] == f"{expected}/$(TRAINJOB_NAME)"


@pytest.mark.parametrize("profile", TRAINED)
def test_every_runtime_ends_a_pod_whose_progress_file_went_stale(synthesized, profile, tmp_path):
    """The liveness probe, run by the shell here as the kubelet runs it in the container (with its
    env): it passes while the progress file is absent (code that does not write it, other nodes,
    start-up) or fresh, and fails once the file is older than PROGRESS_TIMEOUT_SECONDS."""
    import os
    import subprocess
    import time

    for runtime in runtimes(synthesized, profile).values():
        (container,) = node_pod(runtime)["containers"]
        probe = container["livenessProbe"]
        assert probe["failureThreshold"] * probe["periodSeconds"] < PROGRESS_TIMEOUT_SECONDS
        env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
        assert env[PROGRESS_FILE_ENV] == PROGRESS_FILE
        progress = tmp_path / "progress"
        env |= {PROGRESS_FILE_ENV: str(progress), "PATH": "/usr/bin:/bin"}

        command = probe["exec"]["command"]
        assert subprocess.run(command, env=env, timeout=10).returncode == 0  # no file yet
        progress.write_text("10\n")
        assert subprocess.run(command, env=env, timeout=10).returncode == 0
        stale = time.time() - PROGRESS_TIMEOUT_SECONDS - 5
        os.utime(progress, (stale, stale))
        assert subprocess.run(command, env=env, timeout=10).returncode != 0
        progress.unlink()
