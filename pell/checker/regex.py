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

import re
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

# The fns that refuse a pattern that can match the empty string, with what an empty match
# would give (templates/regex_functions.sql.j2): find_all's REGEXP_SUBSTR of it is '', which
# Oracle holds as NULL; split would cut the text where no separator stands. Both count matches
# with REGEXP_COUNT, so neither loops for ever; the results are just not what was meant.
EMPTY_MATCH_REFUSED: dict[str, str] = {
    "find_all": "a None element",
    "split": "a cut where no separator stands",
}


def pattern_text(literal: ast.RegexLit, without_names: bool = False) -> str:
    """The pattern Oracle gets: `\\/` is the slash the literal could not hold as it is; a text
    literal's value as it is; `without_names`: each named group `(?<name>x)` as the plain group
    `(x)` (`re::capture`)."""
    out: list[str] = []
    index = 0
    source = literal.source
    if without_names:
        for group in reversed(capture_groups(literal)):
            if group.name is not None:
                source = source[: group.name_start] + source[group.name_end :]
    if literal.quoted:
        return source
    while index < len(source):
        if source[index] == "\\" and index + 1 < len(source):
            pair = source[index : index + 2]
            out.append("/" if pair == "\\/" else pair)
            index += 2
        else:
            out.append(source[index])
            index += 1
    return "".join(out)


def pattern_problems(
    literal: ast.RegexLit, named_groups: bool = False
) -> list[tuple[str, ast.Span]]:
    """What Oracle's regular expressions would refuse, or silently read otherwise, in the
    literal, each with where: unmatched parentheses (ORA-12725) and brackets (ORA-12726,
    Database Error Messages), `(?` groups and `\\b`/`\\B`, which are not among the operators
    of Appendix "Oracle Regular Expression Support", and a pattern over 512 bytes.

    That appendix (SQL Language Reference, "Multilingual Regular Expression Syntax", Table D-1,
    and "Perl-influenced Extensions", Table D-3) also bounds what a quantifier may be: `*`, `+`,
    `?` and `{m}`, `{m,}`, `{m,n}` ("at least m times but no more than n times"), each after the
    element it repeats, made lazy by a `?` after it; there is no possessive `++`, `*+`, `?+`
    and no `\\Q...\\E` quoting (a `\\Q` is the letter Q). A back reference `\\n`
    (Table D-1), one digit 1 to 9, repeats what the nth group matched, so it needs n groups
    opened before it. `named_groups`: `(?<name>x)` is a group (`re::capture` names fields with
    it, and gives Oracle the plain group)."""
    source = literal.source
    start = literal.span.start + 1  # after the opening slash (or quote)
    # A text literal's pattern is its value: where an escape (`\\`, `\n`) made it shorter
    # than it is written, a place in it is not a place in the source, so the literal is.
    exact = not literal.quoted or literal.span.end - literal.span.start - 2 == len(source)

    def at(index: int, length: int = 1) -> ast.Span:
        if not exact:
            return literal.span
        return ast.Span(start + index, start + index + length)

    problems: list[tuple[str, ast.Span]] = []
    open_groups: list[int] = []
    groups_opened = 0
    # What stands before the next character: "none" (the start, after `(` or `|`: nothing a
    # quantifier could repeat), "quantifier" (one that a `?` could still make lazy), "atom".
    before = "none"
    index = 0
    while index < len(source):
        char = source[index]
        interval = _INTERVAL.match(source, index)
        if char in "*+?" or interval:
            length = interval.end() - index if interval else 1
            if before == "none":
                problems.append(
                    (
                        f"`{source[index : index + length]}` has nothing before it to repeat: "
                        "Oracle's regular expressions put a quantifier after what it repeats",
                        at(index, length),
                    )
                )
            elif before == "quantifier" and char == "+":
                problems.append(
                    (
                        "a possessive quantifier (`++`, `*+`, `?+`) is not in Oracle's regular "
                        "expressions (a lazy one, `+?`, is)",
                        at(index),
                    )
                )
            elif before == "quantifier" and char == "?":
                before = "atom"  # lazy: nothing more to say of what follows
                index += 1
                continue
            if interval and interval["max"] and int(interval["min"]) > int(interval["max"]):
                problems.append(
                    (
                        f"`{interval[0]}` repeats at least {interval['min']} times but at most "
                        f"{interval['max']}: the minimum must not be above the maximum",
                        at(index, length),
                    )
                )
            before = "quantifier"
            index += length
            continue
        before = "atom"
        if char == "\\":
            escaped = source[index + 1 : index + 2]
            if escaped in ("b", "B"):
                problems.append(
                    (
                        f"`\\{escaped}` (a word boundary) is not in Oracle's regular expressions",
                        at(index, 2),
                    )
                )
            elif escaped in ("Q", "E"):
                problems.append(
                    (
                        f"`\\{escaped}` is not in Oracle's regular expressions (no "
                        f"`\\Q...\\E` quoting): Oracle reads it as the letter {escaped}; "
                        "escape each special character with `\\` instead",
                        at(index, 2),
                    )
                )
            elif escaped.isdigit() and int(escaped) > groups_opened:
                opened = f"{groups_opened} group" + ("" if groups_opened == 1 else "s")
                problems.append(
                    (
                        f"`\\{escaped}` refers back to group {escaped}, but only {opened} "
                        "open before it",
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
            open_groups.append(index)
            before = "none"
            named = _NAMED_GROUP.match(source, index + 1) if named_groups else None
            if named is not None:
                groups_opened += 1
                index = named.end()
            elif source[index + 1 : index + 2] == "?":
                problems.append(
                    (
                        "`(?` groups (non-capturing, named, lookaround) are not in Oracle's "
                        "regular expressions",
                        at(index, 2),
                    )
                )
                index += 2
            else:
                groups_opened += 1
                index += 1
        elif char == ")":
            if open_groups:
                open_groups.pop()
            else:
                problems.append(("this `)` closes no `(`", at(index)))
            index += 1
        else:
            if char == "|":
                before = "none"
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


# `{m}`, `{m,}`, `{m,n}` (Table D-1); any other `{` is left as it is written
_INTERVAL = re.compile(r"\{(?P<min>[0-9]+)(?:,(?P<max>[0-9]*))?\}")


def matches_empty(literal: ast.RegexLit) -> bool:
    """Whether the pattern can match the empty string: some alternative whose every element
    can be absent (`*`, `?`, `{0...}`, an anchor, a group that can match it). Read only for a
    pattern with no problems; a back reference counts as a character (in doubt, not empty)."""
    source = literal.source
    index = 0

    def alternatives() -> bool:
        nonlocal index
        empty = sequence()
        while source[index : index + 1] == "|":
            index += 1
            empty = sequence() or empty
        return empty

    def sequence() -> bool:
        nonlocal index
        empty = True
        while index < len(source) and source[index] not in "|)":
            char = source[index]
            if char == "(":
                index += 1
                element = alternatives()
                index += 1  # the `)`
            elif char == "[":
                element = False
                index = (_bracket_end(source, index) or len(source)) + 1
            elif char == "\\":
                element = source[index + 1 : index + 2] in _ANCHOR_ESCAPES
                index += 2
            else:
                element = char in "^$"
                index += 1
            # the quantifiers after it, each lazy `?` included, and whether one allows none
            while index < len(source):
                interval = _INTERVAL.match(source, index)
                if interval:
                    element = element or int(interval["min"]) == 0
                    index = interval.end()
                elif source[index] in "*?":
                    element = True
                    index += 1
                elif source[index] == "+":
                    index += 1
                else:
                    break
            empty = empty and element
        return empty

    return alternatives()


# `\\A`, `\\Z`, `\\z` match a position, not a character (Table D-3)
_ANCHOR_ESCAPES = ("A", "Z", "z")


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


# `(?<name>`: a named group, as public Pell writes it for `re::capture` (after the `(`)
_NAMED_GROUP = re.compile(r"\?<([A-Za-z_][A-Za-z0-9_]*)>")
CAPTURE = "capture"
# REGEXP_SUBSTR's subexpr "is a nonnegative integer from 0 to 9" (SQL Language Reference,
# REGEXP_SUBSTR); "Subexpressions are numbered in order in which their left parentheses
# appear in pattern" (REGEXP_INSTR: subexpr)
MAX_SUBEXPRESSION = 9


@record
class Group:
    """A capturing group of a pattern: its number (1-based, by its left parenthesis), its name
    (`(?<name>...)`) if it has one, and where the `?<name>` stands in the literal's source."""

    number: int
    name: str | None
    open_at: int  # the `(`, in the literal's source
    name_start: int = 0
    name_end: int = 0


def capture_groups(literal: ast.RegexLit) -> list[Group]:
    """The pattern's capturing groups in the order Oracle numbers them: by left parenthesis,
    outside bracket expressions and escapes; `(?` groups other than named ones are not
    counted (pattern_problems refuses them)."""
    source = literal.source
    groups: list[Group] = []
    index = 0
    while index < len(source):
        char = source[index]
        if char == "\\":
            index += 2
        elif char == "[":
            index = (_bracket_end(source, index) or len(source)) + 1
        elif char == "(":
            named = _NAMED_GROUP.match(source, index + 1)
            if named is not None:
                groups.append(
                    Group(len(groups) + 1, named.group(1), index, named.start(), named.end())
                )
            elif source[index + 1 : index + 2] != "?":
                groups.append(Group(len(groups) + 1, None, index))
            index += 1
        else:
            index += 1
    return groups


@record
class Capture:
    """`re::capture::<T>(text, /pattern/)`, as the lowering needs it: the pattern Oracle gets
    (its groups unnamed) and, per field of T in order, the group that fills it."""

    pattern: str
    fields: tuple[tuple[str, int], ...]


def check_capture(checker: ExpressionChecker, expr: ast.Call, as_statement: bool) -> t.Type:
    """`re::capture::<T>(text, /pattern/)`: a record T of text fields, filled field by field
    from the pattern's groups: by name when the pattern names them (`(?<area>...)`, every
    field named by one group), else in order (as many groups as fields)."""
    record_type: t.RecordType | None = None
    type_span = expr.type_args[0].span if expr.type_args else expr.callee.span
    if len(expr.type_args) != 1 or len(expr.type_args[0].alternatives) != 1:
        checker.error(
            "type-mismatch",
            "`re::capture` takes one type argument, the record it fills: "
            "`re::capture::<Phone>(s, /(?<area>[0-9]{3})-(?<line>[0-9]{4})/)`",
            type_span,
        )
    else:
        resolved = checker.resolver.resolve(expr.type_args[0].alternatives[0])
        if isinstance(resolved, t.RecordType):
            record_type = resolved
        elif not isinstance(resolved, t.UnknownType):
            checker.error(
                "type-mismatch",
                f"`re::capture` fills a record, not {quoted_with_article(resolved)}",
                type_span,
            )
    if len(expr.args) != 2 or expr.keywords:
        checker.error(
            "arity",
            "`re::capture` takes the text and the pattern: `re::capture::<T>(s, /pattern/)`",
            expr.span,
        )
    text = expr.args[0] if expr.args else None
    if text is not None:
        type_ = checker.expr(text, t.TEXT)
        if not t.assignable(type_, t.TEXT):
            checker.error(
                "type-mismatch",
                f"argument 1 of `re::capture` must be a `text`, not {quoted_with_article(type_)}",
                text.span,
            )
    pattern = expr.args[1] if len(expr.args) > 1 else None
    for extra in (*expr.args[2:], *(k.value for k in expr.keywords)):
        checker.expr(extra, None)
    literal, exact = _capture_pattern(pattern)
    if pattern is not None and literal is None:
        checker.expr(pattern, None)
        checker.error(
            "type-mismatch",
            "argument 2 of `re::capture` must be a regex literal (`/pattern/`) or a text "
            "literal with no `{...}` in it",
            pattern.span,
        )
    problems = pattern_problems(literal, named_groups=True) if literal is not None else []
    for message, span in problems:
        # a string with escapes: its characters are not where the source has them
        checker.error("bad-regex", message, span if exact else literal.span if literal else span)
    if as_statement:
        checker.error(
            "not-a-statement",
            "the value of `re::capture(...)` is not used; it only computes a value",
            expr.span,
        )
    if record_type is None:
        return t.UNKNOWN
    if literal is None or problems:
        return record_type
    fields = checker.module.record_info(record_type).fields
    before = checker.diagnostic_count()
    pairs = _pair_fields(checker, record_type, fields, literal, exact)
    for name, field_type in fields.items():
        if not t.is_text(field_type):
            checker.error(
                "type-mismatch",
                f"field `{name}` of `{record_type}` is {quoted_with_article(field_type)}; "
                "`re::capture` fills text fields with the text each group matched",
                type_span,
                "declare the field `text` and convert it after: `p.n.into::<number>()`",
            )
    if checker.diagnostic_count() == before:
        checker.analysis.regex_calls[id(expr)] = CAPTURE
        checker.analysis.captures[id(expr)] = Capture(
            pattern_text(literal, without_names=True), pairs
        )
    return record_type


def _capture_pattern(pattern: ast.Expr | None) -> tuple[ast.RegexLit | None, bool]:
    """The pattern of `re::capture` as a regex literal, and whether its characters stand where
    the source has them: a `/.../` literal, or a text literal as public Pell also writes it
    (`` `(?<a>\\d+)` ``), taken as it is (a raw string's characters are its source's)."""
    if isinstance(pattern, ast.RegexLit):
        return pattern, True
    if isinstance(pattern, ast.StringLit) and all(isinstance(p, str) for p in pattern.parts):
        text = "".join(str(p) for p in pattern.parts)
        exact = pattern.span.end - pattern.span.start == len(text) + 2
        # pattern_text's one change, `\\/` to `/`, is the same pattern to Oracle
        return ast.RegexLit(text, span=pattern.span), exact
    return None, False


def _pair_fields(
    checker: ExpressionChecker,
    record_type: t.RecordType,
    fields: dict[str, t.Type],
    literal: ast.RegexLit,
    exact: bool,
) -> tuple[tuple[str, int], ...]:
    """Each field of the record with the number of the group that fills it, reporting
    `capture-fields` where they do not pair up (at a group's name when `exact`: the literal's
    characters stand where the source has them)."""
    groups = capture_groups(literal)
    start = literal.span.start + 1  # the source's first character, after the `/`
    named = [g for g in groups if g.name is not None]
    pairs: list[tuple[str, int]] = []
    if named:
        by_name: dict[str, Group] = {}
        for group in named:
            assert group.name is not None
            span = (
                ast.Span(start + group.name_start + 2, start + group.name_end - 1)
                if exact
                else literal.span
            )
            if group.name not in fields:
                checker.error(
                    "capture-fields",
                    f"group `{group.name}` names no field of `{record_type}`"
                    f"{did_you_mean(group.name, list(fields))}",
                    span,
                )
            elif group.name in by_name:
                checker.error(
                    "capture-fields", f"two groups are named `{group.name}`", span
                )
            else:
                by_name[group.name] = group
        for name in fields:
            group_of = by_name.get(name)
            if group_of is None:
                checker.error(
                    "capture-fields",
                    f"field `{name}` of `{record_type}` has no group in the pattern: name one "
                    f"`(?<{name}>...)`",
                    literal.span,
                )
            else:
                pairs.append((name, group_of.number))
    elif len(groups) != len(fields):
        checker.error(
            "capture-fields",
            f"the pattern has {len(groups)} group{'' if len(groups) == 1 else 's'} and "
            f"`{record_type}` {len(fields)} field{'' if len(fields) == 1 else 's'}: each field "
            "takes one group, in order, or the group that names it (`(?<field>...)`)",
            literal.span,
        )
    else:
        pairs = [(name, group.number) for name, group in zip(fields, groups, strict=True)]
    for name, number in pairs:
        if number > MAX_SUBEXPRESSION:
            checker.error(
                "capture-fields",
                f"field `{name}` takes group {number}; Oracle's REGEXP_SUBSTR returns groups 1 "
                f"to {MAX_SUBEXPRESSION} only",
                literal.span,
            )
    return tuple(pairs)


def as_pattern(arg: ast.Expr) -> ast.RegexLit | None:
    """A `re::` fn's pattern argument as a regex literal: itself, or a text literal without
    `{...}` (`"\\d+"`, as public Pell writes it), whose value is the pattern and which lowers
    to the same text literal. None for anything else: the checks need the pattern here."""
    if isinstance(arg, ast.RegexLit):
        return arg
    if isinstance(arg, ast.StringLit) and all(isinstance(p, str) for p in arg.parts):
        return ast.RegexLit("".join(str(p) for p in arg.parts), quoted=True, span=arg.span)
    return None


def check_call(checker: ExpressionChecker, expr: ast.Call, expected: t.Type | None) -> t.Type:
    """Type `re::name(...)`, reporting what is surely wrong, and record it for the lowering."""
    as_statement = checker.as_statement
    name = "::".join(expr.callee.path[1:])
    if name == CAPTURE:
        return check_capture(checker, expr, as_statement)
    if expr.type_args:
        checker.error(
            "type-mismatch",
            f"`re::{name}` takes no type argument; `re::capture::<T>` does",
            expr.type_args[0].span,
        )
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
                f"`re` has {', '.join(f'`{f.name}`' for f in TABLE)} and `capture`",
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
            pattern = as_pattern(arg)
            if pattern is not None:
                problems = pattern_problems(pattern)
                for message, span in problems:
                    checker.error("bad-regex", message, span)
                if not problems and name in EMPTY_MATCH_REFUSED and matches_empty(pattern):
                    checker.error(
                        "bad-regex",
                        f"this pattern can match the empty string; in `re::{name}` each empty "
                        f"match would be {EMPTY_MATCH_REFUSED[name]}",
                        arg.span,
                        "make each match at least one character: `+` or `{1,}` for `*`",
                    )
            else:
                checker.expr(arg, None)
                # Oracle would take any text at run time, but the pattern's checks (and
                # find_all's and split's refusal of empty matches) need it here
                checker.error(
                    "type-mismatch",
                    f"argument {index + 1} of `re::{name}` must be a regex literal (`/pattern/`) "
                    "or a text literal without `{...}`",
                    arg.span,
                    "pellc checks the pattern where it is written: `re::matches(s, /[0-9]+/)`",
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
