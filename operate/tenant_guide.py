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

from addons.contributions import enabled_parts
from addons.parts import GuidePart
from components.k8s.tenant import SERVICE_ACCOUNT
from profiles import tenancy
from profiles.models import PlatformConfig
from profiles.storage import DATA_BUCKET_PURPOSES, data_bucket_name
from profiles.workloads import TenantConfig


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
    parts = [part.guide(config, tenant) for part in enabled_parts(config)]
    sections = [
        f"# Day one for tenant `{tenant.name}` on `{config.name}`",
        _access(config, tenant),
        _queue(parts),
        _first_jobs(config, tenant, parts),
        _data(config, tenant, parts),
        _web_uis(parts),
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


def _queue(parts: list[GuidePart]) -> str:
    queues = [part.queue for part in parts if part.queue]
    if queues:
        return "\n\n".join(queues)
    return """## 2. Your jobs

No add-on queues jobs on this profile: they start as soon as their pods fit, within your
namespace's ResourceQuota (`kubectl describe resourcequota`)."""


def _first_jobs(config: PlatformConfig, tenant: TenantConfig, parts: list[GuidePart]) -> str:
    ns = tenant.name
    kinds = [("a batch Job (one GPU)", "A batch Job (one GPU)", "job", "gpu-check")]
    kinds += [(job.what, job.section, job.kind, job.name) for part in parts for job in part.jobs]
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


def _data(config: PlatformConfig, tenant: TenantConfig, parts: list[GuidePart]) -> str:
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
            "linked to your S3 prefix."
        )
    elif fsx.enabled:
        lines.append("- FSx for Lustre: no tenant directories here (the profile has no data repository associations).")
    lines += [line for part in parts for line in part.data]
    return "\n".join(lines)


def _web_uis(parts: list[GuidePart]) -> str:
    rows = [(ui.name, ui.command, ui.url, ui.account) for part in parts for ui in part.web_uis]
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
