"""Throwaway PostgreSQL servers for tests, of two major versions: 15 (Debian's server binaries:
machines of this kind carry postgresql-15, and `make test` unpacks the package into .tools where
they do not) and 16 (the pgserver wheel's, a dev dependency). RDS runs 17; 16 is the release that
changed the role-membership rules 17 keeps. Each server gets a data directory in a temporary
folder, a Unix socket only (no TCP port) and trust authentication. initdb refuses to run as root,
so under root the server runs as `nobody`."""

from __future__ import annotations

import atexit
import functools
import glob
import importlib.util
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


MAJOR_VERSIONS = (15, 16)


def _usable(folder: Path) -> bool:
    return all(os.access(folder / tool, os.X_OK) for tool in ("initdb", "pg_ctl", "postgres"))


def server_binaries(major: int) -> Path | None:
    """A bin folder with this major version's initdb, pg_ctl and postgres, or None."""
    if major == 16:
        found = importlib.util.find_spec("pgserver")  # located, not imported (its import sets up run-time folders)
        if found is None or not found.submodule_search_locations:
            return None
        folder = Path(found.submodule_search_locations[0]) / "pginstall" / "bin"
        return folder if _usable(folder) else None
    for pattern in SEARCHED:
        for found in glob.glob(pattern):
            folder = Path(found)
            if folder.parent.name == str(major) and _usable(folder):
                return folder
    return None


def _as_server_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *command]


@functools.cache
def _reachable_by_server_user(bin_dir: Path) -> Path:
    """`bin_dir`, or under root a copy of its installation that `nobody` can reach: a checkout in
    a folder only root may enter (mktemp -d makes those) hides the wheel's binaries from it. Copied
    once per session, beside the servers' folders."""
    if os.geteuid() != 0:
        return bin_dir
    probe = subprocess.run(_as_server_user(["test", "-x", str(bin_dir / "initdb")]), check=False)
    if probe.returncode == 0:
        return bin_dir
    copy = Path(tempfile.mkdtemp(prefix="test-postgres-install-"))
    atexit.register(shutil.rmtree, copy, True)
    os.chmod(copy, 0o755)
    # The binaries find their libraries and share files by relative paths: keep the layout.
    wheel_root = bin_dir.parents[2]  # site-packages: pgserver/pginstall/bin, and auditwheel's pgserver.libs
    if (wheel_root / "pgserver.libs").is_dir():
        root, parts = wheel_root, [bin_dir.parent.relative_to(wheel_root), Path("pgserver.libs")]
    else:  # Debian's package unpacked: usr/lib/postgresql/<major>/bin and usr/share/postgresql/<major>
        root, parts = bin_dir.parents[4], [Path("usr")]
    for part in parts:
        shutil.copytree(root / part, copy / part, symlinks=True)
    return copy / bin_dir.relative_to(root)


def _run(command: list[str]) -> None:
    done = subprocess.run(_as_server_user(command), capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stdout}{done.stderr}")


@contextmanager
def postgres_server(bin_dir: Path) -> Iterator[dict[str, str]]:
    """Start a server in a folder of its own (one the server's user can reach: pytest's folders
    are root's alone); yield libpq's connection settings (host is the socket folder, user the
    bootstrap superuser `postgres`); stop it and remove its files."""
    bin_dir = _reachable_by_server_user(bin_dir)
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
