"""One fn -> one PL/SQL subprogram: the statement tree of its body, and its signature."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from pell import ast, naming, plsql, sqltext
from pell.checker import regex
from pell.checker import types as t
from pell.checker.bodies import falls_through, strip_propagate
from pell.checker.dynamic_sql import DynamicSql, Splice
from pell.checker.model import CheckedModule, FnAnalysis, FnInfo, ParamInfo
from pell.checker.pivot import DynamicPivot, source_text
from pell.checker.regex import Capture
from pell.checker.retry_facts import EXEC_DYN, ends_transaction, exec_dyn_effects
from pell.checker.sql_typing import sql_chain
from pell.codegen import json_lowering
from pell.codegen.expressions import ExpressionLowerer, quote_text
from pell.codegen.lists import dense_locals, dense_value, unwrap_value, written_in
from pell.codegen.retry_loop import lower_retry_loop
from pell.codegen.text_forms import json_form, oracle_text
from pell.codegen.types import plsql_type
from pell.precedence import ADDITIVE, ATOM, wrap
from pell.records import record, replace

_MODES = {"in": "IN", "out": "OUT", "inout": "IN OUT"}


@record
class SubprogramView:
    """What the subprogram template lays out."""

    signature: str  # `FUNCTION f(p_x IN NUMBER) RETURN t_order`
    name: str
    declarations: tuple[str, ...]
    body: tuple[str, ...]  # lines, already indented under BEGIN


def subprogram_view(subprogram: plsql.Subprogram) -> SubprogramView:
    declarations, body = plsql.print_subprogram(subprogram)
    marked = plsql.source_marker(subprogram.origin) + subprogram.signature
    return SubprogramView(marked, subprogram.name, tuple(declarations), tuple(body))


StmtT = TypeVar("StmtT", bound=plsql.Stmt)


# Annotations that become clauses after the RETURN type, in the order Oracle documents them.
_FUNCTION_CLAUSES = (("deterministic", "DETERMINISTIC"), ("result_cache", "RESULT_CACHE"))


def signature(fn: FnInfo) -> str:
    params = ", ".join(
        f"{naming.param_name(p.decl.name)} {_MODES[p.decl.mode]} {_param_type(fn, p)}"
        for p in fn.params
    )
    head = f"{'FUNCTION' if fn.is_function else 'PROCEDURE'} {naming.fn_name(fn.decl.name)}"
    if params:
        head += f"({params})"
    if fn.pipelined and isinstance(fn.returns, t.ListType):
        rows = naming.row_type_names(fn.module_path, str(fn.returns.element))[1]
        head += f" RETURN {rows} PIPELINED"
    elif fn.is_function:
        head += f" RETURN {plsql_type(fn.returns, 'param')}"
        names = {a.name for a in fn.decl.annotations}
        head += "".join(f" {clause}" for name, clause in _FUNCTION_CLAUSES if name in names)
    if fn.parallel_clause:
        head += f" {fn.parallel_clause}"
    return head


def _param_type(fn: FnInfo, param: ParamInfo) -> str:
    """A parameter's type; the cursor @parallel partitions by HASH or RANGE is a strongly
    typed REF CURSOR of its rows (pell.checker.parallel)."""
    if param.decl.name == fn.strong_cursor and isinstance(param.type, t.CursorType):
        return naming.cursor_type_name(str(param.type.element))
    return plsql_type(param.type, "param")


def _refers_to(expr: ast.Expr, plsql_root: str, analysis: FnAnalysis) -> bool:
    """Does `expr` read the variable `plsql_root` anywhere?"""
    return any(
        isinstance(node, ast.Name)
        and (symbol := analysis.names.get(id(node))) is not None
        and symbol.plsql == plsql_root
        for node in ast.walk(expr)
    )


class FnLowerer(ExpressionLowerer):
    """Lowers one fn body to a PL/SQL statement tree; statements that need temporaries get
    them here."""

    def __init__(
        self, checked: CheckedModule, fn: FnInfo, analysis: FnAnalysis, target: str
    ) -> None:
        super().__init__(checked, analysis)
        self.fn = fn
        self.target = target
        self.out: list[plsql.Stmt] = []  # where `emit` appends: the statement list being built
        self.taken = {s.plsql for s in analysis.locals} | set(naming.RESERVED_LOCALS)
        self.taken |= {naming.param_name(p.decl.name) for p in fn.params}
        self.temp_declarations: list[str] = []
        self.temps: dict[str, list[str]] = {}
        self.temps_in_use: dict[str, int] = {}
        # Statements to run before leaving a construct early (COMMIT of a transaction block,
        # the finally procedure), each with the loop depth it was entered at, outermost first.
        self.exit_hooks: list[tuple[tuple[plsql.Stmt, ...], int]] = []
        self.loop_depth = 0
        # Per loop depth of a body: the label a `break` there leaves (a cursor loop's FETCH
        # loop), and the statement a `continue` there runs first (a FIRST/NEXT loop's NEXT).
        self.break_labels: dict[int, str] = {}
        self.continue_advances: dict[int, plsql.Stmt] = {}
        self.dense = dense_locals(checked, fn, analysis)  # local lists pellc fills itself
        self.fetched_cursors: list[str] = []  # the cursors the fn's handler closes
        self.dyn_cursors: list[str] = []  # the DBMS_SQL cursor numbers of `cursor<dyn>` loops
        # each local cursor's CLOSE if open, by its PL/SQL name: run with the exit hooks at a
        # `return` and at the end of the body (`lower_fn`)
        self.cursor_hooks: dict[str, tuple[tuple[plsql.Stmt, ...], int]] = {}
        self.needs_result = False
        self.savepoints = 0
        self.retry_declarations: list[str] = []
        self.source_offset = fn.decl.name_span.start

    # -- building the tree

    def at(self, node: StmtT) -> StmtT:
        """`node`, marked as lowered from the statement being lowered (for the source map and
        the verifier's locations)."""
        node.origin = self.source_offset
        return node

    def emit(self, node: plsql.Stmt) -> None:
        """Append `node`; the calls lowered since the last statement are its calls."""
        if self.calls and isinstance(
            node, plsql.Assign | plsql.Exec | plsql.Return | plsql.PipeRow
        ):
            node.calls = self.take_calls()
        self.out.append(self.at(node))

    def take_calls(self) -> tuple[tuple[str, ...], ...]:
        calls = tuple(self.calls)
        self.calls.clear()
        return calls

    def collect(self, produce: Callable[[], object]) -> list[plsql.Stmt]:
        """The statements `produce` emits, in a list of their own."""
        saved, self.out = self.out, []
        try:
            produce()
            return self.out
        finally:
            self.out = saved

    def condition(self, expr: ast.Expr) -> plsql.Opaque:
        text = self.lower(expr)
        return plsql.Opaque(text, self.take_calls())

    def condition_with_prelude(self, expr: ast.Expr) -> tuple[list[plsql.Stmt], plsql.Opaque]:
        """A condition, and the statements its lowering needs first (none for most)."""
        saved, self.out = self.out, []
        try:
            condition = self.condition(expr)
            return self.out, condition
        finally:
            self.out = saved

    def temp(self, type_: t.Type) -> str:
        """A temporary of `type_`, free for the rest of the current statement."""
        key = plsql_type(type_, "local")
        used = self.temps_in_use.get(key, 0)
        pool = self.temps.setdefault(key, [])
        if used == len(pool):
            pool.append(self.held(type_))
        self.temps_in_use[key] = used + 1
        return pool[used]

    def held(self, type_: t.Type) -> str:
        """A variable of `type_` of its own, declared here: a loop's list is read on every
        pass, while a temporary is free again at the next statement of its body."""
        key = plsql_type(type_, "local")
        slug = key[2:] if key.startswith("t_") else str(type_).lower()
        if isinstance(type_, t.CursorType):
            slug = "cursor"
        # cut to fit the target, with room for the `_2`.. suffix `unique` may add
        limit = naming.MAX_IDENTIFIER_BYTES[self.target] - 4
        name = naming.unique(naming.temporary_name(slug)[:limit].rstrip("_"), self.taken)
        self.temp_declarations.append(f"{name} {key};")
        return name

    def declared_index(self, name: str) -> str:
        """A PLS_INTEGER of its own (the indexes of an INDEX BY PLS_INTEGER table)."""
        index = naming.unique(name, self.taken)
        self.temp_declarations.append(f"{index} PLS_INTEGER;")
        return index

    def is_dense(self, expr: ast.Expr) -> bool:
        """Is `expr` a list pellc filled itself, indexed 1 .. COUNT (`pell.codegen.lists`)?"""
        return dense_value(expr, self.analysis, self.dense)

    # -- the whole subprogram

    def lower_fn(self) -> plsql.Subprogram:
        decl = self.fn.decl
        annotations = {a.name for a in decl.annotations}
        autonomous = "autonomous" in annotations
        declarations: list[plsql.Declaration] = []
        if autonomous:
            declarations.append(plsql.Variable("PRAGMA AUTONOMOUS_TRANSACTION;"))
        if "udf" in annotations:
            declarations.append(plsql.Variable("PRAGMA UDF;"))
        declarations += [
            plsql.Variable(f"{s.plsql} {plsql_type(s.type, 'local')};")
            for s in self.analysis.locals
        ]

        # On the error path: cleanup first, then the autonomous ROLLBACK, then re-raise.
        handler: list[plsql.Stmt] = []
        finally_declarations: list[plsql.Declaration] = []
        if autonomous:
            self.exit_hooks.append(((plsql.Commit(),), 0))
            handler.insert(0, self.at(plsql.Rollback()))
        if decl.finally_body is not None:
            finally_declarations = self.finally_procedure(decl.finally_body)
            self.exit_hooks.append(((plsql.CallLocal(naming.FINALLY_PROCEDURE),), 0))
            handler.insert(0, self.at(plsql.CallLocal(naming.FINALLY_PROCEDURE)))

        # A cursor this fn opens is closed on every way out but the `return` that hands it
        # on: before each `return` (after its value is computed), at the end of the body, and
        # in the fn's handler, if still open (a cursor variable never opened is not %ISOPEN).
        # One handed to a call is read and closed there, and then is not %ISOPEN here (a
        # cursor variable is a pointer to its cursor: PL/SQL Language Reference, "Cursor
        # Variables"); a callee that returned before reading it leaves it to this fn. Opened
        # again (a loop's next pass, a retried attempt), it need not be closed first: "You
        # need not close a cursor variable before reopening it" (PL/SQL Language Reference,
        # CLOSE Statement).
        # A fn that returns a cursor may return the one it handed to a call (`return
        # pass(c)`: the same cursor): those it hands on are left open.
        for symbol in self.analysis.locals:
            if isinstance(symbol.type, t.CursorType) and not (
                isinstance(self.fn.returns, t.CursorType)
                and symbol.plsql in self.analysis.handed_cursors
            ):
                self.fetched_cursors.append(symbol.plsql)
                self.cursor_hooks[symbol.plsql] = ((self.close_if_open(symbol.plsql),), 0)

        def body() -> None:
            if self.fn.retry is None:
                self.block(decl.body)
            else:
                lower_retry_loop(self)
            if self.analysis.falls_through:
                self.run_exit_hooks([*self.exit_hooks, *self.cursor_hooks.values()])
                if self.fn.pipelined:
                    self.emit(plsql.Return())

        statements = self.collect(body)
        handler[:0] = [
            *(self.close_if_open(cursor) for cursor in self.fetched_cursors),
            *(self.close_dyn_if_open(number) for number in self.dyn_cursors),
        ]
        handlers = []
        if handler:
            handlers.append(plsql.Handler([plsql.OTHERS], [*handler, self.at(plsql.Raise())]))

        declarations += [plsql.Variable(text) for text in self.temp_declarations]
        if self.analysis.bulk_counts:
            # SQL%BULK_ROWCOUNT's elements and SQL%ROWCOUNT are PLS_INTEGERs (PL/SQL Language
            # Reference, "Getting Number of Rows Affected by FORALL Statement")
            declarations += [
                plsql.Variable(
                    f"TYPE {naming.BULK_COUNTS_TYPE} IS TABLE OF PLS_INTEGER INDEX BY PLS_INTEGER;"
                ),
                plsql.Variable(f"{naming.BULK_ROWS} {naming.BULK_COUNTS_TYPE};"),
                plsql.Variable(f"{naming.BULK_TOTAL} PLS_INTEGER;"),
            ]
        if self.needs_result:
            declarations.append(
                plsql.Variable(f"{naming.RESULT_VARIABLE} {plsql_type(self.fn.returns, 'local')};")
            )
        if self.fn.retry is not None:
            declarations.append(plsql.Variable(f"{naming.ATTEMPT_VARIABLE} PLS_INTEGER := 0;"))
            declarations += [plsql.Variable(text) for text in self.retry_declarations]
        declarations += finally_declarations
        if not statements:
            statements.append(plsql.Null())  # no source line: nothing was written here
        return plsql.Subprogram(
            module_path=self.fn.module_path,
            fn=decl.name,
            name=naming.fn_name(decl.name),
            signature=signature(self.fn),
            declarations=declarations,
            body=statements,
            handlers=handlers,
            autonomous=autonomous,
            retry=self.fn.retry,
            origin=decl.name_span.start,
        )

    def close_if_open(self, cursor: str) -> plsql.If:
        """On the way out of a pipelined fn by an exception, its cursor is closed. That
        includes NO_DATA_NEEDED, which PIPE ROW raises when the query reading the fn needs no
        more rows (`where rownum <= 5`): the fn ends there, and its CLOSE after the loop does
        not run. The handler re-raises it: "RAISE NO_DATA_NEEDED; -- Optional, equivalent to
        RETURN" (PL/SQL Language Reference, PL/SQL Optimization and Tuning, Example 12-35,
        "Pipelined Table Function Handles NO_DATA_NEEDED", which cleans up so)."""
        close = self.at(plsql.Exec(f"CLOSE {cursor}"))
        still_open = plsql.Branch(plsql.Opaque(f"{cursor}%ISOPEN"), [close])
        return self.at(plsql.If([still_open], one_line=True))

    def close_dyn_if_open(self, number: str) -> plsql.If:
        """A `cursor<dyn>` loop's DBMS_SQL cursor, closed on the way out by an exception."""
        close = self.at(plsql.Exec(f"DBMS_SQL.CLOSE_CURSOR({number})"))
        still_open = plsql.Branch(plsql.Opaque(f"DBMS_SQL.IS_OPEN({number})"), [close])
        return self.at(plsql.If([still_open], one_line=True))

    def finally_procedure(self, body: ast.Block) -> list[plsql.Declaration]:
        """The cleanup as a local procedure that runs once, however often it is called."""

        def cleanup() -> None:
            done = plsql.Branch(plsql.FlagSet(naming.FINALLY_DONE), [plsql.Return()])
            self.emit(plsql.If([done], one_line=True))
            self.emit(plsql.SetFlag(naming.FINALLY_DONE))
            self.block(body)

        return [
            plsql.Variable(f"{naming.FINALLY_DONE} BOOLEAN := FALSE;"),
            plsql.LocalProcedure(naming.FINALLY_PROCEDURE, self.collect(cleanup)),
        ]

    def run_exit_hooks(self, hooks: list[tuple[tuple[plsql.Stmt, ...], int]]) -> None:
        for nodes, _ in reversed(hooks):
            for node in nodes:
                self.emit(replace(node))

    def reset(self, name: str, type_: t.Type) -> plsql.Stmt:
        """The statement that empties a variable: NULL, DELETE for an INDEX BY table (which
        cannot be assigned NULL), CLOSE if open for a cursor ("You cannot assign nulls to a
        cursor variable", PL/SQL Language Reference, Restrictions on Cursor Variables)."""
        if isinstance(type_, t.ListType):
            return plsql.Exec(f"{name}.DELETE")
        if isinstance(type_, t.CursorType):
            return self.close_if_open(name)
        return plsql.Assign(name, "NULL")

    # -- statements

    def block(self, block: ast.Block) -> None:
        for stmt in block.stmts:
            self.temps_in_use.clear()
            outer, self.source_offset = self.source_offset, stmt.span.start
            STATEMENT_SQL[type(stmt)](self, stmt)
            self.source_offset = outer

    def loop_body(self, block: ast.Block) -> list[plsql.Stmt]:
        self.loop_depth += 1
        try:
            return self.nested(block)
        finally:
            self.loop_depth -= 1

    def nested(self, block: ast.Block) -> list[plsql.Stmt]:
        """The statements of `block`, or NULL; for an empty one (PL/SQL needs a statement)."""
        return self.collect(lambda: self.block(block)) or [self.at(plsql.Null())]

    def stmt_let(self, stmt: ast.Let) -> None:
        symbol = self.analysis.bindings[id(stmt)]
        # A local list is empty where the subprogram begins (PL/SQL Language Reference,
        # "Collection Types", Table 6-1: an associative array's uninitialized status is
        # "Empty"): a `let` that runs once per call, outside any loop and in a fn no retry
        # runs again, needs no DELETE before it fills the list.
        fresh = (
            isinstance(symbol.type, t.ListType | t.CursorType)
            and self.loop_depth == 0
            and self.fn.retry is None
        )  # a cursor variable, too, is not open where the subprogram begins
        if stmt.value is None:
            if not fresh:
                self.emit(self.reset(symbol.plsql, symbol.type))
        elif fresh and isinstance(stmt.value, ast.ListLit):
            self.store_list(symbol.plsql, stmt.value, symbol.type, fresh=True)
        else:
            self.store(symbol.plsql, stmt.value, symbol.type)

    def stmt_assign(self, stmt: ast.Assign) -> None:
        target = stmt.target
        type_ = self.type_of(target)
        if isinstance(target, ast.Name) and isinstance(type_, t.UnknownType):
            type_ = self.analysis.names[id(target)].type  # a variable's own type
        self.store(self.lower(target), stmt.value, type_)

    def store(self, target: str, value: ast.Expr, type_: t.Type) -> None:
        """`target := value`, field by field for record literals, INTO for queries."""
        not_found = self.not_found_of(value)
        value = unwrap_value(value)
        root = target.split(".")[0]
        if (
            isinstance(value, ast.RecordLit)
            and not isinstance(self.type_of(value), t.ObjectType)  # its constructor
            and not _refers_to(value, root, self.analysis)
        ):
            for init in value.fields:
                self.store(
                    f"{target}.{naming.field_name(init.name)}", init.value, self.type_of(init.value)
                )
            return
        if isinstance(value, ast.ListLit):
            self.store_list(target, value, type_)
            return
        capture = self.analysis.captures.get(id(value))
        if capture is not None and isinstance(value, ast.Call):
            self.store_capture(target, value.args[0], capture)
            return
        if (chain := sql_chain(value)) is not None:
            self.store_query(target, chain[0], chain[1], type_, not_found)
            return
        if (dynamic := self.analysis.dynamic_sql.get(id(value))) is not None:
            self.emit(dynamic_statement(dynamic, self.into_list(target, type_)))
            return
        json_call = self.analysis.json_calls.get(id(value))
        if json_call is not None and json_call.record is not None:
            self.store_json_into(target, value, json_call.record)
            return
        if (pivot := self.analysis.pivots.get(id(value))) is not None:
            self.open_pivot(target, pivot)
            return
        self.emit(plsql.Assign(target, self.lower(value)))

    def store_json_into(self, target: str, value: ast.Expr, record: t.RecordType) -> None:
        """`json::into::<T>(j)`: the record field by field (pell.codegen.json_lowering), the
        json value read once."""
        assert isinstance(value, ast.Call)
        document = self.lower(value.args[0])
        if not isinstance(unwrap_value(value.args[0]), ast.Name):
            holder = self.temp(t.JSON)
            self.emit(plsql.Assign(holder, document))
            document = holder
        for field_target, field_value in json_lowering.into_assignments(
            self, document, target, record
        ):
            self.emit(plsql.Assign(field_target, field_value))

    def open_pivot(self, cursor: str, pivot: DynamicPivot) -> None:
        """`pivot::sum_dyn(...)` into `cursor` (pell.checker.pivot): the distinct non-null
        values of `col`, read by static SQL, each written into the PIVOT's IN list by
        pell_pivot_item (templates/pivot_functions.sql.j2): a literal of the value's type (a
        datetime's the TO_DATE of a literal, for its BC years), written with explicit formats,
        that no value can end (a text's through DBMS_ASSERT.ENQUOTE_LITERAL), aliased by the
        same text as a name DBMS_ASSERT.ENQUOTE_NAME checks (PL/SQL Packages and Types
        Reference, DBMS_ASSERT); a text with a `"` raises VALUE_ERROR. Then OPEN FOR the PIVOT query; with no value to pivot on (an empty IN list is no SQL), a
        query of the `rows` column that returns no row."""
        binds = self.analysis.binds[id(pivot.source)]
        columns = naming.unique("l_pivot_columns", self.taken)
        self.temp_declarations.append(f"{columns} VARCHAR2(32767);")
        value = naming.unique("r_pivot_value", self.taken)
        self.taken.discard(value)
        static = spliced_sql(pivot.source, binds)
        found = f"{value}.{pivot.col}"
        query = plsql.Sql(
            f"SELECT DISTINCT {pivot.col} FROM (\n{plsql.INDENT}{static}\n) "
            f"WHERE {pivot.col} IS NOT NULL ORDER BY {pivot.col}",
            verb="select",
            binds=tuple(replacement for _, replacement in binds),
            summary=f"pivot::sum_dyn values of {pivot.col}",
        )
        # the value's literal and alias, written with explicit formats, not the session's
        # NLS ones (templates/pivot_functions.sql.j2)
        self.helpers.add(naming.PIVOT_ITEM_FUNCTION)
        item = (
            f"{columns} || CASE WHEN {columns} IS NOT NULL THEN ', ' END"
            f" || {naming.PIVOT_ITEM_FUNCTION}({found})"
        )
        self.emit(plsql.Assign(columns, "NULL"))
        assign = self.at(plsql.Assign(columns, item))
        self.emit(plsql.CursorLoop(value, self.at(query), [assign], True))
        text, using = source_text(pivot.source, binds)
        source = quote_text(text)
        head = quote_text(f"SELECT * FROM (SELECT {pivot.rows}, {pivot.col}, {pivot.value} FROM (")
        tail = quote_text(f")) PIVOT (SUM({pivot.value}) FOR {pivot.col} IN (")
        pivoted = f"{head} || {source} || {tail} || {columns} || '))'"
        empty = f"{quote_text(f'SELECT {pivot.rows} FROM (')} || {source} || ') WHERE 1 = 0'"
        text = (
            f"OPEN {cursor} FOR\n{plsql.INDENT}CASE WHEN {columns} IS NULL THEN {empty}"
            f"\n{plsql.INDENT}ELSE {pivoted} END"
        )
        if using:
            text += " USING " + ", ".join(using)
        self.emit(plsql.Sql(text, verb="open", binds=tuple(using), summary="pivot::sum_dyn"))

    def store_list(
        self, target: str, value: ast.ListLit, type_: t.Type, fresh: bool = False
    ) -> None:
        """`target := [a, b]`: emptied (unless `fresh`, empty already), then filled from
        index 1."""
        if _refers_to(value, target.split(".")[0], self.analysis):
            temp = self.temp(type_)
            self.store_list(temp, value, type_)
            self.emit(plsql.Assign(target, temp))
            return
        element = type_.element if isinstance(type_, t.ListType) else t.UNKNOWN
        if not fresh:
            self.emit(plsql.Exec(f"{target}.DELETE"))
        for index, item in enumerate(value.items, start=1):
            self.store(f"{target}({index})", item, element)

    def into_list(self, target: str, type_: t.Type) -> list[str]:
        """INTO targets: a record field by field, anything else whole."""
        if isinstance(type_, t.RecordType):
            fields = self.checked.record_info(type_).fields
            return [f"{target}.{naming.field_name(name)}" for name in fields]
        return [target]

    def store_query(
        self,
        target: str,
        block: ast.SqlBlock,
        calls: list[ast.MethodCall],
        type_: t.Type,
        not_found: tuple[str, tuple[tuple[str, str | None], ...]] | None,
    ) -> None:
        """A sql! { } value into `target`, by its terminator."""
        names = [call.name for call in calls]
        terminator = names[-1]
        if block.jq_whole:
            self.store_whole_rows(target, block, terminator, type_, not_found)
            return
        lock = " FOR UPDATE" if "for_update" in names else ""
        if lock and "nowait" in names:
            lock += " NOWAIT"
        if terminator == "rowcount":
            self.emit(self.sql_statement(block))
            self.emit(plsql.Assign(target, "SQL%ROWCOUNT"))
        elif "returning" in names:
            self.emit(self.sql_statement(block, returning=self.into_list(target, type_)))
            self.emit(self.returned_no_row(not_found))
        elif terminator == "collect":
            self.emit(self.sql_statement(block, into=[target], bulk=True, suffix=lock))
        elif terminator == "first" and sqltext.analyse(block.text).skip_locked:
            self.emit(self.fetch_unlocked(block, target, type_))
        elif terminator == "first":
            # No row is None: NULL, for a record every field
            query = self.sql_statement(
                block, into=self.into_list(target, type_), suffix=" FETCH FIRST 1 ROWS ONLY"
            )
            self.in_block(query, plsql.NO_DATA_FOUND, plsql.Assign(target, "NULL"))
        elif not_found is not None:
            # `.one()?`: no row is the fn's NotFound error
            query = self.sql_statement(block, into=self.into_list(target, type_), suffix=lock)
            self.in_block(query, plsql.NO_DATA_FOUND, self.raise_error(*not_found))
        else:
            self.emit(self.sql_statement(block, into=self.into_list(target, type_), suffix=lock))

    def store_whole_rows(
        self,
        target: str,
        block: ast.SqlBlock,
        terminator: str,
        type_: t.Type,
        not_found: tuple[str, tuple[tuple[str, str | None], ...]] | None,
    ) -> None:
        """A `jq! { }` whose rows hold an `int`: INTO an `int` (PLS_INTEGER, NUMBER(38)) would
        round a fraction ("If a value exceeds the scale, then Oracle rounds it", SQL Language
        Reference, "NUMBER Data Type"), so
        each int value is read as a NUMBER and goes through pell_whole, which raises
        VALUE_ERROR for a fraction, as `json::into` does. `.collect()` reads the rows one by
        one (a cursor FOR loop over the aliased columns); `.one()` and `.first()` read into
        NUMBER temporaries."""
        self.helpers.add(json_lowering.WHOLE_HELPER)
        columns = block.jq_columns
        row = type_.element if terminator == "collect" and isinstance(type_, t.ListType) else type_

        def whole(column: str, value: str) -> str:
            return f"{json_lowering.WHOLE_HELPER}({value})" if column in block.jq_whole else value

        if terminator == "collect":
            variable = naming.unique("r_pell_row", self.taken)
            self.taken.discard(variable)
            element = f"{target}({target}.COUNT + 1)"
            body: list[plsql.Stmt] = []
            if isinstance(row, t.RecordType):
                holder = self.temp(row)
                body += [
                    self.at(plsql.Assign(field, whole(column, f"{variable}.{column}")))
                    for field, column in zip(self.into_list(holder, row), columns, strict=True)
                ]
                body.append(self.at(plsql.Assign(element, holder)))
            else:
                value = whole(columns[0], f"{variable}.{columns[0]}")
                body.append(self.at(plsql.Assign(element, value)))
            self.emit(plsql.Exec(f"{target}.DELETE"))
            query = self.sql_statement(block)
            self.emit(plsql.CursorLoop(variable, self.at(query), body, "\n" in query.text))
            return
        targets = self.into_list(target, row)
        staged = [
            self.temp(t.NUMBER) if column in block.jq_whole else field
            for field, column in zip(targets, columns, strict=True)
        ]
        suffix = " FETCH FIRST 1 ROWS ONLY" if terminator == "first" else ""
        read: list[plsql.Stmt] = [self.at(self.sql_statement(block, into=staged, suffix=suffix))]
        read += [
            self.at(plsql.Assign(field, whole(column, stage)))
            for field, stage, column in zip(targets, staged, columns, strict=True)
            if column in block.jq_whole
        ]
        handler: plsql.Stmt | None = None
        if terminator == "first":
            handler = plsql.Assign(target, "NULL")  # no row is None
        elif not_found is not None:
            handler = self.raise_error(*not_found)  # `.one()?`: the fn's NotFound error
        if handler is None:
            for statement in read:
                self.emit(statement)
            return
        self.emit(plsql.Block(read, [plsql.Handler([plsql.NO_DATA_FOUND], [self.at(handler)])]))

    def returned_no_row(
        self, not_found: tuple[str, tuple[tuple[str, str | None], ...]] | None
    ) -> plsql.If:
        """After DML RETURNING INTO: no row is NO_DATA_FOUND (with `?`, the fn's NotFound
        error), as for `.one()`. "If the statement affects no rows, then the values of the
        variables are undefined" (PL/SQL Language Reference, RETURNING INTO Clause): read on,
        they could hold what an earlier attempt returned. Several rows raise ORA-01422 by
        themselves ("In PL/SQL, a DML RETURNING INTO statement returned more than one row",
        Database Error Messages, ORA-01422)."""
        no_row = plsql.Opaque("SQL%ROWCOUNT = 0")
        if not_found is None:
            raised: plsql.Stmt = self.at(plsql.Raise(plsql.NO_DATA_FOUND))
            return plsql.If([plsql.Branch(no_row, [raised])], one_line=True)
        return plsql.If([plsql.Branch(no_row, [self.at(self.raise_error(*not_found))])])

    def fetch_unlocked(self, block: ast.SqlBlock, target: str, type_: t.Type) -> plsql.Block:
        """`.first()` on a FOR UPDATE SKIP LOCKED query: one FETCH from an explicit cursor
        (Oracle allows no FETCH FIRST with FOR UPDATE, and ROWNUM limits the rows before the
        locked ones are skipped: docs/retry.md, "Claims under SKIP LOCKED", says what is
        documented of which rows this locks). No row is None, assigned: the target must not
        keep an earlier attempt's or iteration's row. The cursor is the block's own and is
        closed on every way out, an error's too: "You must close a cursor before opening it
        again, otherwise PL/SQL raises the predefined exception CURSOR_ALREADY_OPEN" (PL/SQL
        User's Guide and Reference 10.2, CLOSE Statement), and a retried attempt opens it
        again."""
        cursor = naming.FIRST_CURSOR
        query = self.sql_statement(block)
        text = query.text
        if "\n" in text:
            text = "\n" + "\n".join(
                plsql.INDENT + line if line else line for line in text.split("\n")
            )
        else:
            text = " " + text
        # OPEN and FETCH are the statements that run the query: sites for pellc verify
        opened = plsql.Sql(
            f"OPEN {cursor}",
            verb="open",
            binds=query.binds,
            summary=query.summary,
            words=query.words,
        )
        close = plsql.Exec(f"CLOSE {cursor}")
        no_row = plsql.Branch(
            plsql.Opaque(f"{cursor}%NOTFOUND"), [self.at(plsql.Assign(target, "NULL"))]
        )
        still_open = plsql.Branch(plsql.Opaque(f"{cursor}%ISOPEN"), [self.at(replace(close))])
        into = self.into_list(target, type_)
        fetched = plsql.Sql(
            f"FETCH {cursor} INTO {', '.join(into)}", verb="fetch", into=tuple(into)
        )
        body: list[plsql.Stmt] = [
            self.at(opened),
            self.at(fetched),
            self.at(plsql.If([no_row], one_line=True)),
            self.at(close),
        ]
        cleanup: list[plsql.Stmt] = [
            self.at(plsql.If([still_open], one_line=True)),
            self.at(plsql.Raise()),
        ]
        return plsql.Block(
            body,
            [plsql.Handler([plsql.OTHERS], cleanup)],
            declarations=[f"CURSOR {cursor} IS{text};"],
        )

    def in_block(
        self, statement: plsql.Stmt, exception: plsql.ExceptionName, handler: plsql.Stmt
    ) -> None:
        """BEGIN statement EXCEPTION WHEN exception THEN handler END;"""
        handlers = [plsql.Handler([exception], [self.at(handler)])]
        self.emit(plsql.Block([self.at(statement)], handlers))

    def not_found_of(
        self, value: ast.Expr
    ) -> tuple[str, tuple[tuple[str, str | None], ...]] | None:
        while isinstance(value, ast.Wrap) and value.kind in ("Ok", "Some") and value.value:
            value = value.value
        return self.analysis.not_found.get(id(value))

    def raise_error(
        self, error: str, values: tuple[tuple[str, str | None], ...]
    ) -> plsql.RaiseError:
        """RAISE_APPLICATION_ERROR with the error's runtime code and `<module>.<Error>: <JSON>`."""
        module_path, own_name, field_types = self.checked.error_info(error)
        literal = f"{'.'.join(module_path)}.{own_name}: {{"
        pieces: list[str] = []
        for index, (field, value) in enumerate(values):
            literal += ("," if index else "") + f'"{field}":'
            if value is None:
                literal += "null"
                continue
            pieces += [quote_text(literal), json_value(value, field_types[field], self.helpers)]
            literal = ""
        pieces.append(quote_text(literal + "}"))
        message = " || ".join(pieces)
        if len(pieces) > 1:
            message = f"SUBSTRB({message}, 1, 2048)"  # Oracle's limit for the message
        code = naming.code_constant(module_path, own_name)
        return plsql.RaiseError(code, message, (module_path, own_name))

    def store_capture(self, target: str, text: ast.Expr, capture: Capture) -> None:
        """`re::capture::<T>(text, /pattern/)`: each field the text its group matched, the
        first match's: REGEXP_SUBSTR(text, pattern, 1, 1, 'c', group) (SQL Language Reference,
        REGEXP_SUBSTR: subexpr; NULL when nothing matches). The text is read once, before the
        first field is set (it may be computed, or read from the target itself)."""
        source = self.lower(text)
        if not isinstance(text, ast.Name | ast.StringLit):
            held = self.temp(t.TEXT)
            self.emit(plsql.Assign(held, source))
            source = held
        pattern = quote_text(capture.pattern)
        for field, group in capture.fields:
            self.emit(
                plsql.Assign(
                    f"{target}.{naming.field_name(field)}",
                    f"REGEXP_SUBSTR({source}, {pattern}, 1, 1, {regex.MATCH_PARAMETER}, {group})",
                )
            )

    def prelude_value(self, expr: ast.Expr) -> str:
        type_ = self.type_of(expr)
        name = self.temp(type_)
        self.store(name, expr, type_)
        return name

    def match_subject(self, expr: ast.Match) -> str:
        subject, stored = self.analysis.matches[id(expr)]
        if stored:
            self.store(subject, expr.subject, self.type_of(expr.subject))
        return subject

    def match_statement(self, expr: ast.Match) -> None:
        """A `match` statement: IF / ELSIF on each arm's patterns, ELSE for `_`."""
        subject = self.match_subject(expr)
        branches: list[plsql.Branch] = []
        rest: list[plsql.Stmt] | None = None
        for arm in expr.arms:
            condition = self.arm_condition(arm, subject)
            calls = self.take_calls()
            bound = [
                self.at(plsql.Assign(local, value))
                for pattern in arm.patterns
                for local, value in self.analysis.pattern_values.get(id(pattern), [])
            ]
            body = bound + self.arm_body(arm.body)
            if condition is None:
                rest = body
                break
            branches.append(plsql.Branch(plsql.Opaque(condition, calls), body))
        if not branches:
            for node in rest or []:
                self.out.append(node)
            return
        if rest is not None and all(isinstance(node, plsql.Null) for node in rest):
            rest = None  # `_ -> { }`: no ELSE NULL
        self.emit(plsql.If(branches, rest))

    def arm_body(self, body: ast.Block | ast.Expr) -> list[plsql.Stmt]:
        if isinstance(body, ast.Block):
            return self.nested(body)
        return self.collect(partial(self.stmt_exprstmt, ast.ExprStmt(body, span=body.span)))

    def stmt_exprstmt(self, stmt: ast.ExprStmt) -> None:
        expr, _ = strip_propagate(stmt.expr)
        if isinstance(expr, ast.Match):
            self.match_statement(expr)
            return
        if (dynamic := self.analysis.dynamic_sql.get(id(expr))) is not None:
            self.emit(dynamic_statement(dynamic, []))
            return
        if (chain := sql_chain(expr)) is not None:
            if any(call.name == "returning" for call in chain[1]):
                # RETURNING needs its INTO, and the no-row check, even when the value is unused
                self.prelude_value(stmt.expr)
                return
            self.emit(self.sql_statement(chain[0]))
            return
        if isinstance(expr, ast.MethodCall) and expr.name == "append":
            # `xs.append(x)`: the index after the last. A list pellc filled itself has the
            # indexes 1 .. COUNT; a caller's may be sparse or start anywhere, and COUNT + 1
            # could be an index it holds: after LAST, which is NULL for an empty list.
            target = self.lower(expr.target)
            after = (
                f"{target}.COUNT + 1"
                if self.is_dense(expr.target)
                else f"NVL({target}.LAST, 0) + 1"
            )
            value = expr.args[0]
            element = self.type_of(value)
            filled = unwrap_value(value)
            if isinstance(filled, ast.RecordLit) or id(filled) in self.analysis.captures:
                # field by field into a temporary: each `COUNT + 1` would be another element
                temporary = self.temp(element)
                self.store(temporary, value, element)
                self.emit(plsql.Assign(f"{target}({after})", temporary))
                return
            self.store(f"{target}({after})", value, element)
            return
        value_type = self.type_of(expr)
        if isinstance(expr, ast.Call | ast.MethodCall) and not isinstance(
            value_type, t.UnitType | t.UnknownType | t.NeverType | t.NullType
        ):
            # a function called for its effects: PL/SQL calls a function only in an
            # expression (a statement `f;` is PLS-00221), so its value goes to a temporary
            holder = self.temp(value_type)
            self.emit(plsql.Assign(holder, self.lower(expr)))
            return
        self.emit(plsql.Exec(self.lower(expr)))

    def stmt_if(self, stmt: ast.If) -> None:
        self.if_chain(stmt, self.condition(stmt.condition))

    def if_chain(self, stmt: ast.If, condition: plsql.Opaque) -> None:
        """IF / ELSIF / ELSE; an ELSIF condition whose lowering needs statements first becomes
        ELSE, those statements, and an IF."""
        branches = [plsql.Branch(condition, self.nested(stmt.then))]
        otherwise = stmt.otherwise
        while isinstance(otherwise, ast.If):
            prelude, condition = self.condition_with_prelude(otherwise.condition)
            if prelude:
                inner = self.collect(partial(self.if_chain, otherwise, condition))
                self.emit(plsql.If(branches, prelude + inner))
                return
            branches.append(plsql.Branch(condition, self.nested(otherwise.then)))
            otherwise = otherwise.otherwise
        rest = self.nested(otherwise) if otherwise is not None else None
        self.emit(plsql.If(branches, rest))

    def stmt_while(self, stmt: ast.While) -> None:
        prelude, condition = self.condition_with_prelude(stmt.condition)
        if not prelude:
            body = self.loop_body(stmt.body)
            self.emit(plsql.Loop(f"WHILE {condition.sql}", body, condition.calls))
            return
        # The condition needs statements of its own: evaluate it at the top of each pass.
        check = self.at(plsql.ExitWhen(condition))
        self.emit(plsql.Loop("", [*prelude, check, *self.loop_body(stmt.body)]))

    def stmt_for(self, stmt: ast.For) -> None:
        if stmt.bulk:
            # FORALL: one statement, bound to every element; record fields of the collection
            # may be bound since 11g (PL/SQL Language Reference, FORALL statement). A list
            # pellc filled itself is 1 .. COUNT; a caller's, sparse or not, is INDICES OF it:
            # "the values of index correspond to the subscripts of the elements of the
            # collection" (FORALL Statement, INDICES OF; 1 .. COUNT would raise ORA-22160 at a
            # missing index: "If any collection lacks a referenced element, PL/SQL raises an
            # exception").
            assert isinstance(stmt.source, ast.Name) and isinstance(stmt.body.stmts[0], ast.ExprStmt)
            chain = sql_chain(stmt.body.stmts[0].expr)
            assert chain is not None
            statement = self.at(self.sql_statement(chain[0]))
            items = self.lower(stmt.source)
            bounds = f"1 .. {items}.COUNT" if self.is_dense(stmt.source) else f"INDICES OF {items}"
            dml = "\n".join("  " + line for line in statement.text.split("\n"))
            statement.text = f"FORALL {naming.BULK_INDEX} IN {bounds}\n{dml}"
            self.emit(statement)
            if self.analysis.bulk_counts:
                self.copy_bulk_counts(items, self.is_dense(stmt.source))
            return
        variable = self.analysis.bindings[id(stmt)].plsql
        source = stmt.source
        if isinstance(source, ast.Range):
            start = self.lower(source.start)
            end = self.lower_with_precedence(source.end)
            if not source.inclusive:
                end_expr = source.end
                if (
                    isinstance(end_expr, ast.NumberLit)
                    and "." not in end_expr.text
                    and len(end_expr.text) <= 18
                ):
                    end = (str(int(end_expr.text) - 1), ATOM)
                else:
                    end = (f"{wrap(end, ADDITIVE)} - 1", ADDITIVE)
            calls = self.take_calls()
            head = f"FOR {variable} IN {start} .. {end[0]}"
            self.emit(plsql.Loop(head, self.loop_body(stmt.body), calls))
        elif isinstance(source, ast.MethodCall) and source.name == "indices":
            if not self.is_dense(source.target):
                # the checker keeps the variable's name for the fn: declared here, once
                if f"{variable} PLS_INTEGER;" not in self.temp_declarations:
                    self.temp_declarations.append(f"{variable} PLS_INTEGER;")
                items = self.loop_list(source.target, stmt.body)
                self.walk_indexes(variable, items, [], stmt.body)
                return
            items = wrap(self.lower_with_precedence(source.target), ATOM)
            calls = self.take_calls()
            head = f"FOR {variable} IN 1 .. {items}.COUNT"
            self.emit(plsql.Loop(head, self.loop_body(stmt.body), calls))
        elif isinstance(cursor_type := self.type_of(source), t.CursorType):
            symbol = self.analysis.names.get(id(source))
            # DBMS_SQL.TO_CURSOR_NUMBER takes its ref cursor IN OUT, which a parameter passed
            # IN is not: a cursor<dyn> parameter is read through a copy of the cursor variable
            in_param = symbol is not None and symbol.kind == "param"
            copied = cursor_type.element == t.DYN_ROW and in_param
            if isinstance(source, ast.Name) and not copied:
                cursor = self.lower(source)
            else:  # a call that returns a cursor: held while the loop reads it
                cursor = self.held(cursor_type)
                self.store(cursor, source, cursor_type)
            if cursor_type.element == t.DYN_ROW:
                self.dyn_cursor_loop(variable, cursor, stmt.body)
            else:
                self.cursor_loop(variable, cursor, cursor_type.element, stmt.body)
        elif (chain := sql_chain(source)) is None or chain[1]:
            self.list_loop(variable, source, stmt.body)
        else:
            query = self.at(self.sql_statement(chain[0]))
            multiline = "\n" in chain[0].text.strip()
            self.emit(plsql.CursorLoop(variable, query, self.loop_body(stmt.body), multiline))

    def copy_bulk_counts(self, items: str, dense: bool) -> None:
        """Right after a FORALL, its counts into the fn's own variables, which `bulk.total()`
        and `bulk.rowcount(i)` read: SQL%ROWCOUNT is the total of all its statements, and
        SQL%BULK_ROWCOUNT "is like an associative array whose ith element is the number of
        rows affected by the ith DML statement in the most recently completed FORALL
        statement" (PL/SQL Language Reference, "Getting Number of Rows Affected by FORALL
        Statement"), with the FORALL's own subscripts (a range of 1 .. COUNT; INDICES OF: the
        list's subscripts, FIRST to NEXT). Both describe the most recent SQL statement
        (SQL%attribute, "Implicit Cursor Attributes"): copied before any other runs, so a
        call or statement between the `forall` and `bulk` (a logging call) changes neither."""
        rows = naming.BULK_ROWS
        self.emit(plsql.Assign(naming.BULK_TOTAL, "SQL%ROWCOUNT"))
        self.emit(plsql.Exec(f"{rows}.DELETE"))
        if dense:
            index = naming.unique(naming.INDEX_VARIABLE, self.taken)
            copy = plsql.Assign(f"{rows}({index})", f"SQL%BULK_ROWCOUNT({index})")
            self.emit(plsql.Loop(f"FOR {index} IN 1 .. {items}.COUNT", [copy]))
            self.taken.discard(index)
            return
        index = self.declared_index(naming.INDEX_VARIABLE)
        copy = plsql.Assign(f"{rows}({index})", f"SQL%BULK_ROWCOUNT({index})")
        self.emit(plsql.Assign(index, f"{items}.FIRST"))
        advance = plsql.Assign(index, f"{items}.NEXT({index})")
        self.emit(plsql.Loop(f"WHILE {index} IS NOT NULL", [copy, advance]))

    def list_loop(self, variable: str, source: ast.Expr, body: ast.Block) -> None:
        """`for x in xs`: `x` set from each index in turn. A list pellc filled itself is
        walked 1 .. COUNT; any other (`pell.codegen.lists`) by FIRST and NEXT."""
        items = self.loop_list(source, body)
        if not self.is_dense(source):
            index = self.declared_index(naming.INDEX_VARIABLE)
            element = self.at(plsql.Assign(variable, f"{items}({index})"))
            self.walk_indexes(index, items, [element], body)
            return
        index = naming.unique(naming.INDEX_VARIABLE, self.taken)
        element = self.at(plsql.Assign(variable, f"{items}({index})"))
        statements = [element, *self.loop_body(body)]
        self.taken.discard(index)
        self.emit(plsql.Loop(f"FOR {index} IN 1 .. {items}.COUNT", statements))

    def loop_list(self, source: ast.Expr, body: ast.Block) -> str:
        """The list a loop runs over: a variable as it is, any other value stored first in a
        variable of its own (read on every pass, and its value computed once). So is a
        variable the body gives a new value: each pass reads its element from the loop's
        list, which must stay the list the loop began with, as the array PostgreSQL's FOREACH
        walks does. The assignment copies "the value of another existing collection
        variable" (PL/SQL Language Reference, Assigning Values to Collection Variables)."""
        if isinstance(source, ast.Name) and self.lower(source) not in written_in(
            self.checked, body, self.analysis
        ):
            return self.lower(source)
        items = self.held(self.type_of(source))
        self.store(items, source, self.type_of(source))
        return items

    def walk_indexes(
        self, index: str, items: str, first: list[plsql.Stmt], body: ast.Block
    ) -> None:
        """A loop over the indexes a caller's list has when the loop begins, sparse or from
        any first one: FIRST, then NEXT, up to the LAST of then (what the body appends is not
        visited, as with 1 .. COUNT, whose bounds are computed once). FIRST and LAST are NULL
        for an empty list, NEXT is NULL after the last index (PL/SQL Language Reference,
        Collection Methods, "FIRST and LAST", "PRIOR and NEXT"): the loop's test is then not
        TRUE. `first` runs at the top of each pass; a `continue` takes the NEXT index first."""
        last = self.declared_index(naming.LAST_INDEX_VARIABLE)
        self.emit(plsql.Assign(index, f"{items}.FIRST"))
        self.emit(plsql.Assign(last, f"{items}.LAST"))
        advance = plsql.Assign(index, f"{items}.NEXT({index})")
        self.continue_advances[self.loop_depth + 1] = advance
        statements = [*first, *self.loop_body(body)]
        del self.continue_advances[self.loop_depth + 1]
        if falls_through(body.stmts):
            statements.append(self.at(replace(advance)))
        self.emit(plsql.Loop(f"WHILE {index} <= {last}", statements))

    def cursor_loop(self, variable: str, cursor: str, row_type: t.Type, body: ast.Block) -> None:
        """`for r in rows` over a `cursor<T>` parameter: FETCH a batch of rows (BULK COLLECT
        ... LIMIT), `r` set from each, until a FETCH brings none; then CLOSE (a `return`
        inside closes it first). A FETCH of one row per pass would switch from PL/SQL to SQL
        for every row; FETCH_BATCH_SIZE is the batch of a cursor FOR loop ("The implicit
        cursor for loop implicitly array fetches 100 at a time", AskTom, "Cursor FOR loops
        optimization in 10g"). The loop ends on an empty batch, not on %NOTFOUND, which is
        TRUE after the FETCH that brings the last, partial batch (PL/SQL User's Guide and
        Reference 10.2, Example 11-10: `EXIT WHEN names.COUNT = 0`). `break` leaves the FETCH
        loop by its label; `continue` goes on with the next row of the batch. An exception,
        NO_DATA_NEEDED included, closes it in the fn's handler (`close_if_open`): a cursor a
        PL/SQL caller opened is not closed with the SQL statement, as one that CURSOR(...)
        passes is (SQL Language Reference, CURSOR Expressions: a nested cursor is closed when
        its parent is)."""
        if cursor not in self.fetched_cursors:
            self.fetched_cursors.append(cursor)
        batch = naming.unique(naming.FETCH_BATCH_VARIABLE, self.taken)
        self.temp_declarations.append(f"{batch} {plsql_type(t.ListType(row_type), 'local')};")
        row = naming.unique(naming.INDEX_VARIABLE, self.taken)
        label = naming.unique(naming.FETCH_LOOP_LABEL, self.taken)
        fetch: list[plsql.Stmt] = [
            self.at(
                plsql.Exec(
                    f"FETCH {cursor} BULK COLLECT INTO {batch} LIMIT {naming.FETCH_BATCH_SIZE}"
                )
            ),
            self.at(plsql.ExitWhen(plsql.Opaque(f"{batch}.COUNT = 0"), holds=True)),
        ]
        close = plsql.Exec(f"CLOSE {cursor}")
        # at this loop's depth: a `break` or `continue` inside (one deeper) does not run it;
        # a cursor of a `let` has its hook already
        own = cursor not in self.cursor_hooks
        if own:
            self.exit_hooks.append(((close,), self.loop_depth))
        self.break_labels[self.loop_depth + 1] = label
        element = self.at(plsql.Assign(variable, f"{batch}({row})"))
        statements = [element, *self.loop_body(body)]
        del self.break_labels[self.loop_depth + 1]
        if own:
            self.exit_hooks.pop()
        self.taken.discard(row)
        rows = self.at(plsql.Loop(f"FOR {row} IN 1 .. {batch}.COUNT", statements))
        self.emit(plsql.Loop("", [*fetch, rows], label=label))
        self.emit(self.at(replace(close)))

    def dyn_cursor_loop(self, variable: str, cursor: str, body: ast.Block) -> None:
        """`for row in c` over a `cursor<dyn>`: each row a json object keyed by column name,
        read through DBMS_SQL (templates/json_functions.sql.j2: pell_dyn_open makes the ref
        cursor a DBMS_SQL cursor number and defines its columns, pell_dyn_row fetches the next
        row as JSON, NULL after the last). The number is closed with DBMS_SQL.CLOSE_CURSOR
        after the loop, before a `break` or `return` leaves it, and in the fn's handler, where
        DBMS_SQL.IS_OPEN is FALSE for a number never opened, NULL, or one CLOSE_CURSOR set to
        NULL (PL/SQL Packages and Types Reference, DBMS_SQL: IS_OPEN Function, CLOSE_CURSOR
        Procedure). From TO_CURSOR_NUMBER on, the ref cursor is DBMS_SQL's: the fn's
        handler does not CLOSE it as it does a cursor a `cursor<R>` loop reads."""
        self.helpers.update(json_lowering.DYN_ROW_HELPERS)
        number = naming.unique(naming.DYN_CURSOR_VARIABLE, self.taken)
        columns = naming.unique(naming.DYN_COLUMNS_VARIABLE, self.taken)
        self.temp_declarations.append(f"{number} INTEGER;")
        self.temp_declarations.append(f"{columns} DBMS_SQL.DESC_TAB2;")
        self.dyn_cursors.append(number)
        if self.fn.retry is not None:
            # an attempt an exception ended left its cursor open (the fn's handler runs only
            # when no attempt is left): closed before the next attempt opens another
            self.emit(self.close_dyn_if_open(number))
        opened = f"{json_lowering.DYN_OPEN_HELPER}({cursor}, {columns})"
        self.emit(self.at(plsql.Assign(number, opened)))
        close = plsql.Exec(f"DBMS_SQL.CLOSE_CURSOR({number})")
        # at this loop's depth: a `break` or `continue` inside (one deeper) does not run it
        self.exit_hooks.append(((close,), self.loop_depth))
        row = f"{json_lowering.DYN_ROW_HELPER}({number}, {columns})"
        fetch: list[plsql.Stmt] = [
            self.at(plsql.Assign(variable, row)),
            self.at(plsql.ExitWhen(plsql.Opaque(f"{variable} IS NULL"), holds=True)),
        ]
        statements = [*fetch, *self.loop_body(body)]
        self.exit_hooks.pop()
        self.emit(self.at(plsql.Loop("", statements)))
        self.emit(self.at(replace(close)))

    def loop_exit_hooks(self) -> list[tuple[tuple[plsql.Stmt, ...], int]]:
        """Hooks of constructs inside the innermost loop: a break or continue leaves them."""
        return [hook for hook in self.exit_hooks if hook[1] >= self.loop_depth]

    def stmt_break(self, stmt: ast.Break) -> None:
        self.run_exit_hooks(self.loop_exit_hooks())
        self.emit(plsql.Exit(self.break_labels.get(self.loop_depth, "")))

    def stmt_continue(self, stmt: ast.Continue) -> None:
        self.run_exit_hooks(self.loop_exit_hooks())
        advance = self.continue_advances.get(self.loop_depth)
        if advance is not None:
            self.emit(replace(advance))
        self.emit(plsql.Continue())

    def stmt_return(self, stmt: ast.Return) -> None:
        value = unwrap_value(stmt.value) if stmt.value is not None else None
        if isinstance(value, ast.Wrap) and value.kind == "Err":
            self.emit(self.raise_statement(value))
            return
        if value is None or isinstance(value, ast.UnitLit) or not self.fn.is_function:
            self.run_exit_hooks([*self.exit_hooks, *self.cursor_hooks.values()])
            self.emit(plsql.Return())
            return
        opened = id(value) in self.analysis.dynamic_sql or id(value) in self.analysis.pivots
        returned = self.lower(value) if isinstance(value, ast.Name) else None
        # a cursor handed to the caller stays open: the hooks close the fn's other cursors
        # (first: run last-added first, before a COMMIT or the finally)
        closes = [hook for name, hook in self.cursor_hooks.items() if name != returned]
        hooks = [*self.exit_hooks, *closes]
        if opened and not hooks:
            cursor = self.temp(self.fn.returns)
            self.store(cursor, value, self.fn.returns)
            self.emit(plsql.Return(cursor))
            return
        if not hooks:
            self.emit(plsql.Return(self.lower(value)))
            return
        if returned is not None and isinstance(self.fn.returns, t.CursorType):
            self.run_exit_hooks(hooks)
            self.emit(plsql.Return(returned))
            return
        # The value is computed before the COMMIT or cleanup that must precede RETURN.
        self.needs_result = True
        self.store(naming.RESULT_VARIABLE, value, self.fn.returns)
        self.run_exit_hooks(hooks)
        self.emit(plsql.Return(naming.RESULT_VARIABLE))

    def raise_statement(self, err: ast.Wrap) -> plsql.RaiseError:
        """`Err(E { f: v })` -> RAISE_APPLICATION_ERROR; the fields in their declared order."""
        value = err.value
        if isinstance(value, ast.RecordLit):
            given = {init.name: init.value for init in value.fields}
            name = value.type_name
        else:
            assert isinstance(value, ast.Name)
            given, name = {}, "::".join(value.path)
        values = tuple(
            (field, self.lower(given[field]) if field in given else None)
            for field in self.checked.error_info(name)[2]
        )
        return self.raise_error(name, values)

    def stmt_yield(self, stmt: ast.Yield) -> None:
        """PIPE ROW: a record as its object type's constructor, field by field."""
        returns = self.fn.returns
        assert isinstance(returns, t.ListType)
        element = returns.element
        value = unwrap_value(stmt.value)
        if not isinstance(element, t.RecordType):
            self.emit(plsql.PipeRow(self.sql_column(self.lower(value), element)))
            return
        row_type = naming.row_type_names(self.checked.module.path, element.name)[0]
        fields = self.checked.record_info(element).fields
        if isinstance(value, ast.RecordLit):
            given = {init.name: init.value for init in value.fields}
            values = [self.lower(given[field]) for field in fields]
        else:
            record = self.lower(value)
            values = [f"{record}.{naming.field_name(field)}" for field in fields]
        columns = [self.sql_column(v, type_) for v, type_ in zip(values, fields.values(), strict=True)]
        self.emit(plsql.PipeRow(f"{row_type}({', '.join(columns)})"))

    def sql_column(self, value: str, type_: t.Type) -> str:
        """A piped value as its SQL attribute holds it: below 23ai a `bool`'s NUMBER(1), 1 for
        TRUE and 0 for FALSE, NULL for NULL only (pell.codegen.sql_column_type). A simple CASE
        reads the value once: its selector is "evaluated once" (PL/SQL Language Reference,
        CASE Statement, and Simple CASE Expression)."""
        if type_ == t.BOOL and self.target != "23ai":
            selector = value if re.fullmatch(r"[\w.]+", value) else f"({value})"
            return f"CASE {selector} WHEN TRUE THEN 1 WHEN FALSE THEN 0 END"
        return value

    def stmt_transaction(self, stmt: ast.Transaction) -> None:
        """SAVEPOINT, body, COMMIT; on an error ROLLBACK TO the savepoint and re-raise.

        The savepoint's name is the block's own (`naming.transaction_savepoint`): a shared
        name would be moved by any other block of that name the body reaches (SQL Language
        Reference, SAVEPOINT: "the earlier savepoint is erased").

        COMMIT erases every savepoint (docs/verify.md, source [5]): an error after it (in the
        cleanup an early `return` runs inside the block) or of COMMIT itself (ORA-02091, which
        rolls the transaction back) has no savepoint to return to, and ROLLBACK TO would raise
        ORA-01086 in its place. A flag set just before each COMMIT says so.
        """
        self.savepoints += 1
        savepoint = naming.transaction_savepoint(
            self.fn.module_path,
            self.fn.decl.name,
            self.savepoints,
            naming.MAX_IDENTIFIER_BYTES[self.target],
        )
        committed = naming.transaction_committed(self.savepoints)
        self.temp_declarations.append(f"{committed} BOOLEAN;")
        self.emit(plsql.SetFlag(committed, False))
        self.emit(plsql.Savepoint(savepoint))
        self.exit_hooks.append(((plsql.SetFlag(committed), plsql.Commit()), self.loop_depth))
        body = self.nested(stmt.body)
        self.exit_hooks.pop()
        if falls_through(stmt.body.stmts):
            body += [self.at(plsql.SetFlag(committed)), self.at(plsql.Commit())]
        not_committed = plsql.Branch(
            plsql.FlagSet(committed, negated=True), [self.at(plsql.RollbackTo(savepoint))]
        )  # located, so that the verifier's ORA-01086 finding points at the block
        undo: list[plsql.Stmt] = [
            self.at(plsql.If([not_committed], one_line=True)),
            self.at(plsql.Raise()),
        ]
        self.emit(plsql.Block(body, [plsql.Handler([plsql.OTHERS], undo)]))

    # -- embedded SQL

    def sql_text(
        self,
        block: ast.SqlBlock,
        into: list[str] | None = None,
        bulk: bool = False,
        suffix: str = "",
    ) -> str:
        """The SQL with binds resolved, `[BULK COLLECT] INTO ...` after the select list if asked,
        `suffix` at the end; continuation lines indented relative to the first."""
        targets = None
        if into is not None:
            targets = (" BULK COLLECT INTO " if bulk else " INTO ") + ", ".join(into)
        return spliced_sql(block, self.analysis.binds[id(block)], targets, suffix)

    def sql_statement(
        self,
        block: ast.SqlBlock,
        into: list[str] | None = None,
        bulk: bool = False,
        suffix: str = "",
        returning: list[str] | None = None,
    ) -> plsql.Sql:
        if returning is not None:
            suffix = " INTO " + ", ".join(returning)
        text = self.sql_text(block, into, bulk, suffix)
        tokens = sqltext.analyse(block.text).tokens  # cached; comments are not tokens
        words = tuple(token.text.lower() for token in tokens)
        return plsql.Sql(
            text,
            verb=words[0] if words else "",
            into=tuple(into or returning or ()),
            binds=tuple(replacement for _, replacement in self.analysis.binds[id(block)]),
            summary=" ".join(token.text for token in tokens[:3]),
            words=words,
            ends_transaction=ends_transaction(block),
        )


def dynamic_statement(dynamic: DynamicSql, into: list[str]) -> plsql.Sql:
    """`exec_dyn(...)`: EXECUTE IMMEDIATE of its text INTO `into`, or, for a query that opens
    a cursor, OPEN `into[0]` FOR it; USING its binds (by position: pell.checker.dynamic_sql)."""
    text = dynamic_text(dynamic.pieces)
    if dynamic.opens:
        text = f"OPEN {into[0]} FOR {text}"
    else:
        text = "EXECUTE IMMEDIATE " + text
        if into:
            text += " INTO " + ", ".join(into)
    if dynamic.binds:
        text += " USING " + ", ".join(dynamic.binds)
    readable, names = dynamic.readable
    words: tuple[str, ...] = ()
    if readable is not None:
        try:
            words = tuple(token.text.lower() for token in sqltext.tokenize(readable))
        except sqltext.SqlTextError:
            words = ()
    return plsql.Sql(
        text,
        verb="open" if dynamic.opens else words[0] if words and not names else "execute",
        into=() if dynamic.opens else tuple(into),
        binds=dynamic.binds,
        summary=f"{EXEC_DYN} " + " ".join(words[:3]) if words else EXEC_DYN,
        words=() if names else words,
        ends_transaction=exec_dyn_effects(readable, names)[0],
    )


def enquoted_literal(value: str) -> str:
    """A text value as a SQL string literal that holds it exactly: its `'` doubled and the
    quotes added here, then checked by DBMS_ASSERT.ENQUOTE_LITERAL, which verifies "that all
    single quotes except leading and trailing characters are paired" and adds no quotes to a
    value already quoted (PL/SQL Packages and Types Reference, DBMS_ASSERT, ENQUOTE_LITERAL
    Function, Usage Notes). Given the bare value, it would keep a value that starts and ends
    with `'` as the literal's own quotes, and raise on `O'Brien`."""
    quote = quote_text("'")
    doubled = quote_text("''")
    return (
        f"DBMS_ASSERT.ENQUOTE_LITERAL({quote} || REPLACE({value}, {quote}, {doubled}) || {quote})"
    )


def dynamic_text(pieces: tuple[str | Splice, ...]) -> str:
    """The PL/SQL expression of a dynamic SQL text: its literal pieces quoted, each spliced
    name checked by DBMS_ASSERT.QUALIFIED_SQL_NAME (ORA-44004 unless it is a qualified SQL
    name), each spliced literal made one by DBMS_ASSERT.ENQUOTE_LITERAL (a value error unless
    every `'` in it is doubled), a statement explained as it is (PL/SQL Packages and Types
    Reference, DBMS_ASSERT: pell.checker.dynamic_sql)."""
    parts = []
    for piece in pieces:
        if isinstance(piece, str):
            if piece:
                parts.append(quote_text(piece))
        elif piece.kind == "name":
            parts.append(f"DBMS_ASSERT.QUALIFIED_SQL_NAME({piece.plsql})")
        elif piece.kind == "literal":
            parts.append(enquoted_literal(piece.plsql))
        else:
            parts.append(piece.plsql)
    return " || ".join(parts) or "''"


def spliced_sql(
    block: ast.SqlBlock,
    binds: list[tuple[sqltext.Bind, str]],
    into: str | None = None,
    suffix: str = "",
) -> str:
    """The text of `block` with each bind replaced, `into` (` INTO a, b`) after the select
    list, `suffix` at the end; continuation lines indented relative to the first. Both
    targets write embedded SQL so."""
    text = block.text
    edits: list[tuple[int, int, str]] = [(b.start, b.end, replacement) for b, replacement in binds]
    if into is not None:
        position = sqltext.analyse(text).select_items[-1][1]
        edits.append((position, position, into))
    # One pass over the edits in order (a splice per edit was quadratic in the binds)
    pieces: list[str] = []
    position = 0
    for start, end, replacement in sorted(edits):
        pieces += [text[position:start], replacement]
        position = end
    text = "".join(pieces) + text[position:]
    text = sqltext.reindent(text, "", block.first_column).rstrip(";").rstrip()
    if sqltext.ends_in_line_comment(text):
        # Whatever the lowering writes after the SQL must not land inside that comment.
        text += "\n"
        suffix = suffix.lstrip()
    return text + suffix


# One entry per class of ast.Stmt (a test checks that it covers the union).
STATEMENT_SQL: dict[type[ast.Node], Callable[[FnLowerer, Any], None]] = {
    ast.Let: FnLowerer.stmt_let,
    ast.Assign: FnLowerer.stmt_assign,
    ast.ExprStmt: FnLowerer.stmt_exprstmt,
    ast.If: FnLowerer.stmt_if,
    ast.While: FnLowerer.stmt_while,
    ast.For: FnLowerer.stmt_for,
    ast.Break: FnLowerer.stmt_break,
    ast.Continue: FnLowerer.stmt_continue,
    ast.Return: FnLowerer.stmt_return,
    ast.Transaction: FnLowerer.stmt_transaction,
    ast.Yield: FnLowerer.stmt_yield,
}


def json_value(value: str, type_: t.Type, helpers: set[str]) -> str:
    """A PL/SQL expression giving the JSON text of `value` (a lowered expression of `type_`),
    in the form pell.codegen.text_forms gives it (JSON_FORMS), the same as on PostgreSQL;
    the package functions that form calls go into `helpers`."""
    helper = f"{naming.RUNTIME_PACKAGE}.json_"
    family = t.family(type_)
    form = json_form(type_)
    if form is not None:
        value = oracle_text(form, (value, ATOM))
        if form.oracle_function:
            helpers.add(form.oracle_function)
    if family == "numeric":
        return f"{helper}number({value})"
    if type_ == t.BOOL:
        return f"{helper}bool({value})"
    if type_ == t.BIGTEXT:
        return f"{helper}text(DBMS_LOB.SUBSTR({value}, 2000, 1))"
    if form is not None or family == "text":
        return f"{helper}text({value})"
    if type_ == t.BYTES:
        return f"{helper}text(RAWTOHEX({value}))"  # hex, as interpolation writes it
    return f"{helper}text(TO_CHAR({value}))"
