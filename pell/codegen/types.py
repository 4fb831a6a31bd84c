"""Pell types -> PL/SQL type names, per place (language.md section 3)."""

from __future__ import annotations

from typing import Literal

from pell import naming
from pell.checker import types as t

Place = Literal["local", "param", "field"]

# (local, parameter or return, record field)
_SCALARS: dict[str, tuple[str, str, str]] = {
    "number": ("NUMBER", "NUMBER", "NUMBER"),
    "int": ("PLS_INTEGER", "PLS_INTEGER", "NUMBER(38)"),
    "text": ("VARCHAR2(32767)", "VARCHAR2", "VARCHAR2(4000)"),
    "bigtext": ("CLOB", "CLOB", "CLOB"),
    "bool": ("BOOLEAN", "BOOLEAN", "BOOLEAN"),
    "date": ("DATE", "DATE", "DATE"),
    "timestamp": ("TIMESTAMP", "TIMESTAMP", "TIMESTAMP"),
    # a parameter takes no precision; locals and fields hold any interval Oracle makes
    "interval": (
        "INTERVAL DAY(9) TO SECOND(9)",
        "INTERVAL DAY TO SECOND",
        "INTERVAL DAY(9) TO SECOND(9)",
    ),
    # As text: the PL/SQL maximum in a local, the SQL column maximum in a field. RAW's
    # "maximum size is 32767 bytes" in PL/SQL; a RAW column holds 2000 bytes, 32767 only with
    # MAX_STRING_SIZE = EXTENDED (PL/SQL Language Reference, "RAW Data Type"; SQL Language
    # Reference, "RAW and LONG RAW Data Types"). A parameter takes no size.
    "bytes": ("RAW(32767)", "RAW", "RAW(2000)"),
    # JSON text, on every target (pell.checker.json): the SQL/JSON functions read a CLOB
    # ("It can be of data type VARCHAR2, BLOB, or CLOB", JSON Developer's Guide, "SQL/JSON
    # Function JSON_VALUE"), and a CLOB holds text of any size
    "json": ("CLOB", "CLOB", "CLOB"),
}
_PLACE_INDEX = {"local": 0, "param": 1, "field": 2}


class UnloweredType(Exception):
    """A type with no PL/SQL form yet; the checker reports these before codegen runs."""


def plsql_type(type_: t.Type, place: Place) -> str:
    if isinstance(type_, t.Scalar):
        return _SCALARS[type_.name][_PLACE_INDEX[place]]
    if isinstance(type_, t.RecordType):
        return type_.plsql or naming.record_type_name(type_.name)
    if isinstance(type_, t.ObjectType):
        return type_.plsql  # a schema-level type: the same name in every place
    if isinstance(type_, t.ListType):
        return naming.list_type_name(str(type_.element))
    if isinstance(type_, t.CursorType):
        return "SYS_REFCURSOR"  # what a CURSOR(subquery) argument is (SQL Reference, CURSOR Expressions)
    if isinstance(type_, t.TableRow):
        # PL/SQL Language Reference 23, "%ROWTYPE Attribute": "For every visible column of
        # the full or partial row, the record has a field with the same name and data type"
        return f"{type_.table}%ROWTYPE"
    if isinstance(type_, t.SqlValue) and type_.column:
        return f"{type_.column}%TYPE"  # the column's own type, anchored
    raise UnloweredType(f"no PL/SQL type for `{type_}` yet")
