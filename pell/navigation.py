"""What a name in a module refers to, for an editor: each occurrence of a name in a module's
source, with the declaration it resolves to (a module, an item of a module, a local of a fn),
and what `pellc lsp` answers from that: hover text, definitions, references, the module's
outline, completions. Offsets are into the source text; `pell.lsp` turns them into LSP
positions. Every answer is read from the project engine (pell.engine's API) and nothing else.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pell import ast
from pell.checker.model import CheckedModule, Symbol
from pell.records import record

if TYPE_CHECKING:
    from pell.engine import Engine
    from pell.verify import Finding, Report
    from pell.verify.schedules import FnVerdict

Kind = Literal["module", "fn", "record", "error", "enum", "type", "seq", "aggregate", "local"]

_ITEM_KINDS: dict[type, Kind] = {
    ast.Fn: "fn",
    ast.Record: "record",
    ast.ErrorDecl: "error",
    ast.Enum: "enum",
    ast.TypeDecl: "type",
    ast.Sequence: "seq",
    ast.Aggregate: "aggregate",
}
_IDENT = re.compile(r"[A-Za-z_]\w*")
_PATH = re.compile(r"[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*")
# the `module` line's path (`::` or `.` between its names), comments stepped over
_HEADER = re.compile(
    r"//[^\n]*|/\*.*?\*/|\bmodule\s+([A-Za-z_]\w*(?:\s*(?:::|\.)\s*[A-Za-z_]\w*)*)\s*;",
    re.DOTALL,
)


@record
class Target:
    """What a name refers to: a module (`name` empty), an item of a module, or a local of a
    fn of a module, told apart from other locals of the name by where it is declared."""

    kind: Kind
    module: tuple[str, ...]
    name: str = ""
    declared_at: int = -1  # a local's declaration offset


@record
class Occurrence:
    start: int
    end: int
    target: Target
    declaration: bool = False
    symbol: Symbol | None = None  # a local's, with its type


def _item_kind(module: ast.Module, name: str) -> Kind | None:
    for item in module.items:
        if item.name == name:
            return _ITEM_KINDS.get(type(item))
    return None


def _parts(text: str, start: int, end: int) -> list[tuple[str, int]]:
    """The names of the `a::b::c` path written at `start` (within `end`), with their offsets."""
    written = _PATH.match(text, start, end)
    if written is None:
        return []
    return [(m.group(), start + m.start()) for m in _IDENT.finditer(written.group())]


def _path_targets(
    checked: CheckedModule, parts: list[tuple[str, int]]
) -> list[tuple[int, int, Target]]:
    """Where each part of a written path points: `f` (an item of this module), `Enum::V`,
    `alias::item`, `alias::Enum::V`."""
    own = checked.module
    if not parts:
        return []
    first, at = parts[0]
    found: list[tuple[int, int, Target]] = []
    kind = _item_kind(own, first)
    if kind is not None and (len(parts) == 1 or kind == "enum"):
        return [(at, at + len(first), Target(kind, own.path, first))]
    if len(parts) < 2:
        return []
    foreign = checked.imports.find(first)
    if foreign is None:
        return []
    found.append((at, at + len(first), Target("module", foreign.module.path)))
    name, name_at = parts[1]
    kind = _item_kind(foreign.module, name)
    if kind is not None:
        found.append((name_at, name_at + len(name), Target(kind, foreign.module.path, name)))
    return found


def occurrences(checked: CheckedModule, text: str) -> list[Occurrence]:
    """Every name of the module that refers to a module, an item or a local, in source order."""
    module = checked.module
    found: list[Occurrence] = []
    header = next((m for m in _HEADER.finditer(text) if m.group(1) is not None), None)
    if header is not None and not module.script:
        found.append(
            Occurrence(header.start(1), header.end(1), Target("module", module.path), True)
        )
    symbols: dict[int, Symbol] = {}
    for analysis in [*checked.analyses.values(), *checked.method_analyses.values()]:
        symbols.update(analysis.names)
    for node in ast.walk(module):
        found += _node_occurrences(checked, node, text, symbols)
    found.sort(key=lambda o: (o.start, o.end))
    return found


def _node_occurrences(
    checked: CheckedModule, node: ast.Node, text: str, symbols: dict[int, Symbol]
) -> list[Occurrence]:
    own = checked.module.path
    span = node.span
    if isinstance(node, ast.Name):
        symbol = symbols.get(id(node))
        if symbol is not None and symbol.kind in ("local", "param", "loop"):
            if node.path == ("self",):
                return []
            target = Target("local", own, symbol.name, symbol.span.start)
            return [Occurrence(span.start, span.end, target, symbol=symbol)]
        parts = _parts(text, span.start, span.end)
        if tuple(name for name, _ in parts) != node.path:
            return []  # made by the checker (a logger call), not written so
        return [Occurrence(s, e, t) for s, e, t in _path_targets(checked, parts)]
    if isinstance(node, ast.NamedType | ast.RecordLit):
        written = node.name if isinstance(node, ast.NamedType) else node.type_name
        parts = _parts(text, span.start, span.end)
        if "::".join(name for name, _ in parts) != written:
            return []
        return [Occurrence(s, e, t) for s, e, t in _path_targets(checked, parts)]
    if isinstance(node, ast.Import):
        alias = checked.imports.foreign.get(node.path[-1])
        path = re.compile(r"import\s+(" + _PATH.pattern + ")").match(text, span.start, span.end)
        if alias is None or path is None:
            return []
        return [Occurrence(path.start(1), path.end(1), Target("module", alias.module.path))]
    if isinstance(node, ast.Fn | ast.TypeDecl | ast.Aggregate):
        if isinstance(node, ast.Fn) and node.name == ast.SCRIPT_FN:
            return []
        kind = _item_kind(checked.module, node.name)
        if kind is None or not any(node is item for item in checked.module.items):
            return []  # a method: no item of the module
        start = node.name_span.start
        return [Occurrence(start, start + len(node.name), Target(kind, own, node.name), True)]
    if isinstance(node, ast.Record | ast.ErrorDecl | ast.Enum | ast.Sequence):
        # their nodes keep no span of the name: it follows the keyword, which is the kind
        kind = _ITEM_KINDS[type(node)]
        name = re.compile(rf"\b{kind}\s+({re.escape(node.name)})\b").search(
            text, span.start, span.end
        )
        if name is None:
            return []
        target = Target(kind, own, node.name)
        return [Occurrence(name.start(1), name.end(1), target, True)]
    if isinstance(node, ast.Param):
        # the parameter's symbol is declared at the start of the Param (pell.checker.bodies),
        # which is its mode keyword when one is written (`inout counter: int`)
        target = Target("local", own, node.name, span.start)
        # (grammar/pell.lark: `param: (OUT | INOUT)? NAME ":" type`)
        after_mode = span.start + (0 if node.mode == "in" else len(node.mode))
        name = re.compile(rf"\b{re.escape(node.name)}\b").search(text, after_mode, span.end)
        if name is None:
            return []  # not written (a method's implicit `self`)
        return [Occurrence(name.start(), name.end(), target, True)]
    if isinstance(node, ast.Let):
        target = Target("local", own, node.name, node.name_span.start)
        return [Occurrence(node.name_span.start, node.name_span.end, target, True)]
    if isinstance(node, ast.For):
        target = Target("local", own, node.var, node.var_span.start)
        return [Occurrence(node.var_span.start, node.var_span.end, target, True)]
    return []


def occurrence_at(found: list[Occurrence], offset: int) -> Occurrence | None:
    """The occurrence the cursor is on (at its end too: a cursor just after a name)."""
    return next((o for o in found if o.start <= offset <= o.end), None)


# ---- answers from the engine ---------------------------------------------------


class Navigator:
    """Answers about the modules of one engine. Occurrences are kept per module until the
    engine's results change (`forget`)."""

    def __init__(self, engine: Engine, target: str) -> None:
        self.engine = engine
        self.target = target  # the engine's, for `pellc explain`
        self._occurrences: dict[Path, list[Occurrence]] = {}
        self._report: Report | None = None

    def forget(self) -> None:
        self._occurrences.clear()
        self._report = None

    def text(self, path: Path) -> str:
        return self.engine.compiled(path).source.text

    def occurrences(self, path: Path) -> list[Occurrence]:
        if path not in self._occurrences:
            checked = self.engine.checked(path)
            found = [] if checked is None else occurrences(checked, self.text(path))
            self._occurrences[path] = found
        return self._occurrences[path]

    def at(self, path: Path, offset: int) -> Occurrence | None:
        return occurrence_at(self.occurrences(path), offset)

    def _declaring_path(self, path: Path, target: Target) -> Path | None:
        if target.kind == "local":
            return path
        return self._project_file(target.module)

    def _project_file(self, module: tuple[str, ...]) -> Path | None:
        """The project's file of a module; None for one of pellc's stubs (module_path_of
        names its file too, but the engine compiles no stub)."""
        where = self.engine.module_path_of(module)
        return where if where is not None and where in self.engine.paths() else None

    def definition(self, path: Path, offset: int) -> tuple[Path, Occurrence] | None:
        """The declaration of the name at `offset`: where it is, in which file."""
        found = self.at(path, offset)
        if found is None:
            return None
        where = self._declaring_path(path, found.target)
        if where is None:
            return None  # one of pellc's stubs, or an Oracle package: no project file
        declaration = next(
            (o for o in self.occurrences(where) if o.declaration and o.target == found.target),
            None,
        )
        return (where, declaration) if declaration is not None else None

    def references(
        self, path: Path, offset: int, include_declaration: bool
    ) -> list[tuple[Path, Occurrence]]:
        """Every occurrence, in every module, of what the name at `offset` refers to."""
        found = self.at(path, offset)
        if found is None:
            return []
        paths = [path] if found.target.kind == "local" else self.engine.paths()
        return [
            (where, o)
            for where in paths
            for o in self.occurrences(where)
            if o.target == found.target and (include_declaration or not o.declaration)
        ]

    def hover(self, path: Path, offset: int) -> tuple[Occurrence, str] | None:
        """Markdown about the name at `offset`: its type, or its declaration; for a @retry fn
        also what `pellc explain` prints of it and what `pellc verify` finds."""
        found = self.at(path, offset)
        if found is None:
            return None
        target = found.target
        if target.kind == "local":
            symbol = found.symbol or self._declared_symbol(path, target)
            if symbol is None:
                return None
            # every local's symbol is mutable to the checker: the keyword written says which
            written_var = re.search(r"\bvar\s*$", self.text(path)[: target.declared_at])
            word = {"param": "param", "loop": "for"}.get(
                symbol.kind, "var" if written_var else "let"
            )
            return found, _code(f"{word} {symbol.name}: {symbol.type}")
        where = self._project_file(target.module)
        checked = self.engine.checked(where) if where is not None else None
        if target.kind == "module":
            shown = _code(f"module {'::'.join(target.module)}")
            return found, shown + (f"\n\n{where}" if where is not None else "")
        if where is None or checked is None:
            return found, _code(f"{target.kind} {'::'.join(target.module)}::{target.name}")
        text = self.text(where)
        item = next((i for i in checked.module.items if i.name == target.name), None)
        if item is None:
            return None
        if not isinstance(item, ast.Fn):
            return found, _code(text[item.span.start : item.span.end])
        parts = [_code(_signature(item, text)), f"in module `{'::'.join(target.module)}`"]
        info = checked.fns.get(item.name)
        if info is not None and info.retry is not None:
            parts += self._retry_notes(where, checked, item.name)
        return found, "\n\n".join(parts)

    def _declared_symbol(self, path: Path, target: Target) -> Symbol | None:
        """A local's symbol, from a use of it (its declaration carries none)."""
        return next(
            (
                o.symbol
                for o in self.occurrences(path)
                if o.target == target and o.symbol is not None
            ),
            None,
        )

    def _retry_notes(self, path: Path, checked: CheckedModule, fn: str) -> list[str]:
        from pell.explain import explain, render_text

        compiled = self.engine.compiled(path)
        explained = explain(checked, compiled.source, self.target)
        explanations = [e for e in explained if e.fn == fn]
        notes = ["`pellc explain`:", _code(render_text(explanations, checked, str(path)), "")]
        report = self.verify_report()
        if report is None:
            notes.append("`pellc verify`: not run (a module of the project has errors)")
            return notes
        for verdict, findings in _verdict_findings(report):
            if verdict.module == checked.module.path and verdict.fn == fn:
                if not findings:
                    notes.append(f"`pellc verify`: {verdict.schedules} schedules, no findings")
                else:
                    shown = "\n".join(f.render() for f in findings)
                    notes += [f"`pellc verify`: {verdict.schedules} schedules", _code(shown, "")]
        return notes

    def verify_report(self) -> Report | None:
        """`pellc verify` of the project as it stands (None while a module has errors)."""
        if self._report is None:
            from pell.diagnostics import SourceFile, has_errors
            from pell.records import replace
            from pell.verify import verify

            results = []
            for path in self.engine.paths():
                result = self.engine.compiled(path)
                if has_errors(self.engine.diagnostics(path)):
                    return None
                if result.lowered is not None:  # a stub generates nothing to verify
                    results.append(
                        replace(result, source=SourceFile(str(path), result.source.text))
                    )
            self._report = verify(results)
        return self._report

    def symbols(self, path: Path) -> list[tuple[ast.Item, Occurrence, list[Occurrence]]]:
        """The module's items, each with its name's occurrence and, for a type, its methods'."""
        checked = self.engine.checked(path)
        if checked is None:
            return []
        declared = {
            o.target.name: o
            for o in self.occurrences(path)
            if o.declaration and o.target.kind != "local"
        }
        found: list[tuple[ast.Item, Occurrence, list[Occurrence]]] = []
        for item in checked.module.items:
            name = declared.get(item.name)
            if name is None:
                continue
            methods = []
            if isinstance(item, ast.TypeDecl):
                for method in [*item.methods, *(m for c in item.cases for m in c.methods)]:
                    start = method.name_span.start
                    target = Target("fn", checked.module.path, method.name)
                    methods.append(Occurrence(start, start + len(method.name), target, True))
            found.append((item, name, methods))
        return found

    def module_items(self, path: Path, alias: str) -> list[tuple[str, Kind, str]]:
        """The public items of the module `alias::` names in the module at `path`: name, kind,
        and its declaration as written. Read from the file's import lines, so that it answers
        while the line being typed does not parse."""
        module = self._aliased_module(path, alias)
        if module is None:
            return []
        where = self._project_file(module.path)
        if where is not None:
            text: str | None = self.text(where)
        else:  # one of pellc's stubs
            from pell.project import STUBS_DIR

            stub = STUBS_DIR / f"{module.path[-1].lower()}.pell"
            text = stub.read_text(encoding="utf-8") if stub.is_file() else None
        items = []
        for item in module.items:
            kind = _ITEM_KINDS.get(type(item))
            if kind is None or not (item.public or module.is_stub):
                continue
            if isinstance(item, ast.Fn):
                detail = _signature(item, text) if text is not None else f"fn {item.name}"
            else:
                detail = f"{kind} {item.name}"
            items.append((item.name, kind, detail))
        return items

    def _aliased_module(self, path: Path, alias: str) -> ast.Module | None:
        text = self.text(path)
        imported = [
            tuple(re.findall(r"\w+", m.group(1)))
            for m in re.finditer(r"^\s*import\s+([\w\s:]+?)\s*;", text, re.MULTILINE)
        ]
        from pell.project import stub_index

        candidates = [p for p in imported if p[-1] == alias] + [(alias,)]
        # `import std::logger;` is the module `logger` when the project has no `std::logger`
        candidates += [p[1:] for p in candidates if len(p) == 2 and p[0] == "std"]
        for module_path in candidates:
            where = self.engine.module_path_of(module_path)
            if where is not None:
                return self.engine.module(where)
            stub = stub_index().parsed(module_path)
            if stub is not None:
                return stub
        return None


def _verdict_findings(report: Report) -> list[tuple[FnVerdict, list[Finding]]]:
    """Each verdict with its findings: verify_program makes the findings verdict by verdict,
    one per violation, in order."""
    paired: list[tuple[FnVerdict, list[Finding]]] = []
    findings = list(report.findings)
    for verdict in report.verdicts:
        count = len(verdict.violations)
        paired.append((verdict, findings[:count]))
        findings = findings[count:]
    return paired


def _signature(fn: ast.Fn, text: str) -> str:
    """The fn's annotations and signature as written, up to its body."""
    end = fn.body.span.start if fn.has_body else fn.span.end
    written = text[fn.name_span.start : end].rstrip().rstrip(";").rstrip()
    head = " ".join(text[a.span.start : a.span.end] for a in fn.annotations)
    keyword = ("pub " if fn.public else "") + ("unsafe " if fn.unsafe else "") + "fn "
    return (head + "\n" if head else "") + keyword + " ".join(written.split())


def _code(text: str, language: str = "pell") -> str:
    return f"```{language}\n{text.rstrip()}\n```"
