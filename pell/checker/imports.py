"""What `alias::` means in one module: another module of the project, a stub of an Oracle
package, or an Oracle package pellc has no stub for (calls into it are not checked).

The checker sees other modules through a `ModuleIndex` (the project, `pell.project`): their
parsed text to know what they declare, and their declarations (records with field types, fn
signatures, errors, enums), made on demand and cached. Declaring a module needs only the
parsed text of the modules it imports, never their declarations, so modules may import each
other in a cycle, as PL/SQL packages may call each other.

Types that cross a module boundary are requalified: a record `Account` of `bank.accounts`
is `accounts::Account` (PL/SQL `bank.accounts.t_account`) in a module that imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from pell import ast, naming
from pell.checker import logger
from pell.checker import types as t
from pell.records import field, record, replace

if TYPE_CHECKING:
    from collections.abc import Iterable

    from pell.checker.model import CheckedModule, FnInfo, RecordInfo
    from pell.diagnostics import Diagnostic

# Modules of the public Pell standard library that pellc does not provide: importing one is
# an `unsupported` error, not a call into an Oracle package of that name that does not exist.
PELL_LIBRARY_MODULES = frozenset(
    {"json", "re", "jq", "agg", "io", "fmt", "strings", "math", "pivot", "bytes"}
)


class ModuleIndex(Protocol):
    """The modules a module can import: the project's and pellc's stubs."""

    # True for a project: an import that names no module of it is an error. False when only
    # pellc's stubs are known (one text compiled on its own).
    is_project: bool

    def parsed(self, path: tuple[str, ...]) -> ast.Module | None: ...

    def declared(self, path: tuple[str, ...]) -> CheckedModule | None: ...

    def settle(self, diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
        """The project's settings (allowed warnings, warnings as errors) applied."""
        ...


def plsql_package(module: ast.Module) -> str:
    """The PL/SQL name other packages call a module by: `bank.accounts`, `orders`; a stub
    is the Oracle package itself."""
    if module.is_stub:
        return ".".join(module.path).lower()
    schema, package = naming.module_package(module)
    return f"{schema}.{package}" if schema else package


@record(frozen=False)
class Foreign:
    """A module named by `alias::` in the module being checked."""

    alias: str
    module: ast.Module
    index: ModuleIndex
    own_package: str  # the importing module's PL/SQL package, to recognise its own types
    importer: Imports | None = field(default=None, repr=False)  # the importing module's
    _declared: CheckedModule | None = field(default=None, repr=False)

    @property
    def package(self) -> str:
        return plsql_package(self.module)

    @property
    def is_stub(self) -> bool:
        return self.module.is_stub

    def declared(self) -> CheckedModule:
        if self._declared is None:
            found = self.index.declared(self.module.path)
            assert found is not None, f"module {self.module.dotted_name} vanished"
            self._declared = found
        return self._declared

    def item(self, name: str) -> ast.Item | None:
        return next((i for i in self.module.items if i.name == name), None)

    def record_type(self, name: str) -> t.RecordType:
        plsql = f"{self.package}.{name.lower() if self.is_stub else naming.record_type_name(name)}"
        return t.RecordType(name, self.alias, plsql)

    def localise(self, type_: t.Type) -> t.Type:
        """A type as the foreign module declared it -> the same type seen from the importer."""
        if isinstance(type_, t.ListType):
            return t.ListType(self.localise(type_.element))
        if not isinstance(type_, t.RecordType):
            return type_
        if not type_.module:
            return self.record_type(type_.name)
        if type_.plsql.rsplit(".", 1)[0] == self.own_package:
            return t.RecordType(type_.name)  # one of the importer's own records
        # A record of a third module, named by this module's alias for it: the importer
        # knows that module by its own alias, or by a hidden one.
        owner = self.declared().imports.find(type_.module)
        if owner is None or self.importer is None:
            return type_
        return t.RecordType(type_.name, self.importer.alias_of(owner.module), type_.plsql)

    def record(self, name: str) -> RecordInfo:
        from pell.checker.model import RecordInfo

        info = self.declared().records[name]
        return RecordInfo(info.decl, {f: self.localise(ft) for f, ft in info.fields.items()})

    def fn(self, name: str) -> FnInfo | None:
        info = self.declared().fns.get(name)
        if info is None:
            return None
        params = tuple(replace(p, type=self.localise(p.type)) for p in info.params)
        errors = tuple(f"{self.alias}::{e}" for e in info.errors)
        return replace(info, params=params, returns=self.localise(info.returns), errors=errors)

    def fn_plsql(self, name: str) -> str:
        if self.is_stub:
            return f"{self.package}.{name.lower()}"
        return f"{self.package}.{naming.fn_name(name)}"


@record(frozen=False)
class Imports:
    """The `alias::` prefixes of one module."""

    index: ModuleIndex | None = None
    own_package: str = ""
    foreign: dict[str, Foreign] = field(default_factory=dict)
    unchecked: set[str] = field(default_factory=set)  # Oracle packages with no stub
    # the aliases that name pellc's own `std::logger` here (pell.checker.logger)
    loggers: set[str] = field(default_factory=set)

    def __contains__(self, alias: object) -> bool:
        return alias in self.foreign or alias in self.unchecked or alias in self.loggers

    def alias_of(self, module: ast.Module) -> str:
        """The alias this module knows `module` by; for a module it did not import (a record
        type reached through another module's signature), its dotted path, which no written
        alias can be."""
        for alias, foreign in self.foreign.items():
            if foreign.module.path == module.path:
                return alias
        hidden = module.dotted_name
        assert self.index is not None
        self.foreign[hidden] = Foreign(hidden, module, self.index, self.own_package, self)
        return hidden

    def find(self, alias: str) -> Foreign | None:
        """The module `alias::` names: imported, or, with no import, a stub or a project module
        of that one-part name (public Pell calls `catalog::tables()` so)."""
        found = self.foreign.get(alias)
        if found is None and alias not in self.unchecked:
            found = unimported_module(alias, self.index, self.own_package, self)
            if found is not None:
                self.foreign[alias] = found
        return found

    def record_info(self, type_: t.RecordType) -> RecordInfo:
        foreign = self.find(type_.module)
        assert foreign is not None, f"record of unknown module {type_.module}"
        return foreign.record(type_.name)


def resolve_imports(
    module: ast.Module, index: ModuleIndex | None
) -> tuple[Imports, list[tuple[str, ast.Span, str]]]:
    """The module's imports, and the problems found: (code, span, message)."""
    own = plsql_package(module)
    imports = Imports(index, own)
    problems: list[tuple[str, ast.Span, str]] = []
    for imported in module.imports:
        alias = imported.path[-1]
        if alias in imports:
            problems.append(("duplicate-name", imported.span, f"`{alias}` is imported twice"))
            continue
        path = imported_path(imported.path, index)
        found = index.parsed(path) if index is not None else None
        if found is not None and found.path == module.path:
            # its own items are in scope already: the import would name them a second time
            problems.append(("duplicate-name", imported.span, "a module does not import itself"))
            continue
        if found is not None:
            imports.foreign[alias] = Foreign(alias, found, index, own, imports)  # type: ignore[arg-type]
        elif path == ("re",):
            continue  # public Pell's `re`: pellc's own `re::` fns (pell.checker.regex)
        elif imported.path in logger.STD_PATHS:
            imports.loggers.add(alias)  # no module of that name: pellc's own logger
        elif len(path) == 1 and alias.lower() in PELL_LIBRARY_MODULES:
            problems.append(
                (
                    "unsupported",
                    imported.span,
                    f"`{alias}` is a module of the public Pell library, which pellc does not "
                    "provide yet",
                )
            )
        elif len(path) > 1 and index is not None and index.is_project:
            shown = "::".join(imported.path)
            problems.append(
                ("unknown-module", imported.span, f"no module `{shown}` in this project")
            )
        else:
            imports.unchecked.add(alias)  # an Oracle package pellc has no stub for
    # `log::` and `logger::` with no import and no module of that name: pellc's own logger
    imports.loggers.update(
        alias
        for alias in logger.ALIASES
        if alias not in imports and unimported_module(alias, index, own) is None
    )
    return imports, problems


def imported_path(path: tuple[str, ...], index: ModuleIndex | None) -> tuple[str, ...]:
    """The module an import names. Public Pell writes its standard library's modules
    `std::name` (`import std::logger;`, `logger::info(...)`): that is the module `name` (the
    project's, a stub, or an Oracle package), unless the project has a module `std::name`."""
    std = len(path) == 2 and path[0] == "std"
    return path[1:] if std and (index is None or index.parsed(path) is None) else path


def unimported_module(
    alias: str, index: ModuleIndex | None, own: str, importer: Imports | None = None
) -> Foreign | None:
    """The module `alias::` names with no import: a shipped or project stub of that name,
    or a project module whose path is that one name (not the module itself)."""
    if index is None:
        return None
    found = index.parsed((alias,))
    # (pellc's own stubs are all `@stub`: any other module found is the project's)
    if found is None or found.script or plsql_package(found) == own:
        return None
    return Foreign(alias, found, index, own, importer)
