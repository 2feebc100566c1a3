"""KubeRay's contributions: Ray's job kinds for tenants (RBAC, where their pods are), in every
tenant namespace the operator's way in to the Ray heads (addons/kuberay/access.py), and verify's
multi-node RayJob check (addons/kuberay/checks.py)."""

from __future__ import annotations

from addons.kuberay import DEFINITION
from addons.kuberay.access import heads_from_operator
from addons.kuberay.checks import ray_checks
from addons.parts import AddonParts, GuideJob, GuidePart, TenantPart
from components.acceptance import AcceptanceCheck, MultiNodeSite
from components.k8s.pod_sources import PodSource, specs_of
from components.k8s.tenant_rbac import TenantResources
from profiles.models import PlatformConfig
from profiles.workloads import TenantConfig

RAY_JOBS = TenantResources("ray.io", ("rayjobs", "rayclusters", "rayservices"))


def _ray_cluster(spec: str) -> str:
    """CEL: the pod specs of a RayClusterSpec: the head's and every worker group's (the CRD
    requires headGroupSpec and each group's template, ray.io/v1 at KubeRay v1.7.0)."""
    workers = f"(has({spec}.workerGroupSpecs) ? {spec}.workerGroupSpecs.map(g, g.template) : [])"
    return specs_of(f"([{spec}.headGroupSpec.template] + {workers})")


def _rayjob(o: str) -> str:
    cluster = f"(has({o}.spec.rayClusterSpec) ? {_ray_cluster(f'{o}.spec.rayClusterSpec')} : [])"
    submitter = f"(has({o}.spec.submitterPodTemplate) ? {specs_of(f'[{o}.spec.submitterPodTemplate]')} : [])"
    return f"{cluster} + {submitter}"


RAY_JOB_PODS = PodSource("rayjobs", (("ray.io", "v1", ("rayjobs",)),), _rayjob)
RAY_CLUSTER_PODS = PodSource("rayclusters", (("ray.io", "v1", ("rayclusters",)),), lambda o: _ray_cluster(f"{o}.spec"))
RAY_SERVICE_PODS = PodSource(
    "rayservices",
    (("ray.io", "v1", ("rayservices",)),),
    lambda o: f"has({o}.spec.rayClusterConfig) ? {_ray_cluster(f'{o}.spec.rayClusterConfig')} : []",
)


class KubeRayParts(AddonParts):
    def guide(self, config: PlatformConfig, tenant: TenantConfig) -> GuidePart:
        return GuidePart(jobs=(GuideJob(what="a RayJob", section="A RayJob", kind="rayjob", name="hello-ray"),))

    def tenant(self, config: PlatformConfig, tenant: TenantConfig) -> TenantPart:
        return TenantPart(allow=heads_from_operator())

    def checks(self, config: PlatformConfig, site: MultiNodeSite | None) -> tuple[AcceptanceCheck, ...]:
        return ray_checks(config, site)

    def tenant_resources(self, config: PlatformConfig) -> tuple[TenantResources, ...]:
        return (RAY_JOBS,)

    def pod_sources(self, config: PlatformConfig) -> tuple[PodSource, ...]:
        return (RAY_JOB_PODS, RAY_CLUSTER_PODS, RAY_SERVICE_PODS)


PARTS = KubeRayParts(DEFINITION)
