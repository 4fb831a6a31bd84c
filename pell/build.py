"""Directory builds: every `.pell` under the inputs to `.sql` in an output tree, incremental
(a content-hash manifest) and atomic (temporary file, then rename), plus `pell_runtime.sql`."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pell import CompileResult, __version__, compile_source, decode_source
from pell.ast import ErrorDecl, Module
from pell.checker.retry_facts import ModuleFacts
from pell.checker.retry_safety import project_findings
from pell.diagnostics import Diagnostic, SourceFile
from pell.runtime import error_category, number_errors, runtime_sql

MANIFEST = ".pellc-manifest.json"
_UMASK = os.umask(0)
os.umask(_UMASK)
RUNTIME_FILE = "pell_runtime.sql"


def sha256(data: str) -> str:
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def write_atomically(path: Path, text: str) -> None:
    """Write to a temporary file beside `path`, then rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.chmod(temporary, 0o666 & ~_UMASK)  # mkstemp makes 0600; outputs are ordinary files
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@dataclass(frozen=True, slots=True)
class SourceUnit:
    """One `.pell` file and the output path it maps to, relative to the output directory."""

    path: Path
    output: Path  # e.g. billing/payments.sql


def find_sources(inputs: list[Path]) -> list[SourceUnit]:
    """Every `.pell` under each input directory (mirroring relative paths), or the input files."""
    units: list[SourceUnit] = []
    for entry in inputs:
        if entry.is_dir():
            for path in sorted(entry.rglob("*.pell")):
                units.append(SourceUnit(path, path.relative_to(entry).with_suffix(".sql")))
        else:
            units.append(SourceUnit(entry, Path(entry.name).with_suffix(".sql")))
    return units


@dataclass(slots=True)
class ModuleOutcome:
    unit: SourceUnit
    status: str  # "built", "unchanged", "failed", "stale", "missing", "fresh"
    source: SourceFile | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    source_map: dict[str, object] | None = None


@dataclass(slots=True)
class BuildResult:
    outcomes: list[ModuleOutcome] = field(default_factory=list)
    runtime: str | None = None  # the runtime's status, as for modules; None: no errors declared
    runtime_problem: str | None = None  # why the runtime could not be written

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def failed(self) -> bool:
        return self.count("failed") > 0

    def rendered_diagnostics(self, pretty: bool = False) -> str:
        """Every module's diagnostics, each shown with the path of its `.pell` file."""
        from pell.diagnostics import render_all

        return "".join(
            render_all(o.diagnostics, SourceFile(str(o.unit.path), o.source.text), pretty)
            for o in self.outcomes
            if o.source is not None and o.diagnostics
        )

    def summary(self) -> str:
        parts = [f"built {self.count('built')}", f"unchanged {self.count('unchanged')}"]
        parts.append(f"failed {self.count('failed')}")
        if self.runtime is not None:
            parts.append(f"runtime {self.runtime}")
        return ", ".join(parts)


def _runtime_entry(entry: dict[str, object]) -> tuple[str, list[list[str]]]:
    errors = entry.get("errors", [])
    return str(entry.get("module")), [list(e) for e in errors] if isinstance(errors, list) else []


def _errors_of(module: Module) -> list[list[str]]:
    return [
        [item.name, error_category(item)] for item in module.items if isinstance(item, ErrorDecl)
    ]


def _cached_facts(entry: dict[str, object]) -> ModuleFacts | None:
    """A manifest entry's retry facts; None (the module is compiled again) if they are missing
    or damaged."""
    data = entry.get("retry_facts")
    if not isinstance(data, dict):
        return None
    try:
        return ModuleFacts.from_json(data)
    except (KeyError, TypeError, ValueError, IndexError, AssertionError):
        return None


def _load_manifest(out_dir: Path) -> dict[str, object]:
    try:
        data = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _file_hash(path: Path) -> str | None:
    try:
        return sha256(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None


def build_tree(
    inputs: list[Path],
    out_dir: Path,
    target: str = "23ai",
    check_only: bool = False,
    source_maps: bool = False,
    progress: Callable[[int, int, SourceUnit], None] | None = None,
) -> BuildResult:
    """Compile every module under `inputs` into `out_dir`.

    Unchanged modules (same source, compiler version and target, output intact) are not
    rewritten. A module with errors keeps its previous output and does not stop the others.
    With `check_only`, nothing is written: each output is reported `fresh`, `stale` or `missing`
    (or `failed`), by compiling and comparing bytes.
    """
    units = find_sources(inputs)
    manifest = _load_manifest(out_dir)
    same_compiler = manifest.get("version") == __version__ and manifest.get("target") == target
    old_entries = manifest.get("modules", {}) if same_compiler else {}
    assert isinstance(old_entries, dict)
    entries: dict[str, dict[str, object]] = {}
    result = BuildResult()
    modules_for_runtime: list[tuple[str, list[list[str]]]] = []

    # Outputs are written only once every module is compiled: the retry checks that follow
    # calls into other modules can still fail a module that compiled on its own.
    pending: list[tuple[ModuleOutcome, CompileResult, dict[str, object]]] = []
    facts: list[tuple[ModuleOutcome, ModuleFacts]] = []
    for index, unit in enumerate(units, start=1):
        if progress is not None:
            progress(index, len(units), unit)
        key = unit.output.as_posix()
        output = out_dir / unit.output
        data = unit.path.read_bytes()
        text, undecodable = decode_source(data, unit.path.name)
        if text is None:
            assert undecodable is not None
            result.outcomes.append(
                ModuleOutcome(unit, "failed", undecodable.source, undecodable.diagnostics)
            )
            continue
        source_hash = sha256(text)
        old = old_entries.get(key)
        if (
            not check_only
            and isinstance(old, dict)
            and old.get("source") == source_hash
            and (cached_facts := _cached_facts(old)) is not None
            and old.get("output") == _file_hash(output)
            and (not source_maps or (out_dir / f"{key}.map.json").exists())
        ):
            entries[key] = old
            modules_for_runtime.append(_runtime_entry(old))
            outcome = ModuleOutcome(unit, "unchanged", SourceFile(unit.path.name, text))
            result.outcomes.append(outcome)
            facts.append((outcome, cached_facts))
            continue
        compiled = compile_source(text, unit.path.name, target)
        outcome = ModuleOutcome(unit, "failed", compiled.source, compiled.diagnostics)
        result.outcomes.append(outcome)
        module = compiled.module
        if compiled.sql is None or module is None:
            if isinstance(old, dict):  # keep what the last good build knew
                entries[key] = old
                modules_for_runtime.append(_runtime_entry(old))
            continue
        errors = _errors_of(module)
        modules_for_runtime.append((module.dotted_name, errors))
        entry: dict[str, object] = {
            "source": source_hash,
            "output": sha256(compiled.sql),
            "module": module.dotted_name,
            "errors": errors,
        }
        if compiled.retry_facts is not None:
            entry["retry_facts"] = compiled.retry_facts.to_json()
            facts.append((outcome, compiled.retry_facts))
        pending.append((outcome, compiled, entry))
        if isinstance(old, dict):
            entries[key] = old  # until this module's new output is written
        outcome.status = "compiled"

    across = project_findings([module_facts for _, module_facts in facts])
    for outcome, module_facts in facts:
        found = across.get(module_facts.name)
        if not found:
            continue
        outcome.diagnostics = (*outcome.diagnostics, *found)
        if any(d.is_error for d in found):
            outcome.status = "failed"

    for outcome, compiled, entry in pending:
        if outcome.status == "failed":
            # Its previous output stays, and with it the errors the runtime declares for it.
            modules_for_runtime.remove((str(entry["module"]), entry["errors"]))  # type: ignore[arg-type]
            previous = entries.get(outcome.unit.output.as_posix())
            if previous is not None:
                modules_for_runtime.append(_runtime_entry(previous))
            continue
        assert compiled.sql is not None
        key = outcome.unit.output.as_posix()
        output = out_dir / outcome.unit.output
        if check_only:
            current = _file_hash(output)
            outcome.status = (
                "missing"
                if current is None
                else "fresh"
                if current == sha256(compiled.sql)
                else "stale"
            )
            continue
        write_atomically(output, compiled.sql)
        if source_maps and compiled.source_map is not None:
            write_atomically(
                out_dir / f"{key}.map.json", json.dumps(compiled.source_map, indent=1) + "\n"
            )
        outcome.status = "built"
        entries[key] = entry

    try:
        result.runtime = _runtime(out_dir, modules_for_runtime, manifest, check_only, same_compiler)
    except RuntimeOverflow as overflow:
        result.runtime, result.runtime_problem = "failed", str(overflow)
    if not check_only:
        new_manifest = {
            "version": __version__,
            "target": target,
            "modules": dict(sorted(entries.items())),
            "runtime_errors": manifest.get("runtime_errors")
            if result.runtime is None
            else sha256(json.dumps(sorted(modules_for_runtime))),
        }
        write_atomically(out_dir / MANIFEST, json.dumps(new_manifest, indent=1) + "\n")
    return result


class RuntimeOverflow(Exception):
    """More errors in a category than its code range holds."""


def _runtime(
    out_dir: Path,
    modules: list[tuple[str, list[list[str]]]],
    manifest: dict[str, object],
    check_only: bool,
    same_compiler: bool,
) -> str | None:
    """Write (or check) pell_runtime.sql when any module declares errors."""
    if not any(errors for _, errors in modules):
        return None
    fingerprint = sha256(json.dumps(sorted(modules)))
    path = out_dir / RUNTIME_FILE
    synthetic = [_module_stub(name, errors) for name, errors in sorted(modules)]
    numbered, overflows = number_errors(synthetic)
    if overflows:
        raise RuntimeOverflow(
            "; ".join(
                f"the project declares {o.count} {o.category} errors; their code range holds "
                f"{o.capacity}"
                for o in overflows
            )
        )
    sql = runtime_sql(numbered, __version__)
    current = _file_hash(path)
    if check_only:
        return "missing" if current is None else "fresh" if current == sha256(sql) else "stale"
    if same_compiler and manifest.get("runtime_errors") == fingerprint and current == sha256(sql):
        return "unchanged"
    write_atomically(path, sql)
    return "built"


def _module_stub(name: str, errors: list[list[str]]) -> Module:
    """Just enough of a module for error numbering: its name and its error declarations."""
    from pell import ast

    items = tuple(
        ast.ErrorDecl(
            error,
            (),
            True,
            (ast.Annotation(category, (), span=ast.NO_SPAN),) if category != "propagate" else (),
            span=ast.NO_SPAN,
        )
        for error, category in errors
    )
    return ast.Module(tuple(name.split(".")), (), items, span=ast.NO_SPAN)
