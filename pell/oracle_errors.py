"""Oracle's errors as the retry sees them: the classes `on = [...]` names, the codes no retry
can cure, and the panic range."""

from __future__ import annotations

# Oracle error codes that retrying cannot cure: pell_is_panic() returns TRUE for them
# (and for the whole panic range), so the retry loop re-raises them at once.
NEVER_RETRY: tuple[tuple[int, str, str], ...] = (
    (-1476, "ZERO_DIVIDE", "programming error: division by zero"),
    (-6502, "VALUE_ERROR", "programming error: numeric or value error"),
    (-6592, "CASE_NOT_FOUND", "programming error: no CASE branch matched"),
    (-6500, "STORAGE_ERROR", "programming error: PL/SQL ran out of memory or memory is corrupt"),
    (-6501, "PROGRAM_ERROR", "programming error: PL/SQL internal error"),
    (-6504, "ROWTYPE_MISMATCH", "programming error: cursor variable row types differ"),
    (-1410, "invalid ROWID", "programming error: a ROWID that names no row"),
    (-1483, "invalid length for DATE or NUMBER bind", "programming error: a bad bind value"),
    (-6511, "CURSOR_ALREADY_OPEN", "programming error: a cursor opened twice"),
    (-1001, "INVALID_CURSOR", "programming error: a cursor used when not open"),
    (-6530, "ACCESS_INTO_NULL", "programming error: a field of an uninitialised object"),
    (-6531, "COLLECTION_IS_NULL", "programming error: an uninitialised collection"),
    (
        -6532,
        "SUBSCRIPT_OUTSIDE_LIMIT",
        "programming error: an index outside the collection's limit",
    ),
    (-6533, "SUBSCRIPT_BEYOND_COUNT", "programming error: an index past the collection's count"),
    # ORA-01426 and ORA-06503: docs/retry.md cites Oracle for each code added by issue 24
    (
        -1426,
        "numeric overflow",
        "programming error: a calculation overflows its type (a PLS_INTEGER, say)",
    ),
    (
        -6503,
        "function returned without value",
        "programming error: a function ended without RETURN",
    ),
    # SQLCODE is +1 for a PL/SQL exception declared without EXCEPTION_INIT (PL/SQL Language
    # Reference, SQLCODE Function): a RAISE of code's own, a decision, not a transient failure
    (1, "user-defined exception", "decision: a PL/SQL exception raised with no error code"),
    (
        -4068,
        "package state discarded",
        "broken state: the package was recompiled under the session",
    ),
    (-4061, "package state invalidated", "broken state: the existing package state is invalid"),
    (-4065, "not executed, altered or dropped", "broken state: a stored procedure changed"),
    (-6508, "program unit not found", "broken state: a called program unit is missing"),
    (-4063, "object has errors", "broken state: a called unit or view does not compile"),
    (-600, "internal error", "crash: Oracle internal error"),
    (-7445, "exception encountered: core dump", "crash: Oracle process failure"),
    (-1, "DUP_VAL_ON_INDEX", "constraint: unique constraint violated"),
    (-1400, "cannot insert NULL", "constraint: NOT NULL violated on insert"),
    (-1407, "cannot update to NULL", "constraint: NOT NULL violated on update"),
    (-2290, "check constraint violated", "constraint: check constraint"),
    (-2291, "parent key not found", "constraint: foreign key, no parent"),
    (-2292, "child record found", "constraint: foreign key, children exist"),
    (-2091, "transaction rolled back", "constraint: a deferred constraint failed at COMMIT"),
    (-12899, "value too large for column", "data: the value does not fit the column"),
    (-1438, "value larger than column precision", "data: the number does not fit the column"),
    (-1722, "INVALID_NUMBER", "data: text that is not a number"),
    (-1830, "date format ends before the input", "data: text that is not a date of the format"),
    (-1840, "input too short for date format", "data: text that is not a date of the format"),
    (-1843, "not a valid month", "data: text that is not a date of the format"),
    (-1858, "non-numeric character in a date", "data: text that is not a date of the format"),
    (-1861, "literal does not match format string", "data: text that is not a date of the format"),
    (-1422, "TOO_MANY_ROWS", "data: a single-row fetch found several rows"),
    (
        -1427,
        "single-row subquery returns several rows",
        "data: a scalar subquery found several rows",
    ),
    # SQLCODE is +100 for NO_DATA_FOUND (the ANSI code), not -1403.
    (100, "NO_DATA_FOUND", "data: a single-row fetch found no row"),
    (-942, "table or view does not exist", "schema: a missing table or view"),
    (-904, "invalid identifier", "schema: a missing column"),
    (-1031, "insufficient privileges", "permission: a missing grant"),
    (-4091, "table is mutating", "cannot roll back: a trigger or fn reads a table being changed"),
    (
        -4092,
        "cannot COMMIT or ROLLBACK in a trigger",
        "cannot roll back: a trigger ends a transaction",
    ),
    (-14551, "cannot perform DML inside a query", "cannot roll back: DML in a fn called from SQL"),
    (
        -14552,
        "cannot perform DDL, commit or rollback inside a query or DML",
        "cannot roll back: a fn called from SQL ends a transaction",
    ),
    (-1086, "savepoint never established", "cannot roll back: the savepoint is gone (a commit)"),
    (-4030, "out of process memory", "resources: PGA memory exhausted"),
    (-4031, "unable to allocate shared memory", "resources: SGA memory exhausted"),
    (-1013, "user requested cancel", "cancellation: the user or a timeout cancelled the call"),
    (-28, "session killed", "cancellation: the session was killed"),
    (-40, "active time limit exceeded", "cancellation: Resource Manager call limit"),
    (-56735, "elapsed time limit exceeded", "cancellation: Resource Manager time limit"),
)

# Every @panic error gets a code in this range (language.md section 6).
PANIC_RANGE = (-20399, -20300)


# The built-in error classes `on = [...]` may name: class -> (Oracle code, what it is).
ERROR_CLASSES: dict[str, tuple[int, str]] = {
    "deadlock": (-60, "ORA-00060 deadlock detected"),
    "serialization": (-8177, "ORA-08177 can't serialize access for this transaction"),
    "busy": (-54, "ORA-00054 resource busy (NOWAIT)"),
    "lock_timeout": (-30006, "ORA-30006 resource busy; acquire with WAIT timeout expired"),
    "snapshot_too_old": (-1555, "ORA-01555 snapshot too old"),
}
