"""The shapes of object whose pods tenants create (a Pod, a Job, a job add-on's custom resource),
and where in each the pod specs are, as CEL over the object. Kubernetes' own shapes are here; each
job add-on declares its own (its `parts.py`), and the pod-fit admission policies check them all."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class PodSource:
    """A shape of object whose pods the policies check, and where its pod specs are."""

    name: str
    """The policy's name is tenant-<name>-fit-a-node."""
    rules: tuple[tuple[str, str, tuple[str, ...]], ...]
    """(API group, version, resources) of the objects of this shape."""
    specs: Callable[[str], str]
    """CEL of the list of the pod specs (maps with containers, maybe initContainers) of the object
    the given variable names (object, or oldObject); parenthesized where it is used."""
    on_update: bool = True
    """Also checked on an UPDATE that changes what its pods ask for (a Pod's resources never change so)."""
    subject: str = "'a pod of this ' + request.kind.kind"
    """CEL: what the refusal says asks for too much."""


def specs_of(templates: str) -> str:
    """CEL: the specs of a list of pod templates, skipping a template without one (the API server
    takes such a job; its operator refuses it, and so would an expression that erred here)."""
    return f"{templates}.filter(t, has(t.spec)).map(t, t.spec)"


PODS = PodSource("pods", (("", "v1", ("pods",)),), lambda o: f"[{o}.spec]", on_update=False, subject="'this pod'")
TEMPLATES = PodSource(
    "workloads",
    (("batch", "v1", ("jobs",)), ("apps", "v1", ("deployments", "statefulsets"))),
    lambda o: specs_of(f"[{o}.spec.template]"),
)
KUBERNETES_SOURCES = (PODS, TEMPLATES)
"""Kubernetes' own shapes, in every profile."""
