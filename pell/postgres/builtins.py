"""Oracle's SQL functions that Pell calls as free fns, in PostgreSQL's terms: the same result
where PostgreSQL has it (PostgreSQL 15 docs, "Functions and Operators"), a located
`unsupported` error where only an approximation exists (ADD_MONTHS keeps month ends,
MONTHS_BETWEEN counts 31-day months, LAST_DAY keeps the time: none has a PostgreSQL twin)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pell import ast, naming
from pell.checker import types as t
from pell.precedence import ATOM, Lowered, wrap

if TYPE_CHECKING:
    from pell.postgres.lower import PgFnLowerer

# Same name, same arguments, same meaning.
_SAME = {
    "UPPER", "LOWER", "INITCAP", "LENGTH", "SUBSTR", "REPLACE", "TRIM", "LTRIM", "RTRIM",
    "LPAD", "RPAD", "CHR", "ASCII", "CONCAT", "ABS", "CEIL", "FLOOR", "MOD", "POWER",
    "SQRT", "SIGN", "GREATEST", "LEAST", "COALESCE", "NULLIF",
}  # fmt: skip

# Arguments PostgreSQL wants as integer (positions, lengths, code points): Oracle truncates a
# fraction there, so TRUNC first.
_INTEGER_ARGS = {"SUBSTR": (1, 2), "LPAD": (1,), "RPAD": (1,), "CHR": (0,)}


def _integer(value: Lowered, type_: t.Type) -> str:
    if type_ == t.INT:
        return value[0]
    return f"trunc({value[0]})::integer"


def lower(
    lowerer: PgFnLowerer,
    plsql: str,
    args: list[Lowered],
    types: list[t.Type],
    span: ast.Span,
) -> Lowered:
    texts = [text for text, _ in args]
    if plsql in _SAME:
        for index in _INTEGER_ARGS.get(plsql, ()):
            if index < len(args):
                texts[index] = _integer(args[index], types[index])
        return f"{plsql.lower()}({', '.join(texts)})", ATOM
    if plsql == naming.REVERSE_FUNCTION:
        # "Reverses the order of the characters in the string" (PostgreSQL docs, String
        # Functions and Operators, Other String Functions: reverse)
        return f"reverse({texts[0]})", ATOM
    if plsql == "INSTR" and len(args) == 2:
        return f"strpos({texts[0]}, {texts[1]})", ATOM
    if plsql in ("ROUND", "TRUNC") and all(t.is_numeric(ty) for ty in types[:1]):
        if len(args) == 2:
            return f"{plsql.lower()}({texts[0]}, {_integer(args[1], types[1])})", ATOM
        return f"{plsql.lower()}({texts[0]})", ATOM
    if plsql == "NVL":
        return f"coalesce({', '.join(texts)})", ATOM
    if plsql == "NVL2":
        tested, if_set, if_null = texts
        return f"CASE WHEN {tested} IS NOT NULL THEN {if_set} ELSE {if_null} END", ATOM
    if plsql == "TO_CHAR" and len(args) == 1:
        return f"{wrap(args[0], ATOM)}::text", ATOM
    if plsql == "TO_CHAR" and len(args) == 2:
        return f"to_char({texts[0]}, {texts[1]})", ATOM
    if plsql == "TO_NUMBER" and len(args) == 1:
        return f"{wrap(args[0], ATOM)}::numeric", ATOM
    if plsql == "TO_NUMBER" and len(args) == 2:
        return f"to_number({texts[0]}, {texts[1]})", ATOM
    if plsql == "TO_DATE" and len(args) == 2:
        return f"to_timestamp({texts[0]}, {texts[1]})::timestamp(0)", ATOM
    if plsql == "TO_TIMESTAMP" and len(args) == 2:
        return f"to_timestamp({texts[0]}, {texts[1]})::timestamp", ATOM
    # Oracle's SYSDATE and SYSTIMESTAMP are the time of the call; PostgreSQL's now() is the
    # transaction's start: clock_timestamp() is the twin
    if plsql == "SYSDATE":
        return "clock_timestamp()::timestamp(0)", ATOM
    if plsql == "SYSTIMESTAMP":
        return "clock_timestamp()::timestamp", ATOM
    if plsql == "USER":
        return "current_user", ATOM
    if plsql == "SYS_GUID":
        return "upper(replace(gen_random_uuid()::text, '-', ''))", ATOM
    if plsql == "EXTRACT":
        field = texts[0].strip("'").upper()
        return f"EXTRACT({field} FROM {texts[1]})", ATOM
    if plsql == "NUMTODSINTERVAL" and texts[1].startswith("'"):
        unit = texts[1].strip("'").lower()
        return f"({wrap(args[0], ATOM)} * INTERVAL '1 {unit}')", ATOM
    raise lowerer.unsupported(f"`{plsql.lower()}` in this form", span)
