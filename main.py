"""Command line: validate a profile, then synthesize the five layer stacks.

    python main.py synth [--profile NAME|PATH] [--outdir DIR]
    python main.py schema            # rewrite profiles/profile.schema.json
    python main.py manifests [--profile ...] [--image URI] [--outdir DIR]
    python main.py verify [--profile ...] [--image URI]   # needs kubectl and a live cluster
    python main.py hcl [--profile ...] [--outdir cdktf.out/hcl]   # the stacks as HCL, for leaving cdktf
    python main.py plan|deploy|destroy [--layer all|LAYER] [--profile ...]   # plain terraform, in order

`cdktf synth` / `cdktf deploy <layer>` run this file with no arguments: the profile then comes
from the PROFILE environment variable (default: g6-validation).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from profiles import DEFAULT_PROFILE, PlatformConfig, ProfileError, load_profile
from profiles.schema import SCHEMA_PATH, profile_schema

EXIT_USER_ERROR = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="main.py", description=(__doc__ or "").split("\n\n")[0])
    # Every command but `schema` works on one profile.
    with_profile = argparse.ArgumentParser(add_help=False)
    with_profile.add_argument("--profile", default=os.environ.get("PROFILE") or DEFAULT_PROFILE)
    commands = parser.add_subparsers(dest="command")
    synth = commands.add_parser("synth", parents=[with_profile], help="synthesize all layers of a profile")
    synth.add_argument("--outdir", default=os.environ.get("CDKTF_OUTDIR", "cdktf.out"))
    commands.add_parser("schema", help="write the profile JSON schema for editor completion")
    for name, help_ in (("manifests", "write the validation workloads as plain YAML"),
                        ("verify", "run the validation workloads on the live cluster (kubectl)")):
        sub = commands.add_parser(name, parents=[with_profile], help=help_)
        sub.add_argument("--image", default=os.environ.get("IMAGE") or None,
                         help="reference image for the container test (build layer's repository_urls output + tag)")
        if name == "manifests":
            sub.add_argument("--outdir", default="cdktf.out/manifests")
    hcl = commands.add_parser("hcl", parents=[with_profile],
                              help="write the stacks as HCL (cdk.tf) for teams leaving cdktf")
    hcl.add_argument("--outdir", default="cdktf.out/hcl")
    for name, help_ in (
        ("plan", "terraform plan the layers in dependency order"),
        ("deploy", "plan and apply the layers in dependency order"),
        ("destroy", "clean up controller-made resources, then destroy in reverse order"),
    ):
        sub = commands.add_parser(name, parents=[with_profile], help=help_)
        sub.add_argument("--layer", default=os.environ.get("LAYER") or "all")
        sub.add_argument("--outdir", default=os.environ.get("CDKTF_OUTDIR", "cdktf.out"))
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "schema":
        return write_schema()
    if args.command is None:  # run by the cdktf CLI: synthesize with the defaults
        args = parser.parse_args(["synth"])
    # Validate before loading the provider bindings: a bad profile fails in well under a second.
    try:
        config = load_profile(args.profile)
    except ProfileError as error:
        print(error.render(), file=sys.stderr)
        return EXIT_USER_ERROR
    handler = COMMANDS[args.command]
    return handler(config, args)


def write_schema() -> int:
    SCHEMA_PATH.write_text(json.dumps(profile_schema(), indent=2) + "\n")
    print(f"wrote {SCHEMA_PATH}")
    return 0


def synthesize_profile(config: PlatformConfig, outdir: Path) -> None:
    """Load the bindings (once per process) and synthesize every layer into `outdir`."""
    import toolchain

    toolchain.prepare()
    from stacks.platform import local_state_warnings, synthesize

    synthesize(config, str(outdir))
    for warning in local_state_warnings(config):
        print(warning, file=sys.stderr)


def print_synthesized(config: PlatformConfig, args: argparse.Namespace, file_name: str) -> None:
    from stacks import LAYERS

    outdir = Path(args.outdir)
    stacks = ", ".join(str(outdir / "stacks" / layer / file_name) for layer in LAYERS)
    print(f"synthesized profile {config.name} ({args.profile}): {stacks}")


def command_synth(config: PlatformConfig, args: argparse.Namespace) -> int:
    synthesize_profile(config, Path(args.outdir))
    print_synthesized(config, args, "cdk.tf.json")
    return 0


def command_hcl(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.hcl import repair_cdktf_hcl
    from stacks import LAYERS

    # cdktf renders HCL when its (Node) process starts with this set: before any binding loads.
    os.environ["SYNTH_HCL_OUTPUT"] = "true"
    outdir = Path(args.outdir)
    synthesize_profile(config, outdir)
    for layer in LAYERS:
        path = outdir / "stacks" / layer / "cdk.tf"
        path.write_text(repair_cdktf_hcl(path.read_text()))
    if shutil.which("terraform"):  # cdktf writes HCL unindented
        subprocess.run(["terraform", "fmt", "-recursive", str(outdir / "stacks")], capture_output=True)
    print_synthesized(config, args, "cdk.tf")
    return 0


def command_operate(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.layers import Operator, select_layers

    try:
        layers = select_layers(args.layer)
    except ValueError as error:
        print(error, file=sys.stderr)
        return EXIT_USER_ERROR
    outdir = Path(args.outdir)
    synthesize_profile(config, outdir)
    results = Operator(outdir / "stacks").run(args.command, layers)
    return 0 if results and all(result.ok for result in results) and len(results) == len(layers) else 1


def command_manifests(config: PlatformConfig, args: argparse.Namespace) -> int:
    return write_manifests(config, Path(args.outdir), image=args.image)


def command_verify(config: PlatformConfig, args: argparse.Namespace) -> int:
    return verify(config, image=args.image)


COMMANDS: dict[str, Callable[[PlatformConfig, argparse.Namespace], int]] = {
    "synth": command_synth,
    "hcl": command_hcl,
    "plan": command_operate,
    "deploy": command_operate,
    "destroy": command_operate,
    "manifests": command_manifests,
    "verify": command_verify,
}


def write_manifests(config: PlatformConfig, outdir: Path, *, image: str | None) -> int:
    import yaml

    from manifests.render import render

    files = render(config, image=image)
    if not files:
        print(f"profile {config.name} has no GPU node group: nothing to validate", file=sys.stderr)
        return EXIT_USER_ERROR
    outdir.mkdir(parents=True, exist_ok=True)
    for stale in outdir.glob("*.yaml"):
        stale.unlink()
    for file_name, objects in files.items():
        (outdir / file_name).write_text(yaml.safe_dump_all(objects, sort_keys=False))
    hint = "" if image else (
        " (no container test: pass IMAGE=<repository url>:<tag> from the build layer's repository_urls output)")
    print(f"wrote {', '.join(sorted(files))} to {outdir}{hint}")
    return 0


def verify(config: PlatformConfig, *, image: str | None) -> int:
    from manifests.verify import run_checks

    results = run_checks(config, image=image)
    for result in results:
        print(f"{'PASS' if result.passed else 'FAIL'} {result.name}: {result.detail}")
    return 0 if all(result.passed for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
