"""What a saved Terraform plan says and what a destroy of data needs: the summary lines a plan is
shown as, the data a destroy plan deletes, and the override that lets a destroy delete it."""

from __future__ import annotations

from typing import Any

# Resources whose destruction deletes data (the destroy preview names them).
DATA_RESOURCES = {
    "aws_s3_bucket": "bucket and every object version in it",
    "aws_fsx_lustre_file_system": "file system (PERSISTENT ones keep a final backup, billed until you delete it)",
    "aws_ecr_repository": "image repository and its images",
    "aws_db_instance": "database (a protected one keeps a final snapshot, encrypted with the layer's KMS key, which "
    "the same destroy schedules for deletion in 30 days: copy or restore the snapshot before then)",
}
_SYMBOLS = {
    ("create",): "+",
    ("delete",): "-",
    ("update",): "~",
    ("delete", "create"): "-/+",
    ("create", "delete"): "+/-",
}


def summarize_plan(plan: dict[str, Any]) -> list[str]:
    """Terraform's changes as `+ create aws_x.y` lines and its `Plan: ...` summary line."""
    lines, counts = [], {"add": 0, "change": 0, "destroy": 0}
    for change in plan.get("resource_changes", []):
        actions = tuple(change["change"]["actions"])
        if actions in (("no-op",), ("read",)):
            continue
        counts["add"] += "create" in actions
        counts["change"] += actions == ("update",)
        counts["destroy"] += "delete" in actions
        lines.append(f"  {_SYMBOLS.get(actions, '?'):>3} {change['address']}")
    lines.append(f"  Plan: {counts['add']} to add, {counts['change']} to change, {counts['destroy']} to destroy.")
    return lines


def destroy_preview(plan: dict[str, Any]) -> list[str]:
    """The data a destroy plan deletes, from the plan itself (nothing when it deletes nothing)."""
    return [
        f"  DELETES {change['address']}: the {DATA_RESOURCES[change['type']]}"
        for change in plan.get("resource_changes", [])
        if "delete" in change["change"]["actions"] and change.get("type") in DATA_RESOURCES
    ]


def protected_resources(stack: dict[str, Any]) -> list[str]:
    """Addresses of the stack's resources with prevent_destroy."""
    return [
        f"{resource_type}.{name}"
        for resource_type, bodies in stack.get("resource", {}).items()
        for name, body in bodies.items()
        if body.get("lifecycle", {}).get("prevent_destroy")
    ]


# Attributes a destroy of data needs set first; Terraform stores them (and RDS acts on them) only
# through an apply. prevent_destroy, a configuration-only lifecycle setting, needs none.
EMPTIED_BY_DESTROY = {"aws_s3_bucket": {"force_destroy": True}, "aws_ecr_repository": {"force_delete": True}}


def protection_override(stack: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A Terraform override (plain `*_override.tf.json`) that lets a destroy delete the stack's
    data: prevent_destroy and deletion protection off, every bucket and image repository emptied
    by the destroy. Final backups and snapshots stay as the stack sets them."""
    override: dict[str, dict[str, Any]] = {}
    for resource_type, bodies in stack.get("resource", {}).items():
        for name, body in bodies.items():
            lifted: dict[str, Any] = dict(EMPTIED_BY_DESTROY.get(resource_type, {}))
            if body.get("lifecycle", {}).get("prevent_destroy"):
                lifted["lifecycle"] = {"prevent_destroy": False}
            if body.get("deletion_protection"):
                lifted["deletion_protection"] = False
            if lifted:
                override.setdefault(resource_type, {})[name] = lifted
    return override


def needs_apply(override: dict[str, dict[str, Any]]) -> list[str]:
    """Addresses whose override changes more than the lifecycle (an apply must record it)."""
    return [
        f"{resource_type}.{name}"
        for resource_type, bodies in override.items()
        for name, lifted in bodies.items()
        if set(lifted) - {"lifecycle"}
    ]
