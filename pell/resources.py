"""Where the grammar and templates are (beside the package in a checkout, inside it in a
wheel), and the one Jinja2 environment that lays out every generated file. Both the module
code generation and the runtime package use it, so it lives here, below both."""

from __future__ import annotations

import functools
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
def template_environment() -> jinja2.Environment:
    """The templates with StrictUndefined, no autoescaping, and whitespace kept as written."""
    import jinja2  # imported when first used: `pellc --version` stays quick

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
