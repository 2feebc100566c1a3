"""A tenant's day one, on one page, with the profile's own names: how its people reach the cluster,
where their jobs queue, how to watch them, where their data lives and how to open the platform's
web UIs. `main.py tenant-guide` prints it; docs/tenants.md holds the page of one shipped profile,
and a test keeps that page equal to what this module writes.

Every name comes from the module that creates the object (the queue from Kueue's queues, the
volumes from profiles/tenancy.py, the services from the add-ons' definitions), so the page cannot
drift from what the layers deploy.
"""

from __future__ import annotations

import textwrap

from addons.jupyterhub import DEFINITION as JUPYTERHUB
from addons.kuberay import DEFINITION as KUBERAY
from addons.kueue import DEFINITION as KUEUE
from addons.kueue.queues import LOCAL_QUEUE
from addons.mlflow import DEFINITION as MLFLOW
from addons.mlflow import access as mlflow_access
from addons.monitoring import DEFINITION as MONITORING
from addons.monitoring import GRAFANA_DEPLOYMENT, GRAFANA_PORT
from addons.mpi_operator import DEFINITION as MPI_OPERATOR
from addons.trainer import DEFINITION as TRAINER
from addons.trainer.runtimes import CHECKPOINTS_MOUNT, FSX_MOUNT
from components.k8s.tenant import SERVICE_ACCOUNT
from profiles import tenancy
from profiles.models import PlatformConfig
from profiles.storage import DATA_BUCKET_PURPOSES, data_bucket_name
from profiles.workloads import TenantConfig

# JupyterHub's chart (zero-to-jupyterhub) serves users through the Service proxy-public, port 80.
JUPYTERHUB_SERVICE, JUPYTERHUB_PORT = "proxy-public", 80


class UnknownTenant(ValueError):
    pass


def find_tenant(config: PlatformConfig, name: str) -> TenantConfig:
    for tenant in config.workloads.tenants:
        if tenant.name == name:
            return tenant
    known = ", ".join(tenant.name for tenant in config.workloads.tenants) or "none"
    raise UnknownTenant(f"--tenant: profile {config.name} has no tenant {name!r} (its tenants: {known})")


def tenant_guide(config: PlatformConfig, tenant_name: str) -> str:
    """The tenant's page as Markdown."""
    tenant = find_tenant(config, tenant_name)
    sections = [
        f"# Day one for tenant `{tenant.name}` on `{config.name}`",
        _access(config, tenant),
        _queue(config, tenant),
        _first_jobs(config, tenant),
        _data(config, tenant),
        _web_uis(config),
    ]
    return "\n\n".join(section.strip("\n") for section in sections if section) + "\n"


def _fence(*lines: str) -> str:
    return "```sh\n" + "\n".join(lines) + "\n```"


def _access(config: PlatformConfig, tenant: TenantConfig) -> str:
    ns = tenant.name
    if tenant.editors or tenant.viewers:
        people = f"The profile lists {len(tenant.editors)} editor(s) and {len(tenant.viewers)} viewer(s) of `{ns}`."
    else:
        people = (
            f"The profile lists nobody for `{ns}` yet: the platform's admin adds your IAM role under "
            "`workloads.tenants[].editors` (or `viewers`, to read only) and deploys the workloads layer."
        )
    return "\n\n".join(
        [
            "## 1. Reach your namespace",
            _para(
                f"{people} Each person gets an EKS access entry scoped to `{ns}` alone: editors run pods, "
                "Jobs, MPIJobs, TrainJobs and RayJobs there, read logs and open port-forwards; viewers "
                "read. With your role's credentials, from a network that reaches the API "
                '(docs/operations.md, "Reaching the API"):'
            ),
            _fence(
                f"aws eks update-kubeconfig --region {config.region} --name {config.name}",
                f"kubectl config set-context --current --namespace {ns}",
                f"kubectl auth can-i create pods -n {ns}",
            ),
        ]
    )


def _queue(config: PlatformConfig, tenant: TenantConfig) -> str:
    if not KUEUE.enabled(config):
        return """## 2. Your jobs

Kueue is off on this profile: jobs start as soon as their pods fit, within your namespace's
ResourceQuota (`kubectl describe resourcequota`)."""
    ns = tenant.name
    return f"""## 2. Your queue

A job you create in `{ns}` starts suspended and waits in the LocalQueue `{LOCAL_QUEUE}` until
your team's share (or what others leave idle) has GPUs for all of its pods; you need not name the
queue. docs/queues.md explains shares, borrowing and preemption. Watch it:

{
        _fence(
            f"kubectl -n {ns} get localqueue {LOCAL_QUEUE}",
            f"kubectl -n {ns} get workloads",
            f"kubectl -n {ns} describe workloads    # each one's conditions say why it waits",
            f"kubectl -n {ns} get pods -w",
        )
    }"""


def _first_jobs(config: PlatformConfig, tenant: TenantConfig) -> str:
    ns = tenant.name
    kinds = [("a batch Job (one GPU)", "A batch Job (one GPU)", "job", "gpu-check")]
    if MPI_OPERATOR.enabled(config):
        kinds.append(("an MPIJob across two nodes", "An MPIJob across two nodes", "mpijob", "allreduce"))
    if TRAINER.enabled(config):
        kinds.append(("a TrainJob (torchrun)", "A TrainJob", "trainjob", "ddp-sample"))
    if KUBERAY.enabled(config):
        kinds.append(("a RayJob", "A RayJob", "rayjob", "hello-ray"))
    listed = "\n".join(f'- {what}: docs/queues.md, "{section}"' for what, section, _, _ in kinds)
    watch = [f"kubectl -n {ns} apply -f job.yaml"]
    watch += [f"kubectl -n {ns} get {kind} {name}" for _, _, kind, name in kinds[1:]]
    watch.append(f"kubectl -n {ns} logs -f job/gpu-check")
    return f"""## 3. Your first jobs

Copy an example, set `namespace: {ns}`, and apply it:

{listed}

{_fence(*watch)}

Pods run as the service account `{SERVICE_ACCOUNT}` by default, whose IAM role
(`{tenancy.role_name(config.name, ns)}`) reaches only your team's prefix of the platform's buckets."""


def _data(config: PlatformConfig, tenant: TenantConfig) -> str:
    ns = tenant.name
    lines = ["## 4. Where your data lives", ""]
    buckets = ", ".join(
        f"`s3://{data_bucket_name(config.name, purpose, '<account>')}/{tenancy.s3_prefix(ns)}` "
        f"(claim `{tenancy.s3_volume(purpose)}`)"
        for purpose in DATA_BUCKET_PURPOSES
    )
    lines.append(f"- S3: {buckets}; `<account>` is the AWS account's ID.")
    fsx = config.storage.fsx
    if fsx.enabled and fsx.data_repository_associations:
        lines.append(
            f"- FSx for Lustre: the directory `{tenancy.fsx_directory(ns)}` (claim `{tenancy.FSX_VOLUME}`), "
            f"linked to your S3 prefix; Trainer's runtimes mount it at `{FSX_MOUNT}`."
        )
    elif fsx.enabled:
        lines.append("- FSx for Lustre: no tenant directories here (the profile has no data repository associations).")
    if TRAINER.enabled(config):
        lines.append(
            f"- Checkpoints: Trainer's runtimes mount the `{tenancy.s3_volume('checkpoints')}` claim at "
            f"`{CHECKPOINTS_MOUNT}`; write new files, never rewrite one."
        )
    return "\n".join(lines)


def _web_uis(config: PlatformConfig) -> str:
    rows = []
    if MONITORING.enabled(config):
        rows.append(
            (
                "Grafana",
                f"kubectl -n {MONITORING.namespace} port-forward deploy/{GRAFANA_DEPLOYMENT} 3000:{GRAFANA_PORT}",
                "http://localhost:3000",
                "a Grafana user the admin creates for you (Viewer); the admin signs in as `admin`",
            )
        )
    if MLFLOW.enabled(config):
        rows.append(
            (
                "MLflow",
                f"kubectl -n {MLFLOW.namespace} port-forward svc/{mlflow_access.SERVICE} "
                f"5000:{mlflow_access.SERVICE_PORT}",
                "http://localhost:5000",
                "an MLflow user the admin creates for you (docs/mlflow.md)",
            )
        )
    if JUPYTERHUB.enabled(config):
        rows.append(
            (
                "JupyterHub",
                f"kubectl -n {JUPYTERHUB.namespace} port-forward svc/{JUPYTERHUB_SERVICE} 8080:{JUPYTERHUB_PORT}",
                "http://localhost:8080",
                "your own identity at the profile's OIDC provider, if `addons.jupyterhub.allowed_users` lists it",
            )
        )
    if not rows:
        return ""
    lines = [
        "## 5. The platform's web UIs",
        "",
        "They run in the platform's namespaces, which your access does not reach: a cluster admin runs",
        "the port-forward (or exposes the UI), and you sign in with the account named.",
        "",
    ]
    for name, command, url, account in rows:
        lines += [f"- {name}: {url}, signing in with {account}.", "", _indent(_fence(command)), ""]
    return "\n".join(lines).rstrip("\n")


def _para(text: str) -> str:
    return textwrap.fill(text, width=100, break_on_hyphens=False, break_long_words=False)


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.splitlines())
