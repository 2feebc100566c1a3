"""Where Terraform gets its providers: an offline filesystem mirror of hashicorp/aws when this
machine has one (the tests and `make plan|deploy|destroy` find the same one), else the registry.

The mirror is TF_PROVIDER_MIRROR (the folder holding registry.terraform.io/) or is discovered
under the usual roots; it is never hard-coded. With a mirror, Terraform reads a CLI config this
module writes (TF_CLI_CONFIG_FILE): aws from the mirror, every other provider from the registry.
"""

from __future__ import annotations

import os
from pathlib import Path

from profiles.versions import AWS_PROVIDER_VERSION

AWS_PROVIDER = "registry.terraform.io/hashicorp/aws"
_SEARCH_ROOTS = ("/opt", "/usr/local/share", "/usr/share", "~/.terraform.d", "~/.local/share/terraform")


def find_provider_mirror() -> Path | None:
    explicit = os.environ.get("TF_PROVIDER_MIRROR")
    if explicit:
        return Path(explicit)
    wanted = f"{AWS_PROVIDER}/{AWS_PROVIDER_VERSION}"
    for root in _SEARCH_ROOTS:
        base = Path(root).expanduser()
        if not base.is_dir():
            continue
        for depth in ("", "*/", "*/*/", "*/*/*/"):
            for hit in base.glob(f"{depth}{wanted}"):
                return hit.parents[3]  # the folder holding registry.terraform.io/
    return None


def mirror_cli_config(mirror: Path, path: Path) -> Path:
    """Write a Terraform CLI config that installs aws from `mirror` and the rest directly."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "provider_installation {\n"
        f'  filesystem_mirror {{\n    path    = "{mirror}"\n    include = ["{AWS_PROVIDER}"]\n  }}\n'
        f'  direct {{\n    exclude = ["{AWS_PROVIDER}"]\n  }}\n'
        "}\n"
    )
    return path


def provider_env(workdir: Path) -> dict[str, str]:
    """Environment for Terraform runs: the mirror's CLI config when there is a mirror, else
    nothing (the registry). The update-check call home is always off."""
    env = {"CHECKPOINT_DISABLE": "1"}
    mirror = find_provider_mirror()
    if mirror is not None and (mirror / AWS_PROVIDER).is_dir():
        env["TF_CLI_CONFIG_FILE"] = str(mirror_cli_config(mirror, workdir / "terraform.rc"))
    return env
