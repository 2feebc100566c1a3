"""The command line's arguments: one sub-command per user action."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from profiles import DEFAULT_PROFILE, available_profiles

if TYPE_CHECKING:
    pass


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="main.py",
        description=(__doc__ or "").split("\n\n")[0],
        epilog="Run with no arguments (it then synthesizes), as `cdktf synth` and `cdktf deploy <layer>` do: "
        "the profile comes from $PROFILE and the stacks go to $CDKTF_OUTDIR (default cdktf.out).",
    )
    # Every command but `schema` works on one profile.
    with_profile = argparse.ArgumentParser(add_help=False)
    with_profile.add_argument(
        "--profile",
        default=os.environ.get("PROFILE") or DEFAULT_PROFILE,
        help=f"a shipped profile ({', '.join(available_profiles())}; see `main.py profiles`) "
        "or the path of your own YAML file (default: $PROFILE, else %(default)s)",
    )
    with_profile.add_argument(
        "--outdir", default=None, help="output folder (default: cdktf.out/<profile name>/, per command below it)"
    )
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("synth", parents=[with_profile], help="synthesize all layers of a profile")
    commands.add_parser("schema", help="write the profile JSON schema for editor completion")
    commands.add_parser("profiles", help="list the shipped profiles: GPU type and count, nodes, EFA interfaces")
    quotas = commands.add_parser(
        "quotas", parents=[with_profile], help="the EC2 vCPU quotas the profile needs, and how to check and raise them"
    )
    quotas.add_argument(
        "--check",
        action="store_true",
        help="also read the account's quotas and the GPU groups' reservations (AWS CLI, your credentials)",
    )
    commands.add_parser(
        "cost", parents=[with_profile], help="what the profile costs per hour, at AWS's current on-demand list prices"
    )
    new_profile = commands.add_parser("new-profile", help="copy a shipped profile to PATH, ready to edit")
    new_profile.add_argument("path", help="where to write it (a .yaml file that does not exist yet)")
    new_profile.add_argument(
        "--from",
        dest="source",
        default=DEFAULT_PROFILE,
        choices=available_profiles(),
        help="the shipped profile to start from (default: %(default)s)",
    )
    for name, help_ in (
        ("manifests", "write the validation workloads as plain YAML"),
        ("verify", "run the validation workloads on the live cluster (kubectl)"),
    ):
        sub = commands.add_parser(name, parents=[with_profile], help=help_)
        sub.add_argument(
            "--image",
            default=os.environ.get("IMAGE") or None,
            help="reference image for the container test (build layer's repository_urls output + tag)",
        )
        sub.add_argument(
            "--nccl-image",
            default=os.environ.get("NCCL_IMAGE") or None,
            help="image for the NCCL all-reduce (default: the build layer's nccl-tests image when built, "
            "else the pinned public one)",
        )
    commands.add_parser("hcl", parents=[with_profile], help="write the stacks as HCL (cdk.tf) for teams leaving cdktf")
    for name, help_ in (
        ("pause", "stop every node (GPU and system) and keep the data, the state and the cluster"),
        ("resume", "scale the node groups back to the profile's sizes after a pause"),
    ):
        sub = commands.add_parser(name, parents=[with_profile], help=help_)
        sub.add_argument(
            "--yes",
            action="store_true",
            help="do it without asking (make ... AUTO_APPROVE=1 on the command line passes it)",
        )
    commands.add_parser("outputs", parents=[with_profile], help="print the deployed layers' outputs")
    guide = commands.add_parser(
        "tenant-guide",
        parents=[with_profile],
        help="print a tenant's day-one page: kubeconfig, queue, first jobs, data, web UIs",
    )
    guide.add_argument(
        "--tenant", default=os.environ.get("TENANT") or None, help="the tenant (default: the profile's first)"
    )
    validate = commands.add_parser(
        "validate",
        parents=[with_profile],
        help="terraform validate every layer with its real providers (needs the registry "
        "or a mirror of every provider; no AWS access)",
    )
    validate.add_argument(
        "--layer",
        default=os.environ.get("LAYER") or "all",
        choices=["all", "aws", "cluster", "storage", "build", "addons", "workloads"],
    )
    diagram = commands.add_parser(
        "diagram", parents=[with_profile], help="synthesize, then print the layers as a Mermaid diagram"
    )
    diagram.add_argument("--readme", action="store_true", help="write it into README.md's layers diagram instead")
    for name, help_ in (
        ("plan", "terraform plan the layers in dependency order and show the plans"),
        ("deploy", "plan, show, confirm and apply the layers in dependency order"),
        ("destroy", "clean up controller-made resources, then show, confirm and destroy in reverse order"),
    ):
        sub = commands.add_parser(name, parents=[with_profile], help=help_)
        sub.add_argument(
            "--layer",
            default=os.environ.get("LAYER") or "all",
            choices=["all", "aws", "cluster", "storage", "build", "addons", "workloads"],
            help="all layers (default), aws (cluster, storage, build) or one layer",
        )
        sub.add_argument(
            "--yes",
            action="store_true",
            help="apply without asking (make ... AUTO_APPROVE=1 on the command line passes it)",
        )
        if name == "deploy":
            sub.add_argument(
                "--skip-quota-check",
                action="store_true",
                help="deploy even when the EC2 quotas or the GPU groups' reservations cannot be read (a warning "
                "names them); a shortfall that is read still stops it (make deploy SKIP_QUOTA_CHECK=1)",
            )
        if name == "destroy":
            sub.add_argument(
                "--delete-data",
                action="store_true",
                help="full teardown: also delete the protected data (buckets, file system, database); "
                "asks you to type the profile name, which --yes does not answer (make destroy DELETE_DATA=1)",
            )
            sub.add_argument(
                "--confirm-delete-data",
                metavar="PROFILE_NAME",
                default=None,
                help="for CI, with --delete-data: the profile's name, confirming the deletion of its data "
                "without the typed question; any other name refuses (make destroy DELETE_DATA=1 "
                "CONFIRM_DELETE_DATA=<name>)",
            )
    return parser
