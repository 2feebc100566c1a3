"""The command-line tools the operate commands run, found before they are run: a missing one stops
the command with one line naming it and how to install it (never a Python traceback)."""

from __future__ import annotations

import shutil
from pathlib import Path

# What the README's Tools line asks for, and where each is installed from.
INSTALL = {
    "terraform": "install Terraform 1.10 or later, https://developer.hashicorp.com/terraform/install",
    "aws": "install the AWS CLI v2, https://docs.aws.amazon.com/cli/latest/userguide/getting-started-install.html",
    "kubectl": "install kubectl, https://kubernetes.io/docs/tasks/tools/",
}


class ToolMissing(RuntimeError):
    """A tool the command runs is not installed (or not on PATH)."""

    def __init__(self, tool: str):
        self.tool = Path(tool).name
        how = INSTALL.get(self.tool, f"install {self.tool}")
        super().__init__(f"{self.tool} is not installed (or not on PATH): {how}")


def require_tool(name: str, path: str | None = None) -> str:
    """The executable `name` resolves to (on `path`, default PATH), or ToolMissing."""
    found = shutil.which(name, path=path)
    if found is None:
        raise ToolMissing(name)
    return found
