"""The one way the operate and verify commands run kubectl: a runner that takes kubectl's
arguments and returns the finished process, so callers (and tests, with a fake) read its output."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

from operate.tools import require_tool

Kubectl = Callable[[list[str]], subprocess.CompletedProcess[str]]
# What kubectl prints for a kind whose CRD is not installed (e.g. Karpenter's, Kueue's).
NO_SUCH_KIND = "the server doesn't have a resource type"

# Long enough for a delete that waits on nodes to drain or a job that runs NCCL across nodes.
TIMEOUT_SECONDS = 3600


def kubectl(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([require_tool("kubectl"), *args], capture_output=True, text=True, timeout=TIMEOUT_SECONDS)
