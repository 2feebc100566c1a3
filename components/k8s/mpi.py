"""The Kubeflow MPI Operator's contract (v2beta1), written once: the MPIJob API the validation
job is rendered for, and the labels the controller puts on launcher and worker pods, which the
acceptance gate selects on."""

from __future__ import annotations

MPIJOB_API_VERSION = "kubeflow.org/v2beta1"
MPIJOB_KIND = "MPIJob"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
LAUNCHER_ROLE = "launcher"
WORKER_ROLE = "worker"


def launcher_selector(job_name: str) -> str:
    """kubectl's -l selector for one MPIJob's launcher pod."""
    return f"{JOB_NAME_LABEL}={job_name},{JOB_ROLE_LABEL}={LAUNCHER_ROLE}"


# The hostfile the operator mounts into the launcher: one "<worker FQDN> slots=<n>" line per worker
# (kubeflow/mpi-operator v0.8.0 pkg/controller/mpi_job_controller.go: configMountPath /etc/mpi,
# hostfileName, newConfigMap with OpenMPI's format), written when the job is created.
HOSTFILE = "/etc/mpi/hostfile"
# What the operator adds to the launcher container's env for Open MPI (the same file: ompiEnvVars,
# openMPISlotsEnv, launcherEnvVars). Open MPI 4.1 reads these; Open MPI 5 (PRRTE) ignores the
# orte_* names, which is why the platform's mpirun names its hostfile (manifests/launch.py).
OPEN_MPI_LAUNCHER_ENV = {
    "K_MPI_JOB_ROLE": "launcher",
    "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
    "OMPI_MCA_orte_default_hostfile": HOSTFILE,
    "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10",
}
SLOTS_ENV = "OMPI_MCA_orte_set_default_slots"


def hostfile(job: str, namespace: str, *, workers: int, slots: int) -> str:
    """The hostfile's text as the operator writes it: each worker by its name under the job's
    headless Service (`<job>-worker-<i>.<job>.<namespace>.svc`) with the job's slotsPerWorker."""
    return "".join(f"{job}-worker-{index}.{job}.{namespace}.svc slots={slots}\n" for index in range(workers))


SSH_PORT = 22
WAIT_MINUTES = 20
# WaitForWorkersReady does not hold under Kueue: a queued MPIJob is created suspended, the operator
# creates no workers while it is suspended, so "every worker Ready" is 0 == 0 and the launcher Job
# is made at once and unsuspended with the workers (v0.8.0 mpi_job_controller.go, the
# launcherCreationPolicy branch; kubeflow/mpi-operator#615). The launcher therefore waits itself:
# every host of the hostfile resolves and accepts SSH, for at most WAIT_MINUTES, then mpirun runs.
WAIT_FOR_WORKERS = f"""
deadline=$((SECONDS + {WAIT_MINUTES * 60}))
for host in $(awk '{{print $1}}' {HOSTFILE}); do
  until getent hosts "$host" >/dev/null && timeout 2 bash -c "echo > /dev/tcp/$host/{SSH_PORT}" 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "worker $host did not accept SSH within {WAIT_MINUTES} minutes" >&2
      exit 1
    fi
    sleep 5
  done
done
exec "$@"
"""


def after_workers(command: list[str]) -> list[str]:
    """The launcher's command, run once every worker accepts SSH (bash: /dev/tcp)."""
    return ["/bin/bash", "-c", WAIT_FOR_WORKERS, "wait-for-workers", *command]
