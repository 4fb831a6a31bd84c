"""A value as text, the same in every session and on both targets: the one table every
conversion to text reads (interpolation, `.to_text()`, `.into::<text>()`, `+` on text, and a
number where a built-in wants text), for Oracle (pell.codegen.expressions) and PostgreSQL
(pell.postgres.lower).

Neither database's own conversion will do. Oracle's TO_CHAR without a format writes a DATE
"in the default date format" and a TIMESTAMP "in the default timestamp format" (SQL Language
Reference, TO_CHAR (datetime)): NLS_DATE_FORMAT, often DD-MON-RR, which drops the time and
names the month in NLS_DATE_LANGUAGE; and a number with the decimal character of
NLS_NUMERIC_CHARACTERS, "If you omit 'nlsparam' ... this function uses the default parameter
values for your session" (TO_CHAR (number)): 1,5 in a German session. PostgreSQL writes a
timestamp as DateStyle says and an interval as IntervalStyle says (PostgreSQL 15 docs, 8.5.2
"Date/Time Output", 8.5.5 "Interval Output"). So each form here names its format:

    int        42              TO_CHAR(n): an integer's significant digits have no decimal
                               character ("exactly long enough to hold its significant
                               digits", TO_CHAR (number)); PostgreSQL's integer output
    number     0.5  -1234.25   Oracle: the package's pell_number_text (TO_CHAR with 'TM9'
                               and the decimal character fixed by its nlsparam, then 0 before
                               a leading point); PostgreSQL: numeric's output, which no
                               setting changes, without trailing zeros
    bool       true  false
    date       2024-05-01 13:45:00          the SQL literal's form; the masks hold no month or
    timestamp  2024-05-01 13:45:00.250000   day names, so NLS_DATE_LANGUAGE has no part
    interval   1 02:03:04.500000            [-]days hours:minutes:seconds: TO_DSINTERVAL's
               -0 00:00:01.000000           SQL format (SQL Language Reference, TO_DSINTERVAL)
    bytes      CAFE01          two upper-case hexadecimal digits a byte: RAWTOHEX ("Each byte
                               is represented by two hexadecimal digits", SQL Language
                               Reference, RAWTOHEX), which reads no NLS setting

Text stays as it is: no TO_CHAR around text. A SQL value of a type pellc cannot see (a column
of a cursor row) has no entry: it converts the way the database does by default, by the
session's settings (README, "Everyday forms", says how to give it a type).

One setting is left: a session whose NLS_CALENDAR is not Gregorian counts years and months
its own way in TO_CHAR too (Database Reference, NLS_CALENDAR); TO_CHAR (datetime) documents
NLS_DATE_LANGUAGE as its only nlsparam, so the calendar is not pinned here.

The JSON of error payloads (JSON_FORMS: pell.codegen.subprograms.json_value, and
pell.postgres.lower.raise_error) writes the same values on both targets: a date or a timestamp
as a string of the same fields joined by ISO 8601's `T`, an interval as a string of its text,
a number as a JSON number without PostgreSQL's trailing zeros. Left to the database, Oracle
writes TO_CHAR(interval) (`+000000001 02:00:00.500000000`) and PostgreSQL an interval as
IntervalStyle says, a timestamp without its trailing zeros, `2.5000000000000000` for 10 / 4.
"""

from __future__ import annotations

from pell import naming
from pell.checker import types as t
from pell.precedence import ATOM, Lowered, wrap
from pell.records import record

# The date, then the time of day; TEXT_SEPARATOR between them in text, JSON_SEPARATOR in JSON.
DAY_MASK = "YYYY-MM-DD"
TIME_MASKS = {
    "date": "HH24:MI:SS",
    # FF6: six digits, whatever the value's own precision (SQL Language Reference, Datetime
    # Format Elements, FF [1..9]); PostgreSQL keeps microseconds
    "timestamp": "HH24:MI:SS.FF6",
}
# PostgreSQL's to_char: US, microseconds, six digits
POSTGRES_TIME_MASKS = {**TIME_MASKS, "timestamp": "HH24:MI:SS.US"}
TEXT_SEPARATOR = " "
JSON_SEPARATOR = '"T"'


def datetime_mask(family: str, separator: str = TEXT_SEPARATOR) -> str:
    """Oracle's format model for a date or a timestamp."""
    return f"{DAY_MASK}{separator}{TIME_MASKS[family]}"


def postgres_datetime_mask(family: str, separator: str = TEXT_SEPARATOR) -> str:
    """PostgreSQL's to_char template for a date or a timestamp: the same fields."""
    return f"{DAY_MASK}{separator}{POSTGRES_TIME_MASKS[family]}"


@record
class TextForm:
    """How a value of one type becomes text. `{value}` is the value as lowered, `{atom}` the
    same in parentheses unless it is atomic."""

    oracle: str
    postgres: str
    oracle_function: str = ""  # the package's own function the Oracle form calls


_PG_INTERVAL = (
    # the sign, then the size with whole days (justify_hours: 30 hours are 1 day 6 hours);
    # the subquery reads the value once
    "(SELECT CASE WHEN pell_v < interval '0' THEN '-' ELSE '' END || "
    "to_char(justify_hours(CASE WHEN pell_v < interval '0' THEN -pell_v ELSE pell_v END), "
    "'FMDD HH24:MI:SS.US') FROM (SELECT {value} AS pell_v) AS pell_interval)"
)

TEXT_FORMS: dict[str, TextForm] = {
    "int": TextForm("TO_CHAR({value})", "{atom}::text"),
    "number": TextForm(
        f"{naming.NUMBER_TEXT_FUNCTION}({{value}})",
        # numeric division keeps 16 decimal places (10 / 4 is 2.5000000000000000)
        "trim_scale({value})::text",
        naming.NUMBER_TEXT_FUNCTION,
    ),
    "bool": TextForm("CASE WHEN {value} THEN 'true' WHEN NOT {atom} THEN 'false' END", "{atom}::text"),
    "date": TextForm(
        f"TO_CHAR({{value}}, '{datetime_mask('date')}')",
        f"to_char({{value}}, '{postgres_datetime_mask('date')}')",
    ),
    "timestamp": TextForm(
        f"TO_CHAR({{value}}, '{datetime_mask('timestamp')}')",
        f"to_char({{value}}, '{postgres_datetime_mask('timestamp')}')",
    ),
    "interval": TextForm(
        f"{naming.INTERVAL_TEXT_FUNCTION}({{value}})",
        _PG_INTERVAL,
        naming.INTERVAL_TEXT_FUNCTION,
    ),
    # encode(.., 'hex') writes lower-case digits (PostgreSQL docs, "Binary String Functions")
    "bytes": TextForm("RAWTOHEX({value})", "upper(encode({value}, 'hex'))"),
    # JSON text as it is (pell.checker.json): a CLOB read as text, a jsonb's text form
    "json": TextForm("{value}", "{atom}::text"),
}


# The way back, `s.into::<number>()`: a decimal number written with a period, in every
# session. Oracle's TO_NUMBER without a format reads the decimal character of the session
# ("If you omit 'nlsparam' ... uses the default values for your session to interpret expr",
# SQL Language Reference, TO_NUMBER): "0.5" is ORA-01722 in a German one. The package's
# pell_text_number reads it in that session's terms (templates/text_functions.sql.j2).
# PostgreSQL's `::numeric` takes the period whatever the session: lc_numeric "Sets the
# locale to use for formatting numbers, for example with the to_char family of functions"
# (PostgreSQL 15 docs, 19.11.2), and numeric's own input is not one of them.
NUMBER_FROM_TEXT = TextForm(
    f"{naming.TEXT_NUMBER_FUNCTION}({{value}})",
    "{atom}::numeric",
    naming.TEXT_NUMBER_FUNCTION,
)


# A value as the error payload's JSON takes it (see above): the form of what it is given, a
# number or a text; the rest (int, bool, text) goes as it is.
JSON_FORMS: dict[str, TextForm] = {
    # numeric division keeps 16 decimal places on PostgreSQL; Oracle's NUMBER has no
    # trailing zeros
    "number": TextForm("{value}", "trim_scale({value})"),
    **{
        family: TextForm(
            f"TO_CHAR({{value}}, '{datetime_mask(family, JSON_SEPARATOR)}')",
            f"to_char({{value}}, '{postgres_datetime_mask(family, JSON_SEPARATOR)}')",
        )
        for family in ("date", "timestamp")
    },
    "interval": TEXT_FORMS["interval"],
    "bytes": TEXT_FORMS["bytes"],  # hex, not to_json's escaped form
}


def json_form(type_: t.Type) -> TextForm | None:
    """How an error payload's JSON takes a value of `type_`; None: as it is."""
    return JSON_FORMS.get(type_.name) if isinstance(type_, t.Scalar) else None


def text_form(type_: t.Type) -> TextForm | None:
    """The form of a non-text scalar; None for text and for what has no form of its own (a
    SQL value, None)."""
    if isinstance(type_, t.Scalar) and not t.is_text(type_):
        return TEXT_FORMS[type_.name]
    return None


# A list as text, `"{xs}"` (public Pell's form): `[` each element in its text form, `, `
# between them, `]`; a NULL element is `NULL`, an empty list `[]`. Lists of scalars only.
LIST_OPEN, LIST_SEPARATOR, LIST_CLOSE, LIST_NULL = "[", ", ", "]", "NULL"


def list_text_function(element: t.Scalar) -> str:
    """The package's function that writes a `list<element>` as text (Oracle)."""
    return f"{naming.LIST_TEXT_FUNCTION}_{element.name}"


def oracle_list_text_function(element: t.Scalar, list_type: str) -> str:
    """The body of list_text_function(element), indented for a package body or a block. It
    walks the collection from FIRST by NEXT, a caller's sparse list too (PL/SQL Language
    Reference 23, "Collection Methods", Table 6-2: FIRST "Returns first index in collection",
    NEXT "Returns index that succeeds specified index"; "FIRST and LAST Collection Methods":
    for an associative array indexed by PLS_INTEGER the first element is the one with the
    smallest index); the text is a VARCHAR2, so a list whose text is longer than 32767 bytes
    raises VALUE_ERROR."""
    form = text_form(element)
    item = "p_list(l_at)" if form is None else oracle_text(form, ("p_list(l_at)", ATOM))
    name = list_text_function(element)
    return (
        f"  -- `\"{{xs}}\"` for a list<{element.name}> (pell.codegen.text_forms): "
        f"{LIST_OPEN}a{LIST_SEPARATOR}b{LIST_CLOSE}, each\n"
        f"  -- element in its text form, {LIST_NULL} for a NULL one.\n"
        f"  FUNCTION {name}(p_list IN {list_type}) RETURN VARCHAR2 IS\n"
        f"    l_text VARCHAR2(32767) := '{LIST_OPEN}';\n"
        f"    l_at PLS_INTEGER := p_list.FIRST;\n"
        f"  BEGIN\n"
        f"    WHILE l_at IS NOT NULL LOOP\n"
        f"      IF l_at > p_list.FIRST THEN\n"
        f"        l_text := l_text || '{LIST_SEPARATOR}';\n"
        f"      END IF;\n"
        f"      l_text := l_text || NVL({item}, '{LIST_NULL}');\n"
        f"      l_at := p_list.NEXT(l_at);\n"
        f"    END LOOP;\n"
        f"    RETURN l_text || '{LIST_CLOSE}';\n"
        f"  END {name};"
    )


def postgres_list_text(element: t.Scalar, value: Lowered) -> str:
    """A `list<element>` as text (PostgreSQL): the same text, built by a subquery over the
    array's elements in their order (`WITH ORDINALITY`, PostgreSQL 15 docs, 7.2.1.4 "Table
    Functions"); coalesce writes a NULL element, and an empty (or NULL) array is `[]`."""
    form = text_form(element)
    item = "pell_e" if form is None else postgres_text(form, ("pell_e", ATOM))
    return (
        f"concat('{LIST_OPEN}', array_to_string(ARRAY(SELECT coalesce({item}, '{LIST_NULL}') "
        f"FROM unnest({value[0]}) WITH ORDINALITY AS pell_u(pell_e, pell_i) ORDER BY pell_i), "
        f"'{LIST_SEPARATOR}'), '{LIST_CLOSE}')"
    )


def oracle_text(form: TextForm, value: Lowered) -> str:
    return form.oracle.format(value=value[0], atom=wrap(value, ATOM))


def postgres_text(form: TextForm, value: Lowered) -> str:
    return form.postgres.format(value=value[0], atom=wrap(value, ATOM))
