"""`pellc lsp` end to end: pytest-lsp starts the real server (`python -m pell lsp`) and speaks
JSON-RPC to it over its standard input and output, in a project of two modules on disk
(`orders` imports `stock`)."""

from __future__ import annotations

import asyncio
import shlex
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

pytestmark = pytest.mark.asyncio(loop_scope="function")

STOCK = """\
// Stock: what the orders module reserves.
module shop::stock;

pub record Item { sku: text, count: number }
pub error OutOfStock { sku: text }

pub fn reserve(sku: text, count: number) -> Result<(), OutOfStock> {
    sql! { update stock_levels set count = count - :count where sku = :sku };
    return Ok(());
}

pub fn level(sku: text) -> number {
    return 1;
}

fn hidden() {
    return;
}
"""
ORDERS = """\
module shop::orders;

import shop::stock;

@autonomous
fn audit(sku: text) {
    sql! { insert into audit_log (sku) values (:sku) };
}

@retry(n = 3, backoff = 50)
pub fn place(sku: text, count: number) -> Result<(), stock::OutOfStock> {
    let wanted = count + 1;
    audit(sku);
    stock::reserve(sku, wanted)?;
    return Ok(());
}

pub fn first(sku: text) -> stock::Item {
    return stock::Item { sku, count: stock::level(sku) };
}
"""
TIMEOUT = 30.0  # seconds for the server to publish: a slow shared machine, not a slow server


class Client(LanguageClient):
    """pytest-lsp's client, keeping each publication's document version too."""

    root: Path  # the project's folder
    initialized: types.InitializeResult
    versions: dict[str, int | None]
    registrations: list[types.Registration]


def _publish(client: Client, params: types.PublishDiagnosticsParams) -> None:
    client.diagnostics[params.uri] = params.diagnostics
    client.versions[params.uri] = params.version


def _register(client: Client, params: types.RegistrationParams) -> None:
    client.registrations += params.registrations


def make_client() -> Client:
    client = Client(converter_factory=default_converter)
    client.versions = {}
    client.registrations = []
    features = dict(DEFAULT_CLIENT_FEATURES)
    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = _publish
    features[types.CLIENT_REGISTER_CAPABILITY] = _register
    register_lsp_features(client, features)
    return client


SERVER = ClientServerConfig(
    server_command=[sys.executable, "-m", "pell", "lsp"], client_factory=make_client
)


async def start(client: Client, workspace: Path, project: Path) -> None:
    """The two modules and a pell.toml in `project`; the editor's workspace folder `workspace`
    (the project, or a folder above it)."""
    project.mkdir(parents=True, exist_ok=True)
    (project / "pell.toml").write_text('target = "23ai"\n', encoding="utf-8")
    (project / "stock.pell").write_text(STOCK, encoding="utf-8")
    (project / "orders.pell").write_text(ORDERS, encoding="utf-8")
    client.root = project
    client.initialized = await client.initialize_session(
        types.InitializeParams(
            capabilities=pytest_lsp.client_capabilities("visual-studio-code"),
            root_uri=workspace.as_uri(),
            workspace_folders=[types.WorkspaceFolder(workspace.as_uri(), "shop")],
        )
    )


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: Client, request: pytest.FixtureRequest) -> AsyncIterator[None]:
    root: Path = request.getfixturevalue("tmp_path")
    await start(lsp_client, root, root)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=SERVER)
async def client_above(lsp_client: Client, request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """The workspace is a repository whose Pell project is in its folder `db`."""
    root: Path = request.getfixturevalue("tmp_path")
    (root / "README.md").write_text("a repository\n", encoding="utf-8")
    await start(lsp_client, root, root / "db")
    yield
    await lsp_client.shutdown_session()


def uri(client: Client, name: str) -> str:
    return (client.root / name).as_uri()


def position(text: str, needle: str, after: int = 0) -> types.Position:
    """Where `needle` starts in `text` (plus `after` characters), as an LSP position: lines
    broken at \n only, the character in UTF-16 code units (the protocol's default, which
    the test client keeps)."""
    offset = text.index(needle) + after
    line = text.count("\n", 0, offset)
    before = text[text.rfind("\n", 0, offset) + 1 : offset]
    return types.Position(line, len(before.encode("utf-16-le")) // 2)


async def published(
    client: Client,
    name: str,
    accept: Callable[[Sequence[types.Diagnostic]], bool],
    version: int | None = None,
) -> Sequence[types.Diagnostic]:
    """The diagnostics the server publishes for `name` once they pass `accept` (and, given
    `version`, carry that document version)."""
    wanted = uri(client, name)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while loop.time() < deadline:
        shown = client.diagnostics.get(wanted)
        if shown is not None and accept(shown) and version in (None, client.versions[wanted]):
            return shown
        await asyncio.sleep(0.02)
    shown = [d.message for d in client.diagnostics.get(wanted, [])]
    raise AssertionError(f"no accepted diagnostics for {name} (last: {shown})")


def codes(diagnostics: Sequence[types.Diagnostic]) -> list[str]:
    return sorted(str(d.code) for d in diagnostics)


def errors(diagnostics: Sequence[types.Diagnostic]) -> list[str]:
    return sorted(str(d.code) for d in diagnostics if d.severity == types.DiagnosticSeverity.Error)


def open_document(client: Client, name: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri(client, name), "pell", version, text)
        )
    )


def change_document(client: Client, name: str, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version, uri(client, name)),
            [types.TextDocumentContentChangeWholeDocument(text)],
        )
    )


async def test_open_publishes_the_module_diagnostics_with_its_version(client: Client) -> None:
    typo = ORDERS.replace("stock::reserve(sku, wanted)", "stock::reserve(sku, wantd)")
    open_document(client, "orders.pell", typo, version=7)
    shown = await published(client, "orders.pell", lambda d: "unknown-name" in codes(d), 7)
    error = next(d for d in shown if d.code == "unknown-name")
    assert error.range == types.Range(
        position(typo, "wantd)"), position(typo, "wantd)", len("wantd"))
    )
    assert error.message.startswith("unknown name `wantd`; did you mean `wanted`?")
    assert error.source == "pellc"


async def test_each_change_republishes_with_the_new_version(client: Client) -> None:
    open_document(client, "orders.pell", ORDERS, version=1)
    await published(client, "orders.pell", lambda d: not errors(d), 1)
    broken = ORDERS.replace("let wanted = count + 1;", "let wanted = count + true;")
    change_document(client, "orders.pell", broken, version=2)
    await published(client, "orders.pell", lambda d: errors(d) == ["type-mismatch"], 2)
    change_document(client, "orders.pell", ORDERS, version=3)
    await published(client, "orders.pell", lambda d: not errors(d), 3)


async def test_a_change_to_an_imported_module_republishes_its_importer(client: Client) -> None:
    """`orders` is not open: its diagnostics change because `stock`, which it imports, did."""
    open_document(client, "stock.pell", STOCK, version=1)
    await published(client, "stock.pell", lambda d: not errors(d), 1)
    renamed = STOCK.replace("pub fn reserve(", "pub fn reserve_items(")
    change_document(client, "stock.pell", renamed, version=2)
    shown = await published(client, "orders.pell", lambda d: "unknown-fn" in codes(d))
    assert any("has no fn `reserve`" in d.message for d in shown)
    assert client.versions[uri(client, "orders.pell")] is None  # not open: no version
    change_document(client, "stock.pell", STOCK, version=3)
    await published(client, "orders.pell", lambda d: not errors(d))


async def test_close_drops_the_unsaved_text(client: Client) -> None:
    typo = ORDERS.replace("count + 1", "countt + 1")
    open_document(client, "orders.pell", typo, version=1)
    await published(client, "orders.pell", lambda d: "unknown-name" in codes(d), 1)
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri(client, "orders.pell")))
    )
    await published(client, "orders.pell", lambda d: not errors(d), None)
    assert client.versions[uri(client, "orders.pell")] is None  # no open document's version


async def test_files_changed_on_disk_are_read_again(client: Client) -> None:
    """A file changed outside the editor (workspace/didChangeWatchedFiles), and one saved
    (didSave): the engine reads the disk again."""
    open_document(client, "orders.pell", ORDERS, version=1)
    await published(client, "orders.pell", lambda d: not errors(d), 1)
    watched = [r for r in client.registrations if r.method == "workspace/didChangeWatchedFiles"]
    assert len(watched) == 1  # the server asked the editor to tell it of .pell files
    stock = client.root / "stock.pell"
    stock.write_text(STOCK.replace("pub fn level(", "pub fn level_of("), encoding="utf-8")
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            [types.FileEvent(stock.as_uri(), types.FileChangeType.Changed)]
        )
    )
    await published(client, "orders.pell", lambda d: "unknown-fn" in codes(d))
    stock.write_text(STOCK, encoding="utf-8")
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(stock.as_uri()))
    )
    await published(client, "orders.pell", lambda d: not errors(d))


async def hover_text(client: Client, name: str, text: str, needle: str, after: int = 0) -> str:
    hover = await client.text_document_hover_async(
        types.HoverParams(
            types.TextDocumentIdentifier(uri(client, name)), position(text, needle, after)
        )
    )
    assert hover is not None, f"no hover on {needle!r}"
    assert isinstance(hover.contents, types.MarkupContent)
    return hover.contents.value


async def test_hover_shows_types_and_signatures(client: Client) -> None:
    open_document(client, "orders.pell", ORDERS)
    await published(client, "orders.pell", lambda d: True, 1)
    local = await hover_text(client, "orders.pell", ORDERS, "wanted)?")
    assert "let wanted: number" in local
    param = await hover_text(client, "orders.pell", ORDERS, "count + 1")
    assert "param count: number" in param
    other = await hover_text(client, "orders.pell", ORDERS, "reserve(sku")
    assert "pub fn reserve(sku: text, count: number) -> Result<(), OutOfStock>" in other
    assert "shop::stock" in other
    record = await hover_text(client, "orders.pell", ORDERS, "Item {")
    assert "pub record Item { sku: text, count: number }" in record
    module = await hover_text(client, "orders.pell", ORDERS, "stock::level")
    assert "module shop::stock" in module


async def test_hover_on_a_retry_fn_shows_explain_and_verify(client: Client) -> None:
    open_document(client, "orders.pell", ORDERS)
    await published(client, "orders.pell", lambda d: True, 1)
    shown = await hover_text(client, "orders.pell", ORDERS, "place(")
    path = client.root / "orders.pell"
    explained = subprocess.run(
        [sys.executable, "-m", "pell", "explain", str(path), "place"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert explained.strip() in shown  # what `pellc explain` prints, word for word
    assert "cannot    deadlock (ORA-00060)" in shown  # what it retries and cannot cure
    # the verify finding of place: audit() commits on its own, and a retry repeats it
    assert "[verify-repeated-effect]" in shown
    assert "39 schedules" in shown


async def test_definition_across_modules(client: Client) -> None:
    open_document(client, "orders.pell", ORDERS)
    await published(client, "orders.pell", lambda d: True, 1)

    async def definition(needle: str, after: int = 0) -> types.Location:
        found = await client.text_document_definition_async(
            types.DefinitionParams(
                types.TextDocumentIdentifier(uri(client, "orders.pell")),
                position(ORDERS, needle, after),
            )
        )
        assert isinstance(found, types.Location), f"no definition of {needle!r}"
        return found

    fn = await definition("reserve(sku")
    assert fn.uri == uri(client, "stock.pell")
    assert fn.range.start == position(STOCK, "reserve(")
    record = await definition("Item {")
    assert record.range.start == position(STOCK, "Item {")
    error = await definition("OutOfStock>")
    assert error.range.start == position(STOCK, "OutOfStock {")
    module = await definition("stock::level")
    assert (module.uri, module.range.start) == (
        uri(client, "stock.pell"),
        position(STOCK, "shop::stock"),
    )
    local = await definition("wanted)?")
    assert (local.uri, local.range.start) == (
        uri(client, "orders.pell"),
        position(ORDERS, "wanted ="),
    )


async def test_references_across_modules(client: Client) -> None:
    open_document(client, "stock.pell", STOCK)
    await published(client, "stock.pell", lambda d: True, 1)
    found = await client.text_document_references_async(
        types.ReferenceParams(
            context=types.ReferenceContext(include_declaration=True),
            text_document=types.TextDocumentIdentifier(uri(client, "stock.pell")),
            position=position(STOCK, "Item {"),
        )
    )
    assert found is not None
    places = sorted((loc.uri.rsplit("/", 1)[1], loc.range.start.line) for loc in found)
    # its declaration, and orders' return type and record literal (both on their lines)
    assert places == [("orders.pell", 17), ("orders.pell", 18), ("stock.pell", 3)]


async def test_document_symbols(client: Client) -> None:
    open_document(client, "stock.pell", STOCK)
    await published(client, "stock.pell", lambda d: True, 1)
    found = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(types.TextDocumentIdentifier(uri(client, "stock.pell")))
    )
    assert found is not None
    shown = [(s.name, s.kind) for s in found if isinstance(s, types.DocumentSymbol)]
    assert shown == [
        ("Item", types.SymbolKind.Struct),
        ("OutOfStock", types.SymbolKind.Class),
        ("reserve", types.SymbolKind.Function),
        ("level", types.SymbolKind.Function),
        ("hidden", types.SymbolKind.Function),
    ]


async def completions(client: Client, name: str, text: str, line: int, character: int) -> list[str]:
    found = await client.text_document_completion_async(
        types.CompletionParams(
            types.TextDocumentIdentifier(uri(client, name)), types.Position(line, character)
        )
    )
    items = found.items if isinstance(found, types.CompletionList) else found or []
    return sorted(item.label for item in items)


async def test_completion_after_a_module_name_and_in_retry(client: Client) -> None:
    typing = ORDERS.replace(
        "    return Ok(());\n}\n\npub fn first",
        "    stock::\n    return Ok(());\n}\n\npub fn first",
    )
    open_document(client, "orders.pell", typing)
    await published(client, "orders.pell", lambda d: True, 1)
    line = typing.splitlines().index("    stock::")
    public = await completions(client, "orders.pell", typing, line, len("    stock::"))
    assert public == ["Item", "OutOfStock", "level", "reserve"]  # not the private `hidden`
    retry_line = typing.splitlines().index("@retry(n = 3, backoff = 50)")
    arguments = await completions(client, "orders.pell", typing, retry_line, len("@retry(n = 3, "))
    assert arguments == sorted(
        [
            "n",
            "backoff",
            "jitter",
            "exponential",
            "cap",
            "on",
            "scope",
            "isolation",
            "within",
            "recover",
            "observe",
        ]
    )
    value = await completions(client, "orders.pell", typing, retry_line, len("@retry(n = "))
    assert value == []  # a value goes there, not a name


async def test_code_action_applies_the_did_you_mean(client: Client) -> None:
    typo = ORDERS.replace("stock::reserve(sku, wanted)", "stock::reserve(sku, wantd)")
    open_document(client, "orders.pell", typo)
    shown = await published(client, "orders.pell", lambda d: "unknown-name" in codes(d), 1)
    error = next(d for d in shown if d.code == "unknown-name")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            types.TextDocumentIdentifier(uri(client, "orders.pell")),
            error.range,
            types.CodeActionContext([error]),
        )
    )
    assert actions is not None and len(actions) == 1
    action = actions[0]
    assert isinstance(action, types.CodeAction)
    assert action.kind == types.CodeActionKind.QuickFix
    assert action.edit is not None and action.edit.changes is not None
    edit = action.edit.changes[uri(client, "orders.pell")]
    assert list(edit) == [types.TextEdit(error.range, "wanted")]


async def test_unknown_fn_carries_the_close_name_as_its_fix() -> None:
    """The quick fix comes from the diagnostic itself (pell.diagnostics.Fix), as for names."""
    from pell import compile_source

    text = "module m;\n\nfn total() -> number {\n    return 1;\n}\n\nfn f() {\n    totl();\n}\n"
    result = compile_source(text, "m.pell")
    error = next(d for d in result.diagnostics if d.code == "unknown-fn")
    assert [(text[f.span.start : f.span.end], f.text) for f in error.fixes] == [("totl", "total")]


async def test_without_pygls_lsp_says_how_to_install_it() -> None:
    hidden = "import sys; sys.modules['pygls'] = None; from pell.cli import main; sys.exit(main(['lsp']))"
    run = subprocess.run(
        [sys.executable, "-c", hidden], capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    assert (run.returncode, run.stderr) == (
        2,
        f"pellc: error: pellc lsp needs pygls: {shlex.quote(sys.executable)} -m pip install "
        "'pygls>=2,<3'\n",
    )


async def test_exit_code_follows_shutdown() -> None:
    """LSP: `exit` after `shutdown` is exit code 0, without it 1; nothing but JSON-RPC is
    written to standard output."""
    import json

    def message(body: dict[str, object]) -> bytes:
        data = json.dumps(body).encode()
        return b"Content-Length: %d\r\n\r\n" % len(data) + data

    initialize = message(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
    )
    exit_ = message({"jsonrpc": "2.0", "method": "exit"})
    shutdown = message({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    for given, code in ((initialize + shutdown + exit_, 0), (initialize + exit_, 1)):
        run = subprocess.run(
            [sys.executable, "-m", "pell", "lsp", "--stdio"], input=given, capture_output=True
        )
        assert run.returncode == code, run.stderr
        assert run.stdout.startswith(b"Content-Length: ")


# ---- review 13: the document's text, stale diagnostics, projects, positions -------------


def change_range(
    client: Client, name: str, start: types.Position, end: types.Position, text: str, version: int
) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version, uri(client, name)),
            [types.TextDocumentContentChangePartial(types.Range(start, end), text)],
        )
    )


async def test_a_line_separator_in_a_comment_moves_no_edit(client: Client) -> None:
    """LSP breaks lines at \\n, \\r\\n and \\r only; Python's str.splitlines also at U+2028, form
    feed and the like. The server asks for the whole text on each change, and applies a range
    a client sends all the same on LSP's lines: its text stays the editor's."""
    sync = client.initialized.capabilities.text_document_sync
    assert isinstance(sync, types.TextDocumentSyncOptions)
    assert sync.change == types.TextDocumentSyncKind.Full
    text = ORDERS.replace("@retry(", "// one line\u2028still the comment\x0cand still\n@retry(")
    open_document(client, "orders.pell", text, version=1)
    await published(client, "orders.pell", lambda d: not errors(d), 1)
    start = position(text, "wanted)?")
    end = position(text, "wanted)?", len("wanted"))
    change_range(client, "orders.pell", start, end, "wantd", version=2)
    shown = await published(client, "orders.pell", lambda d: bool(errors(d)), 2)
    edited = text.replace("wanted)?", "wantd)?")
    assert [(d.code, d.range) for d in shown if d.severity == types.DiagnosticSeverity.Error] == [
        ("unknown-name", types.Range(position(edited, "wantd)"), position(edited, "wantd)", 5)))
    ]
    # completion reads the line the cursor is on in LSP's lines too
    typing = edited.replace(
        "    return Ok(());\n}\n\npub fn first",
        "    stock::\n    return Ok(());\n}\n\npub fn first",
    )
    change_document(client, "orders.pell", typing, version=3)
    await published(client, "orders.pell", lambda d: True, 3)
    line = typing.split("\n").index("    stock::")
    assert await completions(client, "orders.pell", typing, line, len("    stock::")) == [
        "Item",
        "OutOfStock",
        "level",
        "reserve",
    ]


def watched(client: Client, *changes: tuple[Path, types.FileChangeType]) -> None:
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            [types.FileEvent(p.as_uri(), kind) for p, kind in changes]
        )
    )


def close_document(client: Client, name: str) -> None:
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri(client, name)))
    )


async def test_a_deleted_file_is_cleared_and_its_importers_published(client: Client) -> None:
    scratch = client.root / "scratch.pell"
    text = "module shop::scratch;\n\npub fn f() -> number {\n    return nope;\n}\n"
    scratch.write_text(text, encoding="utf-8")
    open_document(client, "scratch.pell", text)
    open_document(client, "orders.pell", ORDERS)
    await published(client, "scratch.pell", lambda d: errors(d) == ["unknown-name"], 1)
    await published(client, "orders.pell", lambda d: not errors(d), 1)
    scratch.unlink()
    (client.root / "stock.pell").unlink()
    watched(
        client,
        (scratch, types.FileChangeType.Deleted),
        (client.root / "stock.pell", types.FileChangeType.Deleted),
    )
    await published(client, "orders.pell", lambda d: "unknown-module" in errors(d), 1)
    close_document(client, "scratch.pell")  # gone from disk and from the editor
    await published(client, "scratch.pell", lambda d: not d, None)
    assert client.versions[uri(client, "scratch.pell")] is None


async def test_a_renamed_module_republishes_its_old_importer(client: Client) -> None:
    calling = ORDERS.replace("stock::level(sku)", "stock::level(sku, 2)")
    open_document(client, "orders.pell", calling)
    open_document(client, "stock.pell", STOCK)
    await published(client, "orders.pell", lambda d: errors(d) == ["arity"], 1)
    renamed = STOCK.replace("module shop::stock;", "module shop::stock2;")
    change_document(client, "stock.pell", renamed, version=2)
    # orders imports no module of that name any more: its arity error is stale
    await published(client, "orders.pell", lambda d: "arity" not in errors(d), 1)


async def test_a_duplicate_module_and_a_schema_clash_reach_the_other_file(client: Client) -> None:
    spare = "module shop::spare;\n\npub fn g() -> number {\n    return 2;\n}\n"
    (client.root / "spare.pell").write_text(spare, encoding="utf-8")
    open_document(client, "stock.pell", STOCK)
    open_document(client, "spare.pell", spare)
    await published(client, "stock.pell", lambda d: not errors(d), 1)
    change_document(client, "spare.pell", spare.replace("shop::spare", "shop::stock"), version=2)
    await published(client, "stock.pell", lambda d: errors(d) == ["duplicate-module"], 1)
    change_document(client, "spare.pell", spare, version=3)
    await published(client, "stock.pell", lambda d: not errors(d), 1)
    # a schema-level function `hr` (an aggregate) and a package `hr` (a module)
    aggregate = (
        "module shop::sums;\n\npub aggregate hr(x: number) -> number {\n"
        "    state { s: number = 0; }\n    step(x: number) { self.s = self.s + x; }\n"
        "    merge(o: Self) { self.s = self.s + o.s; }\n    finish() -> number { return self.s; }\n}\n"
    )
    (client.root / "sums.pell").write_text(aggregate, encoding="utf-8")
    open_document(client, "sums.pell", aggregate)
    await published(client, "sums.pell", lambda d: not errors(d), 1)
    change_document(client, "spare.pell", spare.replace("shop::spare", "shop::hr"), version=4)
    await published(client, "sums.pell", lambda d: errors(d) == ["duplicate-name"], 1)
    change_document(client, "spare.pell", spare, version=5)
    await published(client, "sums.pell", lambda d: not errors(d), 1)


async def test_an_out_parameter_is_declared_at_its_name(client: Client) -> None:
    text = (
        "module shop::calls;\n\npub fn bump(inout counter: int, out label: text) {\n"
        '    counter = counter + 1;\n    label = "counter is {counter}";\n}\n'
    )
    (client.root / "calls.pell").write_text(text, encoding="utf-8")
    open_document(client, "calls.pell", text)
    await published(client, "calls.pell", lambda d: not errors(d), 1)
    for name, use in (("counter", "counter + 1"), ("label", "label =")):
        found = await client.text_document_definition_async(
            types.DefinitionParams(
                types.TextDocumentIdentifier(uri(client, "calls.pell")), position(text, use)
            )
        )
        assert isinstance(found, types.Location)
        declared = position(text, f"{name}: ")
        assert found.range == types.Range(declared, position(text, f"{name}: ", len(name)))
    hover = await client.text_document_hover_async(
        types.HoverParams(
            types.TextDocumentIdentifier(uri(client, "calls.pell")), position(text, "out label")
        )
    )
    assert hover is None  # the keyword is no name


async def test_a_new_file_not_saved_yet_is_a_module(client: Client) -> None:
    text = (
        "module shop::scratch;\n\npub fn f(n: number) -> number {\n"
        "    let doubled = n * 2;\n    return doubled + nope;\n}\n"
    )
    assert not (client.root / "scratch.pell").exists()
    open_document(client, "scratch.pell", text)
    await published(client, "scratch.pell", lambda d: errors(d) == ["unknown-name"], 1)
    assert "let doubled: number" in await hover_text(client, "scratch.pell", text, "doubled +")


async def test_a_workspace_above_the_project_finds_the_document_s_project(
    client_above: Client,
) -> None:
    client = client_above
    assert client.root.name == "db"  # the workspace folder is its parent, with no pell.toml
    typo = ORDERS.replace("stock::reserve(sku, wanted)", "stock::reserve(sku, wantd)")
    open_document(client, "orders.pell", typo)
    await published(client, "orders.pell", lambda d: errors(d) == ["unknown-name"], 1)
    other = await hover_text(client, "orders.pell", typo, "reserve(sku")
    assert "pub fn reserve(sku: text, count: number)" in other


async def test_a_file_of_another_project_is_compiled_with_its_own(
    client: Client, tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "pell.toml").write_text("", encoding="utf-8")
    (elsewhere / "stock.pell").write_text(STOCK, encoding="utf-8")  # module shop::stock too
    open_document(client, "stock.pell", STOCK)
    await published(client, "stock.pell", lambda d: not errors(d), 1)
    other = str(elsewhere / "stock.pell")
    open_document(client, other, STOCK.replace("return 1;", "return nope;"))
    await published(client, other, lambda d: errors(d) == ["unknown-name"], 1)
    # and no duplicate-module for either file
    await published(client, "stock.pell", lambda d: not errors(d), 1)
    found = await client.text_document_definition_async(
        types.DefinitionParams(
            types.TextDocumentIdentifier(uri(client, other)), position(STOCK, "Item {")
        )
    )
    assert isinstance(found, types.Location) and found.uri == uri(client, other)


async def test_positions_are_utf16_after_a_character_outside_the_bmp(client: Client) -> None:
    """📦 is one code point, two UTF-16 units and four UTF-8 bytes: a column counted in any
    other unit than the client's is off by one or more."""
    text = ORDERS.replace("audit(sku);", "/* 📦 */ audit(skux);").replace(
        "stock::reserve(sku, wanted)?", "stock::reserve(/* 📦 */ sku, /* 📦 */ wanted)?"
    )
    open_document(client, "orders.pell", text)
    shown = await published(client, "orders.pell", lambda d: errors(d) == ["unknown-name"], 1)
    error = next(d for d in shown if d.code == "unknown-name")
    assert error.range == types.Range(position(text, "skux"), position(text, "skux", 4))
    hover = await client.text_document_hover_async(
        types.HoverParams(
            types.TextDocumentIdentifier(uri(client, "orders.pell")), position(text, "wanted)?", 2)
        )
    )
    assert hover is not None
    assert hover.range == types.Range(position(text, "wanted)?"), position(text, "wanted)?", 6))
    found = await client.text_document_definition_async(
        types.DefinitionParams(
            types.TextDocumentIdentifier(uri(client, "orders.pell")), position(text, "wanted)?", 2)
        )
    )
    assert isinstance(found, types.Location)
    assert found.range.start == position(text, "wanted =")


async def test_a_settings_change_is_read_again(client: Client) -> None:
    """pell.toml is watched too: its edit starts the project again (here another target)."""
    keys = "module shop::keys;\n\npub fn keys(j: json) -> list<text> {\n    return json::get_keys(j);\n}\n"
    (client.root / "keys.pell").write_text(keys, encoding="utf-8")
    open_document(client, "keys.pell", keys)
    await published(client, "keys.pell", lambda d: not errors(d), 1)
    # the server asked the editor to tell it of the settings files too (the options arrive
    # as JSON: the client does not know their type)
    options = [r.register_options for r in client.registrations]
    globs = [w["globPattern"] for o in options if isinstance(o, dict) for w in o["watchers"]]
    assert globs == ["**/*.pell", "**/pyproject.toml", "**/pell.toml"]
    (client.root / "pell.toml").write_text('target = "postgres"\n', encoding="utf-8")
    watched(client, (client.root / "pell.toml", types.FileChangeType.Changed))
    await published(client, "keys.pell", lambda d: bool(errors(d)), 1)  # no key order there
    (client.root / "pell.toml").write_text('target = "23ai"\n', encoding="utf-8")
    watched(client, (client.root / "pell.toml", types.FileChangeType.Changed))
    await published(client, "keys.pell", lambda d: not errors(d), 1)


async def test_a_qualified_unknown_fn_offers_its_close_name(client: Client) -> None:
    typo = ORDERS.replace("stock::level(sku)", "stock::levl(sku)")
    open_document(client, "orders.pell", typo)
    shown = await published(client, "orders.pell", lambda d: errors(d) == ["unknown-fn"], 1)
    error = next(d for d in shown if d.code == "unknown-fn")
    assert error.message.startswith("module `shop.stock` has no fn `levl`; did you mean `level`?")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            types.TextDocumentIdentifier(uri(client, "orders.pell")),
            error.range,
            types.CodeActionContext([error]),
        )
    )
    assert actions is not None and len(actions) == 1
    action = actions[0]
    assert isinstance(action, types.CodeAction) and action.edit is not None
    assert action.edit.changes is not None
    assert list(action.edit.changes[uri(client, "orders.pell")]) == [
        types.TextEdit(types.Range(position(typo, "levl"), position(typo, "levl", 4)), "level")
    ]


async def test_names_of_pellc_s_stubs_answer_without_a_project_file(client: Client) -> None:
    """`dbms_output` is one of pellc's stubs: a module with no file of the project."""
    text = 'module shop::talk;\n\npub fn f() {\n    dbms_output::put_line("x");\n}\n'
    (client.root / "talk.pell").write_text(text, encoding="utf-8")
    open_document(client, "talk.pell", text)
    await published(client, "talk.pell", lambda d: not errors(d), 1)
    assert "module dbms_output" in await hover_text(client, "talk.pell", text, "dbms_output")
    assert "put_line" in await hover_text(client, "talk.pell", text, "put_line")
    found = await client.text_document_definition_async(
        types.DefinitionParams(
            types.TextDocumentIdentifier(uri(client, "talk.pell")), position(text, "put_line")
        )
    )
    assert found is None  # no file of the project to go to
    line = text.split("\n").index('    dbms_output::put_line("x");')
    listed = await completions(client, "talk.pell", text, line, len("    dbms_output::"))
    assert "put_line" in listed


async def test_settings_that_do_not_parse_are_shown_and_the_server_keeps_answering(
    client: Client,
) -> None:
    """A pell.toml broken while editing (review 15, finding 5): its error is published on
    pell.toml, the project keeps its engine (and so its diagnostics and hovers) until the
    settings parse again, and the error is cleared then."""
    open_document(client, "orders.pell", ORDERS)
    await published(client, "orders.pell", lambda d: not errors(d), 1)
    (client.root / "pell.toml").write_text("target = 12\n", encoding="utf-8")
    watched(client, (client.root / "pell.toml", types.FileChangeType.Changed))
    shown = await published(client, "pell.toml", lambda d: bool(d))
    assert [d.severity for d in shown] == [types.DiagnosticSeverity.Error]
    assert "target" in shown[0].message and "pell.toml" in shown[0].message
    typo = ORDERS.replace("stock::reserve(sku, wanted)", "stock::reserve(sku, wantd)")
    change_document(client, "orders.pell", typo, 2)
    await published(client, "orders.pell", lambda d: "unknown-name" in codes(d), 2)
    assert "count" in await hover_text(client, "orders.pell", typo, "count + 1")
    (client.root / "pell.toml").write_text('target = "23ai"\n', encoding="utf-8")
    watched(client, (client.root / "pell.toml", types.FileChangeType.Changed))
    await published(client, "pell.toml", lambda d: not d)
    assert client.messages == []


async def test_a_change_of_a_document_never_opened_is_ignored(client: Client) -> None:
    """A client's didChange of a URI it never opened (review 16, finding 11) shows the user
    nothing (pygls's own handler raised KeyError: "Error in server")."""
    change_document(client, "never.pell", "module never;\n", 2)
    open_document(client, "orders.pell", ORDERS)  # answered after the change: in order
    await published(client, "orders.pell", lambda d: not errors(d), 1)
    assert client.messages == []


async def test_a_document_opened_under_broken_settings_is_compiled_once_they_parse(
    client: Client,
) -> None:
    """No engine yet and settings that do not parse: the error is shown on pell.toml, requests
    answer (nothing), and the document is compiled when the settings are mended."""
    (client.root / "pell.toml").write_text("target = 12\n", encoding="utf-8")
    typo = ORDERS.replace("stock::reserve(sku, wanted)", "stock::reserve(sku, wantd)")
    open_document(client, "orders.pell", typo)
    await published(client, "pell.toml", lambda d: bool(d))
    assert (
        await client.text_document_hover_async(
            types.HoverParams(
                types.TextDocumentIdentifier(uri(client, "orders.pell")),
                position(typo, "count + 1"),
            )
        )
        is None
    )
    (client.root / "pell.toml").write_text('target = "23ai"\n', encoding="utf-8")
    watched(client, (client.root / "pell.toml", types.FileChangeType.Changed))
    await published(client, "orders.pell", lambda d: "unknown-name" in codes(d), 1)
    await published(client, "pell.toml", lambda d: not d)
    assert client.messages == []
