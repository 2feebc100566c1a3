"""The profile model: everything a user sets, validated once, at the edge.

Each layer's settings live in their own module (state, cluster, storage, build, addons,
workloads); this one composes them into `PlatformConfig` and holds the checks that span layers.

Strict by design: unknown keys are rejected, models are frozen, choices are literals in the
service's own vocabulary and units are part of field names. Defaults are the safe, cheap
choice; each field's description says what the default does.

Cross-field problems are `FieldProblem`s, which name the offending field so that the loader
can print `path.to.field: message (got value; allowed: ...)`; the checks that span layers yield
them and are reported together.
"""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field, model_validator

from addons.catalog import ADDON_NAMESPACES, DEFINITIONS
from addons.profile_rules import enabled_rules
from profiles.addons import AddonsConfig
from profiles.base import AccountId, FieldProblem, Name, Region, Strict, raise_all
from profiles.build import BuildConfig
from profiles.built_images import built_image_problems, contributed
from profiles.catalog import CATALOG
from profiles.cluster import ClusterConfig
from profiles.cuda import driver_problems, project_dockerfile_images
from profiles.gpus import dra_claim_counts, dra_mode, karpenter_gpu_pool
from profiles.limits import quantity_value
from profiles.naming import RULES, NameSources, derived_names, name_problems
from profiles.plain_data import text_problems
from profiles.state import StateConfig
from profiles.storage import MAX_DATA_REPOSITORY_ASSOCIATIONS, StorageConfig
from profiles.tags import Tags
from profiles.versions import CUDA_IMAGE, version_tuple
from profiles.workloads import ACCESS_LEVELS, RESERVED_NAMESPACES, WorkloadsConfig
from profiles.zones import lustre_over_efa_problems, zone_problems

# The namespace the validation manifests (manifests/render.py) run in.
VALIDATION_NAMESPACE = "gpu-validation"
# Namespaces the add-ons and the validation manifests create at fixed names.
PLATFORM_NAMESPACES = (*ADDON_NAMESPACES, VALIDATION_NAMESPACE)


class PlatformConfig(Strict):
    """One instance profile: the whole platform for one cluster."""

    name: Name = Field(...)
    """Cluster name and prefix of every resource name."""
    region: Region
    """The AWS region every layer deploys to, e.g. us-east-1."""
    account_id: AccountId | None = None
    """The AWS account the profile deploys to, e.g. '123456789012' (in quotes). Set, every layer's
    AWS provider takes no other account's credentials (allowed_account_ids), and plan, deploy and
    destroy stop before Terraform runs when the credentials are another account's. Unset: any."""
    tags: Tags = Field(default_factory=dict)
    """Tags on every AWS resource (provider default tags): at most 45, since AWS takes 50 per resource and the
    platform sets up to 5 of its own on one. Keys differ in more than letter case (IAM takes a role's
    tag keys without regard to case) and are not the platform's own (platform, layer, Name, karpenter.sh/discovery)
    nor in the aws:, eks:, kubernetes.io/ or karpenter.sh/ prefixes."""
    state: StateConfig = Field(default_factory=StateConfig)
    """Where Terraform keeps each layer's state: local files (default) or an S3 bucket."""
    cluster: ClusterConfig
    """The cluster layer: VPC, EKS control plane, system node group and GPU node groups."""
    storage: StorageConfig = Field(default_factory=StorageConfig)
    """The storage layer: FSx for Lustre scratch file system and the datasets/checkpoints buckets."""
    build: BuildConfig = Field(default_factory=BuildConfig)
    """The build layer: ECR repositories and the CodeBuild project that builds training images."""
    addons: AddonsConfig = Field(default_factory=AddonsConfig)
    """The add-ons layer: which Helm releases to install and how they are configured."""
    workloads: WorkloadsConfig = Field(default_factory=WorkloadsConfig)
    """The workloads layer: Karpenter pools and the tenants that run training jobs."""

    @model_validator(mode="before")
    @classmethod
    def _no_terraform_templates(cls, document: object) -> object:
        """No text of a profile may become a Terraform expression: a `${` or `%{` in any string
        (a name, a URL, a user list) would be evaluated by `terraform plan` on the planning
        machine, which could read its files and environment; a quote or a line break could end a
        string or a heredoc of the HCL export. Refused here for every value at every depth, keys
        included, before any field's own checks (and before pydantic turns bytes into text)."""
        raise_all(list(text_problems(document, ())), title="PlatformConfig")
        return document

    @model_validator(mode="after")
    def _cross_layer_checks(self) -> PlatformConfig:
        """Run every check that spans layers and report all their problems at once (pydantic
        stops at the first validator that raises)."""
        checks = (
            self._dra_needs_resource_api_v1,
            self._dra_claims_take_whole_nodes,
            self._multi_node_nvlink_needs_dra,
            self._components_support_kubernetes,
            self._charts_meet_minimums,
            self._associations_per_tenant_fit,
            self._derived_names_are_valid,
            self._names_do_not_collide,
            self._tenant_people_are_not_admins,
            lambda: zone_problems(self.region, self.cluster.vpc),
            lambda: lustre_over_efa_problems(self.cluster.vpc, self.storage.fsx),
            self._tenant_quotas_fit_a_node,
            self._addon_rules_hold,
            self._driver_runs_the_images_cuda,
            lambda: built_image_problems(self),
        )
        raise_all([problem for check in checks for problem in check()], title="PlatformConfig")
        return self

    def _dra_needs_resource_api_v1(self) -> Iterator[FieldProblem]:
        version = self.cluster.kubernetes_version
        if dra_mode(self) and version_tuple(version) < (1, 34):
            yield FieldProblem(
                ("addons", "gpu_operator", "dra"),
                True,
                f"DRA GPU allocation needs resource.k8s.io/v1 (Kubernetes 1.34+); the cluster runs {version}",
                allowed="cluster.kubernetes_version 1.34 or later, or dra: false",
            )

    def _dra_claims_take_whole_nodes(self) -> Iterator[FieldProblem]:
        """In DRA mode a pod gets GPUs only through a tenant's ResourceClaimTemplates, one per count
        of workloads.dra_gpu_counts (gpu-<n>, components/k8s/tenant.py): without the count of a GPU
        group's nodes no pod can claim a whole node there (a multi-node job's workers take whole
        nodes; a P6e-GB200 node has 4 GPUs, the default counts are 1 and 8)."""
        counts = dra_claim_counts(self)
        if not counts:
            return
        for group in self.cluster.gpu_node_groups:
            per_node = group.catalog_entry.gpu_count
            if per_node not in counts:
                yield FieldProblem(
                    ("workloads", "dra_gpu_counts"),
                    list(counts),
                    f"node group {group.name} has {per_node} GPUs per node ({group.instance_type}) and "
                    f"workloads.dra_gpu_counts has no {per_node}: there would be no gpu-{per_node} claim "
                    "template, so no pod could claim a whole node of the group",
                    allowed=f"counts that include {per_node}, e.g. {sorted({*counts, per_node})}",
                )

    def _multi_node_nvlink_needs_dra(self) -> Iterator[FieldProblem]:
        """UltraServer types (P6e-GB200) reach NVLink across nodes only through IMEX, which the platform
        runs as the NVIDIA DRA driver's ComputeDomains (GPU Operator DRA mode, addons/gpu_operator); EKS
        requires DRA for them (EKS User Guide, "Use P6e-GB200 UltraServers with Amazon EKS")."""
        if dra_mode(self):
            return
        for index, group in enumerate(self.cluster.gpu_node_groups):
            if group.catalog_entry.multi_node_nvlink:
                yield FieldProblem(
                    ("cluster", "gpu_node_groups", index, "instance_type"),
                    group.instance_type,
                    f"node group {group.name} runs {group.instance_type}, whose UltraServer shares NVLink across "
                    "nodes only through IMEX: the DRA driver's ComputeDomains, which GPU Operator installs in DRA "
                    "mode (and EKS supports P6e-GB200 only with DRA)",
                    allowed="with DRA mode on (addons.gpu_operator: {enabled: true, dra: true})",
                )
                return

    def _components_support_kubernetes(self) -> Iterator[FieldProblem]:
        """The compatibility matrices: every enabled add-on supports the cluster's version."""
        kubernetes = self.cluster.kubernetes_version
        for definition in DEFINITIONS:
            key, settings = definition.key, definition.settings(self)
            needed = definition.kubernetes_minimums.get(kubernetes)
            version = definition.version(settings)
            if settings.enabled and needed and version_tuple(version) < needed:
                overridden = getattr(settings, "chart_version", None) is not None
                field = ("addons", key, "chart_version") if overridden else ("cluster", "kubernetes_version")
                yield FieldProblem(
                    field,
                    version if overridden else kubernetes,
                    f"{key} {version} does not support Kubernetes {kubernetes}",
                    allowed=f"{key} {'.'.join(map(str, needed))} or later for Kubernetes {kubernetes}, "
                    "or an older cluster.kubernetes_version",
                )

    def _charts_meet_minimums(self) -> Iterator[FieldProblem]:
        """Each enabled add-on's minimums that apply to this profile (e.g. Karpenter's is about
        Capacity Blocks, so it binds only where the profile uses them)."""
        for definition in DEFINITIONS:
            settings = definition.settings(self)
            version = definition.version(settings)
            for minimum in definition.minimums:
                if settings.enabled and minimum.applies(self) and version_tuple(version) < minimum.version:
                    yield FieldProblem(
                        ("addons", definition.key, "chart_version"),
                        version,
                        minimum.why,
                        allowed=f"{'.'.join(map(str, minimum.version))} or later",
                    )

    def _associations_per_tenant_fit(self) -> Iterator[FieldProblem]:
        """With tenants, every association is made once per tenant (their isolation on FSx)."""
        fsx, tenants = self.storage.fsx, len(self.workloads.tenants)
        count = len(fsx.data_repository_associations) * max(tenants, 1)
        if fsx.enabled and count > MAX_DATA_REPOSITORY_ASSOCIATIONS:
            yield FieldProblem(
                ("storage", "fsx", "data_repository_associations"),
                f"{len(fsx.data_repository_associations)} associations x {tenants} tenants = {count}",
                "each tenant gets its own copy of every association, and a file system takes at most "
                f"{MAX_DATA_REPOSITORY_ASSOCIATIONS}",
                allowed=f"associations x tenants <= {MAX_DATA_REPOSITORY_ASSOCIATIONS}",
            )

    @property
    def name_sources(self) -> NameSources:
        return NameSources(
            name=self.name,
            gpu_node_groups=tuple(g.name for g in self.cluster.gpu_node_groups),
            tenants=tuple(t.name for t in self.workloads.tenants),
            reference_implementations=tuple(self.build.reference_implementations),
            addon_images=contributed(self),
            addon_names=tuple(
                name for rules in enabled_rules(self) if rules.aws_names for name in rules.aws_names(self.name)
            ),
        )

    def _derived_names_are_valid(self) -> Iterator[FieldProblem]:
        """Names AWS and Kubernetes would reject, found before any layer is applied: the first
        problem of each field (one long name breaks many derived names the same way)."""
        reported: set[tuple[str | int, ...]] = set()
        for derived in derived_names(self.name_sources):
            problems = name_problems(derived)
            if problems and derived.field not in reported:
                reported.add(derived.field)
                yield FieldProblem(
                    derived.field, derived.value, problems[0], allowed="a shorter or plainer value for this field"
                )

    def _names_do_not_collide(self) -> Iterator[FieldProblem]:
        """Two settings that would derive the same resource name or construct id, or a namespace
        the platform or Kubernetes already owns."""
        seen: dict[str, tuple[str | int, ...]] = {}
        for derived in derived_names(self.name_sources):
            key = f"{derived.kind}:{derived.name}"
            if key in seen and seen[key] != derived.field:
                first = ".".join(map(str, seen[key]))
                yield FieldProblem(
                    derived.field,
                    derived.value,
                    f"derives {RULES[derived.kind].what} {derived.name!r}, as {first} does",
                    allowed="a value that derives a name of its own",
                )
            seen.setdefault(key, derived.field)
        tenants = [tenant.name for tenant in self.workloads.tenants]
        for index, tenant in enumerate(tenants):
            if f"{tenant}-identity" in tenants:  # construct ids tenant-<a> / tenant-<a>-identity
                yield FieldProblem(
                    ("workloads", "tenants", tenants.index(f"{tenant}-identity"), "name"),
                    f"{tenant}-identity",
                    f"collides with tenant {tenant}'s identity (index {index})",
                    allowed="a tenant name not ending in -identity",
                )
        # Add-ons whose namespace is a setting: (its field, the namespace it names).
        chosen = {
            ("addons", d.key, d.namespace_setting): d.namespace_of(d.settings(self))
            for d in DEFINITIONS
            if d.namespace_setting
        }
        reserved = {*PLATFORM_NAMESPACES, *chosen.values()}
        for index, tenant in enumerate(tenants):
            if tenant in reserved:
                yield FieldProblem(
                    ("workloads", "tenants", index, "name"),
                    tenant,
                    "is a namespace the platform creates for an add-on",
                    allowed=f"a team name other than {', '.join(sorted(reserved))}",
                )
        for field, namespace in chosen.items():
            if namespace in PLATFORM_NAMESPACES or namespace in RESERVED_NAMESPACES or namespace.startswith("kube-"):
                yield FieldProblem(
                    field,
                    namespace,
                    f"is a system or platform namespace; {field[1]} needs one of its own",
                    allowed=f"a namespace other than {', '.join(sorted({*PLATFORM_NAMESPACES, *RESERVED_NAMESPACES}))}",
                )

    def _tenant_people_are_not_admins(self) -> Iterator[FieldProblem]:
        """EKS takes one access entry per principal: a cluster admin's entry is made by the cluster
        layer, so a tenant's entry for the same principal would fail the workloads layer's apply
        with "resource in use" (and an admin has every namespace already)."""
        admins = {arn.lower() for arn in self.cluster.admin_principal_arns}
        for index, tenant in enumerate(self.workloads.tenants):
            for level in ACCESS_LEVELS:
                for position, principal in enumerate(getattr(tenant, level)):
                    if principal.lower() in admins:
                        yield FieldProblem(
                            ("workloads", "tenants", index, level, position),
                            principal,
                            "is in cluster.admin_principal_arns: it has cluster admin, and EKS refuses a second "
                            "access entry for one principal",
                            allowed="a principal that is not a cluster admin, or remove it from this list",
                        )

    def _tenant_quotas_fit_a_node(self) -> Iterator[FieldProblem]:
        """A tenant quota below one node of the largest GPU group could never admit a job there."""
        groups = self.cluster.gpu_node_groups
        if not groups:
            return
        node = max((group.catalog_entry for group in groups), key=lambda entry: (entry.gpu_count, entry.vcpus))
        for index, tenant in enumerate(self.workloads.tenants):
            path = ("workloads", "tenants", index)
            gpus = f"{node.gpu_count} GPU{'s' if node.gpu_count > 1 else ''}"
            checks = (
                ("gpu_quota", tenant.gpu_quota, node.gpu_count, gpus),
                ("cpu_quota", tenant.cpu_quota, node.vcpus, f"{node.vcpus} vCPUs"),
                ("memory_quota", tenant.memory_quota, node.memory_gib * 2**30, f"{node.memory_gib}Gi"),
            )
            for field, value, minimum, words in checks:
                if value is None:
                    continue
                amount = value if isinstance(value, int) else quantity_value(value)
                if amount < minimum:
                    yield FieldProblem(
                        (*path, field),
                        value,
                        f"smaller than one {node.name} node ({words}): no job on that group could ever be admitted",
                        allowed=f"at least {words}, or unset",
                    )

    def gpu_images(self) -> dict[tuple[str | int, ...], str]:
        """Where the profile's GPU workloads get an image (its field, or the platform's pin) -> image:
        the validation pods, the build layer's implementations and the enabled add-ons' GPU pods."""
        images: dict[tuple[str | int, ...], str] = {("validation", "CUDA_IMAGE"): CUDA_IMAGE}
        built = project_dockerfile_images()
        for name, reference in sorted(self.build.reference_implementations.items()):
            if reference.project_image in built:
                images[("build", "reference_implementations", name)] = built[reference.project_image]
        for rules in enabled_rules(self):
            if rules.gpu_images is not None:
                images |= rules.gpu_images(self)
        return images

    def _addon_rules_hold(self) -> Iterator[FieldProblem]:
        """The enabled add-ons' own checks of the whole profile (addons/<key>/profile_rules.py)."""
        for rules in enabled_rules(self):
            for check in rules.checks:
                yield from check(self)

    def _driver_runs_the_images_cuda(self) -> Iterator[FieldProblem]:
        # Managed GPU groups and Karpenter's GPU pool run the same AL2023 NVIDIA AMI release.
        models = {f"gpu_node_groups {g.name}": g.catalog_entry.gpu_model for g in self.cluster.gpu_node_groups}
        if karpenter_gpu_pool(self):
            pool = self.workloads.gpu_pool.instance_types
            models |= {f"gpu_pool {name}": CATALOG[name].gpu_model for name in pool}
        if models:
            yield from driver_problems(
                self.cluster.ami_release_version, self.cluster.kubernetes_version, self.gpu_images(), models
            )
