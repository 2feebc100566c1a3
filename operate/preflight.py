"""Deploy pre-flight: before the first layer is applied, check what the later layers will need.

A deploy applies the cluster, storage and build layers (30+ minutes, EKS, NAT and GPU nodes
billing) before the addons layer asks for its first input. Everything a later layer needs from
the user is checked first, so a missing item stops the deploy with what to do and nothing applied:
- the layers' input variables (the admin passwords), evaluated by Terraform itself on a
  variables-only copy of the layers' declarations, so the check and the apply can never disagree;
- the S3 state bucket, when the profile names one;
- a way to the cluster's API endpoint, for the Kubernetes layers (the helm and kubernetes
  providers call it at plan time);
- before the addons layer, the images the build layer builds for the enabled add-ons (MLflow's):
  only a CodeBuild run pushes them, and the addons layer's apply waits for pods that run them;
- before the cluster layer, the account's EC2 vCPU quotas against what the apply launches and each
  GPU group's reservation against the profile (operate/capacity.py); what cannot be read stops the
  deploy too, unless the user skips it (--skip-quota-check, with a warning naming it).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from operate.cluster_access import ClusterAccessError, access_options, api_tunnel
from operate.kubectl import Kubectl
from operate.layer_folders import StateUnreadable
from operate.layers import KUBERNETES_LAYERS
from operate.messages import wrap
from operate.tools import ToolMissing

if TYPE_CHECKING:
    from operate.layers import Operator
    from profiles import PlatformConfig

PREFLIGHT_FOLDER = "preflight"


def variable_problems(operator: Operator, layers: list[str]) -> list[str]:
    """The variables the layers declare, with the values they will get at apply time (TF_VAR_* in
    the environment): an unset one is reported at once; the set ones are judged by Terraform, which
    evaluates their validations (a variables-only configuration: no provider, no state)."""
    declared: dict[str, Any] = {}
    for layer in layers:
        declared.update(operator.stack(layer).get("variable", {}))
    unset = [name for name, body in declared.items() if "default" not in body and f"TF_VAR_{name}" not in operator.env]
    problems = [
        f"Set TF_VAR_{name} before deploying: export TF_VAR_{name}='...'\n"
        f"variable {name} is not set. {declared[name].get('description', '')}".strip()
        for name in unset
    ]
    judged = {name: body for name, body in declared.items() if name not in unset}
    if not judged:
        return problems
    folder = operator.stacks_dir.parent / PREFLIGHT_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "variables.tf.json").write_text(json.dumps({"variable": judged}, indent=2))
    init = operator.terraform_in(folder, "init", "-backend=false", "-input=false")
    if init.returncode != 0:
        return [*problems, f"terraform could not load the layers' variables: {(init.stderr or init.stdout).strip()}"]
    planned = operator.terraform_in(folder, "plan", "-input=false", "-lock=false", "-json")
    for line in planned.stdout.splitlines():
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        diagnostic = message.get("diagnostic") if message.get("type") == "diagnostic" else None
        if diagnostic and diagnostic.get("severity") == "error":
            problems.append(f"{diagnostic['summary']}: {diagnostic.get('detail', '')}".strip(": "))
    if planned.returncode != 0 and len(problems) == len(unset):
        problems.append(f"terraform could not evaluate the layers' variables: {planned.stderr.strip()}")
    return problems


def state_bucket_problems(config: PlatformConfig, aws: str = "aws", env: dict[str, str] | None = None) -> list[str]:
    """The S3 state bucket exists and this identity can use it (aws s3api head-bucket)."""
    bucket = config.state.bucket
    if bucket is None:
        return []
    if shutil.which(aws) is None:
        return [f"{ToolMissing(aws)}\nthe state bucket s3://{bucket} cannot be checked without it"]
    region = config.state.region or config.region
    checked = subprocess.run(
        [aws, "s3api", "head-bucket", "--bucket", bucket, "--region", region], capture_output=True, text=True, env=env
    )
    if checked.returncode != 0:
        return [
            "Create the state bucket as docs/operations.md (State) shows, or fix state.bucket / state.region.\n"
            f"the state bucket s3://{bucket} ({region}) cannot be used: {checked.stderr.strip() or 'not found'}"
        ]
    return []


def endpoint_reachable(endpoint: str, timeout: float = 5.0) -> bool:
    parsed = urlparse(endpoint)
    try:
        with socket.create_connection((parsed.hostname or endpoint, parsed.port or 443), timeout=timeout):
            return True
    except OSError:
        return False


def api_problems(
    config: PlatformConfig, operator: Operator, layers: list[str], reachable: Callable[[str], bool] = endpoint_reachable
) -> list[str]:
    """The Kubernetes layers need the API endpoint, or the local forward TF_VAR_api_tunnel names,
    from where this deploy runs."""
    if not any(layer in KUBERNETES_LAYERS for layer in layers):
        return []
    try:
        tunnel = api_tunnel(operator.env)
        endpoint = operator.outputs("cluster").get("endpoint", {}).get("value")
    except (ClusterAccessError, StateUnreadable) as error:
        return [str(error)]
    if endpoint is None:  # the cluster is not deployed yet
        if config.cluster.endpoint_public_access:
            return []
        return [
            "Deploy the AWS layers first (make deploy LAYER=aws), then the rest from where the endpoint "
            "answers.\n"
            "Why: the addons and workloads layers call the cluster's API endpoint, which this profile keeps "
            "private: only the VPC this deploy creates reaches it.\n" + access_options(None)
        ]
    if tunnel is not None:
        silent = f"Start the forward {tunnel} first: nothing answers there (TCP).\n"
    else:
        silent = (
            f"Deploy from where the endpoint answers: the cluster's API endpoint {endpoint} does not answer "
            "from this machine (TCP 443).\n"
        )
    return [] if reachable(tunnel or endpoint) else [silent + access_options(endpoint)]


def user_secret_problems(
    config: PlatformConfig, operator: Operator, layers: list[str], kubectl: Callable[[], Kubectl]
) -> list[str]:
    """The Secrets a user creates for the add-ons (an OIDC client secret, admin passwords kept out
    of Terraform) exist where the addons layer will read them."""
    if "addons" not in layers:
        return []
    from addons.registry import ADDONS

    wanted = [
        (addon.release_namespace(addon.settings(config)), name)
        for addon in ADDONS
        if addon.enabled(config)
        for name in addon.user_secrets(addon.settings(config))
    ]
    if not wanted:
        return []
    try:
        deployed = bool(operator.outputs("cluster").get("endpoint"))
    except StateUnreadable as error:
        return [str(error)]
    if not deployed:
        return [
            "make deploy LAYER=cluster first, create the Secrets below in it, then deploy the rest.\n"
            f"Why: the addons layer reads Secrets you create ({', '.join(f'{ns}/{n}' for ns, n in wanted)}), "
            "which can only exist once the cluster does."
        ]
    try:
        run = kubectl()
    except ClusterAccessError as error:
        return [f"cannot check the Secrets the addons layer reads: {error}"]
    missing = [
        f"{ns}/{name}" for ns, name in wanted if run(["get", "secret", name, "-n", ns, "-o", "name"]).returncode != 0
    ]
    return [
        f"Secret {secret} does not exist: create it before the addons layer (see the setting's description)"
        for secret in missing
    ]


def capacity_problems(
    config: PlatformConfig,
    aws: str = "aws",
    env: dict[str, str] | None = None,
    *,
    note: Callable[[str], None] = print,
    skip_unread: bool = False,
) -> list[str]:
    """EC2 quotas below what the apply launches, GPU groups' reservations EC2 describes otherwise,
    and (unless `skip_unread`, the user's --skip-quota-check) what could not be read: all stop the
    deploy (operate/capacity.py). Quotas below the profile's largest sizes are printed as notes;
    with `skip_unread`, a warning names what could not be read and goes unchecked."""
    from operate.capacity import AccountCheck, account_check

    if shutil.which(aws) is None:
        check = AccountCheck(unread=[f"every EC2 quota and reservation: {ToolMissing(aws)}"])
    else:

        def run(args: list[str]) -> subprocess.CompletedProcess[str]:
            return subprocess.run([aws, *args], capture_output=True, text=True, env=env, timeout=120)

        check = account_check(config, run)
    for line in [wrapped for told in check.notes for wrapped in wrap(f"note: {told}")]:
        note(line)
    unread = "\n".join(f"- {line}" for line in check.unread)
    if not check.unread:
        return check.problems
    if skip_unread:
        for line in wrap(f"warning: --skip-quota-check: deploying without these, which could not be read:\n{unread}"):
            note(line)
        return check.problems
    return [
        *check.problems,
        "Let this deploy read the EC2 quotas and reservations below, or deploy without them: make deploy "
        "SKIP_QUOTA_CHECK=1 (a warning names what goes unchecked).\n"
        f"Not read, so not checked:\n{unread}",
    ]


def project_image_problems(
    config: PlatformConfig, operator: Operator, layers: list[str], aws: str = "aws"
) -> list[str]:
    """Images of this project the enabled add-ons run (AddonDefinition.project_images) that ECR
    does not have yet, when the addons layer is to be applied: its apply waits for their pods (MLflow's
    setup Job), which cannot pull them, and fails at the wait's timeout. A build layer not deployed
    yet has pushed nothing; where ECR cannot be asked (no AWS CLI), nothing is said."""
    from components.images import project_image_tag
    from profiles.built_images import addon_images, image_architecture, tag_for_architecture

    images = [image for _, image in addon_images(config)]
    if "addons" not in layers or not images:
        return []
    try:
        repositories = operator.outputs("build").get("repository_urls", {}).get("value", {})
    except StateUnreadable:
        repositories = {}
    problems = []
    for image in images:
        tag = tag_for_architecture(project_image_tag(image), image_architecture(config, image))
        build = f"run build_commands.{image} (make outputs prints it) and wait for the build"
        if image not in repositories:
            problems.append(
                f"the addons layer runs the build layer's {image} image ({config.name}/{image}:{tag}), which only "
                f"its CodeBuild project pushes: deploy LAYER=aws first, {build}, then deploy the rest"
            )
            continue
        if shutil.which(aws) is None:
            continue
        ask = ["ecr", "describe-images", "--region", config.region, "--repository-name", f"{config.name}/{image}"]
        try:
            found = subprocess.run(
                [aws, *ask, "--image-ids", f"imageTag={tag}"],
                capture_output=True,
                text=True,
                env=operator.env,
                timeout=120,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if found.returncode != 0 and "NotFoundException" in found.stderr:
            problems.append(
                f"ECR has no {repositories[image]}:{tag}, which the addons layer runs ({image}): {build}, then deploy"
            )
    return problems


def deploy_preflight(
    config: PlatformConfig,
    operator: Operator,
    aws: str = "aws",
    reachable: Callable[[str], bool] = endpoint_reachable,
    kubectl: Callable[[], Kubectl] | None = None,
    *,
    skip_quota_check: bool = False,
) -> Callable[[list[str]], list[str]]:
    """The check `Operator.run("deploy", ...)` makes before its first apply. `kubectl` binds
    kubectl to the profile's cluster (only called when that cluster exists); `skip_quota_check`
    lets the deploy go on past quotas and reservations that could not be read."""

    def check(layers: list[str]) -> list[str]:
        api = api_problems(config, operator, layers, reachable)
        return [
            *state_bucket_problems(config, aws, operator.env),
            *variable_problems(operator, layers),
            *api,
            *(user_secret_problems(config, operator, layers, kubectl) if kubectl and not api else []),
            *project_image_problems(config, operator, layers, aws),
            *(
                capacity_problems(config, aws, operator.env, skip_unread=skip_quota_check)
                if "cluster" in layers
                else []
            ),
        ]

    return check
