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
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from profiles import DEFAULT_PROFILE, PlatformConfig, ProfileError, available_profiles, load_profile
from profiles.loader import resolve
from profiles.schema import SCHEMA_PATH, profile_schema

if TYPE_CHECKING:
    from operate.kubectl import Kubectl
    from operate.layers import Operator
    from stacks.platform import Platform

EXIT_USER_ERROR = 2
PROJECT_ROOT = Path(__file__).resolve().parent
OUTPUT_ROOT = Path("cdktf.out")
STATE_ROOT = PROJECT_ROOT / "state"
MANIFESTS_WRITTEN = ".written-by-manifests"


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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "schema":
        return write_schema()
    if args.command == "profiles":
        return list_profiles()
    if args.command == "new-profile":
        return copy_profile(args.source, Path(args.path))
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
        return claim_local(STATE_ROOT / config.name, config.name, identity)
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


def list_profiles() -> int:
    for name in available_profiles():
        config = load_profile(name)
        groups = (
            ", ".join(
                f"{g.max_size} x {g.instance_type} ({g.catalog_entry.gpu_count} x {g.catalog_entry.gpu_model}, "
                f"{g.catalog_entry.max_efa_interfaces if g.efa_enabled else 0} EFA)"
                for g in config.cluster.gpu_node_groups
            )
            or "no GPU node group"
        )
        print(f"{name:16} {config.region:12} {groups}")
    return 0


def copy_profile(source: str, target: Path) -> int:
    """Copy a shipped profile to `target`: its schema line points at this checkout's schema from
    wherever the copy lives, and its `name` is the file's, so it gets its own output and state."""
    if target.suffix not in (".yaml", ".yml") or target.exists():
        print(f"{target}: give the path of a new .yaml file (it must not exist yet)", file=sys.stderr)
        return EXIT_USER_ERROR
    schema = os.path.relpath(SCHEMA_PATH, target.resolve().parent)
    text = resolve(source).read_text()
    text = re.sub(
        r"^# yaml-language-server: \$schema=.*$",
        f"# yaml-language-server: $schema={schema}",
        text,
        count=1,
        flags=re.MULTILINE,
    )
    text = re.sub(r"^name: .*$", f"name: {target.stem}", text, count=1, flags=re.MULTILINE)
    text = re.sub(rf"^(\s+profile: ){re.escape(source)}$", rf"\g<1>{target.stem}", text, count=1, flags=re.MULTILINE)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    try:
        load_profile(str(target))
    except ProfileError as error:  # e.g. a file name that is not a valid profile name
        print(f"wrote {target} from {source}; before using it:\n{error.render()}", file=sys.stderr)
        return EXIT_USER_ERROR
    print(f"wrote {target} from {source} (name: {target.stem}); edit it, then `make synth PROFILE={target}`")
    return 0


def write_schema() -> int:
    SCHEMA_PATH.write_text(json.dumps(profile_schema(), indent=2) + "\n")
    print(f"wrote {SCHEMA_PATH}")
    return 0


def synthesize_profile(config: PlatformConfig, outdir: Path) -> Platform:
    """Load the bindings (once per process) and synthesize every layer into `outdir`."""
    import toolchain

    toolchain.prepare()
    from addons.kueue import share_warnings
    from profiles.quotas import node_count_warnings
    from stacks.platform import capacity_block_warnings, local_state_warnings, synthesize

    platform = synthesize(config, str(outdir), state_dir=STATE_ROOT / config.name)
    warnings = [
        *local_state_warnings(config),
        *capacity_block_warnings(config, datetime.now(UTC)),
        *node_count_warnings(config),
        *share_warnings(config),
    ]
    for warning in warnings:
        print(warning, file=sys.stderr)
    return platform


def print_synthesized(config: PlatformConfig, args: argparse.Namespace, file_name: str) -> None:
    from stacks import LAYERS

    outdir = Path(args.outdir)
    stacks = ", ".join(str(outdir / "stacks" / layer / file_name) for layer in LAYERS)
    source = "" if args.profile == config.name else f" ({args.profile})"  # a file whose name differs
    print(f"synthesized profile {config.name}{source}: {stacks}")


def command_synth(config: PlatformConfig, args: argparse.Namespace) -> int:
    synthesize_profile(config, Path(args.outdir))
    print_synthesized(config, args, "cdk.tf.json")
    return 0


def command_diagram(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.diagram import load_stacks, mermaid, replace_in_readme
    from stacks import LAYERS

    synthesize_profile(config, Path(args.outdir))
    picture = mermaid(load_stacks(Path(args.outdir), list(LAYERS)))
    if not args.readme:
        print(picture, end="")
        return 0
    readme = PROJECT_ROOT / "README.md"
    readme.write_text(replace_in_readme(readme.read_text(), picture))
    print(f"wrote the layers diagram of profile {config.name} into {readme}")
    return 0


def command_hcl(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.hcl import hcl_hazards, repair_cdktf_hcl
    from stacks import LAYERS

    # cdktf renders HCL when its (Node) process starts with this set: before any binding loads.
    os.environ["SYNTH_HCL_OUTPUT"] = "true"
    outdir = Path(args.outdir) / "hcl" if args.outdir == str(OUTPUT_ROOT / config.name) else Path(args.outdir)
    args.outdir = str(outdir)
    platform = synthesize_profile(config, outdir)
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
        return EXIT_USER_ERROR
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
    print_synthesized(config, args, "cdk.tf")
    return 0


def command_operate(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.cleanup import cleanup_preview, platform_objects
    from operate.cluster_access import ClusterAccessError
    from operate.layers import Operator, select_layers
    from operate.preflight import deploy_preflight
    from operate.providers import provider_env

    try:
        layers = select_layers(args.layer)
    except ValueError as error:
        print(error, file=sys.stderr)
        return EXIT_USER_ERROR
    interactive = sys.stdin.isatty()
    if args.command != "plan" and not args.yes and not interactive:
        tell(
            f"Review the plan (make plan), then approve with --yes (make {args.command} AUTO_APPROVE=1).\n"
            f"refusing to {args.command} without confirmation: there is no terminal to ask on."
        )
        return EXIT_USER_ERROR
    delete_data = getattr(args, "delete_data", False)
    confirmed = getattr(args, "confirm_delete_data", None)
    refusal = data_confirmation_refusal(config, delete_data, confirmed, interactive)
    if refusal:
        tell(refusal)
        return EXIT_USER_ERROR
    if confirmed:
        tell(
            f"warning: --confirm-delete-data={confirmed}: the protected data of {config.name} (buckets, file "
            "system, database) is deleted without asking you to type its name; each layer's data is listed first."
        )
    from operate import cluster_access
    from operate.account import account_refusal

    wrong_account = account_refusal(config, args.command, cluster_access.run_aws)  # before Terraform runs
    if wrong_account:
        tell(wrong_account.message)
        return EXIT_USER_ERROR if wrong_account.user_error else 1
    outdir = Path(args.outdir)
    synthesize_profile(config, outdir)

    def confirm_data(question: str) -> bool:
        """The typed name, never --yes: the plans' approval is not the data's."""
        if confirmed:
            print(f"{question} Confirmed by --confirm-delete-data={confirmed}.", file=sys.stderr)
            return True
        return ask_for_name(question, config.name)

    operator = Operator(
        outdir / "stacks",
        env=provider_env(outdir),
        confirm=lambda question: args.yes or ask(question),
        delete_data=delete_data,
        confirm_data=confirm_data,
    )
    operator.cleanup = lambda layer: cleanup_profile_cluster(config, operator, outdir / "kubeconfig", layer)
    operator.cleanup_preview = lambda layer: cleanup_preview(platform_objects(config, layer, operator.stack(layer)))
    operator.settle = lambda layer: settle_profile_cluster(config, operator, outdir / "kubeconfig", layer)
    operator.preflight = deploy_preflight(
        config,
        operator,
        kubectl=lambda: profile_kubectl(config, operator, outdir / "kubeconfig"),
        skip_quota_check=getattr(args, "skip_quota_check", False),
    )
    try:
        results = operator.run(args.command, layers)
    except ClusterAccessError as error:  # a Kubernetes layer's clean-up, before it deleted anything
        destroyed = [result.layer for result in operator.results if result.ok]
        if destroyed:
            tell(
                f"destroy stopped after destroying {', '.join(destroyed)}, before the next layer's clean-up "
                f"deleted anything: {error}"
            )
        else:
            tell(f"destroy stopped before deleting anything in the cluster: {error}")
        return 1
    return 0 if results and all(result.ok for result in results) and len(results) == len(layers) else 1


def data_confirmation_refusal(
    config: PlatformConfig, delete_data: bool, confirmed: str | None, interactive: bool
) -> str | None:
    """Why a destroy must not start for want of the data's confirmation, before anything runs:
    --confirm-delete-data without --delete-data or with another profile's name, or --delete-data
    with no terminal to type the name on and no --confirm-delete-data."""
    confirm = f"make destroy DELETE_DATA=1 CONFIRM_DELETE_DATA={config.name} AUTO_APPROVE=1"
    if confirmed is not None and not delete_data:
        return (
            f"Add --delete-data ({confirm}): --confirm-delete-data confirms a deletion of data, and none is asked for."
        )
    if confirmed is not None and confirmed != config.name:
        return (
            f"Give this profile's name to delete its data: --confirm-delete-data={config.name}.\n"
            f"--confirm-delete-data={confirmed!r} is not the name of profile {config.name}: nothing was deleted."
        )
    if delete_data and confirmed is None and not interactive:
        return (
            f"Run it on a terminal to type the profile name, or confirm the deletion explicitly: {confirm} "
            "(on the make command line).\n"
            "refusing to delete data without its typed confirmation: there is no terminal to ask on, and "
            "AUTO_APPROVE=1 (--yes) approves the plans, never the deletion of data."
        )
    return None


def tell(message: str) -> None:
    """A message on stderr, in short lines (operate/messages.py)."""
    from operate.messages import wrap

    print("\n".join(wrap(message)), file=sys.stderr)


def ask(question: str) -> bool:
    return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")


def ask_for_name(question: str, name: str) -> bool:
    """A confirmation that cannot be given by reflex: the user types the profile's name."""
    return input(f"{question} It cannot be undone. Type the profile name ({name}) to confirm: ").strip() == name


def profile_kubectl(config: PlatformConfig, operator: Operator, kubeconfig: Path) -> Kubectl:
    """kubectl bound to the profile's own cluster, as the cluster layer's outputs name it."""
    from operate.cluster_access import ClusterAccessError, ClusterTarget, api_tunnel, bind_kubectl
    from operate.layers import StateUnreadable

    try:
        outputs = operator.outputs("cluster")
    except StateUnreadable as error:
        raise ClusterAccessError(str(error)) from error
    if "endpoint" not in outputs:
        raise ClusterAccessError(
            "the cluster layer has no outputs (not deployed, or its state is elsewhere): "
            "cannot tell which cluster to act on"
        )
    target = ClusterTarget(
        name=outputs["cluster_name"]["value"], region=config.region, endpoint=outputs["endpoint"]["value"]
    )
    if target.name != config.name:
        raise ClusterAccessError(f"the cluster layer's state is for cluster {target.name}, not {config.name}")
    return bind_kubectl(target, kubeconfig, tunnel=api_tunnel(operator.env))


def cleanup_profile_cluster(config: PlatformConfig, operator: Operator, kubeconfig: Path, layer: str) -> None:
    """The pre-destroy clean-up, on the profile's own cluster only."""
    from operate.cleanup import platform_objects, pre_destroy_cleanup

    owned = platform_objects(config, layer, operator.stack(layer))
    pre_destroy_cleanup(profile_kubectl(config, operator, kubeconfig), owned, log=operator.log)


def settle_profile_cluster(config: PlatformConfig, operator: Operator, kubeconfig: Path, layer: str) -> None:
    """After a Kubernetes layer's destroy: wait for the volumes it released, on the profile's cluster."""
    from operate.cleanup import after_destroy, platform_objects
    from operate.cluster_access import ClusterAccessError
    from operate.layers import TeardownStuck

    try:
        after_destroy(profile_kubectl(config, operator, kubeconfig), platform_objects(config, layer), log=operator.log)
    except ClusterAccessError as error:  # Terraform has deleted things by now: not "nothing deleted"
        raise TeardownStuck(
            f"Restore access to the cluster ({kubeconfig}), then run the destroy again: it resumes here.",
            f"cannot check that its volumes are gone: {error}",
        ) from error


def command_validate(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.layers import Operator, select_layers
    from operate.providers import provider_env

    outdir = Path(args.outdir)
    synthesize_profile(config, outdir)
    operator = Operator(outdir / "stacks", env=provider_env(outdir), log=lambda _: None)
    unchecked = []
    failed = 0
    for layer in select_layers(args.layer):
        outcome, detail = operator.validate(layer)
        print(f"{outcome} {config.name} {layer}" + ("" if outcome == "valid" else f":\n{detail}"))
        failed += outcome == "INVALID"
        unchecked += [layer] if outcome == "not checked" else []
    if unchecked:
        tell(
            "Run make validate where registry.terraform.io answers (or with a complete provider mirror): "
            "Terraform could not get the providers from here (unreachable, refusing with an error status, or "
            f"a mirror without them), so {', '.join(unchecked)} {'was' if len(unchecked) == 1 else 'were'} "
            "not checked (neither valid nor invalid)."
        )
    return 1 if failed or unchecked else 0


def command_outputs(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.layers import Operator, StateUnreadable
    from operate.providers import provider_env
    from stacks import LAYERS

    stacks = Path(args.outdir) / "stacks"
    if not stacks.is_dir():
        print(
            f"nothing synthesized for {config.name} in {stacks}: run make synth or make deploy first", file=sys.stderr
        )
        return EXIT_USER_ERROR
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
        tell(
            "Deploy first: make deploy\n"
            f"nothing is deployed for profile {config.name}: no layer has outputs in its state "
            f"({'s3://' + config.state.bucket if config.state.bucket else STATE_ROOT / config.name})."
        )
        return 1
    return 0


def command_manifests(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.layers import Operator
    from operate.providers import provider_env

    outdir = Path(args.outdir)
    deployed = (outdir / "stacks" / "build").is_dir()  # synthesized before: the build layer may have run
    operator = Operator(outdir / "stacks", env=provider_env(outdir), log=lambda _: None) if deployed else None
    return write_manifests(
        config,
        outdir / "manifests" if outdir == OUTPUT_ROOT / config.name else outdir,
        image=args.image,
        nccl_image=nccl_test_image(config, operator, args.nccl_image),
    )


def command_verify(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.cluster_access import ClusterAccessError
    from operate.layers import Operator
    from operate.providers import provider_env

    outdir = Path(args.outdir)
    synthesize_profile(config, outdir)
    operator = Operator(outdir / "stacks", env=provider_env(outdir), log=lambda _: None)
    try:
        kubectl = profile_kubectl(config, operator, outdir / "kubeconfig")
    except ClusterAccessError as error:
        tell(f"verify cannot run: {error}")
        return 1
    return verify(
        config,
        image=args.image,
        kubectl=kubectl,
        nccl_image=nccl_test_image(config, operator, args.nccl_image),
        trainjob_blocked=trainer_image_missing(config, operator),
    )


AwsCli = Callable[[list[str]], subprocess.CompletedProcess[str]]


def built_image(
    config: PlatformConfig, operator: Operator, project_image: str, aws: AwsCli | None
) -> tuple[str, str, str | None] | None:
    """The build layer's image of images/<project_image>: (implementation, repository:tag, why
    ECR does not have it or None when it does). None: the profile builds none, or the build
    layer's state has no repository for it yet. The tag is the Dockerfile's (what the build pushes)."""
    from components.images import project_image_tag
    from operate.cluster_access import run_aws
    from operate.layers import StateUnreadable
    from operate.tools import ToolMissing

    impl = config.build.building(project_image)
    if impl is None:
        return None
    try:
        repositories = operator.outputs("build").get("repository_urls", {}).get("value", {})
    except StateUnreadable:
        repositories = {}
    if impl not in repositories:
        return None
    repository, tag = repositories[impl], project_image_tag(project_image)
    name = repository.split("/", 1)[1]
    ask = [
        "ecr",
        "describe-images",
        "--region",
        config.region,
        "--repository-name",
        name,
        "--image-ids",
        f"imageTag={tag}",
    ]
    try:
        found = (aws or run_aws)(ask)
    except (OSError, subprocess.TimeoutExpired, ToolMissing) as error:  # no AWS CLI here, or no answer
        found = subprocess.CompletedProcess(ask, 1, "", f"cannot ask ECR: {error}")
    missing = None if found.returncode == 0 else (found.stderr or found.stdout).strip()
    return impl, f"{repository}:{tag}", missing


def nccl_test_image(
    config: PlatformConfig,
    operator: Operator | None,
    override: str | None,
    aws: AwsCli | None = None,
) -> str:
    """The image the NCCL MPIJob runs: --nccl-image / NCCL_IMAGE, else the one the build layer
    built from images/nccl-tests (its repository and the Dockerfile's tag) once ECR has it, else
    the public one. A repository without the tag (its build not run yet, or failed) would leave
    every worker in ImagePullBackOff: say so, and run the public image."""
    from profiles.versions import NCCL_TESTS_IMAGE

    if override:
        return override
    built = built_image(config, operator, "nccl-tests", aws) if operator is not None else None
    if built is None:
        return NCCL_TESTS_IMAGE
    impl, image, missing = built
    if missing is None:
        return image
    print(
        f"the build layer's image {image} is not in ECR ({missing}): "
        f"run its build (make outputs lists build_commands.{impl}); the NCCL check runs {NCCL_TESTS_IMAGE} "
        "until then",
        file=sys.stderr,
    )
    return NCCL_TESTS_IMAGE


def trainer_image_missing(config: PlatformConfig, operator: Operator, aws: AwsCli | None = None) -> str | None:
    """Why torchrun-check cannot start, if its runtime's image is the build layer's pytorch-efa
    and ECR does not have its tag: the runtime's pods would wait in ImagePullBackOff until verify
    gives up. There is no public image to fall back on: one without aws-ofi-nccl runs NCCL over
    TCP. None when ECR has it, or when it cannot be asked (the pods then say for themselves)."""
    from addons.trainer import DEFINITION as TRAINER
    from addons.trainer import EFA_TORCH_PROJECT_IMAGE
    from manifests.render import ValidationTarget

    target = ValidationTarget.for_profile(config)
    if (
        target is None
        or not TRAINER.enabled(config)
        or TRAINER.settings(config).torch_image is not None
        or not target.group.efa_enabled
    ):
        return None
    built = built_image(config, operator, EFA_TORCH_PROJECT_IMAGE, aws)
    if built is None or built[2] is None or built[2].startswith("cannot ask ECR"):
        return None
    impl, image, missing = built
    return (
        f"the runtime's image {image} is not in ECR ({missing}): run its build (make outputs lists "
        f"build_commands.{impl}), then verify again"
    )


def command_tenant_guide(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.tenant_guide import UnknownTenant, tenant_guide

    if not config.workloads.tenants:
        print(f"profile {config.name} has no tenants (workloads.tenants)", file=sys.stderr)
        return EXIT_USER_ERROR
    try:
        print(tenant_guide(config, args.tenant or config.workloads.tenants[0].name), end="")
    except UnknownTenant as error:
        print(error, file=sys.stderr)
        return EXIT_USER_ERROR
    return 0


def command_pause(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.cleanup import platform_objects
    from operate.cluster_access import ClusterAccessError, run_aws
    from operate.layers import Operator
    from operate.pause import pause, pause_plan, resume
    from operate.providers import provider_env

    if not args.yes and not sys.stdin.isatty():
        tell(
            f"Approve with --yes (make {args.command} AUTO_APPROVE=1).\n"
            f"refusing to {args.command} without confirmation: there is no terminal to ask on."
        )
        return EXIT_USER_ERROR
    outdir = Path(args.outdir)
    synthesize_profile(config, outdir)
    operator = Operator(outdir / "stacks", env=provider_env(outdir), log=lambda _: None)
    try:
        owned = platform_objects(config, "workloads")
        node_pools, cluster_queues = owned.node_pools, owned.cluster_queues
        kubectl = profile_kubectl(config, operator, outdir / "kubeconfig")  # the profile's cluster, or stop here
        if args.command == "resume":
            if not (args.yes or ask(f"Scale the node groups of {config.name} back to the profile's sizes?")):
                return 1
            resume(config, aws=run_aws, kubectl=kubectl, node_pools=node_pools, cluster_queues=cluster_queues)
            print("resumed")
            return 0
        for line in pause_plan(config, node_pools, cluster_queues):
            print(line)
        if not (args.yes or ask("Pause?")):
            return 1
        pause(config, kubectl=kubectl, aws=run_aws, node_pools=node_pools, cluster_queues=cluster_queues)
    except ClusterAccessError as error:
        tell(f"{args.command} stopped: {error}")
        return 1
    return 0


def command_cost(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.cluster_access import run_aws
    from operate.cost import PriceUnavailable, estimate, report

    try:
        cost = estimate(config, run_aws)
    except PriceUnavailable as error:
        tell(
            f"cannot price {config.name}: {error}.\nThe AWS Price List API needs AWS credentials with "
            "pricing:GetProducts (any region; it answers from us-east-1)."
        )
        return 1
    print("\n".join(report(config, cost)))
    from profiles.quotas import node_count_warnings

    for warning in node_count_warnings(config):
        print(warning, file=sys.stderr)
    return 0


def command_quotas(config: PlatformConfig, args: argparse.Namespace) -> int:
    from profiles.quotas import node_count_warnings, quota_needs

    for warning in node_count_warnings(config):
        print(warning, file=sys.stderr)
    needs = quota_needs(config)
    print(f"EC2 vCPU quotas {config.name} needs in {config.region} (at its largest sizes):")
    for need in needs:
        print(f"  {need.code}  {need.name}: {need.vcpus} vCPUs ({'; '.join(need.reasons)})")
    print("Check what the account has, and ask for more where it is below (needs AWS credentials):")
    for need in needs:
        quota = f"--service-code ec2 --quota-code {need.code} --region {config.region}"
        print(f"  aws service-quotas get-service-quota {quota}")
        print(f"  aws service-quotas request-service-quota-increase {quota} --desired-value {need.vcpus}")
    print(
        "Capacity Blocks are bought separately and not counted here; On-Demand P capacity is often unavailable: "
        "cluster.gpu_node_groups[].capacity takes a Capacity Reservation or a Capacity Block."
    )
    if not args.check:
        return 0
    from operate.capacity import account_check
    from operate.cluster_access import run_aws

    check = account_check(config, run_aws)  # run_aws: one line when there is no AWS CLI
    for line in check.notes:
        tell(f"note: {line}")
    for problem in check.problems:
        tell(problem)
    if check.unread:
        tell(
            "Fix what stops these reads, then check again (make quotas CHECK=1). Not read, so not checked:\n"
            + "\n".join(f"- {line}" for line in check.unread)
        )
        print(
            f"not checked: {len(check.unread)} of the account's quotas and reservations could not be read, "
            "so whether they are enough is not known",
            file=sys.stderr,
        )
        return 1
    if check.problems:
        return 1
    print("the account's quotas and the GPU groups' reservations fit the profile (the deploy checks them again)")
    return 0


COMMANDS: dict[str, Callable[[PlatformConfig, argparse.Namespace], int]] = {
    "synth": command_synth,
    "hcl": command_hcl,
    "plan": command_operate,
    "deploy": command_operate,
    "destroy": command_operate,
    "outputs": command_outputs,
    "validate": command_validate,
    "pause": command_pause,
    "resume": command_pause,
    "manifests": command_manifests,
    "verify": command_verify,
    "diagram": command_diagram,
    "quotas": command_quotas,
    "cost": command_cost,
    "tenant-guide": command_tenant_guide,
}


def write_manifests(config: PlatformConfig, outdir: Path, *, image: str | None, nccl_image: str) -> int:
    import yaml

    from manifests.render import render

    files = render(config, image=image, nccl_image=nccl_image)
    if not files:
        print(f"profile {config.name} has no GPU node group: nothing to validate", file=sys.stderr)
        return EXIT_USER_ERROR
    # The folder is the command's own: it writes a list of its files there, replaces only those on
    # the next run, and refuses a non-empty folder it did not write (a user's profile could be in it).
    outdir.mkdir(parents=True, exist_ok=True)
    written = outdir / MANIFESTS_WRITTEN
    if not written.is_file() and any(outdir.iterdir()):
        print(
            f"{outdir} is not empty and main.py manifests did not write it: give --outdir a new or empty folder",
            file=sys.stderr,
        )
        return EXIT_USER_ERROR
    for stale in written.read_text().split() if written.is_file() else []:
        (outdir / Path(stale).name).unlink(missing_ok=True)
    for file_name, objects in files.items():
        (outdir / file_name).write_text(yaml.safe_dump_all(objects, sort_keys=False))
    written.write_text("\n".join(sorted(files)) + "\n")
    hint = (
        ""
        if image
        else (" (no container test: pass IMAGE=<repository url>:<tag> from the build layer's repository_urls output)")
    )
    print(f"wrote {', '.join(sorted(files))} to {outdir}{hint}")
    return 0


def verify(
    config: PlatformConfig, *, image: str | None, kubectl: Kubectl, nccl_image: str, trainjob_blocked: str | None = None
) -> int:
    from manifests.verify import run_checks

    results = run_checks(config, image=image, kubectl=kubectl, nccl_image=nccl_image, trainjob_blocked=trainjob_blocked)
    for result in results:
        print(f"{'PASS' if result.passed else 'FAIL'} {result.name}: {result.detail}")
    return 0 if all(result.passed for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
