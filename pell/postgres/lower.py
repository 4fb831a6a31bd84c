"""One fn -> a PL/pgSQL statement tree (`pell.plsql`, printed by its postgres printer
between `$pell$` quotes; what `pell.verify` runs under PostgreSQL's rules), from the checker's
analysis. PostgreSQL's rules differ from Oracle's where it matters here (PostgreSQL 15 docs,
chapter 43 "PL/pgSQL"): text '' is not NULL and `'a' || NULL` is NULL (concat() ignores
NULL, as Oracle's || does); SELECT INTO without STRICT takes the first row or NULLs; a
BEGIN ... EXCEPTION block is a subtransaction, rolled back when its handler runs.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pell import ast, naming, plsql, sqltext
from pell.checker import builtins as checker_builtins
from pell.checker import types as t
from pell.checker.bodies import falls_through, strip_propagate
from pell.checker.dynamic_sql import DynamicSql, Splice
from pell.checker.methods import PAD_METHODS, nonempty_literal
from pell.checker.model import CheckedModule, FnAnalysis, FnInfo
from pell.checker.retry_facts import exec_dyn_effects
from pell.checker.sql_typing import sql_chain
from pell.codegen.expressions import BINARY_OPERATORS, int_product, int_quotient, quote_text
from pell.codegen.lists import unwrap_value
from pell.codegen.subprograms import spliced_sql
from pell.codegen.text_forms import (
    NUMBER_FROM_TEXT,
    json_form,
    postgres_list_text,
    postgres_text,
    text_form,
)
from pell.postgres import builtins, jq_lowering, json_lowering
from pell.postgres.names import Commits, callee_of, fn_name, is_procedure, schema_of, sql_type
from pell.postgres.retry import RESULT_PARAMETER, lower_retry
from pell.precedence import (
    ADDITIVE,
    AND,
    ATOM,
    COMPARISON,
    MULTIPLICATIVE,
    NOT,
    UNARY,
    Lowered,
    wrap,
)

INDENT = "  "
StmtT = TypeVar("StmtT", bound=plsql.Stmt)
# The Oracle packages' procedures (pell/stubs) with a faithful PostgreSQL statement; a call of
# any other is `unsupported` (docs/postgres.md, "Oracle packages"). The verifier knows each by
# the call Pell wrote (pell.verify.interpreter: DBMS_OUTPUT's is output no rollback takes back,
# a sleep changes nothing).
PACKAGE_STATEMENTS: dict[tuple[str, ...], str] = {
    # `print(x)` (ast_builder.PRINT_CALL): a NOTICE, PostgreSQL's message to the client
    ("dbms_output", "put_line"): "RAISE NOTICE '%', {}",
    # SLEEP "suspends the session for a specified duration", in seconds, "where the smallest
    # increment is a hundredth of a second" (Oracle TimesTen PL/SQL Packages Reference 22.1,
    # DBMS_LOCK, SLEEP Procedure; the Oracle target's retry sleeps by DBMS_SESSION.SLEEP or
    # DBMS_LOCK.SLEEP alike, pell/codegen/retry_loop.py), as pg_sleep makes the session sleep
    # for a number of seconds, fractions too (PostgreSQL 15 docs, 9.9.6 "Delaying Execution")
    ("dbms_lock", "sleep"): "PERFORM pg_sleep({})",
    ("dbms_session", "sleep"): "PERFORM pg_sleep({})",
}
NO_DATA_FOUND = plsql.ExceptionName("no_data_found", sqlstate="P0002")


class Unsupported(Exception):
    """A construct with no faithful PostgreSQL form (yet): a located error, no output."""

    def __init__(self, what: str, span: ast.Span) -> None:
        super().__init__(what)
        self.what = what
        self.span = span


class PgFnLowerer:
    def __init__(
        self,
        checked: CheckedModule,
        fn: FnInfo,
        analysis: FnAnalysis,
        schema: str,
        commits: Commits | None = None,
    ) -> None:
        self.checked = checked
        self.fn = fn
        # which fns end their transaction (a PROCEDURE, as each of their callers)
        self.commits = commits if commits is not None else Commits()
        self.procedure = is_procedure(fn, self.commits(fn, checked))
        self.analysis = analysis
        self.schema = schema
        self.out: list[plsql.Stmt] = []  # where `emit` appends: the statement list being built
        self.calls: list[tuple[str, ...]] = []  # Pell calls lowered since the last statement
        self.origin = fn.decl.name_span.start  # the statement being lowered
        self.declarations: list[str] = []
        self.taken = {s.plsql for s in analysis.locals} | set(naming.RESERVED_LOCALS)
        self.taken |= {naming.param_name(p.decl.name) for p in fn.params}
        self.temps = 0
        self.span = fn.decl.name_span  # of the statement being lowered, for errors
        # A transaction-scoped fn (a PROCEDURE): `return v` sets this OUT parameter and leaves
        # the loop of attempts by this label, so that the COMMIT after it runs.
        self.returns_into = ""
        self.return_exit = ""
        # The cursors of the loops around the statement being lowered: a `return` closes them
        self.open_cursors: list[str] = []
        # the module's helper functions the lowering calls (pell.postgres.json_lowering.HELPERS)
        self.helpers: set[str] = set()
        # the loops around the statement being lowered, and the loop depth at which each
        # `transaction { }` around it began: a `break` or `continue` of a loop outside the
        # block leaves the block, and commits first (as a `return` does)
        self.loop_depth = 0
        self.transactions: list[int] = []
        # the loops around the statement being lowered whose cursor a COMMIT would close (a
        # FETCH loop) or cannot keep (a cursor FOR loop over a query that changes data), each
        # as an error names it: a COMMIT inside is refused (`refuse_commit`)
        self.commit_closes: list[str] = []
        # the calls that are a whole statement, or the whole value of a `let` or an assignment
        # (by id): where a call of a fn that commits may give a value
        self.whole_calls: set[int] = set()

    # -- building the tree

    def emit(self, node: plsql.Stmt) -> None:
        """Append `node`, marked with the statement it comes from; the calls lowered since the
        last statement are its calls."""
        if self.calls and isinstance(
            node, plsql.Assign | plsql.Exec | plsql.Return | plsql.PipeRow | plsql.Loop
        ):
            node.calls = self.take_calls()
        node.origin = self.origin
        self.out.append(node)

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

    def condition(self, expr: ast.Expr) -> tuple[list[plsql.Stmt], plsql.Opaque]:
        """A condition, and the statements its lowering needs first (a query into a
        temporary)."""
        saved, self.out = self.out, []
        try:
            text = self.lower(expr)
            return self.out, plsql.Opaque(text, self.take_calls())
        finally:
            self.out = saved

    def sql(
        self, block: ast.SqlBlock, text: str, into: tuple[str, ...] = ()
    ) -> plsql.Sql:
        """Embedded SQL as printed, with what the verifier reads. Nothing here ends a
        transaction: DDL is transactional in PostgreSQL, and COMMIT is refused (`sql_text`)."""
        tokens = sqltext.analyse(block.text).tokens
        words = tuple(token.text.lower() for token in tokens)
        return plsql.Sql(
            text,
            verb=words[0] if words else "",
            into=into,
            binds=tuple(replacement for _, replacement in self.analysis.binds[id(block)]),
            summary=" ".join(token.text for token in tokens[:3]),
            words=words,
        )

    def unsupported(self, what: str, span: ast.Span | None = None) -> Unsupported:
        return Unsupported(what, span if span is not None else self.span)

    def type_of(self, expr: ast.Expr) -> t.Type:
        return self.analysis.types.get(id(expr), t.UNKNOWN)

    def sql_type(self, type_: t.Type, span: ast.Span | None = None) -> str:
        try:
            return sql_type(type_, self.checked)
        except ValueError:
            raise self.unsupported(f"a value of type `{type_}`", span) from None

    def temp(self, type_: t.Type) -> str:
        self.temps += 1
        name = naming.unique(f"l_pell_tmp{self.temps}", self.taken)
        self.declarations.append(f"{name} {self.sql_type(type_)};")
        return name

    # -- the whole function

    def lower_fn(self, marks: bool = False) -> tuple[str, plsql.Subprogram]:
        """The function's text between its dollar quotes, and its tree for the verifier;
        with `marks`, each statement's line holds its source marker (plsql.source_marker),
        for a source map."""
        decl = self.fn.decl
        names = {a.name for a in decl.annotations}
        for annotation in ("result_cache", "udf"):
            if annotation in names:
                raise self.unsupported(f"@{annotation}", decl.name_span)
        if self.procedure and self.fn.is_function:
            # a procedure's value is its OUT parameter: `return v` sets it
            self.returns_into = RESULT_PARAMETER
        for symbol in self.analysis.locals:
            initial = " := '{}'" if isinstance(symbol.type, t.ListType) else ""
            self.declarations.append(
                f"{symbol.plsql} {self.sql_type(symbol.type, symbol.span)}{initial};"
            )

        def body() -> None:
            if self.fn.retry is not None:
                lower_retry(self)
            elif decl.finally_body is not None:
                self.with_finally(decl.body, decl.finally_body)
            else:
                self.block(decl.body)
            if self.analysis.falls_through and self.fn.pipelined:
                self.emit(plsql.Return())

        statements = self.collect(body)
        printer = plsql.Printer("postgres", marks=marks)
        printer.statements(statements, 1)
        declare = ["DECLARE", *(INDENT + d for d in self.declarations)] if self.declarations else []
        text = "\n".join([*declare, "BEGIN", *printer.lines, "END;"])
        subprogram = plsql.Subprogram(
            self.checked.module.path,
            decl.name,
            f"{self.schema}.{fn_name(decl.name)}",
            "",
            [plsql.Variable(d) for d in self.declarations],
            statements,
            retry=self.fn.retry,
            # a DO block (a script) may end its transaction, as a procedure may (43.8)
            transaction_control=self.procedure or decl.name == ast.SCRIPT_FN,
            origin=decl.name_span.start,
        )
        return text, subprogram

    def with_finally(self, body: ast.Block, cleanup: ast.Block) -> None:
        """The body in a labelled block; the cleanup once after it, and once before an error
        goes on. A `return` stores its value and leaves the block by its label, so that the
        cleanup runs first. The handler makes the block a subtransaction: when an error ends
        the body, its changes are rolled back before the cleanup runs (on Oracle they stay
        until the caller's rollback); the error goes on either way."""
        label = "pell_body"
        self.return_exit = label
        if self.fn.is_function and not self.returns_into and not self.fn.pipelined:
            # (a set-returning function's rows are already out: it ends without a value)
            self.declarations.append(f"{naming.RESULT_VARIABLE} {self.sql_type(self.fn.returns)};")
            self.returns_into = naming.RESULT_VARIABLE
        statements = self.nested(body)
        on_error = [*self.nested(cleanup), self.at(plsql.Raise())]
        handlers = [plsql.Handler([plsql.OTHERS], on_error)]
        self.emit(plsql.Block(statements, handlers, label=label))
        self.block(cleanup)
        if self.returns_into == naming.RESULT_VARIABLE:
            self.emit(plsql.Return(naming.RESULT_VARIABLE))

    def at(self, node: StmtT) -> StmtT:
        """`node`, marked with the statement being lowered (for a list not built by emit)."""
        node.origin = self.origin
        return node

    # -- statements

    def block(self, block: ast.Block) -> None:
        if not block.stmts:
            self.emit(plsql.Null())
        for stmt in block.stmts:
            self.span = stmt.span
            self.origin = stmt.span.start
            STATEMENTS[type(stmt)](self, stmt)

    def nested(self, block: ast.Block) -> list[plsql.Stmt]:
        """The statements of `block`; the statement that holds it stays the one lowered."""
        origin = self.origin
        try:
            return self.collect(lambda: self.block(block))
        finally:
            self.origin = origin

    def stmt_let(self, stmt: ast.Let) -> None:
        symbol = self.analysis.bindings[id(stmt)]
        if stmt.value is None:
            empty = "'{}'" if isinstance(symbol.type, t.ListType) else "NULL"
            self.emit(plsql.Assign(symbol.plsql, empty))
        else:
            self.store(symbol.plsql, stmt.value, symbol.type)

    def dynamic_statement(
        self, dynamic: DynamicSql, call: ast.Call, into: str | None, cursor: str | None = None
    ) -> plsql.Sql:
        """`exec_dyn(...)`: EXECUTE of its text [INTO STRICT target] USING its binds
        (PL/pgSQL, "Executing Dynamic Commands"). A spliced name is checked by parse_ident,
        which raises unless the text is an identifier or a dotted chain of them with nothing
        after it (9.4 "String Functions", strict mode), then spliced as written, as Oracle's
        QUALIFIED_SQL_NAME passes it; a spliced literal is quote_nullable's literal of the value
        (NULL for None); each `:name` placeholder is `$1`, `$2`, ... in the order of the binds."""
        readable, _ = dynamic.readable
        words = sqltext.tokenize(readable) if readable is not None else ()
        first = words[0].text.lower() if words else ""
        if readable is None or first in ("begin", "declare", "call"):
            # a statement explained, or Oracle's PL/SQL block or CALL: no PostgreSQL text
            raise self.unsupported("this `exec_dyn` text (Oracle's PL/SQL)", call.callee.span)
        parts: list[str] = []
        numbered = 0
        for piece in dynamic.pieces:
            if isinstance(piece, str):
                text, numbered = _numbered_placeholders(piece, numbered)
                if text:
                    parts.append(quote_text(text))
            elif piece.kind == "name":
                parts.append(
                    f"CASE WHEN parse_ident({piece.plsql}) IS NOT NULL THEN {piece.plsql} END"
                )
            else:
                parts.append(f"quote_nullable({piece.plsql})")
        if numbered != len(dynamic.binds):
            # a placeholder in a comment or a quoted name: not the binds Oracle's reading found
            raise self.unsupported("this `exec_dyn` text's placeholders", call.callee.span)
        text = " || ".join(parts) or "''"
        # a cursor over it: OPEN FOR EXECUTE (PL/pgSQL, "Opening a Bound Cursor ... OPEN FOR
        # EXECUTE"), as Oracle's OPEN FOR text
        text = f"OPEN {cursor} FOR EXECUTE {text}" if cursor is not None else f"EXECUTE {text}"
        if into is not None:
            # STRICT: no row or several raise, as EXECUTE IMMEDIATE INTO does
            text += f" INTO STRICT {into}"
        if dynamic.binds:
            text += " USING " + ", ".join(dynamic.binds)
        names = any(isinstance(p, Splice) and p.kind == "name" for p in dynamic.pieces)
        return plsql.Sql(
            text,
            verb="open" if cursor is not None else "execute" if names else first,
            into=(into,) if into is not None else (),
            binds=dynamic.binds,
            summary="exec_dyn " + " ".join(w.text.lower() for w in words[:3]),
            words=() if names else tuple(w.text.lower() for w in words),
            ends_transaction=exec_dyn_effects(readable, names)[0],
        )

    def stmt_assign(self, stmt: ast.Assign) -> None:
        target = stmt.target
        type_ = self.type_of(target)
        if isinstance(target, ast.Name) and isinstance(type_, t.UnknownType):
            type_ = self.analysis.names[id(target)].type
        if isinstance(target, ast.FieldAccess) and isinstance(target.target, ast.FieldAccess):
            raise self.unsupported("assigning a field of a nested record", target.span)
        self.store(self.lower(target), stmt.value, type_)

    def store(self, target: str, value: ast.Expr, type_: t.Type) -> None:
        not_found = self.not_found_of(value)
        value = unwrap_value(value)
        json_call = self.analysis.json_calls.get(id(value))
        if json_call is not None and json_call.record is not None and isinstance(value, ast.Call):
            document = self.lower(value.args[0])
            if not isinstance(unwrap_value(value.args[0]), ast.Name):
                holder = self.temp(t.JSON)
                self.emit(plsql.Assign(holder, document))
                document = holder
            span = value.callee.span
            for field, field_value in json_lowering.into_assignments(
                self, document, target, json_call.record, span
            ):
                self.emit(plsql.Assign(field, field_value))
            return
        dynamic = self.analysis.dynamic_sql.get(id(value))
        if dynamic is not None and isinstance(value, ast.Call):
            if dynamic.opens:
                self.emit(self.dynamic_statement(dynamic, value, None, cursor=target))
            else:
                self.emit(self.dynamic_statement(dynamic, value, target))
            return
        if (chain := sql_chain(value)) is not None:
            self.store_query(target, chain[0], [c.name for c in chain[1]], type_, not_found)
            return
        if isinstance(value, ast.Call):
            self.whole_calls.add(id(value))
        self.emit(plsql.Assign(target, self.lower(value)))

    def store_query(
        self,
        target: str,
        block: ast.SqlBlock,
        names: list[str],
        type_: t.Type,
        not_found: tuple[str, tuple[tuple[str, ast.Expr | str | None], ...]] | None,
    ) -> None:
        terminator = names[-1]
        lock = " FOR UPDATE" if "for_update" in names else ""
        if lock and "nowait" in names:
            lock += " NOWAIT"
        if terminator == "rowcount":
            self.emit(self.sql(block, self.sql_text(block)))
            self.emit(plsql.Exec(f"GET DIAGNOSTICS {target} = ROW_COUNT"))
        elif "returning" in names:
            # STRICT: no row raises NO_DATA_FOUND (without it the target would be set to
            # nulls), several rows TOO_MANY_ROWS (PL/pgSQL, "Executing a Command with a
            # Single-Row Result"); with `?` no row is the fn's NotFound error, below
            text = self.sql_text(block, suffix=f" INTO STRICT {target}")
            self.not_found_block(self.sql(block, text, (target,)), not_found)
        elif terminator == "collect":
            query = self.sql_text(block, suffix=lock)
            element = type_.element if isinstance(type_, t.ListType) else t.UNKNOWN
            if isinstance(element, t.RecordType):
                row = f"ROW(pell_q.*)::{self.sql_type(element)}"
                query = f"SELECT {row} FROM ({_indent_more(query)}) pell_q"
            # the query is a site the verifier fails, then the assignment
            self.emit(self.sql(block, f"{target} := ARRAY({_indent_more(query)})", (target,)))
        elif terminator == "first":
            # INTO without STRICT: the first row, or NULL (every field NULL) when none. Under
            # SKIP LOCKED, LIMIT 1: "If a LIMIT is used, locking stops once enough rows have
            # been returned to satisfy the limit" (SELECT, The Locking Clause); PostgreSQL takes
            # it after FOR UPDATE too.
            if sqltext.analyse(block.text).skip_locked:
                lock = " LIMIT 1"
            text = self.sql_text(block, into=target, suffix=lock)
            self.emit(self.sql(block, text, (target,)))
        else:
            text = self.sql_text(block, into=target, strict=True, suffix=lock)
            self.not_found_block(self.sql(block, text, (target,)), not_found)

    def not_found_block(
        self,
        statement: plsql.Sql,
        not_found: tuple[str, tuple[tuple[str, ast.Expr | str | None], ...]] | None,
    ) -> None:
        """`statement`, whose NO_DATA_FOUND is the fn's NotFound error when `not_found` says
        so (`.one()?`); the block is a subtransaction of its own, which undoes the statement
        (a SELECT's nothing, a RETURNING's no row)."""
        if not_found is None:
            self.emit(statement)
            return
        raised = self.at(self.raise_error(*not_found))
        handler = plsql.Handler([NO_DATA_FOUND], [raised])
        self.emit(plsql.Block([self.at(statement)], [handler]))

    def not_found_of(
        self, value: ast.Expr
    ) -> tuple[str, tuple[tuple[str, ast.Expr | str | None], ...]] | None:
        while isinstance(value, ast.Wrap) and value.kind in ("Ok", "Some") and value.value:
            value = value.value
        found = self.analysis.not_found.get(id(value))
        if found is None:
            return None
        error, fields = found
        return error, tuple((name, plsql) for name, plsql in fields)

    def stmt_exprstmt(self, stmt: ast.ExprStmt) -> None:
        expr, _ = strip_propagate(stmt.expr)
        if isinstance(expr, ast.Match):
            self.match_statement(expr)
            return
        dynamic = self.analysis.dynamic_sql.get(id(expr))
        if dynamic is not None and isinstance(expr, ast.Call):
            self.emit(self.dynamic_statement(dynamic, expr, None))
            return
        if (chain := sql_chain(expr)) is not None:
            if any(call.name == "returning" for call in chain[1]):
                # RETURNING needs its INTO STRICT even when the value is unused
                type_ = self.type_of(stmt.expr)
                self.store(self.temp(type_), stmt.expr, type_)
                return
            self.emit(self.sql(chain[0], self.sql_text(chain[0])))
            return
        if isinstance(expr, ast.MethodCall) and expr.name == "append":
            target = self.lower(expr.target)
            self.emit(plsql.Assign(target, f"array_append({target}, {self.lower(expr.args[0])})"))
            return
        if isinstance(expr, ast.Call) and (form := self.package_statement(expr)) is not None:
            # the verifier knows the call by its package: output, or the session's own state
            self.calls.append(expr.callee.path)
            self.emit(plsql.Exec(form))
            return
        if isinstance(expr, ast.Wrap) and expr.kind == "Err":
            self.emit(self.raise_statement(expr))
            return
        if isinstance(expr, ast.Call) and self.calls_procedure(expr):
            self.whole_calls.add(id(expr))
            self.lower(expr)  # writes the CALL
            return
        self.emit(plsql.Exec(f"PERFORM {self.lower(expr)}"))

    def package_statement(self, expr: ast.Call) -> str | None:
        """A call of an Oracle package's procedure that has a PostgreSQL form of its own
        (PACKAGE_STATEMENTS), as that statement; None for any other call."""
        path = expr.callee.path
        foreign = self.checked.imports.find(path[0]) if len(path) == 2 else None
        if foreign is None or not foreign.is_stub:
            return None
        # the package as its stub names it, whatever alias the call writes
        form = PACKAGE_STATEMENTS.get(
            tuple(part.lower() for part in (*foreign.module.path, path[1]))
        )
        if form is None:
            return None
        # each of them takes one argument, given by position or by name
        arguments = [*expr.args, *(keyword.value for keyword in expr.keywords)]
        return form.format(self.lower(arguments[0]))

    def stmt_if(
        self,
        stmt: ast.If,
        lowered: tuple[list[plsql.Stmt], plsql.Opaque] | None = None,
    ) -> None:
        """IF/ELSIF/ELSE; from an ELSIF whose condition needs a query first, a nested IF in the
        ELSE, so that the query runs only when the branches before it were not taken."""
        prelude, condition = lowered if lowered is not None else self.condition(stmt.condition)
        self.out.extend(prelude)
        branches = [plsql.Branch(condition, self.nested(stmt.then))]
        otherwise = stmt.otherwise
        while isinstance(otherwise, ast.If):
            self.origin = otherwise.span.start
            prelude, condition = self.condition(otherwise.condition)
            if prelude:
                rest = self.collect(
                    functools.partial(self.stmt_if, otherwise, (prelude, condition))
                )
                self.origin = stmt.span.start
                self.emit(plsql.If(branches, rest))
                return
            branches.append(plsql.Branch(condition, self.nested(otherwise.then)))
            otherwise = otherwise.otherwise
        self.origin = stmt.span.start
        self.emit(plsql.If(branches, self.nested(otherwise) if otherwise is not None else None))

    def stmt_while(self, stmt: ast.While) -> None:
        prelude, condition = self.condition(stmt.condition)
        body = self.loop_body(stmt.body)
        if prelude:
            # a condition that needs a query first is tested at the top of each pass
            test = self.at(plsql.ExitWhen(condition))
            self.emit(plsql.Loop("", [*prelude, test, *body]))
            return
        self.emit(plsql.Loop(f"WHILE {condition.sql}", body, condition.calls))

    def stmt_for(self, stmt: ast.For) -> None:
        variable = self.analysis.bindings[id(stmt)]
        source = stmt.source
        if stmt.bulk:
            # FORALL's statement for each element: one by one here (same effect, no batching),
            # over the array's own subscripts; an element is `items[i]` (the checker binds
            # Oracle's `items(i)`)
            assert isinstance(source, ast.Name)
            items = self.lower(source)
            index = naming.unique("l_pell_bulk", self.taken)
            self.declarations.append(f"{index} integer;")
            chain = sql_chain(stmt.body.stmts[0].expr)  # type: ignore[union-attr]
            assert chain is not None
            element = f"{items}({naming.BULK_INDEX})"
            binds = [
                (bind, f"{items}[{index}]{replacement[len(element):]}")
                if replacement.startswith(element)
                else (bind, replacement)
                for bind, replacement in self.analysis.binds[id(chain[0])]
            ]
            statement = self.at(self.sql(chain[0], spliced_sql(chain[0], binds)))
            self.emit(plsql.Loop(f"FOR {index} IN {subscripts(items)}", [statement]))
            return
        if isinstance(source, ast.Range):
            end = self.lower_with_precedence(source.end)
            upper = end[0] if source.inclusive else f"{wrap(end, ADDITIVE)} - 1"
            head = f"FOR {variable.plsql} IN {self.lower(source.start)} .. {upper}"
        elif isinstance(source, ast.MethodCall) and source.name == "indices":
            items = self.lower(source.target)
            if not isinstance(source.target, ast.Name):
                # the bounds name the array twice: its value is computed once, here
                holder = self.temp(self.type_of(source.target))
                self.emit(plsql.Assign(holder, items))
                items = holder
            head = f"FOR {variable.plsql} IN {subscripts(items)}"
        elif (chain := sql_chain(source)) is not None and not chain[1]:
            # a cursor FOR loop needs its variable declared, as `record`
            self.declarations.append(f"{variable.plsql} record;")
            query = self.at(self.sql(chain[0], self.sql_text(chain[0])))
            changes_data = not read_only(query)
            if changes_data:
                self.commit_closes.append(
                    "a `for` loop over a query that changes data (PostgreSQL keeps a cursor "
                    "loop's cursor over a COMMIT only for a read-only query)"
                )
            body = self.loop_body(stmt.body)
            if changes_data:
                self.commit_closes.pop()
            self.emit(plsql.CursorLoop(variable.plsql, query, body))
            return
        elif isinstance(self.type_of(source), t.ListType):
            # FOREACH raises "FOREACH expression must not be null": a NULL array (a SQL
            # caller's) is empty, as for `.len()` and `.indices()`
            head = f"FOREACH {variable.plsql} IN ARRAY coalesce({self.lower(source)}, '{{}}')"
        elif isinstance(cursor_type := self.type_of(source), t.CursorType):
            # a refcursor the caller opened (or a call returned, kept in a temporary so that
            # the call runs once): FETCH until none is left, then CLOSE
            cursor = self.lower(source)
            if not isinstance(source, ast.Name):
                holder = self.temp(cursor_type)
                self.emit(plsql.Assign(holder, cursor))
                cursor = holder
            done = self.at(plsql.ExitWhen(plsql.Opaque("NOT FOUND"), holds=True))
            if cursor_type.element == t.DYN_ROW:
                # each row as a jsonb object keyed by its column names: to_jsonb of the row
                # ("Composites are converted to JSON objects", 9.16 JSON Creation Functions),
                # as Oracle's lowering builds one through DBMS_SQL
                row = naming.unique("l_pell_row", self.taken)
                self.declarations.append(f"{row} record;")
                first: list[plsql.Stmt] = [
                    self.at(plsql.Exec(f"FETCH {cursor} INTO {row}")),
                    done,
                    self.at(plsql.Assign(variable.plsql, f"to_jsonb({row})")),
                ]
            else:
                first = [self.at(plsql.Exec(f"FETCH {cursor} INTO {variable.plsql}")), done]
            self.open_cursors.append(cursor)
            self.commit_closes.append(
                f"a `for` loop over a `{cursor_type}` (a COMMIT closes the cursor: PostgreSQL "
                "keeps only a cursor FOR loop's cursor over a COMMIT)"
            )
            body = self.loop_body(stmt.body)
            self.commit_closes.pop()
            self.open_cursors.pop()
            self.emit(plsql.Loop("", [*first, *body]))
            self.emit(plsql.Exec(f"CLOSE {cursor}"))
            return
        else:
            raise self.unsupported("a `for` over this source", source.span)
        calls = self.take_calls()  # the head's
        self.emit(plsql.Loop(head, self.loop_body(stmt.body), calls))

    def loop_body(self, body: ast.Block) -> list[plsql.Stmt]:
        self.loop_depth += 1
        try:
            return self.nested(body)
        finally:
            self.loop_depth -= 1

    def stmt_break(self, stmt: ast.Break) -> None:
        self.commit_leaving(loop=True)
        self.emit(plsql.Exit())

    def stmt_continue(self, stmt: ast.Continue) -> None:
        self.commit_leaving(loop=True)
        self.emit(plsql.Continue())

    def commit_leaving(self, loop: bool) -> None:
        """Before a `return` (or a `break` or `continue` of a loop around the block) leaves a
        `transaction { }` block: its COMMIT, as when the body ends."""
        if self.transactions and (not loop or self.transactions[-1] == self.loop_depth):
            self.emit(plsql.Commit())

    def stmt_return(self, stmt: ast.Return) -> None:
        value = unwrap_value(stmt.value) if stmt.value is not None else None
        if isinstance(value, ast.Wrap) and value.kind == "Err":
            self.emit(self.raise_statement(value))
            return
        for cursor in reversed(self.open_cursors):
            # as after the loop: the caller's cursor is not left open, half read (Oracle's
            # lowering closes it so too)
            self.emit(plsql.Exec(f"CLOSE {cursor}"))
        self.commit_leaving(loop=False)
        if self.returns_into and value is not None and not isinstance(value, ast.UnitLit):
            self.store(self.returns_into, value, self.fn.returns)
        if self.return_exit:
            self.emit(plsql.Exit(self.return_exit))
            return
        if self.returns_into:
            self.emit(plsql.Return())
            return
        if value is None or isinstance(value, ast.UnitLit) or not self.fn.is_function:
            self.emit(plsql.Return())
            return
        into = self.analysis.json_calls.get(id(value))
        if (
            sql_chain(value) is not None
            or id(value) in self.analysis.dynamic_sql
            or (into is not None and into.record is not None)
        ):
            holder = self.temp(self.fn.returns)
            self.store(holder, value, self.fn.returns)
            self.emit(plsql.Return(holder))
            return
        self.emit(plsql.Return(self.lower(value)))

    def stmt_yield(self, stmt: ast.Yield) -> None:
        self.emit(plsql.PipeRow(self.lower(unwrap_value(stmt.value))))

    def stmt_transaction(self, stmt: ast.Transaction) -> None:
        """The body, then COMMIT (before a `return`, `break` or `continue` that leaves it too),
        in a PROCEDURE (`pell.postgres.names.Commits`). No savepoint and no handler: a block
        with an EXCEPTION clause could not COMMIT ("A transaction cannot be ended inside a
        block with exception handlers", PostgreSQL 15 docs, 43.8 "Transaction Management"),
        and none is needed: Pell catches no error, and nothing a PROCEDURE that commits runs
        under may catch one (43.8 again: no function and no handler block between it and the
        client's CALL), so an error goes to the client, and the transaction it aborts takes
        the block's work with it, and also what the caller did since its last COMMIT
        (docs/postgres.md, "Transactions")."""
        self.refuse_commit("a `transaction { }` block", stmt.span)
        self.transactions.append(self.loop_depth)
        try:
            body = self.nested(stmt.body)
        finally:
            self.transactions.pop()
        if falls_through(stmt.body.stmts):
            body.append(self.at(plsql.Commit()))
        self.emit(plsql.Block(body))

    def refuse_commit(self, what: str, span: ast.Span) -> None:
        """`what` commits: refused where PostgreSQL ends no transaction, and inside a loop
        whose cursor the COMMIT would close. "Normally, cursors are automatically closed at
        transaction commit. However, a cursor created as part of a loop like this is
        automatically converted to a holdable cursor by the first COMMIT or ROLLBACK", and
        "Transaction commands are not allowed in cursor loops driven by commands that are not
        read-only (for example UPDATE ... RETURNING)" (PostgreSQL 15 docs, 43.8 "Transaction
        Management"): a refcursor's FETCH loop would fetch from a closed cursor (34000) after
        the first COMMIT, once work is committed; Oracle fetches across it."""
        decl = self.fn.decl
        where = ""
        if any(a.name == "autonomous" for a in decl.annotations):
            where = "an `@autonomous` fn (its body runs as a FUNCTION, in a session of its own)"
        elif self.fn.is_function:
            where = "a fn that returns a value (a FUNCTION, which cannot COMMIT)"
        elif decl.finally_body is not None:
            where = (
                "a fn with `finally` (its body is a block with an exception handler, inside "
                "which PostgreSQL ends no transaction)"
            )
        elif self.commit_closes:
            where = self.commit_closes[-1]
        if where:
            raise self.unsupported(f"{what} in {where}", span)

    # -- errors

    def raise_statement(self, err: ast.Wrap) -> plsql.RaiseError:
        value = err.value
        if isinstance(value, ast.RecordLit):
            given: dict[str, ast.Expr] = {init.name: init.value for init in value.fields}
            name = value.type_name
        else:
            assert isinstance(value, ast.Name)
            given, name = {}, "::".join(value.path)
        fields = self.checked.error_info(name)[2]
        return self.raise_error(name, tuple((field, given.get(field)) for field in fields))

    def raise_error(
        self, error: str, values: tuple[tuple[str, ast.Expr | str | None], ...]
    ) -> plsql.RaiseError:
        """RAISE with the error's SQLSTATE (named by the runtime schema) and the message Oracle
        gets: `<module>.<Error>: <fields as JSON>`, each value in the form Oracle's JSON has
        (pell.codegen.text_forms, JSON_FORMS), not as IntervalStyle or numeric's scale say."""
        module_path, own_name, field_types = self.checked.error_info(error)
        pairs = []
        for field, value in values:
            if value is None:
                pairs += [quote_text(field), "NULL"]
                continue
            lowered = (value, ATOM) if isinstance(value, str) else self.lower_with_precedence(value)
            form = json_form(field_types[field])
            pairs += [quote_text(field), lowered[0] if form is None else postgres_text(form, lowered)]
        json = f"json_build_object({', '.join(pairs)})::text" if pairs else "'{}'"
        prefix = quote_text(f"{'.'.join(module_path)}.{own_name}: ")
        state = f"pell_runtime.{naming.exception_name(module_path, own_name)}()"
        return plsql.RaiseError(state, f"{prefix} || {json}", (module_path, own_name))

    # -- SQL

    def sql_text(
        self, block: ast.SqlBlock, into: str | None = None, strict: bool = False, suffix: str = ""
    ) -> str:
        tokens = sqltext.analyse(block.text).tokens
        verb = tokens[0].text.upper() if tokens else ""
        if verb in ("COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "END", "BEGIN"):
            # A function called by SELECT cannot end its transaction, and PL/pgSQL has no
            # SAVEPOINT statement: its subtransactions are EXCEPTION blocks (PostgreSQL 15
            # docs, 43.8 "Transaction Management"). DDL, transactional here, is no such case.
            # A script is a DO block, which may COMMIT only when not run inside a transaction
            # block and not inside a block with exception handlers (ibid.): not lowered yet.
            where = "a script (a PostgreSQL DO block)"
            if self.fn.decl.name != ast.SCRIPT_FN:
                where = "a fn (a PostgreSQL function)"
            raise self.unsupported(f"`{verb}` in {where}", block.span)
        targets = None if into is None else (" INTO STRICT " if strict else " INTO ") + into
        if block.jq is not None:
            # JSON_TABLE came to PostgreSQL in version 17: the same rows from jsonb's functions
            query = ast.SqlBlock(jq_lowering.query_text(self, block, block.jq), 0, 0, span=block.span)
            return spliced_sql(query, [], targets, suffix)
        if block.stages:
            # TABLE(f(CURSOR(q))) is Oracle's; a PostgreSQL set-returning fn reads a refcursor
            # its caller opened, which one query cannot do
            raise self.unsupported("a `|>` pipeline", block.span)
        if block.pivot:
            # PostgreSQL has no PIVOT clause (crosstab is an extension, tablefunc)
            raise self.unsupported("`pivot::sum` (Oracle's PIVOT)", block.span)
        return spliced_sql(block, self.analysis.binds[id(block)], targets, suffix)

    # -- expressions

    def lower(self, expr: ast.Expr) -> str:
        return self.lower_with_precedence(expr)[0]

    def lower_with_precedence(self, expr: ast.Expr) -> Lowered:
        if sql_chain(expr) is not None:
            holder = self.temp(self.type_of(expr))
            self.store(holder, expr, self.type_of(expr))
            return holder, ATOM
        return EXPRESSIONS[type(expr)](self, expr)

    def match(self, expr: ast.Match) -> Lowered:
        """A `match` that gives a value: a searched CASE (PostgreSQL 15 docs, 9.18.1 "CASE");
        without a `_` arm no ELSE. A sealed type's case has no form here (module-level
        `unsupported`)."""
        subject = self.match_subject(expr)
        whens: list[str] = []
        otherwise = ""
        for arm in expr.arms:
            condition = self.arm_condition(arm, subject)
            assert not isinstance(arm.body, ast.Block)
            value = self.lower(arm.body)
            if condition is None:
                otherwise = f" ELSE {value}"
                break
            whens.append(f"WHEN {condition} THEN {value}")
        if not whens:
            return (otherwise.removeprefix(" ELSE ") or "NULL"), ATOM
        return f"CASE {' '.join(whens)}{otherwise} END", ATOM

    def match_statement(self, expr: ast.Match) -> None:
        """A `match` statement: IF / ELSIF on each arm's patterns, ELSE for `_`."""
        subject = self.match_subject(expr)
        branches: list[plsql.Branch] = []
        rest: list[plsql.Stmt] | None = None
        for arm in expr.arms:
            condition = self.arm_condition(arm, subject)
            calls = self.take_calls()
            bound = [
                plsql.Assign(local, value)
                for pattern in arm.patterns
                for local, value in self.analysis.pattern_values.get(id(pattern), [])
            ]
            if isinstance(arm.body, ast.Block):
                body = bound + self.nested(arm.body)
            else:
                statement = ast.ExprStmt(arm.body, span=arm.body.span)
                body = bound + self.collect(functools.partial(self.stmt_exprstmt, statement))
            if condition is None:
                rest = body
                break
            branches.append(plsql.Branch(plsql.Opaque(condition, calls), body))
        if not branches:
            self.out.extend(rest or [])
            return
        if rest is not None and all(isinstance(node, plsql.Null) for node in rest):
            rest = None  # `_ -> { }`: no ELSE
        self.emit(plsql.If(branches, rest))

    def match_subject(self, expr: ast.Match) -> str:
        subject, stored = self.analysis.matches[id(expr)]
        if stored:
            self.store(subject, expr.subject, self.type_of(expr.subject))
        return subject

    def pattern_condition(self, pattern: ast.Pattern, subject: str) -> str | None:
        """The condition a value meets when `pattern` matches it; None for `_`."""
        if pattern.kind == "wildcard":
            return None
        if pattern.kind == "none":
            return f"{subject} IS NULL"
        if pattern.kind == "some":
            return f"{subject} IS NOT NULL"
        if pattern.kind == "case":
            raise self.unsupported("a sealed type's case", pattern.span)
        assert pattern.value is not None
        if isinstance(pattern.value, ast.StringLit) and not any(pattern.value.parts):
            # `""` is Oracle's NULL; here '' is a value: both are the empty text, as the
            # text tests have them (`is_empty`)
            return f"coalesce({subject}, '') = ''"
        return f"{subject} = {wrap(self.lower_with_precedence(pattern.value), COMPARISON + 1)}"

    def arm_condition(self, arm: ast.MatchArm, subject: str) -> str | None:
        """When an arm runs: one of its patterns matches, and its guard holds; None: always."""
        conditions = [self.pattern_condition(p, subject) for p in arm.patterns]
        matched = None if None in conditions else " OR ".join(c for c in conditions if c)
        if arm.guard is None:
            return matched
        guard = self.lower_with_precedence(arm.guard)
        if matched is None:
            return guard[0]
        left = f"({matched})" if len(conditions) > 1 else matched
        return f"{left} AND {wrap(guard, AND + 1)}"

    def numberlit(self, expr: ast.NumberLit) -> Lowered:
        return expr.text, ATOM

    def stringlit(self, expr: ast.StringLit) -> Lowered:
        pieces: list[str] = []
        for part in expr.parts:
            if isinstance(part, str):
                if part:
                    pieces.append(quote_text(part))
            else:
                pieces.append(self.as_text(part))
        if not pieces:
            return "''", ATOM
        if len(pieces) == 1 and isinstance(expr.parts[0], str):
            return pieces[0], ADDITIVE if "||" in pieces[0] else ATOM
        # concat() skips NULLs, as Oracle's || does: "Hi {name}" with no name is "Hi "
        return f"concat({', '.join(pieces)})", ATOM

    def as_text(self, expr: ast.Expr) -> str:
        """A value as text: text as is, any other scalar in its session-free form
        (pell.codegen.text_forms), the same text the Oracle target writes."""
        lowered = self.lower_with_precedence(expr)
        type_ = self.type_of(expr)
        if t.is_text(type_):
            return lowered[0]
        if isinstance(type_, t.ListType) and isinstance(type_.element, t.Scalar):
            return postgres_list_text(type_.element, lowered)
        form = text_form(type_)
        if form is None:
            # a SQL value (or None): its type is the database's, and so is its text
            return f"{wrap(lowered, ATOM)}::text"
        return postgres_text(form, lowered)

    def boollit(self, expr: ast.BoolLit) -> Lowered:
        return ("TRUE" if expr.value else "FALSE"), ATOM

    def nonelit(self, expr: ast.NoneLit) -> Lowered:
        return "NULL", ATOM

    def unitlit(self, expr: ast.UnitLit) -> Lowered:
        return "NULL", ATOM

    def regexlit(self, expr: ast.RegexLit) -> Lowered:
        raise self.unsupported("a regex literal", expr.span)  # `call` stops at its `re::` first

    def name(self, expr: ast.Name) -> Lowered:
        builtin = self.analysis.builtins.get(id(expr))
        if builtin is not None:
            return builtins.lower(self, builtin, [], [], expr.span)
        symbol = self.analysis.names[id(expr)]
        if symbol.kind == "constant":
            return quote_text(self.enum_value(expr.path)), ATOM
        return symbol.plsql, ATOM

    def enum_value(self, path: tuple[str, ...]) -> str:
        if len(path) == 2:
            return self.checked.enums[path[0]][path[1]]
        foreign = self.checked.imports.find(path[0])
        assert foreign is not None
        return foreign.declared().enums[path[1]][path[2]]

    def fieldaccess(self, expr: ast.FieldAccess) -> Lowered:
        sequence = self.analysis.sequences.get(id(expr))
        if sequence is not None:
            name, _, which = sequence.rpartition(".")
            return f"{which.lower()}({quote_text(name)})", ATOM
        target = self.lower_with_precedence(expr.target)
        text = target[0] if isinstance(expr.target, ast.Name) else f"({target[0]})"
        if isinstance(self.type_of(expr.target), t.SqlRow):
            return f"{text}.{expr.name}", ATOM
        return f"{text}.{naming.field_name(expr.name)}", ATOM

    def call(self, expr: ast.Call) -> Lowered:
        builtin = self.analysis.builtins.get(id(expr))
        if builtin is not None:
            args, types = self.builtin_args(builtin, expr.args)
            return builtins.lower(self, builtin, args, types, expr.span)
        index = self.analysis.list_indexes.get(id(expr))
        if index is not None:  # `xs(1)`: `xs.at(1)`
            return self.lower_with_precedence(index)
        if id(expr) in self.analysis.dynamic_sql:
            # the statement, `let`, assignment and `return` forms are lowered (store,
            # stmt_exprstmt); the checker allows no other
            raise self.unsupported("`exec_dyn` here", expr.callee.span)
        json_call = self.analysis.json_calls.get(id(expr))
        if json_call is not None:
            return json_lowering.call_sql(self, expr, json_call)
        if id(expr) in self.analysis.pivots:
            # its values are checked by DBMS_ASSERT, which PostgreSQL has not, and PostgreSQL
            # has no PIVOT clause
            raise self.unsupported(f"`{expr.callee.text}` (a dynamic PIVOT)", expr.callee.span)
        if id(expr) in self.analysis.regex_calls:
            # PostgreSQL's regular expressions are another flavour (Advanced Regular
            # Expressions: `\b` is a backspace there, and its match rules differ); the same
            # pattern is not known to match the same text, so no lowering here.
            raise self.unsupported(f"`{expr.callee.text}` (Oracle's REGEXP_*)", expr.callee.span)
        args = [self.lower_with_precedence(arg) for arg in expr.args]
        path = expr.callee.path
        target = self.callee(expr)
        if len(path) == 1:
            callee = f"{self.schema}.{fn_name(path[0])}"
        else:
            foreign = self.checked.imports.find(path[0])
            assert foreign is not None
            module = foreign.module
            callee = f"{schema_of(module.path, module.chosen_package)}.{fn_name(path[1])}"
        reason = self.commits_call(expr)
        if reason:
            self.refuse_commit(
                f"a call of `{expr.callee.text}`, which commits ({reason}),", expr.callee.span
            )
            if target is not None and target.is_function and id(expr) not in self.whole_calls:
                # its CALL is a statement of its own, run before the statement the expression
                # is in, whether or not the expression reaches the call (`&&`, a `match` arm):
                # it would commit, or not, where Pell does not
                raise self.unsupported(
                    f"a call of `{expr.callee.text}`, which commits ({reason}), inside an "
                    "expression (only as a statement, or as the whole value of a `let` or an "
                    "assignment)",
                    expr.callee.span,
                )
        lowered = [text for text, _ in args]
        lowered += [
            f"{self.analysis.keyword_names[id(k)]} => {self.lower(k.value)}" for k in expr.keywords
        ]
        self.calls.append(path)
        if target is not None and self.calls_procedure(expr):
            # CALL assigns OUT and INOUT arguments back; a value comes in one more variable
            holder = ""
            if target.is_function:
                holder = self.temp(target.returns)
                lowered.append(holder)
            self.emit(plsql.Exec(f"CALL {callee}({', '.join(lowered)})"))
            return holder, ATOM
        return f"{callee}({', '.join(lowered)})", ATOM

    def commits_call(self, expr: ast.Call) -> str:
        """What makes the Pell fn `expr` calls end its transaction (`Commits.reason`); ""
        when it does not."""
        called = callee_of(expr.callee.path, self.checked)
        return self.commits.reason(*called) if called is not None else ""

    def calls_procedure(self, expr: ast.Call) -> bool:
        """Is the Pell fn `expr` calls a PROCEDURE (called by CALL)?"""
        called = self.callee(expr)
        return called is not None and is_procedure(called, bool(self.commits_call(expr)))

    def builtin_args(
        self, plsql: str, args: Sequence[ast.Expr]
    ) -> tuple[list[Lowered], list[t.Type]]:
        """A builtin's arguments and their types; a number where it takes text is text as
        interpolation writes it (PostgreSQL's lpad or length takes no number)."""
        taken = checker_builtins.BY_PLSQL[plsql]
        lowered: list[Lowered] = []
        types: list[t.Type] = []
        for index, arg in enumerate(args):
            if taken.kind(index) == "text" and t.family(self.type_of(arg)) == "numeric":
                lowered.append((self.as_text(arg), ATOM))
                types.append(t.TEXT)
            else:
                lowered.append(self.lower_with_precedence(arg))
                types.append(self.type_of(arg))
        return lowered, types

    def callee(self, expr: ast.Call) -> FnInfo | None:
        """The Pell fn `expr` calls (None: Oracle's, which has no PostgreSQL form here)."""
        path = expr.callee.path
        if len(path) == 1:
            return self.checked.fns.get(path[0])
        foreign = self.checked.imports.find(path[0])
        if foreign is None or foreign.is_stub:
            raise self.unsupported(f"Oracle's `{expr.callee.text}`", expr.callee.span)
        return foreign.fn(path[1])

    def list_index(self, exprs: Sequence[ast.Expr], lowered: list[str]) -> str:
        """`.at(i)`'s subscript. A `number` goes through its exact text to integer, which
        raises for a fraction (invalid_text_representation) instead of rounding it as the
        cast of a numeric would (PostgreSQL Documentation, 9.3 Mathematical Functions:
        trim_scale drops the trailing zeroes of 3.0)."""
        if not lowered:
            return ""
        if self.type_of(exprs[0]) == t.NUMBER:
            return f"CAST(trim_scale({lowered[0]})::text AS integer)"
        return lowered[0]

    def list_at(self, items: str, index: str) -> str:
        """An element that is there, or NO_DATA_FOUND (VALUE_ERROR for a NULL index), as on
        Oracle: the schema's helper `pell_list_at` (pell.postgres.json_lowering)."""
        self.helpers.add("pell_list_at")
        return f"{self.schema}.pell_list_at({items}, {index})"

    def methodcall(self, expr: ast.MethodCall) -> Lowered:
        if id(expr) in self.analysis.bulk_counts:
            # a `forall` here is a loop of single statements: PostgreSQL has no FORALL and no
            # SQL%BULK_ROWCOUNT
            raise self.unsupported(f"`bulk.{expr.name}()`, the row counts of Oracle's FORALL", expr.span)
        target_type = self.type_of(expr.target)
        if id(expr) in self.analysis.json_calls:
            return json_lowering.method_sql(self, expr), ATOM
        if expr.name in ("into", "to_text"):
            wanted = self.type_of(expr)
            if t.is_text(wanted) and not t.is_text(target_type):
                return self.as_text(expr.target), ATOM
            if t.is_numeric(wanted) and t.is_text(target_type):
                number = postgres_text(NUMBER_FROM_TEXT, self.lower_with_precedence(expr.target))
                return (f"round({number})" if wanted == t.INT else number), ATOM
            if wanted == t.INT and target_type != t.INT:
                # round(numeric) breaks ties away from zero, as Oracle's ROUND (PostgreSQL 15
                # docs, "Mathematical Functions and Operators")
                return f"round({self.lower(expr.target)})", ATOM
            return self.lower_with_precedence(expr.target)
        if t.is_numeric(target_type) and expr.name in PAD_METHODS:
            receiver = self.as_text(expr.target), ATOM  # padded as interpolation writes it
        else:
            receiver = self.lower_with_precedence(expr.target)
        args = [self.lower(arg) for arg in expr.args]
        if t.family(target_type) in ("date", "timestamp", "interval"):
            return f"EXTRACT({expr.name.upper()} FROM {receiver[0]})", ATOM
        if isinstance(target_type, t.ListType):
            count = f"coalesce(cardinality({receiver[0]}), 0)"
            lists: dict[str, Lowered] = {
                "len": (count, ATOM),
                "count": (count, ATOM),
                "is_empty": (f"{count} = 0", COMPARISON),
                "first": (f"array_lower({receiver[0]}, 1)", ATOM),
                "last": (f"array_upper({receiver[0]}, 1)", ATOM),
                "at": (self.list_at(receiver[0], self.list_index(expr.args, args)), ATOM),
            }
            if expr.name in lists:
                return lists[expr.name]
        else:
            # Oracle keeps '' as NULL; here '' is a value: both are the empty text, so the
            # tests see a None operand as '' and are TRUE or FALSE, never NULL, as on Oracle
            # (pell/checker/methods.py, METHODS). strpos(s, '') is 1, starts_with(s, '') is
            # true, right(s, 0) is '' (PostgreSQL Documentation, String Functions).
            text = f"coalesce({receiver[0]}, '')"
            argument = args[0] if args else ""
            if expr.args and not nonempty_literal(expr.args[0]):
                argument = f"coalesce({argument}, '')"
            texts: dict[str, Lowered] = {
                # of a bytea, its number of bytes (PostgreSQL docs, "Binary String Functions")
                "len": (f"length({receiver[0]})", ATOM),
                "length": (f"length({receiver[0]})", ATOM),
                "is_empty": (f"{text} = ''", COMPARISON),
                "upper": (f"upper({receiver[0]})", ATOM),
                "lower": (f"lower({receiver[0]})", ATOM),
                "trim": (f"trim({receiver[0]})", ATOM),
                "contains": (f"strpos({text}, {argument}) > 0", COMPARISON),
                "starts_with": (f"starts_with({text}, {argument})", ATOM),
                "ends_with": (f"right({text}, length({argument})) = {argument}", COMPARISON),
                "substr": (f"substr({receiver[0]}, {', '.join(args)})", ATOM),
                "split": (f"string_to_array({receiver[0]}, {args[0] if args else ''})", ATOM),
                # '' padded is NULL on Oracle, which keeps '' as NULL; rpad and lpad cut a
                # longer text to n characters as Oracle's do (PostgreSQL Documentation,
                # String Functions)
                "rpad": (f"rpad(nullif({receiver[0]}, ''), {', '.join(args)})", ATOM),
                "lpad": (f"lpad(nullif({receiver[0]}, ''), {', '.join(args)})", ATOM),
            }
            if expr.name in texts:
                return texts[expr.name]
        raise self.unsupported(f"`.{expr.name}()`", expr.span)

    def unary(self, expr: ast.Unary) -> Lowered:
        operand = self.lower_with_precedence(expr.operand)
        if expr.op == "!":
            return f"NOT {wrap(operand, COMPARISON + 1)}", NOT
        text = wrap(operand, UNARY)
        return ("-" + (f"({text})" if text.startswith("-") else text)), UNARY

    def binary(self, expr: ast.Binary) -> Lowered:
        left_type, right_type = self.type_of(expr.left), self.type_of(expr.right)
        left = self.lower_with_precedence(expr.left)
        right = self.lower_with_precedence(expr.right)
        if expr.op == "%":
            return f"mod({left[0]}, {right[0]})", ATOM
        if expr.op == "+" and t.is_text(self.type_of(expr)):
            return f"concat({self.as_text(expr.left)}, {self.as_text(expr.right)})", ATOM
        if expr.op in ("==", "!=") and (
            isinstance(expr.left, ast.NoneLit) or isinstance(expr.right, ast.NoneLit)
        ):
            other = right if isinstance(expr.left, ast.NoneLit) else left
            test = "IS NULL" if expr.op == "==" else "IS NOT NULL"
            return f"{wrap(other, ADDITIVE)} {test}", COMPARISON
        if t.family(left_type) == "date" or t.family(right_type) == "date":
            # Oracle's DATE arithmetic counts days: DATE - DATE is a number of days, DATE +- n
            # moves by n days
            if expr.op == "-" and t.family(left_type) == t.family(right_type) == "date":
                return f"(EXTRACT(EPOCH FROM ({left[0]} - {right[0]})) / 86400)", ATOM
            if expr.op in ("+", "-") and (t.is_numeric(left_type) or t.is_numeric(right_type)):
                days, date = (left, right) if t.is_numeric(left_type) else (right, left)
                moved = f"{wrap(days, MULTIPLICATIVE)} * INTERVAL '1 day'"
                return f"({date[0]} {expr.op} {moved})::timestamp(0)", ATOM
        if int_product(expr, self.type_of) or int_quotient(expr, self.type_of):
            # integer * integer overflows past 32 bits ("integer out of range"), and integer /
            # integer "truncates the result towards zero" (PostgreSQL 15 docs, 9.3
            # "Mathematical Operators"): 7 / 2 would be 3. Both are a `number` (README,
            # "Numbers"), computed as one
            left = f"CAST({left[0]} AS numeric)", ATOM
        operator, precedence = BINARY_OPERATORS[expr.op]
        left_minimum = precedence + 1 if precedence == COMPARISON else precedence
        return f"{wrap(left, left_minimum)} {operator} {wrap(right, precedence + 1)}", precedence

    def wrap_value(self, expr: ast.Wrap) -> Lowered:
        if expr.value is None:
            return "NULL", ATOM
        if expr.kind == "Err":
            raise self.unsupported("`Err(...)` as a value", expr.span)
        return self.lower_with_precedence(expr.value)

    def propagate(self, expr: ast.Propagate) -> Lowered:
        if id(expr) in self.analysis.not_found:
            holder = self.temp(self.type_of(expr))
            self.store(holder, expr, self.type_of(expr))
            return holder, ATOM
        return self.lower_with_precedence(expr.operand)

    def recordlit(self, expr: ast.RecordLit) -> Lowered:
        type_ = self.type_of(expr)
        assert isinstance(type_, t.RecordType)
        given = {init.name: init.value for init in expr.fields}
        values = [
            self.lower(given[field]) if field in given else "NULL"
            for field in self.checked.record_info(type_).fields
        ]
        return f"ROW({', '.join(values)})::{self.sql_type(type_)}", ATOM

    def listlit(self, expr: ast.ListLit) -> Lowered:
        type_ = self.type_of(expr)
        array = self.sql_type(type_, expr.span)
        if not expr.items:
            return f"'{{}}'::{array}", ATOM
        return f"ARRAY[{', '.join(self.lower(item) for item in expr.items)}]::{array}", ATOM

    def sqlblock(self, expr: ast.SqlBlock) -> Lowered:
        raise self.unsupported("a `sql! { }` without a terminator as a value", expr.span)

    def jqblock(self, expr: ast.JqBlock) -> Lowered:
        # the checker refuses a `jq! { }` without a terminator; chains go through sql_chain
        raise self.unsupported("a `jq! { }` without a terminator as a value", expr.span)


def _numbered_placeholders(text: str, numbered: int) -> tuple[str, int]:
    """A piece of dynamic SQL with each `:name` placeholder outside a string literal as `$n`
    (numbered on from `numbered`: the binds are in text order), and the last number used."""
    out: list[str] = []
    in_string = False
    index = 0
    while index < len(text):
        char = text[index]
        if char == "'":
            in_string = not in_string
        elif char == ":" and not in_string:
            match = _PLACEHOLDER.match(text, index + 1)
            if match is not None:
                numbered += 1
                out.append(f"${numbered}")
                index = match.end()
                continue
        out.append(char)
        index += 1
    return "".join(out), numbered


_PLACEHOLDER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def subscripts(items: str) -> str:
    """The bounds of a FOR over an array's own subscripts. A caller's array may start at any
    subscript ("Subscripted assignment allows creation of arrays that do not use one-based
    subscripts", PostgreSQL 15 docs, 8.15.4 Modifying Arrays); it has no gaps (the positions
    between are "filled with nulls", ibid.), so lower .. upper is every element. An empty
    array has no bounds (array_lower and array_upper are NULL), and a FOR with a NULL bound
    raises "lower bound of FOR loop cannot be null": 1 .. 0 runs no pass."""
    return f"coalesce(array_lower({items}, 1), 1) .. coalesce(array_upper({items}, 1), 0)"


def _indent_more(text: str) -> str:
    return re.sub(r"\n(?=.)", "\n" + INDENT, text)


STATEMENTS: dict[type[ast.Node], Callable[[PgFnLowerer, Any], None]] = {
    ast.Let: PgFnLowerer.stmt_let,
    ast.Assign: PgFnLowerer.stmt_assign,
    ast.ExprStmt: PgFnLowerer.stmt_exprstmt,
    ast.If: PgFnLowerer.stmt_if,
    ast.While: PgFnLowerer.stmt_while,
    ast.For: PgFnLowerer.stmt_for,
    ast.Break: PgFnLowerer.stmt_break,
    ast.Continue: PgFnLowerer.stmt_continue,
    ast.Return: PgFnLowerer.stmt_return,
    ast.Transaction: PgFnLowerer.stmt_transaction,
    ast.Yield: PgFnLowerer.stmt_yield,
}

EXPRESSIONS: dict[type[ast.Node], Callable[[PgFnLowerer, Any], Lowered]] = {
    ast.NumberLit: PgFnLowerer.numberlit,
    ast.StringLit: PgFnLowerer.stringlit,
    ast.BoolLit: PgFnLowerer.boollit,
    ast.NoneLit: PgFnLowerer.nonelit,
    ast.UnitLit: PgFnLowerer.unitlit,
    ast.RegexLit: PgFnLowerer.regexlit,
    ast.Name: PgFnLowerer.name,
    ast.FieldAccess: PgFnLowerer.fieldaccess,
    ast.Call: PgFnLowerer.call,
    ast.MethodCall: PgFnLowerer.methodcall,
    ast.RecordLit: PgFnLowerer.recordlit,
    ast.Match: PgFnLowerer.match,
    ast.Unary: PgFnLowerer.unary,
    ast.Binary: PgFnLowerer.binary,
    ast.Wrap: PgFnLowerer.wrap_value,
    ast.Propagate: PgFnLowerer.propagate,
    ast.ListLit: PgFnLowerer.listlit,
    ast.SqlBlock: PgFnLowerer.sqlblock,
    ast.JqBlock: PgFnLowerer.jqblock,
}

__all__ = ["PgFnLowerer", "Unsupported", "falls_through"]


# The first words of a query whose portal PostgreSQL can hold over a COMMIT: one plain SELECT
# (a query changing data through INSERT, UPDATE, DELETE or MERGE, in a WITH too, cannot be)
_READ_ONLY_VERBS = frozenset({"select", "values", "table", "with"})
_DATA_CHANGES = frozenset({"insert", "update", "delete", "merge"})


def read_only(query: plsql.Sql) -> bool:
    """Is `query` read-only, so that a COMMIT in its cursor FOR loop keeps the cursor (43.8
    "Transaction Management")? `for update` and `for no key update` lock rows, and are
    read-only there."""
    if query.verb not in _READ_ONLY_VERBS:
        return False
    words = query.words
    return not any(
        word in _DATA_CHANGES and not (word == "update" and index and words[index - 1] in ("for", "key"))
        for index, word in enumerate(words)
    )
