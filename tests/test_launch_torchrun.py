"""The torchrun commands the platform ships, executed: verify's torchrun-check and the guide's DDP
sample TrainJob (docs/queues.md) run with real torchrun (PyTorch's CPU build, in .tools/torch from
tools/torch.lock) as a Trainer runtime runs them, two nodes of two processes on this machine.

Each node is one process running the TrainJob's command as the runtime's node container would:
the runtime's env, the TrainJob's trainer env, and the PET_* variables Trainer's torch plugin adds
(addons/trainer/runtimes.py), with 127.0.0.1 for the master's name. The scripts pick NCCL where
CUDA runs and gloo here; verify's judge refuses gloo on the cluster.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from addons.trainer import DEFINITION as TRAINER
from addons.trainer.runtimes import CHECKPOINTS_MOUNT, TenantVolumes, torch_runtime, torchrun_env
from manifests.launch import DDP_SAMPLE, DDP_SAMPLE_MARKER, ddp_sample_job
from manifests.render import render
from manifests.verify import trainjob_result
from tests.cases import IN_CI, profile_config

# Left out of `make check` (four torchrun processes per run, tens of seconds); `make test` runs it.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "queues.md"
NODES, PROCESSES = 2, 2


@pytest.fixture(scope="module")
def torch_bin() -> Path:
    """The folder with torchrun: TORCH_ENV's bin, else .tools/torch/bin (make test makes it)."""
    folder = Path(os.environ.get("TORCH_ENV", ROOT / ".tools/torch")) / "bin"
    if not (folder / "torchrun").exists():
        if IN_CI:
            pytest.fail(f"CI needs torchrun in {folder}: make test installs PyTorch there from tools/torch.lock")
        pytest.skip(f"SKIPPING the executed torchrun tests: no {folder}/torchrun (make test installs it)")
    return folder


def guide_train_job() -> dict:
    blocks = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", GUIDE.read_text(), flags=re.DOTALL)]
    (job,) = [block for block in blocks if block["kind"] == "TrainJob"]
    return job


def runtime_env(profile: str, runtime: str) -> list[dict]:
    """The node container's env of the platform's runtime of that name (on an EFA group:
    libfabric's settings and NCCL_DEBUG=INFO, which gloo ignores; on every group PyTorch's NCCL
    watchdog settings and the training contract), as the runtime lists it."""
    config = profile_config(profile)
    (group,) = [g for g in config.cluster.gpu_node_groups if f"torch-{g.name}" == runtime]
    built = torch_runtime(
        group, TRAINER.settings(config), TenantVolumes(fsx=True, checkpoints=True), efa_image="pytorch-efa:tag"
    )
    (replicated,) = built["spec"]["template"]["spec"]["replicatedJobs"]
    (container,) = replicated["template"]["spec"]["template"]["spec"]["containers"]
    return list(container["env"])


def pod_env(env: list[dict], pod: dict[str, dict[str, str]]) -> dict[str, str]:
    """`env` as the kubelet gives it to a container of a pod with these labels and annotations: a
    downward-API field read from them, $(NAME) taken from a variable listed before it."""
    values: dict[str, str] = {}
    for entry in env:
        if "valueFrom" in entry:
            path = entry["valueFrom"]["fieldRef"]["fieldPath"]
            kind, key = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path).groups()
            values[entry["name"]] = pod[kind][key]
        else:
            values[entry["name"]] = re.sub(r"\$\((\w+)\)", lambda m: values.get(m[1], m[0]), entry["value"])
    return values


def jobset_pod(job: dict, restart_attempt: int = 0) -> dict[str, dict[str, str]]:
    """The labels and annotations JobSet gives a node pod of the TrainJob (its JobSet is named after
    it) in restart attempt `restart_attempt` (jobset v0.12.0 pkg/controllers/jobset_controller.go
    labelAndAnnotateObject)."""
    name, attempt = job["metadata"]["name"], str(restart_attempt)
    return {
        "labels": {"jobset.sigs.k8s.io/jobset-name": name, "jobset.sigs.k8s.io/restart-attempt": attempt},
        "annotations": {"jobset.sigs.k8s.io/jobset-name": name, "jobset.sigs.k8s.io/restart-attempt": attempt},
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_nodes(tmp_path: Path, torch_bin: Path, job: dict, env: list[dict]) -> list[tuple[int, str]]:
    """Run the TrainJob's command as each of its nodes would, side by side: (exit code, output).
    A node that fails stops the others (they would wait for it until torchrun's timeout)."""
    trainer = job["spec"]["trainer"]
    job_env = pod_env([*env, *trainer.get("env", [])], jobset_pod(job))
    port, nodes, logs = free_port(), [], []
    for rank in range(NODES):
        pet = torchrun_env(job["metadata"]["name"], nodes=NODES, processes_per_node=PROCESSES, node_rank=rank)
        pet.update(PET_MASTER_ADDR="127.0.0.1", PET_MASTER_PORT=str(port))
        home = tmp_path / f"node-{rank}"
        home.mkdir()
        node_env = {
            "HOME": str(home),
            "TMPDIR": str(home),
            "PATH": f"{torch_bin}:/usr/local/bin:/usr/bin:/bin",
            "OMP_NUM_THREADS": "1",  # four ranks share this machine's cores
            **job_env,
            **pet,
        }
        logs.append(home / "log")
        with logs[-1].open("w") as log:
            nodes.append(subprocess.Popen(trainer["command"], env=node_env, cwd=home, stdout=log, stderr=log))
    deadline = time.monotonic() + 300
    while any(node.poll() is None for node in nodes):
        if time.monotonic() > deadline or any(node.returncode for node in nodes):
            for node in nodes:
                node.kill()
        time.sleep(0.2)
    return [(node.wait(), log.read_text()) for node, log in zip(nodes, logs, strict=True)]


def test_torchrun_check_counts_every_rank_of_both_nodes(tmp_path, torch_bin):
    """verify's TrainJob command, unchanged, on 2 nodes of 2 processes (Trainer would give it one
    per GPU): rank 0's line says 4 ranks and a sum of 4, over gloo here (verify's judge wants NCCL
    on the cluster)."""
    (job,) = render(profile_config("p5-training"))["torchrun-check.yaml"]
    results = run_nodes(tmp_path, torch_bin, job, runtime_env("p5-training", job["spec"]["runtimeRef"]["name"]))
    assert all(code == 0 for code, _ in results), results
    assert trainjob_result(results[0][1]) == (NODES * PROCESSES, NODES * PROCESSES, "gloo"), results[0][1]
    assert trainjob_result(results[1][1]) is None  # only rank 0 (node 0) prints


def test_the_guides_ddp_sample_trains_on_both_nodes_and_checkpoints(tmp_path, torch_bin):
    """docs/queues.md's TrainJob is the module's sample, and it trains: the mean loss over every
    rank falls to the data's noise, and rank 0 writes a checkpoint per epoch (to a local folder in
    place of the tenant's /checkpoints, the one path the test changes)."""
    job = guide_train_job()
    runtime = job["spec"]["runtimeRef"]["name"]
    assert job == ddp_sample_job(job["metadata"]["namespace"], runtime=runtime, nodes=NODES)
    checkpoints = tmp_path / "checkpoints"
    job["spec"]["trainer"]["command"] = [
        part.replace(f"{CHECKPOINTS_MOUNT}/", f"{checkpoints}/") for part in job["spec"]["trainer"]["command"]
    ]
    results = run_nodes(tmp_path, torch_bin, job, runtime_env("p5-training", runtime))
    assert all(code == 0 for code, _ in results), results
    epochs = [
        dict(re.findall(r"(\w+)=(\S+)", line))
        for line in results[0][1].splitlines()
        if line.startswith(DDP_SAMPLE_MARKER)
    ]
    assert [e["epoch"] for e in epochs] == ["0", "1", "2", "3", "4"]
    assert {(e["world"], e["backend"]) for e in epochs} == {(str(NODES * PROCESSES), "gloo")}
    losses = [float(e["loss"]) for e in epochs]
    assert losses[0] > 0.1 and losses[1] < losses[0] and max(losses[2:]) < 0.001, losses  # the noise is 1e-4
    assert sorted(p.name for p in (checkpoints / DDP_SAMPLE).iterdir()) == [f"epoch-{i}.pt" for i in range(5)]
