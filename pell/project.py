"""Projects: which modules a module can import, and the settings a project writes down.

A project is the set of `.pell` files under its root: the directory a command is given, or,
for a single file, the nearest directory above it holding a `pyproject.toml` with
`[tool.pellc]` or a `pell.toml` (language.md section 11). Modules find each other by their
declared names, wherever their files are. pellc's own stubs of Oracle packages (`pell/stubs`)
belong to every project; a project module of the same name takes their place.

`ModuleIndex` here is what the checker asks (`pell.checker.imports`): a module's parsed text,
and its declarations, each made once and kept.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from pell import ast
from pell.diagnostics import Diagnostic, SourceFile
from pell.records import record

if TYPE_CHECKING:
    from pell.checker.model import CheckedModule

STUBS_DIR = Path(__file__).resolve().parent / "stubs"
CONFIG_FILES = ("pyproject.toml", "pell.toml")
# A module whose file sits directly in a folder of this name is a stub, `@stub` or not: the
# public Pell runtime ships its stubs so (`runtime/stubs/dbms_lock.pell`, empty-bodied fns)
STUBS_FOLDER = "stubs"


def in_stubs_folder(path: Path | str) -> bool:
    """Is this file directly in a folder named `stubs`? (language.md, "Stubs"; a name given
    relative to the working directory counts that directory)"""
    return Path(os.path.abspath(path)).parent.name == STUBS_FOLDER


def as_located(module: ast.Module | None, path: Path | str | None) -> ast.Module | None:
    """The parsed module of the file at `path`: a stub when the file is in a `stubs` folder
    (a script never is: it declares no package)."""
    if module is None or path is None or module.script or not in_stubs_folder(path):
        return module
    from pell.records import replace

    return replace(module, stub_folder=True)

# A module's header, read without parsing the file (grammar/pell.lark: `module_decl:
# annotation* "module" module_path ";"`): enough to know which module a file declares and
# which annotations it has. The parse confirms it when the module is first needed. Read with
# the grammar's own lexical rules: WS and COMMENT between any two tokens, a NAME, and an
# annotation's arguments `( ... )` stepped over as the lexer reads them (strings with their
# `{...}` parts and `\` escapes, raw strings, comments, nested brackets), so a `)` inside a
# string closes nothing.
_GAP = re.compile(r"(?:[ \t\r\n\f]+|//[^\n]*|/\*.*?\*/)*", re.DOTALL)  # WS, COMMENT
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CLOSERS = {"(": ")", "[": "]", "{": "}"}


def _gap_end(text: str, index: int) -> int:
    """Where the whitespace and comments at `index` end."""
    gap = _GAP.match(text, index)
    assert gap is not None  # it matches the empty string
    return gap.end()


@record
class Header:
    """What a module's header declares: its path, and the names of its annotations."""

    path: tuple[str, ...]
    annotations: frozenset[str]


def _skip_group(text: str, index: int) -> int | None:
    """The index just past the bracket that closes the one at `index`, stepping over what the
    grammar lexes as one token (a string, a raw string, a comment); None if unclosed."""
    expected = [_CLOSERS[text[index]]]  # what closes each open bracket, or `"` in a string
    index += 1
    while expected:
        if index >= len(text):
            return None
        char = text[index]
        if expected[-1] == '"':  # STRING_TEXT: `\\x`, `{{` and `}}`; `{` opens an expression
            if char == "\\" or text.startswith(("{{", "}}"), index):
                index += 2
            elif char == "{":
                expected.append("}")
                index += 1
            elif char == "}":
                return None
            else:
                if char == '"':
                    expected.pop()
                index += 1
            continue
        if text.startswith(("//", "/*"), index):
            gap = _gap_end(text, index)
            if gap == index:
                return None  # an unterminated /* comment
            index = gap
        elif char == "`":  # RAW_STRING
            end = text.find("`", index + 1)
            if end < 0:
                return None
            index = end + 1
        elif char == '"' or char in _CLOSERS:
            expected.append('"' if char == '"' else _CLOSERS[char])
            index += 1
        elif char in ")]}":
            if char != expected.pop():
                return None
            index += 1
        else:
            index += 1
    return index


def read_header(text: str) -> Header | None:
    """The header of a source text, read as the grammar reads it; None if it has none."""
    annotations = []
    index = _gap_end(text, 0)
    while text.startswith("@", index):
        name = _NAME.match(text, _gap_end(text, index + 1))
        if name is None:
            return None
        annotations.append(name.group())
        index = _gap_end(text, name.end())
        if text.startswith("(", index):
            end = _skip_group(text, index)
            if end is None:
                return None
            index = _gap_end(text, end)
    keyword = _NAME.match(text, index)
    if keyword is None or keyword.group() != "module":
        return None
    parts: list[str] = []
    separator = None  # `.` or `::`, one of them throughout (module_path)
    index = keyword.end()
    while True:
        name = _NAME.match(text, _gap_end(text, index))
        if name is None:
            return None
        parts.append(name.group())
        index = _gap_end(text, name.end())
        if text.startswith(";", index):
            return Header(tuple(parts), frozenset(annotations))
        found = "::" if text.startswith("::", index) else "." if text.startswith(".", index) else None
        if found is None or separator not in (None, found):
            return None
        separator = found
        index += len(found)


def file_identity(path: Path) -> tuple[int, int] | str:
    """What makes two names one file: its device and inode, the same through `..`, a symlink
    or a hard link (one stat; os.path.realpath costs 40 us a path in Python, a build asks this
    of every module). A name that cannot be stat'ed (missing, dangling, a loop), or whose file
    system gives no inode, is its resolved path."""
    try:
        stat = os.stat(path)
    except OSError:
        return os.path.realpath(path)  # never raises on a loop (strict=False)
    except ValueError:  # a NUL in the name
        return os.path.abspath(path)
    # Python's os docs, stat_result.st_ino: "if non-zero, uniquely identifies the file for a
    # given value of st_dev" (a Windows file system may give 0)
    return (stat.st_dev, stat.st_ino) if stat.st_ino else os.path.realpath(path)


def declared_path(text: str) -> tuple[str, ...] | None:
    """The module path a source text declares, read from its header; None if unreadable."""
    header = read_header(text)
    return header.path if header is not None else None


# ---- configuration -----------------------------------------------------------


class ConfigError(Exception):
    """A `[tool.pellc]` table pellc cannot use: one line naming the file and the problem;
    `path`, that file (a json error line's `path`)."""

    def __init__(self, message: str, path: Path | None = None) -> None:
        super().__init__(message)
        self.path = path


@record
class Config:
    """`[tool.pellc]` in pyproject.toml, or the top level of pell.toml."""

    root: Path | None = None  # the directory holding the configuration file
    path: Path | None = None  # the configuration file
    target: str | None = None
    warnings_as_errors: bool = False
    allow: frozenset[str] = frozenset()  # warning codes not shown
    error_codes: str = "pell-error-codes.json"  # relative to the root

    def settle(self, diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
        """`allow` and `warnings-as-errors` applied to a file's diagnostics."""
        from pell.diagnostics import settle

        return settle(diagnostics, self.allow, self.warnings_as_errors)

    @property
    def error_codes_path(self) -> Path | None:
        return self.root / self.error_codes if self.root is not None else None


_KEYS = {"target", "warnings-as-errors", "allow", "error-codes"}


def read_config(path: Path) -> Config | None:
    """The pellc settings in `path`; None when it is a pyproject.toml without `[tool.pellc]`."""
    import tomllib  # here: most runs find no settings file (8 ms of imports saved)

    from pell.diagnostics import CODES, did_you_mean
    from pell.naming import TARGETS

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read: {error}", path) from error
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}", path) from error
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get("pellc")
        if table is None:
            return None
    else:
        table = data
    where = f"{path}: [tool.pellc]" if path.name == "pyproject.toml" else str(path)
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: must be a table", path)
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown setting `{unknown[0]}`; pellc reads {', '.join(sorted(_KEYS))}", path)
    target = table.get("target")
    if target is not None and target not in TARGETS:
        raise ConfigError(f"{where}: target `{target}` is not one of {', '.join(TARGETS)}", path)
    strict = table.get("warnings-as-errors", False)
    if not isinstance(strict, bool):
        raise ConfigError(f"{where}: `warnings-as-errors` is true or false", path)
    allow = table.get("allow", [])
    if not (isinstance(allow, list) and all(isinstance(a, str) for a in allow)):
        raise ConfigError(f"{where}: `allow` is a list of warning codes", path)
    for code in allow:
        if code not in CODES:
            # only a warning can be allowed: the suggestion is one
            warnings = [name for name, (severity, _) in CODES.items() if severity.value == "warning"]
            suggestion = did_you_mean(code, warnings)
            raise ConfigError(f"{where}: `allow` names `{code}`, which is no pellc code{suggestion}", path)
        if CODES[code][0].value == "error":
            raise ConfigError(f"{where}: `allow` names `{code}`, an error; only warnings can be allowed", path)
    codes = table.get("error-codes", "pell-error-codes.json")
    if not isinstance(codes, str) or not codes:
        raise ConfigError(f"{where}: `error-codes` is a file name", path)
    return Config(path.parent, path, target, strict, frozenset(allow), codes)


def find_config(start: Path) -> Config:
    """The settings of the nearest directory at or above `start` that has them (none: the
    defaults, and no project root)."""
    directory = Path(os.path.abspath(start))  # not resolve(): a symlink loop must not raise
    if not directory.is_dir():
        directory = directory.parent
    for candidate in (directory, *directory.parents):
        for name in CONFIG_FILES:
            path = candidate / name
            if path.is_file():
                config = read_config(path)
                if config is not None:
                    return config
    return Config()


# ---- the index of modules ----------------------------------------------------


@functools.cache
def _stub_files() -> dict[tuple[str, ...], Path]:
    if not STUBS_DIR.is_dir():
        return {}
    return {(path.stem,): path for path in sorted(STUBS_DIR.glob("*.pell"))}


@functools.cache
def _parsed_stub(path: Path) -> ast.Module:
    from pell.syntax import parse

    module, diagnostics = parse(path.read_text(encoding="utf-8"))
    assert module is not None and not diagnostics, f"pellc's stub {path.name} does not parse"
    return module


def shipped_stubs() -> list[tuple[str, ...]]:
    """The Oracle packages pellc ships stubs for."""
    return sorted(_stub_files())


@record(frozen=False)
class ProjectFile:
    """One source file of a project, read; parsed when first needed."""

    path: Path
    source: SourceFile
    declares: tuple[str, ...] | None  # from the header
    _parsed: tuple[ast.Module | None] | None = None

    @property
    def module(self) -> ast.Module | None:
        if self._parsed is None:
            from pell.syntax import parse

            self._parsed = (as_located(parse(self.source.text)[0], self.path),)
        return self._parsed[0]


class ModuleIndex:
    """The modules of a project and pellc's stubs, by declared path; what the checker reads
    of the modules a module imports. Without files it holds the stubs only (one text compiled
    on its own: an import of a module it does not know stays an unchecked package)."""

    def __init__(
        self,
        files: Iterable[ProjectFile] = (),
        is_project: bool = False,
        config: Config | None = None,
    ) -> None:
        self.is_project = is_project
        self.config = config or Config()  # the project's settings, applied by each compile
        self.files: dict[tuple[str, ...], list[ProjectFile]] = {}
        for file in files:
            if file.declares is not None:
                self.files.setdefault(_key(file.declares), []).append(file)
        self._declared: dict[tuple[str, ...], CheckedModule | None] = {}

    def parsed(self, path: tuple[str, ...]) -> ast.Module | None:
        files = self.files.get(_key(path))
        if files:
            module = files[0].module
            return module if module is not None and _key(module.path) == _key(path) else None
        stub = _stub_files().get(_key(path))
        return _parsed_stub(stub) if stub is not None else None

    def settle(self, diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
        return self.config.settle(diagnostics)

    def declared(self, path: tuple[str, ...]) -> CheckedModule | None:
        key = _key(path)
        if key not in self._declared:
            from pell.checker import declare

            module = self.parsed(path)
            self._declared[key] = None if module is None else declare(module, self)
        return self._declared[key]


_IMPORT = re.compile(r"^\s*import\s+([A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*)\s*;", re.MULTILINE)
_QUALIFIER = re.compile(r"\b([A-Za-z_]\w*)\s*::")  # `alias::`, read as loosely as _IMPORT


class Project:
    """The files of one project, with the index their modules import from."""

    def __init__(
        self,
        files: list[ProjectFile],
        is_project: bool = True,
        config: Config | None = None,
        complete: bool = True,
    ) -> None:
        self.files = files
        self.config = config or Config()
        # False when a file of the project could not be listed, read or decoded: what it
        # declares is unknown (its error codes are not retired).
        self.complete = complete
        self.index = ModuleIndex(files, is_project, self.config)
        self._by_path = {file.path: file for file in files}
        self._by_identity: dict[tuple[int, int] | str, ProjectFile] | None = None  # when needed

    def duplicate_of(self, path: Path) -> Diagnostic | None:
        """An error at this file's module line when another file declares the same module
        (another file: the same one reached by another name is one file, see project_of)."""
        file = self.file(path)
        if file is None or file.declares is None:
            return None
        others = [f for f in self.index.files[_key(file.declares)] if f is not file]
        if not others:
            return None
        module = file.module
        span = module.span if module is not None else ast.Span(0, 0)
        shown = ", ".join(str(other.path) for other in others)
        return Diagnostic.of(
            "duplicate-module",
            f"module `{'.'.join(file.declares)}` is also declared in {shown}; a schema holds "
            "one package of a name",
            ast.Span(span.start, span.start),
            hints=("rename one of the modules",),
        )

    def file(self, path: Path) -> ProjectFile | None:
        """The project's copy of a file, by its path (however it was written: `..`, a
        symlink)."""
        found = self._by_path.get(path)
        if found is None:
            if self._by_identity is None:
                self._by_identity = {file_identity(f.path): f for f in self.files}
            found = self._by_identity.get(file_identity(path))
        return found

    def imported_files(self, path: Path) -> list[ProjectFile]:
        """The project files the module of `path` imports, at any depth (read from their
        `import` lines, so a commented-out import counts too: at worst one compile more)."""
        return self.imported_by([path])

    def imported_by(self, paths: Iterable[Path]) -> list[ProjectFile]:
        """The project files the modules of `paths` import (or name with no import, `alias::`),
        at any depth, each once: one walk for them all (imported_files of each would walk
        shared imports again and again)."""
        found: list[ProjectFile] = []
        seen: set[tuple[str, ...]] = set()
        pending = [file for file in map(self.file, paths) if file is not None]
        while pending:
            current = pending.pop()
            for key in map(self.import_key, import_keys(current.source.text)):
                if key not in seen:
                    seen.add(key)
                    imported = self.index.files.get(key, [])
                    found += imported
                    pending += imported
        return found

    def import_key(self, key: tuple[str, ...]) -> tuple[str, ...]:
        """The module a key of import_keys names in this project."""
        if key not in self.index.files and len(key) == 2 and key[0] == "std":
            return key[1:]  # `import std::logger;`: the module `logger`
        return key

    def stub_files(self) -> list[ProjectFile]:
        """The project's own stub modules (their header names `@stub`, or their file is in a
        `stubs` folder; the parse confirms it): called without an import, they are no file's
        import."""
        return [
            file
            for file in self.files
            if (header := read_header(file.source.text)) is not None
            and ("stub" in header.annotations or in_stubs_folder(file.path))
            and file.module is not None
            and file.module.is_stub
        ]

    def package_files(self, packages: set[str]) -> list[ProjectFile]:
        """The project files whose module's PL/SQL package has one of these names (lower
        case, any schema): read from their headers, parsed only for a `@package("name")`."""
        from pell.naming import package_name

        found = []
        for file in self.files if packages else ():
            if file.declares is None:
                continue
            chosen = None
            header = read_header(file.source.text)
            if header is not None and "package" in header.annotations and file.module is not None:
                chosen = file.module.chosen_package
            if package_name(file.declares, chosen)[1] in packages:
                found.append(file)
        return found

    def dependencies_hash(self, path: Path) -> str:
        """A digest of the text of every project module this file imports, at any depth: an
        unchanged file must be compiled again when one of them changed."""
        import hashlib

        digest = hashlib.sha256()
        for imported in self.imported_files(path):
            digest.update(repr(str(imported.path)).encode())
            digest.update(imported.source.text.encode("utf-8"))
        return digest.hexdigest()


@functools.lru_cache(maxsize=1024)  # a build asks it of each file once per importer
def import_keys(text: str) -> tuple[tuple[str, ...], ...]:
    """The modules a text imports or names (`alias::`), lower case, in order, read from its
    `import` lines and qualifiers without parsing it (loosely: a commented-out import counts)."""
    imported = [
        _key(tuple(p.strip() for p in match.group(1).split("::")))
        for match in _IMPORT.finditer(text)
    ]
    # a module of a one-part name is called with no import too (`catalog::tables()`)
    named = {(match.group(1).lower(),) for match in _QUALIFIER.finditer(text)}
    return (*imported, *sorted(named))


def _key(path: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(part.lower() for part in path)


@functools.cache
def stub_index() -> ModuleIndex:
    """The index of a text compiled on its own: pellc's stubs only."""
    return ModuleIndex()


def project_file(path: Path, text: str, shown: str | None = None) -> ProjectFile:
    return ProjectFile(path, SourceFile(shown or str(path), text), declared_path(text))
