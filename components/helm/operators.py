"""Small operator charts whose only wiring is running on the system nodes: KubeRay and the
Kubeflow MPI Operator (MPIJob v2beta1, which the NCCL all-reduce test uses)."""

from __future__ import annotations

from components.helm.common import Placement


def operator_values() -> Placement:
    return Placement()
