"""Command line: validate a profile, then synthesize the five layer stacks.

    python main.py synth [--profile NAME|PATH] [--outdir DIR]
    python main.py schema            # rewrite profiles/profile.schema.json
    python main.py manifests [--profile ...] [--image URI] [--outdir DIR]
    python main.py verify [--profile ...] [--image URI]   # needs kubectl and a live cluster

`cdktf synth` / `cdktf deploy <layer>` run this file with no arguments: the profile then comes
from the PROFILE environment variable (default: g6-validation).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from profiles import DEFAULT_PROFILE, ProfileError, load_profile
from profiles.schema import SCHEMA_PATH, profile_schema

EXIT_USER_ERROR = 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="main.py", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command")
    synth = commands.add_parser("synth", help="synthesize all layers of a profile")
    synth.add_argument("--profile", default=os.environ.get("PROFILE") or DEFAULT_PROFILE)
    synth.add_argument("--outdir", default=os.environ.get("CDKTF_OUTDIR", "cdktf.out"))
    commands.add_parser("schema", help="write the profile JSON schema for editor completion")
    for name, help_ in (("manifests", "write the validation workloads as plain YAML"),
                        ("verify", "run the validation workloads on the live cluster (kubectl)")):
        sub = commands.add_parser(name, help=help_)
        sub.add_argument("--profile", default=os.environ.get("PROFILE") or DEFAULT_PROFILE)
        sub.add_argument("--image", default=os.environ.get("IMAGE") or None,
                         help="reference image for the container test (build layer's repository_urls output + tag)")
        if name == "manifests":
            sub.add_argument("--outdir", default="cdktf.out/manifests")
    args = parser.parse_args(argv)

    if args.command == "schema":
        SCHEMA_PATH.write_text(json.dumps(profile_schema(), indent=2) + "\n")
        print(f"wrote {SCHEMA_PATH}")
        return 0
    if args.command is None:  # run by the cdktf CLI
        args = synth.parse_args([])

    # Validate before loading the provider bindings: a bad profile fails in well under a second.
    try:
        config = load_profile(args.profile)
    except ProfileError as error:
        print(error.render(), file=sys.stderr)
        return EXIT_USER_ERROR

    if args.command == "manifests":
        return write_manifests(config, Path(args.outdir), image=args.image)
    if args.command == "verify":
        return verify(config, image=args.image)

    import toolchain

    toolchain.use_supported_node()
    from stacks.platform import LAYERS, synthesize

    outdir = Path(args.outdir)
    outdir.parent.mkdir(parents=True, exist_ok=True)
    synthesize(config, str(outdir))
    print(f"synthesized profile {config.name} ({args.profile}): " + ", ".join(
        str(outdir / "stacks" / layer / "cdk.tf.json") for layer in LAYERS))
    return 0


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
