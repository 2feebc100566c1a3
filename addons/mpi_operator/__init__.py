"""Kubeflow MPI Operator (MPIJob v2beta1), installed from its release manifest."""

from __future__ import annotations

from addons.definition import AddonConfig, AddonDefinition
from profiles.versions import ReleaseArtifact


class MpiOperatorConfig(AddonConfig):
    """The MPI Operator's settings: on or off (its manifest is pinned by content)."""


DEFINITION = AddonDefinition(
    key="mpi_operator",
    settings_type=MpiOperatorConfig,
    description="The Kubeflow MPI Operator (MPIJob v2beta1) from its release manifest.",
    # Kubeflow publishes no Helm chart for the MPI Operator (the community chart runs the legacy v1
    # controller and is archived): the v2beta1 controller comes from the release's own manifest.
    pin=ReleaseArtifact(
        repository="kubeflow/mpi-operator",
        tag="v0.8.0",
        path="deploy/v2beta1/mpi-operator.yaml",
        sha256="b38def13a94abe60b2a4b3485239d77f64892b8fbd202e9e435a6031b7500a8f",
        image="mpioperator/mpi-operator:0.8.0",
    ),
    namespace="mpi-operator",
)
