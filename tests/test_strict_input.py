"""Strict, bounded input (issue 44, deliverable 2): a profile's values are taken as written and
within what AWS and Kubernetes accept. Each refusal is walked through the command line: the
profile file is written, `main.py validate` exits 2, and its message names the field's path, the
bad value and what is allowed."""

from __future__ import annotations

import copy
import importlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

import main
from addons import trainer
from profiles import (
    ProfileError,
    cuda,
    image_ref,
    limits,
    load_profile,
    naming,
    reserved_keys,
    tags,
    validate_profile,
)
from profiles.base import PATTERN_WORDS
from profiles.models import PlatformConfig
from profiles.problems import show
from profiles.versions import CUDA_IMAGE

PROFILES = Path(__file__).resolve().parents[1] / "profiles"
BASE = yaml.safe_load((PROFILES / "gpu-validation.yaml").read_text())


def edited(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """`base` with the value at the dotted `path` (list indexes are numbers) set to `value`."""
    doc = copy.deepcopy(base)
    *parents, leaf = path.split(".")
    node: Any = doc
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    if isinstance(node, list):
        node[int(leaf)] = value
    else:
        node[leaf] = value
    return doc


def refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict[str, Any], field: str) -> str:
    """The problem line `main.py validate` prints for `field` when given `doc`, after checking it
    exits 2. The loader is asked first, so an accepted profile fails here, before any Terraform."""
    path = tmp_path / "profile.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ProfileError):
        load_profile(str(path))
    assert main.main(["validate", "--profile", str(path)]) == 2
    stderr = capsys.readouterr().err
    lines = [line.strip().removeprefix("- ") for line in stderr.splitlines()]
    matching = [line for line in lines if line.startswith(f"{field}: ")]
    assert matching, f"no problem named {field}; got:\n{stderr}"
    return matching[0]


def models_of(model: type[BaseModel], seen: set[type[BaseModel]] | None = None) -> set[type[BaseModel]]:
    """Every model reachable from `model` through its fields (lists, mappings, unions included)."""
    seen = set() if seen is None else seen
    if model in seen:
        return seen
    seen.add(model)

    def inner(annotation: Any) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            models_of(annotation, seen)
        for arg in getattr(annotation, "__args__", ()):
            inner(arg)
        for meta in getattr(annotation, "__metadata__", ()):
            inner(meta)

    for field in model.model_fields.values():
        inner(field.annotation)
    return seen


# a. Strict types: YAML's value as written, never converted.
STRICT = [
    ("storage.protect_from_destroy", "no", "true or false, unquoted"),
    ("storage.protect_from_destroy", "false", "true or false, unquoted"),
    ("storage.protect_from_destroy", "0", "true or false, unquoted"),
    ("storage.protect_from_destroy", 0, "true or false, unquoted"),
    ("cluster.system_node_group.max_size", "3", "a whole number, unquoted"),
    ("cluster.system_node_group.max_size", 3.0, "a whole number, unquoted"),
    ("cluster.system_node_group.max_size", True, "a whole number, unquoted"),
    ("storage.fsx.storage_capacity_gib", "1200", "a whole number, unquoted"),
    ("name", 3, "text; quote a value"),
    ("tags.team", 3, "text; quote a value"),
    ("cluster.gpu_node_groups.0.efa_enabled", "yes", "true or false, unquoted"),
]


@pytest.mark.parametrize("field, value, allowed", STRICT, ids=[f"{f}={v!r}" for f, v, _ in STRICT])
def test_values_are_taken_as_written_never_coerced(tmp_path, capsys, field, value, allowed):
    line = refused(tmp_path, capsys, edited(BASE, field, value), field)
    assert f"got {value!r}" in line and f"allowed: {allowed}" in line, line


def test_every_profile_model_is_strict():
    models = models_of(PlatformConfig)
    assert len(models) > 30, "the walk reaches the nested models"
    loose = sorted(model.__name__ for model in models if not model.model_config.get("strict"))
    assert loose == []


def test_a_capacity_block_time_is_text_not_a_number(tmp_path, capsys):
    block = {
        "type": "capacity_block",
        "reservation_id": "cr-0123456789abcdef0",
        "instance_count": 2,
        "availability_zone": BASE["cluster"]["vpc"]["availability_zones"][0],
        "starts_at": 1_900_000_000,
        "ends_at": "2030-03-01T11:30:00Z",
    }
    doc = edited(BASE, "cluster.gpu_node_groups.0.capacity", block)
    line = refused(tmp_path, capsys, doc, "cluster.gpu_node_groups.0.capacity.starts_at")
    assert "got 1900000000" in line and "ISO 8601" in line, line


def test_every_pattern_is_described_in_words():
    """A value that does not match a field's pattern is answered with words, never the regex: every
    pattern of the profile has its words (profiles.base.PATTERN_WORDS), and no words are left over."""
    patterns = profile_patterns()
    assert sorted(pattern for pattern in patterns if pattern not in PATTERN_WORDS) == []
    assert sorted(pattern for pattern in PATTERN_WORDS if pattern not in patterns) == []


WORDED = [
    ("workloads.tenants", [{"name": "ml-team", "cpu_quota": "1.5"}], "workloads.tenants.0.cpu_quota", "whole cores"),
    (
        "build.reference_implementations",
        {"nccl": {"repository_url": "https://example.com/r.git", "ref": "main branch"}},
        "build.reference_implementations.nccl.ref",
        "letters, digits and ._/-",
    ),
    ("cluster.addon_versions", {"vpc-cni": "1.20.0"}, "cluster.addon_versions.vpc-cni", "an EKS add-on version, e.g."),
    ("addons.gpu_operator.chart_version", "latest", "addons.gpu_operator.chart_version", "a chart version: major"),
]


@pytest.mark.parametrize("field, value, where, words", WORDED, ids=[w for _, _, w, _ in WORDED])
def test_a_pattern_mismatch_says_what_is_allowed_in_words(tmp_path, capsys, field, value, where, words):
    line = refused(tmp_path, capsys, edited(BASE, field, value), where)
    assert "not in the expected form" in line and f"allowed: {words}" in line and "^" not in line, line


# A version YAML reads as a number: refused with "quote it", never guessed (1.30 reads as 1.3).
UNQUOTED_VERSIONS = [
    ("cluster.kubernetes_version", "1.30", "got 1.3;", "allowed: '1.31', '1.32'"),
    ("cluster.kubernetes_version", "1.35", "got 1.35;", "'1.35', '1.36', in quotes"),
    ("cluster.kubernetes_version", "2", "got 2;", "in quotes"),
    ("storage.fsx.lustre_version", "2.15", "got 2.15;", "allowed: '2.12', '2.15', in quotes"),
]


@pytest.mark.parametrize(
    "field, written, got, allowed", UNQUOTED_VERSIONS, ids=[f"{f}={w}" for f, w, _, _ in UNQUOTED_VERSIONS]
)
def test_a_version_written_as_a_yaml_number_is_refused(tmp_path, capsys, field, written, got, allowed):
    # The number goes into the file as a user types it (yaml.safe_dump would write 1.3 for 1.30).
    text = yaml.safe_dump(edited(BASE, field, "VERSION_AS_TYPED"), sort_keys=False)
    (tmp_path / "profile.yaml").write_text(text.replace("VERSION_AS_TYPED", written))
    assert main.main(["validate", "--profile", str(tmp_path / "profile.yaml")]) == 2
    line = next(line for line in capsys.readouterr().err.splitlines() if f"{field}: " in line)
    assert "write the version in quotes" in line and got in line and allowed in line, line


def test_a_quoted_version_loads():
    doc = edited(edited(BASE, "cluster.kubernetes_version", "1.34"), "cluster.ami_release_version", "1.34.2-20251120")
    config = validate_profile(edited(doc, "storage.fsx.lustre_version", "2.15"))
    assert (config.cluster.kubernetes_version, config.storage.fsx.lustre_version) == ("1.34", "2.15")


# b. ASCII only where AWS and Kubernetes take only ASCII. Python's re and pydantic's regex engine
# both read \d, \w, \s and \b as Unicode classes: \d matches Arabic-Indic and fullwidth digits.
SHORTHAND = re.compile(r"(?<!\\)(?:\\\\)*\\[dDwWsSbB]")


def profile_patterns() -> set[str]:
    """Every `pattern` constraint in the validators of PlatformConfig (dict keys included), from
    the compiled validator schema, which holds what the JSON schema leaves out."""
    found: set[str] = set()
    stack: list[Any] = [PlatformConfig.__pydantic_core_schema__]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            found.update(v for k, v in node.items() if k == "pattern" and isinstance(v, str))
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
    return found


def module_regexes() -> dict[str, re.Pattern[str]]:
    """The compiled regular expressions of the profile modules and the add-ons' settings modules."""
    names = [f"profiles.{path.stem}" for path in PROFILES.glob("*.py")]
    names += [f"addons.{path.parent.name}" for path in PROFILES.parent.glob("addons/*/__init__.py")]
    regexes: dict[str, re.Pattern[str]] = {}
    for name in names:
        module = importlib.import_module(name)
        for attribute, value in vars(module).items():
            if isinstance(value, re.Pattern):
                regexes[f"{name}.{attribute}"] = value
    for kind, rule in naming.RULES.items():
        regexes[f"profiles.naming.RULES[{kind}]"] = rule.pattern
    return regexes


def test_no_profile_pattern_uses_a_unicode_class():
    patterns = profile_patterns()
    assert len(patterns) > 20, "the walk finds the field patterns"
    assert [pattern for pattern in sorted(patterns) if SHORTHAND.search(pattern)] == []


def test_no_profile_regex_uses_a_unicode_class_without_re_ascii():
    regexes = module_regexes()
    assert "profiles.vpc.ZONE_ID" in regexes and "profiles.naming.RULES[iam_role]" in regexes
    unicode_aware = [
        name
        for name, regex in regexes.items()
        if isinstance(regex.pattern, str) and SHORTHAND.search(regex.pattern) and not regex.flags & re.ASCII
    ]
    assert unicode_aware == []


# The ASCII digits of a text as Arabic-Indic (U+0660..) or fullwidth (U+FF10..) digits.
ARABIC = str.maketrans("0123456789", "".join(chr(0x0660 + digit) for digit in range(10)))
FULLWIDTH = str.maketrans("0123456789", "".join(chr(0xFF10 + digit) for digit in range(10)))
ARABIC_ACCOUNT = "123456789012".translate(ARABIC)
# (field, value, where the refusal is reported: a list's or mapping's item, or a bad key).
NOT_ASCII = [
    ("region", "us-west-2".translate(ARABIC), "region"),
    ("cluster.admin_principal_arns", [f"arn:aws:iam::{ARABIC_ACCOUNT}:role/admins"], "cluster.admin_principal_arns.0"),
    ("cluster.admin_principal_arns", ["arn:aws:iam::123456789012:role/管理者"], "cluster.admin_principal_arns.0"),
    ("cluster.ami_release_version", "1.35.6-20260714".translate(FULLWIDTH), "cluster.ami_release_version"),
    (
        "cluster.addon_versions",
        {"vpc-cni": "v1." + "2".translate(FULLWIDTH) + "0.0-eksbuild.1"},
        "cluster.addon_versions.vpc-cni",
    ),
    (
        "workloads.tenants",
        [{"name": "ml-team", "cpu_quota": "3".translate(FULLWIDTH)}],
        "workloads.tenants.0.cpu_quota",
    ),
    (
        "workloads.tenants",
        [{"name": "ml-team", "memory_quota": "3".translate(ARABIC) + "Gi"}],
        "workloads.tenants.0.memory_quota",
    ),
    (
        "addons.mlflow.database.instance_class",
        "db.m6i." + "8".translate(ARABIC) + "xlarge",
        "addons.mlflow.database.instance_class",
    ),
    (
        "addons.gpu_operator.chart_version",
        "v" + "26".translate(FULLWIDTH) + ".7.0",
        "addons.gpu_operator.chart_version",
    ),
]


@pytest.mark.parametrize("field, value, where", NOT_ASCII, ids=[f"{f}={v!r}" for f, v, _ in NOT_ASCII])
def test_digits_and_words_of_other_scripts_are_refused(tmp_path, capsys, field, value, where):
    line = refused(tmp_path, capsys, edited(BASE, field, value), where)
    assert "not in the expected form" in line and "allowed: " in line, line


# c. Numbers within each service's documented limits (profiles/limits.py cites them).
def test_every_whole_number_has_an_upper_bound_within_int64():
    unbounded: list[str] = []
    stack: list[Any] = [PlatformConfig.__pydantic_core_schema__]
    seen: set[int] = set()
    count = 0
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            if node.get("type") == "int":
                count += 1
                if not ("le" in node and node["le"] <= limits.INT64_MAX) and "lt" not in node:
                    unbounded.append(repr(node))
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
    assert count > 30, "the walk finds the integer fields"
    assert unbounded == []


GROUP = "cluster.gpu_node_groups.0"
BEYOND = [
    (f"{GROUP}.max_size", 451, "at most 450, or raise the quota"),
    ("cluster.system_node_group.max_size", 451, "at most 450, or raise the quota"),
    (f"{GROUP}.desired_size", 10**20, f"at most {2**31 - 1}"),
    ("cluster.system_node_group.max_size", 2**63, f"at most {2**31 - 1}"),
    ("cluster.managed_node_group_node_quota", 2**31, f"at most {2**31 - 1}"),
    ("cluster.managed_node_group_node_quota", 0, "at least 1"),
    (f"{GROUP}.max_unavailable", 101, "at most 100"),
    (f"{GROUP}.root_volume_size_gib", 65537, "at most 65536"),
    ("cluster.system_node_group.disk_size_gib", 10**6, "at most 65536"),
    ("addons.monitoring.prometheus_storage_gib", 65537, "at most 65536"),
    ("storage.fsx.storage_capacity_gib", 2**31, f"at most {2**31 - 1}"),
    ("storage.fsx.storage_capacity_gib", 2**64, f"at most {2**31 - 1}"),
    ("storage.fsx.storage_capacity_gib", 1300, "1200, 2400 or a multiple of 2400"),
    ("storage.fsx.metadata_iops", 10**30, "at most 192000"),
    ("storage.datasets_bucket.noncurrent_version_expiration_days", 2**31, f"at most {2**31 - 1}"),
    ("workloads.gpu_pool.gpu_limit", 2**63, f"at most {2**63 - 1}"),
    ("workloads.cpu_pool.consolidate_after_minutes", 2**62, f"at most {limits.GO_DURATION_MAX_MINUTES}"),
    ("addons.jupyterhub.user_storage_gib", 65537, "at most 65536"),
    ("addons.argo_workflows.quota_cpu", "9" * 30, f"at most {(2**63 - 1) // 1000} cores"),
    ("addons.argo_workflows.quota_memory", "8Ei", f"at most {2**63 - 1} bytes"),
    ("addons.argo_workflows.quota_memory", "9" * 20, f"at most {2**63 - 1} bytes"),
]


@pytest.mark.parametrize("field, value, allowed", BEYOND, ids=[f"{f}={v}" for f, v, _ in BEYOND])
def test_numbers_beyond_the_services_limits_are_refused(tmp_path, capsys, field, value, allowed):
    line = refused(tmp_path, capsys, edited(BASE, field, value), field)
    assert f"got {value!r}"[:60] in line and allowed in line, line


def test_the_node_bound_is_the_accounts_eks_quota(tmp_path, capsys):
    """450 nodes per managed node group is EKS's adjustable default: a profile names a raised quota, and
    the groups are bounded by the quota it names."""
    line = refused(tmp_path, capsys, edited(BASE, f"{GROUP}.max_size", 451), f"{GROUP}.max_size")
    assert "EKS's nodes per managed node group (450, cluster.managed_node_group_node_quota)" in line, line
    raised = edited(edited(BASE, "cluster.managed_node_group_node_quota", 1000), f"{GROUP}.max_size", 1000)
    assert validate_profile(raised).cluster.gpu_node_groups[0].max_size == 1000
    lowered = edited(BASE, "cluster.managed_node_group_node_quota", 2)
    line = refused(tmp_path, capsys, lowered, "cluster.system_node_group.max_size")
    assert "got 3" in line and "allowed: at most 2" in line, line


def test_a_gp3_volume_of_64_tib_loads():
    doc = edited(BASE, f"{GROUP}.root_volume_size_gib", 65536)
    assert validate_profile(doc).cluster.gpu_node_groups[0].root_volume_size_gib == 65536 == limits.EBS_GP3_MAX_GIB


@pytest.mark.parametrize(
    "sizes, field",
    [((0, 3, 2), "desired_size"), ((2, 1, 2), "desired_size"), ((3, 3, 2), "min_size")],
    ids=["desired-above-max", "desired-below-min", "min-above-max"],
)
def test_node_group_sizes_are_ordered(tmp_path, capsys, sizes, field):
    doc = BASE
    for name, size in zip(("min_size", "desired_size", "max_size"), sizes, strict=True):
        doc = edited(doc, f"{GROUP}.{name}", size)
    line = refused(tmp_path, capsys, doc, f"{GROUP}.{field}")
    assert f"got {sizes[('min_size', 'desired_size').index(field)]}" in line and "allowed: " in line, line


# CPU is bounded in thousandths of a core, memory in bytes: each resource has its own grammar and bound.
QUANTITIES = [
    ("addons.argo_workflows.quota_memory", "500m", "whole bytes or a whole number of k, M, G"),
    ("addons.argo_workflows.quota_memory", "1.5Gi", "whole bytes or a whole number of k, M, G"),
    ("addons.argo_workflows.quota_cpu", "0.0005", "cores (up to 3 decimals) or thousandths"),
    ("addons.argo_workflows.quota_cpu", "64Gi", "cores (up to 3 decimals) or thousandths"),
    ("workloads.tenants.0.memory_quota", "2048gi", "whole bytes or a whole number of k, M, G"),
]


@pytest.mark.parametrize("field, value, allowed", QUANTITIES, ids=[f"{f}={v}" for f, v, _ in QUANTITIES])
def test_each_quantity_has_its_resources_grammar(tmp_path, capsys, field, value, allowed):
    doc = edited(BASE, "workloads.tenants", [{"name": "ml-team"}])
    line = refused(tmp_path, capsys, edited(doc, field, value), field)
    assert f"got {value!r}" in line and f"allowed: {allowed}" in line, line


def test_memory_is_bounded_in_bytes_not_in_cpus_thousandths():
    # 7Ei and 16Pi are within an int64 of bytes; as thousandths (CPU's bound) they were not.
    doc = edited(BASE, "addons.argo_workflows", {"enabled": True, "quota_memory": "7Ei", "quota_cpu": "0.5"})
    doc = edited(doc, "workloads.tenants", [{"name": "ml-team", "memory_quota": "16Pi", "cpu_quota": "64000m"}])
    config = validate_profile(doc)
    assert (config.addons.argo_workflows.quota_memory, config.workloads.tenants[0].memory_quota) == ("7Ei", "16Pi")
    assert limits.exact_quantity("7Ei") <= limits.MAX_MEMORY_BYTES < limits.exact_quantity("8Ei")


def test_a_kubernetes_quantity_beyond_int64_is_refused(tmp_path, capsys):
    tenants = [{"name": "ml-team", "cpu_quota": "9" * 20}]
    line = refused(tmp_path, capsys, edited(BASE, "workloads.tenants", tenants), "workloads.tenants.0.cpu_quota")
    assert "int64" in line, line


# d. S3's bucket naming rules, for the state bucket and every bucket name the platform derives.
BAD_BUCKETS = [
    ("ab", "3 to 63"),
    ("a" * 64, "3 to 63"),
    ("My-State", "lowercase letters"),
    ("state_bucket", "lowercase letters"),
    ("-state", "beginning and ending"),
    ("state.", "beginning and ending"),
    ("my..state", "two adjacent periods"),
    ("192.168.5.4", "IP address"),
    ("xn--state", "reserves ('xn--')"),
    ("sthree-state", "reserves ('sthree-')"),
    ("amzn-s3-demo-state", "reserves ('amzn-s3-demo-')"),
    ("state-s3alias", "reserves ('-s3alias')"),
    ("state--ol-s3", "reserves ('--ol-s3')"),
    ("state.mrap", "reserves ('.mrap')"),
    ("state--x-s3", "reserves ('--x-s3')"),
    ("state--table-s3", "reserves ('--table-s3')"),
]


@pytest.mark.parametrize("bucket, words", BAD_BUCKETS, ids=[bucket for bucket, _ in BAD_BUCKETS])
def test_a_state_bucket_s3_refuses_is_refused(tmp_path, capsys, bucket, words):
    line = refused(tmp_path, capsys, edited(BASE, "state.bucket", bucket), "state.bucket")
    assert f"got {bucket!r}" in line and words in line and "bucketnamingrules.html" in line, line


def test_a_valid_state_bucket_loads():
    for bucket in ("abc", "my.state-bucket-1", "a" * 63):
        assert validate_profile(edited(BASE, "state.bucket", bucket)).state.bucket == bucket


def test_a_name_that_derives_a_bucket_s3_refuses_is_refused(tmp_path, capsys):
    # The platform's buckets are <name>-<purpose>-<account>: a name beginning xn-- derives one S3 refuses.
    line = refused(tmp_path, capsys, edited(BASE, "name", "xn--lab"), "name")
    assert "reserves ('xn--')" in line, line


# e. Repeats refused where AWS takes each item once (profiles/unique.py says where).
ADMIN = "arn:aws:iam::123456789012:role/Admins"
REPEATS = [
    ("cluster.admin_principal_arns", [ADMIN, ADMIN.replace("Admins", "admins")], "names ignore case"),
    ("cluster.admin_principal_arns", [ADMIN, ADMIN], "repeats item 0"),
    ("cluster.control_plane_log_types", ["api", "audit", "api"], "repeats item 0"),
    ("cluster.private_endpoint_access.cidrs", ["10.50.0.0/16", "10.50.0.0/16"], "repeats item 0"),
    ("cluster.private_endpoint_access.security_groups", ["sg-0123456789abcdef0"] * 2, "repeats item 0"),
    ("cluster.system_node_group.instance_types", ["m6i.xlarge", "m6i.xlarge"], "repeats item 0"),
    ("workloads.gpu_pool.instance_types", ["g6.xlarge", "g6.xlarge"], "repeats item 0"),
    ("workloads.cpu_pool.capacity_types", ["on-demand", "on-demand"], "repeats item 0"),
    ("storage.fsx.data_repository_associations.0.import_events", ["NEW", "NEW"], "repeats item 0"),
]


@pytest.mark.parametrize("field, items, words", REPEATS, ids=[f"{f}-{w}" for f, _, w in REPEATS])
def test_repeats_aws_refuses_are_refused(tmp_path, capsys, field, items, words):
    line = refused(tmp_path, capsys, edited(BASE, field, items), f"{field}.{len(items) - 1}")
    assert f"got {items[-1]!r}" in line and words in line and "allowed: each value once" in line, line


# f. Kubernetes' reserved label prefixes, AWS's reserved tag prefix and the platform's own keys.
RESERVED_LABELS = [
    ("kubernetes.io/arch", "kubernetes.io/"),
    ("node.kubernetes.io/instance-type", "node.kubernetes.io/"),
    ("node-role.kubernetes.io/gpu", "node-role.kubernetes.io/"),
    ("k8s.io/team", "k8s.io/"),
    ("resource.k8s.io/gpu", "resource.k8s.io/"),
    ("role", "the platform sets"),
    ("platform/gpu", "the platform sets"),
    # EKS refuses any label containing kubernetes.io/, k8s.io/ or eks.amazonaws.com/.
    ("eks.amazonaws.com/nodegroup", "eks.amazonaws.com/"),
    ("x.eks.amazonaws.com/pool", "x.eks.amazonaws.com/"),
    ("mykubernetes.io/team", "mykubernetes.io/"),
    # Labels other components on the GPU nodes set or read (profiles/reserved_keys.py).
    ("karpenter.sh/nodepool", "Karpenter's labels"),
    ("karpenter.sh/capacity-type", "Karpenter's labels"),
    ("x.karpenter.sh/pool", "Karpenter's labels"),
    ("karpenter.k8s.aws/instance-gpu-count", "AWS's (karpenter.k8s.aws, topology.k8s.aws) labels"),
    ("topology.k8s.aws/zone-id", "AWS's (karpenter.k8s.aws, topology.k8s.aws) labels"),
    ("nvidia.com/gpu.present", "NVIDIA's GPU Operator"),
    ("nvidia.com/gpu.deploy.driver", "NVIDIA's GPU Operator"),
    ("nvidia.com/gpu.deploy.device-plugin", "NVIDIA's GPU Operator"),
    ("nvidia.com/gpu.product", "NVIDIA's GPU Operator"),
    ("nvidia.com/cuda.driver.major", "NVIDIA's GPU Operator"),
    ("nvidia.com/mig.strategy", "NVIDIA's GPU Operator"),
    ("nvidia.com/gpu-driver-upgrade-state", "NVIDIA's GPU Operator"),
]


@pytest.mark.parametrize("key, words", RESERVED_LABELS, ids=[key for key, _ in RESERVED_LABELS])
def test_reserved_node_labels_are_refused(tmp_path, capsys, key, words):
    doc = edited(BASE, f"{GROUP}.labels", {"example.com/team": "ml", key: "x"})
    line = refused(tmp_path, capsys, doc, f"{GROUP}.labels.{key}")
    assert words in line and f"got {key!r}" in line and "allowed: " in line, line


def test_labels_of_ones_own_prefix_load():
    labels = {
        "example.com/team": "ml",
        "team": "ml",
        "kubernetes.io.example.com/x": "y",
        "a" * 55 + ".io/x": "Z" * 63,  # 63 characters, EKS's most for a key
        "Team_Name.v2": "a-b_c.d",
        "nvidia.com/mig.config": "all-1g.10gb",  # the GPU Operator's input, an administrator's choice
        "nvidia.com/team": "ml",
        "notkarpenter.sh/x": "y",
        "k8s.aws.example.com/x": "y",
    }
    assert validate_profile(edited(BASE, f"{GROUP}.labels", labels)).cluster.gpu_node_groups[0].labels == labels


# Label syntax (profiles/node_labels.py): Kubernetes' forms, within EKS's 63 characters per key and value.
LONG_KEY = "a" * 56 + ".io/team"  # 64 characters: a valid Kubernetes key EKS refuses
BAD_LABELS = [
    (LONG_KEY, "x", "bad key: a node label key of 64 characters; EKS takes 1 to 63"),
    ("Example.com/team", "x", "bad key: not a Kubernetes label key: its prefix 'Example.com' is not a DNS"),
    ("example..com/team", "x", "bad key: not a Kubernetes label key: its prefix 'example..com' is not a DNS"),
    ("example.com/-team", "x", "bad key: not a Kubernetes label key: its name '-team' (after any prefix/)"),
    ("a/b/c", "x", "bad key: not a Kubernetes label key: its prefix 'a/b' is not a DNS"),
    ("team", "", "a node label value of 0 characters; EKS takes 1 to 63"),
    ("team", "v" * 64, "a node label value of 64 characters; EKS takes 1 to 63"),
    ("team", "ml team", "not a Kubernetes label value: letters, digits"),
    ("team", "ml-", "not a Kubernetes label value: letters, digits"),
]


@pytest.mark.parametrize("key, value, words", BAD_LABELS, ids=[f"{k[:20]}={v[:8]}" for k, v, _ in BAD_LABELS])
def test_node_labels_eks_refuses_are_refused(tmp_path, capsys, key, value, words):
    line = refused(tmp_path, capsys, edited(BASE, f"{GROUP}.labels", {key: value}), f"{GROUP}.labels.{key}")
    got = key if words.startswith("bad key") else value
    assert words in line and f"got {got!r}" in line, line


RESERVED_TAGS = [
    ("platform", "one the platform sets"),
    ("layer", "one the platform sets"),
    ("Name", "one the platform sets"),
    ("karpenter.sh/discovery", "one the platform sets"),
    ("aws:createdBy", "the aws: prefix is reserved"),
    ("AWS:team", "the aws: prefix is reserved"),
    ("kubernetes.io/cluster/x", "the kubernetes.io/ prefix is reserved"),
    ("eks:cluster-name", "the eks: prefix is reserved"),
    # IAM takes a role's tag keys without regard to case: these would replace the platform's own.
    ("Platform", "is 'platform', one the platform sets itself, in other letter case"),
    ("LAYER", "is 'layer', one the platform sets itself, in other letter case"),
    ("name", "is 'Name', one the platform sets itself, in other letter case"),
    ("Karpenter.sh/Discovery", "is 'karpenter.sh/discovery', one the platform sets itself, in other letter case"),
]


@pytest.mark.parametrize("key, words", RESERVED_TAGS, ids=[key for key, _ in RESERVED_TAGS])
def test_reserved_and_platform_tag_keys_are_refused(tmp_path, capsys, key, words):
    line = refused(tmp_path, capsys, edited(BASE, "tags", {key: "x"}), f"tags.{key}")
    assert f"got {key!r}" in line and words in line, line


# AWS's tag pattern [\p{L}\p{Z}\p{N}_.:/=+\-@]: letters, numbers and spaces of any script (profiles/tags.py).
def test_tags_in_any_script_load():
    tags = {
        "owner": "Jürgen Müller",
        "チーム": "機械学習",
        "cost-center": "٤٢",
        "note": "",
        "path": "a/b:c=d+e-f@g_h.i",
    }
    assert validate_profile(edited(BASE, "tags", tags)).tags == tags


BAD_TAGS = [
    ({"owner": "a$b"}, "tags.owner", "'$' (U+0024 DOLLAR SIGN)"),
    ({"owner": "50%"}, "tags.owner", "'%' (U+0025 PERCENT SIGN)"),
    ({"owner": "a;b"}, "tags.owner", "';' (U+003B SEMICOLON)"),
    ({"launch": "🚀"}, "tags.launch", "U+1F680 ROCKET"),
    ({"team{x}": "ml"}, "tags.team{x}", "bad key: the character '{' (U+007B LEFT CURLY BRACKET)"),
    ({"k" * 129: "v"}, "tags." + "k" * 129, "bad key: String should have at most 128 characters"),
    ({"owner": "v" * 257}, "tags.owner", "String should have at most 256 characters"),
]


@pytest.mark.parametrize("tags, where, words", BAD_TAGS, ids=[w[:24] for _, w, _ in BAD_TAGS])
def test_tags_aws_refuses_are_refused(tmp_path, capsys, tags, where, words):
    line = refused(tmp_path, capsys, edited(BASE, "tags", tags), where)
    got = next(iter(tags)) if words.startswith("bad key") else next(iter(tags.values()))
    assert words in line and f"got {got!r}"[:40] in line, line
    assert "bad key" in words or "is not one AWS takes in a tag: letters, numbers and spaces" in line or "256" in words


def test_more_tags_than_a_resource_holds_besides_the_platforms_are_refused(tmp_path, capsys):
    most = {f"team-{index}": "x" for index in range(tags.MAX_PROFILE_TAGS)}
    assert tags.MAX_PROFILE_TAGS == 45 and len(validate_profile(edited(BASE, "tags", most)).tags) == 45
    line = refused(tmp_path, capsys, edited(BASE, "tags", {**most, "one-more": "x"}), "tags")
    assert "got '46 tags'" in line and "46 tags and the 5 the platform sets on one resource" in line, line
    assert "make 51; AWS takes at most 50 tags per resource" in line and "allowed: at most 45 tags" in line, line


def test_no_synthesized_resource_carries_more_of_the_platforms_tags_than_counted():
    """The count the profile's tags are held to: in every shipped stack, a resource's own tags plus the
    provider's default tags, less the profile's, are never more than PLATFORM_TAGS_PER_RESOURCE."""
    most = 0
    for snapshot in sorted((PROFILES.parent / "tests" / "__snapshots__" / "test_snapshots").glob("*.json")):
        profile = snapshot.name.split("[", 1)[1].rsplit("-", 1)[0]
        own = set(yaml.safe_load((PROFILES / f"{profile}.yaml").read_text()).get("tags", {}))
        stack = json.loads(snapshot.read_text())
        (default,) = [provider["default_tags"][0]["tags"] for provider in stack["provider"]["aws"]]
        assert set(default) - own == set(reserved_keys.platform_tags("", "")), snapshot.name
        for resources in stack.get("resource", {}).values():
            for body in resources.values():
                resource_tags = body.get("tags") if isinstance(body.get("tags"), dict) else {}
                platform = (set(default) | set(resource_tags)) - own
                most = max(most, len([key for key in platform if not key.lower().startswith("aws:")]))
    assert most == len(tags.PLATFORM_TAGS_PER_RESOURCE)


def test_tag_keys_that_differ_only_in_case_are_refused(tmp_path, capsys):
    line = refused(tmp_path, capsys, edited(BASE, "tags", {"Team": "ml", "team": "ops"}), "tags.team")
    assert "got 'team'" in line and "differs from tag key 'Team' only in letter case" in line, line
    assert "allowed: each tag key once, whatever its letter case" in line, line


def test_tag_keys_of_ones_own_in_any_case_load():
    tags = {"Team": "ml", "cost-center": "42", "PlatformOwner": "ops"}
    assert validate_profile(edited(BASE, "tags", tags)).tags == tags


def test_the_refused_tag_keys_are_the_ones_the_platform_sets():
    source = (PROFILES.parent / "stacks" / "layer.py").read_text()
    assert "tags = {**platform_tags(self.config.name, self.layer), **self.config.tags}" in source
    assert set(reserved_keys.platform_tags("x", "y")) <= set(reserved_keys.PLATFORM_TAG_KEYS)


# g. Reserved capacity only with a reservation to select.
ZONE = BASE["cluster"]["vpc"]["availability_zones"][0]
WINDOW = {"starts_at": "2030-03-01T11:30:00Z", "ends_at": "2030-03-08T11:30:00Z"}
NO_RESERVATION = [
    (f"{GROUP}.capacity", {"type": "odcr", "availability_zone": ZONE}, f"{GROUP}.capacity.reservation_id"),
    (
        f"{GROUP}.capacity",
        {"type": "capacity_block", "availability_zone": ZONE, "instance_count": 2, **WINDOW},
        f"{GROUP}.capacity.reservation_id",
    ),
    ("workloads.gpu_pool.capacity_types", ["reserved"], "workloads.gpu_pool.capacity_reservations"),
    ("workloads.cpu_pool.capacity_types", ["reserved", "on-demand"], "workloads.cpu_pool.capacity_reservations"),
    (
        "workloads.gpu_pool.capacity_reservations",
        [{"id": "cr-0123456789abcdef0"}],
        "workloads.gpu_pool.capacity_types",
    ),
]


@pytest.mark.parametrize("field, value, where", NO_RESERVATION, ids=[w for _, _, w in NO_RESERVATION])
def test_reserved_capacity_needs_a_reservation(tmp_path, capsys, field, value, where):
    line = refused(tmp_path, capsys, edited(BASE, field, value), where)
    assert "got " in line and "allowed: " in line, line


def test_the_reservations_placement_group_needs_a_reservation(tmp_path, capsys):
    doc = edited(BASE, f"{GROUP}.placement_group", "reservation")
    doc = edited(doc, f"{GROUP}.existing_placement_group", "training-pg")
    line = refused(tmp_path, capsys, doc, f"{GROUP}.placement_group")
    assert "got 'reservation'" in line and "no reservation" in line and "odcr or capacity_block" in line, line


@pytest.mark.parametrize("name", ["é-training", "a" * 256, ""], ids=["not-ascii", "256-characters", "empty"])
def test_a_placement_group_name_ec2_refuses_is_refused(tmp_path, capsys, name):
    block = {"type": "odcr", "reservation_id": "cr-0123456789abcdef0", "availability_zone": ZONE}
    doc = edited(edited(BASE, f"{GROUP}.capacity", block), f"{GROUP}.placement_group", "reservation")
    line = refused(
        tmp_path, capsys, edited(doc, f"{GROUP}.existing_placement_group", name), f"{GROUP}.existing_placement_group"
    )
    assert f"got {name!r}"[:30] in line and "allowed: 1 to 255 printable ASCII characters" in line, line


def test_a_placement_group_name_of_255_ascii_characters_loads():
    block = {"type": "odcr", "reservation_id": "cr-0123456789abcdef0", "availability_zone": ZONE}
    doc = edited(edited(BASE, f"{GROUP}.capacity", block), f"{GROUP}.placement_group", "reservation")
    name = "Training PG_1." + "x" * 241
    group = validate_profile(edited(doc, f"{GROUP}.existing_placement_group", name)).cluster.gpu_node_groups[0]
    assert group.existing_placement_group == name and len(name) == 255


# h. One image-reference grammar (profiles/image_ref.py) for every image field, at load.
DIGEST = "sha256:" + "0123456789abcdef" * 4
SHA512 = "sha512:" + "0123456789abcdef" * 8
LONGEST_PATH = "/".join(["a" * 63] * 4)  # 255 characters: the most a repository path holds
IMAGE_FORMS = [
    ("registry.example.com:5000/team/img:tag", "registry.example.com:5000/team/img", "tag", None),
    ("localhost:5000/img:1.0", "localhost:5000/img", "1.0", None),
    ("quay.io/jupyter/scipy-notebook:2025-12-01", "quay.io/jupyter/scipy-notebook", "2025-12-01", None),
    ("team/img:v1_2.3-rc", "team/img", "v1_2.3-rc", None),
    (f"img@{DIGEST}", "img", None, DIGEST),
    (f"registry.example.com:5000/img@{DIGEST}", "registry.example.com:5000/img", None, DIGEST),
    (f"nvcr.io/nvidia/pytorch:24.12-py3@{DIGEST}", "nvcr.io/nvidia/pytorch", "24.12-py3", DIGEST),
    # The grammar's edges (distribution/reference regexp.go; OCI's registered digest algorithms).
    ("[::1]:5000/repo:tag", "[::1]:5000/repo", "tag", None),
    (f"[2001:db8::1]/team/img@{SHA512}", "[2001:db8::1]/team/img", None, SHA512),
    ("127.0.0.1:5000/img:1", "127.0.0.1:5000/img", "1", None),
    (f"img:{'t' * 128}", "img", "t" * 128, None),
    (f"registry.example.com/{LONGEST_PATH}:1", f"registry.example.com/{LONGEST_PATH}", "1", None),
]


@pytest.mark.parametrize("reference, name, tag, digest", IMAGE_FORMS, ids=[form[0][:40] for form in IMAGE_FORMS])
def test_every_image_form_loads_and_splits_at_the_right_colon(reference, name, tag, digest):
    config = validate_profile(edited(BASE, "addons.jupyterhub.cpu_image", reference))
    assert config.addons.jupyterhub.cpu_image == reference
    assert image_ref.parse_image_reference(reference) == image_ref.ImageReference(name, tag, digest)


BAD_IMAGES = [
    ("pytorch/pytorch", "names no tag or digest"),
    ("registry.example.com:5000/team/img", "names no tag or digest"),
    ("Team/img:1.0", "not an image reference"),
    ("quay.io/Jupyter/scipy-notebook:1.0", "not an image reference"),
    ("img@sha256:abc123", "not an image reference"),
    (f"img@{DIGEST.upper()}", "not an image reference"),
    ("img:-bad", "not an image reference"),
    ("img::1", "not an image reference"),
    ("my_registry.io/img:1.0", "the registry 'my_registry.io' is not a host name"),
    ("[fe80::1%eth0]:5000/img:1.0", "is not a host name"),
    ("[:::1]:5000/img:1.0", "the registry '[:::1]:5000' is not an IPv6 address in brackets"),
    ("registry.example.com:65536/img:1.0", "has port 65536; a port is 1 to 65535"),
    ("registry.example.com:/img:1.0", "has no port number after its ':'"),
    (f"registry.example.com/{LONGEST_PATH}a:1", "the repository path is 256 characters; at most 255"),
    (f"img@sha512:{'0123456789abcdef' * 4}", "a sha512 digest is 128 lowercase hex digits (64 characters given)"),
    (f"img@md5:{'0123456789abcdef' * 2}", "the digest algorithm 'md5' is not sha256 or sha512"),
    ("img:", "the tag '' is not 1 to 128"),
    (f"img:{'t' * 129}", "is not 1 to 128 of A-Za-z0-9_.-"),
]
IMAGE_FIELDS = ["addons.trainer.torch_image", "addons.jupyterhub.gpu_image", "addons.jupyterhub.cpu_image"]


@pytest.mark.parametrize("field", IMAGE_FIELDS)
@pytest.mark.parametrize("reference, words", BAD_IMAGES, ids=[bad[:40] for bad, _ in BAD_IMAGES])
def test_a_bad_or_unpinned_image_is_refused_at_load(tmp_path, capsys, field, reference, words):
    line = refused(tmp_path, capsys, edited(BASE, field, reference), field)
    assert f"got {reference!r}"[:36] in line and words in line and "registry[:port]/repository:tag" in line, line


def test_the_cuda_version_is_read_from_the_tag_not_the_digest():
    assert cuda.cuda_of(f"registry.example.com:5000/img:cuda12.8@{DIGEST}") == (12, 8)
    assert cuda.cuda_of(f"img@{DIGEST}") is None


def test_every_image_field_uses_the_grammar():
    """Every profile field that names an image refuses an unpinned reference (checked through the
    field's own validator, so an Optional or a new field is held to it too)."""
    fields = {
        (model, name)
        for model in models_of(PlatformConfig)
        for name in model.model_fields
        if name.endswith("_image") and name != "project_image"
    }
    assert {f"{model.__name__}.{name}" for model, name in fields} == {
        "JupyterHubConfig.cpu_image",
        "JupyterHubConfig.gpu_image",
        "TrainerConfig.torch_image",
    }
    for model, name in fields:
        adapter = TypeAdapter(model.model_fields[name].rebuild_annotation())
        with pytest.raises(ValidationError, match="names no tag or digest"):
            adapter.validate_python("pytorch/pytorch")
        assert adapter.validate_python(f"pytorch/pytorch@{DIGEST}") == f"pytorch/pytorch@{DIGEST}"


def test_the_platforms_own_image_pins_follow_the_grammar():
    for reference in (CUDA_IMAGE, trainer.PUBLIC_TORCH_IMAGE):
        assert image_ref.parse_image_reference(reference).tag, reference


# IAM principal ARNs (profiles/base.py IamPrincipalArn): the forms IAM's API and EKS's access
# entries take, in the commercial partition the platform writes for.
ROLE = "arn:aws:iam::123456789012:role/"
BAD_PRINCIPALS = [
    ("arn:aws-cn:iam::123456789012:role/admins", "in the aws-cn partition"),
    ("arn:aws-us-gov:iam::123456789012:user/bob", "in the aws-us-gov partition"),
    ("arn:awsfoo:iam::123456789012:role/admins", "'awsfoo' is not an AWS partition"),
    (ROLE + "/x", "(no empty part, no / at the end)"),
    (ROLE + "team//x", "(no empty part, no / at the end)"),
    (ROLE + "x/", "(no empty part, no / at the end)"),
    (ROLE + "/x/", "(no empty part, no / at the end)"),
    (ROLE, "(no empty part, no / at the end)"),
    (ROLE + "a" * 65, "is 65 characters"),
    (ROLE + "team/" + "u" * 65, "is 65 characters"),
    (ROLE + "p/" * 256 + "x", "the path is 513 characters"),
    ("arn:aws:sts::123456789012:assumed-role/a/s", "an IAM role or user ARN"),
]


@pytest.mark.parametrize("arn, words", BAD_PRINCIPALS, ids=[f"{a[:40]}..{len(a)}" for a, _ in BAD_PRINCIPALS])
@pytest.mark.parametrize("field", ["cluster.admin_principal_arns", "workloads.tenants.0.viewers"])
def test_a_principal_arn_aws_refuses_is_refused(tmp_path, capsys, field, arn, words):
    doc = edited(BASE, field, [arn])
    if field.startswith("workloads"):
        doc = edited(BASE, "workloads.tenants", [{"name": "team-a", "viewers": [arn]}])
    line = refused(tmp_path, capsys, doc, f"{field}.0")
    assert words in line and f"got {show(arn)}" in line and "allowed: " in line, line


def test_principal_arns_iam_takes_load():
    arns = [
        ROLE + "a" * 64,
        ROLE + "aws-reserved/sso.amazonaws.com/AWSReservedSSO_ML_0a1b2c3d4e5f6a7b",
        "arn:aws:iam::123456789012:user/team/bob+ci=x,y.z@example-1_",
        ROLE + "p/" * 254 + "x",  # a path of 510 characters
    ]
    config = validate_profile(edited(BASE, "cluster.admin_principal_arns", arns))
    assert config.cluster.admin_principal_arns == arns


# A repository build's ref: a name git takes (git check-ref-format) whose image tag (the ref, '/'
# made '-') the tag grammar takes (profiles/build.py).
BAD_REFS = [
    ("-x", "it begins with '-'"),
    ("a..b", "it contains '..'"),
    ("..", "it contains '..'"),
    ("a//b", "an empty part ('//')"),
    ("/main", "it begins or ends with '/'"),
    ("main/", "it begins or ends with '/'"),
    (".hidden", "a part begins with '.'"),
    ("release/.x", "a part begins with '.'"),
    ("main.lock", "a part ends with '.lock'"),
    ("main.", "it ends with '.'"),
    ("r" * 129, "the image is tagged with the ref, '/' made '-', and the tag"),
    ("v/" * 64 + "x", "the image is tagged with the ref"),  # 129 characters once '/' is '-'
    ("_" + "a" * 199, "the image is tagged with the ref"),
]


@pytest.mark.parametrize("ref, words", BAD_REFS, ids=[f"{r[:12]}..{len(r)}" for r, _ in BAD_REFS])
def test_a_ref_git_or_the_registry_refuses_is_refused(tmp_path, capsys, ref, words):
    doc = edited(
        BASE, "build.reference_implementations.nccl", {"repository_url": "https://example.com/r.git", "ref": ref}
    )
    line = refused(tmp_path, capsys, doc, "build.reference_implementations.nccl.ref")
    assert words in line and f"got {show(ref)}" in line and "allowed: " in line, line


def test_refs_git_and_the_registry_take_load():
    from stacks.build import image_tag

    refs = ["main", "release/v1.2", "v2.0.1", "_x", "r" * 128, "feature/a-b_c.d"]
    for ref in refs:
        doc = edited(BASE, "build.reference_implementations.r", {"repository_url": "https://e.com/r", "ref": ref})
        spec = validate_profile(doc).build.reference_implementations["r"]
        tag = image_tag(spec, "x86_64")
        assert tag == ref.replace("/", "-") and image_ref.tag_problem(tag) is None


HUB_OIDC = {
    "client_id": "1example23456789",
    "callback_url": "https://hub.example.com/hub/oauth_callback",
    "authorize_url": "https://auth.example.com/oauth2/authorize",
    "token_url": "https://auth.example.com/oauth2/token",
    "userdata_url": "https://auth.example.com/oauth2/userInfo",
}
HUB = edited(edited(BASE, "addons.jupyterhub.oidc", HUB_OIDC), "addons.jupyterhub.allowed_users", ["alice"])


@pytest.mark.parametrize(
    ("path", "value", "field", "words"),
    [
        ("addons.jupyterhub.oidc.username_claim", "", "addons.jupyterhub.oidc.username_claim", "a claim name"),
        ("addons.jupyterhub.oidc.username_claim", "e mail", "addons.jupyterhub.oidc.username_claim", "a claim name"),
        ("addons.jupyterhub.oidc.client_id", " ", "addons.jupyterhub.oidc.client_id", "without spaces"),
        ("addons.jupyterhub.oidc.client_id", "x" * 256, "addons.jupyterhub.oidc.client_id", "1-255 printable"),
        ("addons.jupyterhub.oidc.scopes", [""], "addons.jupyterhub.oidc.scopes.0", "an OAuth scope"),
        ("addons.jupyterhub.oidc.scopes", ["$(id)"], "addons.jupyterhub.oidc.scopes.0", "an OAuth scope"),
        ("addons.jupyterhub.oidc.scopes", ["openid", "openid"], "addons.jupyterhub.oidc.scopes.1", "requested once"),
        ("addons.jupyterhub.allowed_users", ["alice", "alice"], "addons.jupyterhub.allowed_users.1", "repeats item 0"),
        ("addons.jupyterhub.allowed_users", ["alice", "Alice"], "addons.jupyterhub.allowed_users.1", "lowercases"),
        ("addons.jupyterhub.allowed_users", ["a" * 100_000], "addons.jupyterhub.allowed_users.0", "1-128 ASCII"),
        ("addons.jupyterhub.allowed_users", ["\u0430lice"], "addons.jupyterhub.allowed_users.0", "a username"),
        ("addons.jupyterhub.allowed_users", [""], "addons.jupyterhub.allowed_users.0", "a username"),
    ],
)
def test_jupyterhub_oidc_and_allow_list_text_is_bounded(tmp_path, capsys, path, value, field, words):
    """Issue 44 item 2 for JupyterHub: ASCII patterns with lengths (RFC 6749 A.1 client-id, 3.3
    scope-token), no repeats, each refusal exits 2 naming the field."""
    assert validate_profile(HUB).addons.jupyterhub.allowed_users == ["alice"]
    line = refused(tmp_path, capsys, edited(HUB, path, value), field)
    assert words in line, line


def test_jupyterhub_accepts_real_oidc_values():
    doc = edited(HUB, "addons.jupyterhub.oidc.scopes", ["openid", "aws.cognito.signin.user.admin", "api/read"])
    doc = edited(doc, "addons.jupyterhub.oidc.username_claim", "cognito:username")
    doc = edited(doc, "addons.jupyterhub.allowed_users", ["alice@example.com", "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"])
    hub = validate_profile(doc).addons.jupyterhub
    assert hub.oidc is not None and hub.oidc.username_claim == "cognito:username"
