"""A Kubernetes Job that Terraform runs to completion before what depends on it: one-off setup that
must happen inside the cluster (where the private endpoints are) before a release starts."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from cdktf import Fn, ITerraformDependable, Token
from constructs import Construct

from components.rendered import RenderedResource, dependency_addresses, render_as_data

# The API server fills these in when it admits a Job (the selector, and the controller-uid and
# job-name labels of its pod template: kubernetes batch/v1 Job defaulting); kubernetes_manifest
# must not expect them to stay as planned. The first two are the provider's own default list.
JOB_COMPUTED_FIELDS = ["metadata.labels", "metadata.annotations", "spec.selector", "spec.template.metadata.labels"]


def job_name(base: str, job: dict[str, Any], *, resolved_later: tuple[str, ...] = ()) -> str:
    """The Job's name: `base` and a digest of its spec. A Job's pod template cannot be changed once
    made, so a change of anything it runs must make a Job of a new name (kubernetes_manifest
    replaces an object whose name changes) rather than an update the API server refuses.

    `resolved_later` lists the values in the spec that Terraform knows only at plan (another
    layer's outputs, such as the database's address): the digest is Terraform's sha256 of this
    synthesis's digest of everything else and of those values, so a new database makes a new Job
    too. Any other such value in the spec is refused: the name would not follow it."""
    text = json.dumps(job["spec"], sort_keys=True)
    for index, value in enumerate(resolved_later):
        text = text.replace(json.dumps(value)[1:-1], f"<resolved later {index}>")
    if Token.is_unresolved(text):
        raise ValueError(f"the {base} Job's spec names a value Terraform resolves later that resolved_later omits")
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    if not resolved_later:
        return f"{base}-{digest[:10]}"
    # The values go to join() as a list: a token inside a string literal passed to a function is
    # an escape sequence cdktf warns it may render wrongly.
    return f"{base}-" + Fn.substr(Fn.sha256(Fn.join("|", [digest, *resolved_later])), 0, 10)


@dataclass(frozen=True, kw_only=True)
class CompletedJobProps:
    job: dict[str, Any]
    """A complete batch/v1 Job, without a name: it is named `name` and a digest of its spec."""
    name: str
    """The name's stem, also the construct's id (a stable Terraform address across changes)."""
    resolved_later: tuple[str, ...] = field(default=())
    """The values in the spec Terraform knows only at plan (see `job_name`)."""
    timeout_minutes: int
    """How long the apply waits for the Job to complete before it fails."""
    depends_on: tuple[ITerraformDependable, ...] = field(default=())
    """Created after these (its namespace, service account, identity)."""


class CompletedJob(Construct):
    """Exposes `resource`: depend on it to start after the Job has completed successfully."""

    def __init__(self, scope: Construct, id_: str, *, props: CompletedJobProps):
        super().__init__(scope, id_)
        job = dict(props.job)
        job["metadata"] = {**job["metadata"], "name": job_name(props.name, job, resolved_later=props.resolved_later)}
        # Complete=True only after the pod exited 0 (a failed Job never gets it: the apply then
        # fails at the timeout, with the Job and its pods left to read).
        wait = {"condition": [{"type": "Complete", "status": "True"}]}
        timeouts = {"create": f"{props.timeout_minutes}m", "update": f"{props.timeout_minutes}m"}
        self._resource: ITerraformDependable
        if render_as_data():  # the kubernetes_manifest as its construct writes it (components/rendered.py)
            body: dict[str, Any] = {"computed_fields": JOB_COMPUTED_FIELDS, "manifest": job, "timeouts": timeouts}
            if props.depends_on:
                body["depends_on"] = dependency_addresses(self, props.depends_on)
            body["wait"] = wait
            self._resource = RenderedResource(self, props.name, terraform_type="kubernetes_manifest", body=body)
        else:
            from cdktf_cdktf_provider_kubernetes.manifest import Manifest

            self._resource = Manifest(
                self,
                props.name,
                manifest=job,
                computed_fields=JOB_COMPUTED_FIELDS,
                wait=wait,
                timeouts=timeouts,
                depends_on=list(props.depends_on) or None,
            )

    @property
    def resource(self) -> ITerraformDependable:
        return self._resource
