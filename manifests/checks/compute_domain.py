"""verify's steps around a multi-node job's own ComputeDomain (components/k8s/compute_domains.py,
where the driver's behaviour these steps rely on is cited):

1. before applying it, wait until the previous run's ComputeDomain and channel template are gone: the
   driver's controller takes its finalizers off after verify deleted them, and a ComputeDomain applied
   meanwhile would patch the terminating one (refused where the spec changed: the spec is immutable)
   while the controller cannot create the new template under a name still taken;
2. apply the ComputeDomain alone and wait until its controller has made the channel template, so
   that Kueue, which counts the job's claims from that template, can admit the job at once;
3. once the job is applied, wait until the ComputeDomain says Ready: each of the job's nodes has
   an IMEX daemon and every one is ready.

Every wait is bounded by verify's timeout; on a timeout the step says what to look at and deletes
what it applied, so no ComputeDomain is left without its job."""

from __future__ import annotations

import json
from typing import Any

from components.acceptance import CheckResult, CheckRun, poll_until, release, wait_for
from components.k8s.compute_domains import COMPUTE_DOMAIN_KIND, channel_template_name, compute_domain_name

# The label the controller puts on a ComputeDomain's IMEX daemon pods, with the domain's UID as
# value (dra-driver-nvidia-gpu v0.4.1 cmd/compute-domain-controller/computedomain.go 52,
# templates/compute-domain-daemon.tmpl.yaml 9-18).
DOMAIN_LABEL = "resource.nvidia.com/computeDomain"
# Where the controller runs under GPU Operator v26.7.0 (manifests/state-dra-driver/
# 0600_controller-deployment.yaml 4-7: in the operator's namespace).
CONTROLLER = "deployment nvidia-dra-driver-controller (GPU Operator's namespace)"


def domain_object(job: str) -> str:
    return f"computedomain/{compute_domain_name(job)}"


def template_object(job: str) -> str:
    return f"resourceclaimtemplate/{channel_template_name(job)}"


def release_domain(run: CheckRun, namespace: str, job: str) -> None:
    release(run, namespace, domain_object(job))


def previous_run_gone(run: CheckRun, namespace: str, job: str, check: str) -> CheckResult | None:
    """Step 1. `kubectl wait --for=delete` answers at once for an object that does not exist."""
    for obj in (domain_object(job), template_object(job)):
        gone = wait_for(run.kubectl, namespace, obj, "delete", run.timeout_minutes)
        if gone.returncode != 0:
            return CheckResult(
                check,
                False,
                f"the previous run's {obj} in {namespace} was still being deleted after {run.timeout_minutes} "
                f"minutes: the DRA driver's ComputeDomain controller takes its finalizer off; look at its log "
                f"({CONTROLLER}) and at `kubectl get -n {namespace} {obj} -o yaml` ({gone.stderr.strip()})",
            )
    return None


def start_domain(run: CheckRun, namespace: str, job: str, check: str) -> CheckResult | None:
    """Steps 1 and 2: None once the job's ComputeDomain is applied and its channel template made."""
    if failed := previous_run_gone(run, namespace, job, check):
        return failed
    if failed := run.apply(check, kinds=(COMPUTE_DOMAIN_KIND,)):
        return failed
    template = channel_template_name(job)
    made = poll_until(
        run,
        namespace,
        template_object(job),
        jsonpath="{.metadata.name}",
        done={template},
        timeout_minutes=run.timeout_minutes,
    )
    if made is not None:
        return None
    release_domain(run, namespace, job)
    return CheckResult(
        check,
        False,
        f"ComputeDomain {compute_domain_name(job)} in {namespace}: its controller made no ResourceClaimTemplate "
        f"{template} within {run.timeout_minutes} minutes, so no worker could claim the IMEX channel (the MPIJob "
        f"was not applied and the ComputeDomain is deleted). Look at the DRA driver's ComputeDomain controller "
        f"({CONTROLLER}: is it running, what does its log say about this domain?) and at "
        f"`kubectl describe computedomain -n {namespace} {compute_domain_name(job)}`",
    )


def domain_ready(run: CheckRun, namespace: str, job: str, check: str, nodes: int) -> CheckResult | None:
    """Step 3: None once the ComputeDomain's status says Ready (numNodes daemons, all ready)."""
    obj = domain_object(job)
    waited = wait_for(run.kubectl, namespace, obj, "jsonpath={.status.status}=Ready", run.timeout_minutes)
    if waited.returncode == 0:
        return None
    domain = json.loads(run.kubectl(["get", "-n", namespace, obj, "-o", "json"]).stdout or "{}")
    return CheckResult(
        check,
        False,
        f"ComputeDomain {compute_domain_name(job)} in {namespace} was not Ready within {run.timeout_minutes} "
        f"minutes: {daemons_seen(domain, nodes)}",
    )


def daemons_seen(domain: dict[str, Any], nodes: int) -> str:
    """What the domain's status.nodes says of its IMEX daemons, and where to look next."""
    listed: list[dict[str, Any]] = domain.get("status", {}).get("nodes") or []
    metadata = domain.get("metadata", {})
    uid, namespace = metadata.get("uid", "<its uid>"), metadata.get("namespace", "<the job's namespace>")
    daemon_pods = f"the daemon pods (`kubectl get pods -A -l {DOMAIN_LABEL}={uid}`, their events and logs)"
    if not listed:
        # A daemon lists itself once its pod runs (dra-driver-nvidia-gpu v0.4.1
        # cmd/compute-domain-daemon/cdclique.go 298-314), and its pod is scheduled only once a
        # worker's channel claim is prepared on the node: an empty list does not tell which is missing.
        return (
            f"no IMEX daemon has registered with it (the job has {nodes} nodes): either no worker has been "
            f"scheduled with its channel claim (the job's Workload, `kubectl get workloads -n {namespace}`: "
            "admitted?, and its worker pods: Pending, no GPU node free?), or the workers are ContainerCreating "
            f"on nodes whose IMEX daemon has not started: look at {daemon_pods}"
        )
    ready = [node["name"] for node in listed if node.get("status") == "Ready"]
    states = ", ".join(f"{node['name']} {node.get('status', 'NotReady')}" for node in listed)
    return (
        f"{len(ready)} of {nodes} IMEX daemons ready ({states}); a worker whose node's daemon is not ready stays "
        f"ContainerCreating: look at the worker pods' events and {daemon_pods}"
    )
