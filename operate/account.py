"""The profile's account binding, checked before anything runs: with `account_id` set, plan,
deploy, destroy, pause, resume, verify and `quotas --check` stop at once when the credentials are
another account's (the AWS provider's allowed_account_ids would stop each layer's plan too, but
only after the earlier layers ran; nothing would stop a pause, which calls EKS directly, or
verify, which would run its jobs on the other account's cluster of the same name)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from operate.tools import ToolMissing

if TYPE_CHECKING:
    from profiles import PlatformConfig

AwsCli = Callable[[list[str]], subprocess.CompletedProcess[str]]


@dataclass(frozen=True)
class AccountRefusal:
    message: str
    user_error: bool
    """True: the credentials are another account's (exit 2); False: they could not be read."""


def caller_account(region: str, aws: AwsCli) -> str:
    """The account of the credentials this machine uses (aws sts get-caller-identity); raises
    RuntimeError with the AWS CLI's reason when it cannot tell."""
    ask = ["sts", "get-caller-identity", "--query", "Account", "--output", "text", "--region", region]
    try:
        answer = aws(ask)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise RuntimeError(str(error)) from None
    account = answer.stdout.strip()
    if answer.returncode != 0 or not (len(account) == 12 and account.isascii() and account.isdigit()):
        raise RuntimeError((answer.stderr or answer.stdout).strip() or f"exit status {answer.returncode}")
    return account


def account_refusal(config: PlatformConfig, command: str, aws: AwsCli) -> AccountRefusal | None:
    """Why `command` must not run with these credentials, or None (also when the profile sets no
    account_id: it is then bound to none)."""
    expected = config.account_id
    if expected is None:
        return None
    try:
        actual = caller_account(config.region, aws)
    except (RuntimeError, ToolMissing) as error:
        return AccountRefusal(
            f"Give this machine AWS credentials of account {expected} (aws sts get-caller-identity tells whose "
            f"they are).\nrefusing to {command} {config.name}: its account_id is {expected}, and the account of the "
            f"credentials could not be read: {error}",
            user_error=False,
        )
    if actual != expected:
        return AccountRefusal(
            f"Use credentials of account {expected}, or a profile made for account {actual}.\n"
            f"refusing to {command} {config.name}: account_id: the credentials belong to account {actual} "
            f"(got {actual}; allowed: {expected}, the profile's account_id). Nothing was planned or changed.",
            user_error=True,
        )
    return None
