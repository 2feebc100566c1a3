"""Command line: validate a profile, then synthesize and operate its five layer stacks.

    python main.py synth [--profile NAME|PATH] [--outdir DIR]
    python main.py schema            # rewrite profiles/profile.schema.json
    python main.py manifests [--profile ...] [--image URI] [--outdir DIR]
    python main.py verify [--profile ...] [--image URI]   # needs kubectl and a live cluster
    python main.py hcl [--profile ...] [--outdir DIR]      # the stacks as HCL, for leaving cdktf
    python main.py plan|deploy|destroy [--layer all|LAYER] [--yes] [--profile ...]
    python main.py outputs [--profile ...]                 # the layers' outputs after a deploy
    python main.py validate [--layer ...] [--profile ...]  # terraform validate with the real providers
    python main.py pause|resume [--yes] [--profile ...]    # stop / restart every node, keep data
    python main.py diagram [--profile ...] [--readme]      # Mermaid picture of the synthesized layers
    python main.py new-profile PATH [--from NAME]          # start your own profile from a shipped one
    python main.py quotas [--profile ...] [--check]        # EC2 quotas needed; --check reads the account's

Each profile works in its own folder, cdktf.out/<profile name>/ (stacks, plans, kubeconfig), and
keeps local state in state/<profile name>/. `cdktf synth` / `cdktf deploy <layer>` run this file
with no arguments (it then synthesizes): the profile then comes from the PROFILE environment variable (default:
gpu-validation) and the stacks go where the cdktf CLI wants them (CDKTF_OUTDIR, or cdktf.out).

The commands live in cli/, a module each (cli/common.py holds what they share); this file reads
the command line, validates the profile, claims its state and hands over.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

from cli import account, common, operate, pause, profile_files, state, synth, tenant_guide, verify
from cli.common import EXIT_USER_ERROR, OUTPUT_ROOT, PROJECT_ROOT
from cli.parser import build_parser
from profiles import PlatformConfig, ProfileError, load_profile
from profiles.loader import resolve


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "schema":
        return profile_files.write_schema()
    if args.command == "profiles":
        return profile_files.list_profiles()
    if args.command == "new-profile":
        return profile_files.copy_profile(args.source, Path(args.path))
    cdktf_cli = args.command is None
    if cdktf_cli:  # run by the cdktf CLI: synthesize with the defaults, where the CLI expects it
        args = parser.parse_args(["synth", "--outdir", os.environ.get("CDKTF_OUTDIR") or str(OUTPUT_ROOT)])
    # Validate before loading the provider bindings: a bad profile fails in well under a second.
    try:
        config = load_profile(args.profile)
    except ProfileError as error:
        print(error.render(), file=sys.stderr)
        return EXIT_USER_ERROR
    if args.outdir is None:
        args.outdir = str(OUTPUT_ROOT / config.name)
    from operate.tools import ToolMissing

    try:
        return run_command(config, args)
    except ToolMissing as error:  # one line, whichever step found the tool missing
        print(error, file=sys.stderr)
        return EXIT_USER_ERROR


def run_command(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.tools import require_tool

    for tool in COMMAND_TOOLS.get(args.command, ()):  # before anything is synthesized or asked
        require_tool(tool)
    clash = claim_state(config, args.profile, args.command)
    if clash:
        print(clash, file=sys.stderr)
        return EXIT_USER_ERROR
    return COMMANDS[args.command](config, args)


# The tools each command always runs. Others are found where they are needed: the AWS CLI for
# `quotas --check`, an S3 state claim and the NCCL image lookup; kubectl and the AWS CLI for a
# destroy's clean-up and the deploy's Secrets check (operate/tools.py).
COMMAND_TOOLS: dict[str, tuple[str, ...]] = {
    "plan": ("terraform",),
    "deploy": ("terraform",),
    "destroy": ("terraform",),
    "validate": ("terraform",),
    "outputs": ("terraform",),
    "verify": ("terraform", "aws", "kubectl"),
    "pause": ("terraform", "aws", "kubectl"),
    "resume": ("terraform", "aws", "kubectl"),
    "cost": ("aws",),
}


# Commands that read or write the profile's state: with an S3 backend they check the claim there.
STATE_COMMANDS = ("plan", "deploy", "destroy", "outputs", "pause", "resume", "verify")


def claim_state(config: PlatformConfig, profile: str, command: str) -> str | None:
    """The profile file claims its name where the state lives (operate/state_claim.py)."""
    from operate.state_claim import claim_local, claim_s3, profile_identity

    identity = profile_identity(resolve(profile), PROJECT_ROOT)
    if config.state.bucket is None:
        return claim_local(common.STATE_ROOT / config.name, config.name, identity)
    if command not in STATE_COMMANDS:
        return None
    from operate.cluster_access import run_aws

    return claim_s3(
        config.state.bucket,
        config.state.key_prefix,
        config.state.region or config.region,
        config.name,
        identity,
        aws=run_aws,
    )


COMMANDS: dict[str, Callable[[PlatformConfig, argparse.Namespace], int]] = {
    "synth": synth.command_synth,
    "hcl": synth.command_hcl,
    "plan": operate.command_operate,
    "deploy": operate.command_operate,
    "destroy": operate.command_operate,
    "outputs": state.command_outputs,
    "validate": state.command_validate,
    "pause": pause.command_pause,
    "resume": pause.command_pause,
    "manifests": verify.command_manifests,
    "verify": verify.command_verify,
    "diagram": synth.command_diagram,
    "quotas": account.command_quotas,
    "cost": account.command_cost,
    "tenant-guide": tenant_guide.command_tenant_guide,
}


if __name__ == "__main__":
    sys.exit(main())
