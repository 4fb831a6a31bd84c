"""utPLSQL: `ut::expect(actual).to_equal(expected)` and the other matchers, and a `@suite`
module of `@test` fns, lowered to utPLSQL's own forms: `ut.expect(actual).to_equal(expected);`
and an annotated package spec (`--%suite(...)`, `--%test(...)`).

The `ut` package is a shipped stub (pell/stubs/ut.pell) for its procedures; `expect` is not in
it: utPLSQL overloads it by the actual's type and returns an object whose member procedures
are the matchers, which a stub's signatures cannot say. One table here, MATCHERS, says which
matcher takes which types; the checker and the lowering both read it.

Sources (utPLSQL 3, github.com/utPLSQL/utPLSQL):
- source/api/ut.pks: `expect(a_actual, a_message varchar2 := null)` overloaded for blob,
  boolean, clob, date, number, timestamp (with and without time zone), varchar2, the two
  interval types, sys_refcursor and anydata; `fail(a_message)`, `run(a_path, ...)`.
- source/expectations/ut_expectation.tps: the matchers, member procedures of ut_expectation,
  and their overloads (to_equal for each type; to_be_like, to_match on varchar2; the ordering
  matchers on date, number, timestamps and intervals; to_be_between also on varchar2).
- docs/userguide/expectations.md, "Supported data types": the same table by matcher.
- docs/userguide/annotations.md: annotations are `--%name(text)` comment lines, read in the
  package specification only; "Procedure level annotations": placed directly before the
  procedure, no empty line or comment between; "Package level annotations": anywhere else,
  separated from procedure annotations by an empty line, best at the very top; parameter
  values "without any quotation marks", the text running from the first `(` to the last `)`
  of the line; `--%rollback(auto|manual)`; `--%beforetest`/`--%aftertest` "need to be placed
  alongside `--%test` annotation".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pell import ast, naming
from pell.checker import types as t
from pell.diagnostics import Diagnostic, Note, did_you_mean, quoted_with_article
from pell.records import record

if TYPE_CHECKING:
    from pell.checker.expressions import ExpressionChecker

UT = "ut"
EXPECT = "expect"

# The families of Pell types `ut.expect` has an overload for (ut.pks): text is VARCHAR2,
# bigtext CLOB, numeric NUMBER (a PLS_INTEGER argument matches the NUMBER overload: "PL/SQL
# looks for matching numeric parameters in this order: PLS_INTEGER ..., NUMBER, ...", PL/SQL
# Language Reference, "Formal Parameters that Differ Only in Numeric Data Type"), bool BOOLEAN,
# date DATE, timestamp TIMESTAMP, interval INTERVAL DAY TO SECOND. RAW (bytes), records and
# lists have none.
EXPECTED_FAMILIES = ("numeric", "text", "bool", "date", "timestamp", "interval")
_ORDERED = ("numeric", "date", "timestamp", "interval")


@record
class Matcher:
    """A matcher of ut_expectation, and `not_` + its name, its negation. `params`: "actual"
    for a value of the actual's family, "text", "bool"; the first `required` are needed."""

    name: str
    families: tuple[str, ...]  # the actual's families it is declared for
    params: tuple[str, ...] = ()
    required: int = 0


MATCHERS_TABLE: tuple[Matcher, ...] = (
    Matcher("to_equal", EXPECTED_FAMILIES, ("actual", "bool"), 1),  # a_nulls_are_equal
    Matcher("to_be_null", EXPECTED_FAMILIES),
    Matcher("to_be_not_null", EXPECTED_FAMILIES),
    Matcher("to_be_true", ("bool",)),
    Matcher("to_be_false", ("bool",)),
    Matcher("to_be_like", ("text",), ("text", "text"), 1),  # a_mask, a_escape_char
    Matcher("to_match", ("text",), ("text", "text"), 1),  # a_pattern, a_modifiers
    Matcher("to_be_between", (*_ORDERED, "text"), ("actual", "actual"), 2),
    Matcher("to_be_greater_than", _ORDERED, ("actual",), 1),
    Matcher("to_be_greater_or_equal", _ORDERED, ("actual",), 1),
    Matcher("to_be_less_than", _ORDERED, ("actual",), 1),
    Matcher("to_be_less_or_equal", _ORDERED, ("actual",), 1),
)
# every matcher has its negation, `not_to_...` (ut_expectation.tps)
MATCHERS: dict[str, Matcher] = {
    name: matcher
    for matcher in MATCHERS_TABLE
    for name in (matcher.name, "not_" + matcher.name)
}

_FAMILY_WORDS = {
    "numeric": "a number",
    "text": "text",
    "bool": "a bool",
    "date": "a date",
    "timestamp": "a timestamp",
    "interval": "an interval",
}


def is_ut_stub(checker: ExpressionChecker) -> bool:
    """Does `ut::` name pellc's (or the project's) stub of utPLSQL's `ut` package?"""
    foreign = checker.module.imports.find(UT)
    return foreign is not None and foreign.is_stub and foreign.module.path == (UT,)


def expectation_of(expr: ast.MethodCall) -> ast.Call | None:
    """The `ut::expect(...)` call a method is called on, if it is one."""
    target = expr.target
    if isinstance(target, ast.Call) and target.callee.path == (UT, EXPECT):
        return target
    return None


def _family_words(families: tuple[str, ...]) -> str:
    words = [_FAMILY_WORDS[f] for f in families]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def check_expectation(
    checker: ExpressionChecker, expr: ast.MethodCall, expect: ast.Call, as_statement: bool
) -> t.Type:
    """`ut::expect(actual[, message]).matcher(args)`: a statement, the actual of a type
    `ut.expect` is overloaded for, the matcher declared for it, its arguments of the actual's
    type (or text, bool). Recorded for the lowering."""
    checker.analysis.types[id(expect)] = t.UNKNOWN
    for keyword in expect.keywords:
        checker.error(
            "keyword-argument",
            "`ut::expect` and its matchers take their arguments by position",
            keyword.name_span,
        )
    actual_type: t.Type = t.UNKNOWN
    if not 1 <= len(expect.args) <= 2:
        count = len(expect.args)
        checker.error(
            "arity",
            "`ut::expect` takes the actual value and, optionally, a message, but "
            f"{count} argument{'' if count == 1 else 's'} {'was' if count == 1 else 'were'} given",
            expect.span,
        )
        for arg in expect.args:
            checker.expr(arg, None)
    else:
        actual_type = checker.expr(expect.args[0], None)
        if len(expect.args) == 2:
            _check_argument(checker, expect.args[1], t.TEXT, "the message of `ut::expect`")
    family = _expected_family(checker, expect.args[0] if expect.args else None, actual_type)
    matcher = MATCHERS.get(expr.name)
    if matcher is None:
        for arg in expr.args:
            checker.expr(arg, None)
        names = [m.name for m in MATCHERS_TABLE]
        checker.error(
            "unknown-fn",
            f"utPLSQL has no matcher `{expr.name}`{did_you_mean(expr.name, list(MATCHERS))}",
            expr.name_span,
            f"the matchers are {', '.join(f'`{n}`' for n in names)}, each with its `not_` form",
        )
        return t.UNKNOWN
    if family is not None and family not in matcher.families:
        checker.error(
            "type-mismatch",
            f"`{expr.name}` takes {_family_words(matcher.families)}; the actual value is "
            f"{quoted_with_article(actual_type)}",
            expr.name_span,
            notes=(Note("the actual value", expect.args[0].span),),
        )
        family = None  # its arguments are not checked against a type it cannot have
    if not matcher.required <= len(expr.args) <= len(matcher.params):
        wanted = (
            f"{matcher.required}"
            if matcher.required == len(matcher.params)
            else f"{matcher.required} to {len(matcher.params)}"
        )
        count = len(expr.args)
        checker.error(
            "arity",
            f"`{expr.name}` takes {wanted} argument{'' if wanted == '1' else 's'}, but {count} "
            f"{'was' if count == 1 else 'were'} given",
            expr.span,
        )
    for index, arg in enumerate(expr.args):
        kind = matcher.params[index] if index < len(matcher.params) else None
        what = f"argument {index + 1} of `{expr.name}`"
        if kind == "text":
            _check_argument(checker, arg, t.TEXT, what)
        elif kind == "bool":
            _check_argument(checker, arg, t.BOOL, what)
        elif kind == "actual" and family is not None:
            _check_same_family(checker, arg, actual_type, family, what)
        else:
            checker.expr(arg, None)
    checker.analysis.ut_expectations.add(id(expr))
    if not as_statement:
        checker.error(
            "not-a-statement",
            f"`ut::expect(...).{expr.name}(...)` is a statement: it records the outcome in the "
            "test run and gives no value",
            expr.span,
        )
        return t.UNKNOWN  # reported: a `let` of it needs no type of its own as well
    return t.UNIT


def _expected_family(
    checker: ExpressionChecker, actual: ast.Expr | None, type_: t.Type
) -> str | None:
    """The actual value's family, when ut.expect has an overload for it (else an error);
    None when unknown."""
    if actual is None or isinstance(type_, t.UnknownType | t.SqlValue):
        return None  # a SQL value: its type is the database's; PL/SQL picks the overload
    family = t.family(type_)
    if family in EXPECTED_FAMILIES:
        return family
    if isinstance(type_, t.NullType):
        problem = "`None` has no type, so no `ut.expect` overload can be chosen for it"
        hint = "expect a typed value: `ut::expect(x).to_be_null()`"
    else:
        problem = f"`ut.expect` has no overload for {quoted_with_article(type_)}"
        hint = "expect each field or element, or compare in SQL and expect the count"
    checker.error("type-mismatch", problem, actual.span, hint)
    return None


def _check_argument(checker: ExpressionChecker, arg: ast.Expr, wanted: t.Type, what: str) -> None:
    type_ = checker.expr(arg, wanted)
    if not t.assignable(type_, wanted):
        checker.error(
            "type-mismatch",
            f"{what} must be {quoted_with_article(wanted)}, not {quoted_with_article(type_)}",
            arg.span,
        )


def _check_same_family(
    checker: ExpressionChecker, arg: ast.Expr, actual: t.Type, family: str, what: str
) -> None:
    """An expected value: of the actual's family (utPLSQL compares values of one type only;
    "Actual ... cannot be compared to Expected" otherwise), and not `None`, which fits every
    overload of the matcher (PLS-00307)."""
    type_ = checker.expr(arg, actual)
    if isinstance(type_, t.NullType):
        checker.error(
            "type-mismatch",
            f"{what} is `None`, which fits every overload of the matcher",
            arg.span,
            "`.to_be_null()` checks for no value",
        )
    elif isinstance(type_, t.Scalar) and t.family(type_) != family:
        checker.error(
            "type-mismatch",
            f"{what} must be {_FAMILY_WORDS[family]}, as the actual value is; "
            f"not {quoted_with_article(type_)}",
            arg.span,
        )
    elif not isinstance(type_, t.Scalar | t.SqlValue | t.UnknownType):
        checker.error(
            "type-mismatch",
            f"{what} must be {_FAMILY_WORDS[family]}, not {quoted_with_article(type_)}",
            arg.span,
        )


def bare_expect(checker: ExpressionChecker, expr: ast.Call) -> t.Type:
    """`ut::expect(x)` with no matcher: utPLSQL's expect is a function whose object does
    nothing until a matcher is called on it."""
    for arg in expr.args:
        checker.expr(arg, None)
    checker.error(
        "not-a-statement",
        "`ut::expect(...)` checks nothing on its own: call a matcher on it",
        expr.span,
        "`ut::expect(x).to_equal(y);`",
    )
    return t.UNKNOWN


def lower_expectation(expect: str, message: str | None, matcher: str, args: list[str]) -> str:
    """`ut.expect(actual[, message]).matcher(args)` (expectations.md: "ut.expect( a_actual
    {data-type} [, a_message {varchar2}] ).to_{matcher}")."""
    actual = expect if message is None else f"{expect}, {message}"
    return f"ut.expect({actual}).{matcher}({', '.join(args)})"


# ---- suites ------------------------------------------------------------------------------

SUITE = "suite"
TEST = "test"
# The fn annotations, each with what it takes: "description" (one optional text), "none",
# "procedures" (texts naming procedures of the module). Lowered `--%name` or `--%name(text)`.
FN_ANNOTATIONS: dict[str, str] = {
    TEST: "description",
    "beforeall": "none",
    "afterall": "none",
    "beforeeach": "none",
    "aftereach": "none",
    "beforetest": "procedures",
    "aftertest": "procedures",
}
# A fn has one role in a suite: utPLSQL reports the others as a warning and ignores them
# ("Annotation "--%beforeall" cannot be used with annotation: "--%test"")
_ROLES = ("test", "beforeall", "afterall", "beforeeach", "aftereach")
ROLLBACKS = ("auto", "manual")


def _literal_text(value: ast.Expr) -> str | None:
    if isinstance(value, ast.StringLit) and all(isinstance(p, str) for p in value.parts):
        return "".join(str(p) for p in value.parts)
    return None


def _annotation_text(
    annotation: ast.Annotation, arg: ast.AnnotationArg, diagnostics: list[Diagnostic]
) -> str | None:
    """A text argument as an annotation line can hold it: a literal on one line (utPLSQL reads
    the line's text from its first `(` to its last `)`)."""
    text = _literal_text(arg.value)
    if text is None:
        diagnostics.append(
            Diagnostic.of(
                "annotation-argument",
                f"@{annotation.name} takes a text literal: utPLSQL reads it from the package "
                "spec, where no value is computed",
                arg.span,
            )
        )
        return None
    if "\n" in text or "\r" in text:
        diagnostics.append(
            Diagnostic.of(
                "annotation-argument",
                f"the text of @{annotation.name} holds a line break; a utPLSQL annotation is "
                "one comment line",
                arg.span,
            )
        )
        return None
    return text


def suite_annotation(module: ast.Module) -> ast.Annotation | None:
    return next((a for a in module.annotations if a.name == SUITE), None)


def suite_lines(module: ast.Module) -> tuple[str, ...]:
    """The package-level annotations of a `@suite` module: `--%suite(description)` and
    `--%rollback(manual)` when given. Checked by check_suite."""
    suite = suite_annotation(module)
    if suite is None:
        return ()
    lines = []
    description = next((a for a in suite.args if a.name is None), None)
    text = _literal_text(description.value) if description is not None else None
    lines.append(f"--%suite({text})" if text else "--%suite")
    rollback = next((a for a in suite.args if a.name == "rollback"), None)
    if rollback is not None:
        lines.append(f"--%rollback({_literal_text(rollback.value)})")
    return tuple(lines)


def auto_rollback_fns(module: ast.Module) -> frozenset[str]:
    """The fns of a `@suite` module that utPLSQL runs after a savepoint and rolls back to it,
    unless the suite is `rollback = "manual"`: its tests, setups and teardowns and the
    procedures `@beforetest`/`@aftertest` name (`--%rollback(auto)`, the default: utPLSQL's
    docs/userguide/annotations.md). A commit in one of them makes that rollback impossible:
    utPLSQL reports "Unable to perform automatic rollback ... An implicit or explicit
    commit/rollback occurred" (utPLSQL issue #982 quotes it)."""
    suite = suite_annotation(module)
    if suite is None:
        return frozenset()
    rollback = next((a for a in suite.args if a.name == "rollback"), None)
    if rollback is not None and _literal_text(rollback.value) == "manual":
        return frozenset()
    found: set[str] = set()
    for item in module.items:
        if not isinstance(item, ast.Fn):
            continue
        for annotation in item.annotations:
            kind = FN_ANNOTATIONS.get(annotation.name)
            if annotation.name in _ROLES:
                found.add(item.name)
            elif kind == "procedures":
                found.update(t for a in annotation.args if (t := _literal_text(a.value)))
    return frozenset(found)


def fn_lines(fn: ast.Fn) -> tuple[str, ...]:
    """A fn's procedure-level annotations, in the order written: `--%test(description)`,
    `--%beforetest(p1, p2)`... Checked by check_suite."""
    lines = []
    for annotation in fn.annotations:
        kind = FN_ANNOTATIONS.get(annotation.name)
        if kind is None:
            continue
        texts = [_literal_text(a.value) or "" for a in annotation.args]
        if kind == "procedures":
            texts = [naming.fn_name(text) for text in texts]
        joined = ", ".join(texts)
        lines.append(f"--%{annotation.name}({joined})" if joined else f"--%{annotation.name}")
    return tuple(lines)


def check_suite(module: ast.Module, diagnostics: list[Diagnostic]) -> None:
    """`@suite` on a module and the suite annotations of its fns: what each takes, a fn of
    the suite is a `pub` procedure without parameters (utPLSQL calls it by name, from the
    spec), `@beforetest`/`@aftertest` go with `@test` and name such procedures of the module."""
    suite = suite_annotation(module)
    if suite is not None:
        _check_suite_args(suite, diagnostics)
        if module.is_stub or module.script:
            diagnostics.append(
                Diagnostic.of(
                    "annotation-misuse",
                    "@suite marks a module of tests; a stub or a script is not one",
                    suite.span,
                )
            )
    fns = {item.name: item for item in module.items if isinstance(item, ast.Fn)}
    for fn in fns.values():
        marks = [a for a in fn.annotations if a.name in FN_ANNOTATIONS]
        if not marks:
            continue
        if suite is None:
            diagnostics.append(
                Diagnostic.of(
                    "annotation-misuse",
                    f"@{marks[0].name} marks a fn of a utPLSQL test suite; module "
                    f"`{module.dotted_name}` is not one",
                    marks[0].span,
                    hints=('put @suite("what it tests") before `module`',),
                )
            )
            continue
        roles = [a for a in marks if a.name in _ROLES]
        for extra in roles[1:]:
            diagnostics.append(
                Diagnostic.of(
                    "annotation-misuse",
                    f"fn `{fn.name}` is already @{roles[0].name}; a fn has one role in a suite",
                    extra.span,
                    notes=(Note(f"@{roles[0].name} is here", roles[0].span),),
                )
            )
        _check_procedure(fn, roles[0] if roles else marks[0], diagnostics)
        for annotation in marks:
            _check_fn_annotation(fn, annotation, fns, diagnostics)


def _check_suite_args(suite: ast.Annotation, diagnostics: list[Diagnostic]) -> None:
    positional = [a for a in suite.args if a.name is None]
    for arg in positional[1:]:
        diagnostics.append(
            Diagnostic.of(
                "annotation-argument", "@suite takes one description", arg.span
            )
        )
    if positional:
        _annotation_text(suite, positional[0], diagnostics)
    for arg in suite.args:
        if arg.name is None:
            continue
        if arg.name != "rollback":
            diagnostics.append(
                Diagnostic.of(
                    "annotation-argument",
                    f"@suite has no argument `{arg.name}`; it takes a description and "
                    "`rollback = \"auto\"` or `\"manual\"`",
                    arg.span,
                )
            )
        elif _literal_text(arg.value) not in ROLLBACKS:
            diagnostics.append(
                Diagnostic.of(
                    "annotation-argument",
                    'rollback is "auto" (utPLSQL rolls back what each test did) or "manual"',
                    arg.span,
                )
            )


def _check_procedure(fn: ast.Fn, mark: ast.Annotation, diagnostics: list[Diagnostic]) -> None:
    """utPLSQL calls a test (or a setup, a teardown) as a procedure with no arguments, by its
    name in the package spec."""
    problem = None
    if fn.params:
        problem = "takes parameters"
    elif fn.return_type is not None:
        problem = "returns a value"
    elif not fn.public:
        problem = "is not `pub`, so it is not in the package spec utPLSQL reads"
    if problem is not None:
        diagnostics.append(
            Diagnostic.of(
                "annotation-misuse",
                f"@{mark.name} fn `{fn.name}` {problem}: utPLSQL calls it by name, as a "
                "public procedure with no arguments",
                fn.name_span,
                notes=(Note(f"@{mark.name} is here", mark.span),),
            )
        )


def _check_fn_annotation(
    fn: ast.Fn,
    annotation: ast.Annotation,
    fns: dict[str, ast.Fn],
    diagnostics: list[Diagnostic],
) -> None:
    kind = FN_ANNOTATIONS[annotation.name]
    named = [a for a in annotation.args if a.name is not None]
    for arg in named:
        diagnostics.append(
            Diagnostic.of(
                "annotation-argument", f"@{annotation.name} takes no named arguments", arg.span
            )
        )
    args = [a for a in annotation.args if a.name is None]
    if kind == "none":
        if args:
            diagnostics.append(
                Diagnostic.of(
                    "annotation-argument", f"@{annotation.name} takes no arguments", args[0].span
                )
            )
        return
    if kind == "description":
        for arg in args[1:]:
            diagnostics.append(
                Diagnostic.of(
                    "annotation-argument", f"@{annotation.name} takes one description", arg.span
                )
            )
        if args:
            _annotation_text(annotation, args[0], diagnostics)
        return
    if not any(a.name == TEST for a in fn.annotations):
        diagnostics.append(
            Diagnostic.of(
                "annotation-misuse",
                f"@{annotation.name} goes with @test: it names what runs around that test",
                annotation.span,
            )
        )
    if not args:
        diagnostics.append(
            Diagnostic.of(
                "annotation-argument",
                f'@{annotation.name} names one or more procedures: @{annotation.name}("setup")',
                annotation.span,
            )
        )
    for arg in args:
        name = _annotation_text(annotation, arg, diagnostics)
        if name is None:
            continue
        target = fns.get(name)
        if target is None:
            diagnostics.append(
                Diagnostic.of(
                    "annotation-argument",
                    f"@{annotation.name} names `{name}`, which is no fn of this module"
                    f"{did_you_mean(name, list(fns))}",
                    arg.span,
                )
            )
        elif target.params or target.return_type is not None or not target.public:
            diagnostics.append(
                Diagnostic.of(
                    "annotation-argument",
                    f"@{annotation.name} names fn `{name}`, which utPLSQL cannot call by name: "
                    "it must be a `pub` procedure with no parameters",
                    arg.span,
                    notes=(Note(f"`{name}` is declared here", target.name_span),),
                )
            )
