"""The platform's mpirun line, built in one place: verify's NCCL MPIJob and the tenant guide's
MPIJob (docs/queues.md) run it (the torchrun commands are the Trainer add-on's:
addons/trainer/launch.py). tests/test_launch_mpirun.py runs this same command line with real
Open MPI across two local hosts, as the image's user.

The nccl-tests image (images/nccl-tests/Dockerfile) has Open MPI 4.1 from the EFA installer in
OPEN_MPI_PREFIX and no USER: it runs as root, as the MPI Operator's SSH set-up needs (the job's keys
at /root/.ssh, sshd on the workers). What the line carries, and why:

- mpirun by its absolute path: Open MPI then starts its daemon on each worker from the same prefix
  (mpirun(1): an absolute path is `--prefix`). The workers are reached over SSH, and a
  non-interactive SSH session has sshd's default PATH, not the image's ENV PATH.
- `--allow-run-as-root`: mpirun refuses to start as root without it.
- `--hostfile`: the MPI Operator's hostfile, named. Open MPI 4.1 would also take it from the
  operator's OMPI_MCA_orte_default_hostfile; Open MPI 5 (PRRTE) no longer reads that variable.
- `-x`: the ranks are children of that SSH session, so they see neither the worker pod's env nor
  the image's ENV. Forwarded: libfabric's EFA settings (the worker pod's EFA_ENV), NCCL_DEBUG=INFO
  (verify judges the network NCCL chose by those lines), and the launcher's PATH and LD_LIBRARY_PATH
  (the same image's: NCCL, aws-ofi-nccl and libfabric are found through LD_LIBRARY_PATH); on a
  multi-node NVLink group also NCCL_MNNVL_ENABLE=1 (components/k8s/compute_domains.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from components.k8s.efa_pods import EFA_ENV
from components.k8s.mpi import HOSTFILE, after_workers

OPEN_MPI_PREFIX = "/opt/amazon/openmpi"
MPIRUN = f"{OPEN_MPI_PREFIX}/bin/mpirun"
ALL_REDUCE_PERF = "/opt/nccl-tests/build/all_reduce_perf"
# Message sizes from 8 B to 2 GiB, doubling; one GPU per rank; results checked; 20 timed iterations.
ALL_REDUCE_SWEEP = ("-b", "8", "-e", "2G", "-f", "2", "-g", "1", "-c", "1", "-n", "20")
# NCCL logs the network it chose at INFO (components/nccl_transport.py reads those lines).
NCCL_DEBUG = ("NCCL_DEBUG", "INFO")
# Taken from the launcher's own environment: the image's ENV, the same in every pod of the job.
IMAGE_ENV_FORWARDED = ("LD_LIBRARY_PATH", "PATH")


def forwarded_env(extra: Sequence[tuple[str, str]] = ()) -> list[str]:
    """mpirun's -x arguments: NAME=value where the ranks need a value (`extra` too), NAME for the
    launcher's own."""
    values = [(env["name"], env["value"]) for env in EFA_ENV] + [NCCL_DEBUG, *extra]
    return [f"{name}={value}" for name, value in values] + list(IMAGE_ENV_FORWARDED)


def mpirun(
    program: Sequence[str], *, nodes: int, ranks_per_node: int, env: Sequence[tuple[str, str]] = ()
) -> list[str]:
    """mpirun of `program`, `ranks_per_node` ranks on each of the MPI Operator's `nodes` workers;
    `env`: more NAME=value for the ranks."""
    forwards = [arg for name in forwarded_env(env) for arg in ("-x", name)]
    return [
        MPIRUN,
        "--allow-run-as-root",
        "--hostfile",
        HOSTFILE,
        "-np",
        str(nodes * ranks_per_node),
        "-N",
        str(ranks_per_node),
        "--bind-to",
        "none",
        *forwards,
        *program,
    ]


def nccl_allreduce_launcher(*, nodes: int, gpus_per_node: int, env: Sequence[tuple[str, str]] = ()) -> list[str]:
    """The NCCL MPIJob's launcher command: once every worker accepts SSH, all_reduce_perf with one
    rank per GPU of every worker (`env`: more NAME=value for the ranks, e.g. NCCL_MNNVL_ENABLE)."""
    return after_workers(
        mpirun([ALL_REDUCE_PERF, *ALL_REDUCE_SWEEP], nodes=nodes, ranks_per_node=gpus_per_node, env=env)
    )
