"""The MLflow pod's database login: a native sidecar (run with the MLflow image, which has boto3
and psycopg2) that keeps a libpq password file current from the RDS-managed secret.

Why a password file: RDS keeps MLflow's master password in Secrets Manager and rotates it. libpq
reads PGPASSFILE on every new connection, so refreshing the file carries MLflow across a
rotation without a restart, and the password never passes through Helm values, Kubernetes
Secrets or Terraform state. It lives only in this pod's memory-backed volume.

TLS: libpq verifies the server (PGSSLMODE=verify-full): the certificate must chain to Amazon RDS's
certificate authorities and name the database's host. Their bundle (PGSSLROOTCERT) is fetched once,
over HTTPS checked against the system's CAs, from RDS's trust store (RDS_CA_BUNDLE_URL), into the
same memory-backed folder, before the first connection; the server reads it there too.

Environment: DB_SECRET_ARN, PGPASSFILE, READY_FILE, AUTH_DATABASE (created once, for MLflow's
basic-auth tables), REFRESH_SECONDS, RDS_CA_BUNDLE_URL, and libpq's
PGHOST/PGPORT/PGDATABASE/PGSSLMODE/PGSSLROOTCERT.
"""

from __future__ import annotations

import json
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


def ensure_database(name: str) -> None:
    """Create the basic-auth database once (the master user may; MLflow itself does not)."""
    import psycopg2  # in the MLflow image; imported here so the module loads without it
    from psycopg2 import sql

    connection = psycopg2.connect(dbname=os.environ["PGDATABASE"])
    connection.autocommit = True  # CREATE DATABASE cannot run in a transaction
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
            if cursor.fetchone() is None:
                cursor.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    finally:
        connection.close()


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


def refresh(client: Any, environ: dict[str, str], *, ensure: Any = ensure_database, fetch: Any = None) -> None:
    """One round: write the current password; the first time, fetch RDS's CA bundle, make the auth
    database and mark ready."""
    if environ.get("PGSSLROOTCERT"):
        ensure_ca_bundle(environ["PGSSLROOTCERT"], environ["RDS_CA_BUNDLE_URL"], fetch=fetch)
    secret = json.loads(client.get_secret_value(SecretId=environ["DB_SECRET_ARN"])["SecretString"])
    write_passfile(environ["PGPASSFILE"], secret["username"], secret["password"])
    if not os.path.exists(environ["READY_FILE"]):
        ensure(environ["AUTH_DATABASE"])
        with open(environ["READY_FILE"], "w"):
            pass


def main() -> None:
    import boto3  # in the MLflow image

    client = boto3.client("secretsmanager")
    environ = dict(os.environ)
    interval = int(environ.get("REFRESH_SECONDS", "300"))
    while True:
        try:
            refresh(client, environ)
        except Exception as error:  # keep the last good file and try again soon
            print(f"db-login: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
            time.sleep(RETRY_SECONDS)
            continue
        time.sleep(interval)


if __name__ == "__main__":
    main()
