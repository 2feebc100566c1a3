"""`validate` and `outputs`: what Terraform says of the synthesized layers and their state."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from cli import common
from profiles import PlatformConfig

if TYPE_CHECKING:
    pass


def command_validate(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.layers import Operator, select_layers
    from operate.providers import provider_env

    outdir = Path(args.outdir)
    common.synthesize_profile(config, outdir)
    operator = Operator(outdir / "stacks", env=provider_env(outdir), log=lambda _: None)
    unchecked = []
    failed = 0
    for layer in select_layers(args.layer):
        outcome, detail = operator.validate(layer)
        print(f"{outcome} {config.name} {layer}" + ("" if outcome == "valid" else f":\n{detail}"))
        failed += outcome == "INVALID"
        unchecked += [layer] if outcome == "not checked" else []
    if unchecked:
        common.tell(
            "Run make validate where registry.terraform.io answers (or with a complete provider mirror): "
            "Terraform could not get the providers from here (unreachable, refusing with an error status, or "
            f"a mirror without them), so {', '.join(unchecked)} {'was' if len(unchecked) == 1 else 'were'} "
            "not checked (neither valid nor invalid)."
        )
    return 1 if failed or unchecked else 0


def command_outputs(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.layer_folders import StateUnreadable
    from operate.layers import Operator
    from operate.providers import provider_env
    from stacks import LAYERS

    stacks = Path(args.outdir) / "stacks"
    if not stacks.is_dir():
        print(
            f"nothing synthesized for {config.name} in {stacks}: run make synth or make deploy first", file=sys.stderr
        )
        return common.EXIT_USER_ERROR
    operator = Operator(stacks, env=provider_env(Path(args.outdir)), log=lambda _: None)
    printed = 0
    for layer in LAYERS:
        try:
            lines = operator.output_lines(layer)
        except StateUnreadable as error:
            print(f"cannot read the outputs of {config.name}: {error}", file=sys.stderr)
            return 1
        for line in lines:
            print(line)
        printed += len(lines)
    if not printed:
        common.tell(
            "Deploy first: make deploy\n"
            f"nothing is deployed for profile {config.name}: no layer has outputs in its state "
            f"({'s3://' + config.state.bucket if config.state.bucket else common.STATE_ROOT / config.name})."
        )
        return 1
    return 0
