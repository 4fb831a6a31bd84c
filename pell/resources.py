"""Where the grammar and templates are (beside the package in a checkout, inside it in a
wheel), and the one Jinja2 environment that lays out every generated file. Both the module
code generation and the runtime package use it, so it lives here, below both."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jinja2

_PACKAGE_DIR = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    """The `grammar` or `templates` folder, wherever this copy of pellc keeps it."""
    for candidate in (_PACKAGE_DIR / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"pellc is installed without its {name}/ folder")


@functools.cache
def compiler_fingerprint() -> str:
    """What this copy of pellc is: its version and a hash of its own code, grammar, templates
    and shipped stubs. A build reuses an earlier output only when this is unchanged, so a
    checkout whose compiler changed (same version number) does not keep stale outputs."""
    import hashlib

    from pell import __version__

    digest = hashlib.sha256()
    folders = [_PACKAGE_DIR, resource_dir("grammar"), resource_dir("templates")]
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.suffix in (".py", ".lark", ".j2", ".pell") and "__pycache__" not in path.parts:
                digest.update(path.relative_to(folder).as_posix().encode())
                digest.update(path.read_bytes())
    return f"{__version__}+{digest.hexdigest()[:16]}"


def cache_dir() -> Path:
    """pellc's directory in the user's cache: the analysed grammar, compiled templates."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pellc"


@functools.cache
def template_environment() -> jinja2.Environment:
    """The templates with StrictUndefined, no autoescaping, and whitespace kept as written.

    Compiled templates are kept in the user's cache (Jinja's bytecode cache: keyed by the
    template's name and path, checked against its source, written to a temporary file and
    renamed), so a run does not compile them again; without a writable cache they are
    compiled in memory as before."""
    import jinja2  # imported when first used: `pellc --version` stays quick

    directory = cache_dir() / f"templates-jinja{jinja2.__version__}"
    bytecode_cache: jinja2.BytecodeCache | None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        bytecode_cache = jinja2.FileSystemBytecodeCache(str(directory))
    except OSError:
        bytecode_cache = None
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
        bytecode_cache=bytecode_cache,
    )


def pip_install(requirement: str) -> str:
    """The command that installs a missing dependency with this interpreter's pip: it works
    wherever pellc was installed from (a clone, a wheel, a venv)."""
    import shlex
    import sys

    return shlex.join([sys.executable, "-m", "pip", "install", requirement])
