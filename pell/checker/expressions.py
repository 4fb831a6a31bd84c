"""Typing the expressions of one fn body: literals, names, fields, calls, text and list
methods, operators, record and list literals, and `Err(...)`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pell import ast, naming
from pell.checker import builtins, dynamic_sql, jq, json, list_crossings, logger, pivot, regex, ut
from pell.checker import types as t
from pell.checker.imports import PELL_LIBRARY_MODULES
from pell.checker.matches import check_match
from pell.checker.methods import (
    BULK,
    BULK_METHODS,
    BYTES_METHODS,
    DATETIME_FIELDS,
    LIST_METHODS,
    PAD_METHODS,
    TEXT_METHODS,
    spoken_list,
)
from pell.checker.model import FnInfo, Symbol
from pell.checker.sql_typing import SqlChecker, jq_chain, sql_chain
from pell.diagnostics import Fix, Note, closest_name, did_you_mean, quoted_with_article

# PL/SQL's VARCHAR2 holds 32,767 bytes (PL/SQL Language Reference, "Data Types").
MAX_TEXT_LITERAL_BYTES = 32_767
# Oracle's NUMBER reaches 9.99...E125: 126 digits before the decimal point.
MAX_NUMBER_DIGITS = 126
PLS_INTEGER_MAX = 2**31 - 1


class ExpressionChecker(SqlChecker):
    """Types the expressions of one fn body, recording each type (and each name's symbol) in
    the FnAnalysis."""

    as_statement = False  # the expression being typed is a statement of its own
    dynamic_let: ast.Expr | None = None  # the `exec_dyn(...)` call a `let` takes its value from
    cursor_handoff = ""  # a cursor variable may stand here: "return"ed, or a "call"'s argument

    def expr(self, expr: ast.Expr, expected: t.Type | None, as_statement: bool = False) -> t.Type:
        if isinstance(expr, ast.Propagate):
            type_ = self.expr(expr.operand, expected, as_statement)
            self.map_not_found(expr)
        elif (jq_query := jq_chain(expr)) is not None:
            type_ = self.jq_expr(jq_query[0], jq_query[1], expected, as_statement)
        elif (chain := sql_chain(expr)) is not None:
            if self.lazy_operands:
                # the lowering runs a query before the condition it stands in: on the right
                # of `&&`/`||` it would run even when the left side decides
                self.error(
                    "unsupported",
                    "a query on the right of `&&` or `||`: pellc would run it before the left "
                    "side decides",
                    chain[0].span,
                    "read it into a name first (`let v = sql! { ... }.one();`), or use an `if`",
                )
            type_ = self.sql_expr(chain[0], chain[1], expected, as_statement)
        else:
            self.as_statement = as_statement  # read by calls whose value may go unused
            type_ = EXPRESSION_CHECKS[type(expr)](self, expr, expected)
        self.analysis.types[id(expr)] = type_
        return type_

    def jq_expr(
        self,
        block: ast.JqBlock,
        calls: list[ast.MethodCall],
        expected: t.Type | None,
        as_statement: bool,
    ) -> t.Type:
        """`jq! { ... }.collect()`: its JSON_TABLE query (pell.checker.jq), then read as a
        `sql! { }` with the same terminators."""
        terminator = calls[-1].name if calls else None
        compiled = jq.check(self, block, terminator, expected)
        if compiled is None:
            return t.UNKNOWN
        return self.sql_expr(compiled, calls, expected, as_statement)

    def expr_jqblock(self, expr: ast.JqBlock, expected: t.Type | None) -> t.Type:
        return self.jq_expr(expr, [], expected, self.as_statement)  # `expr` takes it first

    def map_not_found(self, expr: ast.Propagate) -> None:
        """`.one()?` in a fn that can raise a `*NotFound` error: NO_DATA_FOUND becomes it."""
        chain = sql_chain(expr.operand)
        if chain is None or not chain[1] or chain[1][-1].name != "one":
            return
        error = next((e for e in self.fn.errors if e.endswith("NotFound")), None)
        if error is None:
            return
        fields = []
        for name in self.module.error_info(error)[2]:
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
                # a list of scalars is `[a, b]` (pell.codegen.text_forms, list_text_function)
                listed = isinstance(part_type, t.ListType) and isinstance(
                    part_type.element, t.Scalar
                )
                if not listed and not isinstance(
                    part_type, t.Scalar | t.SqlValue | t.UnknownType | t.NullType
                ):
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

    def expr_regexlit(self, expr: ast.RegexLit, expected: t.Type | None) -> t.Type:
        # regex.check_call takes the literal where it is the pattern, without coming here
        self.error(
            "type-mismatch",
            "a regex literal (`/pattern/`) is no value of its own: it stands only as the "
            "pattern of a `re::` fn",
            expr.span,
            "`re::matches(s, /[0-9]+/)`",
        )
        return t.UNKNOWN

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
        if len(expr.path) == 3 and expr.path[0] in self.module.imports:
            return self.foreign_enum_value(expr)
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
        builtin = builtins.BUILTINS.get(expr.path[0])
        if builtin is not None and builtin.bare and self.lookup(expr.path[0]) is None:
            return builtins.check_call(self, expr, builtin, expected)  # `sysdate`
        symbol = self.resolve_name(expr)
        if symbol is not None and isinstance(symbol.type, t.CursorType):
            if self.cursor_handoff and len(expr.path) == 1:
                # returned, or passed to a fn: whoever gets it reads it, not this fn
                self.read_cursors.add(symbol.plsql)
                if self.cursor_handoff == "call":
                    self.analysis.handed_cursors.add(symbol.plsql)
                return symbol.type
            self.error(
                "type-mismatch",
                f"`{expr.text}` is a cursor: `for r in {expr.text} {{ ... }}` reads its rows, "
                "`return` or a call's argument hands it on, and nothing else may use it",
                expr.span,
            )
            return t.UNKNOWN
        return symbol.type if symbol else t.UNKNOWN

    def foreign_enum_value(self, expr: ast.Name) -> t.Type:
        """`alias::Enum::Variant`: the constant in the other module's package spec."""
        alias, enum, variant = expr.path
        found = self.resolver.foreign_item(f"{alias}::{enum}", expr.span, "enum")
        if found is None:
            return t.UNKNOWN
        foreign, item = found
        if not isinstance(item, ast.Enum):
            self.error("unknown-name", f"`{alias}::{enum}` is not an enum", expr.span)
            return t.UNKNOWN
        variants = foreign.declared().enums[enum]
        if variant not in variants:
            self.error(
                "unknown-name",
                f"enum `{alias}::{enum}` has no variant `{variant}`"
                f"{did_you_mean(variant, list(variants))}",
                expr.span,
            )
            return t.UNKNOWN
        constant = f"{foreign.package}.{naming.enum_constant(enum, variant)}"
        self.analysis.names[id(expr)] = Symbol(
            expr.text, constant, t.TEXT, "constant", False, expr.span
        )
        return t.TEXT

    def expr_fieldaccess(self, expr: ast.FieldAccess, expected: t.Type | None) -> t.Type:
        sequence = expr.target
        if (
            isinstance(sequence, ast.Name)
            and len(sequence.path) <= 2
            and (len(sequence.path) == 2 or self.lookup(sequence.path[0]) is None)
            and any(
                isinstance(i, ast.Sequence) and i.name == sequence.text
                for i in self.module.module.items
            )
        ):
            if expr.name not in ("nextval", "currval"):
                self.error(
                    "unknown-field",
                    f"sequence `{sequence.text}` has `.nextval` and `.currval`, not "
                    f"`.{expr.name}`",
                    expr.span,
                )
                return t.UNKNOWN
            # `hr::emp_seq`, another schema's: `hr.emp_seq.NEXTVAL` (SQL Language Reference,
            # Sequence Pseudocolumns: schema.sequence.NEXTVAL)
            qualified = ".".join(sequence.path).lower()
            self.analysis.sequences[id(expr)] = f"{qualified}.{expr.name.upper()}"
            return t.NUMBER
        target = self.expr(expr.target, None)
        if isinstance(target, t.RecordType):
            fields = self.module.record_info(target).fields
            if expr.name in fields:
                if target.module and isinstance(fields[expr.name], t.ListType):
                    self.foreign_record_list(target, expr.name, expr.span)
                return fields[expr.name]
            self.error(
                "unknown-field",
                f"record `{target.name}` has no field `{expr.name}`"
                f"{did_you_mean(expr.name, list(fields))}",
                ast.Span(expr.span.end - len(expr.name), expr.span.end),
            )
            return t.UNKNOWN
        if isinstance(target, t.TableRow):
            # the table's column of that name: unknown to pellc, checked when Oracle compiles
            # the package (PL/SQL Language Reference 23, "%ROWTYPE Attribute")
            name_span = ast.Span(expr.span.end - len(expr.name), expr.span.end)
            if expr.name.lower() in naming.ORACLE_RESERVED:
                self.reserved_column(expr.name, name_span)
            return t.SqlValue(f"{target.table}.{expr.name.lower()}")
        if isinstance(target, t.ObjectType) and target.name in self.module.objects:
            info = self.module.objects[target.name]
            if expr.name in info.fields:
                return info.fields[expr.name]
            hint = (
                (f"`{target.name}` is a sealed type: `match` on its cases reads their fields",)
                if info.cases
                else ()
            )
            self.error(
                "unknown-field",
                f"type `{target.name}` has no field `{expr.name}`"
                f"{did_you_mean(expr.name, list(info.fields))}",
                ast.Span(expr.span.end - len(expr.name), expr.span.end),
                *hint,
            )
            return t.UNKNOWN
        if isinstance(target, t.SqlRow):
            if expr.name in target.names:
                if expr.name.lower() in naming.ORACLE_RESERVED:
                    self.reserved_column(
                        expr.name, ast.Span(expr.span.end - len(expr.name), expr.span.end)
                    )
                return t.TEXT if expr.name in target.texts else t.SqlValue()
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
        # `re::capture::<T>` is checked by pell.checker.regex; `json::into::<T>`, of a library
        # module pellc does not provide, is reported as such by qualified_call
        library = path[0] not in self.module.imports and path[0].lower() in (
            "re",
            *PELL_LIBRARY_MODULES,
        )
        if expr.type_args and not library:
            for arg in call_values(expr):
                self.expr(arg, None)
            self.error(
                "type-mismatch",
                f"`{expr.callee.text}` takes no type argument",
                expr.type_args[0].span,
                "`re::capture::<T>` and `json::into::<T>` take one",
            )
            return t.UNKNOWN
        if len(path) > 1:
            return self.qualified_call(expr, expected)
        name = path[0]
        fn = self.module.fns.get(name)
        local = self.lookup(name) if fn is None else None
        if local is not None and isinstance(local.type, t.ListType) and not expr.keywords:
            # `xs(1)`, as public Pell (and PL/SQL) index a collection: `xs.at(1)`, checked and
            # lowered as that; the callee Name is its target, so it reads as a use of `xs`
            at = ast.MethodCall(expr.callee, "at", expr.args, span=expr.span, name_span=expr.callee.span)
            self.analysis.list_indexes[id(expr)] = at
            return self.expr(at, expected)
        if fn is None and name == dynamic_sql.NAME:
            into = self.dynamic_let is expr
            return dynamic_sql.check_call(self, expr, into, expected if into else None)
        if fn is None and name in builtins.BUILTINS:  # Oracle's: a fn of the module wins
            if expr.keywords:
                for arg in call_values(expr):
                    self.expr(arg, None)
                self.error(
                    "keyword-argument",
                    f"`{name}` is Oracle's {builtins.BUILTINS[name].plsql}: its arguments are "
                    "positional",
                    expr.keywords[0].name_span,
                )
                return t.UNKNOWN
            return builtins.check_call(self, expr, builtins.BUILTINS[name], expected)
        if fn is None:
            for arg in call_values(expr):
                self.expr(arg, None)
            if any(isinstance(i, ast.Aggregate) and i.name == name for i in self.module.module.items):
                # an aggregate function reads a group of rows: only a query calls it
                self.error(
                    "unknown-fn",
                    f"`{name}` is an aggregate: SQL calls it over a group of rows "
                    f"(`sql! {{ select {name}(x) from t }}`), Pell code does not",
                    expr.callee.span,
                )
                return t.UNKNOWN
            close = closest_name(name, lambda: sorted({*self.module.fns, *builtins.BUILTINS}))
            self.error(
                "unknown-fn",
                f"unknown fn `{name}`" + (f"; did you mean `{close}`?" if close else ""),
                expr.callee.span,
                fixes=(Fix(expr.callee.span, close),) if close else (),
            )
            return t.UNKNOWN
        return self.checked_call(expr, fn, name)

    def qualified_call(self, expr: ast.Call, expected: t.Type | None) -> t.Type:
        """`alias::f(...)`: a fn of another module or a stubbed Oracle package, checked like a
        local one; a call into an Oracle package without a stub, unchecked."""
        path = expr.callee.path
        as_statement = self.as_statement
        alias, name = path[0], "::".join(path[1:])
        if alias == "re" and alias not in self.module.imports:  # public Pell's own `re::`
            return regex.check_call(self, expr, expected)
        if alias == json.LIBRARY and alias not in self.module.imports:  # and its `json::`
            return json.check_call(self, expr, expected)
        if alias == "pivot" and alias not in self.module.imports:  # public Pell's `pivot::`
            return pivot.check_call(self, expr, expected)
        if alias in self.module.imports.loggers and len(path) == 2:
            return logger.check_misuse(self, expr)  # its well-formed calls print (logger.py)
        foreign = self.module.imports.find(alias) if len(path) == 2 else None
        if foreign is None:
            for arg in call_values(expr):
                self.expr(arg, None)
            if alias not in self.module.imports and alias.lower() in PELL_LIBRARY_MODULES:
                self.error(
                    "unsupported",
                    f"`{expr.callee.text}` (the public Pell library's `{alias}` module) is not "
                    "supported yet",
                    expr.callee.span,
                )
                return t.UNKNOWN
            # `a::b::f(...)`: a fn of module `a::b`, which `import a::b;` names `b` (no call
            # goes through a longer path)
            imported = "::".join(path[:-1])
            by_alias = f"`{path[-2]}::{path[-1]}(...)`"
            if len(path) > 2 and path[-2] in self.module.imports:
                self.error(
                    "unknown-fn",
                    f"`{expr.callee.text}` is not a fn",
                    expr.callee.span,
                    f"an imported module is named by the last part of its path: call {by_alias}",
                )
                return t.UNKNOWN
            if alias not in self.module.imports:
                # a script (`pellc exec -e`) has no module line: its imports come first
                where = "first" if self.module.module.script else "after the module line"
                self.error(
                    "unknown-name",
                    f"package `{alias}` is not imported"
                    if len(path) == 2
                    else f"module `{imported}` is not imported",
                    expr.callee.span,
                    f"add `import {alias};` {where}"
                    if len(path) == 2
                    else f"add `import {imported};` {where}, and call {by_alias}",
                )
                return t.UNKNOWN
            if len(path) > 2:
                self.error(
                    "unknown-fn",
                    f"`{expr.callee.text}` is not a fn",
                    expr.callee.span,
                    f"a fn of module `{imported}` is called {by_alias}, after `import {imported};`",
                )
                return t.UNKNOWN
            # An Oracle package pellc has no stub for: the call goes out as written, keyword
            # arguments in named notation under the names written.
            for keyword in expr.keywords:
                self.analysis.keyword_names[id(keyword)] = keyword.name
            if expected is None and not as_statement:
                self.error(
                    "needs-annotation",
                    f"`{alias}` has no stub, so the type of `{expr.callee.text}(...)` is unknown",
                    expr.callee.span,
                    "write the type: `let x: number = ...`, or add a @stub module for the package",
                )
                return t.UNKNOWN
            return expected if expected is not None else t.UNIT
        if path == (ut.UT, ut.EXPECT) and ut.is_ut_stub(self):
            return ut.bare_expect(self, expr)
        fn = foreign.fn(name)
        item = foreign.item(name)
        if fn is None or not isinstance(item, ast.Fn):
            for arg in call_values(expr):
                self.expr(arg, None)
            names = [i.name for i in foreign.module.items if isinstance(i, ast.Fn) and i.public]
            close = closest_name(name, names)
            # the fix replaces the fn's name only, the last part of the path written
            written = ast.Span(expr.callee.span.end - len(name), expr.callee.span.end)
            self.error(
                "unknown-fn",
                f"module `{foreign.module.dotted_name}` has no fn `{name}`"
                + (f"; did you mean `{close}`?" if close else ""),
                expr.callee.span,
                fixes=(Fix(written, close),) if close else (),
            )
            return t.UNKNOWN
        if not (item.public or foreign.is_stub):
            from pell.checker import private_item

            for arg in call_values(expr):
                self.expr(arg, None)
            self.diagnostics.append(private_item(foreign, item, expr.callee.span))
            return t.UNKNOWN
        self.analysis.callees[id(expr)] = foreign.fn_plsql(name)
        returns = self.checked_call(expr, fn, expr.callee.text, foreign.is_stub)
        if not foreign.is_stub and not fn.pipelined:
            list_crossings.check_call(self, expr, foreign, name, fn)
        return returns

    def checked_call(
        self, expr: ast.Call, fn: FnInfo, name: str, stub: bool = False
    ) -> t.Type:
        """The arguments of a call to a known fn, positional then keyword (`limit = 10`),
        against its parameters."""
        if fn.pipelined:
            # Oracle, PIPELINED clause: "You query table functions by using the TABLE keyword
            # before the function name in the FROM clause of the query"
            self.error(
                "table-function",
                f"`{name}` is @pipelined: SQL reads its rows, PL/SQL cannot call it",
                expr.callee.span,
                f"select from it in SQL: `for r in sql! {{ select * from table({name}(...)) }}`",
            )
            for arg in call_values(expr):
                self.expr(arg, None)
            return t.UNKNOWN
        params = fn.params
        given: dict[int, ast.Expr] = dict(enumerate(expr.args[: len(params)]))
        if len(expr.args) > len(params):
            required = sum(1 for p in params if p.decl.default is None)
            wanted = (
                f"{len(params)} argument{'s' * (len(params) != 1)}"
                if required == len(params)
                else f"{required} to {len(params)} arguments"
            )
            count = len(expr.args) + len(expr.keywords)
            self.error(
                "arity",
                f"fn `{name}` takes {wanted}, "
                f"but {count} {'was' if count == 1 else 'were'} given",
                expr.span,
                notes=self.declared_here(fn, name),
            )
        names = [p.decl.name for p in params]
        if expr.keywords:
            first = expr.keywords[0].span.start
            later = [a for a in expr.args if a.span.start > first]
            if later:
                self.error(
                    "keyword-argument",
                    "a positional argument cannot follow a keyword argument",
                    later[0].span,
                )
        for keyword in expr.keywords:
            index = names.index(keyword.name) if keyword.name in names else None
            if index is None:
                self.error(
                    "keyword-argument",
                    f"fn `{name}` has no parameter `{keyword.name}`{did_you_mean(keyword.name, names)}",
                    keyword.name_span,
                    notes=self.declared_here(fn, name),
                )
                self.expr(keyword.value, None)
                continue
            if index in given:
                how = "by position and by name" if index < len(expr.args) else "twice"
                self.error(
                    "keyword-argument",
                    f"argument `{keyword.name}` of `{name}` is given {how}",
                    keyword.name_span,
                )
                self.expr(keyword.value, None)
                continue
            given[index] = keyword.value
            # PL/SQL named notation: Pell's `p_` names, an Oracle package's own
            self.analysis.keyword_names[id(keyword)] = (
                keyword.name.lower() if stub else naming.param_name(keyword.name)
            )
        missing = [
            p.decl.name
            for index, p in enumerate(params)
            if index not in given and p.decl.default is None
        ]
        if missing and len(expr.args) <= len(params):
            listed = ", ".join(f"`{m}`" for m in missing)
            self.error(
                "arity",
                f"fn `{name}` is missing argument{'s' * (len(missing) != 1)} {listed}",
                expr.span,
                notes=self.declared_here(fn, name),
            )
        for index, arg in sorted(given.items()):
            param = params[index]
            handed = isinstance(param.type, t.CursorType) and isinstance(arg, ast.Name)
            self.cursor_handoff = "call" if handed else ""
            arg_type = self.expr(arg, param.type)
            self.cursor_handoff = ""
            if not t.assignable(arg_type, param.type) and not self.widens(arg, param.type):
                self.error(
                    "type-mismatch",
                    f"argument `{param.decl.name}` of `{name}` is `{param.type}`, not `{arg_type}`",
                    arg.span,
                    *narrowing_hints(arg_type, param.type),
                    *list_hints(arg_type, param.type, self.variable_name(arg)),
                )
            elif (
                param.decl.mode != "in"
                and not self.widens(arg, param.type)
                and t.narrows(param.type, arg_type)
            ):
                # the fn writes a value of the parameter's type back into the argument
                self.error(
                    "type-mismatch",
                    f"`{param.decl.name}` of `{name}` is `{param.decl.mode} {param.type}`: it "
                    f"writes {quoted_with_article(param.type)} back into "
                    f"{quoted_with_article(arg_type)}",
                    arg.span,
                    "pass a `number` variable, then convert it with `.into::<int>()`",
                )
            if param.decl.mode != "in":
                self.assign_target(arg)
        for arg in expr.args[len(params) :]:
            self.expr(arg, None)
        return fn.returns

    def declared_here(self, fn: FnInfo, name: str) -> tuple[Note, ...]:
        """A note at a fn's declaration, when it is in this file."""
        if fn.module_path != self.module.module.path:
            return ()
        return (Note(f"`{name}` is declared here", fn.decl.name_span),)

    def expr_methodcall(self, expr: ast.MethodCall, expected: t.Type | None) -> t.Type:
        if (
            isinstance(expr.target, ast.Name)
            and expr.target.path == (BULK,)
            and self.lookup(BULK) is None
        ):
            return self.bulk_count(expr)
        as_statement = self.as_statement  # before the target's check resets it
        expect = ut.expectation_of(expr)
        if expect is not None and ut.is_ut_stub(self):
            return ut.check_expectation(self, expr, expect, as_statement)
        target = self.expr(expr.target, None)
        if expr.name == "into":
            return self.conversion(expr, target)
        if expr.name == "to_text":
            return self.to_text(expr, target)
        fields = DATETIME_FIELDS.get(t.family(target) or "")
        if fields is not None:
            for arg in expr.args:
                self.expr(arg, None)
            if expr.name not in fields or expr.args:
                self.error(
                    "unknown-fn",
                    f"{quoted_with_article(target)} has "
                    + ", ".join(f".{f}()" for f in fields)
                    + f", not `.{expr.name}()`",
                    expr.name_span,
                )
                return t.UNKNOWN
            return t.NUMBER
        if isinstance(target, t.UnknownType):
            for arg in expr.args:
                self.expr(arg, None)
            return t.UNKNOWN
        if isinstance(target, t.ObjectType) and target.name in self.module.objects:
            return self.object_method(expr, target, as_statement)
        if target == t.JSON:
            return json.check_method(self, expr, as_statement)
        if isinstance(target, t.ListType):
            method = LIST_METHODS.get(expr.name)
            if method is None:
                self.error(
                    "unknown-fn",
                    f"a list has no method `{expr.name}`{did_you_mean(expr.name, list(LIST_METHODS))}",
                    expr.span,
                    f"lists have {spoken_list(LIST_METHODS)}",
                )
                return t.UNKNOWN
            if len(expr.args) != len(method.params):
                self.error(
                    "arity",
                    f"`.{expr.name}()` takes "
                    + ("no arguments" if not method.params else "one argument"),
                    expr.span,
                )
            if expr.name == "at":
                for arg in expr.args:
                    # a `number` index is checked whole at run time (pell.codegen: no rounding)
                    self.argument(arg, t.INT, expr.name, also=t.NUMBER)
                return target.element
            if expr.name == "append":
                for arg in expr.args:
                    self.appended(expr.target, arg, target.element)
                if not as_statement:
                    self.error(
                        "not-a-statement",
                        "`.append(x)` is a statement: `xs.append(x);`",
                        expr.span,
                    )
                self.assign_target(expr.target)
                return t.UNIT
            for arg in expr.args:
                self.expr(arg, None)
            return method.result
        padded = t.is_numeric(target) and expr.name in PAD_METHODS  # a number as its text
        if t.is_text(target) or isinstance(target, t.SqlValue) or target == t.BYTES or padded:
            kind, methods = ("bytes", BYTES_METHODS) if target == t.BYTES else ("text", TEXT_METHODS)
            method = methods.get(expr.name)
            if method is None:
                self.error(
                    "unknown-fn",
                    f"{kind} has no method `{expr.name}`{did_you_mean(expr.name, list(methods))}",
                    expr.name_span,
                )
                return t.UNKNOWN
            params = method.params
            if len(expr.args) != len(params):
                self.error(
                    "arity",
                    f"`.{expr.name}()` takes {len(params)} argument{'s' * (len(params) != 1)}, "
                    f"but {len(expr.args)} {'was' if len(expr.args) == 1 else 'were'} given",
                    expr.span,
                )
            for arg, param in zip(expr.args, params, strict=False):
                self.argument(arg, param, expr.name)
            return method.result
        self.error(
            "unknown-fn", f"{quoted_with_article(target)} has no method `{expr.name}`", expr.span
        )
        return t.UNKNOWN

    def object_method(
        self, expr: ast.MethodCall, target: t.ObjectType, as_statement: bool
    ) -> t.Type:
        """`m.plus(o)`: a method of the object's type (or of its sealed type)."""
        method = self.module.method(target, expr.name)
        if method is None:
            info = self.module.objects[target.name]
            names = sorted({*info.methods, *self.module.objects.get(target.parent, info).methods})
            for arg in expr.args:
                self.expr(arg, None)
            self.error(
                "unknown-fn",
                f"type `{target.name}` has no method `{expr.name}`{did_you_mean(expr.name, names)}",
                expr.name_span,
            )
            return t.UNKNOWN
        if len(expr.args) != len(method.params):
            self.error(
                "arity",
                f"`{target.name}.{expr.name}()` takes {len(method.params)} "
                f"argument{'s' * (len(method.params) != 1)}, but {len(expr.args)} "
                f"{'was' if len(expr.args) == 1 else 'were'} given",
                expr.span,
                notes=(Note("the method is declared here", method.decl.name_span),),
            )
        for arg, param in zip(expr.args, method.params, strict=False):
            if param.decl.mode != "in":
                self.assign_target(arg)
            self.argument(arg, param.type, expr.name)
        for arg in expr.args[len(method.params) :]:
            self.expr(arg, None)
        if not method.is_function:
            # a MEMBER PROCEDURE's SELF is IN OUT: it is called on a variable
            self.assign_target(expr.target)
            if not as_statement:
                self.error(
                    "not-a-statement",
                    f"`{expr.name}` returns no value: call it as a statement",
                    expr.span,
                )
        return method.returns

    def conversion(self, expr: ast.MethodCall, source: t.Type) -> t.Type:
        """`x.into::<text>()`: a value as text (as interpolation writes it), text as a number
        (TO_NUMBER), a number (or text) as an `int`, rounded to the nearest whole number
        (ROUND), or a value as its own type."""
        for arg in expr.args:
            self.expr(arg, None)
        if len(expr.type_args) != 1 or len(expr.type_args[0].alternatives) != 1 or expr.args:
            self.error(
                "type-mismatch",
                "`.into::<T>()` takes one type and no arguments: `n.into::<text>()`",
                expr.span,
            )
            return t.UNKNOWN
        wanted = self.resolver.resolve(expr.type_args[0].alternatives[0])
        if isinstance(source, t.UnknownType) or isinstance(wanted, t.UnknownType):
            return wanted
        convertible = (
            t.assignable(source, wanted)
            or (t.is_text(wanted) and (t.is_numeric(source) or t.is_temporal(source)))
            or (t.is_numeric(wanted) and (t.is_text(source) or t.is_numeric(source)))
        )
        if not convertible:
            self.error(
                "type-mismatch",
                f"{quoted_with_article(source)} does not convert to `{wanted}`; `.into` turns "
                "numbers, dates and timestamps into text, text into a number, and a number "
                "into an `int` (rounded)",
                expr.span,
                *(
                    ("`\"{b}\"` writes bytes as hex; `utl_raw::cast_to_varchar2(b)` reads them as text",)
                    if source == t.BYTES
                    else ()
                ),
            )
            return t.UNKNOWN
        self.analysis.types[id(expr)] = wanted
        return wanted

    def bulk_count(self, expr: ast.MethodCall) -> t.Type:
        """`bulk.rowcount(i)`, the rows the `i`th statement of the last `forall` that ran
        changed, and `bulk.total()`, those of all its statements: an `int` each."""
        params = BULK_METHODS.get(expr.name)
        for arg in expr.args:
            self.expr(arg, t.INT)
        if params is None:
            self.error(
                "unknown-fn",
                f"`bulk` has no method `{expr.name}`{did_you_mean(expr.name, list(BULK_METHODS))}",
                expr.name_span,
                "`bulk.rowcount(i)` counts the rows of the forall's statement for index i, "
                "`bulk.total()` all of them",
            )
            return t.UNKNOWN
        if len(expr.args) != len(params) or expr.type_args:
            self.error(
                "arity",
                f"`bulk.{expr.name}()` takes "
                + ("one argument, an index of the forall's list" if params else "no arguments"),
                expr.span,
            )
            return t.INT
        for arg in expr.args:
            arg_type = self.analysis.types.get(id(arg), t.UNKNOWN)
            if not t.assignable(arg_type, t.INT):
                self.error(
                    "type-mismatch",
                    f"`bulk.rowcount()` takes an index, an `int`, not "
                    f"{quoted_with_article(arg_type)}",
                    arg.span,
                )
        if not self.forall_seen:
            self.error(
                "unknown-name",
                "`bulk` counts the rows of a `forall`, and none comes before it in this fn",
                expr.target.span,
                "run `forall x in xs { sql! { ... } }` first",
            )
        self.analysis.bulk_counts[id(expr)] = expr.name
        return t.INT

    def to_text(self, expr: ast.MethodCall, source: t.Type) -> t.Type:
        """`x.to_text()`: any value interpolation takes, as text the way interpolation writes it
        (pell.codegen.text_forms)."""
        for arg in expr.args:
            self.expr(arg, None)
        if expr.args or expr.type_args:
            self.error(
                "arity",
                "`.to_text()` takes no arguments and no type: `n.to_text()`",
                expr.span,
            )
        elif not isinstance(source, t.Scalar | t.SqlValue | t.UnknownType | t.NullType):
            self.error(
                "type-mismatch",
                f"{quoted_with_article(source)} has no `.to_text()`: numbers, text, booleans, "
                "dates, timestamps and intervals have",
                expr.span,
                "convert its "
                + ("elements" if isinstance(source, t.ListType) else "fields")
                + " one by one",
            )
        return t.TEXT

    def argument(
        self, arg: ast.Expr, param: t.Type, method: str, also: t.Type | None = None
    ) -> None:
        """A method's argument, against the type it takes (or `also`)."""
        arg_type = self.expr(arg, param)
        if arg_type != also and not t.assignable(arg_type, param):
            self.error(
                "type-mismatch",
                f"`.{method}()` takes {quoted_with_article(param)} here, not {quoted_with_article(arg_type)}",
                arg.span,
                *narrowing_hints(arg_type, param),
            )

    def appended(self, items: ast.Expr, arg: ast.Expr, element: t.Type) -> None:
        """`items.append(arg)`. A whole list (whole_let) appended a `number` widens to a
        `list<number>`; a query's value, or an Oracle package's result, is wanted as a
        `number` there, as for a whole `int` local (BodyChecker.stmt_assign)."""
        whole = self.whole_let(items) is not None
        arg_type = self.expr(arg, t.NUMBER if whole else element)
        if self.widens(items, t.ListType(arg_type)) or t.assignable(arg_type, element):
            return
        name = self.variable_name(items)
        hints = narrowing_hints(arg_type, element)
        if hints and name is not None:
            hints = (
                "a `number` may hold a fraction, which a `list<int>` cannot: convert it with "
                f"`.into::<int>()` (rounds to the nearest whole number), or declare `{name}` a "
                "`list<number>`",
            )
        self.error(
            "type-mismatch",
            f"`.append()` takes {quoted_with_article(element)} here, not "
            f"{quoted_with_article(arg_type)}",
            arg.span,
            *hints,
        )

    def foreign_record_list(self, record: t.RecordType, field: str, span: ast.Span) -> None:
        """A list field of another module's record holds that package's list type, which the
        copies between modules (pell.checker.list_crossings) do not reach yet. (PostgreSQL's
        arrays are one type everywhere.)"""
        if self.target == "postgres":
            return
        self.error(
            "list-between-modules",
            f"field `{field}` of `{record}` is a list of its own module's list type: reading or "
            "filling it from here is not supported yet",
            span,
            "pass the list through a fn of that module, which copies it",
        )

    def expr_recordlit(self, expr: ast.RecordLit, expected: t.Type | None) -> t.Type:
        if "::" in expr.type_name:
            found = self.resolver.foreign_item(expr.type_name, expr.span, "record")
            if found is None or not isinstance(found[1], ast.Record):
                if found is not None:
                    self.error("unknown-type", f"`{expr.type_name}` is not a record", expr.span)
                for init in expr.fields:
                    self.expr(init.value, None)
                return t.UNKNOWN
            record_type = found[0].record_type(found[1].name)
            fields = self.module.record_info(record_type).fields
            self.field_inits(expr.type_name, fields, expr.fields, expr.span)
            for init in expr.fields:
                if isinstance(fields.get(init.name), t.ListType):
                    self.foreign_record_list(record_type, init.name, init.value.span)
            return record_type
        if expr.type_name in self.module.errors:
            self.error(
                "type-mismatch",
                f"`{expr.type_name}` is an error; raise it with `Err({expr.type_name} {{ ... }})`",
                expr.span,
            )
            for init in expr.fields:
                self.expr(init.value, None)
            return t.UNKNOWN
        if expr.type_name in self.module.objects:
            info = self.module.objects[expr.type_name]
            if info.cases:
                self.error(
                    "type-mismatch",
                    f"sealed type `{expr.type_name}` has no values of its own: build one of its "
                    f"cases ({', '.join(f'`{c}`' for c in info.cases)})",
                    expr.span,
                )
                for init in expr.fields:
                    self.expr(init.value, None)
                return t.UNKNOWN
            self.field_inits(expr.type_name, info.fields, expr.fields, expr.span)
            return info.type
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
            if not t.assignable(value_type, field_type) and not self.widens(init.value, field_type):
                self.error(
                    "type-mismatch",
                    f"field `{init.name}` of `{type_name}` is `{field_type}`, not `{value_type}`",
                    init.value.span,
                    *narrowing_hints(value_type, field_type),
                    *list_hints(value_type, field_type, self.variable_name(init.value)),
                )
        missing = [name for name in fields if name not in given]
        if missing:
            listed = ", ".join(f"`{name}`" for name in missing)
            self.error(
                "unknown-field",
                f"`{type_name}` literal is missing field{'s' * (len(missing) > 1)} {listed}",
                span,
            )

    def unordered_object(self, left: t.Type, right: t.Type) -> str | None:
        """The object type of a comparison of two objects, when it has no `map fn`."""
        if not isinstance(left, t.ObjectType) or not isinstance(right, t.ObjectType):
            return None
        info = self.module.objects.get(left.parent or left.name)
        if info is None or info.map_method:
            return None
        return info.type.name

    def expr_match(self, expr: ast.Match, expected: t.Type | None) -> t.Type:
        return check_match(self, expr, expected, None)

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
        # the right side of `&&`/`||` runs only when the left does not decide: what the
        # lowering computes before the expression (a match's stored value) may not stand there
        lazy = expr.op in ("&&", "||")
        self.lazy_operands += lazy
        try:
            right = self.expr(expr.right, None)
        finally:
            self.lazy_operands -= lazy
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
            elif (unordered := self.unordered_object(left, right)) is not None:
                # PL/SQL compares two objects through the type's MAP (or ORDER) method only
                # (Object-Relational Developer's Guide, "Map Methods"; without one, PLS-00526)
                self.error(
                    "type-mismatch",
                    f"values of `{unordered}` compare only through its `map fn`, and it has none",
                    expr.span,
                    f"give `{unordered}` a `map fn key() -> number {{ ... }}`, or compare fields",
                )
            elif left == right == t.JSON:
                # two texts of one JSON value may differ (member order, spacing), and Oracle
                # compares CLOBs as text
                self.error(
                    "type-mismatch",
                    f"json values do not compare with `{op}`: their texts may differ for one value",
                    expr.span,
                    "compare members: `json::get_text(a, \"$.id\") == json::get_text(b, \"$.id\")`",
                )
            elif t.BYTES in (left, right) and op not in ("==", "!="):
                # bytes are equal or not; an order of binary values is not one Pell promises
                self.error(
                    "type-mismatch",
                    f"`bytes` compare with `==` and `!=`, not `{op}`",
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
        if {t.family(left), t.family(right)} & {"date", "timestamp", "interval"}:
            result = t.datetime_arithmetic(op, left, right)
            if result is None:
                self.error(
                    "type-mismatch",
                    f"`{op}` does not take {quoted_with_article(left)} and "
                    f"{quoted_with_article(right)}",
                    expr.span,
                    "dates take days (numbers) or intervals; timestamps take intervals: "
                    "`ts + numtodsinterval(5, \"MINUTE\")`",
                )
                return t.UNKNOWN
            return result
        if t.is_numeric(left) and t.is_numeric(right):
            if op in ("/", "*"):
                # `*` of two ints is computed as a NUMBER (codegen): a product leaves
                # PLS_INTEGER's 32 bits long before a sum does, and the overflow raises
                # ORA-01426 even when the result goes into a NUMBER (PL/SQL Language Reference,
                # "PLS_INTEGER and BINARY_INTEGER Data Types"). `+`, `-` and `%` of ints stay
                # ints: past the range they raise that error, they never give a wrong value.
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
        elif isinstance(value, ast.Name) and (
            len(value.path) == 1 or (len(value.path) == 2 and value.path[0] in self.module.imports)
        ):
            name, inits = "::".join(value.path), ()
        else:
            self.error(
                "type-mismatch", "`Err(...)` takes an error: `Err(NotFound { id })`", expr.span
            )
            return
        if "::" in name:
            found = self.resolver.foreign_item(name, value.span, "error")
            if found is None:
                return
            if not isinstance(found[1], ast.ErrorDecl):
                self.error("unknown-type", f"`{name}` is not an error", value.span)
                return
        decl = self.module.errors.get(name)
        if decl is None and "::" not in name:
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
        self.field_inits(name, self.module.error_info(name)[2], inits, value.span)

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
            if element == t.INT and any(
                t.narrows(x, t.INT) or isinstance(x, t.SqlValue) for x in types
            ):
                element = t.NUMBER  # [1, 2.5] holds numbers, and so may [1, row.price]
        for item, item_type in zip(expr.items, types, strict=True):
            if not t.assignable(item_type, element):
                self.error(
                    "type-mismatch",
                    f"a list of `{element}` cannot hold {quoted_with_article(item_type)}",
                    item.span,
                    *narrowing_hints(item_type, element),
                )
        if not isinstance(element, t.Scalar | t.RecordType | t.UnknownType):
            innermost: t.Type = element
            while isinstance(innermost, t.ListType):
                innermost = innermost.element
            if not isinstance(innermost, t.UnknownType):  # else: reported inside already
                self.error("unsupported", f"lists of `{element}` are not supported", expr.span)
            return t.UNKNOWN  # reported once, not again by each enclosing list
        return t.ListType(element)

    def whole_let(self, target: ast.Expr) -> int | None:
        """The `let` of `target` when it is a local without a type whose values are all
        `int`s so far (pell.checker.bodies.check_fn_body); None for any other target."""
        symbol = self.analysis.names.get(id(target)) if isinstance(target, ast.Name) else None
        return self.whole_locals.get(id(symbol)) if symbol is not None else None

    def widens(self, local: ast.Expr, other: t.Type) -> bool:
        """Is `local` a whole local (whole_let) that meets a value that may hold a fraction,
        a `number` or a SQL value: an `int` one given one, a list one given, passed as or
        appended a list of them? Then it is a `number` (a `list<number>`: the two list types
        are PL/SQL collection types of their own, and neither converts to the other);
        check_fn_body checks the body again with it widened, and this is no error. Callers ask
        only where `other` does not fit the local as it is, so no other use widens it."""
        let = self.whole_let(local)
        if let is None:
            return False
        value = other
        if isinstance(self.analysis.names[id(local)].type, t.ListType):
            if not isinstance(other, t.ListType):
                return False
            value = other.element
        if not (t.narrows(value, t.INT) or isinstance(value, t.SqlValue)):
            return False
        self.widen.add(let)
        return True

    def variable_name(self, expr: ast.Expr) -> str | None:
        """The name of the local or parameter `expr` is, for a hint to declare it otherwise."""
        symbol = self.analysis.names.get(id(expr)) if isinstance(expr, ast.Name) else None
        return symbol.name if symbol is not None and symbol.kind in ("local", "param") else None

    def assign_target(self, target: ast.Expr) -> t.Type:
        if isinstance(target, ast.Name) and len(target.path) == 1:
            symbol = self.resolve_name(target)
            if symbol is None:
                return t.UNKNOWN
            if not symbol.mutable and symbol.plsql == "SELF":
                self.error(
                    "not-assignable",
                    "a method that returns a value cannot change `self` (its SELF is IN)",
                    target.span,
                    "change it in a method without a result (a MEMBER PROCEDURE)",
                )
            elif not symbol.mutable:
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


def narrowing_hints(value: t.Type, target: t.Type) -> tuple[str, ...]:
    """The hint for a `number` where an `int` is wanted: the explicit conversion."""
    if not t.narrows(value, target):
        return ()
    return (
        "a `number` may hold a fraction, which an `int` cannot: convert it with "
        "`.into::<int>()` (rounds to the nearest whole number), or make the target a `number`",
    )


def list_hints(
    value: t.Type, target: t.Type, value_name: str | None, target_name: str | None = None
) -> tuple[str, ...]:
    """The hint for a `list<int>` where a `list<number>` is wanted, or the other way round,
    when the side that is a `list<int>` is a variable of the fn: declare it a
    `list<number>`. They are two PL/SQL collection types (t_int_list, t_number_list), and an
    argument of the one is refused where the other is declared."""
    if not (isinstance(value, t.ListType) and isinstance(target, t.ListType)):
        return ()
    if {value.element, target.element} != {t.INT, t.NUMBER}:
        return ()
    name = value_name if value.element == t.INT else target_name
    if name is None:
        return ()
    return (
        f"`list<int>` and `list<number>` are two PL/SQL collection types, and neither "
        f"converts to the other: declare `{name}` a `list<number>`",
    )


def _is_sql_comparable(type_: t.Type) -> bool:
    return not isinstance(type_, t.RecordType | t.TableRow | t.ListType | t.UnitType)


# One entry per class of ast.Expr but the two `expr` handles before it (Propagate, and SqlBlock
# through sql_chain); a test checks that it covers the union.
EXPRESSION_CHECKS: dict[
    type[ast.Node], Callable[[ExpressionChecker, Any, t.Type | None], t.Type]
] = {
    ast.NumberLit: ExpressionChecker.expr_numberlit,
    ast.StringLit: ExpressionChecker.expr_stringlit,
    ast.BoolLit: ExpressionChecker.expr_boollit,
    ast.NoneLit: ExpressionChecker.expr_nonelit,
    ast.UnitLit: ExpressionChecker.expr_unitlit,
    ast.RegexLit: ExpressionChecker.expr_regexlit,
    ast.JqBlock: ExpressionChecker.expr_jqblock,
    ast.Name: ExpressionChecker.expr_name,
    ast.FieldAccess: ExpressionChecker.expr_fieldaccess,
    ast.Call: ExpressionChecker.expr_call,
    ast.MethodCall: ExpressionChecker.expr_methodcall,
    ast.RecordLit: ExpressionChecker.expr_recordlit,
    ast.Match: ExpressionChecker.expr_match,
    ast.Unary: ExpressionChecker.expr_unary,
    ast.Binary: ExpressionChecker.expr_binary,
    ast.Wrap: ExpressionChecker.expr_wrap,
    ast.ListLit: ExpressionChecker.expr_listlit,
}


def call_values(expr: ast.Call) -> list[ast.Expr]:
    """A call's argument expressions, positional and keyword."""
    return [*expr.args, *(k.value for k in expr.keywords)]
