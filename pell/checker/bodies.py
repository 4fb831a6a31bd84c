"""Checking fn bodies: scopes, name resolution, expression types, SQL binds and terminators."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pell import ast, naming, sqltext
from pell.checker import types as t
from pell.checker.model import CheckedModule, FnAnalysis, FnInfo, Symbol
from pell.diagnostics import Diagnostic, Note, did_you_mean, quoted_with_article

if TYPE_CHECKING:
    from pell.checker import TypeResolver

# Text methods: name -> (parameter types, result type).
TEXT_METHODS: dict[str, tuple[tuple[t.Type, ...], t.Type]] = {
    "len": ((), t.INT),
    "is_empty": ((), t.BOOL),
    "upper": ((), t.TEXT),
    "lower": ((), t.TEXT),
    "trim": ((), t.TEXT),
    "contains": ((t.TEXT,), t.BOOL),
    "starts_with": ((t.TEXT,), t.BOOL),
    "ends_with": ((t.TEXT,), t.BOOL),
    "substr": ((t.INT, t.INT), t.TEXT),
}

LIST_METHODS: dict[str, t.Type] = {"len": t.INT, "is_empty": t.BOOL}

# PL/SQL's VARCHAR2 holds 32,767 bytes (PL/SQL Language Reference, "Data Types").
MAX_TEXT_LITERAL_BYTES = 32_767
# Oracle's NUMBER reaches 9.99...E125: 126 digits before the decimal point.
MAX_NUMBER_DIGITS = 126
PLS_INTEGER_MAX = 2**31 - 1

# sql! { } terminators and modifiers.
SQL_TERMINATORS = ("one", "first", "collect", "rowcount")
SQL_MODIFIERS = ("returning", "for_update")


def sql_chain(expr: ast.Expr) -> tuple[ast.SqlBlock, list[ast.MethodCall]] | None:
    """`sql!{..}.a().b()` -> (the block, [a, b]); None when `expr` is not such a chain."""
    calls: list[ast.MethodCall] = []
    while isinstance(expr, ast.MethodCall):
        calls.append(expr)
        expr = expr.target
    if isinstance(expr, ast.SqlBlock):
        return expr, calls[::-1]
    return None


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
    return True


class BodyChecker:
    """Walks one fn body with a stack of scopes; records what codegen needs in a FnAnalysis."""

    def __init__(
        self,
        fn: FnInfo,
        module: CheckedModule,
        resolver: TypeResolver,
        diagnostics: list[Diagnostic],
        target: str = "23ai",
    ) -> None:
        self.fn = fn
        self.target = target
        self.current_bind_span = ast.NO_SPAN  # the bind being resolved, for its diagnostics
        self.module = module
        self.resolver = resolver
        self.diagnostics = diagnostics
        self.analysis = FnAnalysis()
        self.scopes: list[dict[str, Symbol]] = [{}]
        self.cursor_rows: list[Symbol] = []
        self.loop_depth = 0
        self.in_finally = False
        self.returned_errors: set[int] = set()
        self.taken = set(naming.RESERVED_LOCALS)

    # -- helpers

    def error(
        self, code: str, message: str, span: ast.Span, *hints: str, notes: tuple[Note, ...] = ()
    ) -> None:
        self.diagnostics.append(Diagnostic.of(code, message, span, hints=hints, notes=notes))

    def diagnostic_count(self) -> int:
        """How many diagnostics so far: unchanged across a check means nothing was reported."""
        return len(self.diagnostics)

    def lookup(self, name: str) -> Symbol | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def visible_names(self) -> list[str]:
        return sorted({name for scope in self.scopes for name in scope})

    def declare_local(
        self, name: str, type_: t.Type, span: ast.Span, kind: str = "local"
    ) -> Symbol:
        plsql = naming.unique(naming.local_name(name), self.taken)
        symbol = Symbol(name, plsql, type_, "loop" if kind == "loop" else "local", True, span)
        self.scopes[-1][name] = symbol
        return symbol

    # -- entry

    def run(self) -> FnAnalysis:
        params: dict[str, str] = {}
        for param in self.fn.params:
            decl = param.decl
            plsql = naming.param_name(decl.name)
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
        body = self.fn.decl.body
        self.block(body)
        self.analysis.falls_through = falls_through(body.stmts)
        if self.fn.pipelined:
            self.check_pipelined()
        elif self.fn.is_function and self.analysis.falls_through:
            self.error(
                "missing-return",
                f"fn `{self.fn.decl.name}` returns `{self.fn.returns}` but can reach the end "
                "of its body without a `return`",
                ast.Span(body.span.end - 1, body.span.end),
                "add a `return` on every path",
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
                f"a @pipelined fn returns the `list<T>` of rows it yields; "
                f"`{self.fn.decl.name}` returns `{returns}`",
                span,
            )
            return
        element = returns.element
        fields = (
            self.module.records[element.name].fields.values()
            if isinstance(element, t.RecordType)
            else [element]
        )
        if any(f == t.BOOL or not isinstance(f, t.Scalar) for f in fields):
            self.error(
                "unsupported",
                f"rows of `{element}` cannot be SQL object types: they hold only scalars "
                "other than `bool`",
                span,
            )

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
        if stmt.value is not None:
            reported_before = self.diagnostic_count()
            value_type = self.expr(stmt.value, declared)
            if declared is None:
                declared = value_type
                if (
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
                elif isinstance(value_type, t.SqlValue):
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
            elif not t.assignable(value_type, declared):
                self.error(
                    "type-mismatch",
                    f"`{stmt.name}` is declared `{declared}` but is given {quoted_with_article(value_type)}",
                    stmt.value.span,
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
        self.analysis.locals.append(symbol)
        self.analysis.bindings[id(stmt)] = symbol

    def stmt_assign(self, stmt: ast.Assign) -> None:
        target_type = self.assign_target(stmt.target)
        value_type = self.expr(stmt.value, target_type)
        if not t.assignable(value_type, target_type):
            self.error(
                "type-mismatch",
                f"cannot assign {quoted_with_article(value_type)} to `{_describe(stmt.target)}`, "
                f"which is `{target_type}`",
                stmt.value.span,
            )

    def assign_target(self, target: ast.Expr) -> t.Type:
        if isinstance(target, ast.Name) and len(target.path) == 1:
            symbol = self.resolve_name(target)
            if symbol is None:
                return t.UNKNOWN
            if not symbol.mutable:
                self.error(
                    "not-assignable",
                    f"cannot assign to `{symbol.name}`: it is an `in` parameter",
                    target.span,
                    f"declare it `inout {symbol.name}` or copy it into a `var`",
                )
            elif symbol.kind == "loop":
                self.error(
                    "not-assignable", f"cannot assign to loop variable `{symbol.name}`", target.span
                )
            return symbol.type
        if isinstance(target, ast.FieldAccess):
            self.assign_target(target.target)
            return self.expr(target, None)
        self.error(
            "not-assignable", "only a variable or a record field can be assigned", target.span
        )
        self.expr(target, None)
        return t.UNKNOWN

    def stmt_exprstmt(self, stmt: ast.ExprStmt) -> None:
        expr, _ = strip_propagate(stmt.expr)
        if sql_chain(expr) is not None or isinstance(expr, ast.Call | ast.MethodCall):
            self.expr(stmt.expr, None, as_statement=True)
            return
        self.expr(stmt.expr, None)
        self.error(
            "not-a-statement",
            "this expression's value is not used; a statement is a call, an assignment or SQL",
            stmt.span,
        )

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

    def stmt_for(self, stmt: ast.For) -> None:
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
            variable = self.declare_local(stmt.var, t.INT, stmt.var_span, kind="loop")
        elif (chain := sql_chain(source)) is not None and not chain[1]:
            shape = self.sql(chain[0])
            names = tuple(n for n in (shape.select_names if shape else ()) if n)
            variable = self.declare_local(stmt.var, t.SqlRow(names), stmt.var_span, kind="loop")
            self.analysis.types[id(source)] = variable.type
        else:
            source_type = self.expr(source, None)
            if isinstance(source_type, t.ListType):
                variable = self.declare_local(
                    stmt.var, source_type.element, stmt.var_span, kind="loop"
                )
                self.analysis.locals.append(variable)
            else:
                if not isinstance(source_type, t.UnknownType):
                    self.error(
                        "type-mismatch",
                        f"`for` runs over a range, a list or `sql! {{ select ... }}`, "
                        f"not {quoted_with_article(source_type)}",
                        source.span,
                    )
                variable = self.declare_local(stmt.var, t.UNKNOWN, stmt.var_span, kind="loop")
        self.scopes.pop()
        self.analysis.bindings[id(stmt)] = variable
        if isinstance(variable.type, t.SqlRow):
            self.cursor_rows.append(variable)
            self.loop_body(stmt.body, variable)
            self.cursor_rows.pop()
        else:
            self.loop_body(stmt.body, variable)
        if variable not in self.analysis.locals:
            # A PL/SQL FOR variable exists only inside its loop: the name is free again after it.
            self.taken.discard(variable.plsql)

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
        value_type = self.expr(stmt.value, expected)
        if isinstance(value_type, t.NeverType | t.UnknownType):
            return  # unknown: the error that made it is reported already
        if not self.fn.is_function:
            if not isinstance(value_type, t.UnitType):
                self.error(
                    "return-type",
                    f"fn `{self.fn.decl.name}` returns nothing, but this returns {quoted_with_article(value_type)}",
                    stmt.value.span,
                    "declare a return type with `-> T`",
                )
            return
        if not t.assignable(value_type, expected):
            self.error(
                "return-type",
                f"fn `{self.fn.decl.name}` returns `{expected}`, not `{value_type}`",
                stmt.value.span,
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
            )

    # -- expressions

    def expr(self, expr: ast.Expr, expected: t.Type | None, as_statement: bool = False) -> t.Type:
        if isinstance(expr, ast.Propagate):
            type_ = self.expr(expr.operand, expected, as_statement)
            self.map_not_found(expr)
        elif (chain := sql_chain(expr)) is not None:
            type_ = self.sql_expr(chain[0], chain[1], expected, as_statement)
        else:
            type_ = EXPRESSION_CHECKS[type(expr)](self, expr, expected)
        self.analysis.types[id(expr)] = type_
        return type_

    def map_not_found(self, expr: ast.Propagate) -> None:
        """`.one()?` in a fn that can raise a `*NotFound` error: NO_DATA_FOUND becomes it."""
        chain = sql_chain(expr.operand)
        if chain is None or not chain[1] or chain[1][-1].name != "one":
            return
        error = next((e for e in self.fn.errors if e.endswith("NotFound")), None)
        if error is None:
            return
        fields = []
        for name in self.module.error_fields[error]:
            symbol = self.lookup(name)
            fields.append((name, symbol.plsql if symbol else self.resolve_bind(name)))
        self.analysis.not_found[id(expr)] = (error, tuple(fields))

    def expr_numberlit(self, expr: ast.NumberLit, expected: t.Type | None) -> t.Type:
        whole = expr.text.split(".")[0].lstrip("0")
        if len(whole) > MAX_NUMBER_DIGITS:
            self.error(
                "number-too-large",
                f"this number has {len(whole)} digits before the point; Oracle's NUMBER holds "
                f"up to {MAX_NUMBER_DIGITS} (9.99E125)",
                expr.span,
            )
            return t.NUMBER
        if "." in expr.text or len(whole) > 10 or int(whole or "0") > PLS_INTEGER_MAX:
            return t.NUMBER  # a PLS_INTEGER would overflow: the literal is a NUMBER
        return t.INT

    def expr_stringlit(self, expr: ast.StringLit, expected: t.Type | None) -> t.Type:
        for part in expr.parts:
            if isinstance(part, str):
                size = len(part.encode("utf-8"))
                if size > MAX_TEXT_LITERAL_BYTES:
                    self.error(
                        "text-too-long",
                        f"this text is {size:,} bytes; a PL/SQL text value holds up to "
                        f"{MAX_TEXT_LITERAL_BYTES:,}",
                        expr.span,
                        "keep long text in a table (or a CLOB) and read it from there",
                    )
            else:
                part_type = self.expr(part, None)
                if not isinstance(part_type, t.Scalar | t.SqlValue | t.UnknownType | t.NullType):
                    self.error(
                        "type-mismatch",
                        f"{quoted_with_article(part_type)} cannot be interpolated into text",
                        part.span,
                        "interpolate its fields one by one",
                    )
        return t.TEXT

    def expr_boollit(self, expr: ast.BoolLit, expected: t.Type | None) -> t.Type:
        return t.BOOL

    def expr_nonelit(self, expr: ast.NoneLit, expected: t.Type | None) -> t.Type:
        return t.NullType()

    def expr_unitlit(self, expr: ast.UnitLit, expected: t.Type | None) -> t.Type:
        return t.UNIT

    def resolve_name(self, expr: ast.Name) -> Symbol | None:
        name = expr.path[0]
        symbol = self.lookup(name)
        if symbol is not None:
            self.analysis.names[id(expr)] = symbol
            return symbol
        self.error(
            "unknown-name",
            f"unknown name `{name}`{did_you_mean(name, self.visible_names)}",
            expr.span,
        )
        return None

    def expr_name(self, expr: ast.Name, expected: t.Type | None) -> t.Type:
        if len(expr.path) == 2 and expr.path[0] in self.module.enums:
            enum, variant = expr.path
            variants = self.module.enums[enum]
            if variant not in variants:
                self.error(
                    "unknown-name",
                    f"enum `{enum}` has no variant `{variant}`{did_you_mean(variant, list(variants))}",
                    expr.span,
                )
                return t.UNKNOWN
            self.analysis.names[id(expr)] = Symbol(
                expr.text, naming.enum_constant(enum, variant), t.TEXT, "constant", False, expr.span
            )
            return t.TEXT
        if len(expr.path) > 1:
            self.error(
                "unsupported",
                f"`{expr.text}` names a value in another package; only calls are supported",
                expr.span,
            )
            return t.UNKNOWN
        if expr.path[0] in self.module.errors and self.lookup(expr.path[0]) is None:
            self.error(
                "type-mismatch",
                f"`{expr.path[0]}` is an error; raise it with `Err(...)`",
                expr.span,
            )
            return t.UNKNOWN
        symbol = self.resolve_name(expr)
        return symbol.type if symbol else t.UNKNOWN

    def expr_fieldaccess(self, expr: ast.FieldAccess, expected: t.Type | None) -> t.Type:
        target = self.expr(expr.target, None)
        if isinstance(target, t.RecordType):
            fields = self.module.records[target.name].fields
            if expr.name in fields:
                return fields[expr.name]
            self.error(
                "unknown-field",
                f"record `{target.name}` has no field `{expr.name}`"
                f"{did_you_mean(expr.name, list(fields))}",
                ast.Span(expr.span.end - len(expr.name), expr.span.end),
            )
            return t.UNKNOWN
        if isinstance(target, t.SqlRow):
            if expr.name in target.names:
                if expr.name.lower() in naming.ORACLE_RESERVED:
                    self.reserved_column(
                        expr.name, ast.Span(expr.span.end - len(expr.name), expr.span.end)
                    )
                return t.SqlValue()
            self.error(
                "unknown-field",
                f"the query has no column `{expr.name}`{did_you_mean(expr.name, target.names)}",
                ast.Span(expr.span.end - len(expr.name), expr.span.end),
                "give the column an alias in the select list",
            )
            return t.UNKNOWN
        if not isinstance(target, t.UnknownType):
            self.error(
                "unknown-field",
                f"{quoted_with_article(target)} has no fields (`.{expr.name}`)",
                expr.span,
            )
        return t.UNKNOWN

    def expr_call(self, expr: ast.Call, expected: t.Type | None) -> t.Type:
        path = expr.callee.path
        if len(path) > 1:
            package = path[0]
            if package not in self.module.imports:
                self.error(
                    "unknown-name",
                    f"package `{package}` is not imported",
                    expr.callee.span,
                    f"add `import {package};` after the module line",
                )
            for arg in expr.args:
                self.expr(arg, None)
            return t.UNKNOWN
        name = path[0]
        fn = self.module.fns.get(name)
        if fn is None and name == "exec_dyn":
            for arg in expr.args:
                self.expr(arg, None)
            self.error(
                "unsupported", "dynamic SQL (`exec_dyn`) is not supported yet", expr.callee.span
            )
            return t.UNKNOWN
        if fn is None:
            for arg in expr.args:
                self.expr(arg, None)
            self.error(
                "unknown-fn",
                f"unknown fn `{name}`{did_you_mean(name, lambda: sorted(self.module.fns))}",
                expr.callee.span,
            )
            return t.UNKNOWN
        if len(expr.args) != len(fn.params):
            self.error(
                "arity",
                f"fn `{name}` takes {len(fn.params)} argument{'s' * (len(fn.params) != 1)}, "
                f"but {len(expr.args)} {'was' if len(expr.args) == 1 else 'were'} given",
                expr.span,
                notes=(Note(f"`{name}` is declared here", fn.decl.name_span),),
            )
        for arg, param in zip(expr.args, fn.params, strict=False):
            arg_type = self.expr(arg, param.type)
            if not t.assignable(arg_type, param.type):
                self.error(
                    "type-mismatch",
                    f"argument `{param.decl.name}` of `{name}` is `{param.type}`, not `{arg_type}`",
                    arg.span,
                )
            if param.decl.mode != "in":
                self.assign_target(arg)
        for arg in expr.args[len(fn.params) :]:
            self.expr(arg, None)
        return fn.returns

    def expr_methodcall(self, expr: ast.MethodCall, expected: t.Type | None) -> t.Type:
        target = self.expr(expr.target, None)
        if isinstance(target, t.UnknownType):
            for arg in expr.args:
                self.expr(arg, None)
            return t.UNKNOWN
        if isinstance(target, t.ListType):
            if expr.name not in LIST_METHODS:
                self.error(
                    "unknown-fn",
                    f"a list has no method `{expr.name}`{did_you_mean(expr.name, list(LIST_METHODS))}",
                    expr.span,
                    "lists have .len() and .is_empty()",
                )
                return t.UNKNOWN
            if expr.args:
                self.error("arity", f"`.{expr.name}()` takes no arguments", expr.span)
            return LIST_METHODS[expr.name]
        if t.is_text(target) or isinstance(target, t.SqlValue):
            signature = TEXT_METHODS.get(expr.name)
            if signature is None:
                self.error(
                    "unknown-fn",
                    f"text has no method `{expr.name}`{did_you_mean(expr.name, list(TEXT_METHODS))}",
                    expr.name_span,
                )
                return t.UNKNOWN
            params, result = signature
            if len(expr.args) != len(params):
                self.error(
                    "arity",
                    f"`.{expr.name}()` takes {len(params)} argument{'s' * (len(params) != 1)}, "
                    f"but {len(expr.args)} {'was' if len(expr.args) == 1 else 'were'} given",
                    expr.span,
                )
            for arg, param in zip(expr.args, params, strict=False):
                arg_type = self.expr(arg, param)
                if not t.assignable(arg_type, param):
                    self.error(
                        "type-mismatch",
                        f"`.{expr.name}()` takes {quoted_with_article(param)} here, not {quoted_with_article(arg_type)}",
                        arg.span,
                    )
            return result
        self.error(
            "unknown-fn", f"{quoted_with_article(target)} has no method `{expr.name}`", expr.span
        )
        return t.UNKNOWN

    def expr_recordlit(self, expr: ast.RecordLit, expected: t.Type | None) -> t.Type:
        if expr.type_name in self.module.errors:
            self.error(
                "type-mismatch",
                f"`{expr.type_name}` is an error; raise it with `Err({expr.type_name} {{ ... }})`",
                expr.span,
            )
            for init in expr.fields:
                self.expr(init.value, None)
            return t.UNKNOWN
        record = self.module.records.get(expr.type_name)
        if record is None:
            for init in expr.fields:
                self.expr(init.value, None)
            self.error(
                "unknown-type",
                f"unknown record `{expr.type_name}`"
                f"{did_you_mean(expr.type_name, lambda: sorted(self.module.records))}",
                ast.Span(expr.span.start, expr.span.start + len(expr.type_name)),
            )
            return t.UNKNOWN
        self.field_inits(expr.type_name, record.fields, expr.fields, expr.span)
        return t.RecordType(expr.type_name)

    def field_inits(
        self,
        type_name: str,
        fields: dict[str, t.Type],
        inits: tuple[ast.FieldInit, ...],
        span: ast.Span,
    ) -> None:
        given: set[str] = set()
        for init in inits:
            if init.name in given:
                self.error("duplicate-name", f"field `{init.name}` is given twice", init.span)
            given.add(init.name)
            field_type = fields.get(init.name)
            if field_type is None:
                self.expr(init.value, None)
                self.error(
                    "unknown-field",
                    f"`{type_name}` has no field `{init.name}`"
                    f"{did_you_mean(init.name, list(fields))}",
                    init.span,
                )
                continue
            value_type = self.expr(init.value, field_type)
            if not t.assignable(value_type, field_type):
                self.error(
                    "type-mismatch",
                    f"field `{init.name}` of `{type_name}` is `{field_type}`, not `{value_type}`",
                    init.value.span,
                )
        missing = [name for name in fields if name not in given]
        if missing:
            listed = ", ".join(f"`{name}`" for name in missing)
            self.error(
                "unknown-field",
                f"`{type_name}` literal is missing field{'s' * (len(missing) > 1)} {listed}",
                span,
            )

    def expr_unary(self, expr: ast.Unary, expected: t.Type | None) -> t.Type:
        operand = self.expr(expr.operand, None)
        if expr.op == "-":
            if not t.is_numeric(operand):
                self.error(
                    "type-mismatch",
                    f"`-` needs a number, not {quoted_with_article(operand)}",
                    expr.span,
                )
                return t.UNKNOWN
            return operand
        if not t.assignable(operand, t.BOOL):
            self.error(
                "type-mismatch",
                f"`!` needs a `bool`, not {quoted_with_article(operand)}",
                expr.span,
            )
        return t.BOOL

    def expr_binary(self, expr: ast.Binary, expected: t.Type | None) -> t.Type:
        left = self.expr(expr.left, None)
        right = self.expr(expr.right, None)
        op = expr.op
        if isinstance(left, t.UnknownType) or isinstance(right, t.UnknownType):
            return t.BOOL if op in ("||", "&&", "==", "!=", "<", "<=", ">", ">=") else t.UNKNOWN
        if op in ("||", "&&"):
            for side, side_type in ((expr.left, left), (expr.right, right)):
                if not t.assignable(side_type, t.BOOL):
                    self.error(
                        "type-mismatch",
                        f"`{op}` needs `bool` operands, not `{side_type}`",
                        side.span,
                    )
            return t.BOOL
        if op in ("==", "!=", "<", "<=", ">", ">="):
            if not t.comparable(left, right) or not _is_sql_comparable(left):
                self.error(
                    "type-mismatch",
                    f"cannot compare {quoted_with_article(left)} with {quoted_with_article(right)} using `{op}`",
                    expr.span,
                )
            return t.BOOL
        if op == "+" and (t.is_text(left) or t.is_text(right)):
            if (t.is_text(left) and (t.is_text(right) or isinstance(right, t.SqlValue))) or (
                isinstance(left, t.SqlValue) and t.is_text(right)
            ):
                return t.BIGTEXT if t.BIGTEXT in (left, right) else t.TEXT
            self.error(
                "type-mismatch",
                f"`+` joins two texts or adds two numbers; here it has {quoted_with_article(left)} and {quoted_with_article(right)}",
                expr.span,
                'interpolate instead: "{a}{b}"',
            )
            return t.UNKNOWN
        if t.is_numeric(left) and t.is_numeric(right):
            if op == "/":
                return t.NUMBER
            return t.INT if left == t.INT and right == t.INT else t.NUMBER
        self.error(
            "type-mismatch",
            f"`{op}` needs numbers, not {quoted_with_article(left)} and {quoted_with_article(right)}",
            expr.span,
        )
        return t.UNKNOWN

    def expr_wrap(self, expr: ast.Wrap, expected: t.Type | None) -> t.Type:
        if expr.kind == "Err":
            self.raised_error(expr)
            if id(expr) not in self.returned_errors:
                self.error(
                    "type-mismatch",
                    "`Err(...)` raises an error, so it stands only in `return Err(...);`",
                    expr.span,
                )
            return t.NeverType()
        if expr.value is None:
            return t.UNIT
        return self.expr(expr.value, expected)

    def raised_error(self, expr: ast.Wrap) -> None:
        value = expr.value
        if isinstance(value, ast.RecordLit):
            name, inits = value.type_name, value.fields
        elif isinstance(value, ast.Name) and len(value.path) == 1:
            name, inits = value.path[0], ()
        else:
            self.error(
                "type-mismatch", "`Err(...)` takes an error: `Err(NotFound { id })`", expr.span
            )
            return
        decl = self.module.errors.get(name)
        if decl is None:
            self.error(
                "unknown-type",
                f"unknown error `{name}`{did_you_mean(name, lambda: sorted(self.module.errors))}",
                value.span,
            )
            return
        if name not in self.fn.errors:
            allowed = ", ".join(self.fn.errors) or "none"
            self.error(
                "undeclared-error",
                f"fn `{self.fn.decl.name}` raises `{name}`, which is not in its error list "
                f"({allowed})",
                value.span,
                f"declare it: `-> Result<{self.fn.returns}, {' | '.join((*self.fn.errors, name))}>`",
            )
        self.field_inits(name, self.module.error_fields[name], inits, value.span)

    def expr_listlit(self, expr: ast.ListLit, expected: t.Type | None) -> t.Type:
        element = expected.element if isinstance(expected, t.ListType) else None
        reported_before = self.diagnostic_count()
        types = [self.expr(item, element) for item in expr.items]
        if element is None:
            if (
                types
                and isinstance(types[0], t.UnknownType)
                and self.diagnostic_count() == reported_before
            ):
                self.error(
                    "needs-annotation",
                    "the element type of this list cannot be inferred from its first item; "
                    "write it: `let xs: list<number> = [...];`",
                    expr.span,
                )
                return t.UNKNOWN
            if not types:
                self.error(
                    "needs-annotation",
                    "the type of an empty list cannot be inferred; write it: "
                    "`let xs: list<number> = [];`",
                    expr.span,
                )
                return t.UNKNOWN
            element = types[0]
        for item, item_type in zip(expr.items, types, strict=True):
            if not t.assignable(item_type, element):
                self.error(
                    "type-mismatch",
                    f"a list of `{element}` cannot hold {quoted_with_article(item_type)}",
                    item.span,
                )
        if not isinstance(element, t.Scalar | t.RecordType | t.UnknownType):
            innermost: t.Type = element
            while isinstance(innermost, t.ListType):
                innermost = innermost.element
            if not isinstance(innermost, t.UnknownType):  # else: reported inside already
                self.error("unsupported", f"lists of `{element}` are not supported", expr.span)
            return t.UNKNOWN  # reported once, not again by each enclosing list
        return t.ListType(element)

    # -- embedded SQL

    def sql(self, block: ast.SqlBlock) -> sqltext.SqlShape | None:
        """Tokenize the SQL and resolve its binds; None (after a diagnostic) if it cannot be read."""
        offset = block.text_start
        for line in block.text.splitlines(keepends=True):
            if line.strip() == "/":
                # SQL*Plus, SQLcl and pellc deploy end a statement at a line holding only `/`
                at = offset + line.index("/")
                self.error(
                    "sql-syntax",
                    "a line holding only `/` ends the whole statement in SQL*Plus and in the "
                    "deploy scripts, cutting the package body in two",
                    ast.Span(at, at + 1),
                    "write a division on one line with its operands",
                )
            offset += len(line)
        try:
            shape = sqltext.analyse(block.text)
        except sqltext.SqlTextError as error:
            at = block.text_start + error.offset
            self.error("sql-syntax", f"the SQL cannot be read: {error}", ast.Span(at, at + 1))
            return None
        rewrites = []
        for bind in shape.binds:
            self.current_bind_span = ast.Span(
                block.text_start + bind.start, block.text_start + bind.end
            )
            replacement = self.resolve_bind(bind.name)
            if replacement is None:
                start = block.text_start + bind.start

                def candidates() -> list[str]:
                    columns = [
                        n
                        for row in self.cursor_rows
                        if isinstance(row.type, t.SqlRow)
                        for n in row.type.names
                    ]
                    return self.visible_names() + columns

                self.error(
                    "unknown-bind",
                    f"bind `:{bind.name}` names no local, parameter, loop column or "
                    f"record-parameter field{did_you_mean(bind.name, candidates)}",
                    ast.Span(start, block.text_start + bind.end),
                )
                continue
            rewrites.append((bind, replacement))
            if self.bind_type(bind.name) == t.BOOL:
                start = block.text_start + bind.start
                self.sql_boolean(
                    f"bind `:{bind.name}` is a `bool`",
                    ast.Span(start, block.text_start + bind.end),
                )
        self.analysis.binds[id(block)] = rewrites
        return shape

    def bind_type(self, name: str) -> t.Type:
        """The type of what bind `:name` resolves to (as resolve_bind finds it)."""
        symbol = self.lookup(name)
        if symbol is not None and not isinstance(symbol.type, t.SqlRow):
            return symbol.type
        if any(isinstance(r.type, t.SqlRow) and name in r.type.names for r in self.cursor_rows):
            return t.UNKNOWN  # a column of a query: SQL's own type
        for param in self.fn.params:
            if isinstance(param.type, t.RecordType):
                fields = self.module.records[param.type.name].fields
                if name in fields:
                    return fields[name]
        return t.UNKNOWN

    def sql_boolean(self, what: str, span: ast.Span) -> None:
        """BOOLEAN is a SQL type from Oracle 23ai only; before it SQL can neither take a
        PL/SQL BOOLEAN as a bind nor fetch into one (PL/SQL Language Reference 19c, "BOOLEAN
        Data Type")."""
        if self.target != "23ai":
            self.error(
                "sql-boolean",
                f"{what}, and SQL has no BOOLEAN before Oracle 23ai (this builds for {self.target})",
                span,
                "use a number (1/0) or text ('Y'/'N') in SQL, and compare it in Pell",
            )

    def reserved_column(self, name: str, span: ast.Span) -> None:
        """A cursor row's column that is a reserved word (`level`): PL/SQL cannot name it as a
        field of the row, so it needs an alias in the select list."""
        self.error(
            "reserved-name",
            f"column `{name}` is an Oracle reserved word, so PL/SQL cannot name it as a field "
            "of the row",
            span,
            f"give it an alias in the select list: `{name} as {name}_value`",
        )

    def resolve_bind(self, name: str) -> str | None:
        symbol = self.lookup(name)
        if symbol is not None and not isinstance(symbol.type, t.SqlRow):
            return symbol.plsql
        for row in reversed(self.cursor_rows):
            if isinstance(row.type, t.SqlRow) and name in row.type.names:
                if name.lower() in naming.ORACLE_RESERVED:
                    self.reserved_column(name, self.current_bind_span)
                return f"{row.plsql}.{name}"
        owners = [
            param
            for param in self.fn.params
            if isinstance(param.type, t.RecordType)
            and name in self.module.records[param.type.name].fields
        ]
        if len(owners) == 1:
            return f"{naming.param_name(owners[0].decl.name)}.{naming.field_name(name)}"
        return None

    def sql_expr(
        self,
        block: ast.SqlBlock,
        calls: list[ast.MethodCall],
        expected: t.Type | None,
        as_statement: bool,
    ) -> t.Type:
        shape = self.sql(block)
        names = [call.name for call in calls]
        for call in calls:
            if call.name not in SQL_TERMINATORS + SQL_MODIFIERS:
                self.error(
                    "unknown-fn",
                    f"`sql! {{ }}` has no method `{call.name}`"
                    f"{did_you_mean(call.name, list(SQL_TERMINATORS + SQL_MODIFIERS))}",
                    call.name_span,
                    "the terminators are .one(), .first(), .collect(), .rowcount()",
                )
                return t.UNKNOWN
        terminators = [n for n in names if n in SQL_TERMINATORS]
        if not terminators and as_statement and shape is not None and shape.is_select:
            self.error(
                "unused-query",
                "a query used as a statement: PL/SQL has no SELECT without INTO",
                block.span,
                "fetch it with .one(), .first() or .collect(), or loop over it with "
                "`for row in sql! { ... } { ... }`",
            )
            return t.UNIT
        if not terminators:
            if not as_statement:
                self.error(
                    "needs-annotation",
                    "a `sql! { }` used as a value needs a terminator: .one(), .first(), "
                    ".collect() or .rowcount()",
                    block.span,
                )
                return t.UNKNOWN
            return t.UNIT
        if len(terminators) > 1 or names[-1] not in SQL_TERMINATORS:
            self.error("sql-syntax", "a `sql! { }` takes one terminator, last", calls[-1].name_span)
            return t.UNKNOWN
        terminator = calls[-1]
        modifiers = names[:-1]
        if terminator.name == "rowcount":
            if shape is not None and shape.is_select:
                self.error(
                    "sql-syntax",
                    "`.rowcount()` counts the rows a DML statement changed; this is a query",
                    terminator.name_span,
                    "count in SQL instead: `select count(*) ...` with .one()",
                )
            return t.INT
        if "returning" in modifiers:
            return self.returning(block, shape, calls, expected)
        if shape is not None and not shape.is_select:
            self.error("sql-syntax", f"`.{terminator.name}()` needs a query (SELECT)", block.span)
            return expected or t.UNKNOWN
        if terminator.name == "first" and "for_update" in modifiers:
            self.error(
                "sql-syntax",
                "`.first()` fetches with FETCH FIRST, which Oracle does not allow with FOR UPDATE",
                terminator.name_span,
                "lock with .one() on a query that selects exactly one row",
            )
        elif terminator.name == "first" and shape is not None and shape.row_clause is not None:
            self.error(
                "sql-syntax",
                f"`.first()` adds FETCH FIRST 1 ROWS ONLY, but this query already has "
                f"{shape.row_clause}: Oracle takes one row-limiting clause, and none with "
                "FOR UPDATE",
                terminator.name_span,
                "lock with .one() on a query that selects exactly one row"
                if shape.row_clause == "FOR UPDATE"
                else "limit the rows in one place: drop the query's own clause, or use .one()",
            )
        if terminator.name == "collect":
            if expected is None:
                row = self.infer_row(shape, terminator)
                return row if isinstance(row, t.UnknownType) else t.ListType(row)
            if isinstance(expected, t.UnknownType):
                return expected
            if not isinstance(expected, t.ListType):
                self.error(
                    "type-mismatch",
                    f"`.collect()` gives a list, but {quoted_with_article(expected)} is expected here",
                    terminator.name_span,
                )
                return t.UNKNOWN
            if shape is not None:
                self.check_column_count(block, shape, expected.element)
            return expected
        # .one() and .first(): one row
        row = expected if expected is not None else self.infer_row(shape, terminator)
        if isinstance(row, t.UnknownType):
            return row
        if shape is not None:
            self.check_column_count(block, shape, row)
        return row

    def infer_row(self, shape: sqltext.SqlShape | None, terminator: ast.MethodCall) -> t.Type:
        """An unannotated row: the one record whose field names are the select list's names."""
        if shape is None:
            return t.UNKNOWN
        names = [n.lower() if n else None for n in shape.select_names]
        single = len(names) == 1 and None not in names
        row_example = "number" if single else "Order"
        example = f"list<{row_example}>" if terminator.name == "collect" else row_example
        if len(names) < 2 or None in names:
            why = (
                "a single column"
                if single
                else "columns without names (`*`, or expressions without an alias)"
            )
            self.error(
                "needs-annotation",
                f"the type of this `.{terminator.name}()` cannot be inferred from {why}; "
                f"write it: `let x: {example} = sql! {{ ... }}.{terminator.name}();`",
                terminator.name_span,
            )
            return t.UNKNOWN
        matches = [
            name
            for name, record in self.module.records.items()
            if [f.lower() for f in record.fields] == names
        ]
        if len(matches) == 1:
            return t.RecordType(matches[0])
        shown = ", ".join(n or "?" for n in names)
        found = (
            f"several records match ({', '.join(sorted(matches))})"
            if matches
            else "no record has exactly these fields"
        )
        self.error(
            "needs-annotation",
            f"the row type of this `.{terminator.name}()` cannot be inferred from its columns "
            f"({shown}): {found}",
            terminator.name_span,
            f"write the type: `let row: {example} = sql! {{ ... }}.{terminator.name}();`",
        )
        return t.UNKNOWN

    def returning(
        self,
        block: ast.SqlBlock,
        shape: sqltext.SqlShape | None,
        calls: list[ast.MethodCall],
        expected: t.Type | None,
    ) -> t.Type:
        """`.returning::<T>().one()` on DML with a RETURNING clause."""
        call = next(c for c in calls if c.name == "returning")
        if calls[-1].name != "one" or calls[-2] is not call:
            self.error("sql-syntax", "write `.returning::<T>().one()`", call.name_span)
            return t.UNKNOWN
        if len(call.type_args) != 1 or len(call.type_args[0].alternatives) != 1:
            self.error(
                "needs-annotation",
                "write the returned type: `.returning::<number>()`",
                call.name_span,
            )
            return t.UNKNOWN
        returned = self.resolver.resolve(call.type_args[0].alternatives[0])
        if shape is not None and (shape.is_select or shape.returning_count == 0):
            self.error(
                "sql-syntax",
                "`.returning::<T>()` needs an INSERT, UPDATE or DELETE ending in a RETURNING "
                "clause: `insert into t (...) values (...) returning id`",
                block.span,
            )
            return returned
        if shape is not None and isinstance(returned, t.RecordType | t.Scalar):
            wanted = (
                len(self.module.records[returned.name].fields)
                if isinstance(returned, t.RecordType)
                else 1
            )
            if shape.returning_count != wanted:
                self.error(
                    "sql-column-count",
                    f"RETURNING gives {shape.returning_count} value"
                    f"{'s' * (shape.returning_count != 1)}, but `{returned}` takes {wanted}",
                    block.span,
                )
        if expected is not None and not t.assignable(returned, expected):
            self.error(
                "type-mismatch",
                f"`.returning::<{returned}>()` gives {quoted_with_article(returned)}, but {quoted_with_article(expected)} is "
                "expected here",
                call.name_span,
            )
        return returned

    def check_column_count(
        self, block: ast.SqlBlock, shape: sqltext.SqlShape, target: t.Type
    ) -> None:
        row = target.element if isinstance(target, t.ListType) else target
        if row == t.BOOL:
            self.sql_boolean("this query fetches into a `bool`", block.span)
        elif isinstance(row, t.RecordType):
            flags = [f for f, ft in self.module.records[row.name].fields.items() if ft == t.BOOL]
            if flags:
                self.sql_boolean(
                    f"this query fetches into record `{row.name}`, whose field `{flags[0]}` is "
                    "a `bool`",
                    block.span,
                )
        count = len(shape.select_items)
        if isinstance(target, t.UnknownType):
            return  # the error that made it is reported already
        if isinstance(target, t.RecordType):
            wanted = len(self.module.records[target.name].fields)
            what = f"record `{target.name}` has {wanted} field{'s' * (wanted != 1)}"
        elif isinstance(target, t.Scalar):
            wanted = 1
            what = f"{quoted_with_article(target)} takes one column"
        else:
            self.error(
                "type-mismatch",
                f"a `.one()` row cannot be stored in {quoted_with_article(target)}",
                block.span,
            )
            return
        star = any(block.text[start:end].strip().endswith("*") for start, end in shape.select_items)
        if star:
            self.error(
                "sql-column-count",
                f"`select *` cannot be matched to the target: {what}; list the columns",
                block.span,
            )
        elif count != wanted:
            self.error(
                "sql-column-count",
                f"the query selects {count} column{'s' * (count != 1)}, but {what}",
                block.span,
            )


def _is_sql_comparable(type_: t.Type) -> bool:
    return not isinstance(type_, t.RecordType | t.ListType | t.UnitType)


def _describe(expr: ast.Expr) -> str:
    if isinstance(expr, ast.Name):
        return expr.text
    if isinstance(expr, ast.FieldAccess):
        return f"{_describe(expr.target)}.{expr.name}"
    return "the target"


# One entry per class of ast.Stmt, and of ast.Expr but the two `expr` handles before it
# (Propagate, and SqlBlock through sql_chain); a test checks that they cover the unions.
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
EXPRESSION_CHECKS: dict[type[ast.Node], Callable[[BodyChecker, Any, t.Type | None], t.Type]] = {
    ast.NumberLit: BodyChecker.expr_numberlit,
    ast.StringLit: BodyChecker.expr_stringlit,
    ast.BoolLit: BodyChecker.expr_boollit,
    ast.NoneLit: BodyChecker.expr_nonelit,
    ast.UnitLit: BodyChecker.expr_unitlit,
    ast.Name: BodyChecker.expr_name,
    ast.FieldAccess: BodyChecker.expr_fieldaccess,
    ast.Call: BodyChecker.expr_call,
    ast.MethodCall: BodyChecker.expr_methodcall,
    ast.RecordLit: BodyChecker.expr_recordlit,
    ast.Unary: BodyChecker.expr_unary,
    ast.Binary: BodyChecker.expr_binary,
    ast.Wrap: BodyChecker.expr_wrap,
    ast.ListLit: BodyChecker.expr_listlit,
}


def check_fn_body(
    fn: FnInfo,
    module: CheckedModule,
    resolver: TypeResolver,
    diagnostics: list[Diagnostic],
    target: str = "23ai",
) -> FnAnalysis:
    """Check one fn's body and finally block; return what code generation needs of it."""
    return BodyChecker(fn, module, resolver, diagnostics, target).run()
