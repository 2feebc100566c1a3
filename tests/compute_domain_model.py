"""A job's ComputeDomain on a cluster, as verify's kubectl sees it, on a clock: the NVIDIA DRA
driver's ComputeDomain controller, its IMEX daemons, Kueue's admission of the job and kubectl's own
waits, each as upstream behaves (the source beside each rule). The delays are made up; the order of
events and what each command answers are not.

Read upstream:
- kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 (the snapshot has no v0.5.0, GPU Operator v26.7.0's
  pin; HEAD, 0.5.0-dev, does the same in the files below):
  - the controller creates the channel ResourceClaimTemplate after it has seen the ComputeDomain
    (cmd/compute-domain-controller/computedomain.go 368), with a finalizer
    (templates/compute-domain-workload-claim-template.tmpl.yaml 6-7); a Create under a name still
    taken fails (resourceclaimtemplate.go 182) and the controller retries;
  - on deletion it deletes the template, takes its finalizer off, and only once the template is gone
    takes the ComputeDomain's own finalizer off (computedomain.go 317-349): a stuck controller leaves
    both terminating for good;
  - status.status is NotReady while fewer than spec.numNodes daemons are listed or any listed one is
    NotReady, else Ready (computedomain.go 254-268): with numNodes 0, Ready before any daemon;
  - a daemon starts on a node once a pod's channel claim is prepared there, is listed NotReady, and
    turns Ready when its local IMEX daemon answers READY (cmd/compute-domain-daemon/main.go 433-456,
    cdclique.go 309, 429-432);
  - the spec is immutable (the CRD's x-kubernetes-validations, tests/fixtures/crds): applying a new
    spec over a terminating ComputeDomain is refused; the same spec patches it, and it still goes.
- Kueue v0.19.2: a Workload whose pods claim from a template that does not exist is inadmissible
  (pkg/dra/claims.go; tests/kueue_model.py) and is retried with backoff.
- kubernetes/kubectl v0.33.0: `wait --for=delete` of an object that is not there succeeds
  (pkg/cmd/wait/wait.go 370-372, delete.go 46); a wait that runs out prints "timed out waiting for
  the condition on <resource>/<name>" and exits 1; `delete --wait` without --timeout waits up to a
  week (pkg/cmd/delete/delete.go 455-458), longer than operate/kubectl.py lets kubectl run.
"""

from __future__ import annotations

import json
import math
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from addons.kueue import KueueConfig
from addons.kueue.install import manager_configuration
from components.k8s.compute_domains import COMPUTE_DOMAIN_KIND, channel_template_name, compute_domain_name
from components.k8s.gpus import claim_template
from components.k8s.mpi import MPIJOB_KIND
from operate.kubectl import TIMEOUT_SECONDS
from tests.kueue_model import Inadmissible, dra_pod_set_requests
from tests.test_compute_domains import channel_template_the_controller_makes

NEVER = math.inf
# Before its first Ready, a daemon is listed NotReady this long (it registers, then IMEX starts).
DAEMON_STARTUP_SECONDS = 20.0
# Kueue's requeue of an inadmissible Workload (its backoff starts at seconds and grows).
KUEUE_BACKOFF_SECONDS = 60.0
# The label (and finalizer) the controller puts on what it makes for a domain, the domain's uid as
# value (cmd/compute-domain-controller/computedomain.go 50-52).
DOMAIN_LABEL = "resource.nvidia.com/computeDomain"
DOMAIN_UID = "cd-uid-1"


@dataclass
class Stored:
    """One object of the API as time passes: there from `created` until `gone`, terminating from
    `deleting` on."""

    created: float
    spec: dict[str, Any] = field(default_factory=dict)
    deleting: float = NEVER
    gone: float = NEVER

    def there(self, at: float) -> bool:
        return self.created <= at < self.gone


def answer(args: list[str], code: int = 0, out: str = "", err: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess(args, code, out, err)


@dataclass
class DomainCluster:
    """The job's ComputeDomain, its channel template, its MPIJob and the IMEX daemons of its nodes.
    `template_after`: how long the controller takes to make the template (NEVER: it does not run);
    `finalizers_after`: to take the finalizers off after a delete (NEVER: stuck); `daemons_after`: for
    each worker node, from the job's admission to its IMEX daemon being ready (NEVER: it never is)."""

    job: str
    namespace: str
    template_after: float = 45.0
    finalizers_after: float = 20.0
    daemons_after: tuple[float, ...] = (90.0, 150.0)
    gpus_per_node: int = 4
    now: float = 0.0
    domains: list[Stored] = field(default_factory=list)
    templates: list[Stored] = field(default_factory=list)
    applied: list[tuple[float, list[str]]] = field(default_factory=list)
    """(time, kinds) of each apply of the job's ComputeDomain or MPIJob."""
    admitted: float = NEVER
    inadmissible: list[str] = field(default_factory=list)
    applied_over_terminating: list[str] = field(default_factory=list)
    ready_daemons_when_seen_ready: list[int] = field(default_factory=list)

    def previous_run(self, num_nodes: int) -> None:
        """What an earlier verify left: its ComputeDomain and the template the controller made."""
        spec = {"numNodes": num_nodes, "channel": {"resourceClaimTemplate": {"name": self.template_name}}}
        self.domains.append(Stored(created=-3600.0, spec=spec))
        self.templates.append(Stored(created=-3590.0))

    @property
    def domain_name(self) -> str:
        return compute_domain_name(self.job)

    @property
    def template_name(self) -> str:
        return channel_template_name(self.job)

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    # What is there at a time.

    def domain_at(self, at: float) -> Stored | None:
        return next((d for d in self.domains if d.there(at)), None)

    def template_at(self, at: float) -> Stored | None:
        return next((t for t in self.templates if t.there(at)), None)

    def daemons_at(self, at: float) -> list[tuple[str, bool]]:
        """(node, ready) of each daemon listed in the domain's status.nodes at `at`: from the job's
        admission (its workers get their nodes and their channel claims are prepared there)."""
        return [
            (f"gb200-node-{index}", self.admitted + after <= at)
            for index, after in enumerate(self.daemons_after)
            if self.admitted + self.registered_after(after) <= at
        ]

    @staticmethod
    def registered_after(ready_after: float) -> float:
        """A daemon is listed NotReady from its start until its IMEX daemon is ready (or forever)."""
        return ready_after - DAEMON_STARTUP_SECONDS if ready_after < NEVER else DAEMON_STARTUP_SECONDS

    def status_at(self, at: float) -> str:
        domain = self.domain_at(at)
        if domain is None:
            return ""
        daemons = self.daemons_at(at)
        if len(daemons) < domain.spec["numNodes"] or not all(ready for _, ready in daemons):
            return "NotReady"
        return "Ready"

    def events(self) -> list[float]:
        """Every time at which something this model answers about can change."""
        times = [self.admitted + after for after in self.daemons_after]
        times += [self.admitted + self.registered_after(after) for after in self.daemons_after]
        for stored in (*self.domains, *self.templates):
            times += [stored.created, stored.gone]
        return sorted(t for t in times if t < NEVER)

    # kubectl.

    def __call__(self, args: list[str]) -> subprocess.CompletedProcess[str] | None:
        """kubectl's answer where it concerns this job's ComputeDomain, template or MPIJob apply;
        None for everything else."""
        domain, template = f"computedomain/{self.domain_name}", f"resourceclaimtemplate/{self.template_name}"
        if args[0] == "apply":
            return self.apply(args, Path(args[2]))
        if args[0] == "delete" and domain in args:
            return self.delete(args)
        if args[0] == "wait" and (domain in args or template in args):
            return self.wait(args)
        if args[:2] == ["get", "-n"] and args[3] == template:
            there = self.template_at(self.now)
            if there is None:
                kind = "resourceclaimtemplates.resource.k8s.io"
                return answer(args, 1, "", f'Error from server (NotFound): {kind} "{self.template_name}" not found')
            return answer(args, 0, printed(args, self.template_object()))
        if args[:2] == ["get", "-n"] and args[3] == domain:
            there = self.domain_object()
            return answer(args, 0, printed(args, there)) if there else answer(args, 1, "", "NotFound")
        return None

    def apply(self, args: list[str], path: Path) -> subprocess.CompletedProcess[str] | None:
        objects = [o for o in yaml.safe_load_all(path.read_text()) if o]
        kinds = [o["kind"] for o in objects]
        if COMPUTE_DOMAIN_KIND not in kinds and MPIJOB_KIND not in kinds:
            return None
        self.applied.append((self.now, kinds))
        for obj in objects:
            if obj["kind"] == COMPUTE_DOMAIN_KIND and (refused := self.apply_domain(obj["spec"])):
                return answer(args, 1, "", refused)
            if obj["kind"] == MPIJOB_KIND:
                self.apply_mpijob(obj)
        return answer(args, 0, "\n".join(f"{kind.lower()} configured" for kind in kinds))

    def apply_domain(self, spec: dict[str, Any]) -> str | None:
        old = self.domain_at(self.now)
        if old is not None:
            self.applied_over_terminating.append(f"at {self.now:.0f}s, terminating since {old.deleting:.0f}s")
            if old.spec != spec:
                return (
                    f'The ComputeDomain "{self.domain_name}" is invalid: spec: Invalid value: "object": '
                    "A computeDomain.spec is immutable"
                )
            return None  # a patch of the terminating object: it still goes, and nothing new comes
        self.domains.append(Stored(created=self.now, spec=spec))
        # The controller's Create fails while the old template still holds the name; it retries.
        old_template = self.template_at(self.now)
        start = max(self.now, old_template.gone if old_template else self.now)
        self.templates.append(Stored(created=start + self.template_after))
        return None

    def apply_mpijob(self, job: dict[str, Any]) -> None:
        """Kueue admits the job once it can count every claim of its workers; until the channel
        template exists it cannot, and requeues the Workload with backoff."""
        worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
        # The tenant's GPU claim template (components/k8s/tenant.py), and the channel's once made.
        templates = {f"gpu-{self.gpus_per_node}": claim_template(self.namespace, self.gpus_per_node)}
        domain = self.domain_at(self.now)
        if domain is not None and self.template_at(self.now) is not None:
            made = channel_template_the_controller_makes(
                {"metadata": {"namespace": self.namespace}, "spec": domain.spec}
            )
            templates[self.template_name] = made
        mappings = manager_configuration(KueueConfig(), dra=True)["resources"]["deviceClassMappings"]
        try:
            dra_pod_set_requests(worker, templates, mappings)
            self.admitted = self.now
        except Inadmissible as refused:
            self.inadmissible.append(str(refused))
            channel = self.templates[-1].created if self.templates else NEVER
            self.admitted = max(self.now, channel) + KUEUE_BACKOFF_SECONDS

    def delete(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        domain = self.domain_at(self.now)
        if domain is None:
            return answer(args)
        if domain.deleting == NEVER:
            domain.deleting = self.now
            finalizers_off = self.now + self.finalizers_after
            for template in self.templates:
                if template.created > self.now:  # not made yet: a deleted domain gets none
                    template.gone = template.created
                elif template.there(self.now):
                    template.deleting, template.gone = self.now, finalizers_off
            domain.gone = finalizers_off + 1.0  # its own finalizer comes off once the template is gone
        if "--wait=false" in args:
            return answer(args, 0, f'computedomain.resource.nvidia.com "{self.domain_name}" deleted')
        if domain.gone == NEVER:  # kubectl waits a week; operate/kubectl.py stops it first
            raise subprocess.TimeoutExpired(["kubectl", *args], TIMEOUT_SECONDS)
        self.now = max(self.now, domain.gone)
        return answer(args, 0, f'computedomain.resource.nvidia.com "{self.domain_name}" deleted')

    def wait(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        obj = args[3]
        until = next(a.removeprefix("--for=") for a in args if a.startswith("--for="))
        timeout = float(next(a.removeprefix("--timeout=") for a in args if a.startswith("--timeout=")).rstrip("m"))
        deadline = self.now + timeout * 60
        for at in [self.now, *(t for t in self.events() if self.now < t <= deadline)]:
            if self.condition(obj, until, at):
                self.now = at
                if until.startswith("jsonpath"):
                    self.ready_daemons_when_seen_ready.append(sum(ready for _, ready in self.daemons_at(at)))
                return answer(args, 0, f"{obj} condition met")
        self.now = deadline
        kind, name = obj.split("/")
        return answer(args, 1, "", f"error: timed out waiting for the condition on {kind}s/{name}")

    def condition(self, obj: str, until: str, at: float) -> bool:
        there = self.domain_at(at) if obj.startswith("computedomain/") else self.template_at(at)
        if until == "delete":
            return there is None
        assert until == "jsonpath={.status.status}=Ready", until
        return self.status_at(at) == "Ready"

    def domain_object(self) -> dict[str, Any] | None:
        domain = self.domain_at(self.now)
        if domain is None:
            return None
        nodes = [
            {"name": name, "ipAddress": "10.0.0.1", "cliqueID": "c.1", "status": "Ready" if ready else "NotReady"}
            for name, ready in self.daemons_at(self.now)
        ]
        return {
            "kind": COMPUTE_DOMAIN_KIND,
            "metadata": {"name": self.domain_name, "namespace": self.namespace, "uid": DOMAIN_UID},
            "spec": domain.spec,
            "status": {"status": self.status_at(self.now), "nodes": nodes},
        }

    def template_object(self) -> dict[str, Any]:
        """The channel template as the controller makes it (templates/
        compute-domain-workload-claim-template.tmpl.yaml: its own uid, the domain's uid as a label)."""
        return {
            "kind": "ResourceClaimTemplate",
            "metadata": {
                "name": self.template_name,
                "namespace": self.namespace,
                "uid": "rct-uid-1",
                "labels": {DOMAIN_LABEL: DOMAIN_UID, "resource.nvidia.com/computeDomainTarget": "Workload"},
                "finalizers": [DOMAIN_LABEL],
            },
        }


def printed(args: list[str], obj: dict[str, Any]) -> str:
    """What `kubectl get ... -o json` or `-o jsonpath={.a.b}` prints of `obj` (a missing field: nothing)."""
    output = args[args.index("-o") + 1]
    if output == "json":
        return json.dumps(obj)
    path = output.removeprefix("jsonpath=")
    assert path.startswith("{.") and path.endswith("}") and "[" not in path, path
    value: Any = obj
    for key in path[2:-1].split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return "" if value is None else str(value)
