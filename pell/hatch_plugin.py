"""A hatchling build hook: compile a project's Pell sources into its wheel.

    [tool.hatch.build.hooks.pell]
    sources = ["db"]               # folders (or files) of .pell modules, relative to the project
    destination = "mypkg/sql"      # where the .sql files go inside the wheel (default <name>/sql)
    target = "23ai"                # 23ai, 19c or 12.2

Registered as the `pell` hatch plugin through the `hatch` entry point group. A module with
errors fails the build with its diagnostics.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.plugin import hookimpl


class PellBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "pell"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        from pell.build import InputError, build_tree
        from pell.project import ConfigError

        root = Path(self.root)
        sources = [root / s for s in self.config.get("sources", ["db"])]
        missing = [str(s) for s in sources if not s.exists()]
        if missing:
            raise FileNotFoundError(f"pell build hook: no such sources: {', '.join(missing)}")
        name = self.metadata.name.replace("-", "_")
        destination = str(self.config.get("destination", f"{name}/sql")).strip("/")
        self._output = Path(tempfile.mkdtemp(prefix="pellc-hatch-"))
        try:
            result = build_tree(sources, self._output, str(self.config.get("target", "23ai")))
        except (InputError, ConfigError) as error:
            raise RuntimeError(f"pell build hook: {error}") from error
        if result.failed or result.runtime == "failed" or result.file_errors:
            problems = result.rendered_diagnostics()
            problems += "".join(f"{error}\n" for error in result.file_errors)
            raise RuntimeError("pell build hook: modules have errors\n" + problems)
        for path in sorted(self._output.rglob("*.sql")):
            relative = path.relative_to(self._output).as_posix()
            build_data["force_include"][str(path)] = f"{destination}/{relative}"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        shutil.rmtree(getattr(self, "_output", ""), ignore_errors=True)


@hookimpl
def hatch_register_build_hook() -> type[PellBuildHook]:
    return PellBuildHook
