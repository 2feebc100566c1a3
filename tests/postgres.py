"""A throwaway PostgreSQL server for tests: Debian's server binaries (machines of this kind carry
postgresql-15; `make test` unpacks the package into .tools where they do not), a data directory in
a temporary folder, a Unix socket only (no TCP port), trust authentication. initdb refuses to run
as root, so under root the server runs as `nobody`."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEARCHED = (
    str(ROOT / ".tools/postgresql/usr/lib/postgresql/*/bin"),
    "/usr/lib/postgresql/*/bin",
)


def server_binaries() -> Path | None:
    """The newest PostgreSQL bin folder with initdb, pg_ctl and postgres, or None."""
    for pattern in SEARCHED:
        found = sorted(glob.glob(pattern), key=lambda p: int(Path(p).parent.name))
        for folder in reversed(found):
            if all(os.access(Path(folder) / tool, os.X_OK) for tool in ("initdb", "pg_ctl", "postgres")):
                return Path(folder)
    return None


def _as_server_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *command]


def _run(command: list[str]) -> None:
    done = subprocess.run(_as_server_user(command), capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stdout}{done.stderr}")


@contextmanager
def postgres_server(bin_dir: Path) -> Iterator[dict[str, str]]:
    """Start a server in a folder of its own (one the server's user can reach: pytest's folders
    are root's alone); yield libpq's connection settings (host is the socket folder, user the
    bootstrap superuser `postgres`); stop it and remove its files."""
    workdir = Path(tempfile.mkdtemp(prefix="test-postgres-"))
    if os.geteuid() == 0:
        shutil.chown(workdir, user="nobody")
    data, log = workdir / "data", workdir / "server.log"
    _run([str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"])
    options = f"-k {workdir} -c listen_addresses='' -c fsync=off"
    _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log), "-w", "start"])
    try:
        yield {"host": str(workdir), "port": "5432", "user": "postgres", "dbname": "postgres"}
    finally:
        subprocess.run(
            _as_server_user([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(workdir, ignore_errors=True)
