"""`synth`, `diagram` and `hcl`: synthesize the layers (as JSON, a picture or HCL)."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from cli import common
from profiles import PlatformConfig

if TYPE_CHECKING:
    pass


def command_synth(config: PlatformConfig, args: argparse.Namespace) -> int:
    common.synthesize_profile(config, Path(args.outdir))
    common.print_synthesized(config, args, "cdk.tf.json")
    return 0


def command_diagram(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.diagram import load_stacks, mermaid, replace_in_readme
    from stacks import LAYERS

    common.synthesize_profile(config, Path(args.outdir))
    picture = mermaid(load_stacks(Path(args.outdir), list(LAYERS)))
    if not args.readme:
        print(picture, end="")
        return 0
    readme = common.PROJECT_ROOT / "README.md"
    readme.write_text(replace_in_readme(readme.read_text(), picture))
    print(f"wrote the layers diagram of profile {config.name} into {readme}")
    return 0


def command_hcl(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.hcl import hcl_hazards, repair_cdktf_hcl
    from stacks import LAYERS

    # cdktf renders HCL when its (Node) process starts with this set: before any binding loads.
    os.environ["SYNTH_HCL_OUTPUT"] = "true"
    outdir = Path(args.outdir) / "hcl" if args.outdir == str(common.OUTPUT_ROOT / config.name) else Path(args.outdir)
    args.outdir = str(outdir)
    platform = common.synthesize_profile(config, outdir)
    # cdktf's renderer writes strings as they are: refuse (and remove) an export in which one would
    # not stay a string of data (operate/hcl.py), rather than leave HCL that runs text as code.
    hazards = [(layer, hazard) for layer in LAYERS for hazard in hcl_hazards(getattr(platform, layer).to_terraform())]
    if hazards:
        for layer in LAYERS:
            (outdir / "stacks" / layer / "cdk.tf").unlink(missing_ok=True)
        lines = [f"  - {layer}: {hazard.render()}" for layer, hazard in hazards]
        print(
            "the HCL export refuses to write these strings, which cdktf's HCL renderer would not keep as data "
            "(nothing was written):\n" + "\n".join(lines),
            file=sys.stderr,
        )
        return common.EXIT_USER_ERROR
    for layer in LAYERS:
        path = outdir / "stacks" / layer / "cdk.tf"
        path.write_text(repair_cdktf_hcl(path.read_text()))
    if shutil.which("terraform"):  # cdktf writes HCL unindented; fmt also parses every file
        formatted = subprocess.run(
            ["terraform", "fmt", "-recursive", "-no-color", str(outdir / "stacks")], capture_output=True, text=True
        )
        if formatted.returncode != 0:
            print(f"the HCL export is not valid HCL (terraform fmt):\n{formatted.stderr}", file=sys.stderr)
            return 1
    common.print_synthesized(config, args, "cdk.tf")
    return 0
