"""Kubeflow MPI Operator (MPIJob v2beta1, which the NCCL all-reduce test uses), run on the system nodes."""

from __future__ import annotations

from components.helm.addon import AddonContext, HelmAddonSpec
from components.helm.common import Placement
from profiles.addons import ReleaseConfig


class MpiOperatorAddon(HelmAddonSpec[ReleaseConfig]):
    key = "mpi_operator"
    release_name = "mpi-operator"
    namespace = "mpi-operator"

    def values(self, ctx: AddonContext, settings: ReleaseConfig) -> Placement:
        return Placement()


ADDON = MpiOperatorAddon()
