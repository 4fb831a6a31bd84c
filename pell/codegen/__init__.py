"""Checked module -> PL/SQL: `lower` builds each fn's statement tree, `print_module` prints
the package (Python prints statements, the Jinja2 templates lay out the file)."""

from __future__ import annotations

import hashlib
import re

from pell import ast, naming, plsql
from pell.checker import types as t
from pell.checker import ut
from pell.checker.model import CheckedModule, FnInfo
from pell.codegen import json_lowering
from pell.codegen.aggregates import aggregate_statements
from pell.codegen.expressions import quote_text
from pell.codegen.list_copies import list_copy_function
from pell.codegen.objects import object_type_statements
from pell.codegen.subprograms import FnLowerer, subprogram_view
from pell.codegen.text_forms import (
    JSON_SEPARATOR,
    datetime_mask,
    list_text_function,
    oracle_list_text_function,
)
from pell.codegen.types import plsql_type
from pell.oracle_errors import NEVER_RETRY, PANIC_RANGE
from pell.plsql import MARKER_END, MARKER_START, source_marker
from pell.records import record
from pell.resources import template_environment


@record
class LoweredModule:
    """A module lowered to PL/SQL: its subprograms as statement trees, and everything else the
    package template lays out, decided in Python."""

    schema_types: tuple[str, ...]  # CREATE TYPE statements for @pipelined rows, each ending in /
    qualified: str  # `hr.employees`
    name: str  # `employees`
    spec_records: tuple[str, ...]
    spec_signatures: tuple[str, ...]
    body_records: tuple[str, ...]
    forward_signatures: tuple[str, ...]
    panic_range: tuple[int, int]
    panic_codes: tuple[tuple[str, str], ...]  # (code with its comma, comment); empty: no function
    subprograms: tuple[plsql.Subprogram, ...]
    # `text.split(d)`'s function and the list type it returns; empty: no text is split
    split_function: str = ""
    text_list_type: str = ""
    # `re::find_all`'s and `re::split`'s functions (pell.checker.regex); empty: not called
    regexp_all_function: str = ""
    regexp_split_function: str = ""
    # a number's and an interval's text, and text's number (pell.codegen.text_forms); empty:
    # none is converted
    number_text_function: str = ""
    interval_text_function: str = ""
    text_number_function: str = ""
    # a utPLSQL suite's package-level annotations (pell.checker.ut): `--%suite(...)`
    suite_annotations: tuple[str, ...] = ()
    # `"{xs}"`: the function that writes a list of each element type as text, in full
    # (pell.codegen.text_forms.oracle_list_text_function), by element type
    list_text_functions: tuple[str, ...] = ()
    # each aggregate's type, type body and function (pell.codegen.aggregates), each ending in /
    aggregates: tuple[str, ...] = ()
    # the json functions the package's code calls (templates/json_functions.sql.j2), in order
    json_functions: tuple[str, ...] = ()
    # how pell_dyn_row writes a date and a timestamp: as the json type writes them
    json_date_mask: str = ""
    json_timestamp_mask: str = ""
    reverse_function: str = ""  # `reverse(s)` (pell.checker.builtins); empty: not called
    pivot_item_function: str = ""  # pivot::sum_dyn's IN list items; empty: not called
    # the functions that copy a list into or out of another package's list type
    # (pell.codegen.list_copies), by name
    list_copy_functions: tuple[str, ...] = ()


def _record_sql(checked: CheckedModule, name: str) -> str:
    info = checked.records[name]
    fields = [(naming.field_name(f), plsql_type(ft, "field")) for f, ft in info.fields.items()]
    template = template_environment().get_template("record.sql.j2")
    return template.render(record={"name": naming.record_type_name(name), "fields": fields}).rstrip(
        "\n"
    )


def _list_sql(list_type: t.ListType) -> str:
    element = plsql_type(list_type.element, "field")
    return f"TYPE {plsql_type(list_type, 'local')} IS TABLE OF {element} INDEX BY PLS_INTEGER;"


TypeNode = t.RecordType | t.ListType


def _named_types(type_: t.Type) -> list[TypeNode]:
    return [type_] if isinstance(type_, t.RecordType | t.ListType) else []


def type_declarations(checked: CheckedModule) -> tuple[list[str], list[str]]:
    """Record and list type declarations, each after what it uses; those the package spec
    needs (public records, public signatures, and what they use) go in the spec."""
    used: list[TypeNode] = []
    for info in checked.records.values():
        used.append(t.RecordType(info.decl.name))

    def signature_types(fn: FnInfo) -> list[t.Type]:
        # a @pipelined fn returns its schema-level collection, not a package list type
        returns = [] if fn.pipelined else [fn.returns]
        return [*returns, *(p.type for p in fn.params)]

    for fn in checked.fns.values():
        for type_ in signature_types(fn):
            used += _named_types(type_)
        # a cursor's rows are fetched in batches into a list of its row type
        # (a cursor<dyn>'s rows are read through DBMS_SQL, one at a time: no batch)
        used += [
            t.ListType(p.type.element)
            for p in fn.params
            if isinstance(p.type, t.CursorType) and p.type.element != t.DYN_ROW
        ]
    # one type per expression: filtered in a comprehension, not a call per type
    for analysis in checked.analyses.values():
        used += [s.type for s in analysis.locals if isinstance(s.type, t.RecordType | t.ListType)]
        used += [x for x in analysis.types.values() if isinstance(x, t.RecordType | t.ListType)]
        used += [t.ListType(row) for row in analysis.fetched_rows]  # a cursor's FETCH batches

    def dependencies(node: TypeNode) -> list[TypeNode]:
        if isinstance(node, t.ListType):
            return _named_types(node.element)
        if node.module:
            return []  # another package's record: declared there
        fields = checked.records[node.name].fields.values()
        return [dep for field in fields for dep in _named_types(field)]

    # Each type after the types it uses: a depth-first walk without recursion (record chains
    # may be long), with a set for what is placed (a list lookup made this quadratic).
    ordered: list[TypeNode] = []
    placed: set[TypeNode] = set()
    expanding: set[TypeNode] = set()  # on the current path (the checker rejects cycles)
    for root in dict.fromkeys(used):  # a root met again is placed already
        stack: list[tuple[TypeNode, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                expanding.discard(node)
                placed.add(node)
                ordered.append(node)
                continue
            if node in placed or node in expanding:
                continue
            expanding.add(node)
            stack.append((node, True))
            stack.extend((dep, False) for dep in reversed(dependencies(node)) if dep not in placed)

    public: set[TypeNode] = set()

    def publish(node: TypeNode) -> None:
        pending = [node]
        while pending:
            current = pending.pop()
            if current not in public:
                public.add(current)
                pending += dependencies(current)

    for info in checked.records.values():
        if info.decl.public:
            publish(t.RecordType(info.decl.name))
    for fn in checked.fns.values():
        if fn.decl.public:
            for type_ in signature_types(fn):
                for node in _named_types(type_):
                    publish(node)

    def render(node: TypeNode) -> str:
        if isinstance(node, t.RecordType):
            return _record_sql(checked, node.name)
        return _list_sql(node)

    # the strongly typed cursors @parallel partitions by HASH or RANGE (pell.checker.parallel),
    # with their rows' record
    # with their rows' record, in the spec (SQL calls the fn, which only a public one can be)
    cursors: list[t.Type] = []
    for fn in checked.fns.values():
        for param in fn.params:
            if param.decl.name == fn.strong_cursor and isinstance(param.type, t.CursorType):
                cursors.append(param.type.element)
                for node in _named_types(param.type.element):
                    publish(node)

    ordered = [n for n in ordered if not (isinstance(n, t.RecordType) and n.module)]
    spec = [render(node) for node in ordered if node in public]
    body = [render(node) for node in ordered if node not in public]
    for row in dict.fromkeys(cursors):
        # PL/SQL Language Reference, "Cursor Variable Declaration": `TYPE t IS REF CURSOR
        # RETURN record_type`, a strong one
        spec.append(
            f"TYPE {naming.cursor_type_name(str(row))} IS REF CURSOR RETURN "
            f"{plsql_type(row, 'param')};"
        )
    for item in checked.module.items:
        if isinstance(item, ast.Enum):
            constants = [
                f"{naming.enum_constant(item.name, variant)} CONSTANT VARCHAR2(4000) := "
                f"{quote_text(value)};"
                for variant, value in checked.enums[item.name].items()
            ]
            (spec if item.public else body).append("\n".join(constants))
    return spec, body


def sql_column_type(type_: t.Type, target: str) -> str:
    """A scalar as a SQL object type's attribute (or a SQL collection's element). A `bool`: SQL
    BOOLEAN, a built-in data type from 23ai on (SQL Language Reference 23ai, Data Types,
    "Oracle Built-in Data Types": boolean_datatype; an attribute may be any built-in type,
    CREATE TYPE); before 23ai SQL has none, so NUMBER(1), 1 for TRUE and 0 for FALSE
    (FnLowerer.stmt_yield converts)."""
    if type_ == t.BOOL and target != "23ai":
        return "NUMBER(1)"
    return plsql_type(type_, "field")


def schema_types(checked: CheckedModule, target: str) -> list[str]:
    """The SQL object and collection types @pipelined fns return, one statement each."""
    statements: list[str] = []
    seen: set[t.Type] = set()
    for fn in checked.fns.values():
        if not (fn.pipelined and isinstance(fn.returns, t.ListType)):
            continue
        element = fn.returns.element
        if element in seen:
            continue
        seen.add(element)
        row, rows = naming.row_type_names(checked.module.path, str(element))
        if isinstance(element, t.RecordType):
            fields = checked.record_info(element).fields.items()
            columns = ",\n".join(
                f"  {naming.field_name(name)} {sql_column_type(type_, target)}"
                for name, type_ in fields
            )
            statements.append(f"CREATE OR REPLACE TYPE {row} FORCE AS OBJECT (\n{columns}\n);\n/")
            statements.append(f"CREATE OR REPLACE TYPE {rows} FORCE AS TABLE OF {row};\n/")
        else:
            element_type = sql_column_type(element, target)
            statements.append(f"CREATE OR REPLACE TYPE {rows} FORCE AS TABLE OF {element_type};\n/")
    return statements


def _panic_codes() -> tuple[tuple[str, str], ...]:
    width = max(len(str(code)) for code, _, _ in NEVER_RETRY) + 1
    rows = []
    for index, (code, name, reason) in enumerate(NEVER_RETRY):
        text = f"{code}," if index < len(NEVER_RETRY) - 1 else f"{code}"
        rows.append((text.ljust(width), f"{name}: {reason}"))
    return tuple(rows)


def header(source_name: str, source_text: str, version: str, target: str) -> str:
    digest = hashlib.sha256(source_text.encode("utf-8")).hexdigest()
    return (
        f"-- Generated by pellc {version} from {source_name}; do not edit.\n"
        f"-- Source SHA-256: {digest}\n"
        f"-- Target: Oracle {target}"
    )


def lower(checked: CheckedModule, target: str) -> LoweredModule:
    """The module as PL/SQL: the package around its subprograms' statement trees."""
    schema, name = naming.module_package(checked.module)
    spec_types, body_types = type_declarations(checked)
    fns = list(checked.fns.values())
    lowerers = [FnLowerer(checked, fn, checked.analyses[fn.decl.name], target) for fn in fns]
    subprograms = tuple(lowerer.lower_fn() for lowerer in lowerers)
    helpers = {helper for lowerer in lowerers for helper in lowerer.helpers}
    copies = {name: copy for lowerer in lowerers for name, copy in lowerer.list_copies.items()}
    splits = naming.SPLIT_FUNCTION in helpers
    regexp_all = _used(naming.REGEXP_ALL_FUNCTION, helpers)
    regexp_split = _used(naming.REGEXP_SPLIT_FUNCTION, helpers)
    return LoweredModule(
        # object types first: the package's signatures and the row types may use them
        schema_types=(*object_type_statements(checked, target), *schema_types(checked, target)),
        qualified=f"{schema}.{name}" if schema else name,
        name=name,
        spec_records=tuple(spec_types),
        # each subprogram carries its fn's signature (worked out once, in lower_fn)
        # a suite's procedure-level annotations directly before the procedure (pell.checker.ut)
        spec_signatures=tuple(
            "".join(f"{line}\n  " for line in ut.fn_lines(fn.decl))
            + source_marker(fn.decl.name_span.start)
            + sub.signature
            for fn, sub in zip(fns, subprograms, strict=True)
            if fn.decl.public
        ),
        body_records=tuple(body_types),
        # Private subprograms are declared first so they may call each other in any order.
        forward_signatures=tuple(
            sub.signature for fn, sub in zip(fns, subprograms, strict=True) if not fn.decl.public
        ),
        panic_range=PANIC_RANGE,
        # pell_is_panic serves the retry loops that catch every error (no `on = [...]`)
        panic_codes=_panic_codes() if any(fn.retry and not fn.retry.on for fn in fns) else (),
        subprograms=subprograms,
        split_function=naming.SPLIT_FUNCTION if splits else "",
        text_list_type=(
            plsql_type(t.ListType(t.TEXT), "local")
            if splits or regexp_all or regexp_split or json_lowering.KEYS_HELPER in helpers
            else ""
        ),
        regexp_all_function=regexp_all,
        regexp_split_function=regexp_split,
        number_text_function=_used(naming.NUMBER_TEXT_FUNCTION, helpers),
        interval_text_function=_used(naming.INTERVAL_TEXT_FUNCTION, helpers),
        text_number_function=_used(naming.TEXT_NUMBER_FUNCTION, helpers),
        suite_annotations=ut.suite_lines(checked.module),
        list_text_functions=tuple(
            oracle_list_text_function(element, plsql_type(t.ListType(element), "local"))
            for element in (t.Scalar(name) for name in t.SCALARS)
            if list_text_function(element) in helpers
        ),
        aggregates=tuple(
            statement
            for info in checked.aggregates.values()
            for statement in aggregate_statements(info, target)
        ),
        json_functions=tuple(
            f
            for f in (
                *json_lowering.HELPERS.values(),
                *json_lowering.DYN_ROW_HELPERS,
                json_lowering.WHOLE_HELPER,
            )
            if f in helpers
        ),
        json_date_mask=datetime_mask("date", JSON_SEPARATOR),
        json_timestamp_mask=datetime_mask("timestamp", JSON_SEPARATOR),
        reverse_function=_used(naming.REVERSE_FUNCTION, helpers),
        pivot_item_function=_used(naming.PIVOT_ITEM_FUNCTION, helpers),
        list_copy_functions=tuple(
            list_copy_function(copies[name]) for name in sorted(copies)
        ),
    )


def _used(function: str, helpers: set[str]) -> str:
    return function if function in helpers else ""


def print_module(lowered: LoweredModule, header: str) -> tuple[str, dict[int, int]]:
    """The `.sql` file for one module (the package spec and body, each ended by `/`), and
    which source offset each of its lines came from."""
    views = tuple(subprogram_view(subprogram) for subprogram in lowered.subprograms)
    template = template_environment().get_template("package.sql.j2")
    rendered = template.render(header=header, package=lowered, subprograms=views)
    return strip_markers(rendered)


def print_script(lowered: LoweredModule, header: str) -> tuple[str, dict[int, int]]:
    """The `.sql` file for a script (a file with no `module` line): an anonymous block whose
    declarative part holds the script's records, its statements' locals (and the types and
    helper functions they need), then its fns as local subprograms, and whose body is its
    statements, then `/`. PL/SQL Language Reference, "Blocks": a block's declarative part
    declares types and variables (item_list_1), then subprograms (item_list_2), all local to
    the block; "Forward Declaration": a subprogram declared before its definition can be
    called by those defined earlier, so every local fn is declared first when there are
    several (they may call each other in any order, as in a module)."""
    main = next(sub for sub in lowered.subprograms if sub.fn == ast.SCRIPT_FN)
    local = [sub for sub in lowered.subprograms if sub is not main]
    template = template_environment().get_template("script.sql.j2")
    rendered = template.render(
        header=header,
        package=lowered,
        main=subprogram_view(main),
        locals=[subprogram_view(sub) for sub in local],
        forwards=[sub.signature for sub in local] if len(local) > 1 else [],
    )
    return strip_markers(rendered)


def strip_markers(rendered: str) -> tuple[str, dict[int, int]]:
    """The SQL without source markers, and SQL line (1-based) -> source offset (the first
    marker on a line wins)."""
    # One regex pass: split gives the text between markers, each marker's offset in between
    # (so one text more than offsets).
    parts = _MARKER.split(rendered)
    texts = parts[0::2]
    origins: dict[int, int] = {}
    line = 1
    for text, offset in zip(texts, parts[1::2], strict=False):
        line += text.count("\n")
        if line not in origins:
            origins[line] = int(offset)
    return "".join(texts), origins


_MARKER = re.compile(f"{MARKER_START}([0-9]+){MARKER_END}")
