"""`match`: its patterns against the value matched, the names its arms bind, the type a
`match` that gives a value has, and whether its arms cover every value.

A sealed type's value is matched by case (`Circle(_)`, `Cons { head: h, tail: t }`): lowered
to `IS OF (type)`, a bound field read through `TREAT(value AS type)` (SQL Language Reference,
"IS OF type Condition" and "TREAT"). A scalar is matched by literal (`0`, `"a"`, `true`, an
enum's `Color::Red`), an optional value by `None` / `Some(name)`; `_` matches anything.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pell import ast, naming
from pell.checker import types as t
from pell.checker.model import Symbol
from pell.diagnostics import did_you_mean, quoted_with_article

if TYPE_CHECKING:
    from pell.checker.expressions import ExpressionChecker

# The local a `match` stores a computed value in before its arms test it.
SUBJECT_LOCAL = "l_pell_match"


def check_match(
    checker: ExpressionChecker,
    expr: ast.Match,
    expected: t.Type | None,
    statements: Callable[[ast.Block | ast.Expr], None] | None,
) -> t.Type:
    """Check a `match`: a statement when `statements` checks its arms' bodies, else an
    expression whose arms each give a value; returns its type (Unit for a statement)."""
    subject_type = checker.expr(expr.subject, None)
    subject = _subject(checker, expr, subject_type)
    info = (
        checker.module.objects.get(subject_type.name)
        if isinstance(subject_type, t.ObjectType)
        else None
    )
    covered: set[str] = set()  # case names, `true`/`false`, `none`/`some`, `_`
    result: t.Type | None = None
    for arm in expr.arms:
        checker.scopes.append({})
        for pattern in arm.patterns:
            _pattern(
                checker,
                pattern,
                subject_type,
                subject,
                len(arm.patterns) > 1,
                statements is not None,
            )
            if arm.guard is None:
                covered.add(_covers(pattern))
        if (
            arm.guard is not None
            and statements is not None
            and any(id(p) in checker.analysis.pattern_values for p in arm.patterns)
        ):
            # its locals are given their values once the arm is chosen, after the guard
            checker.error(
                "unsupported",
                "a guard (`if ...`) on a pattern that binds names, in a `match` statement, is "
                "not supported yet",
                arm.guard.span,
                "test the condition with `if` inside the arm",
            )
        if arm.guard is not None:
            guard = checker.expr(arm.guard, t.BOOL)
            if not t.assignable(guard, t.BOOL):
                checker.error(
                    "type-mismatch",
                    f"a `match` guard must be a `bool`, not {quoted_with_article(guard)}",
                    arm.guard.span,
                )
            _refuse_statements(checker, arm.guard, "a guard")
        if statements is not None:
            statements(arm.body)
        elif isinstance(arm.body, ast.Block):
            checker.error(
                "unsupported",
                "a `match` that gives a value takes an expression in each arm, not a block",
                arm.body.span,
                "match as a statement, and assign the value in each arm",
            )
        else:
            result = _arm_value(checker, arm.body, expected, result)
            _refuse_statements(checker, arm.body, "the value of an arm")
        checker.scopes.pop()
    _check_exhaustive(checker, expr, subject_type, info.cases if info else (), covered)
    if statements is not None:
        return t.UNIT
    return result if result is not None else t.UNKNOWN


def _subject(checker: ExpressionChecker, expr: ast.Match, subject_type: t.Type) -> str:
    """The PL/SQL value the arms test: a variable as it is, anything else stored in a local."""
    if not isinstance(
        subject_type, t.Scalar | t.ObjectType | t.SqlValue | t.UnknownType | t.NullType
    ):
        checker.error(
            "type-mismatch",
            f"`match` tests a scalar, an optional value or a sealed type's value, not "
            f"{quoted_with_article(subject_type)}",
            expr.subject.span,
        )
    variable = _variable(checker, expr.subject)
    if variable is not None:
        checker.analysis.matches[id(expr)] = (variable, False)
        return variable
    if checker.lazy_operands:
        # stored before the whole condition runs, it would be computed even when the left
        # side decides (`x != 0 && (match 10 / x { ... })` divides by zero)
        checker.error(
            "unsupported",
            "a `match` on a computed value on the right of `&&` or `||`: pellc would compute "
            "the value before the left side decides",
            expr.subject.span,
            "name the value first (`let v = ...;`) or write the condition as an `if`",
        )
    plsql = naming.unique(SUBJECT_LOCAL, checker.taken)
    if isinstance(subject_type, t.Scalar | t.ObjectType):
        checker.analysis.locals.append(
            Symbol("match", plsql, subject_type, "local", True, expr.subject.span)
        )
    elif isinstance(subject_type, t.SqlValue):
        checker.error(
            "needs-annotation",
            "`match` stores this value first, and pellc cannot see its type",
            expr.subject.span,
            "give it a typed name first: `let v: text = ...; match v { ... }`",
        )
    checker.analysis.matches[id(expr)] = (plsql, True)
    return plsql


def _variable(checker: ExpressionChecker, expr: ast.Expr) -> str | None:
    """`expr` as PL/SQL when it reads a variable (`x`, `self.tail`, `row.status`), which the
    arms may test again and again; None for a value that must be computed once."""
    if isinstance(expr, ast.Name):
        symbol = checker.analysis.names.get(id(expr))
        return symbol.plsql if symbol is not None else None
    if not isinstance(expr, ast.FieldAccess) or id(expr) in checker.analysis.sequences:
        return None
    inner = _variable(checker, expr.target)
    target = checker.analysis.types.get(id(expr.target))
    if inner is None or target is None:
        return None
    if isinstance(target, t.SqlRow):
        return f"{inner}.{expr.name}"  # a column of the query: as written
    if isinstance(target, t.RecordType | t.ObjectType):
        return f"{inner}.{naming.field_name(expr.name)}"
    return None


# Expressions whose lowering runs statements of its own first (pell.codegen: prelude_value),
# which a CASE arm or an ELSIF condition cannot hold: they would run for every arm.
def _runs_statements(checker: ExpressionChecker, expr: ast.Expr) -> ast.Node | None:
    for node in ast.walk(expr):
        if isinstance(node, ast.SqlBlock | ast.ListLit):
            return node
        if isinstance(node, ast.RecordLit) and not isinstance(
            checker.analysis.types.get(id(node)), t.ObjectType
        ):
            return node
        if isinstance(node, ast.Match) and checker.analysis.matches.get(id(node), ("", False))[1]:
            return node
    return None


def _refuse_statements(checker: ExpressionChecker, expr: ast.Expr, what: str) -> None:
    node = _runs_statements(checker, expr)
    if node is not None:
        checker.error(
            "unsupported",
            f"{what} of a `match` is computed only when its arm is chosen, so it cannot hold "
            "a query, a record or list literal, or a `match` on a computed value",
            node.span,
            "give the value a name with `let` before the `match`, or match as a statement",
        )


def _covers(pattern: ast.Pattern) -> str:
    if pattern.kind == "value" and isinstance(pattern.value, ast.BoolLit):
        return "true" if pattern.value.value else "false"
    if pattern.kind == "case":
        return pattern.case
    return "_" if pattern.kind == "wildcard" else pattern.kind


def _pattern(
    checker: ExpressionChecker,
    pattern: ast.Pattern,
    subject_type: t.Type,
    subject: str,
    alternatives: bool,
    statement: bool,
) -> None:
    binds = pattern.bindings or (
        pattern.kind == "some" and pattern.inner is not None and pattern.inner.kind == "case"
    )
    if binds and alternatives:
        checker.error(
            "unsupported",
            "a pattern joined to others by `|` binds no names",
            pattern.span,
        )
        return
    if pattern.kind == "value" and pattern.value is not None:
        if isinstance(subject_type, t.ObjectType):
            _not_a_case(checker, pattern, subject_type)
            return
        value_type = checker.expr(pattern.value, subject_type)
        if not t.comparable(value_type, subject_type):
            checker.error(
                "type-mismatch",
                f"this pattern is {quoted_with_article(value_type)}, and the value matched is "
                f"{quoted_with_article(subject_type)}",
                pattern.span,
            )
    elif pattern.kind == "some" and pattern.inner is not None and pattern.inner.kind == "case":
        _bind(checker, pattern, pattern.inner.case, subject, subject_type, statement)
    elif pattern.kind == "case":
        _case_pattern(checker, pattern, subject_type, subject, statement)


def _not_a_case(checker: ExpressionChecker, pattern: ast.Pattern, subject: t.ObjectType) -> None:
    checker.error(
        "type-mismatch",
        f"a value of `{subject}` is matched by its cases (`Case(_)`, `Case {{ field: name }}`) "
        "or `_`",
        pattern.span,
    )


def _bind(
    checker: ExpressionChecker,
    pattern: ast.Pattern,
    name: str,
    value: str,
    type_: t.Type,
    statement: bool,
) -> None:
    """A name an arm binds. In a statement's arm, a local given the value as the arm begins
    (the arm may change the variable matched); in a value's arm, the value itself."""
    if not statement:
        checker.scopes[-1][name] = Symbol(name, value, type_, "constant", False, pattern.span)
        return
    symbol = checker.declare_local(name, type_, pattern.span)
    checker.analysis.locals.append(symbol)
    checker.analysis.pattern_values.setdefault(id(pattern), []).append((symbol.plsql, value))


def _case_pattern(
    checker: ExpressionChecker,
    pattern: ast.Pattern,
    subject_type: t.Type,
    subject: str,
    statement: bool,
) -> None:
    module = checker.module
    info = module.objects.get(subject_type.name) if isinstance(subject_type, t.ObjectType) else None
    if info is None or not info.cases:
        if not isinstance(subject_type, t.UnknownType):
            checker.error(
                "type-mismatch",
                f"`{pattern.case}` is a case of a sealed type, and the value matched is "
                f"{quoted_with_article(subject_type)}",
                pattern.span,
                'match a scalar by its values (`0`, `"a"`, `Color::Red`) or `_`',
            )
        return
    if pattern.case not in info.cases:
        checker.error(
            "unknown-name",
            f"sealed type `{info.type.name}` has no case `{pattern.case}`"
            f"{did_you_mean(pattern.case, list(info.cases))}",
            pattern.span,
        )
        return
    case = module.objects.get(pattern.case)
    if case is None:  # reported where it is declared
        return
    for field, name in pattern.bindings:
        if not field:  # `Circle(c)`: the whole value, seen as its case
            plsql = f"TREAT({subject} AS {case.type.plsql})"
            _bind(checker, pattern, name, plsql, case.type, statement)
            continue
        field_type = case.fields.get(field)
        if field_type is None:
            checker.error(
                "unknown-field",
                f"case `{case.type.name}` has no field `{field}`"
                f"{did_you_mean(field, list(case.fields))}",
                pattern.span,
            )
            continue
        # the value seen as its case (TREAT), then the attribute
        plsql = f"TREAT({subject} AS {case.type.plsql}).{naming.field_name(field)}"
        _bind(checker, pattern, name, plsql, field_type, statement)


def _arm_value(
    checker: ExpressionChecker, body: ast.Expr, expected: t.Type | None, result: t.Type | None
) -> t.Type:
    """The type of the arms so far, with this arm's value: the wider of the two."""
    value = checker.expr(body, expected or result)
    if result is None or isinstance(result, t.NullType | t.NeverType):
        return value
    if t.assignable(value, result):
        return result
    if t.assignable(result, value):
        return value
    checker.error(
        "type-mismatch",
        f"this arm gives {quoted_with_article(value)}, and the arms before it "
        f"{quoted_with_article(result)}",
        body.span,
    )
    return result


def _check_exhaustive(
    checker: ExpressionChecker,
    expr: ast.Match,
    subject_type: t.Type,
    cases: tuple[str, ...],
    covered: set[str],
) -> None:
    """Every value has an arm: a `_`, every case of a sealed type, `true` and `false`, or
    `None` and `Some(...)`; an arm with a guard covers nothing for sure."""
    if "_" in covered or isinstance(subject_type, t.UnknownType):
        return
    at = ast.Span(expr.span.start, expr.subject.span.end)
    if cases:
        missing = [case for case in cases if case not in covered]
        if missing:
            listed = ", ".join(f"`{case}`" for case in missing)
            checker.error(
                "non-exhaustive-match",
                f"this `match` on `{subject_type}` has no arm for case"
                f"{'s' * (len(missing) > 1)} {listed}",
                at,
                f"add {'them' if len(missing) > 1 else 'it'}, or a `_` arm",
            )
        return
    if subject_type == t.BOOL and {"true", "false"} <= covered:
        return
    if {"none", "some"} <= covered:
        return
    checker.error(
        "non-exhaustive-match",
        f"this `match` on {quoted_with_article(subject_type)} has no `_` arm for the values "
        "its patterns leave out",
        at,
        "add `_ -> ...` as the last arm",
    )
