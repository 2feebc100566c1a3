"""Tenants' people reach their own namespaces and nothing else: proven over the synthesized EKS
access entries, their access policy associations, and the RoleBindings of their Kubernetes groups
(for the job kinds EKS's access policies leave out)."""

from __future__ import annotations

import json
import re

import pytest

from profiles.workloads import ACCESS_LEVELS
from tests.cases import profile_config, profiles_where
from tests.synth_helpers import resources

EDIT = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSEditPolicy"
VIEW = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy"
# The policy each level gets, written out here rather than read from the component under test.
POLICY = {"editors": EDIT, "viewers": VIEW}
# jark names people in several tenants (one of them an editor of two and a viewer of a third).
WITH_PEOPLE = tuple(
    sorted({"jark", *profiles_where(lambda c: any(t.editors or t.viewers for t in c.workloads.tenants))})
)
REFERENCE = re.compile(r"^\$\{aws_eks_access_entry\.([^.]+)\.principal_arn\}$")


def listed(profile: str) -> set[tuple[str, str, str]]:
    """(principal, policy, namespace) for every person every tenant of the profile lists."""
    return {
        (principal, POLICY[level], tenant.name)
        for tenant in profile_config(profile).workloads.tenants
        for level in ACCESS_LEVELS
        for principal in getattr(tenant, level)
    }


def granted(synthesized, profile: str) -> list[tuple[str, str, dict]]:
    """(principal, policy, access_scope) of every access policy association in the workloads layer,
    the principal read through the access entry the association refers to."""
    stack = synthesized.stack(profile, "workloads")
    entries = resources(stack, "aws_eks_access_entry")
    found = []
    for association in resources(stack, "aws_eks_access_policy_association").values():
        reference = REFERENCE.match(association["principal_arn"])
        assert reference, f"an association names its principal through its entry: {association['principal_arn']}"
        principal = entries[reference.group(1)]["principal_arn"]
        found.append((principal, association["policy_arn"], association["access_scope"]))
    return found


def test_a_fixture_profile_names_people_in_several_tenants():
    access = profile_config("jark").workloads.tenant_access()
    assert len({ns for levels in access.values() for namespaces in levels.values() for ns in namespaces}) >= 3
    assert any(len(levels) == 2 and any(len(ns) > 1 for ns in levels.values()) for levels in access.values())
    assert any(not (t.editors or t.viewers) for t in profile_config("jark").workloads.tenants)


@pytest.mark.parametrize("profile", WITH_PEOPLE)
def test_every_association_is_scoped_to_namespaces_never_the_cluster(synthesized, profile):
    tenants = {tenant.name for tenant in profile_config(profile).workloads.tenants}
    found = granted(synthesized, profile)
    assert found
    for principal, policy, scope in found:
        assert scope["type"] == "namespace", f"{principal}: {scope}"
        assert scope["namespaces"], f"{principal}: an empty namespace list"
        # Exact tenant names: no wildcard (EKS matches dev-* style patterns) and no platform namespace.
        assert set(scope["namespaces"]) <= tenants, f"{principal} reaches {set(scope['namespaces']) - tenants}"
        assert policy in (EDIT, VIEW)


@pytest.mark.parametrize("profile", WITH_PEOPLE)
def test_no_tenant_principal_reaches_another_tenants_namespace(synthesized, profile):
    """Every namespace an association names belongs to a tenant that lists the principal at that
    association's level, and every person a tenant lists gets exactly that."""
    tenants = profile_config(profile).workloads.tenants
    found = granted(synthesized, profile)
    for principal, policy, scope in found:
        for namespace in scope["namespaces"]:
            (tenant,) = [t for t in tenants if t.name == namespace]
            level = "editors" if policy == EDIT else "viewers"
            assert principal in getattr(tenant, level), f"{principal} gets {policy} in {namespace}, which lists it not"
    granted_triples = [(p, policy, ns) for p, policy, scope in found for ns in scope["namespaces"]]
    assert len(granted_triples) == len(set(granted_triples)), "a namespace named twice for one principal and policy"
    assert set(granted_triples) == listed(profile)


@pytest.mark.parametrize("profile", WITH_PEOPLE)
def test_one_standard_entry_per_person_whose_groups_name_its_own_tenants(synthesized, profile):
    """EKS takes one entry per principal and each policy once per entry. The entry's Kubernetes
    groups are the person's tenant groups, one per (tenant, level) that lists it, and nothing else
    (no system: or admin group)."""
    stack = synthesized.stack(profile, "workloads")
    entries = list(resources(stack, "aws_eks_access_entry").values())
    principals = [entry["principal_arn"] for entry in entries]
    assert sorted(principals) == sorted({principal for principal, _, _ in listed(profile)})
    level_of = {EDIT: "editors", VIEW: "viewers"}
    for entry in entries:
        assert entry["type"] == "STANDARD"
        expected = {
            f"tenant:{ns}:{level_of[policy]}" for p, policy, ns in listed(profile) if p == entry["principal_arn"]
        }
        assert sorted(entry["kubernetes_groups"]) == sorted(expected)
    pairs = [(principal, policy) for principal, policy, _ in granted(synthesized, profile)]
    assert len(pairs) == len(set(pairs))
    admins = {arn.lower() for arn in profile_config(profile).cluster.admin_principal_arns}
    assert not admins & {principal.lower() for principal in principals}


def manifests(synthesized, profile: str) -> list[dict]:
    """Every Kubernetes object the layers write themselves. Helm charts' RBAC and the upstream release
    manifests applied as expressions (strings here) are upstream text, which names no tenant group."""
    return [
        body["manifest"]
        for layer in ("addons", "workloads")
        for body in resources(synthesized.stack(profile, layer), "kubernetes_manifest").values()
        if isinstance(body["manifest"], dict)
    ]


@pytest.mark.parametrize("profile", WITH_PEOPLE)
def test_tenant_groups_are_bound_only_in_their_own_namespace(synthesized, profile):
    """The second path, for the job kinds EKS's policies leave out: a tenant group is only ever a
    subject of a RoleBinding in the namespace it is named after, never of a ClusterRoleBinding, and
    the role it gets grants namespaced job kinds only, nothing that reaches RBAC or other users."""
    objects = manifests(synthesized, profile)
    tenants = {tenant.name for tenant in profile_config(profile).workloads.tenants}
    bound_roles = set()
    for binding in (o for o in objects if o["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        for subject in binding["subjects"]:
            if subject["kind"] != "Group" or not subject["name"].startswith("tenant:"):
                continue
            _, namespace, level = subject["name"].split(":")
            assert binding["kind"] == "RoleBinding", f"{subject['name']} bound at cluster scope"
            assert binding["metadata"]["namespace"] == namespace in tenants
            assert binding["roleRef"]["kind"] == "ClusterRole"
            bound_roles.add((binding["roleRef"]["name"], level))
    assert {level for _, level in bound_roles} == {"editors", "viewers"}
    roles = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterRole"}
    for name, level in bound_roles:
        for rule in roles[name]["rules"]:
            assert "" not in rule["apiGroups"], "core kinds are the access policies' business"
            assert not {"*", "rbac.authorization.k8s.io", "authorization.k8s.io"} & set(rule["apiGroups"])
            assert "*" not in rule["resources"] and not {"bind", "escalate", "impersonate", "*"} & set(rule["verbs"])
            assert "resourceNames" not in rule and "nonResourceURLs" not in rule
            # Cluster-scoped kinds (ClusterQueue, ClusterTrainingRuntime) stay out: a RoleBinding could not give them.
            assert not any(r.startswith("cluster") for r in rule["resources"])
            if level == "viewers":
                assert set(rule["verbs"]) <= {"get", "list", "watch"}


@pytest.mark.parametrize("profile", WITH_PEOPLE)
def test_by_either_path_a_person_reaches_exactly_the_namespaces_that_list_it(synthesized, profile):
    """Associations and RoleBindings together: (principal, level, namespace) is granted exactly
    where a tenant lists the principal at that level."""
    level_of = {EDIT: "editors", VIEW: "viewers"}
    stack = synthesized.stack(profile, "workloads")
    groups = {
        e["principal_arn"]: set(e["kubernetes_groups"]) for e in resources(stack, "aws_eks_access_entry").values()
    }
    bound = {
        (subject["name"], binding["metadata"]["namespace"])
        for binding in manifests(synthesized, profile)
        if binding["kind"] == "RoleBinding"
        for subject in binding["subjects"]
        if subject["kind"] == "Group"
    }
    by_rbac = {
        (principal, f"{group.split(':')[2]}", namespace)
        for principal, held in groups.items()
        for group, namespace in bound
        if group in held
    }
    by_policy = {
        (p, level_of[policy], ns) for p, policy, scope in granted(synthesized, profile) for ns in scope["namespaces"]
    }
    expected = {(p, level_of[policy], ns) for p, policy, ns in listed(profile)}
    assert by_policy == expected
    assert by_rbac == expected


@pytest.mark.parametrize("profile", WITH_PEOPLE)
def test_the_cluster_scoped_policies_stay_with_the_cluster_admins(synthesized, profile):
    """The only cluster-scoped associations anywhere are the cluster layer's admin ones."""
    people = {principal for principal, _, _ in listed(profile)}
    for layer in ("cluster", "storage", "build", "addons", "workloads"):
        for association in resources(synthesized.stack(profile, layer), "aws_eks_access_policy_association").values():
            if association["access_scope"]["type"] == "cluster":
                assert layer == "cluster", f"a cluster-scoped association in the {layer} layer"
                assert association["principal_arn"] not in people


def test_an_entry_is_addressed_by_its_principal_so_others_stay_put_when_one_leaves():
    """A removed person must not move anyone else's entry: a moved entry would be created before
    the old address is destroyed, which EKS refuses while the old entry holds the principal."""
    from cdktf import App, TerraformStack, Testing

    from components.tenant_access import TenantAccess, TenantAccessProps

    alice, bob = "arn:aws:iam::123456789012:role/alice", "arn:aws:iam::123456789012:user/bob"

    def addresses(grants) -> dict[str, str]:
        stack = TerraformStack(App(), "people")
        TenantAccess(stack, "tenant-access", props=TenantAccessProps(cluster_name="c", grants=grants))
        synthesized = json.loads(Testing.synth(stack))
        return {body["principal_arn"]: name for name, body in synthesized["resource"]["aws_eks_access_entry"].items()}

    both = addresses({alice: {"editors": ("a",)}, bob: {"viewers": ("a", "b")}})
    assert addresses({bob: {"viewers": ("a", "b")}})[bob] == both[bob]
    assert addresses({bob: {"viewers": ("b",)}, alice: {"viewers": ("a",)}}) == both


def test_the_documented_example_is_a_profile_that_validates():
    """docs/security.md's tenants example loads as written, and its shared viewer gets one entry
    whose view association names both tenants."""
    from pathlib import Path

    import yaml

    from profiles import validate_profile
    from tests.test_profiles import mutated

    guide = (Path(__file__).resolve().parents[1] / "docs" / "security.md").read_text()
    (block,) = [b for b in re.findall(r"```yaml\n(.*?)```", guide, flags=re.DOTALL) if "tenants:" in b]
    example = yaml.safe_load(block)
    access = validate_profile(mutated(workloads=example["workloads"])).workloads.tenant_access()
    assert access["arn:aws:iam::111122223333:role/auditors"] == {"viewers": ("vision", "speech")}
