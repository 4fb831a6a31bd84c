"""The checker proper: declarations, annotations, names and types. AST -> CheckedModule +
diagnostics. `pell.checker` hands out its public names."""

from __future__ import annotations

import re

from pell import ast, naming, records
from pell.checker import types as t
from pell.checker.aggregates import check_aggregates
from pell.checker.annotations import (
    check_error_annotations,
    check_fn_annotations,
    check_plain_annotations,
    check_retry_targets,
)
from pell.checker.bodies import check_fn_body
from pell.checker.imports import Foreign, Imports, ModuleIndex, resolve_imports
from pell.checker.logger import inline_calls as inline_logger_calls
from pell.checker.model import CheckedModule, FnAnalysis, FnInfo, ParamInfo, RecordInfo
from pell.checker.objects import check_method_bodies, declare_objects, object_types
from pell.checker.parallel import check_parallel
from pell.checker.retry_safety import check_retry_safety, for_target
from pell.checker.stubs import check_module_annotations, check_stub_items, stub_facts
from pell.checker.ut import check_suite
from pell.diagnostics import Diagnostic, Note, did_you_mean, quoted_with_article
from pell.naming import TRANSACTION_OPEN, exception_name

__all__ = ["CheckedModule", "TypeResolver", "check"]


class TypeResolver:
    """Turns written types (`list<Order>`, `Result<T, E>`) into checker types."""

    def __init__(
        self,
        records: set[str],
        errors: set[str],
        diagnostics: list[Diagnostic],
        enums: frozenset[str] = frozenset(),
        imports: Imports | None = None,
    ) -> None:
        self.records = records
        self.enums = enums
        self.errors = errors
        self.diagnostics = diagnostics
        self.imports = imports or Imports()
        self.objects: dict[str, t.ObjectType] = {}  # the module's object types and cases
        # the PL/SQL names of the module's fns, which a `rowtype<name>` cannot reach past
        self.fn_names: frozenset[str] = frozenset()

    def foreign_item(
        self, written: str, span: ast.Span, what: str
    ) -> tuple[Foreign, ast.Item] | None:
        """`alias::Name`: the module and its item, or None after a diagnostic."""
        alias, _, name = written.partition("::")
        foreign = self.imports.find(alias)
        if foreign is None:
            hints: tuple[str, ...] = ()
            if alias in self.imports.unchecked:
                message = (
                    f"no module `{alias}` is known here, so `{written}` is unknown (an Oracle "
                    "package without a stub has no types)"
                )
                hints = (
                    "compile the project's directory, or mark its root with `[tool.pellc]` in "
                    "pyproject.toml (or a pell.toml) so a single file finds its modules",
                )
            else:
                message = f"`{alias}` is not imported"
            self.diagnostics.append(Diagnostic.of("unknown-type", message, span, hints=hints))
            return None
        item = foreign.item(name)
        if item is None or "::" in name:
            names = [i.name for i in foreign.module.items if i.public or foreign.is_stub]
            self.diagnostics.append(
                Diagnostic.of(
                    "unknown-type",
                    f"module `{foreign.module.dotted_name}` declares no {what} `{name}`"
                    f"{did_you_mean(name, names)}",
                    span,
                )
            )
            return None
        if not (item.public or foreign.is_stub):
            self.diagnostics.append(private_item(foreign, item, span))
            return None
        return foreign, item

    def resolve(self, ref: ast.TypeRef) -> t.Type:
        if isinstance(ref, ast.UnitType):
            return t.UNIT
        name = ref.name
        if "::" in name:
            found = self.foreign_item(name, ref.span, "type")
            if found is None:
                return t.UNKNOWN
            self._no_args(ref)
            foreign, item = found
            if isinstance(item, ast.Record):
                return foreign.record_type(item.name)
            if isinstance(item, ast.Enum):
                return t.TEXT
            if isinstance(item, ast.TypeDecl):
                self.diagnostics.append(
                    Diagnostic.of(
                        "unsupported",
                        f"`{name}` is another module's object type, which is not supported yet",
                        ref.span,
                        hints=("use the type in the module that declares it",),
                    )
                )
                return t.UNKNOWN
            self.diagnostics.append(
                Diagnostic.of("unknown-type", f"`{name}` is not a record or an enum", ref.span)
            )
            return t.UNKNOWN
        if name in t.SCALARS:
            self._no_args(ref)
            return t.Scalar(name)
        if name in ("Unit",):
            return t.UNIT
        if name in self.records:
            self._no_args(ref)
            return t.RecordType(name)
        if name in self.objects:
            self._no_args(ref)
            return self.objects[name]
        if name in self.enums:
            self._no_args(ref)
            return t.TEXT  # an enum's values are its text constants
        if name == "list":
            element = self._single(ref)
            if not isinstance(element, t.Scalar | t.RecordType | t.ObjectType | t.UnknownType):
                self.diagnostics.append(
                    Diagnostic.of(
                        "unsupported",
                        f"lists hold scalars or records, not `{element}`",
                        ref.span,
                    )
                )
                return t.UNKNOWN
            return t.ListType(element)
        if name == "cursor":
            return t.CursorType(self._cursor_rows(ref))
        if name == "Option":
            return self._single(ref)
        if name == "rowtype":
            return self._table_row(ref)
        if name == "Result":
            return self.resolve_result(ref)[0]
        if name in PUBLIC_PELL_TYPES:
            what, hint = PUBLIC_PELL_TYPES[name]
            message = f"{what} is not supported yet"
            hints = (hint,) if hint else ()
            self.diagnostics.append(Diagnostic.of("unsupported", message, ref.span, hints=hints))
            return t.UNKNOWN
        known = [*t.SCALARS, *sorted(self.records), *sorted(self.objects), "list", "Option", "Result"]
        self.diagnostics.append(
            Diagnostic.of(
                "unknown-type", f"unknown type `{name}`{did_you_mean(name, known)}", ref.span
            )
        )
        return t.UNKNOWN

    def _table_row(self, ref: ast.NamedType) -> t.Type:
        """`rowtype<table>`: `table%ROWTYPE`, a table or view named as Oracle reads it unquoted
        (in the deploying user's schema, or a synonym)."""
        arg = ref.args[0].alternatives if len(ref.args) == 1 else ()
        table = arg[0] if len(arg) == 1 and isinstance(arg[0], ast.NamedType) else None
        if table is None or table.args or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_$#]*", table.name):
            message = "`rowtype` takes one table or view name: `rowtype<accounts>`"
        elif table.name.lower() in naming.ORACLE_RESERVED:
            message = f"`{table.name}` is an Oracle reserved word, not a table name"
        elif table.name.lower() in self.fn_names:
            # PL/SQL resolves a name in the package (or the script's block) before the schema
            # (PL/SQL Language Reference, "PL/SQL Name Resolution"): `orders%ROWTYPE` would
            # name the fn, "PLS-00310: with %ROWTYPE attribute, 'ORDERS' must name a table,
            # cursor or cursor-variable" (Database Error Messages)
            self.diagnostics.append(
                Diagnostic.of(
                    "type-mismatch",
                    f"`rowtype<{table.name}>` names the table `{table.name}`, but inside this "
                    f"module's PL/SQL `{table.name.lower()}` is its fn: "
                    f"`{table.name.lower()}%ROWTYPE` would name the fn (PLS-00310)",
                    table.span,
                    hints=("rename the fn",),
                )
            )
            return t.UNKNOWN
        else:
            return t.TableRow(table.name.lower())
        self.diagnostics.append(Diagnostic.of("type-mismatch", message, ref.span))
        return t.UNKNOWN

    def _cursor_rows(self, ref: ast.NamedType) -> t.Type:
        """The row type of `cursor<T>`: `dyn` (columns known at run time only), or a record
        or scalar a FETCH can fill (not `bool`, which SQL has no column of before 23ai)."""
        if len(ref.args) == 1 and len(ref.args[0].alternatives) == 1:
            only = ref.args[0].alternatives[0]
            if isinstance(only, ast.NamedType) and only.name == "dyn" and not only.args:
                return t.DYN_ROW
        element = self._single(ref)
        if isinstance(element, t.RecordType | t.UnknownType) or (
            isinstance(element, t.Scalar) and element != t.BOOL
        ):
            return element
        self.diagnostics.append(
            Diagnostic.of(
                "unsupported",
                f"a cursor's rows are records or scalars other than `bool`, not `{element}`",
                ref.span,
                hints=("`cursor<dyn>` is a cursor whose columns are known at run time",),
            )
        )
        return t.UNKNOWN

    def resolve_rows(self, ref: ast.TypeRef, place: str) -> t.Type | None:
        """In a @pipelined fn's signature: a `cursor<T>` parameter (the rows SQL passes as
        `CURSOR(subquery)`) or the `stream<T>` result (the rows it pipes: a collection of `T`,
        as `list<T>` is). None for any other type."""
        wanted = "cursor" if place == "param" else "stream"
        if not (isinstance(ref, ast.NamedType) and ref.name == wanted):
            return None
        element = self._single(ref)
        return t.CursorType(element) if place == "param" else t.ListType(element)

    def resolve_result(self, ref: ast.TypeRef) -> tuple[t.Type, tuple[str, ...]]:
        """The value type and the error names of `Result<T, E1 | E2>` (or of any other type)."""
        if not (isinstance(ref, ast.NamedType) and ref.name == "Result"):
            return self.resolve(ref), ()
        if len(ref.args) != 2:
            self.diagnostics.append(
                Diagnostic.of(
                    "type-mismatch",
                    f"`Result` takes two type arguments (`Result<T, E>`), not {len(ref.args)}",
                    ref.span,
                )
            )
            return t.UNKNOWN, ()
        value = self._alternative(ref.args[0])
        errors: list[str] = []
        for alternative in ref.args[1].alternatives:
            if isinstance(alternative, ast.NamedType) and alternative.name in self.errors:
                errors.append(alternative.name)
            elif isinstance(alternative, ast.NamedType) and "::" in alternative.name:
                found = self.foreign_item(alternative.name, alternative.span, "error")
                if found is not None and isinstance(found[1], ast.ErrorDecl):
                    errors.append(alternative.name)
                elif found is not None:
                    self.diagnostics.append(
                        Diagnostic.of(
                            "unknown-type", f"`{alternative.name}` is not an error", alternative.span
                        )
                    )
            else:
                shown = alternative.name if isinstance(alternative, ast.NamedType) else "()"
                self.diagnostics.append(
                    Diagnostic.of(
                        "unknown-type",
                        f"`{shown}` is not an error declared in this module"
                        f"{did_you_mean(shown, sorted(self.errors))}",
                        alternative.span,
                    )
                )
        return value, tuple(errors)

    def _alternative(self, arg: ast.TypeArg) -> t.Type:
        if len(arg.alternatives) != 1:
            self.diagnostics.append(
                Diagnostic.of(
                    "type-mismatch",
                    "`|` joins error types only, in the second argument of `Result`",
                    arg.span,
                )
            )
            return t.UNKNOWN
        return self.resolve(arg.alternatives[0])

    def _single(self, ref: ast.NamedType) -> t.Type:
        if len(ref.args) != 1:
            self.diagnostics.append(
                Diagnostic.of(
                    "type-mismatch",
                    f"`{ref.name}` takes one type argument, not {len(ref.args)}",
                    ref.span,
                )
            )
            return t.UNKNOWN
        return self._alternative(ref.args[0])

    def _no_args(self, ref: ast.NamedType) -> None:
        if ref.args:
            self.diagnostics.append(
                Diagnostic.of(
                    "type-mismatch", f"`{ref.name}` takes no type arguments", ref.args[0].span
                )
            )


def private_item(foreign: Foreign, item: ast.Item, span: ast.Span) -> Diagnostic:
    kind = type(item).__name__.lower().replace("errordecl", "error")
    return Diagnostic.of(
        "private",
        f"{kind} `{item.name}` of module `{foreign.module.dotted_name}` is not `pub`",
        span,
        hints=(f"mark it `pub {'fn' if kind == 'fn' else kind} {item.name}` to use it here",),
    )


def twice(name: str, first: str) -> str:
    """How a duplicate is named: `x` is declared twice, or `X` and `x` that only differ in case
    (PL/SQL names ignore case, so both would become one name)."""
    if name == first:
        return f"`{name}` is declared twice"
    return f"`{name}` and `{first}` differ only in case, and PL/SQL names ignore case"


def _sequence_owner_captors(module: ast.Module) -> dict[str, str]:
    """The names the module's PL/SQL finds before a schema of that name, each as the item it
    is: its fns (members of its package, or subprograms of the script's block, in the scope
    the package's code is compiled in) and its aggregates (functions of its schema, which name
    resolution finds before a schema: Database Administrator's Guide, "Managing Object Name
    Resolution")."""
    captors: dict[str, str] = {}
    for item in module.items:
        if isinstance(item, ast.Fn):
            captors.setdefault(naming.fn_name(item.name), f"this module's fn `{item.name}`")
        elif isinstance(item, ast.Aggregate):
            captors.setdefault(
                item.name.lower(), f"this module's aggregate `{item.name}`, a function of its schema"
            )
    return captors


def _check_sequence_name(
    module: ast.Module,
    item: ast.Sequence,
    captors: dict[str, str],
    diagnostics: list[Diagnostic],
) -> None:
    """A sequence's name is the database's, written as it is (`hr.ids.NEXTVAL`): no part may
    be an Oracle reserved word ("You cannot use Oracle SQL reserved words as nonquoted
    identifiers", SQL Language Reference, Oracle SQL Reserved Words), and a schema part must
    not be the module's own package, nor a name of `captors`, which PL/SQL would find first
    (PLS-00302, PLS-00225)."""
    parts = item.name.split("::")
    reserved = [part for part in parts if part.lower() in naming.ORACLE_RESERVED]
    if reserved:
        diagnostics.append(
            Diagnostic.of(
                "reserved-name",
                f"sequence `{item.name}`: `{reserved[0]}` is an Oracle reserved word, which "
                "Oracle refuses as a name without quotes",
                item.span,
            )
        )
    elif len(parts) == 2 and parts[0].lower() in naming.STANDARD_FUNCTIONS:
        diagnostics.append(
            Diagnostic.of(
                "reserved-name",
                f"sequence `{item.name}`: PL/SQL reads `{parts[0]}.{parts[1]}` as a reference into "
                f"its own function `{parts[0].upper()}` (PLS-00225), not the schema's sequence",
                item.span,
            )
        )
    elif len(parts) == 2 and parts[0].lower() == naming.module_package(module)[1]:
        diagnostics.append(
            Diagnostic.of(
                "reserved-name",
                f"sequence `{item.name}`: inside package `{parts[0].lower()}`, "
                f"`{parts[0]}.{parts[1]}` names a member of the package, not the schema "
                f"`{parts[0]}`'s sequence (PLS-00302)",
                item.span,
                hints=("name the module after another package, or use a synonym",),
            )
        )
    elif len(parts) == 2 and (captor := captors.get(parts[0].lower())) is not None:
        # a name of the package (or the block) hides the schema: `hr.emp_seq` would use the
        # fn `hr` as a scope qualifier, PLS-00225 ("a subprogram or cursor name is being used
        # as a scope qualifier for a reference to an entity ... that is not in scope",
        # Database Error Messages); an aggregate `hr` is a function of the schema, an object
        # found before the schema `hr` (_sequence_owner_captors)
        diagnostics.append(
            Diagnostic.of(
                "reserved-name",
                f"sequence `{item.name}`: `{parts[0].lower()}` is {captor}, which PL/SQL finds "
                f"before the schema `{parts[0]}`: `{parts[0]}.{parts[1]}` would name a part of "
                "it, not the schema's sequence",
                item.span,
                hints=("rename the fn or aggregate, or use a synonym of the sequence",),
            )
        )


def _check_names(module: ast.Module, diagnostics: list[Diagnostic]) -> None:
    """Module and item names Oracle would refuse or merge: reserved or odd module parts, items
    declared twice or differing only in case, records whose types would be another's."""
    if len(module.path) > 1 and module.path[0].lower() in naming.ORACLE_RESERVED:
        # pellc prefixes reserved package, fn and field names, but a schema is the database's
        diagnostics.append(
            Diagnostic.of(
                "reserved-name",
                f"schema `{module.path[0]}` is an Oracle reserved word; Oracle refuses it as a "
                "name without quotes",
                module.span,
                hints=("name the module after the schema its package is created in",),
            )
        )
    if any(not part[:1].isalpha() for part in module.path):
        diagnostics.append(
            Diagnostic.of(
                "reserved-name",
                f"module `{module.dotted_name}`: each part of a module name must start with a "
                "letter, as Oracle schema and package names do",
                module.span,
            )
        )
    seen: dict[tuple[str, bool], ast.Item] = {}
    exact: dict[str, ast.Item] = {}
    record_names = {i.name.lower() for i in module.items if isinstance(i, ast.Record)}
    record_types = {
        naming.record_type_name(i.name): i for i in module.items if isinstance(i, ast.Record)
    }
    for item in module.items:
        # Pell names are case-sensitive; two that differ only in case clash when their
        # PL/SQL names would be one: fns and sequences share one namespace, records, errors
        # and enums another (`fn transfer` and `record Transfer` are `transfer` and the type
        # `t_transfer`). The same name twice clashes whatever the kinds.
        key = (item.name.lower(), isinstance(item, ast.Fn | ast.Sequence))
        first = seen.get(key) or exact.get(item.name)
        if first is not None:
            diagnostics.append(
                Diagnostic.of(
                    "duplicate-name",
                    f"in module `{module.dotted_name}`, {twice(item.name, first.name)}",
                    item.span,
                    notes=(Note("the first declaration is here", first.span),),
                )
            )
        else:
            seen[key] = exact[item.name] = item
        if isinstance(item, ast.Fn) and naming.fn_name(item.name).lower() in record_types:
            record = record_types[naming.fn_name(item.name).lower()]
            diagnostics.append(
                Diagnostic.of(
                    "duplicate-name",
                    f"fn `{item.name}` would be the PL/SQL name of record `{record.name}`'s type "
                    f"`{naming.record_type_name(record.name)}`",
                    item.name_span,
                    hints=("choose another name for the fn",),
                )
            )
        element = item.name.lower().removesuffix("_list")
        if (
            isinstance(item, ast.Record)
            and element != item.name.lower()
            and (element in t.SCALARS or element in record_names)
        ):
            diagnostics.append(
                Diagnostic.of(
                    "duplicate-name",
                    f"record `{item.name}` would be the PL/SQL type `t_{item.name.lower()}`, the "
                    f"name of the type of `list<{element}>`",
                    item.span,
                    hints=("choose another name for the record",),
                )
            )
        if isinstance(item, ast.Record) and item.name.lower() in t.SCALARS:
            diagnostics.append(
                Diagnostic.of(
                    "duplicate-name",
                    f"record `{item.name}` has the name of the built-in type "
                    f"`{item.name.lower()}`; PL/SQL names ignore case, so their list types "
                    "would be one",
                    item.span,
                    hints=("choose another name for the record",),
                )
            )


def _enum_values(enum: ast.Enum, diagnostics: list[Diagnostic]) -> dict[str, str]:
    """Variant -> its text: the given text literal, or the variant's own name."""
    values: dict[str, str] = {}
    lowered: dict[str, str] = {}
    for variant in enum.variants:
        first = lowered.setdefault(variant.name.lower(), variant.name)
        if first != variant.name or variant.name in values:
            diagnostics.append(
                Diagnostic.of(
                    "duplicate-name",
                    f"in enum `{enum.name}`, {twice(variant.name, first)}",
                    variant.span,
                )
            )
            continue
        value = variant.value
        text = (
            "".join(p for p in value.parts if isinstance(p, str))
            if isinstance(value, ast.StringLit)
            else ""
        )
        if len(text.encode("utf-8")) > 4000:  # the constant is a VARCHAR2(4000)
            diagnostics.append(
                Diagnostic.of(
                    "text-too-long",
                    f"the value of `{enum.name}::{variant.name}` is "
                    f"{len(text.encode('utf-8')):,} bytes; an enum value holds up to 4,000",
                    variant.span,
                )
            )
        if value is None:
            values[variant.name] = variant.name
        elif isinstance(value, ast.StringLit) and all(isinstance(p, str) for p in value.parts):
            values[variant.name] = "".join(str(p) for p in value.parts)
        else:
            diagnostics.append(
                Diagnostic.of(
                    "type-mismatch",
                    f"the value of `{enum.name}::{variant.name}` must be a text literal",
                    value.span,
                )
            )
            values[variant.name] = variant.name
    return values


def check_package_clash(
    module: ast.Module,
    diagnostics: list[Diagnostic],
    sql_blocks: list[ast.SqlBlock] | None = None,
) -> None:
    """A warning at the first table or view of the module's SQL that has the package's name.
    Oracle SQL Language Reference, "Database Object Names and Qualifiers" (namespaces): tables, views,
    sequences, packages, procedures, functions and types of one schema share one namespace,
    so the second CREATE fails with ORA-00955 (name is already used by an existing object)."""
    from pell.sqltext import tables_named

    if module.is_stub:
        return
    schema, package = naming.module_package(module)
    if sql_blocks is not None and not any(package in b.text.lower() for b in sql_blocks):
        return  # every SqlBlock known, none naming the package: the walk would find nothing
    for node in ast.walk(module):
        # the package's name must appear in the text before tables are worth finding (and
        # SqlBlock is not subclassed: `type() is`, the cheapest test per node)
        if type(node) is not ast.SqlBlock or package not in node.text.lower():
            continue
        for table_schema, table, offset in tables_named(node.text):
            same_schema = table_schema is None or schema is None or table_schema.lower() == schema
            if table.lower() != package or not same_schema:
                continue
            start = node.text_start + offset
            diagnostics.append(
                Diagnostic.of(
                    "package-clash",
                    f"module `{module.dotted_name}` becomes the package `{package}`, the name of "
                    f"the table or view `{table}` its SQL uses: one schema cannot hold both "
                    "(ORA-00955)",
                    ast.Span(start, start + len(table)),
                    hints=(
                        f'name the package: @package("{package}_api") before `module`',
                    ),
                )
            )
            return


def check_identifier_lengths(
    checked: CheckedModule, target: str, diagnostics: list[Diagnostic]
) -> None:
    """Every PL/SQL name pellc writes for this module must fit the target's identifier limit."""
    limit = naming.MAX_IDENTIFIER_BYTES[target]
    module = checked.module
    names: list[tuple[str, ast.Span]] = []
    schema, package = naming.module_package(module)
    names += [(package, module.span)] + ([(schema, module.span)] if schema else [])
    for name, record in checked.records.items():
        names.append((naming.record_type_name(name), record.decl.span))
        names += [(naming.field_name(f.name), f.span) for f in record.decl.fields]
    for name, error in checked.errors.items():
        names.append((f"c_{exception_name(module.path, name)}", error.span))
    for item in module.items:
        if isinstance(item, ast.Enum):
            names += [(naming.enum_constant(item.name, v.name), v.span) for v in item.variants]
    for name, fn in checked.fns.items():
        names.append((naming.fn_name(name), fn.decl.name_span))
        names += [(naming.param_name(p.decl.name), p.decl.span) for p in fn.params]
        analysis = checked.analyses[name]
        # locals, and the loop variables a `for` binds
        names += [(s.plsql, s.span) for s in (*analysis.locals, *analysis.bindings.values())]
        if fn.retry is not None:  # the copies a retry restores `inout` parameters from
            names += [
                (naming.saved_param_name(naming.param_name(p.decl.name)), p.decl.span)
                for p in fn.params
                if p.decl.mode == "inout"
            ]
        # list types (`t_<element>_list`); temporaries are cut to fit by codegen
        # (a type per expression: filtered by a comprehension, the names made for lists only)
        lists = [x for x in analysis.types.values() if isinstance(x, t.ListType)]
        lists += [p.type for p in fn.params if isinstance(p.type, t.ListType)]
        if isinstance(fn.returns, t.ListType):
            lists.append(fn.returns)
        names += [(naming.list_type_name(str(x.element)), fn.decl.name_span) for x in lists]
        if fn.pipelined and isinstance(fn.returns, t.ListType):
            for row_type in naming.row_type_names(module.path, str(fn.returns.element)):
                names.append((row_type.split(".")[-1], fn.decl.name_span))
    for info in checked.objects.values():  # schema-level types, their attributes and methods
        names.append((info.type.plsql.split(".")[-1], info.decl.span))
        names += [(naming.field_name(f.name), f.span) for f in info.decl.fields]
        for method_name, method in info.methods.items():
            names.append((naming.fn_name(method_name), method.decl.name_span))
            names += [(naming.param_name(p.decl.name), p.decl.span) for p in method.params]
            method_analysis = checked.method_analyses.get(f"{info.type.name}.{method_name}")
            if method_analysis is not None:
                names += [(s.plsql, s.span) for s in method_analysis.locals]
    for aggregate in checked.aggregates.values():
        names += [
            (name.split(".")[-1], aggregate.decl.name_span)
            for name in (
                aggregate.function,
                aggregate.impl_type,
                *aggregate.collections.values(),
                *([aggregate.args_type] if aggregate.args_type else []),
            )
        ]
        names += [(naming.field_name(f.name), f.span) for f in aggregate.decl.state]
        for _, analysis in aggregate.parts.values():
            names += [(s.plsql, s.span) for s in (*analysis.locals, *analysis.bindings.values())]
    for record in checked.records.values():
        for field_type in record.fields.values():
            if isinstance(field_type, t.ListType):
                names.append((naming.list_type_name(str(field_type.element)), record.decl.span))
    reported: set[str] = set()
    for name, span in names:
        size = len(name.encode("utf-8"))
        if size > limit and name not in reported:
            reported.add(name)
            diagnostics.append(
                Diagnostic.of(
                    "identifier-too-long",
                    f"the PL/SQL name `{name}` is {size} bytes; "
                    f"{'PostgreSQL' if target == 'postgres' else 'Oracle ' + target} allows {limit}",
                    span,
                    hints=("choose a shorter Pell name",),
                )
            )


def check(
    module: ast.Module,
    target: str = "23ai",
    index: ModuleIndex | None = None,
    *,
    sql_blocks: list[ast.SqlBlock] | None = None,
) -> tuple[CheckedModule, list[Diagnostic]]:
    """Check a parsed module for a target; every problem is returned, not only the first.
    `index` holds the modules it may import (the project's, and the stubs); `sql_blocks`,
    if known, every SqlBlock of the module (the compiler's nesting walk gathers them)."""
    if index is None:
        from pell.project import stub_index

        index = stub_index()
    # `log::info(x)` of pellc's own logger is a print call from here on (pell.checker.logger)
    module = inline_logger_calls(module, index)
    diagnostics: list[Diagnostic] = []
    checked, resolver = _declare(module, index, diagnostics, target)
    if not module.is_stub:
        check_parallel(checked, diagnostics, target)
    for fn_name, info in list(checked.fns.items()):
        if info.retry is not None and info.retry_annotation is not None:
            on = check_retry_targets(
                info.decl,
                info.retry,
                info.retry_annotation,
                checked.errors,
                checked.imports,
                diagnostics,
            )
            policy = records.replace(info.retry, on=on)  # others' errors by full path
            if on != info.retry.on:
                checked.fns[fn_name] = info = records.replace(info, retry=policy)
            if policy.recover is not None:
                _check_recover(info, checked.fns, diagnostics)
    for name, info in checked.fns.items():
        if info.decl.has_body and not module.is_stub:
            checked.analyses[name] = check_fn_body(info, checked, resolver, diagnostics, target)
        else:  # a signature alone (a stub's) has nothing to check
            checked.analyses[name] = FnAnalysis()
    for object_info in checked.objects.values():
        for name, method in object_info.methods.items():
            if method.decl.has_body and not module.is_stub:
                key = f"{object_info.type.name}.{name}"
                analysis = check_fn_body(method, checked, resolver, diagnostics, target)
                checked.method_analyses[key] = analysis
    check_method_bodies(checked, diagnostics, target)
    if not module.is_stub:
        aggregates = check_aggregates(checked, resolver, diagnostics, target)
        checked = records.replace(checked, aggregates=aggregates)
    check_identifier_lengths(checked, target, diagnostics)
    check_package_clash(module, diagnostics, sql_blocks)
    # a stub has no bodies: its facts are its `@commits` marks
    facts = stub_facts(module) if module.is_stub else check_retry_safety(checked, diagnostics, target)
    return records.replace(checked, retry_facts=facts), for_target(diagnostics, target)


def declare(module: ast.Module, index: ModuleIndex | None) -> CheckedModule:
    """What a module declares (records with their field types, fn signatures, errors, enums),
    without checking its bodies: what other modules see of it."""
    return _declare(module, index, [])[0]


def _declare(
    module: ast.Module, index: ModuleIndex | None, diagnostics: list[Diagnostic], target: str = "23ai"
) -> tuple[CheckedModule, TypeResolver]:
    _check_names(module, diagnostics)
    check_module_annotations(module, diagnostics)
    check_suite(module, diagnostics)
    check_stub_items(module, diagnostics)
    imports, problems = resolve_imports(module, index)
    diagnostics += [Diagnostic.of(code, message, span) for code, span, message in problems]
    record_decls = {i.name: i for i in module.items if isinstance(i, ast.Record)}
    error_decls = {i.name: i for i in module.items if isinstance(i, ast.ErrorDecl)}
    enum_names = frozenset(i.name for i in module.items if isinstance(i, ast.Enum))
    resolver = TypeResolver(set(record_decls), set(error_decls), diagnostics, enum_names, imports)
    resolver.objects = object_types(module)
    resolver.fn_names = frozenset(
        naming.fn_name(i.name).lower() for i in module.items if isinstance(i, ast.Fn)
    )

    records: dict[str, RecordInfo] = {}
    for record in record_decls.values():
        check_plain_annotations(record.annotations, "a record", diagnostics)
        if not record.fields:
            diagnostics.append(
                Diagnostic.of(
                    "empty-record",
                    f"record `{record.name}` has no fields; a PL/SQL record needs at least one",
                    record.span,
                )
            )
        fields: dict[str, t.Type] = {}
        field_names: dict[str, str] = {}
        for field in record.fields:
            first = field_names.setdefault(field.name.lower(), field.name)
            if first != field.name or field.name in fields:
                diagnostics.append(
                    Diagnostic.of(
                        "duplicate-name",
                        f"in record `{record.name}`, {twice(field.name, first)}",
                        field.span,
                    )
                )
            fields[field.name] = resolver.resolve(field.type)
            if isinstance(fields[field.name], t.CursorType):
                # a record goes into lists and SQL rows, and "You cannot store the value of a
                # cursor variable in a collection or database column" (PL/SQL Language
                # Reference, Cursor Variable Declaration, Restrictions on Cursor Variables)
                diagnostics.append(
                    Diagnostic.of(
                        "unsupported",
                        f"a record field cannot be a cursor; `{field.name}` is "
                        f"`{fields[field.name]}`",
                        field.span,
                        hints=("pass the cursor as a parameter of its own",),
                    )
                )
        records[record.name] = RecordInfo(record, fields)

    _check_record_cycles(records, diagnostics)

    error_fields: dict[str, dict[str, t.Type]] = {}
    for error in error_decls.values():
        check_error_annotations(error, diagnostics)
        if exception_name(module.path, error.name) == TRANSACTION_OPEN:
            diagnostics.append(
                Diagnostic.of(
                    "reserved-name",
                    f"error `{error.name}` of module `{module.dotted_name}` would be "
                    f"`pell_runtime.{TRANSACTION_OPEN}`, pellc's own exception",
                    error.span,
                    hints=("rename the error or the module",),
                )
            )
        error_fields[error.name] = {}
        for field in error.fields:
            field_type = resolver.resolve(field.type)
            error_fields[error.name][field.name] = field_type
            if not isinstance(field_type, t.Scalar | t.UnknownType) or field_type == t.JSON:
                # a json field would be cut to fit the message (2048 bytes), and cut JSON is
                # no JSON
                diagnostics.append(
                    Diagnostic.of(
                        "unsupported",
                        f"error fields are scalars (they go into the error's JSON message); "
                        f"`{field.name}` is {quoted_with_article(field_type)}",
                        field.span,
                    )
                )

    enums: dict[str, dict[str, str]] = {}
    constants: dict[str, str] = {}  # PL/SQL constant -> the `Enum::Variant` it was made for
    captors = _sequence_owner_captors(module)
    for item in module.items:
        if isinstance(item, ast.Sequence):
            check_plain_annotations(item.annotations, "a sequence", diagnostics)
            _check_sequence_name(module, item, captors, diagnostics)
        if isinstance(item, ast.Enum):
            check_plain_annotations(item.annotations, "an enum", diagnostics)
            enums[item.name] = _enum_values(item, diagnostics)
            for variant in item.variants:
                constant = naming.enum_constant(item.name, variant.name)
                first = constants.setdefault(constant, f"{item.name}::{variant.name}")
                if first.lower() != f"{item.name}::{variant.name}".lower():
                    diagnostics.append(
                        Diagnostic.of(
                            "duplicate-name",
                            f"`{item.name}::{variant.name}` and `{first}` would both be the "
                            f"PL/SQL constant `{constant}`",
                            variant.span,
                            hints=("rename one of the enums or variants",),
                        )
                    )

    fns: dict[str, FnInfo] = {}
    sequences = frozenset(item.name for item in module.items if isinstance(item, ast.Sequence))
    for item in module.items:
        if not isinstance(item, ast.Fn) or item.name in fns:
            continue
        if module.is_stub:
            policy, retry_annotation = None, None  # its marks: check_stub_items
        else:
            policy, retry_annotation = check_fn_annotations(item, sequences, diagnostics)
            for param in item.params:
                if param.default is not None:
                    diagnostics.append(
                        Diagnostic.of(
                            "unsupported",
                            "default values of parameters are declared in stubs only, for now",
                            param.default.span,
                        )
                    )
        pipelined = any(a.name == "pipelined" for a in item.annotations)
        params = tuple(
            ParamInfo(p, (pipelined and resolver.resolve_rows(p.type, "param")) or resolver.resolve(p.type))
            for p in item.params
        )
        stream = None
        if pipelined and item.return_type is not None:
            stream = resolver.resolve_rows(item.return_type, "result")
        if item.return_type is None:
            returns: t.Type = t.UNIT
            errors: tuple[str, ...] = ()
        elif stream:
            returns, errors = stream, ()
        else:
            returns, errors = resolver.resolve_result(item.return_type)
        fns[item.name] = FnInfo(
            item, params, returns, errors, policy, retry_annotation, module.path
        )

    objects = declare_objects(module, resolver, diagnostics, target)
    checked = CheckedModule(
        module, records, error_decls, error_fields, fns, {}, imports, enums, objects=objects
    )
    return checked, resolver


# Types of the public Pell language that pellc does not lower yet (a record or enum of the
# module with one of these names is that record or enum).
PUBLIC_PELL_TYPES: dict[str, tuple[str, str]] = {
    "map": ("`map<K, V>`", ""),
    "set": ("`set<T>`", ""),
    "stream": (
        "`stream<T>` outside a @pipelined fn's result",
        "a @pipelined fn returns `stream<T>` (or `list<T>`) and `yield`s its rows",
    ),
    "Never": ("the `Never` type", ""),
}


def _check_record_cycles(records: dict[str, RecordInfo], diagnostics: list[Diagnostic]) -> None:
    """A record that contains itself (directly, through other records or through a list) has
    no PL/SQL form: each TYPE must be declared after the types it uses."""

    def uses(name: str) -> list[str]:
        found = []
        for field_type in records[name].fields.values():
            element = field_type.element if isinstance(field_type, t.ListType) else field_type
            if isinstance(element, t.RecordType) and element.name in records:
                found.append(element.name)
        return found

    done: set[str] = set()
    for start in records:
        if start in done:
            continue
        # iterative depth-first search; `path` is the chain being followed
        path: list[str] = []
        on_path: set[str] = set()
        stack: list[tuple[str, bool]] = [(start, False)]
        while stack:
            name, leaving = stack.pop()
            if leaving:
                path.pop()
                on_path.discard(name)
                done.add(name)
                continue
            if name in on_path:
                cycle = [*path[path.index(name) :], name]
                decl = records[name].decl
                diagnostics.append(
                    Diagnostic.of(
                        "recursive-record",
                        f"record `{name}` contains itself ({' -> '.join(cycle)}); "
                        "PL/SQL declares each record type after the types it holds",
                        decl.span,
                        hints=("hold the other record's key (an id) instead of the record",),
                    )
                )
                done.update(cycle)
                continue
            if name in done:
                continue
            path.append(name)
            on_path.add(name)
            stack.append((name, True))
            stack.extend((used, False) for used in uses(name))


def _check_recover(info: FnInfo, fns: dict[str, FnInfo], diagnostics: list[Diagnostic]) -> None:
    """`recover = f`: f takes the retried fn's parameters (names aside) and returns its type."""
    assert info.retry is not None and info.retry_annotation is not None
    name = info.retry.recover
    arg = next(a for a in info.retry_annotation.args if a.name == "recover")
    target = fns.get(name or "")
    if target is None:
        diagnostics.append(
            Diagnostic.of(
                "retry-recover",
                f"`recover` names `{name}`, which is not a fn of this module"
                f"{did_you_mean(name or '', sorted(fns))}",
                arg.span,
            )
        )
        return
    if target is info:
        diagnostics.append(
            Diagnostic.of("retry-recover", "a fn cannot be its own `recover`", arg.span)
        )
        return
    ours = [(p.decl.mode, p.type) for p in info.params]
    theirs = [(p.decl.mode, p.type) for p in target.params]
    if ours != theirs or info.returns != target.returns:

        def shape(fn: FnInfo) -> str:
            params = ", ".join(
                ("" if p.decl.mode == "in" else p.decl.mode + " ") + str(p.type) for p in fn.params
            )
            return f"({params}) -> {fn.returns}"

        diagnostics.append(
            Diagnostic.of(
                "retry-recover",
                f"`recover = {name}` must take and return what `{info.decl.name}` does: "
                f"`{info.decl.name}` is {shape(info)}, `{name}` is {shape(target)}",
                arg.span,
                notes=(Note(f"`{name}` is declared here", target.decl.name_span),),
            )
        )
