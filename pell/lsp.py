"""`pellc lsp`: a Language Server Protocol server over stdio (pygls, extra `pellc[lsp]`).

The project engine (pell.engine) holds the modules with the editor's unsaved texts; the
server turns its answers into LSP: diagnostics of each module an edit affects, with the
document's version; hover, definition, references, document symbols and completion from
pell.navigation; quick fixes from the diagnostics' own fixes (pell.diagnostics.Fix).
docs/editors.md says how to start it from VS Code, Neovim and Helix.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from bisect import bisect_right
from collections.abc import Callable, Generator, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.uris import from_fs_path, to_fs_path

from pell import __version__, ast
from pell.diagnostics import Diagnostic, Severity
from pell.engine import Engine
from pell.navigation import Kind, Navigator, Occurrence
from pell.project import CONFIG_FILES, ConfigError, find_config
from pell.retry import RETRY_ARGUMENTS

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_QUALIFIED = re.compile(r"([A-Za-z_]\w*)\s*::\s*(\w*)$")
# `@retry(` or `@retry(n = 3, ` with the cursor where an argument's name goes
_RETRY_ARGUMENT = re.compile(r"@retry\s*\((?:[^()]*,)?\s*(\w*)$")
_SYMBOL_KINDS: dict[Kind, types.SymbolKind] = {
    "fn": types.SymbolKind.Function,
    "record": types.SymbolKind.Struct,
    "error": types.SymbolKind.Class,
    "enum": types.SymbolKind.Enum,
    "type": types.SymbolKind.Class,
    "seq": types.SymbolKind.Constant,
    "aggregate": types.SymbolKind.Function,
    "module": types.SymbolKind.Module,
    "local": types.SymbolKind.Variable,
}
_COMPLETION_KINDS: dict[Kind, types.CompletionItemKind] = {
    "fn": types.CompletionItemKind.Function,
    "record": types.CompletionItemKind.Struct,
    "error": types.CompletionItemKind.Class,
    "enum": types.CompletionItemKind.Enum,
    "type": types.CompletionItemKind.Class,
    "seq": types.CompletionItemKind.Constant,
    "aggregate": types.CompletionItemKind.Function,
}


class Positions:
    """Offsets into a text <-> LSP line and character, the character counted in the units
    the client and server agreed on (UTF-16 unless told otherwise)."""

    def __init__(self, text: str, units: Callable[[str], int]) -> None:
        self.text = text
        self.units = units
        self.starts = [0, *(m.end() for m in _LINE_BREAK.finditer(text))]

    def position(self, offset: int) -> types.Position:
        offset = max(0, min(offset, len(self.text)))
        line = bisect_right(self.starts, offset) - 1
        return types.Position(line, self.units(self.text[self.starts[line] : offset]))

    def range(self, start: int, end: int) -> types.Range:
        return types.Range(self.position(start), self.position(max(start, end)))

    def offset(self, position: types.Position) -> int:
        if position.line >= len(self.starts):
            return len(self.text)
        start = self.starts[position.line]
        end = (
            self.starts[position.line + 1]
            if position.line + 1 < len(self.starts)
            else len(self.text)
        )
        line = _LINE_BREAK.sub("", self.text[start:end])
        counted = 0
        for index, char in enumerate(line):
            if counted >= position.character:
                return start + index
            counted += self.units(char)
        return start + len(line)


logger = logging.getLogger(__name__)


class PellProtocol(LanguageServerProtocol):
    """pygls's protocol, but a didChange of a document never opened (a client's fault) is
    logged and dropped: pygls's own handler raises KeyError on it, which it shows the user as
    "Error in server"."""

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: types.DidChangeTextDocumentParams
    ) -> Generator[Any, Any, None]:
        # pygls keys its documents by the unquoted URI (pygls.workspace.Workspace)
        if unquote(params.text_document.uri) not in self.workspace.text_documents:
            logger.warning(
                "didChange of %s, which was never opened: ignored", params.text_document.uri
            )
            return
        yield from super().lsp_text_document__did_change(params)


class PellServer(LanguageServer):
    """One engine per project: a document's project is the directory of its nearest pell.toml
    (pell.project.find_config), else the workspace's root when the document is under it, else
    the document alone. So a folder opened above the project, or a file of another project,
    is compiled with its own project."""

    def __init__(self) -> None:
        # Full sync: pygls applies an incremental change on lines split by str.splitlines,
        # which also breaks at U+2028, \f and the like, where LSP and pellc do not. The engine
        # compiles the whole text anyway; a range a client sends all the same is applied here
        # with pellc's own line table (apply_change).
        super().__init__(
            "pellc",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Full,
            protocol_cls=PellProtocol,
        )
        self.projects: dict[Path, tuple[Engine, Navigator]] = {}  # by project root
        self.roots: dict[Path, Path] = {}  # each document's project root, once found
        self.texts: dict[Path, str] = {}  # open documents' texts
        self.versions: dict[Path, int] = {}  # open documents' versions
        self.published: set[Path] = set()  # paths whose last publication was not empty
        self.settings_errors: set[Path] = set()  # settings files shown with an error
        self.shut_down = False

    def root_of(self, path: Path) -> Path:
        """The project root of a document (the key of its engine)."""
        root = self.roots.get(path)
        if root is None:
            try:
                config_root = find_config(path).root
            except ConfigError as error:  # still the project of that file (Engine says why)
                config_root = error.path.parent if error.path is not None else None
            workspace = self.workspace.root_path
            if config_root is not None:
                root = Path(os.path.abspath(config_root))
            elif workspace and path.is_relative_to(os.path.abspath(workspace)):
                root = Path(os.path.abspath(workspace))
            else:
                root = path  # a file of no project: a project of its own
            self.roots[path] = root
        return root

    def project(
        self, path: Path, before: dict[Path, tuple[Engine, Navigator]] | None = None
    ) -> tuple[Engine, Navigator] | None:
        """The engine of the document's project, made when first asked. Settings that do not
        parse are shown on their file; the project's engine `before` them, if any, is kept
        until they do, else there is none (None)."""
        root = self.root_of(path)
        found = self.projects.get(root)
        if found is None:
            try:
                engine = Engine(root)  # the target of the project's pell.toml, read on restart
            except ConfigError as error:
                self.show_settings_error(error)
                found = (before or {}).get(root)
                if found is not None:
                    self.projects[root] = found
                return found
            found = self.projects[root] = (engine, Navigator(engine, engine.target))
        return found

    def show_settings_error(self, error: ConfigError) -> None:
        """A settings file pellc cannot use: its one line, as a diagnostic at its start (or a
        message, with no file to put it on)."""
        if error.path is None:
            self.window_show_message(types.ShowMessageParams(types.MessageType.Error, str(error)))
            return
        path = Path(os.path.abspath(error.path))
        start = types.Position(0, 0)
        shown = types.Diagnostic(
            range=types.Range(start, start),
            message=str(error),
            severity=types.DiagnosticSeverity.Error,
            source="pellc",
        )
        uri = from_fs_path(str(path)) or path.as_uri()
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, [shown]))
        self.settings_errors.add(path)

    def navigable(self, uri: str) -> tuple[Path, Navigator] | None:
        """The module of a request's document, if it is one of its project's."""
        path = _pell_path(uri)
        if path is None:
            return None
        found = self.projects.get(self.root_of(path))
        if found is None:
            return None
        engine, navigator = found
        return (path, navigator) if path in engine.paths() else None

    def positions(self, path: Path, navigator: Navigator | None = None) -> Positions:
        """The positions of a module's text (of the document's project, unless given)."""
        if navigator is None:
            project = self.project(path)
            assert project is not None  # asked of a module a request found (navigable)
            navigator = project[1]
        return Positions(navigator.text(path), self.workspace.position_codec.client_num_units)

    def publish(self, project: tuple[Engine, Navigator], paths: Iterable[Path]) -> None:
        """Each module's diagnostics, with its document's version when it is open; an empty
        list for a path that is no module of the project any more (deleted, or a closed
        buffer of a file not on disk), which clears what was shown."""
        engine, navigator = project
        navigator.forget()  # the engine's results changed
        known = set(engine.paths())
        for path in paths:
            shown: list[types.Diagnostic] = []
            uri = from_fs_path(str(path)) or path.as_uri()
            if path in known:
                positions = self.positions(path, navigator)
                shown = [_lsp_diagnostic(d, positions, uri) for d in engine.diagnostics(path)]
            self.send_diagnostics(path, uri, shown)

    def send_diagnostics(self, path: Path, uri: str, shown: list[types.Diagnostic]) -> None:
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri, shown, self.versions.get(path))
        )
        if shown:
            self.published.add(path)
        else:
            self.published.discard(path)

    def restart(self) -> None:
        """The settings changed (a pell.toml or pyproject.toml): every project is found and
        compiled again, the open documents' texts kept, and what was shown is published
        again (or cleared)."""
        shown_before = set(self.published)
        settings_errors_before, self.settings_errors = self.settings_errors, set()
        before, self.projects = self.projects, {}
        self.roots.clear()
        for path, text in self.texts.items():
            project = self.project(path, before)
            if project is not None:
                project[0].set_overlay(path, text)
        for settings in sorted(settings_errors_before - self.settings_errors):  # now read
            uri = from_fs_path(str(settings)) or settings.as_uri()
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, []))
        by_root: dict[Path, list[Path]] = {}
        for path in sorted(shown_before | set(self.texts)):
            by_root.setdefault(self.root_of(path), []).append(path)
        for root, paths in by_root.items():
            project = self.projects.get(root)
            if project is not None:
                self.publish(project, paths)
            else:  # no open document of that project any more
                for path in paths:
                    self.send_diagnostics(path, from_fs_path(str(path)) or path.as_uri(), [])


def apply_change(
    text: str, change: types.TextDocumentContentChangeEvent, units: Callable[[str], int]
) -> str:
    """The text after one didChange content change, its range in LSP's lines (broken at
    \n, \r\n and \r only) and the agreed units."""
    if isinstance(change, types.TextDocumentContentChangePartial):
        positions = Positions(text, units)
        start, end = positions.offset(change.range.start), positions.offset(change.range.end)
        return text[:start] + change.text + text[max(start, end) :]
    return change.text


def _path(uri: str) -> Path:
    return Path(to_fs_path(uri) or uri).absolute()


def _pell_path(uri: str) -> Path | None:
    """The file of a document that is Pell source: an editor configured to send a broader
    language (plain text, in VS Code without a Pell extension) sends other files too."""
    path = _path(uri)
    return path if path.suffix == ".pell" else None


def _lsp_diagnostic(diagnostic: Diagnostic, positions: Positions, uri: str) -> types.Diagnostic:
    severity = (
        types.DiagnosticSeverity.Error
        if diagnostic.severity is Severity.ERROR
        else types.DiagnosticSeverity.Warning
    )
    message = "\n".join([diagnostic.message, *(f"help: {h}" for h in diagnostic.hints)])
    related = [
        types.DiagnosticRelatedInformation(
            types.Location(uri, positions.range(n.span.start, n.span.end)), n.message
        )
        for n in diagnostic.notes
    ]
    return types.Diagnostic(
        range=positions.range(diagnostic.span.start, diagnostic.span.end),
        message=message,
        severity=severity,
        code=diagnostic.code,
        source="pellc",
        related_information=related or None,
    )


server = PellServer()


@server.feature(types.INITIALIZED)
def initialized(ls: PellServer, params: types.InitializedParams) -> None:
    # Editors tell of files changed outside them (a git checkout) only when asked to: .pell
    # files, and the settings files, whose change starts the projects again.
    watched = ls.client_capabilities.workspace
    dynamic = watched.did_change_watched_files if watched is not None else None
    if dynamic is not None and dynamic.dynamic_registration:
        globs = ["**/*.pell", *(f"**/{name}" for name in CONFIG_FILES)]
        options = types.DidChangeWatchedFilesRegistrationOptions(
            [types.FileSystemWatcher(glob_pattern=glob) for glob in globs]
        )
        ls.client_register_capability(
            types.RegistrationParams(
                [
                    types.Registration(
                        "pellc-watch", types.WORKSPACE_DID_CHANGE_WATCHED_FILES, options
                    )
                ]
            )
        )


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: PellServer, params: types.DidOpenTextDocumentParams) -> None:
    path = _pell_path(params.text_document.uri)
    if path is None:
        return
    ls.versions[path] = params.text_document.version
    ls.texts[path] = params.text_document.text
    project = ls.project(path)
    if project is None:  # its settings do not parse: shown on their file
        return
    ls.publish(project, project[0].set_overlay(path, params.text_document.text))


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: PellServer, params: types.DidChangeTextDocumentParams) -> None:
    path = _pell_path(params.text_document.uri)
    if path is None or path not in ls.texts:
        return
    ls.versions[path] = params.text_document.version
    text = ls.texts[path]
    for change in params.content_changes:
        text = apply_change(text, change, ls.workspace.position_codec.client_num_units)
    ls.texts[path] = text
    project = ls.project(path)
    if project is None:  # its settings do not parse: shown on their file
        return
    ls.publish(project, project[0].set_overlay(path, text))


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: PellServer, params: types.DidCloseTextDocumentParams) -> None:
    path = _pell_path(params.text_document.uri)
    if path is None:
        return
    ls.versions.pop(path, None)
    ls.texts.pop(path, None)
    project = ls.project(path)
    if project is None:  # its settings do not parse: shown on their file
        return
    ls.publish(project, project[0].set_overlay(path, None))  # the file's text on disk again


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: PellServer, params: types.DidSaveTextDocumentParams) -> None:
    path = _pell_path(params.text_document.uri)
    if path is None:
        return
    project = ls.project(path)
    if project is None:  # its settings do not parse: shown on their file
        return
    ls.publish(project, project[0].files_changed([path]))


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(ls: PellServer, params: types.DidChangeWatchedFilesParams) -> None:
    paths = [_path(change.uri) for change in params.changes]
    if any(path.name in CONFIG_FILES for path in paths):
        ls.restart()  # a project's settings, or where its root is, may have changed
        return
    by_root: dict[Path, list[Path]] = {}
    for path in paths:
        if path.suffix == ".pell":
            by_root.setdefault(ls.root_of(path), []).append(path)
    for root, changed in by_root.items():
        project = ls.projects.get(root)
        if project is not None:  # else: no document of that project is open
            ls.publish(project, project[0].files_changed(changed))


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: PellServer, params: types.HoverParams) -> types.Hover | None:
    found_module = ls.navigable(params.text_document.uri)
    if found_module is None:
        return None
    path, navigator = found_module
    positions = ls.positions(path)
    found = navigator.hover(path, positions.offset(params.position))
    if found is None:
        return None
    occurrence, text = found
    contents = types.MarkupContent(types.MarkupKind.Markdown, text)
    return types.Hover(contents, positions.range(occurrence.start, occurrence.end))


def _location(ls: PellServer, path: Path, occurrence: Occurrence) -> types.Location:
    uri = from_fs_path(str(path)) or path.as_uri()
    return types.Location(uri, ls.positions(path).range(occurrence.start, occurrence.end))


@server.feature(types.TEXT_DOCUMENT_DEFINITION)
def definition(ls: PellServer, params: types.DefinitionParams) -> types.Location | None:
    found_module = ls.navigable(params.text_document.uri)
    if found_module is None:
        return None
    path, navigator = found_module
    found = navigator.definition(path, ls.positions(path).offset(params.position))
    return _location(ls, *found) if found is not None else None


@server.feature(types.TEXT_DOCUMENT_REFERENCES)
def references(ls: PellServer, params: types.ReferenceParams) -> list[types.Location]:
    found_module = ls.navigable(params.text_document.uri)
    if found_module is None:
        return []
    path, navigator = found_module
    offset = ls.positions(path).offset(params.position)
    found = navigator.references(path, offset, params.context.include_declaration)
    return [_location(ls, where, occurrence) for where, occurrence in found]


@server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def document_symbols(
    ls: PellServer, params: types.DocumentSymbolParams
) -> list[types.DocumentSymbol]:
    found_module = ls.navigable(params.text_document.uri)
    if found_module is None:
        return []
    path, navigator = found_module
    positions = ls.positions(path)

    def symbol(
        node: ast.Node, name: Occurrence, children: list[types.DocumentSymbol]
    ) -> types.DocumentSymbol:
        return types.DocumentSymbol(
            name=name.target.name,
            kind=_SYMBOL_KINDS[name.target.kind],
            range=positions.range(node.span.start, node.span.end),
            selection_range=positions.range(name.start, name.end),
            children=children or None,
        )

    found = []
    for item, name, methods in navigator.symbols(path):
        children = []
        if isinstance(item, ast.TypeDecl):
            for method_name in methods:
                method = types.DocumentSymbol(
                    name=method_name.target.name,
                    kind=types.SymbolKind.Method,
                    range=positions.range(method_name.start, method_name.end),
                    selection_range=positions.range(method_name.start, method_name.end),
                )
                children.append(method)
        found.append(symbol(item, name, children))
    return found


@server.feature(
    types.TEXT_DOCUMENT_COMPLETION,
    types.CompletionOptions(trigger_characters=[":", "(", ","]),
)
def completion(ls: PellServer, params: types.CompletionParams) -> list[types.CompletionItem]:
    found_module = ls.navigable(params.text_document.uri)
    if found_module is None:
        return []
    path, navigator = found_module
    # the line up to the cursor, in LSP's lines (not str.splitlines')
    positions, line = ls.positions(path), params.position.line
    start = positions.starts[line] if line < len(positions.starts) else len(positions.text)
    before = positions.text[start : positions.offset(params.position)]
    retry = _RETRY_ARGUMENT.search(before)
    if retry is not None:
        return [
            types.CompletionItem(
                label=argument.name,
                kind=types.CompletionItemKind.Property,
                detail=f"default: {argument.default}",
                documentation=argument.meaning,
                insert_text=f"{argument.name} = ",
            )
            for argument in RETRY_ARGUMENTS
        ]
    qualified = _QUALIFIED.search(before)
    if qualified is None:
        return []
    return [
        types.CompletionItem(label=name, kind=_COMPLETION_KINDS[kind], detail=detail)
        for name, kind, detail in navigator.module_items(path, qualified.group(1))
    ]


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
)
def code_action(ls: PellServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    found_module = ls.navigable(params.text_document.uri)
    if found_module is None:
        return []
    path, navigator = found_module
    positions = ls.positions(path)
    start, end = positions.offset(params.range.start), positions.offset(params.range.end)
    uri = params.text_document.uri
    actions = []
    for diagnostic in navigator.engine.diagnostics(path):
        if diagnostic.span.start > end or diagnostic.span.end < start:
            continue
        for fix in diagnostic.fixes:
            edit = types.TextEdit(positions.range(fix.span.start, fix.span.end), fix.text)
            actions.append(
                types.CodeAction(
                    title=f"Replace with `{fix.text}`",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[_lsp_diagnostic(diagnostic, positions, uri)],
                    edit=types.WorkspaceEdit(changes={uri: [edit]}),
                    is_preferred=True,
                )
            )
    return actions


@server.feature(types.SHUTDOWN)
def shutdown(ls: PellServer, params: None) -> None:
    ls.shut_down = True


def run() -> int:
    """Serve on standard input and output until the client says exit; the exit code the
    protocol asks for: 0 after a `shutdown` request, else 1."""
    # The protocol gets its own copy of standard output, and standard output becomes
    # standard error: a stray print cannot corrupt the JSON-RPC stream, and pygls closing
    # its stream at exit leaves pellc's own standard output open.
    sys.stdout.flush()
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    server.start_io(sys.stdin.buffer, channel)
    return 0 if server.shut_down else 1
