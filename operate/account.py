"""The profile's account binding, checked before anything runs: with `account_id` set, plan,
deploy, destroy, pause, resume, verify and `quotas --check` stop at once when the credentials are
another account's (the AWS provider's allowed_account_ids would stop each layer's plan too, but
only after the earlier layers ran; nothing would stop a pause, which calls EKS directly, or
verify, which would run its jobs on the other account's cluster of the same name).

Without account_id the profile is bound all the same: the first of those commands records the
credentials' account and the profile's region next to the state claim (operate/state_claim.py
bind_local/bind_s3), and every later one refuses another account or region before it plans."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from operate.tools import ToolMissing

if TYPE_CHECKING:
    from operate.state_claim import Binding
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


# The account's binding for these credentials: what is recorded (recording them first if asked
# to), None when nothing is, or why it cannot be read or written.
BindingLookup = Callable[[str], "Binding | str | None"]


def account_refusal(
    config: PlatformConfig, command: str, aws: AwsCli, binding: BindingLookup | None = None
) -> AccountRefusal | None:
    """Why `command` must not run with these credentials, or None. Without account_id the profile
    is bound to the account and region its state recorded (`binding`); with neither, to none."""
    expected = config.account_id
    if expected is None:
        return None if binding is None else _recorded_refusal(config, command, aws, binding)
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


def _recorded_refusal(
    config: PlatformConfig, command: str, aws: AwsCli, binding: BindingLookup
) -> AccountRefusal | None:
    try:  # no AWS CLI: ToolMissing goes on to main.py's one line (exit 2), as before the binding
        actual = caller_account(config.region, aws)
    except ToolMissing:
        raise
    except RuntimeError as error:
        return AccountRefusal(
            "Give this machine AWS credentials (aws sts get-caller-identity tells whose they are).\n"
            f"refusing to {command} {config.name}: its state is bound to the account it was first used with, "
            f"and the account of the credentials could not be read: {error}",
            user_error=False,
        )
    recorded = binding(actual)
    if isinstance(recorded, str):
        return AccountRefusal(f"refusing to {command} {config.name}: {recorded}", user_error=False)
    if recorded is None:
        return None
    if recorded.account_id != actual:
        return AccountRefusal(
            f"Use credentials of account {recorded.account_id}; or, if this profile is meant for account {actual}, "
            f"set account_id: '{actual}' in it and delete {recorded.where} (only if nothing of {config.name} "
            f"remains in account {recorded.account_id}).\n"
            f"refusing to {command} {config.name}: its state is bound to account {recorded.account_id} (recorded "
            f"in {recorded.where}), and the credentials belong to account {actual}. Nothing was planned or changed.",
            user_error=True,
        )
    if recorded.region != config.region:
        return AccountRefusal(
            f"Set region: {recorded.region} back in the profile; or destroy {config.name} in {recorded.region} "
            f"first (with region {recorded.region}), then delete {recorded.where}.\n"
            f"refusing to {command} {config.name}: region: its state is bound to region {recorded.region} "
            f"(recorded in {recorded.where}) and the profile now says {config.region}: the plan would build a "
            "second platform. Nothing was planned or changed.",
            user_error=True,
        )
    return None
