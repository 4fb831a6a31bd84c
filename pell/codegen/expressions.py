"""Expressions -> PL/SQL text, one small `<node>_sql` method per node class.

Each lowered expression comes with its PL/SQL precedence, so parentheses are
written only where PL/SQL would otherwise group differently.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from pell import ast, naming
from pell.checker import builtins, regex, ut
from pell.checker import types as t
from pell.checker.methods import (
    BYTES_METHODS,
    LIST_METHODS,
    PAD_METHODS,
    TEXT_METHODS,
    nonempty_literal,
)
from pell.checker.model import CheckedModule, FnAnalysis, ListCopy
from pell.checker.sql_typing import sql_chain
from pell.codegen import json_lowering
from pell.codegen.text_forms import NUMBER_FROM_TEXT, list_text_function, oracle_text, text_form
from pell.precedence import (
    ADDITIVE,
    AND,
    ATOM,
    COMPARISON,
    MULTIPLICATIVE,
    NOT,
    OR,
    UNARY,
    Lowered,
    wrap,
)

# Pell binary operator -> (PL/SQL operator, precedence)
BINARY_OPERATORS: dict[str, tuple[str, int]] = {
    "||": ("OR", OR),
    "&&": ("AND", AND),
    "==": ("=", COMPARISON),
    "!=": ("<>", COMPARISON),
    "<": ("<", COMPARISON),
    "<=": ("<=", COMPARISON),
    ">": (">", COMPARISON),
    ">=": (">=", COMPARISON),
    "+": ("+", ADDITIVE),
    "-": ("-", ADDITIVE),
    "*": ("*", MULTIPLICATIVE),
    "/": ("/", MULTIPLICATIVE),
}

# Control characters get CHR() instead of a raw character inside a literal.
_CONTROL = re.compile(r"[\x00-\x1f]")
_CONTROL_SPLIT = re.compile(r"([^\x00-\x1f]*)([\x00-\x1f]?)")


def quote_text(value: str) -> str:
    """A PL/SQL text literal: `'` doubled; newlines and tabs as CHR() so the literal stays on one line."""
    if _CONTROL.search(value) is None:
        return "'" + value.replace("'", "''") + "'"
    pieces: list[str] = []
    for text, control in _CONTROL_SPLIT.findall(value):
        if text:
            pieces.append("'" + text.replace("'", "''") + "'")
        if control:
            pieces.append(f"CHR({ord(control)})")
    return " || ".join(pieces)


def _empty_text(expr: ast.Expr | None) -> bool:
    """`""`: NULL in Oracle ("a character value with a length of zero": SQL Language Reference,
    "Nulls")."""
    return isinstance(expr, ast.StringLit) and not any(expr.parts)


def int_product(expr: ast.Binary, type_of: Callable[[ast.Expr], t.Type]) -> bool:
    """`a * b` of two ints: the checker types it `number`, so it is computed as one. Two
    PLS_INTEGER operands would overflow past 2,147,483,647 with ORA-01426, "even if you assign
    the result to a NUMBER data type" (PL/SQL Language Reference, "PLS_INTEGER and
    BINARY_INTEGER Data Types", whose fix is a NUMBER-typed operand). Integer literals are
    multiplied as PLS_INTEGERs too (AskTom, "Datatype Number results in Numeric overflow
    although value is small enough": `1024 * 1024 * 1024 * 2` raises ORA-01426), so every
    product of two ints is cast."""
    return expr.op == "*" and type_of(expr.left) == t.INT and type_of(expr.right) == t.INT


def int_quotient(expr: ast.Binary, type_of: Callable[[ast.Expr], t.Type]) -> bool:
    """`a / b` of two ints: the checker types it `number` (README, "Numbers"), and the
    PostgreSQL lowering casts an operand, as integer division there truncates
    (pell.postgres.lower)."""
    return expr.op == "/" and type_of(expr.left) == t.INT and type_of(expr.right) == t.INT


class ExpressionLowerer:
    """Lowers expressions of one fn. Record literals and SQL results that need a statement of
    their own go through `prelude_value`, which subclasses implement."""

    def __init__(self, checked: CheckedModule, analysis: FnAnalysis) -> None:
        self.checked = checked
        self.analysis = analysis
        # Paths of the calls lowered since the last statement was emitted (the statement tree
        # records which calls each statement makes).
        self.calls: list[tuple[str, ...]] = []
        # The package's own helper functions the lowered expressions call (`pell_split`).
        self.helpers: set[str] = set()
        # The package's functions that copy a list into or out of another package's list type
        # (pell.checker.list_crossings), by name.
        self.list_copies: dict[str, ListCopy] = {}

    def type_of(self, expr: ast.Expr) -> t.Type:
        return self.analysis.types.get(id(expr), t.UNKNOWN)

    def lower(self, expr: ast.Expr) -> str:
        return self.lower_with_precedence(expr)[0]

    def lower_with_precedence(self, expr: ast.Expr) -> Lowered:
        return EXPRESSION_SQL[type(expr)](self, expr)

    def prelude_value(self, expr: ast.Expr) -> str:
        """Store `expr` with statements of its own and return the variable holding it."""
        raise NotImplementedError

    # -- literals

    def numberlit_sql(self, expr: ast.NumberLit) -> Lowered:
        return expr.text, ATOM

    def stringlit_sql(self, expr: ast.StringLit) -> Lowered:
        pieces: list[Lowered] = []
        joined = sum(1 for part in expr.parts if part != "") > 1
        for part in expr.parts:
            if isinstance(part, str):
                if part:
                    quoted = quote_text(part)
                    pieces.append((quoted, ADDITIVE if "||" in quoted else ATOM))
            else:
                pieces.append(self.as_text(part, joined))
        if not pieces:
            return "''", ATOM
        if len(pieces) == 1:
            return pieces[0]
        return " || ".join(
            wrap(piece, ADDITIVE + 1) if i else wrap(piece, ADDITIVE)
            for i, piece in enumerate(pieces)
        ), ADDITIVE

    def as_text(self, expr: ast.Expr, joined: bool = False) -> Lowered:
        """A value as text (interpolation, `.to_text()`, `+` on text): text as is, any other
        scalar in its session-free form (pell.codegen.text_forms). `joined`: an operand of
        `||`, which converts a value of any other type itself."""
        type_ = self.type_of(expr)
        lowered = self.lower_with_precedence(expr)
        if t.is_text(type_):
            return lowered
        if isinstance(type_, t.NullType):
            # no value is no text; TO_CHAR(NULL) would leave PL/SQL to choose among TO_CHAR's
            # overloads
            return "NULL", ATOM
        if isinstance(type_, t.ListType) and isinstance(type_.element, t.Scalar):
            self.helpers.add(list_text_function(type_.element))  # pell.codegen.lower declares it
            element_form = text_form(type_.element)
            if element_form is not None and element_form.oracle_function:
                self.helpers.add(element_form.oracle_function)  # what it calls
            return f"{list_text_function(type_.element)}({lowered[0]})", ATOM
        form = text_form(type_)
        if form is None:
            # a SQL value: its type is the database's, and so is its text, by the session's
            # defaults. `||` concatenates character strings (SQL Language Reference,
            # Concatenation Operator) and converts any other operand implicitly, by the same
            # defaults ("Implicit Data Conversion"): a joined one, often text already, needs
            # no TO_CHAR
            return lowered if joined else (f"TO_CHAR({lowered[0]})", ATOM)
        if form.oracle_function:
            self.helpers.add(form.oracle_function)
        return oracle_text(form, lowered), ATOM

    def boollit_sql(self, expr: ast.BoolLit) -> Lowered:
        return ("TRUE" if expr.value else "FALSE"), ATOM

    def nonelit_sql(self, expr: ast.NoneLit) -> Lowered:
        return "NULL", ATOM

    def unitlit_sql(self, expr: ast.UnitLit) -> Lowered:
        return "NULL", ATOM  # `()` only stands where nothing is returned; the checker sees to it

    def regexlit_sql(self, expr: ast.RegexLit) -> Lowered:
        return quote_text(regex.pattern_text(expr)), ATOM  # only as a `re::` fn's pattern

    # -- names

    def name_sql(self, expr: ast.Name) -> Lowered:
        builtin = self.analysis.builtins.get(id(expr))
        if builtin is not None:
            return builtins.lower(builtin, [])  # `sysdate`: SYSDATE
        return self.analysis.names[id(expr)].plsql, ATOM

    def fieldaccess_sql(self, expr: ast.FieldAccess) -> Lowered:
        sequence = self.analysis.sequences.get(id(expr))
        # "sequence_name.NEXTVAL / CURRVAL" may stand in a PL/SQL expression (PL/SQL Language
        # Reference, "CURRVAL and NEXTVAL in PL/SQL", since 11g)
        if sequence is not None:
            return sequence, ATOM
        target = wrap(self.lower_with_precedence(expr.target), ATOM)
        if isinstance(self.type_of(expr.target), t.SqlRow | t.TableRow):
            return f"{target}.{expr.name}", ATOM  # a column of the query or table: as written
        return f"{target}.{naming.field_name(expr.name)}", ATOM

    # -- calls

    def call_sql(self, expr: ast.Call) -> Lowered:
        builtin = self.analysis.builtins.get(id(expr))
        if builtin is not None:  # Oracle's own function: no call of Pell code to record
            if builtins.BY_PLSQL[builtin].form == "helper":  # or the package's, for it
                self.helpers.add(builtin)
            return builtins.lower(builtin, self.builtin_args(builtin, expr.args))
        if id(expr) in self.analysis.captures:
            return self.prelude_value(expr), ATOM  # filled field by field
        regex_fn = self.analysis.regex_calls.get(id(expr))
        if regex_fn is not None:
            return self.regex_call_sql(regex_fn, expr.args)
        json_call = self.analysis.json_calls.get(id(expr))
        if json_call is not None:
            return json_lowering.call_sql(self, expr, json_call)
        index = self.analysis.list_indexes.get(id(expr))
        if index is not None:  # `xs(1)`: `xs.at(1)`
            return self.lower_with_precedence(index)
        path = expr.callee.path
        self.calls.append(path)
        callee = self.analysis.callees.get(id(expr)) or (
            naming.fn_name(path[0]) if len(path) == 1 else ".".join(path)
        )
        lowered = [self.copied_argument(arg) for arg in expr.args]
        lowered += [
            f"{self.analysis.keyword_names[id(k)]} => {self.copied_argument(k.value)}"
            for k in expr.keywords
        ]
        call = f"{callee}({', '.join(lowered)})" if lowered else callee
        result = self.analysis.list_results.get(id(expr))
        if result is not None:  # another package's list, copied into the caller's own type
            self.list_copies[result.function] = result
            return f"{result.function}({call})", ATOM
        return call, ATOM

    def copied_argument(self, arg: ast.Expr) -> str:
        """An argument; a list passed to another package's fn, copied into its list type."""
        copy = self.analysis.list_arguments.get(id(arg))
        if copy is None:
            return self.lower(arg)
        self.list_copies[copy.function] = copy
        return f"{copy.function}({self.lower(arg)})"

    def regex_call_sql(self, name: str, args: Sequence[ast.Expr]) -> Lowered:
        """`re::name(args)`: Oracle's REGEXP_* functions (pell.checker.regex)."""
        lowered = [
            self.literal_replacement(arg)
            if name == "replace_all" and index == 2
            else self.lower(arg)
            for index, arg in enumerate(args)
        ]
        result, helper = regex.lower(name, lowered)
        if helper is not None:
            self.helpers.add(helper)
        return result

    def literal_replacement(self, arg: ast.Expr) -> str:
        """`re::replace_all`'s replacement, taken as it is: REGEXP_REPLACE reads `\\n` in it as a
        backreference and `\\\\` as one backslash (SQL Language Reference, REGEXP_REPLACE:
        replace_string), so every backslash is doubled; in the literal when it is one."""
        if isinstance(arg, ast.StringLit) and all(isinstance(p, str) for p in arg.parts):
            return quote_text("".join(str(p) for p in arg.parts).replace("\\", "\\\\"))
        return f"REPLACE({self.lower(arg)}, '\\', '\\\\')"

    def builtin_args(self, plsql: str, args: Sequence[ast.Expr]) -> list[Lowered]:
        """A builtin's arguments; a number where it takes text is text as interpolation writes
        it (Oracle's implicit conversion would follow the session's NLS settings)."""
        builtin = builtins.BY_PLSQL[plsql]
        return [
            self.as_text(arg)
            if builtin.kind(index) == "text" and t.family(self.type_of(arg)) == "numeric"
            else self.lower_with_precedence(arg)
            for index, arg in enumerate(args)
        ]

    def methodcall_sql(self, expr: ast.MethodCall) -> Lowered:
        if id(expr) in self.analysis.ut_expectations:
            expect = expr.target
            assert isinstance(expect, ast.Call)
            message = self.lower(expect.args[1]) if len(expect.args) > 1 else None
            call = ut.lower_expectation(
                self.lower(expect.args[0]), message, expr.name, [self.lower(a) for a in expr.args]
            )
            return call, ATOM
        counted = self.analysis.bulk_counts.get(id(expr))
        if counted == "total":
            return naming.BULK_TOTAL, ATOM
        if counted == "rowcount":
            return f"{naming.BULK_ROWS}({self.lower(expr.args[0])})", ATOM
        if sql_chain(expr) is not None:
            return self.prelude_value(expr), ATOM
        if expr.name == "into":
            wanted = self.type_of(expr)
            source = self.type_of(expr.target)
            if t.is_text(wanted) and not t.is_text(source):
                return self.as_text(expr.target)
            if t.is_numeric(wanted) and t.is_text(source):
                self.helpers.add(NUMBER_FROM_TEXT.oracle_function)
                number = oracle_text(NUMBER_FROM_TEXT, self.lower_with_precedence(expr.target))
                return (f"ROUND({number})" if wanted == t.INT else number), ATOM
            if wanted == t.INT and source != t.INT:
                # said, not left to the assignment: ROUND(n) rounds half away from zero
                # (SQL Language Reference, ROUND (number)); too large for an int, the
                # assignment raises an error
                return f"ROUND({self.lower(expr.target)})", ATOM
            return self.lower_with_precedence(expr.target)  # already of that type
        if expr.name == "to_text":
            return self.as_text(expr.target)
        if id(expr) in self.analysis.json_calls:
            return json_lowering.method_sql(self, expr)
        if t.family(self.type_of(expr.target)) in ("date", "timestamp", "interval"):
            return f"EXTRACT({expr.name.upper()} FROM {self.lower(expr.target)})", ATOM
        if isinstance(self.type_of(expr.target), t.ObjectType):
            # a member method; empty parentheses, which SQL needs and PL/SQL takes
            target_sql = wrap(self.lower_with_precedence(expr.target), ATOM)
            arguments = ", ".join(self.lower(arg) for arg in expr.args)
            return f"{target_sql}.{naming.fn_name(expr.name)}({arguments})", ATOM
        target_type = self.type_of(expr.target)
        if t.is_numeric(target_type) and expr.name in PAD_METHODS:
            target = self.as_text(expr.target)  # padded as interpolation writes it
        else:
            target = self.lower_with_precedence(expr.target)
        args = [self.lower(arg) for arg in expr.args]
        if expr.name == "at" and args and self.type_of(expr.args[0]) == t.NUMBER:
            # a `number` index: VALUE_ERROR for a fraction, which the PLS_INTEGER subscript
            # would otherwise round silently
            self.helpers.add(json_lowering.WHOLE_HELPER)
            args = [f"{json_lowering.WHOLE_HELPER}({args[0]})"]
        methods = (
            LIST_METHODS
            if isinstance(target_type, t.ListType)
            else BYTES_METHODS
            if target_type == t.BYTES
            else TEXT_METHODS
        )
        if expr.name not in methods or expr.name == "append":  # append: a statement
            raise NotImplementedError(f"method .{expr.name}()")
        method = methods[expr.name]
        if method.helper is not None:
            self.helpers.add(method.helper)
        return method.lower(target, args, bool(expr.args) and nonempty_literal(expr.args[0]))

    # -- operators

    def unary_sql(self, expr: ast.Unary) -> Lowered:
        inner = expr.operand
        if isinstance(inner, ast.Unary) and inner.op == expr.op and expr.op in ("-", "!"):
            # `- -x` is x and `!!b` is b (NULL stays NULL): no parentheses nested per sign
            return self.lower_with_precedence(inner.operand)
        operand = self.lower_with_precedence(expr.operand)
        if expr.op == "!":
            # NOT binds looser than `=` in PL/SQL; parenthesise a comparison for the reader.
            return f"NOT {wrap(operand, COMPARISON + 1)}", NOT
        text = wrap(operand, UNARY)
        # `--` would start a comment
        return ("-" + (f"({text})" if text.startswith("-") else text)), UNARY

    def binary_sql(self, expr: ast.Binary) -> Lowered:
        left = self.lower_with_precedence(expr.left)
        right = self.lower_with_precedence(expr.right)
        if expr.op == "%":
            return f"MOD({left[0]}, {right[0]})", ATOM
        if expr.op == "+" and t.is_text(self.type_of(expr)):
            return (
                f"{wrap(self.as_text(expr.left, True), ADDITIVE)} || "
                f"{wrap(self.as_text(expr.right, True), ADDITIVE + 1)}",
                ADDITIVE,
            )
        if expr.op in ("==", "!=") and (
            isinstance(expr.left, ast.NoneLit) or isinstance(expr.right, ast.NoneLit)
        ):
            # `= NULL` is never true in SQL or PL/SQL: a comparison with None is IS [NOT] NULL.
            other = right if isinstance(expr.left, ast.NoneLit) else left
            test = "IS NULL" if expr.op == "==" else "IS NOT NULL"
            return f"{wrap(other, ADDITIVE)} {test}", COMPARISON
        if int_product(expr, self.type_of):
            left = f"CAST({left[0]} AS NUMBER)", ATOM
        operator, precedence = BINARY_OPERATORS[expr.op]
        # Comparisons do not chain in PL/SQL: parenthesise a comparison on either side.
        left_minimum = precedence + 1 if precedence == COMPARISON else precedence
        return f"{wrap(left, left_minimum)} {operator} {wrap(right, precedence + 1)}", precedence

    # -- values that need statements

    def wrap_sql(self, expr: ast.Wrap) -> Lowered:
        assert expr.value is not None, "Ok() has no value to lower"
        return self.lower_with_precedence(expr.value)

    def propagate_sql(self, expr: ast.Propagate) -> Lowered:
        if id(expr) in self.analysis.not_found:
            return self.prelude_value(expr), ATOM  # the NotFound mapping needs a block
        return self.lower_with_precedence(expr.operand)

    def recordlit_sql(self, expr: ast.RecordLit) -> Lowered:
        object_type = self.type_of(expr)
        if isinstance(object_type, t.ObjectType):
            return self.constructor(expr, object_type), ATOM
        return self.prelude_value(expr), ATOM

    def constructor(self, expr: ast.RecordLit, object_type: t.ObjectType) -> str:
        """`Money { amount: a, currency: c }`: the type's constructor, its attributes in order
        (a sealed type's first; the name of the case when it has none of its own)."""
        info = self.checked.objects[object_type.name]
        values = {init.name: init.value for init in expr.fields}
        arguments = [self.lower(values[name]) for name in info.fields if name in values]
        parent = self.checked.objects.get(object_type.parent)
        if parent is not None and parent.tagged:
            arguments.insert(0, quote_text(object_type.name))
        return f"{object_type.plsql}({', '.join(arguments)})"

    def match_subject(self, expr: ast.Match) -> str:
        """The PL/SQL value a `match`'s arms test (stored first when it is computed)."""
        raise NotImplementedError

    def pattern_condition(self, pattern: ast.Pattern, subject: str) -> str | None:
        """The condition a value meets when `pattern` matches it; None for `_`."""
        if pattern.kind == "wildcard":
            return None
        if pattern.kind == "none":
            return f"{subject} IS NULL"
        if pattern.kind == "some":
            return f"{subject} IS NOT NULL"
        if pattern.kind == "case":
            # SQL Language Reference, "IS OF type Condition": true when the value's most
            # specific type is the case's (a case has no subtypes: UNDER types are FINAL)
            return f"{subject} IS OF ({self.checked.objects[pattern.case].type.plsql})"
        assert pattern.value is not None
        if _empty_text(pattern.value):
            return f"{subject} IS NULL"  # Oracle's '' is NULL, which `=` never matches
        return f"{subject} = {wrap(self.lower_with_precedence(pattern.value), COMPARISON + 1)}"

    def arm_condition(self, arm: ast.MatchArm, subject: str) -> str | None:
        """When an arm runs: one of its patterns matches, and its guard holds; None: always."""
        conditions = [self.pattern_condition(p, subject) for p in arm.patterns]
        matched = (
            None
            if None in conditions
            else " OR ".join(c for c in conditions if c is not None)
        )
        if arm.guard is None:
            return matched
        guard = self.lower_with_precedence(arm.guard)
        if matched is None:
            return guard[0]
        left = f"({matched})" if len(conditions) > 1 else matched
        return f"{left} AND {wrap(guard, AND + 1)}"

    def match_sql(self, expr: ast.Match) -> Lowered:
        """A `match` that gives a value: a CASE expression, simple when every pattern is a
        value (`CASE x WHEN 0 THEN ... END`), searched otherwise; without a `_` arm no ELSE,
        which gives NULL (PL/SQL Language Reference, "CASE Expressions")."""
        subject = self.match_subject(expr)
        simple = all(
            arm.guard is None
            and all(
                p.kind == "wildcard" or (p.kind == "value" and not _empty_text(p.value))
                for p in arm.patterns
            )
            for arm in expr.arms
        )
        whens: list[str] = []
        otherwise = ""
        for arm in expr.arms:
            assert not isinstance(arm.body, ast.Block)  # the checker refuses blocks here
            value = self.lower(arm.body)
            condition = self.arm_condition(arm, subject)
            if condition is None:
                otherwise = f" ELSE {value}"
                break
            if simple:
                whens += [
                    f" WHEN {self.lower(p.value)} THEN {value}"
                    for p in arm.patterns
                    if p.value is not None
                ]
            else:
                whens.append(f" WHEN {condition} THEN {value}")
        head = f"CASE {subject}" if simple else "CASE"
        return f"{head}{''.join(whens)}{otherwise} END", ATOM

    def listlit_sql(self, expr: ast.ListLit) -> Lowered:
        return self.prelude_value(expr), ATOM

    def sqlblock_sql(self, expr: ast.SqlBlock) -> Lowered:
        return self.prelude_value(expr), ATOM

    def jqblock_sql(self, expr: ast.JqBlock) -> Lowered:
        # the checker refuses a `jq! { }` without a terminator; chains go through sql_chain
        return self.prelude_value(expr), ATOM


# One entry per class of ast.Expr (a test checks that it covers the union): a missing one is a
# test failure, not a user's crash.
EXPRESSION_SQL: dict[type[ast.Node], Callable[[ExpressionLowerer, Any], Lowered]] = {
    ast.NumberLit: ExpressionLowerer.numberlit_sql,
    ast.StringLit: ExpressionLowerer.stringlit_sql,
    ast.BoolLit: ExpressionLowerer.boollit_sql,
    ast.NoneLit: ExpressionLowerer.nonelit_sql,
    ast.UnitLit: ExpressionLowerer.unitlit_sql,
    ast.RegexLit: ExpressionLowerer.regexlit_sql,
    ast.Name: ExpressionLowerer.name_sql,
    ast.FieldAccess: ExpressionLowerer.fieldaccess_sql,
    ast.Call: ExpressionLowerer.call_sql,
    ast.MethodCall: ExpressionLowerer.methodcall_sql,
    ast.RecordLit: ExpressionLowerer.recordlit_sql,
    ast.Match: ExpressionLowerer.match_sql,
    ast.Unary: ExpressionLowerer.unary_sql,
    ast.Binary: ExpressionLowerer.binary_sql,
    ast.Wrap: ExpressionLowerer.wrap_sql,
    ast.Propagate: ExpressionLowerer.propagate_sql,
    ast.ListLit: ExpressionLowerer.listlit_sql,
    ast.SqlBlock: ExpressionLowerer.sqlblock_sql,
    ast.JqBlock: ExpressionLowerer.jqblock_sql,
}
