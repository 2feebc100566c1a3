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
from pathlib import Path

from profiles import DEFAULT_PROFILE, ProfileError, load_profile
from profiles.schema import SCHEMA_PATH, profile_schema

EXIT_USER_ERROR = 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="main.py", description=__doc__.split("\n\n")[0])
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
    hcl = commands.add_parser("hcl", parents=[with_profile], help="write the stacks as HCL (cdk.tf) for teams leaving cdktf")
    hcl.add_argument("--outdir", default="cdktf.out/hcl")
    for name, help_ in (("plan", "terraform plan the layers in dependency order"),
                        ("deploy", "plan and apply the layers in dependency order"),
                        ("destroy", "clean up controller-made resources, then destroy in reverse order")):
        sub = commands.add_parser(name, parents=[with_profile], help=help_)
        sub.add_argument("--layer", default=os.environ.get("LAYER") or "all")
        sub.add_argument("--outdir", default=os.environ.get("CDKTF_OUTDIR", "cdktf.out"))
    args = parser.parse_args(argv)

    if args.command == "schema":
        SCHEMA_PATH.write_text(json.dumps(profile_schema(), indent=2) + "\n")
        print(f"wrote {SCHEMA_PATH}")
        return 0
    if args.command is None:  # run by the cdktf CLI
        args = synth.parse_args([])
        args.command = "synth"

    # Validate before loading the provider bindings: a bad profile fails in well under a second.
    try:
        config = load_profile(args.profile)
    except ProfileError as error:
        print(error.render(), file=sys.stderr)
        return EXIT_USER_ERROR

    layers: list[str] = []
    if args.command in ("plan", "deploy", "destroy"):
        from operate.layers import select_layers

        try:
            layers = select_layers(args.layer)
        except ValueError as error:
            print(error, file=sys.stderr)
            return EXIT_USER_ERROR
    if args.command == "manifests":
        return write_manifests(config, Path(args.outdir), image=args.image)
    if args.command == "verify":
        return verify(config, image=args.image)

    import toolchain

    if args.command == "hcl":
        # cdktf renders HCL when its (Node) process starts with this set: before any binding loads.
        os.environ["SYNTH_HCL_OUTPUT"] = "true"
    toolchain.prepare()
    from stacks import LAYERS
    from stacks.platform import synthesize

    outdir = Path(args.outdir)
    synthesize(config, str(outdir))
    if args.command in ("plan", "deploy", "destroy"):
        return operate(args.command, layers, outdir / "stacks")
    file_name = "cdk.tf.json"
    if args.command == "hcl":
        from operate.hcl import repair_cdktf_hcl

        file_name = "cdk.tf"
        for layer in LAYERS:
            path = outdir / "stacks" / layer / file_name
            path.write_text(repair_cdktf_hcl(path.read_text()))
        if shutil.which("terraform"):  # cdktf writes HCL unindented
            subprocess.run(["terraform", "fmt", "-recursive", str(outdir / "stacks")], capture_output=True)
    print(f"synthesized profile {config.name} ({args.profile}): " + ", ".join(
        str(outdir / "stacks" / layer / file_name) for layer in LAYERS))
    return 0


def operate(action: str, layers: list[str], stacks_dir: Path) -> int:
    from operate.layers import Operator

    results = Operator(stacks_dir).run(action, layers)  # type: ignore[arg-type]
    return 0 if results and all(result.ok for result in results) and len(results) == len(layers) else 1


def write_manifests(config, outdir: Path, *, image: str | None) -> int:
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
    print(f"wrote {', '.join(sorted(files))} to {outdir}" + ("" if image else
          " (no container test: pass IMAGE=<repository url>:<tag> from the build layer's repository_urls output)"))
    return 0


def verify(config, *, image: str | None) -> int:
    from manifests.verify import run_checks

    results = run_checks(config, image=image)
    for result in results:
        print(f"{'PASS' if result.passed else 'FAIL'} {result.name}: {result.detail}")
    return 0 if all(result.passed for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
