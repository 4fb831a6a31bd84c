"""A hatchling build hook: compile a project's Pell sources into its wheel.

    [tool.hatch.build.hooks.pell]
    sources = ["db"]               # folders (or files) of .pell modules, relative to the project
    destination = "mypkg/sql"      # where the .sql files go inside the wheel (default <name>/sql)
    target = "23ai"                # 23ai, 19c, 12.2 or postgres; default: the project's
                                   # `target` ([tool.pellc] or pell.toml), else 23ai

Registered as the `pell` hatch plugin through the `hatch` entry point group. A module with
errors fails the build with its diagnostics, said as pellc says them, without a traceback:
they are the user's to fix, not a bug of the hook.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, NoReturn

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.plugin import hookimpl


class PellBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "pell"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        from pell.build import InputError, build_tree
        from pell.project import ConfigError, find_config

        root = Path(self.root)
        sources = [root / s for s in self.config.get("sources", ["db"])]
        missing = [str(s) for s in sources if not s.exists()]
        if missing:
            self._fail(f"no such sources: {', '.join(missing)}")
        name = self.metadata.name.replace("-", "_")
        destination = str(self.config.get("destination", f"{name}/sql")).strip("/")
        self._output = Path(tempfile.mkdtemp(prefix="pellc-hatch-"))
        try:
            # as every pellc command: the project's target unless the hook names one
            target = self.config.get("target") or find_config(sources[0]).target or "23ai"
            result = build_tree(sources, self._output, str(target))
        except (InputError, ConfigError) as error:
            self._fail(str(error))
        if result.failed or result.runtime == "failed" or result.file_errors:
            problems = result.rendered_diagnostics()
            problems += "".join(f"{error}\n" for error in result.file_errors)
            self._fail("modules have errors\n" + problems.rstrip("\n"))
        for path in sorted(self._output.rglob("*.sql")):
            relative = path.relative_to(self._output).as_posix()
            build_data["force_include"][str(path)] = f"{destination}/{relative}"

    def _fail(self, message: str) -> NoReturn:
        """Stop the build with `message` on stderr and exit status 1, through the Application
        hatchling gives each hook (`self.app.abort`), instead of a traceback."""
        shutil.rmtree(getattr(self, "_output", ""), ignore_errors=True)
        self.app.abort(f"pell build hook: {message}")
        raise SystemExit(1)  # abort exits; this line is for the type checker

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        shutil.rmtree(getattr(self, "_output", ""), ignore_errors=True)


@hookimpl
def hatch_register_build_hook() -> type[PellBuildHook]:
    return PellBuildHook
