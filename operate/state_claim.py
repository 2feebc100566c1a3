"""Which profile file owns a profile name's state: recorded where the state lives.

Two profile files with the same `name` would share one state (and one cluster). The first file
that works with a name claims it, in the state location itself, so the claim survives `make clean`
and fresh clones and is seen by everyone who shares an S3 backend: state/<name>/.profile-source for
local state, s3://<bucket>/<key_prefix>/<name>/profile-source for the S3 backend. A profile is named
by its path inside the project (the same on every clone), else by its absolute path. Shipped names
cannot be claimed by a copy at all (profiles/loader.py refuses it).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from operate.cluster_access import AwsCli

LOCAL_MARKER = ".profile-source"
S3_MARKER = "profile-source"
# Shipped profiles whose file was renamed: a claim by the former file is the same profile's.
FORMER_IDENTITIES = {"profiles/gpu-validation.yaml": ("profiles/g6-validation.yaml",)}


def _same_profile(owner: str, identity: str) -> bool:
    return owner == identity or owner in FORMER_IDENTITIES.get(identity, ())


def profile_identity(path: Path, project_root: Path) -> str:
    resolved = path.resolve()
    return str(resolved.relative_to(project_root)) if resolved.is_relative_to(project_root) else str(resolved)


def _clash(name: str, identity: str, owner: str, where: str) -> str:
    return (
        f"profile {identity} has the name {name!r} of {owner}: both would share one state ({where}) and one "
        f"cluster. Give the new profile its own `name` (or, if {owner} was renamed to {identity}, delete the "
        f"claim in {where})."
    )


def claim_local(state_dir: Path, name: str, identity: str) -> str | None:
    """Claim state/<name>/ for `identity`; the reason it cannot, or None. The folder is its owner's
    only (0700) and so is every file in it (0600): the states and their backups hold the layers'
    secrets. A folder or file left group- or world-readable by an older version is tightened."""
    marker = state_dir / LOCAL_MARKER
    if marker.is_file() and not _same_profile(owner := marker.read_text().strip(), identity):
        return _clash(name, identity, owner, str(marker))
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    state_dir.chmod(0o700)  # mkdir's mode is masked by the umask, and an existing folder keeps its own
    for path in state_dir.iterdir():
        if path.is_file() and not path.is_symlink() and path.stat().st_mode & 0o077:
            path.chmod(0o600)
    marker.write_text(identity + "\n")
    marker.chmod(0o600)
    return None


def _s3_write_once(
    bucket: str, key: str, region: str, text: str | None, *, what: str, aws: AwsCli
) -> tuple[str | None, str | None]:
    """Read s3://<bucket>/<key>; where it is absent, write `text` there (None: only read) with a
    conditional write, so that the first writer wins. Returns what the object already held (None:
    it was absent) and the problem that stopped it (None: none)."""
    where = f"s3://{bucket}/{key}"
    with tempfile.TemporaryDirectory() as scratch:
        local = Path(scratch) / Path(key).name
        read = aws(["s3api", "get-object", "--bucket", bucket, "--key", key, "--region", region, str(local)])
        if read.returncode == 0:
            return local.read_text(), None
        if "NoSuchKey" not in read.stderr and "Not Found" not in read.stderr:
            return None, f"cannot read the {what} {where}: {read.stderr.strip()}"
        if text is None:
            return None, None
        local.write_text(text)
        put = ["s3api", "put-object", "--bucket", bucket, "--key", key, "--region", region, "--body", str(local)]
        written = aws([*put, "--if-none-match", "*"])  # a conditional write: the first one wins
        if written.returncode != 0 and "Unknown options" in written.stderr:  # an AWS CLI from before 2024
            written = aws(put)
        if written.returncode != 0 and "PreconditionFailed" in written.stderr:  # written meanwhile: read it
            return _s3_write_once(bucket, key, region, text, what=what, aws=aws)
        if written.returncode != 0:
            return None, f"cannot write the {what} {where}: {written.stderr.strip()}"
    return None, None


def claim_s3(bucket: str, key_prefix: str, region: str, name: str, identity: str, *, aws: AwsCli) -> str | None:
    """Claim <key_prefix>/<name>/ in the state bucket for `identity`; the reason it cannot, or None."""
    key = f"{key_prefix}/{name}/{S3_MARKER}"
    held, problem = _s3_write_once(bucket, key, region, identity + "\n", what="profile claim", aws=aws)
    if problem or held is None:
        return problem
    owner = held.strip()
    return None if _same_profile(owner, identity) else _clash(name, identity, owner, f"s3://{bucket}/{key}")


# The account and region the profile's state was first used with (issue 44 item 4): recorded by the
# first command that asks AWS whose credentials these are, next to the profile claim, so a profile
# without account_id is bound too. JSON: {"account_id": "...", "region": "..."}.
LOCAL_BINDING = ".account-binding"
S3_BINDING = "account-binding"


@dataclass(frozen=True)
class Binding:
    account_id: str
    region: str
    where: str


def _parse_binding(text: str, where: str) -> Binding | str:
    try:
        data = json.loads(text)
        account, region = data["account_id"], data["region"]
    except (ValueError, KeyError, TypeError):
        return f"the account binding {where} is not in the expected form: delete it to record it again"
    if not (isinstance(account, str) and isinstance(region, str)):
        return f"the account binding {where} is not in the expected form: delete it to record it again"
    return Binding(account, region, where)


def _binding_text(account: str, region: str) -> str:
    return json.dumps({"account_id": account, "region": region}) + "\n"


def bind_local(state_dir: Path, account: str, region: str, *, record: bool) -> Binding | str | None:
    """The binding recorded in state/<name>/ (a reason when it cannot be read); with `record`, the
    first call writes (account, region) there, owner-only like the states, and returns it."""
    marker = state_dir / LOCAL_BINDING
    if marker.is_file():
        return _parse_binding(marker.read_text(), str(marker))
    if not record:
        return None
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    state_dir.chmod(0o700)
    # Created 0600 from the first byte (os.open's mode), not tightened after the write.
    descriptor = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(_binding_text(account, region))
    marker.chmod(0o600)
    return Binding(account, region, str(marker))


def bind_s3(
    bucket: str, key_prefix: str, state_region: str, name: str, *, account: str, region: str, record: bool, aws: AwsCli
) -> Binding | str | None:
    """As bind_local, in s3://<bucket>/<key_prefix>/<name>/account-binding (a conditional first write)."""
    key = f"{key_prefix}/{name}/{S3_BINDING}"
    where = f"s3://{bucket}/{key}"
    text = _binding_text(account, region) if record else None
    held, problem = _s3_write_once(bucket, key, state_region, text, what="account binding", aws=aws)
    if problem:
        return problem
    if held is not None:
        return _parse_binding(held, where)
    return Binding(account, region, where) if record else None
