"""The Trainer add-on's torchrun commands, built in one place: verify's torchrun-check (its
TrainJob, addons/trainer/checks.py) and the tenant guide's DDP sample TrainJob.
tests/test_launch_torchrun.py runs these same command lines with real torchrun, two nodes of two
processes on the CPU (gloo)."""

from __future__ import annotations

import shlex
from typing import Any

from addons.trainer.runtimes import API_VERSION as TRAINER_API_VERSION
from addons.trainer.runtimes import CHECKPOINT_DIR_ENV, COLLECTIVE_TIMEOUT_ENV, PROGRESS_FILE_ENV, RESTART_ATTEMPT_ENV

# torchrun, on the PATH of both runtime images (images/pytorch-efa and the public PyTorch image).
# It takes the nodes, the processes per node, this node's rank and the master from the PET_*
# variables Trainer sets in the runtime's node container (addons/trainer/runtimes.py).
TRAINJOB_CHECK_MARKER = "TRAINJOB_CHECK "
# Every rank adds a one: rank 0 prints the world size, the sum and the backend. On GPUs the sum
# goes through NCCL; on a machine without CUDA (the tests' CPU run) through gloo, which verify
# refuses on the cluster: a sum over gloo would mean the job never reached its GPUs.
TRAINJOB_CHECK_SCRIPT = f"""
import os, torch, torch.distributed as dist
cuda = torch.cuda.is_available()
dist.init_process_group("nccl" if cuda else "gloo")
device = torch.device("cuda", int(os.environ["LOCAL_RANK"])) if cuda else torch.device("cpu")
if cuda:
    torch.cuda.set_device(device)
ones = torch.ones(1, device=device)
dist.all_reduce(ones)
if dist.get_rank() == 0:
    print("{TRAINJOB_CHECK_MARKER}world=%d sum=%d backend=%s" % (dist.get_world_size(), int(ones.item()),
          dist.get_backend()), flush=True)
dist.destroy_process_group()
"""
DDP_SAMPLE = "ddp-sample"
DDP_SAMPLE_MARKER = "DDP_SAMPLE "
CHECKPOINT_EVERY_ENV = "CHECKPOINT_EVERY_STEPS"
# Slows every step down by this many seconds, to watch the sample or interrupt it (the tests do).
STEP_SECONDS_ENV = "DDP_SAMPLE_STEP_SECONDS"
# The guide's TrainJob: a small DistributedDataParallel run, a linear model fitted to synthetic
# data with each rank on its own shard, that survives a restart of its gang. What it reads is the
# runtimes' environment contract (addons/trainer/runtimes.py): CHECKPOINT_DIR (its own directory),
# RESTART_ATTEMPT (JobSet's restart attempt, logged), COLLECTIVE_TIMEOUT_SECONDS (the process
# group's timeout, after which a hung collective ends the process), PROGRESS_FILE (rank 0 writes
# the step there after each one: the runtime's liveness probe ends a pod whose file goes stale),
# and CHECKPOINT_EVERY_STEPS.
#
# Checkpoints: rank 0 writes `step-<8 digits>.pt` every N steps and at the end: to a temporary name
# in the same directory, flushed and fsynced, then renamed over the final name (a rename within a
# directory is atomic on POSIX: a reader sees the old state or the whole new file), then the
# directory fsynced so the rename survives a crash. Where the file system refuses renames
# (Mountpoint for S3 on a general purpose bucket) it writes the final name in place. On start rank 0
# picks the newest checkpoint that loads whole and whose step is the one its name says (a torn or
# truncated file fails to load and is skipped), every rank loads that one, rank 0 removes the
# unusable files past it (a write in place could not replace them) and the leftover temporary ones,
# and training goes on from its step: the batches of every step are those of an uninterrupted run
# (the sampler's epoch and the offset in it follow from the step), so the loss curve is the same.
DDP_SAMPLE_SCRIPT = """
import argparse, datetime, os, re, time
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

NAME = re.compile(r"step-(\\d{8})\\.pt")


def log(event, **fields):
    print("@MARKER@" + " ".join([event, *("%s=%s" % item for item in fields.items())]), flush=True)


def fsync_dir(directory):
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write(path, state):
    with open(path, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())


def save(directory, step, state):
    final = os.path.join(directory, "step-%08d.pt" % step)
    temp = os.path.join(directory, ".step-%08d.pt.tmp-%d" % (step, os.getpid()))
    write(temp, state)
    try:
        os.replace(temp, final)
    except OSError:  # no renames here (Mountpoint for S3): the object appears once it is whole
        os.remove(temp)
        write(final, state)
    else:
        fsync_dir(directory)
    return final


def latest(directory):
    \"\"\"(step, path) of the newest checkpoint that loads whole, else (0, None); and the files past
    it that do not.\"\"\"
    found = sorted(((int(m[1]), n) for n in os.listdir(directory) if (m := NAME.fullmatch(n))), reverse=True)
    unusable = []
    for step, name in found:
        path = os.path.join(directory, name)
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
            if state["step"] != step:
                raise ValueError("holds step %s" % state["step"])
        except Exception as error:
            log("skipped", file=name, reason=type(error).__name__)
            unusable.append(path)
            continue
        return step, path, unusable
    return 0, None, unusable


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--checkpoint-dir", default=os.environ.get("@CHECKPOINT_DIR@"))
    parser.add_argument("--checkpoint-every", type=int, default=int(os.environ.get("@EVERY@", "10")))
    args = parser.parse_args()
    if not args.checkpoint_dir:
        parser.exit(os.EX_USAGE, "no checkpoint directory: set @CHECKPOINT_DIR@ or --checkpoint-dir\\n")
    pause = float(os.environ.get("@STEP_SECONDS@", "0"))
    progress = os.environ.get("@PROGRESS@")  # the runtime's liveness probe kills the pod once it is stale

    def report(step):
        if progress:
            with open(progress, "w") as f:
                f.write("%d\\n" % step)

    timeout = int(os.environ.get("@TIMEOUT@", "600"))
    cuda = torch.cuda.is_available()  # NCCL between GPUs; gloo on a machine without them
    # A collective that has not finished within the timeout ends the process (PyTorch's NCCL
    # watchdog, as the runtime sets it; gloo raises), and with it the gang, which JobSet restarts.
    dist.init_process_group("nccl" if cuda else "gloo", timeout=datetime.timedelta(seconds=timeout))
    rank = dist.get_rank()
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"])) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    torch.manual_seed(0)  # the same data and starting weights on every rank
    inputs = torch.randn(8192, 16)
    targets = inputs @ torch.linspace(-1, 1, 16).unsqueeze(1) + 0.01 * torch.randn(8192, 1)
    data = TensorDataset(inputs, targets)
    sampler = DistributedSampler(data)  # each rank its own shard
    loader = DataLoader(data, batch_size=128, sampler=sampler)
    model = DistributedDataParallel(torch.nn.Linear(16, 1).to(device))  # gradients averaged over ranks
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    os.makedirs(args.checkpoint_dir, exist_ok=True)
    # Rank 0 picks the checkpoint and every rank loads that one.
    picked, unusable = [None], []
    if rank == 0:
        step, path, unusable = latest(args.checkpoint_dir)
        picked = [path]
    dist.broadcast_object_list(picked, src=0)
    start = 0
    if picked[0] is not None:
        state = torch.load(picked[0], map_location=device, weights_only=True)
        model.module.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start = state["step"]
    dist.barrier()  # every rank has read it
    if rank == 0:
        leftovers = [os.path.join(args.checkpoint_dir, n) for n in os.listdir(args.checkpoint_dir) if ".tmp-" in n]
        for path in unusable + leftovers:
            os.remove(path)
        report(start)
        log("start", step=start, restart_attempt=os.environ.get("@RESTART@", "none"),
            world=dist.get_world_size(), backend=dist.get_backend(), timeout=timeout)

    def batches(step):
        epoch, skip = divmod(step, len(loader))
        while True:
            sampler.set_epoch(epoch)
            for index, batch in enumerate(loader):
                if index >= skip:
                    yield batch
            epoch, skip = epoch + 1, 0

    for step, (x, y) in zip(range(start, args.steps), batches(start)):
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        summed = torch.stack([loss.detach() * len(x), torch.tensor(float(len(x)), device=device)])
        dist.all_reduce(summed)  # the mean loss over every rank's batch
        done = step + 1
        if rank == 0:
            report(done)
            log("step", step=done, loss="%.9e" % (summed[0] / summed[1]).item())
            if done % args.checkpoint_every == 0 or done == args.steps:
                state = {"step": done, "model": model.module.state_dict(), "optimizer": optimizer.state_dict()}
                log("checkpoint", step=done, file=os.path.basename(save(args.checkpoint_dir, done, state)))
        time.sleep(pause)
    if rank == 0:
        log("done", step=args.steps)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""
for _token, _value in {
    "@MARKER@": DDP_SAMPLE_MARKER,
    "@CHECKPOINT_DIR@": CHECKPOINT_DIR_ENV,
    "@EVERY@": CHECKPOINT_EVERY_ENV,
    "@STEP_SECONDS@": STEP_SECONDS_ENV,
    "@TIMEOUT@": COLLECTIVE_TIMEOUT_ENV,
    "@RESTART@": RESTART_ATTEMPT_ENV,
    "@PROGRESS@": PROGRESS_FILE_ENV,
}.items():
    DDP_SAMPLE_SCRIPT = DDP_SAMPLE_SCRIPT.replace(_token, _value)


def torchrun(name: str, script: str, *args: str) -> list[str]:
    """The node container's command: bash writes `script` to a new temporary file (a file of its
    own per pod and per run), then runs torchrun on it with `args`."""
    run = " ".join(['exec torchrun "$script"', *map(shlex.quote, args)])
    body = f'script="$(mktemp -d)/{name}.py"\ncat > "$script" <<\'PY\'\n{script.strip()}\nPY\n{run}\n'
    return ["/bin/bash", "-c", body]


def train_job(name: str, namespace: str, *, runtime: str, trainer: dict[str, Any]) -> dict[str, Any]:
    """A TrainJob on one of the platform's ClusterTrainingRuntimes, as a tenant writes one: no queue
    name (Kueue's defaulting gives it the namespace's queue)."""
    return {
        "apiVersion": TRAINER_API_VERSION,
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "runtimeRef": {"name": runtime, "kind": "ClusterTrainingRuntime", "apiGroup": "trainer.kubeflow.org"},
            "trainer": trainer,
        },
    }


def ddp_sample_job(namespace: str, *, runtime: str, nodes: int) -> dict[str, Any]:
    """The guide's TrainJob: the DDP sample on `nodes` nodes of a runtime, one process per GPU
    (torchrun's default where CUDA runs), checkpointing where the runtime's CHECKPOINT_DIR says."""
    command = torchrun("train", DDP_SAMPLE_SCRIPT)
    return train_job(DDP_SAMPLE, namespace, runtime=runtime, trainer={"numNodes": nodes, "command": command})
