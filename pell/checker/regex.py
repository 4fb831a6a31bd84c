"""Regex literals (`/pattern/`) and the `re::` fns that take them: one table that the checker
(signatures, the pattern's checks) and the lowering (Oracle's REGEXP_* functions) both read.

A regex literal is no value of its own: it stands only as the pattern argument of a `re::`
fn, and goes to Oracle as a text literal ("pattern is the regular expression. It is usually a
text literal", SQL Language Reference, REGEXP_SUBSTR). So it is checked here, where it is
written, and Oracle compiles the same text at run time.

Every call says its match_parameter: 'c', case-sensitive, because without one "The default
case sensitivity is determined by the value of the NLS_SORT parameter" (SQL Language
Reference, Pattern-matching Conditions, REGEXP_LIKE: match_param), which a session may change.
Public Pell has no flags after the closing slash, so none is read here.

References are to the Oracle Database SQL Language Reference (23ai): the REGEXP_LIKE condition
("Pattern-matching Conditions"), the REGEXP_SUBSTR, REGEXP_REPLACE, REGEXP_INSTR and
REGEXP_COUNT functions, and Appendix "Oracle Regular Expression Support" (POSIX operators and
the Perl-influenced extensions \\d \\D \\w \\W \\s \\S \\A \\Z \\z and the lazy quantifiers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pell import ast
from pell.checker import types as t
from pell.diagnostics import did_you_mean, quoted_with_article
from pell.naming import REGEXP_ALL_FUNCTION, REGEXP_SPLIT_FUNCTION
from pell.precedence import ATOM, Lowered
from pell.records import record

if TYPE_CHECKING:
    from pell.checker.expressions import ExpressionChecker

MATCH_PARAMETER = "'c'"
# "pattern ... can contain up to 512 bytes" (REGEXP_LIKE, REGEXP_SUBSTR: pattern)
PATTERN_BYTES = 512
TEXT_LIST = t.ListType(t.TEXT)


@record
class RegexFn:
    """`re::name(params) -> result`; `template` is its PL/SQL, `{0}`, `{1}` ... the lowered
    arguments (the pattern as a text literal), `{match}` the match_parameter."""

    name: str
    params: tuple[t.Type | None, ...]  # None: the regex literal
    required: int
    result: t.Type
    template: str
    helper: str | None = None  # the package-private function the template calls

    def wanted(self) -> str:
        if self.required == len(self.params):
            return f"{self.required} arguments"
        return f"{self.required} to {len(self.params)} arguments"


TABLE: tuple[RegexFn, ...] = (
    # TRUE or FALSE, as every bool built-in: REGEXP_LIKE is NULL for a NULL text, and a
    # searched CASE takes its ELSE for a condition that is not TRUE (PL/SQL Language
    # Reference, CASE Expressions); None text (the empty text) matches nothing.
    RegexFn(
        "matches",
        (t.TEXT, None),
        2,
        t.BOOL,
        "CASE WHEN REGEXP_LIKE({0}, {1}, {match}) THEN TRUE ELSE FALSE END",
    ),
    # The first match at or after the position (1 when not given), None when there is none
    # (REGEXP_SUBSTR: position, occurrence 1; "If no match is found, then the function
    # returns NULL")
    RegexFn("find", (t.TEXT, None, t.INT), 2, t.TEXT, "REGEXP_SUBSTR({0}, {1}, {2}, 1, {match})"),
    # Every match, in order: REGEXP_COUNT of them, each REGEXP_SUBSTR's occurrence n
    # (templates/regex_functions.sql.j2)
    RegexFn(
        "find_all",
        (t.TEXT, None),
        2,
        TEXT_LIST,
        REGEXP_ALL_FUNCTION + "({0}, {1})",
        REGEXP_ALL_FUNCTION,
    ),
    # Every match replaced by the text as it is: occurrence 0 is "all occurrences"; a
    # backslash in replace_string starts a backreference unless "you precede it with the
    # escape character, which is also a backslash" (REGEXP_REPLACE), so each is doubled.
    RegexFn(
        "replace_all",
        (t.TEXT, None, t.TEXT),
        3,
        t.TEXT,
        "REGEXP_REPLACE({0}, {1}, {2}, 1, 0, {match})",
    ),
    # The parts between matches, in order, empty ones kept (as NULL), as `text.split(d)`
    # (templates/regex_functions.sql.j2)
    RegexFn(
        "split",
        (t.TEXT, None),
        2,
        TEXT_LIST,
        REGEXP_SPLIT_FUNCTION + "({0}, {1})",
        REGEXP_SPLIT_FUNCTION,
    ),
)

FNS: dict[str, RegexFn] = {f.name: f for f in TABLE}


def pattern_text(literal: ast.RegexLit) -> str:
    """The pattern Oracle gets: `\\/` is the slash the literal could not hold as it is."""
    out: list[str] = []
    index = 0
    source = literal.source
    while index < len(source):
        if source[index] == "\\" and index + 1 < len(source):
            pair = source[index : index + 2]
            out.append("/" if pair == "\\/" else pair)
            index += 2
        else:
            out.append(source[index])
            index += 1
    return "".join(out)


def pattern_problems(literal: ast.RegexLit) -> list[tuple[str, ast.Span]]:
    """What Oracle's regular expressions would refuse, or silently read otherwise, in the
    literal, each with where: unmatched parentheses (ORA-12725) and brackets (ORA-12726,
    Database Error Messages), `(?` groups and `\\b`/`\\B`, which are not among the operators
    of Appendix "Oracle Regular Expression Support", and a pattern over 512 bytes."""
    source = literal.source
    start = literal.span.start + 1  # after the opening slash

    def at(index: int, length: int = 1) -> ast.Span:
        return ast.Span(start + index, start + index + length)

    problems: list[tuple[str, ast.Span]] = []
    open_groups: list[int] = []
    index = 0
    while index < len(source):
        char = source[index]
        if char == "\\":
            escaped = source[index + 1 : index + 2]
            if escaped in ("b", "B"):
                problems.append(
                    (
                        f"`\\{escaped}` (a word boundary) is not in Oracle's regular expressions",
                        at(index, 2),
                    )
                )
            index += 2
        elif char == "[":
            end = _bracket_end(source, index)
            if end is None:
                problems.append(("this `[` is never closed by a `]`", at(index)))
                break
            index = end + 1
        elif char == "(":
            if source[index + 1 : index + 2] == "?":
                problems.append(
                    (
                        "`(?` groups (non-capturing, named, lookaround) are not in Oracle's "
                        "regular expressions",
                        at(index, 2),
                    )
                )
            open_groups.append(index)
            index += 1
        elif char == ")":
            if open_groups:
                open_groups.pop()
            else:
                problems.append(("this `)` closes no `(`", at(index)))
            index += 1
        else:
            index += 1
    problems += [("this `(` is never closed by a `)`", at(i)) for i in open_groups]
    size = len(pattern_text(literal).encode("utf-8"))
    if size > PATTERN_BYTES:
        problems.append(
            (
                f"the pattern is {size} bytes; Oracle takes at most {PATTERN_BYTES}",
                literal.span,
            )
        )
    return problems


def _bracket_end(source: str, open_at: int) -> int | None:
    """The index of the `]` that closes the bracket expression opened at `open_at`: a `]`
    first in it (after `^`) is a member, and `[:alpha:]`, `[.x.]`, `[=e=]` hold their own
    brackets (POSIX bracket expressions, as Appendix "Oracle Regular Expression Support"
    lists them)."""
    index = open_at + 1
    if source[index : index + 1] == "^":
        index += 1
    if source[index : index + 1] == "]":
        index += 1
    while index < len(source):
        pair = source[index : index + 2]
        if pair in ("[:", "[.", "[="):
            close = source.find(pair[1] + "]", index + 2)
            if close < 0:
                return None
            index = close + 2
        elif source[index] == "]":
            return index
        else:
            index += 1
    return None


def check_call(checker: ExpressionChecker, expr: ast.Call, expected: t.Type | None) -> t.Type:
    """Type `re::name(...)`, reporting what is surely wrong, and record it for the lowering."""
    as_statement = checker.as_statement
    name = "::".join(expr.callee.path[1:])
    fn = FNS.get(name)
    if fn is None or expr.keywords:
        for value in (*expr.args, *(k.value for k in expr.keywords)):
            if not isinstance(value, ast.RegexLit):
                checker.expr(value, None)
        if fn is None:
            checker.error(
                "unknown-fn",
                f"`re` has no fn `{name}`{did_you_mean(name, list(FNS))}",
                expr.callee.span,
                f"`re` has {', '.join(f'`{f.name}`' for f in TABLE)}",
            )
        else:
            checker.error(
                "keyword-argument",
                f"`re::{name}` takes its arguments by position",
                expr.keywords[0].name_span,
            )
        return t.UNKNOWN
    if not fn.required <= len(expr.args) <= len(fn.params):
        count = len(expr.args)
        checker.error(
            "arity",
            f"fn `re::{name}` takes {fn.wanted()}, "
            f"but {count} {'was' if count == 1 else 'were'} given",
            expr.span,
        )
    for index, arg in enumerate(expr.args):
        param = fn.params[index] if index < len(fn.params) else t.UNKNOWN
        if param is None:
            if isinstance(arg, ast.RegexLit):
                for message, span in pattern_problems(arg):
                    checker.error("bad-regex", message, span)
            else:
                checker.expr(arg, None)
                checker.error(
                    "type-mismatch",
                    f"argument {index + 1} of `re::{name}` must be a regex literal (`/pattern/`)",
                    arg.span,
                    "Oracle reads the pattern where it is written: `re::matches(s, /[0-9]+/)`",
                )
            continue
        type_ = checker.expr(arg, param)
        if not t.assignable(type_, param):
            checker.error(
                "type-mismatch",
                f"argument {index + 1} of `re::{name}` must be {quoted_with_article(param)}, "
                f"not {quoted_with_article(type_)}",
                arg.span,
            )
    checker.analysis.regex_calls[id(expr)] = name
    if as_statement:
        checker.error(
            "not-a-statement",
            f"the value of `re::{name}(...)` is not used; it only computes a value",
            expr.span,
            f"store it: `let x = re::{name}(...);`",
        )
    return fn.result


def lower(name: str, args: list[str]) -> tuple[Lowered, str | None]:
    """The PL/SQL of `re::name(args)` from its lowered arguments (the pattern already a text
    literal), and the package function it calls, if any."""
    fn = FNS[name]
    filled = [*args, *["1"] * (len(fn.params) - len(args))]  # `find`'s position: 1
    return (fn.template.format(*filled, match=MATCH_PARAMETER), ATOM), fn.helper
