"""PL/SQL names for Pell names: `p_` params, `l_` locals, `t_` record types, package names."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pell import ast

# The lowering's own variables and procedures. Pell locals are `l_<name>` (or `lv_<name>`
# when the name starts with `pell_`, see local_name), so none of them can meet these.
ATTEMPT_VARIABLE = "l_pell_attempt"  # failed attempts of a retried call so far
RESULT_VARIABLE = "l_pell_result"  # a fn's value, computed before the COMMIT that precedes RETURN
DEADLINE_VARIABLE = "l_pell_deadline"  # `within`: when the retried call gives up
SLEEP_VARIABLE = "l_pell_sleep"  # the next sleep, tested against the deadline first
MODULE_VARIABLE = "l_pell_module"  # `observe`: the session's module and action before the call
ACTION_VARIABLE = "l_pell_action"
INDEX_VARIABLE = "l_pell_i"  # the index of a loop over a list
LAST_INDEX_VARIABLE = "l_pell_last"  # the last index a loop over a caller's list visits
FETCH_BATCH_VARIABLE = "l_pell_rows"  # a cursor loop's batch of rows (BULK COLLECT ... LIMIT)
# a `cursor<dyn>` loop's DBMS_SQL cursor number and its columns (pell_dyn_open)
DYN_CURSOR_VARIABLE = "l_pell_dyn"
DYN_COLUMNS_VARIABLE = "l_pell_dyn_columns"
FETCH_LOOP_LABEL = "pell_fetch"  # the loop of FETCHes a `break` in the rows' loop leaves
# Rows a cursor loop fetches at once: the batch PL/SQL's own cursor FOR loop fetches
FETCH_BATCH_SIZE = 100
FIRST_CURSOR = "c_pell_first"  # `.first()` under SKIP LOCKED: its block's explicit cursor
FINALLY_PROCEDURE = "pell_finally"  # a fn's `finally` block, as a local procedure
SPLIT_FUNCTION = "pell_split"  # `text.split(d)`: a private function of the package
# `re::find_all` and `re::split` (pell.checker.regex): private functions of the package
REGEXP_ALL_FUNCTION = "pell_regexp_all"
REGEXP_SPLIT_FUNCTION = "pell_regexp_split"
# A number and an interval as text (pell.codegen.text_forms): private functions of the package
NUMBER_TEXT_FUNCTION = "pell_number_text"
INTERVAL_TEXT_FUNCTION = "pell_interval_text"
TEXT_NUMBER_FUNCTION = "pell_text_number"  # and back: text as a number
LIST_TEXT_FUNCTION = "pell_list_text"  # `"{xs}"`: `pell_list_text_number(xs)`, one per element type
# pivot::sum_dyn's IN list items, a private function (templates/pivot_functions.sql.j2)
PIVOT_ITEM_FUNCTION = "pell_pivot_item"
REVERSE_FUNCTION = "pell_reverse"  # `reverse(s)`, character by character: a private function
FINALLY_DONE = "l_pell_finally_done"  # set once the cleanup has run

# Locals the lowering itself declares; a Pell local that would collide gets a suffix.
RESERVED_LOCALS = frozenset({ATTEMPT_VARIABLE})

# Oracle's reserved words: no Pell name that reaches PL/SQL without a prefix of its own
# (record fields, fns, packages) may be one; those get a prefix. The union of
# - the PL/SQL reserved words: PL/SQL Language Reference, appendix D "PL/SQL Reserved Words
#   and Keywords", Table D-1 "PL/SQL Reserved Words" (the same table in 11.2, 12.2 and 18);
# - the Oracle SQL reserved words: SQL Language Reference, appendix "Oracle SQL Reserved Words
#   and Keywords", section "Oracle SQL Reserved Words" ("You cannot use Oracle SQL reserved
#   words as nonquoted identifiers"). COLUMN_VALUE and NESTED_TABLE_ID are reserved there as
#   attribute names only (its note 1): a record's fields are the attributes of a @pipelined
#   fn's row type. PRIVILEGES, in the 11.2 list, is kept though later lists leave it out.
# tests/test_reserved_words.py pins this table against both lists, typed from the documents.
ORACLE_RESERVED = frozenset(
    """
    access add all alter and any as asc at audit begin between by case char check cluster
    clusters colauth column column_value columns comment compress connect crash create current
    cursor date decimal declare default delete desc distinct drop else end exception exclusive
    exists fetch file float for from function goto grant group having identified if immediate
    in increment index indexes initial insert integer intersect into is level like lock long
    maxextents minus mlslabel mode modify nested_table_id noaudit nocompress not nowait null
    number of offline on online option or order overlaps pctfree prior privileges procedure
    public raw rename resource revoke row rowid rownum rows select session set share size
    smallint sql start subtype successful synonym sysdate tabauth table then to trigger type
    uid union unique update user validate values varchar varchar2 view views when whenever
    where with
    """.split()
)

# Words that begin a PL/SQL statement (PL/SQL Language Reference, "PL/SQL Language Elements":
# the CLOSE, CONTINUE, EXECUTE IMMEDIATE, EXIT, FORALL, basic LOOP, OPEN, PIPE ROW, RAISE,
# RETURN and WHILE LOOP statements, and ELSIF inside an IF; "Static SQL": COMMIT, MERGE,
# ROLLBACK, SAVEPOINT) that are not reserved words (none is in Table D-1 or the SQL list).
# A call of a fn is a statement, and so is a call into a package without a schema: a fn or
# such a package of one of these names would be called as the statement itself. `return(1);`,
# a call of a procedure `return`, is the RETURN statement `RETURN [ expression ] ;` (RETURN
# Statement), which ends the calling fn; `commit;` is a COMMIT. Such fn and package names get
# a prefix for these too.
STATEMENT_KEYWORDS = frozenset(
    """
    close commit continue elsif execute exit forall loop merge open pipe raise return rollback
    savepoint while
    """.split()
)

# Identifier limits in bytes: 128 from Oracle 12.2 on with COMPATIBLE >= 12.2; --target 12.2
# keeps to the 30 of older compatibility settings.
# postgres: NAMEDATALEN - 1 (PostgreSQL docs, "Identifiers and Key Words")
MAX_IDENTIFIER_BYTES = {"23ai": 128, "19c": 128, "12.2": 30, "postgres": 63}
TARGETS = tuple(MAX_IDENTIFIER_BYTES)


def _unreserved(name: str, prefix: str, begins_statements: bool = False) -> str:
    """`name` lowered, prefixed where Oracle would refuse it bare: a reserved word, or a name
    that does not start with a letter (Pell allows `_x`; Oracle names start with a letter).
    A name that begins call statements (`begins_statements`: a fn's, a package's) is prefixed
    when it is a STATEMENT_KEYWORDS word too."""
    lowered = name.lower()
    if (
        lowered in ORACLE_RESERVED
        or not lowered[:1].isalpha()
        or (begins_statements and lowered in STATEMENT_KEYWORDS)
    ):
        return f"{prefix}{lowered}"
    return lowered


# The lowering's own names start with `pell_` (locals `l_pell_...`, subprograms `pell_...`): a
# Pell local or fn whose name would land there gets another prefix, so the two never meet.
_LOWERING_PREFIX = "pell_"


def local_name(name: str) -> str:
    lowered = name.lower()
    return f"lv_{lowered}" if lowered.startswith(_LOWERING_PREFIX) else f"l_{lowered}"


def param_name(name: str) -> str:
    return f"p_{name.lower()}"


def record_type_name(name: str) -> str:
    return f"t_{name.lower()}"


def list_type_name(element: str) -> str:
    """`list<Order>` -> `t_order_list`, `list<number>` -> `t_number_list`, `list<a::R>` ->
    `t_a_r_list`."""
    return f"t_{element.replace('::', '_').lower()}_list"


def cursor_type_name(element: str) -> str:
    """A strongly typed REF CURSOR of a record's rows: `cursor<Txn>` -> `t_txn_cursor`."""
    return f"t_{element.replace('::', '_').lower()}_cursor"


def row_type_names(module_path: tuple[str, ...], element: str) -> tuple[str, str]:
    """Schema-level types of a @pipelined fn's rows: (`[schema.]pkg_order_row`, `..._rows`)."""
    schema, package = package_name(module_path)
    base = f"{schema + '.' if schema else ''}{package}_{element.replace('::', '_').lower()}"
    return f"{base}_row", f"{base}_rows"


def object_type_name(module: ast.Module, name: str) -> str:
    """An object type's schema-level name: `[schema.]<package>_<type>` (`shapes_demo_money`),
    as a @pipelined fn's row types are: two modules of one schema may each have a `Money`."""
    schema, package = module_package(module)
    return f"{schema + '.' if schema else ''}{package}_{name.lower()}"


def enum_constant(enum: str, variant: str) -> str:
    """`Color::Red` -> `c_color_red`."""
    return f"c_{enum.lower()}_{variant.lower()}"


def field_name(name: str) -> str:
    """A record field: `level` is reserved, so it becomes `f_level`."""
    return _unreserved(name, "f_")


def fn_name(name: str) -> str:
    """A fn: `delete` is reserved, so it becomes `fn_delete` (`return`, which begins a
    statement, `fn_return`); so does `pell_is_panic`, since
    the lowering's own subprograms (pell_is_panic, pell_finally) are named `pell_...`."""
    lowered = name.lower()
    if lowered.startswith(_LOWERING_PREFIX):
        return f"fn_{lowered}"
    return _unreserved(name, "fn_", begins_statements=True)


def unique(name: str, taken: set[str]) -> str:
    """`name`, or `name_2`, `name_3`... the first not in `taken`; the result is added to it."""
    candidate = name
    counter = 2
    while candidate in taken:
        candidate = f"{name}_{counter}"
        counter += 1
    taken.add(candidate)
    return candidate


# Functions of package STANDARD (and SQL's that PL/SQL takes from it) that are no reserved
# words. PL/SQL resolves the first name of `log.info(...)` to STANDARD's LOG before a schema
# object, and then fails: "PLS-00225: subprogram or cursor 'LOG' reference is out of scope"
# (Database Error Messages; PL/SQL Language Reference, "PL/SQL Name Resolution"). A package
# of a one-part module with such a name is `pkg_<name>`, as a reserved word's is.
STANDARD_FUNCTIONS = frozenset(
    """abs acos add_months ascii asin atan atan2 bitand ceil chr coalesce concat cos cosh
    decode dump exp extract floor greatest initcap instr last_day least length ln log lower
    lpad ltrim mod months_between next_day nls_lower nls_upper nullif nvl nvl2 power rawtohex
    regexp_count regexp_instr regexp_like regexp_replace regexp_substr replace round rpad
    rtrim sign sin sinh soundex sqlcode sqlerrm sqrt substr sys_guid sysdate systimestamp tan
    tanh to_char to_clob to_date to_number to_timestamp translate trim trunc uid upper
    userenv vsize xor""".split()
)


def package_name(
    module_path: tuple[str, ...], chosen: str | None = None
) -> tuple[str | None, str]:
    """`hr.employees` -> (`hr`, `employees`); `orders` -> (None, `orders`); `a.b.c` -> (`a`, `b_c`).
    `chosen` (a module's `@package("name")`) replaces the package part; the schema stays."""
    schema = module_path[0].lower() if len(module_path) > 1 else None
    if chosen is not None:
        if schema is None and chosen.lower() in STANDARD_FUNCTIONS:
            return None, f"pkg_{chosen.lower()}"  # as a one-part module's name (below)
        return schema, chosen.lower()
    if len(module_path) == 1:  # called as `pkg.fn(...)`: the package's name begins a statement
        if module_path[0].lower() in STANDARD_FUNCTIONS:
            return None, f"pkg_{module_path[0].lower()}"
        return None, _unreserved(module_path[0], "pkg_", begins_statements=True)
    return schema, _unreserved("_".join(module_path[1:]), "pkg_")  # `schema.pkg.fn(...)`


def module_package(module: ast.Module) -> tuple[str | None, str]:
    """The schema and package a module lowers to."""
    return package_name(module.path, module.chosen_package)


def temporary_name(slug: str) -> str:
    """A temporary of one type (`l_pell_number_list`, `l_pell_accounts_account` for another
    module's record), before `unique` numbers it."""
    return f"l_pell_{slug.replace('::', '_')}"


def error_class_exception(error_class: str) -> str:
    """The exception `on = [deadlock]` catches: `e_pell_deadlock`, bound to ORA-00060."""
    return f"e_pell_{error_class}"


def transaction_savepoint(module_path: tuple[str, ...], fn: str, ordinal: int, limit: int) -> str:
    """The savepoint of a fn's n-th `transaction { }` block (1-based):
    `tx_<package>_<fn>[_<n>]_<hash>`, unique in every project, as a retried fn's is
    (`savepoint_name`): a block that reached another block of the same name would have its
    savepoint moved ("the earlier savepoint is erased", SQL Language Reference, SAVEPOINT).
    The hash covers the ordinal, so two blocks of one fn differ even where the readable part
    is cut."""
    return _own_savepoint("tx", module_path, fn, limit, ordinal)


BULK_INDEX = "l_pell_bulk"  # the index of a FORALL (declared by FORALL itself)
# `bulk.rowcount(i)`, `bulk.total()`: the last FORALL's SQL%BULK_ROWCOUNT and SQL%ROWCOUNT
BULK_COUNTS_TYPE = "t_pell_bulk_counts"
BULK_ROWS = "l_pell_bulk_rows"
BULK_TOTAL = "l_pell_bulk_total"
RUNTIME_PACKAGE = "pell_runtime"  # one exception and code constant per Pell error
TRANSACTION_OPEN = "pell_transaction_open"  # pellc's own error: a transaction-scoped retry
# called with a transaction open


def exception_name(module_path: tuple[str, ...], error_name: str) -> str:
    """A Pell error's exception in the runtime package: `hr.employees` + `NotFound` ->
    `hr_employees_notfound`."""
    return f"{'_'.join(module_path)}_{error_name}".lower()


def runtime_code(exception: str) -> str:
    """The code constant of a runtime exception: `pell_runtime.c_hr_employees_notfound`."""
    return f"{RUNTIME_PACKAGE}.c_{exception}"


def code_constant(module_path: tuple[str, ...], error_name: str) -> str:
    """The qualified constant module code raises a Pell error with."""
    return runtime_code(exception_name(module_path, error_name))


def transaction_committed(ordinal: int) -> str:
    """The flag a fn's n-th `transaction { }` block sets as it commits."""
    return "l_pell_committed" + (f"_{ordinal}" if ordinal > 1 else "")


def saved_param_name(param: str) -> str:
    """The copy of an `inout` parameter a retry restores before each new attempt."""
    return f"l_pell_saved_{param.removeprefix('p_')}"


def savepoint_name(module_path: tuple[str, ...], fn: str, limit: int) -> str:
    """The savepoint of one retried fn: `sp_<package>_<fn>_<hash>`, unique in every project.

    Oracle: "If you create a second savepoint with the same identifier as an earlier savepoint,
    then the earlier savepoint is erased" (SQL Language Reference, SAVEPOINT). A name shared by
    two retried fns lets the inner one move the outer one's savepoint. The hash of the whole
    qualified name (schema, package and fn, as written) keeps names apart that the readable part
    cannot (`a.b_c` + `d` against `a.b` + `c_d`, or names that differ in case); the readable
    part is cut to fit the target's identifier limit.
    """
    return _own_savepoint("sp", module_path, fn, limit)


def _own_savepoint(
    prefix: str, module_path: tuple[str, ...], fn: str, limit: int, ordinal: int | None = None
) -> str:
    """`<prefix>_<package>_<fn>[_<n>]_<hash>`: the hash of the qualified name (with `#<n>` for
    the n-th block of a fn; `#` is in no Pell name) keeps names apart; the readable part is
    cut to `limit` bytes (Pell names are ASCII)."""
    qualified = ".".join((*module_path, fn)) + (f"#{ordinal}" if ordinal is not None else "")
    digest = hashlib.sha256(qualified.encode("utf-8")).hexdigest()[:8]
    _, package = package_name(module_path)
    readable = f"{prefix}_{package}_{fn.lower()}"
    if ordinal is not None and ordinal > 1:
        readable += f"_{ordinal}"
    return f"{readable[: limit - len(digest) - 1].rstrip('_')}_{digest}"
