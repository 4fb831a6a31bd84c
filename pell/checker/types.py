"""The checker's types, and when a value of one may stand where another is expected."""

from __future__ import annotations

from pell.records import field, record

SCALARS = (
    "number",
    "int",
    "text",
    "bigtext",
    "bool",
    "date",
    "timestamp",
    "interval",
    "bytes",
    "json",  # JSON text (pell.checker.json)
)


@record
class Scalar:
    name: str  # one of SCALARS

    def __str__(self) -> str:
        return self.name


@record
class RecordType:
    """A record of this module (`module` empty) or of the module imported as `module::`."""

    name: str
    module: str = ""  # the import alias, as the module being checked writes it
    plsql: str = field(default="", compare=False)  # another module's: `bank.accounts.t_account`

    def __str__(self) -> str:
        return f"{self.module}::{self.name}" if self.module else self.name


@record
class ObjectType:
    """An object type of this module (`type Money { }`), a sealed type, or one of its cases
    (`parent`: the sealed type): a schema-level Oracle object type, `plsql` its name."""

    name: str
    plsql: str = field(default="", compare=False)
    parent: str = field(default="", compare=False)

    def __str__(self) -> str:
        return self.name


@record
class ListType:
    element: Type

    def __str__(self) -> str:
        return f"list<{self.element}>"


@record
class CursorType:
    """`cursor<T>`: a SYS_REFCURSOR whose rows are `T`s (a @pipelined fn's `CURSOR(subquery)`,
    or a query opened by `exec_dyn` or `pivot::sum_dyn`); read once, by `for`. `cursor<dyn>`
    (element DynRow): rows whose columns are known only at run time."""

    element: Type

    def __str__(self) -> str:
        return f"cursor<{self.element}>"


@record
class TableRow:
    """`rowtype<table>`: a row of a table or view, PL/SQL's `table%ROWTYPE`. pellc does not
    know its columns: a field is the column of that name, of the type only the database
    knows (an anchored `table.column%TYPE`, as SqlValue)."""

    table: str  # lower case, as Oracle names it unquoted

    def __str__(self) -> str:
        return f"rowtype<{self.table}>"


@record
class DynRow:
    """The row of a `cursor<dyn>`: its columns are known only when the query runs."""

    def __str__(self) -> str:
        return "dyn"


@record
class UnitType:
    def __str__(self) -> str:
        return "Unit"


@record
class NullType:
    """The type of `None`: fits any type (it lowers to NULL)."""

    def __str__(self) -> str:
        return "None"


@record
class NeverType:
    """An expression that does not produce a value (`Err(...)`)."""

    def __str__(self) -> str:
        return "never"


@record
class SqlValue:
    """A column of a SQL row: its type is known only to the database. `column`, when one
    table's column is known (`orders.status`), declares a variable of it: `%TYPE`."""

    column: str = ""

    def __str__(self) -> str:
        return f"the type of {self.column}" if self.column else "SQL value"


@record
class SqlRow:
    """The row of a cursor `for` loop: one SQL value per select-list name; `texts` name the
    columns the SQL itself makes text (a string, a `||`, UPPER(...): sql_typing.is_text_item),
    which are `text`."""

    names: tuple[str, ...]
    texts: tuple[str, ...] = ()

    def __str__(self) -> str:
        return "SQL row"


@record
class UnknownType:
    """The type of an expression already reported as wrong: fits anywhere, so errors do not cascade."""

    def __str__(self) -> str:
        return "unknown"


Type = (
    Scalar
    | RecordType
    | ObjectType
    | ListType
    | CursorType
    | TableRow
    | DynRow
    | UnitType
    | NullType
    | NeverType
    | SqlValue
    | SqlRow
    | UnknownType
)

NUMBER = Scalar("number")
INT = Scalar("int")
TEXT = Scalar("text")
BIGTEXT = Scalar("bigtext")
BOOL = Scalar("bool")
DATE = Scalar("date")
TIMESTAMP = Scalar("timestamp")
INTERVAL = Scalar("interval")  # INTERVAL DAY TO SECOND
BYTES = Scalar("bytes")  # RAW: binary data, a family of its own
JSON = Scalar("json")  # a family of its own: text goes in by json::parse, out by to_text
UNIT = UnitType()
DYN_ROW = DynRow()
UNKNOWN = UnknownType()

_FAMILIES = {"number": "numeric", "int": "numeric", "text": "text", "bigtext": "text"}


def family(type_: Type) -> str | None:
    """`numeric`, `text`, or the scalar's own name; None for non-scalars."""
    if isinstance(type_, Scalar):
        return _FAMILIES.get(type_.name, type_.name)
    return None


def is_numeric(type_: Type) -> bool:
    return family(type_) == "numeric" or isinstance(type_, SqlValue | UnknownType)


def is_text(type_: Type) -> bool:
    return family(type_) == "text"


def is_temporal(type_: Type) -> bool:
    return family(type_) in ("date", "timestamp")


def datetime_arithmetic(op: str, left: Type, right: Type) -> Type | None:
    """The type of `left op right` when a date, timestamp or interval takes part, as Oracle
    types it (SQL Language Reference, "Datetime/Interval Arithmetic"): DATE - DATE is a
    NUMBER of days and DATE +- a number of days a DATE; TIMESTAMP - TIMESTAMP is an INTERVAL
    DAY TO SECOND; a datetime +- an interval is that datetime's type; intervals add and
    subtract, and multiply and divide by numbers. None when no such rule applies."""
    fl, fr = family(left), family(right)
    if op == "-" and fl == fr == "date":
        return NUMBER
    if op == "-" and fl == fr == "timestamp":
        return INTERVAL
    if op in ("+", "-") and fl in ("date", "timestamp") and (fr == "interval" or fr == "numeric"):
        return left if fr == "interval" or fl == "date" else None
    if op == "+" and fr in ("date", "timestamp") and (fl == "interval" or fl == "numeric"):
        return right if fl == "interval" or fr == "date" else None
    if op in ("+", "-") and fl == fr == "interval":
        return INTERVAL
    if op in ("*", "/") and fl == "interval" and fr == "numeric":
        return INTERVAL
    if op == "*" and fl == "numeric" and fr == "interval":
        return INTERVAL
    return None


def assignable(value: Type, target: Type) -> bool:
    """May a value of type `value` be stored where `target` is expected?"""
    if isinstance(value, UnknownType | NeverType | NullType) or isinstance(target, UnknownType):
        return True
    if isinstance(value, SqlValue):
        return isinstance(target, Scalar | SqlValue)
    if isinstance(target, SqlValue):
        return isinstance(value, Scalar)
    if isinstance(value, Scalar) and isinstance(target, Scalar):
        return family(value) == family(target) and not narrows(value, target)
    if isinstance(value, ListType) and isinstance(target, ListType):
        return _same_elements(value.element, target.element)
    if isinstance(value, ObjectType) and isinstance(target, ObjectType):
        return value == target or value.parent == target.name  # a case is its sealed type's
    if isinstance(value, CursorType) and target == CursorType(DYN_ROW):
        return True  # every cursor is a weak SYS_REFCURSOR, which `cursor<dyn>` is
    return value == target


def narrows(value: Type, target: Type) -> bool:
    """Would storing `value` in `target` lose a fraction? A `number` in an `int`: PLS_INTEGER
    "stores signed integers" (PL/SQL Language Reference, "PLS_INTEGER and BINARY_INTEGER Data
    Types"), and a record's NUMBER(38) field has no decimal places. `.into::<int>()` says how
    to round instead."""
    return target == INT and value != INT and family(value) == "numeric"


def _same_elements(left: Type, right: Type) -> bool:
    """List elements must match both ways (lists are copied whole). One walk down nested
    lists, not two per level: asking `assignable` both ways at every level was exponential."""
    while isinstance(left, ListType) and isinstance(right, ListType):
        left, right = left.element, right.element
    if isinstance(left, ListType) or isinstance(right, ListType):
        return isinstance(left, UnknownType | NeverType | NullType) or isinstance(
            right, UnknownType | NeverType | NullType
        )
    return assignable(left, right) and assignable(right, left)


def comparable(left: Type, right: Type) -> bool:
    return assignable(left, right) or assignable(right, left)
