"""Checking fn bodies: statement by statement, and each body as a whole (parameters, a
missing `return`, @pipelined fns, the finally block).

Expressions are typed in pell.checker.expressions, `sql! { }` blocks in pell.checker.sql_typing,
and names are looked up in pell.checker.scopes; each builds on the one after it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeGuard

from pell import ast, naming
from pell.checker import dynamic_sql, json
from pell.checker import types as t
from pell.checker.expressions import ExpressionChecker, list_hints, narrowing_hints
from pell.checker.matches import check_match
from pell.checker.model import CheckedModule, FnAnalysis, FnInfo, Symbol

# Also imported from here by pell.codegen.subprograms.
from pell.checker.sql_typing import sql_chain, text_columns
from pell.diagnostics import Diagnostic, quoted_with_article

if TYPE_CHECKING:
    from pell.checker import TypeResolver


def strip_propagate(expr: ast.Expr) -> tuple[ast.Expr, bool]:
    if isinstance(expr, ast.Propagate):
        return expr.operand, True
    return expr, False


def falls_through(stmts: tuple[ast.Stmt, ...]) -> bool:
    """Can control reach the end of these statements?"""
    for stmt in stmts:
        if isinstance(stmt, ast.Return | ast.Break | ast.Continue):
            return False
        if (
            isinstance(stmt, ast.If)
            and stmt.otherwise is not None
            and not falls_through(stmt.then.stmts)
            and not falls_through(
                stmt.otherwise.stmts if isinstance(stmt.otherwise, ast.Block) else (stmt.otherwise,)
            )
        ):
            return False
        if isinstance(stmt, ast.Transaction) and not falls_through(stmt.body.stmts):
            return False
        if isinstance(stmt, ast.ExprStmt) and isinstance(stmt.expr, ast.Match):
            arms = stmt.expr.arms
            # with a `_` arm one arm always runs (a case pattern misses a null value)
            wildcard = any(
                arm.guard is None and any(p.kind == "wildcard" for p in arm.patterns)
                for arm in arms
            )
            if wildcard and all(
                isinstance(arm.body, ast.Block) and not falls_through(arm.body.stmts)
                for arm in arms
            ):
                return False
    return True


class BodyChecker(ExpressionChecker):
    """Walks one fn body statement by statement; records what codegen needs in a FnAnalysis."""

    def run(self) -> FnAnalysis:
        params: dict[str, str] = {}
        own_names = dict(self.fn.param_plsql)
        for param in self.fn.params:
            decl = param.decl
            plsql = own_names.get(decl.name) or naming.param_name(decl.name)
            self.taken.add(plsql)
            first = params.setdefault(plsql, decl.name)
            if first != decl.name or decl.name in self.scopes[0]:
                what = (
                    f"two parameters are named `{decl.name}`"
                    if first == decl.name
                    else f"parameters `{first}` and `{decl.name}` differ only in case, and "
                    "PL/SQL names ignore case"
                )
                self.error("duplicate-name", what, decl.span)
            self.scopes[0][decl.name] = Symbol(
                decl.name, plsql, param.type, "param", decl.mode != "in", decl.span
            )
        if self.fn.self_type is not None:  # a method: SELF, IN OUT in a MEMBER PROCEDURE only
            self.scopes[0]["self"] = Symbol(
                "self", "SELF", self.fn.self_type, "param", not self.fn.is_function, self.fn.decl.span
            )
        body = self.fn.decl.body
        self.block(body)
        self.analysis.falls_through = falls_through(body.stmts)
        if self.fn.pipelined:
            self.check_pipelined()
        elif (
            self.fn.is_function
            and self.analysis.falls_through
            and not isinstance(self.fn.returns, t.UnknownType)
        ):
            self.error(
                "missing-return",
                f"fn `{self.fn.decl.name}` returns `{self.fn.returns}` but can reach the end "
                "of its body without a `return`",
                ast.Span(body.span.end - 1, body.span.end),
                "add a `return` on every path",
                *(
                    # an empty body is how the public Pell runtime writes a stub's signature
                    ("if the module declares an Oracle package, put `@stub` before `module`, "
                     "or its file in a `stubs` folder",)
                    if not body.stmts and self.fn.decl.finally_body is None
                    else ()
                ),
            )
        if self.fn.decl.finally_body is not None:
            self.in_finally = True
            self.block(self.fn.decl.finally_body)
            self.in_finally = False
        return self.analysis

    def check_pipelined(self) -> None:
        """A @pipelined fn returns `list<T>` of records or scalars SQL can hold, by `yield`."""
        returns = self.fn.returns
        span = self.fn.decl.name_span
        if not isinstance(returns, t.ListType):
            self.error(
                "annotation-misuse",
                f"a @pipelined fn returns the `stream<T>` (or `list<T>`) of rows it yields; "
                f"`{self.fn.decl.name}` returns `{returns}`",
                span,
            )
            return
        element = returns.element
        if not self.sql_row(element):
            self.error(
                "unsupported",
                f"rows of `{element}` cannot be SQL object types: they hold only scalars",
                span,
            )
        for param in self.fn.params:
            if param.decl.mode != "in":
                # SQL calls the table function, and SQL passes values in only
                self.error(
                    "annotation-misuse",
                    f"a @pipelined fn is called from SQL, which passes `in` parameters only; "
                    f"`{param.decl.name}` is `{param.decl.mode}`",
                    param.decl.span,
                )
            if not isinstance(param.type, t.CursorType):
                continue
            if not self.sql_row(param.type.element):
                self.error(
                    "unsupported",
                    f"a cursor's rows are fetched into `{param.type.element}`, which holds "
                    "only scalars",
                    param.decl.type.span,
                )
            elif t.BOOL in self.row_fields(param.type.element):
                # 23ai fetches a SQL BOOLEAN (or a number, converted) into a BOOLEAN field
                # (PL/SQL Language Reference 23ai, Changes in This Release, SQL BOOLEAN Data
                # Type: "BOOLEAN defines in the INTO and BULK COLLECT INTO clauses", implicit
                # conversions between BOOLEAN and number)
                self.sql_boolean(
                    f"a cursor's rows are fetched into `{param.type.element}`, which holds a "
                    "`bool`",
                    param.decl.type.span,
                )

    def row_fields(self, type_: t.Type) -> list[t.Type]:
        """The types of a SQL row's columns: a record's fields, or the one scalar."""
        if isinstance(type_, t.RecordType):
            return list(self.module.record_info(type_).fields.values())
        return [type_]

    def sql_row(self, type_: t.Type) -> bool:
        """Can a SQL row hold `type_` (a scalar, or a record of scalars)? A `bool` goes into a
        piped row as SQL BOOLEAN from 23ai on, as NUMBER(1) before (pell.codegen.schema_types)."""
        return all(isinstance(f, t.Scalar | t.UnknownType) for f in self.row_fields(type_))

    # -- statements

    def block(self, block: ast.Block) -> None:
        self.scopes.append({})
        for stmt in block.stmts:
            self.stmt(stmt)
        self.scopes.pop()

    def stmt(self, stmt: ast.Stmt) -> None:
        STATEMENT_CHECKS[type(stmt)](self, stmt)

    def stmt_let(self, stmt: ast.Let) -> None:
        declared = self.resolver.resolve(stmt.type) if stmt.type is not None else None
        whole = False  # no type written, and an `int` value (or a list literal of them)
        if stmt.value is not None:
            reported_before = self.diagnostic_count()
            wanted = declared
            if declared is None and id(stmt) in self.widened and _is_list_literal(stmt.value):
                wanted = _NUMBERS  # the literal itself is a list<number> (t_number_list)
            value = strip_propagate(stmt.value)[0]
            if isinstance(value, ast.Call) and value.callee.path == (dynamic_sql.NAME,):
                self.dynamic_let = value  # its row goes INTO the local
            json.note_optional(self, stmt.value, stmt.type)
            value_type = self.expr(stmt.value, wanted)
            self.dynamic_let = None
            if declared is None:
                declared = value_type
                if value_type == t.INT:
                    # whole so far: an `int` while every value it is given is one
                    # (check_fn_body), else a `number` from here on
                    whole = id(stmt) not in self.widened
                    declared = t.INT if whole else t.NUMBER
                elif value_type == _INTS and _is_list_literal(stmt.value):
                    # the same for a list literal of ints: a `list<number>` once it meets one
                    whole = True
                elif (
                    isinstance(value_type, t.UnknownType)
                    and self.diagnostic_count() == reported_before
                ):
                    # e.g. an Oracle package call: pellc does not know what it returns
                    self.error(
                        "needs-annotation",
                        f"the type of `{stmt.name}` cannot be inferred from its value",
                        stmt.name_span,
                        f"write it: `let {stmt.name}: <type> = ...`",
                    )
                elif isinstance(value_type, t.SqlRow):
                    self.error(
                        "type-mismatch",
                        f"`let {stmt.name}` would hold a whole query row, which has no PL/SQL "
                        "type here",
                        stmt.value.span,
                        "use its columns (`row.name`), or fetch into a record with .one()",
                    )
                    declared = t.UNKNOWN
                elif isinstance(value_type, t.SqlValue) and not value_type.column:
                    self.error(
                        "needs-annotation",
                        f"`let {stmt.name}` takes a query column, whose type pellc cannot see",
                        stmt.name_span,
                        f"write it: `let {stmt.name}: <type> = ...`",
                    )
                    declared = t.UNKNOWN
                elif isinstance(value_type, t.NeverType):
                    declared = t.UNKNOWN  # `Err(...)` here is reported already
                elif isinstance(value_type, t.NullType | t.UnitType):
                    self.error(
                        "needs-annotation",
                        f"`let {stmt.name}` needs a type: its value is `{value_type}`",
                        stmt.name_span,
                        f"write `let {stmt.name}: <type> = ...`",
                    )
                    declared = t.UNKNOWN
            elif not t.assignable(value_type, declared) and not self.widens(stmt.value, declared):
                self.error(
                    "type-mismatch",
                    f"`{stmt.name}` is declared `{declared}` but is given {quoted_with_article(value_type)}",
                    stmt.value.span,
                    *narrowing_hints(value_type, declared),
                    *list_hints(value_type, declared, self.variable_name(stmt.value), stmt.name),
                )
        elif declared is None:
            self.error(
                "needs-annotation",
                f"`{stmt.name}` needs a type or a value",
                stmt.name_span,
                f"write `var {stmt.name}: <type>;`",
            )
            declared = t.UNKNOWN
        symbol = self.declare_local(stmt.name, declared, stmt.name_span)
        if whole:
            self.whole_locals[id(symbol)] = id(stmt)
        if isinstance(declared, t.CursorType):
            # opened here, at this loop depth: a loop around it opens it again on each pass
            self.cursor_depths[symbol.plsql] = self.loop_depth
        self.analysis.locals.append(symbol)
        self.analysis.bindings[id(stmt)] = symbol

    def stmt_assign(self, stmt: ast.Assign) -> None:
        target_type = self.assign_target(stmt.target)
        # A query's row, or an Oracle package's result, takes the type it is wanted as: for a
        # whole local, a `number` (a `list<number>`), which widens it (a column may hold a
        # fraction).
        whole = self.whole_let(stmt.target) is not None
        wanted = target_type
        if whole:
            wanted = t.NUMBER if target_type == t.INT else _NUMBERS
        value = strip_propagate(stmt.value)[0]
        if isinstance(value, ast.Call) and value.callee.path == (dynamic_sql.NAME,):
            # `c = exec_dyn(...)`: opens the cursor `c` (an `out` parameter, a `var`)
            self.dynamic_let = value if isinstance(target_type, t.CursorType) else None
        value_type = self.expr(stmt.value, wanted)
        self.dynamic_let = None
        if (
            whole
            and value_type == _NUMBERS
            and _is_list_literal(stmt.value)
            and all(self.analysis.types[id(item)] == t.INT for item in stmt.value.items)
        ):
            # a list literal's items were wanted as numbers too: `[2, 3]`, all ints, keeps
            # the local a list<int>; `[1, 2.5]` widens it
            value_type = self.analysis.types[id(stmt.value)] = _INTS
        if self.widens(stmt.target, value_type):
            return
        if not t.assignable(value_type, target_type) and not self.widens(stmt.value, target_type):
            self.error(
                "type-mismatch",
                f"cannot assign {quoted_with_article(value_type)} to `{_describe(stmt.target)}`, "
                f"which is `{target_type}`",
                stmt.value.span,
                *narrowing_hints(value_type, target_type),
                *list_hints(
                    value_type,
                    target_type,
                    self.variable_name(stmt.value),
                    self.variable_name(stmt.target),
                ),
            )

    def stmt_exprstmt(self, stmt: ast.ExprStmt) -> None:
        expr, _ = strip_propagate(stmt.expr)
        if isinstance(expr, ast.Match):
            self.analysis.types[id(expr)] = check_match(self, expr, None, self.arm_statements)
            return
        if sql_chain(expr) is not None or isinstance(expr, ast.Call | ast.MethodCall):
            before = self.diagnostic_count()
            self.expr(stmt.expr, None, as_statement=True)
            if self.diagnostic_count() == before and self.pure_value(expr):
                opened = isinstance(self.analysis.types.get(id(expr)), t.CursorType)
                self.error(
                    "not-a-statement",
                    "the cursor this call returns would stay open: read it with `for`, or "
                    "return it"
                    if opened
                    else "the value of this call is not used, and it has no effect: a "
                    "statement is a call for its effect, an assignment or SQL",
                    stmt.span,
                )
            return
        self.expr(stmt.expr, None)
        self.error(
            "not-a-statement",
            "this expression's value is not used; a statement is a call, an assignment or SQL",
            stmt.span,
        )

    def pure_value(self, expr: ast.Expr) -> bool:
        """A built-in method of a list, text, bytes or other scalar (but `.append`), or a
        list read by call syntax (`xs(1)`): a value and nothing else."""
        if isinstance(expr, ast.Call):
            # a cursor the call opens would be left open: nothing reads or closes it
            value = self.analysis.types.get(id(expr))
            return id(expr) in self.analysis.list_indexes or isinstance(value, t.CursorType)
        if not isinstance(expr, ast.MethodCall) or expr.name == "append":
            return False
        target = self.analysis.types.get(id(expr.target))
        return isinstance(target, t.ListType | t.Scalar) and target != t.JSON

    def arm_statements(self, body: ast.Block | ast.Expr) -> None:
        """A statement `match` arm: a block, or one expression statement."""
        if isinstance(body, ast.Block):
            self.block(body)
        else:
            self.stmt_exprstmt(ast.ExprStmt(body, span=body.span))

    def condition(self, expr: ast.Expr, what: str) -> None:
        type_ = self.expr(expr, t.BOOL)
        if not t.assignable(type_, t.BOOL):
            self.error(
                "type-mismatch",
                f"{what} must be a `bool`, not {quoted_with_article(type_)}",
                expr.span,
            )

    def stmt_if(self, stmt: ast.If) -> None:
        self.condition(stmt.condition, "an `if` condition")
        self.block(stmt.then)
        if isinstance(stmt.otherwise, ast.Block):
            self.block(stmt.otherwise)
        elif isinstance(stmt.otherwise, ast.If):
            self.stmt_if(stmt.otherwise)

    def stmt_while(self, stmt: ast.While) -> None:
        self.condition(stmt.condition, "a `while` condition")
        self.loop_body(stmt.body)

    def loop_body(self, body: ast.Block, variable: Symbol | None = None) -> None:
        self.loop_depth += 1
        self.scopes.append({variable.name: variable} if variable else {})
        self.block(body)
        self.scopes.pop()
        self.loop_depth -= 1

    def stmt_forall(self, stmt: ast.For) -> None:
        """`forall r in rows { sql! { insert ... :r.col ... } }`: FORALL over a list variable,
        its one DML statement bound to each element in turn."""
        source = stmt.source
        source_type = self.expr(source, None) if not isinstance(source, ast.Range) else t.UNKNOWN
        symbol = self.lookup(source.path[0]) if isinstance(source, ast.Name) else None
        if symbol is None or not isinstance(source_type, t.ListType):
            if not isinstance(source_type, t.UnknownType) or isinstance(source, ast.Range):
                self.error(
                    "type-mismatch",
                    "`forall` runs over a list variable or parameter",
                    source.span,
                )
            element: t.Type = t.UNKNOWN
            plsql = naming.local_name(stmt.var)
        else:
            element = source_type.element
            plsql = f"{symbol.plsql}({naming.BULK_INDEX})"
        statements = stmt.body.stmts
        chain = (
            sql_chain(statements[0].expr)
            if len(statements) == 1 and isinstance(statements[0], ast.ExprStmt)
            else None
        )
        verb = chain[0].text.split(None, 1)[0].lower() if chain and chain[0].text.strip() else ""
        if chain is None or chain[1] or verb not in ("insert", "update", "delete", "merge"):
            self.error(
                "unsupported",
                "the body of `forall` is one `sql! { }` INSERT, UPDATE, DELETE or MERGE: FORALL "
                "sends one DML statement for every element",
                stmt.body.span,
            )
        variable = Symbol(stmt.var, plsql, element, "loop", False, stmt.var_span)
        self.analysis.bindings[id(stmt)] = variable
        self.loop_body(stmt.body, variable)
        self.forall_seen = True

    def stmt_for(self, stmt: ast.For) -> None:
        if stmt.bulk:
            self.stmt_forall(stmt)
            return
        source = stmt.source
        self.scopes.append({})
        if isinstance(source, ast.Range):
            for bound in (source.start, source.end):
                bound_type = self.expr(bound, t.INT)
                if not t.is_numeric(bound_type):
                    self.error(
                        "type-mismatch",
                        f"a range bound must be a number, not `{bound_type}`",
                        bound.span,
                    )
                elif t.narrows(bound_type, t.INT):
                    # PL/SQL "stores them as temporary PLS_INTEGER values, rounding them to
                    # the nearest integer if necessary" (PL/SQL Language Reference, "FOR LOOP
                    # Statement", lower_bound .. upper_bound): a fraction would be lost unsaid.
                    # PL/pgSQL's integer FOR rounds them too.
                    self.error(
                        "type-mismatch",
                        f"a range bound is an `int`, not {quoted_with_article(bound_type)}: "
                        "PL/SQL rounds a loop's bounds to whole numbers, and a fraction would "
                        "be lost without an error",
                        bound.span,
                        _whole_bound_hint(bound),
                    )
            variable = self.declare_local(stmt.var, t.INT, stmt.var_span, kind="loop")
        elif isinstance(source, ast.MethodCall) and source.name == "indices":
            # `for i in xs.indices()`: 1 .. the list's length
            target = self.expr(source.target, None)
            if source.args:
                self.error("arity", "`.indices()` takes no arguments", source.span)
            if not isinstance(target, t.ListType | t.UnknownType):
                self.error(
                    "type-mismatch",
                    f"`.indices()` is a list's; this is {quoted_with_article(target)}",
                    source.span,
                )
            variable = self.declare_local(stmt.var, t.INT, stmt.var_span, kind="loop")
        elif (chain := sql_chain(source)) is not None and not chain[1]:
            shape = self.sql(chain[0])
            names = tuple(n for n in (shape.select_names if shape else ()) if n)
            texts = text_columns(shape) if shape else ()
            variable = self.declare_local(
                stmt.var, t.SqlRow(names, texts), stmt.var_span, kind="loop"
            )
            self.analysis.types[id(source)] = variable.type
        else:
            source_type = self.cursor_source(source) or self.expr(source, None)
            element: t.Type = t.UNKNOWN
            if isinstance(source_type, t.CursorType) and source_type.element == t.DYN_ROW:
                # its columns are known only at run time: each row is a `json` object keyed
                # by column name (pell.codegen.dyn_rows)
                element = t.JSON
            elif isinstance(source_type, t.CursorType):
                self.analysis.fetched_rows.append(source_type.element)
                element = source_type.element
            elif isinstance(source_type, t.ListType):
                element = source_type.element
            elif not isinstance(source_type, t.UnknownType):
                self.error(
                    "type-mismatch",
                    f"`for` runs over a range, a list, a cursor or `sql! {{ select ... }}`, "
                    f"not {quoted_with_article(source_type)}",
                    source.span,
                )
            variable = self.declare_local(stmt.var, element, stmt.var_span, kind="loop")
            if isinstance(source_type, t.ListType | t.CursorType):
                self.analysis.locals.append(variable)
        self.scopes.pop()
        self.analysis.bindings[id(stmt)] = variable
        if isinstance(variable.type, t.SqlRow):
            self.cursor_rows.append(variable)
            self.loop_body(stmt.body, variable)
            self.cursor_rows.pop()
        else:
            self.loop_body(stmt.body, variable)
        indices = isinstance(source, ast.MethodCall) and source.name == "indices"
        if variable not in self.analysis.locals and not indices:
            # A PL/SQL FOR variable exists only inside its loop: the name is free again after
            # it. Not an index over `xs.indices()`: over a caller's list it is a variable of
            # the subprogram (FIRST/NEXT), which no later local may share.
            self.taken.discard(variable.plsql)

    def cursor_source(self, source: ast.Expr) -> t.Type | None:
        """`for r in rows` over a `cursor<T>` parameter: its type, once checked that this is the
        cursor's only loop and runs once (a cursor is read to its end once: FETCH from it
        afterwards fails, ORA-01001). None when `source` is no cursor."""
        symbol = self.lookup(source.path[0]) if isinstance(source, ast.Name) else None
        if symbol is None or not isinstance(symbol.type, t.CursorType):
            return None
        assert isinstance(source, ast.Name)
        if len(source.path) > 1:
            return None  # `rows.x`: reported as a use of the cursor as a value
        self.analysis.names[id(source)] = symbol
        self.analysis.types[id(source)] = symbol.type
        if symbol.plsql in self.read_cursors:
            self.error(
                "type-mismatch",
                f"cursor `{source.text}` is read by a `for` already: its rows come once",
                source.span,
            )
        elif self.loop_depth > self.cursor_depths.get(symbol.plsql, 0):
            self.error(
                "type-mismatch",
                f"cursor `{source.text}` is read inside another loop, which would read it "
                "again on the next pass: its rows come once",
                source.span,
            )
        self.read_cursors.add(symbol.plsql)
        return symbol.type

    def stmt_break(self, stmt: ast.Break) -> None:
        if self.loop_depth == 0:
            self.error("not-in-loop", "`break` outside a loop", stmt.span)

    def stmt_continue(self, stmt: ast.Continue) -> None:
        if self.loop_depth == 0:
            self.error("not-in-loop", "`continue` outside a loop", stmt.span)

    def stmt_return(self, stmt: ast.Return) -> None:
        if self.fn.pipelined and stmt.value is not None:
            self.expr(stmt.value, None)
            self.error(
                "return-type",
                "a @pipelined fn returns its rows with `yield`; end it with a bare `return;`",
                stmt.value.span,
            )
            return
        if self.in_finally:
            self.error(
                "return-in-finally",
                "`return` inside a `finally` block: the cleanup cannot replace the fn's result",
                stmt.span,
            )
        expected = self.fn.returns
        if stmt.value is None:
            if self.fn.is_function and not self.fn.pipelined:
                self.error(
                    "return-type",
                    f"`return;` without a value in fn `{self.fn.decl.name}`, "
                    f"which returns `{expected}`",
                    stmt.span,
                )
            return
        if isinstance(stmt.value, ast.Wrap) and stmt.value.kind == "Err":
            self.returned_errors.add(id(stmt.value))
        json.note_optional(self, stmt.value, self.fn.decl.return_type)
        value = strip_propagate(stmt.value)[0]
        if isinstance(expected, t.CursorType | t.UnknownType):
            # a cursor handed to the caller: opened here (exec_dyn), or a variable
            self.cursor_handoff = "return" if isinstance(value, ast.Name) else ""
            if isinstance(value, ast.Call) and value.callee.path == (dynamic_sql.NAME,):
                self.dynamic_let = value
        value_type = self.expr(stmt.value, expected)
        self.cursor_handoff = ""
        self.dynamic_let = None
        if isinstance(value_type, t.NeverType | t.UnknownType):
            return  # unknown: the error that made it is reported already
        if not self.fn.is_function:
            if not isinstance(value_type, t.UnitType):
                self.error(
                    "return-type",
                    f"{self.fn_named()} returns nothing, but this returns {quoted_with_article(value_type)}",
                    stmt.value.span,
                    "`return;` ends a script"
                    if self.in_script_body
                    else "declare a return type with `-> T`",
                )
            return
        if not t.assignable(value_type, expected) and not self.widens(stmt.value, expected):
            self.error(
                "return-type",
                f"fn `{self.fn.decl.name}` returns `{expected}`, not `{value_type}`",
                stmt.value.span,
                *narrowing_hints(value_type, expected),
                *list_hints(value_type, expected, self.variable_name(stmt.value)),
            )

    def stmt_transaction(self, stmt: ast.Transaction) -> None:
        self.block(stmt.body)

    def stmt_yield(self, stmt: ast.Yield) -> None:
        row = self.fn.returns.element if isinstance(self.fn.returns, t.ListType) else None
        value_type = self.expr(stmt.value, row)
        if not self.fn.pipelined:
            self.error(
                "annotation-misuse",
                f"`yield` pipes a row out of a @pipelined fn; `{self.fn.decl.name}` is not one",
                stmt.span,
            )
        elif row is not None and not t.assignable(value_type, row):
            self.error(
                "type-mismatch",
                f"fn `{self.fn.decl.name}` pipes `{row}` rows, not {quoted_with_article(value_type)}",
                stmt.value.span,
                *narrowing_hints(value_type, row),
            )


_INTS = t.ListType(t.INT)
_NUMBERS = t.ListType(t.NUMBER)


def _is_list_literal(expr: ast.Expr) -> TypeGuard[ast.ListLit]:
    return isinstance(expr, ast.ListLit)


def _whole_bound_hint(bound: ast.Expr) -> str:
    """Say how a `number` range bound becomes whole, with the bound's name when it has one."""
    named = isinstance(bound, ast.Name | ast.FieldAccess)
    shown = _describe(bound) if named else "(...)"
    return (
        f"say how to make it whole: `{shown}.into::<int>()` rounds it to the nearest, "
        f"`trunc({shown if named else '...'}).into::<int>()` drops the fraction"
    )


def _describe(expr: ast.Expr) -> str:
    if isinstance(expr, ast.Name):
        return expr.text
    if isinstance(expr, ast.FieldAccess):
        return f"{_describe(expr.target)}.{expr.name}"
    return "the target"


# One entry per class of ast.Stmt; a test checks that it covers the union.
STATEMENT_CHECKS: dict[type[ast.Node], Callable[[BodyChecker, Any], None]] = {
    ast.Let: BodyChecker.stmt_let,
    ast.Assign: BodyChecker.stmt_assign,
    ast.ExprStmt: BodyChecker.stmt_exprstmt,
    ast.If: BodyChecker.stmt_if,
    ast.While: BodyChecker.stmt_while,
    ast.For: BodyChecker.stmt_for,
    ast.Break: BodyChecker.stmt_break,
    ast.Continue: BodyChecker.stmt_continue,
    ast.Return: BodyChecker.stmt_return,
    ast.Transaction: BodyChecker.stmt_transaction,
    ast.Yield: BodyChecker.stmt_yield,
}


def check_fn_body(
    fn: FnInfo,
    module: CheckedModule,
    resolver: TypeResolver,
    diagnostics: list[Diagnostic],
    target: str = "23ai",
) -> FnAnalysis:
    """Check one fn's body and finally block; return what code generation needs of it.

    A local without a type whose value is an `int` stays one only while every value it is
    given is an `int`. One that is given a `number` is a `number` from its declaration on, so
    the body is checked again with it widened, and its first pass's findings dropped; each
    pass widens at least one more local, so this ends. A local without a type whose value is
    a list literal of `int`s is so too: a `list<number>` once it meets one."""
    start = len(diagnostics)  # the resolver reports into this list too
    widened: frozenset[int] = frozenset()
    while True:
        del diagnostics[start:]
        checker = BodyChecker(fn, module, resolver, diagnostics, target)
        checker.widened = widened
        analysis = checker.run()
        if not checker.widen:
            return analysis
        widened |= checker.widen
