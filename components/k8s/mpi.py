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
