"""The local-test configuration of an emulated deploy. Everything here is written only into the
test's own temporary copy of the synthesized stacks, never into cdktf.out: Terraform override
files point the AWS provider at the emulator, and resources the emulator cannot serve are
removed by one explicit list."""

from __future__ import annotations

import json
import re
from pathlib import Path

# Resource types the emulator cannot take through a create / no-change re-plan / destroy cycle.
EXCLUDED_TYPES = {
    # moto creates a file system only when it reports Lifecycle AVAILABLE, and its deletion never
    # completes, so destroy would wait forever.
    "aws_fsx_lustre_file_system": "moto: FSx deletion never completes",
    # Associations belong to the excluded file system.
    "aws_fsx_data_repository_association": "depends on the excluded FSx file system",
}

# Attributes moto reports differently from AWS on re-read; a second plan may only change these.
KNOWN_EMULATOR_DRIFT = {
    # moto omits bootstrap_cluster_creator_admin_permissions and reports tags as {}.
    "aws_eks_cluster": {"access_config", "tags"},
    # moto invents an SSH key for every node group, keeps neither the update nor the repair
    # configuration, and reports tags as {}.
    "aws_eks_node_group": {"remote_access", "tags", "update_config", "node_repair_config"},
    # moto adds the provider's default tags as a launch-template tag specification.
    "aws_launch_template": {"tag_specifications"},
    # moto keeps neither the description nor (for self references) the referenced group.
    "aws_vpc_security_group_ingress_rule": {"description", "referenced_security_group_id"},
    "aws_vpc_security_group_egress_rule": {"description", "referenced_security_group_id"},
}

SERVICES = (
    "codebuild",
    "ec2",
    "ecr",
    "eks",
    "events",
    "fsx",
    "iam",
    "kms",
    "logs",
    "rds",
    "s3",
    "secretsmanager",
    "sqs",
    "sts",
)


def provider_override(endpoint: str) -> dict:
    return {
        "provider": {
            "aws": [
                {
                    "access_key": "emulator",
                    "secret_key": "emulator",
                    "skip_credentials_validation": True,
                    "skip_metadata_api_check": True,
                    "skip_region_validation": True,
                    "s3_use_path_style": True,
                    # Low: an API the emulator lacks fails fast instead of retrying for minutes; 3 still rides
                    # out a dropped local connection on a busy machine.
                    "max_retries": 3,
                    "endpoints": [{service: endpoint for service in SERVICES}],
                }
            ]
        }
    }


def _references(value, address: str) -> bool:
    return bool(re.search(r"\$\{[^}]*\b" + re.escape(address) + r"\b", json.dumps(value)))


def without_excluded(stack: dict) -> tuple[dict, list[str]]:
    """The stack minus excluded resources and everything that references them."""
    stack = json.loads(json.dumps(stack))
    removed: list[str] = []
    resources = stack.get("resource", {})
    for resource_type in list(resources):
        if resource_type in EXCLUDED_TYPES:
            removed += [f"{resource_type}.{name}" for name in resources.pop(resource_type)]
    changed = True
    while changed:
        changed = False
        for resource_type, items in list(resources.items()):
            for name, body in list(items.items()):
                if any(_references(body, address) for address in removed):
                    del items[name]
                    removed.append(f"{resource_type}.{name}")
                    changed = True
            if not items:
                del resources[resource_type]
    for name, output in list(stack.get("output", {}).items()):
        if any(_references(output, address) for address in removed):
            del stack["output"][name]
    return stack, removed


def prepare(stacks_dir: Path, layers: list[str], endpoint: str) -> dict[str, dict]:
    """Rewrite each layer's working directory for the emulator. Returns per layer the counts of
    resources kept and excluded."""
    report = {}
    for layer in layers:
        folder = stacks_dir / layer
        stack = json.loads((folder / "cdk.tf.json").read_text())
        kept, removed = without_excluded(stack)
        (folder / "cdk.tf.json").write_text(json.dumps(kept, indent=2))
        (folder / "zz_local_test_override.tf.json").write_text(json.dumps(provider_override(endpoint), indent=2))
        report[layer] = {"resources": sum(len(v) for v in kept.get("resource", {}).values()), "excluded": removed}
    return report


def known_differences(before, after, unknown, path: tuple = ()) -> list[tuple]:
    """Paths where a planned value is known and differs from the current one. Values that are
    unknown until apply (after_unknown) are computed, not drift, and are skipped."""
    if unknown is True:
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        unknown = unknown if isinstance(unknown, dict) else {}
        return [
            p
            for key in set(before) | set(after)
            for p in known_differences(before.get(key), after.get(key), unknown.get(key), (*path, key))
        ]
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        unknown = unknown if isinstance(unknown, list) else [None] * len(after)
        return [
            p
            for i, (b, a) in enumerate(zip(before, after, strict=True))
            for p in known_differences(b, a, unknown[i] if i < len(unknown) else None, (*path, i))
        ]
    return [] if before == after or (before in (None, "", [], {}) and after in (None, "", [], {})) else [path]


def unexpected_drift(plan: dict) -> list[str]:
    """Changes in a no-change re-plan that the documented emulator drift does not explain."""
    problems = []
    for change in plan.get("resource_changes", []):
        actions = change["change"]["actions"]
        if actions in (["no-op"], ["read"]):
            continue
        allowed = KNOWN_EMULATOR_DRIFT.get(change["type"], set())
        roots = {path[0] for path in change["change"].get("replace_paths") or []}
        roots |= {
            path[0]
            for path in known_differences(
                change["change"]["before"], change["change"]["after"], change["change"].get("after_unknown")
            )
        }
        if actions in (["create"], ["delete"]) or not roots <= allowed:
            problems.append(f"{change['address']} {actions}: {sorted(roots - allowed) or 'created/deleted'}")
    return problems
