"""Text, list and bytes methods: one table that the checker (signatures, "did you mean") and the
lowering (PL/SQL) both read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pell import ast
from pell.checker import types as t
from pell.naming import SPLIT_FUNCTION
from pell.precedence import ADDITIVE, ATOM, COMPARISON, OR, Lowered, wrap
from pell.records import record


@record
class Method:
    """`receiver.name(params) -> result`, lowered by filling in `template`: `{receiver}` is the
    lowered receiver, in parentheses if it binds looser than `receiver_precedence`, and `{0}`,
    `{1}` are the lowered arguments; the filled-in text binds as `precedence`."""

    name: str
    receiver: Literal["text", "list", "bytes"]
    params: tuple[t.Type, ...]
    result: t.Type
    template: str
    precedence: int
    # OR, the loosest: inside a function's parentheses any expression stands as it is
    receiver_precedence: int = OR
    # the package-private function the template calls, declared in the body when used
    helper: str | None = None
    # A test of the receiver against its text argument (`s.ends_with(x)`), TRUE whenever the
    # argument is empty: `template` is the test for a non-empty argument (see METHODS).
    tests_text: bool = False

    def lower(
        self, receiver: Lowered, args: Sequence[str], argument_nonempty: bool = False
    ) -> Lowered:
        """The PL/SQL of a call of this method, from its lowered receiver and arguments;
        `argument_nonempty`: the argument is known not to be empty (a text literal)."""
        text = self.template.format(*args, receiver=wrap(receiver, self.receiver_precedence))
        if not self.tests_text:
            return text, self.precedence
        if not argument_nonempty:
            text = f"{args[0]} IS NULL OR {wrap((text, self.precedence), OR + 1)}"
        return f"CASE WHEN {text} THEN TRUE ELSE FALSE END", ATOM


# Every method that yields a `bool` is TRUE or FALSE, never NULL, whatever its inputs, so
# `if !s.ends_with(x)` takes its branch whenever `s` does not end with `x`. Oracle "treats a
# character value with a length of zero as null" (SQL Language Reference, Nulls), so a text
# that is None is the empty text, on both targets: `"".is_empty()` is true, and so is
# `s.ends_with("")` (`contains`, `starts_with`) for every `s`; an empty or None `s` contains,
# starts and ends with the empty text only. The tests themselves are NULL for a NULL operand
# ("All scalar functions (except REPLACE, NVL, and CONCAT) return null when given a null
# argument", SQL Language Reference, Nulls in SQL Functions), and SUBSTR(s, -LENGTH(x)) is NULL
# when `x` is longer than `s` (SUBSTR documents only that a negative position counts from the
# end: whatever it gives then is shorter than `x`, so never equal to it). So each test is
# `CASE WHEN test THEN TRUE ELSE FALSE END`: a searched CASE takes the first WHEN whose
# condition is TRUE, else its ELSE (PL/SQL Language Reference, CASE Expressions), and a NULL
# condition is not TRUE; `x IS NULL OR` comes first unless `x` is a non-empty literal. These
# lower only into PL/SQL: Pell values reach SQL as binds of variables, never as expressions.
METHODS: tuple[Method, ...] = (
    Method("len", "text", (), t.INT, "LENGTH({receiver})", ATOM),
    # `.length()`, public Pell's name for `.len()` on text
    Method("length", "text", (), t.INT, "LENGTH({receiver})", ATOM),
    # Oracle keeps empty text as NULL: TRUE or FALSE, never NULL
    Method(
        "is_empty",
        "text",
        (),
        t.BOOL,
        "{receiver} IS NULL",
        COMPARISON,
        receiver_precedence=ADDITIVE,
    ),
    Method("upper", "text", (), t.TEXT, "UPPER({receiver})", ATOM),
    Method("lower", "text", (), t.TEXT, "LOWER({receiver})", ATOM),
    Method("trim", "text", (), t.TEXT, "TRIM({receiver})", ATOM),
    Method(
        "contains",
        "text",
        (t.TEXT,),
        t.BOOL,
        "INSTR({receiver}, {0}) > 0",
        COMPARISON,
        tests_text=True,
    ),
    Method(
        "starts_with",
        "text",
        (t.TEXT,),
        t.BOOL,
        "SUBSTR({receiver}, 1, LENGTH({0})) = {0}",
        COMPARISON,
        tests_text=True,
    ),
    Method(
        "ends_with",
        "text",
        (t.TEXT,),
        t.BOOL,
        "SUBSTR({receiver}, -LENGTH({0})) = {0}",
        COMPARISON,
        tests_text=True,
    ),
    Method("substr", "text", (t.INT, t.INT), t.TEXT, "SUBSTR({receiver}, {0}, {1})", ATOM),
    # Blanks added on the right (left) up to n characters; a longer text is cut to its first
    # n: "If expr1 is longer than n, then this function returns the portion of expr1 that
    # fits in n" (SQL Language Reference, RPAD, LPAD). A number is padded as its text
    # (PAD_METHODS).
    Method("rpad", "text", (t.INT,), t.TEXT, "RPAD({receiver}, {0})", ATOM),
    Method("lpad", "text", (t.INT,), t.TEXT, "LPAD({receiver}, {0})", ATOM),
    # The parts between occurrences of the delimiter, empty ones kept (as NULL): a loop over
    # INSTR in a function of the package (templates/split_function.sql.j2).
    Method(
        "split",
        "text",
        (t.TEXT,),
        t.ListType(t.TEXT),
        SPLIT_FUNCTION + "({receiver}, {0})",
        ATOM,
        helper=SPLIT_FUNCTION,
    ),
    Method("len", "list", (), t.INT, "{receiver}.COUNT", ATOM, receiver_precedence=ATOM),
    # the length in bytes of a RAW (PL/SQL Packages and Types Reference, UTL_RAW, LENGTH)
    Method("len", "bytes", (), t.INT, "UTL_RAW.LENGTH({receiver})", ATOM),
    # TRUE or FALSE: COUNT of a list is a number; of a NULL collection (a PL/SQL caller's) it
    # raises COLLECTION_IS_NULL (PL/SQL Language Reference, Predefined Exceptions)
    Method(
        "is_empty",
        "list",
        (),
        t.BOOL,
        "{receiver}.COUNT = 0",
        COMPARISON,
        receiver_precedence=ATOM,
    ),
    Method("count", "list", (), t.INT, "{receiver}.COUNT", ATOM, receiver_precedence=ATOM),
    # The first and last index, NULL for an empty list: 1 and the length for a list the fn
    # filled itself, the caller's own for a list a PL/SQL caller passed (pell.codegen.lists).
    Method("first", "list", (), t.INT, "{receiver}.FIRST", ATOM, receiver_precedence=ATOM),
    Method("last", "list", (), t.INT, "{receiver}.LAST", ATOM, receiver_precedence=ATOM),
    # `.at(i)`, the element at index i as the list has it, and `.append(x)`: their types come
    # from the list's element type (the checker), `.append` is a statement (the lowering).
    Method("at", "list", (t.INT,), t.UNKNOWN, "{receiver}({0})", ATOM, receiver_precedence=ATOM),
    Method("append", "list", (t.UNKNOWN,), t.UNIT, "", ATOM, receiver_precedence=ATOM),
)

# `bulk.rowcount(i)` and `bulk.total()`, after a `forall` (public Pell's names): the rows the
# statement for index i changed, and all of them; SQL%BULK_ROWCOUNT(i) and SQL%ROWCOUNT, copied
# right after the FORALL (pell.codegen.subprograms). `bulk` is no variable: a local may take
# the name, and then `bulk.` is its own.
BULK = "bulk"
BULK_METHODS: Mapping[str, tuple[t.Type, ...]] = {"rowcount": (t.INT,), "total": ()}

# `d.year()` ... `i.second()`: EXTRACT(<FIELD> FROM value), a NUMBER. EXTRACT takes YEAR, MONTH
# and DAY from a DATE only; HOUR, MINUTE and SECOND need a TIMESTAMP or an INTERVAL; an
# INTERVAL DAY TO SECOND has no YEAR or MONTH (SQL Language Reference, EXTRACT (datetime)).
DATETIME_FIELDS: dict[str, tuple[str, ...]] = {
    "date": ("year", "month", "day"),
    "timestamp": ("year", "month", "day", "hour", "minute", "second"),
    "interval": ("day", "hour", "minute", "second"),
}

# The text methods a number takes too, on the text interpolation writes for it (public Pell's
# `n.rpad(10)`, which pell 0.1 leaves to an implicit, session-dependent conversion)
PAD_METHODS = ("rpad", "lpad")

# name -> method, for each receiver
TEXT_METHODS: dict[str, Method] = {m.name: m for m in METHODS if m.receiver == "text"}
LIST_METHODS: dict[str, Method] = {m.name: m for m in METHODS if m.receiver == "list"}
BYTES_METHODS: dict[str, Method] = {m.name: m for m in METHODS if m.receiver == "bytes"}


def nonempty_literal(expr: ast.Expr) -> bool:
    """A text literal with a character outside its interpolations: never empty, never NULL."""
    return isinstance(expr, ast.StringLit) and any(isinstance(p, str) and p for p in expr.parts)


def spoken_list(methods: Mapping[str, Method]) -> str:
    """`.len() and .is_empty()`: the methods' names for a hint."""
    calls = [f".{name}()" for name in methods]
    return calls[0] if len(calls) == 1 else f"{', '.join(calls[:-1])} and {calls[-1]}"
