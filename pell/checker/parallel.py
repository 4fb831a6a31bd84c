"""@parallel on a fn: PARALLEL_ENABLE, with `partition`, `order` and `cluster` as public Pell
writes them: `@parallel(partition = hash(country_code), order = (country_code, ts))`.

Oracle Database PL/SQL Language Reference, "PARALLEL_ENABLE Clause":
  PARALLEL_ENABLE [ ( PARTITION argument BY { ANY
                      | { HASH | RANGE } ( column [, column ]... ) [ streaming_clause ]
                      | VALUE ( column ) } ) ]
  streaming_clause ::= { ORDER | CLUSTER } expr BY ( column [, column ]... )
"Use the optional PARTITION argument BY clause only with a function that has a REF CURSOR
data type"; "You can partition weak cursor variable arguments to table functions only with
ANY, not with RANGE, HASH, or VALUE"; the columns are those "returned by the REF CURSOR
argument of the function". The clause is a function's (CREATE FUNCTION, a package's function
declaration): a procedure takes none.
"""

from __future__ import annotations

from pell import ast, naming, records
from pell.checker import types as t
from pell.checker.model import CheckedModule, FnInfo
from pell.checker.retry_facts import DML
from pell.diagnostics import Diagnostic

PARTITIONS = ("any", "hash", "range")
STREAMING = ("order", "cluster")


def _misuse(diagnostics: list[Diagnostic], message: str, span: ast.Span, *hints: str) -> None:
    diagnostics.append(Diagnostic.of("parallel-misuse", message, span, hints=hints))





def _changes_data(fn: ast.Fn) -> tuple[str, ast.Span] | None:
    """What in the fn's own body changes data or the transaction (as a message says it), and
    where it stands."""
    for node in ast.walk(fn.body):
        if isinstance(node, ast.SqlBlock):
            words = node.text.split(None, 1)
            # DML; what ends the transaction (COMMIT, DDL, a committing call, a `transaction`
            # block), here or in a fn it calls, the retry facts find (retry_safety)
            if words and words[0].lower() in DML:
                return f"runs `{words[0].lower()}`", node.span
    return None


def _columns(value: ast.Expr) -> list[ast.Name] | None:
    """`(a, b)` or `a` (or `(a)`): the column names, None when one is not a bare name."""
    items = value.items if isinstance(value, ast.ListLit) else (value,)
    names = [item for item in items if isinstance(item, ast.Name) and len(item.path) == 1]
    return names if len(names) == len(items) and names else None


def check_parallel(
    checked: CheckedModule, diagnostics: list[Diagnostic], target: str = "23ai"
) -> None:
    """Check each fn's @parallel and record its clause in its FnInfo. On postgres, a bare
    @parallel is PARALLEL SAFE (pell.postgres); PostgreSQL partitions no function's input."""
    for name, fn in list(checked.fns.items()):
        annotations = [a for a in fn.decl.annotations if a.name == "parallel"]
        if not annotations:
            continue
        for extra in annotations[1:]:
            _misuse(diagnostics, "@parallel is given twice", extra.span)
        if (changes := _changes_data(fn.decl)) is not None:
            # Oracle: a function a query calls may not change data (ORA-14551, ORA-14552);
            # PostgreSQL: one that writes to the database or changes the transaction state
            # "must be marked PARALLEL UNSAFE" (PostgreSQL 15 docs, 15.4.1)
            _misuse(
                diagnostics,
                f"@parallel fn `{name}` {changes[0]}: parallel query servers run it inside a "
                "query, which may not change data or the transaction",
                changes[1],
                "keep the writes in a fn that no query calls",
            )
        clause = _clause(fn, checked, annotations[0], diagnostics)
        if clause is not None and target == "postgres" and clause[0] != "PARALLEL_ENABLE":
            diagnostics.append(
                Diagnostic.of(
                    "unsupported",
                    "`@parallel(...)` (a partitioned input) is not supported on postgres yet",
                    annotations[0].span,
                    hints=("docs/postgres.md lists what the postgres target lowers",),
                )
            )
        if clause is not None:
            checked.fns[name] = records.replace(
                fn, parallel_clause=clause[0], strong_cursor=clause[1]
            )


def _clause(
    fn: FnInfo, checked: CheckedModule, annotation: ast.Annotation, diagnostics: list[Diagnostic]
) -> tuple[str, str] | None:
    """(the PARALLEL_ENABLE clause, the parameter that needs a strongly typed cursor or "")."""
    if not fn.is_function:
        _misuse(
            diagnostics,
            f"@parallel makes a function PARALLEL_ENABLE; `{fn.decl.name}` returns nothing",
            annotation.span,
        )
        return None
    given: dict[str, ast.AnnotationArg] = {}
    for arg in annotation.args:
        if arg.name not in ("partition", *STREAMING) or arg.name in given:
            _misuse(
                diagnostics,
                "@parallel takes `partition`, then `order` or `cluster`, by name"
                + (f"; `{arg.name}` is given twice" if arg.name in given else ""),
                arg.span,
            )
            return None
        given[arg.name] = arg
    if not given:
        return "PARALLEL_ENABLE", ""
    partition = given.get("partition")
    if partition is None:
        _misuse(
            diagnostics,
            "@parallel's `order` and `cluster` say how each partition's rows arrive: give "
            "`partition = hash(..)` or `range(..)` too",
            annotation.span,
        )
        return None
    cursors = [p for p in fn.params if isinstance(p.type, t.CursorType)]
    if len(cursors) != 1:
        _misuse(
            diagnostics,
            f"`partition` splits the rows of the fn's one `cursor<T>` parameter; "
            f"`{fn.decl.name}` has {len(cursors) or 'none'}",
            partition.span,
            "PARTITION BY takes a function's REF CURSOR parameter (PARALLEL_ENABLE Clause)",
        )
        return None
    cursor = cursors[0]
    assert isinstance(cursor.type, t.CursorType)
    row = cursor.type.element
    fields = set(checked.record_info(row).fields) if isinstance(row, t.RecordType) else set()
    param = naming.param_name(cursor.decl.name)

    def column_list(value: ast.Expr, what: str) -> str | None:
        names = _columns(value)
        if names is None:
            _misuse(diagnostics, f"{what} lists columns of the rows: `(a, b)`", value.span)
            return None
        for column in names:
            if column.path[0] not in fields:
                _misuse(
                    diagnostics,
                    f"`{column.path[0]}` is no field of `{row}`, the rows of `{cursor.decl.name}`",
                    column.span,
                )
                return None
        return ", ".join(naming.field_name(c.path[0]) for c in names)

    value = partition.value
    kind = (
        value.callee.path
        if isinstance(value, ast.Call)
        else (value.path if isinstance(value, ast.Name) else ())
    )
    if (
        kind not in (("any",), ("hash",), ("range",))
        or (kind == ("any",) and isinstance(value, ast.Call))
        or (kind != ("any",) and not isinstance(value, ast.Call))
    ):
        _misuse(
            diagnostics,
            "`partition` is `any`, `hash(columns)` or `range(columns)`",
            value.span,
        )
        return None
    streaming = [given[s] for s in STREAMING if s in given]
    if kind == ("any",):
        if streaming:
            _misuse(
                diagnostics,
                f"`{streaming[0].name}` follows `hash(..)` or `range(..)`, not `any`",
                streaming[0].span,
            )
            return None
        return f"PARALLEL_ENABLE (PARTITION {param} BY ANY)", ""
    assert isinstance(value, ast.Call)
    listed = ast.ListLit(value.args, span=value.span) if value.args else value
    columns = column_list(listed, f"`{kind[0]}(..)`")
    if columns is None:
        return None
    clause = f"PARTITION {param} BY {kind[0].upper()} ({columns})"
    if len(streaming) > 1:
        _misuse(diagnostics, "@parallel takes `order` or `cluster`, not both", streaming[1].span)
        return None
    if streaming:
        ordered = column_list(streaming[0].value, f"`{streaming[0].name}`")
        if ordered is None:
            return None
        clause += f" {str(streaming[0].name).upper()} {param} BY ({ordered})"
    # HASH and RANGE partition a strongly typed cursor only
    return f"PARALLEL_ENABLE ({clause})", cursor.decl.name
