"""The MLflow pod's database login: a native sidecar (run with the MLflow image, which has boto3
and psycopg2) that keeps a libpq password file holding a current IAM authentication token.

Why a token: the server logs in as its application role, not the RDS master user, with IAM
database authentication. Its Pod Identity role may mint tokens for that one role (rds-db:connect);
a token is a SigV4-signed request made locally from the role's credentials and is good for 15
minutes. libpq reads PGPASSFILE on every new connection, so rewriting the file every
REFRESH_SECONDS (well inside the 15 minutes) keeps new connections working; RDS checks a token only
at login, so open connections outlive it. No password exists for this role, and none passes
through Helm values, Kubernetes Secrets or Terraform state.

TLS: libpq verifies the server (PGSSLMODE=verify-full; IAM authentication requires TLS anyway): the
certificate must chain to Amazon RDS's certificate authorities and name the database's host. Their
bundle (PGSSLROOTCERT) is fetched once, over HTTPS checked against the system's CAs, from RDS's
trust store (RDS_CA_BUNDLE_URL), into the same memory-backed folder, before the first connection;
the server reads it there too.

The databases, the roles and their grants are made by the setup job (db_setup.py), which runs once
before the server starts; this sidecar never connects to the database itself.

Environment: PGPASSFILE, READY_FILE, REFRESH_SECONDS, RDS_CA_BUNDLE_URL, AWS_REGION, and libpq's
PGHOST/PGPORT/PGUSER/PGSSLMODE/PGSSLROOTCERT.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

RETRY_SECONDS = 10


def passfile_field(value: str) -> str:
    """A libpq password-file field: backslash and colon are escaped with a backslash."""
    return value.replace("\\", "\\\\").replace(":", "\\:")


def write_passfile(path: str, username: str, password: str) -> None:
    """Replace the file atomically, owner-only (libpq ignores a file others can read)."""
    temporary = f"{path}.tmp"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(f"*:*:*:{passfile_field(username)}:{passfile_field(password)}\n")
    os.replace(temporary, path)


def ensure_ca_bundle(path: str, url: str, *, fetch: Any = None) -> None:
    """Fetch RDS's CA bundle once (HTTPS, verified against the system's CAs); refuse anything that
    is not a list of PEM certificates."""
    if os.path.exists(path):
        return
    if fetch is None:
        import urllib.request

        def fetch(address: str) -> bytes:
            with urllib.request.urlopen(address, timeout=30) as response:
                data: bytes = response.read()
                return data

    text = fetch(url).decode()
    if "-----BEGIN CERTIFICATE-----" not in text or "PRIVATE KEY" in text:
        raise ValueError(f"{url} did not answer a certificate bundle")
    temporary = f"{path}.tmp"
    with open(temporary, "w") as file:
        file.write(text)
    os.replace(temporary, path)


def refresh(rds: Any, environ: dict[str, str], *, fetch: Any = None) -> None:
    """One round: the first time, fetch RDS's CA bundle; write a fresh token; mark ready."""
    if environ.get("PGSSLROOTCERT"):
        ensure_ca_bundle(environ["PGSSLROOTCERT"], environ["RDS_CA_BUNDLE_URL"], fetch=fetch)
    token = rds.generate_db_auth_token(
        DBHostname=environ["PGHOST"],
        Port=int(environ["PGPORT"]),
        DBUsername=environ["PGUSER"],
        Region=environ["AWS_REGION"],
    )
    write_passfile(environ["PGPASSFILE"], environ["PGUSER"], token)
    if not os.path.exists(environ["READY_FILE"]):
        with open(environ["READY_FILE"], "w"):
            pass


def main() -> None:
    import boto3  # in the MLflow image

    environ = dict(os.environ)
    rds = boto3.client("rds", region_name=environ["AWS_REGION"])
    interval = int(environ.get("REFRESH_SECONDS", "300"))
    while True:
        try:
            refresh(rds, environ)
        except Exception as error:  # keep the last good file and try again soon
            print(f"db-login: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
            time.sleep(RETRY_SECONDS)
            continue
        time.sleep(interval)


if __name__ == "__main__":
    main()
