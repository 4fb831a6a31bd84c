"""Annotation rules: which annotations exist, what they take, and what @retry refuses to meet."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from pell import ast
from pell.checker import ut
from pell.checker.retry_facts import DML, tokens_of
from pell.diagnostics import Diagnostic, Note, did_you_mean
from pell.oracle_errors import ERROR_CLASSES
from pell.retry import RetryPolicy, policy_from_annotation
from pell.sqltext import tables_named
from pell.sqltokens import TokenType

if TYPE_CHECKING:
    from pell.checker.imports import Imports

FN_ANNOTATIONS = ("retry", "autonomous", "pipelined", "deterministic", "result_cache", "udf")
ERROR_ANNOTATIONS = ("propagate", "skip", "panic")
# Public Pell's annotations of an `unsafe fn` (pell.checker.dynamic_sql)
DYNAMIC_SQL_ANNOTATIONS = ("binds", "touches")

# @retry with one of these cannot be made safe; the reason completes "@retry cannot be used with ...".
_RETRY_CONFLICTS = {
    "autonomous": "an autonomous transaction commits inside the loop, so the savepoint "
    "cannot undo its work",
    "pipelined": "rows already piped to the caller cannot be taken back by a retry",
}


# Annotations of the wider Pell language that pellc does not take yet.
_OUT_OF_SCOPE: tuple[str, ...] = ()
# Checked once the fn's types are known (pell.checker.parallel)
_CHECKED_LATER = ("parallel",)

# Clauses Oracle allows on functions only.
_FUNCTION_ONLY = ("deterministic", "result_cache", "udf")


def _no_arguments(annotation: ast.Annotation, diagnostics: list[Diagnostic]) -> None:
    if annotation.args:
        diagnostics.append(
            Diagnostic.of(
                "annotation-argument",
                f"@{annotation.name} takes no arguments",
                annotation.args[0].span,
            )
        )


def _unknown(annotation: ast.Annotation, known: tuple[str, ...], what: str) -> Diagnostic:
    return Diagnostic.of(
        "unknown-annotation",
        f"unknown annotation @{annotation.name} on {what}; it is ignored",
        annotation.span,
        hints=(
            f"annotations here are: {', '.join('@' + k for k in known)}"
            if known
            else f"{what} takes no annotations",
        ),
    )


def _check_dynamic_sql_annotation(
    fn: ast.Fn, annotation: ast.Annotation, diagnostics: list[Diagnostic]
) -> None:
    """@binds(a, b) (the parameters `exec_dyn` binds) and @touches(t1, t2) (the tables its
    SQL names, for the reader): names, on an `unsafe fn`, @binds' its parameters."""
    if not fn.unsafe:
        diagnostics.append(
            Diagnostic.of(
                "annotation-misuse",
                f"@{annotation.name} describes the dynamic SQL of an `unsafe fn`; `{fn.name}` "
                "is not one",
                annotation.span,
            )
        )
        return
    params = {param.name for param in fn.params}
    for arg in annotation.args:
        value = arg.value
        if arg.name is not None or not isinstance(value, ast.Name):
            diagnostics.append(
                Diagnostic.of(
                    "annotation-misuse",
                    f"@{annotation.name} takes names only",
                    arg.span,
                )
            )
        elif annotation.name == "binds" and (len(value.path) != 1 or value.path[0] not in params):
            diagnostics.append(
                Diagnostic.of(
                    "annotation-misuse",
                    f"@binds lists `{value.text}`, which is no parameter of `{fn.name}`",
                    arg.span,
                    hints=("@binds lists the parameters `exec_dyn` passes as binds",),
                )
            )


def check_fn_annotations(
    fn: ast.Fn, sequences: frozenset[str], diagnostics: list[Diagnostic]
) -> tuple[RetryPolicy | None, ast.Annotation | None]:
    """Check a fn's annotations (`sequences`: the module's own); return its retry policy and
    the @retry it came from."""
    retries = [a for a in fn.annotations if a.name == "retry"]
    by_name = {a.name: a for a in fn.annotations}
    for annotation in fn.annotations:
        if annotation.name in _OUT_OF_SCOPE:
            diagnostics.append(
                Diagnostic.of(
                    "unsupported", f"@{annotation.name} is not supported yet", annotation.span
                )
            )
        elif annotation.name in _CHECKED_LATER:
            continue
        elif annotation.name in DYNAMIC_SQL_ANNOTATIONS:
            _check_dynamic_sql_annotation(fn, annotation, diagnostics)
        elif annotation.name in ut.FN_ANNOTATIONS:
            continue  # a utPLSQL suite's: pell.checker.ut.check_suite
        elif annotation.name not in FN_ANNOTATIONS:
            diagnostics.append(_unknown(annotation, FN_ANNOTATIONS, "a fn"))
        elif annotation.name != "retry":
            _no_arguments(annotation, diagnostics)
            if annotation.name in _FUNCTION_ONLY and fn.return_type is None:
                diagnostics.append(
                    Diagnostic.of(
                        "annotation-misuse",
                        f"@{annotation.name} applies to a fn that returns a value; "
                        f"`{fn.name}` returns nothing",
                        annotation.span,
                    )
                )
    check_cached_fn_tables(fn, by_name, diagnostics)
    check_cached_fn_values(fn, by_name, sequences, diagnostics)
    if not retries:
        return None, None

    retry = retries[0]
    for extra in retries[1:]:
        diagnostics.append(
            Diagnostic.of(
                "retry-combination",
                f"@retry is given twice on fn `{fn.name}`; one retry loop would run inside "
                "the other",
                extra.span,
                notes=(Note("the first @retry is here", retry.span),),
                hints=("keep one @retry and put every argument in it",),
            )
        )
    if fn.finally_body is not None:
        diagnostics.append(
            Diagnostic.of(
                "retry-combination",
                f"@retry cannot be used on fn `{fn.name}`, which has a `finally` block: "
                "the cleanup would run once per attempt, inside the savepoint",
                retry.span,
                notes=(Note("the `finally` block is here", fn.finally_body.span),),
                hints=(
                    "move the cleanup into a helper fn and call it after the retried fn returns",
                ),
            )
        )
    read = _caller_cursor_read(fn)
    if read is not None:
        cursor, span = read
        diagnostics.append(
            Diagnostic.of(
                "retry-combination",
                f"@retry cannot be used on fn `{fn.name}`, which reads its caller's cursor "
                f"`{cursor}`: each FETCH moves the cursor on, and no rollback moves it back "
                "(PL/SQL Language Reference, \"FETCH Statement\"), so a retried attempt would "
                "read only the rows the failed one left",
                retry.span,
                notes=(Note(f"`{cursor}` is read here", span),),
                hints=(
                    "retry the fn that opens the cursor (each attempt opens it again), or "
                    "read its rows into a list before the retried fn",
                ),
            )
        )
    for name, reason in _RETRY_CONFLICTS.items():
        if name in by_name:
            diagnostics.append(
                Diagnostic.of(
                    "retry-combination",
                    f"@retry cannot be used with @{name} on fn `{fn.name}`: {reason}",
                    retry.span,
                    notes=(Note(f"@{name} is here", by_name[name].span),),
                )
            )
    for name in ("udf", "deterministic", "result_cache", "parallel"):
        if name in by_name:
            diagnostics.append(
                Diagnostic.of(
                    "retry-callable-from-sql",
                    f"@retry cannot be used with @{name} on fn `{fn.name}`: a fn called from SQL "
                    "cannot roll back to a savepoint or commit (ORA-14552)",
                    retry.span,
                    notes=(Note(f"@{name} is here", by_name[name].span),),
                    hints=("retry in the PL/SQL that runs the SQL, not in the fn SQL calls",),
                )
            )
    policy, retry_diagnostics = policy_from_annotation(retry)
    diagnostics.extend(retry_diagnostics)
    return policy, retry


def _caller_cursor_read(fn: ast.Fn) -> tuple[str, ast.Span] | None:
    """The first use of a cursor parameter the caller opened (`in` or `inout`) in the fn's
    body: a loop over it or a call given it reads its rows, which come once."""
    cursors = {
        param.name
        for param in fn.params
        if param.mode != "out"
        and isinstance(param.type, ast.NamedType)
        and param.type.name == "cursor"
    }
    if not cursors:
        return None
    for node in ast.walk(fn.body):
        if isinstance(node, ast.Name) and len(node.path) == 1 and node.path[0] in cursors:
            return node.path[0], node.span
    return None


def check_cached_fn_tables(
    fn: ast.Fn, by_name: dict[str, ast.Annotation], diagnostics: list[Diagnostic]
) -> None:
    """A warning at the first table the fn's own SQL (its body's and its `finally`'s, not the
    fns it calls) reads or changes, under @deterministic, or changes, under @result_cache.

    DETERMINISTIC: "A deterministic function must return the same value on two distinct
    invocations if the arguments provided to the two invocations are the same. A
    DETERMINISTIC function may not have side effects", and Oracle may use "previously
    calculated results" instead of running it; "Do not specify DETERMINISTIC for a function
    whose result depends on the state of session variables or schema objects" (PL/SQL
    Language Reference, DETERMINISTIC Clause). PostgreSQL's IMMUTABLE, which it lowers to,
    "cannot modify the database" and does no "database lookups" (CREATE FUNCTION).
    RESULT_CACHE: Oracle "detects all data sources (tables and views) that are queried while
    a result-cached function is running", and a committed change to one invalidates the
    cached results (PL/SQL Language Reference, PL/SQL Function Result Cache): reading tables
    is what it is for. A call answered from the cache does not run the body, so a change the
    body makes is skipped: changing a database table is a side effect, and "minimizing side
    effects is especially important when defining a result-cached function" (PL/SQL Language
    Reference, Subprogram Side Effects). DUAL is no table the result depends on."""
    deterministic = by_name.get("deterministic")
    result_cache = by_name.get("result_cache")
    if (deterministic is None and result_cache is None) or fn.return_type is None:
        return  # no fn to cache: `annotation-misuse` says so
    bodies = (fn.body,) if fn.finally_body is None else (fn.body, fn.finally_body)
    warned: set[str] = set()
    for node in (node for body in bodies for node in ast.walk(body)):
        if type(node) is not ast.SqlBlock:
            continue
        tokens = tokens_of(node)
        changes = bool(tokens) and tokens[0].text.lower() in DML
        named = [t for t in tables_named(node.text) if t[1].lower() != "dual"]
        if not named:
            continue
        _, table, offset = named[0]  # of DML: the table it changes
        span = ast.Span(node.text_start + offset, node.text_start + offset + len(table))
        verb = "changes" if changes else "reads"
        if deterministic is not None and "deterministic" not in warned:
            warned.add("deterministic")
            what = (
                "Oracle may use a result it has instead of calling it, and the change is not made"
                if changes
                else "Oracle may answer a call with a result computed before the table changed"
            )
            diagnostics.append(
                Diagnostic.of(
                    "deterministic-reads-tables",
                    f"@deterministic on fn `{fn.name}`, whose SQL {verb} the table `{table}`: "
                    + what,
                    span,
                    notes=(Note("@deterministic is here", deterministic.span),),
                    hints=(
                        "drop @deterministic"
                        + (
                            ""
                            if changes
                            else ": @result_cache caches a fn that reads tables, and Oracle "
                            "drops its results when they change"
                        ),
                    ),
                )
            )
        if result_cache is not None and changes and "result_cache" not in warned:
            warned.add("result_cache")
            diagnostics.append(
                Diagnostic.of(
                    "result-cache-writes",
                    f"@result_cache on fn `{fn.name}`, whose SQL changes the table `{table}`: "
                    "a call answered from the cache does not run the body, and the change is "
                    "not made",
                    span,
                    notes=(Note("@result_cache is here", result_cache.span),),
                    hints=("drop @result_cache, or make the change in a fn that is not cached",),
                )
            )


# Values that change from call to call with the same arguments, read in Pell or in the fn's
# SQL: a sequence's next (or the session's current) number, the clock, a random value, a new
# GUID. By kind, what the value is.
_VOLATILE_SQL = {
    "nextval": "a sequence's next number",
    "currval": "the session's last number of a sequence",
    "sysdate": "the clock",
    "systimestamp": "the clock",
    "current_date": "the clock",
    "current_timestamp": "the clock",
    "localtimestamp": "the clock",
    "sys_guid": "a new GUID on every call",
    "dbms_random": "a random value",
}


def _volatile_reads(
    bodies: tuple[ast.Block, ...], sequences: frozenset[str]
) -> Iterator[tuple[str, str, ast.Span]]:
    """Each value the bodies read that changes from call to call: (as written, what it is,
    where)."""
    for node in (node for body in bodies for node in ast.walk(body)):
        if (
            isinstance(node, ast.FieldAccess)
            and node.name.lower() in ("nextval", "currval")
            and isinstance(node.target, ast.Name)
            and (len(node.target.path) == 2 or node.target.path[0] in sequences)
        ):
            written = f"{node.target.text}.{node.name}"
            yield written, _VOLATILE_SQL[node.name.lower()], node.span
        elif isinstance(node, ast.Name) and node.path in (("sysdate",), ("systimestamp",)):
            yield node.path[0], _VOLATILE_SQL[node.path[0]], node.span
        elif isinstance(node, ast.Call) and node.callee.path[0] in ("sys_guid", "dbms_random"):
            yield node.callee.text, _VOLATILE_SQL[node.callee.path[0]], node.callee.span
        elif type(node) is ast.SqlBlock:
            for token in tokens_of(node):
                word = token.text.lower()
                if token.token_type is TokenType.VAR and word in _VOLATILE_SQL:
                    start = node.text_start + token.start
                    yield token.text, _VOLATILE_SQL[word], ast.Span(start, start + len(token.text))


def check_cached_fn_values(
    fn: ast.Fn,
    by_name: dict[str, ast.Annotation],
    sequences: frozenset[str],
    diagnostics: list[Diagnostic],
) -> None:
    """A warning, under @deterministic or @result_cache, at the first value the fn's body (or
    its `finally`, or its SQL) reads that changes from call to call with the same arguments:
    a sequence's NEXTVAL or CURRVAL, SYSDATE and the other clock functions, DBMS_RANDOM,
    SYS_GUID. A cached answer does not run the body, so it is an earlier call's value (and
    NEXTVAL does not move the sequence). DETERMINISTIC: "A deterministic function must return
    the same value on two distinct invocations if the arguments provided to the two
    invocations are the same", and "Do not specify DETERMINISTIC for a function whose result
    depends on the state of session variables or schema objects" (PL/SQL Language
    Reference, DETERMINISTIC Clause): a sequence is a schema object. RESULT_CACHE: the
    sessions reuse a cached result (PL/SQL Language Reference, PL/SQL Function Result Cache),
    and a reused one was computed by an earlier call (check_cached_fn_tables). The same rule
    holds for PostgreSQL's IMMUTABLE, which @deterministic lowers to."""
    if fn.return_type is None:
        return  # no fn to cache: `annotation-misuse` says so
    cached = [by_name[name] for name in ("deterministic", "result_cache") if name in by_name]
    if not cached:
        return
    bodies = (fn.body,) if fn.finally_body is None else (fn.body, fn.finally_body)
    first = next(_volatile_reads(bodies, sequences), None)
    if first is None:
        return
    written, what, span = first
    for annotation in cached:
        consequence = (
            "Oracle may answer a call with a result it computed before"
            if annotation.name == "deterministic"
            else "a call answered from the cache gets an earlier call's value"
        )
        diagnostics.append(
            Diagnostic.of(
                "volatile-cached-fn",
                f"@{annotation.name} on fn `{fn.name}`, which reads {what} (`{written}`): "
                + consequence,
                span,
                notes=(Note(f"@{annotation.name} is here", annotation.span),),
                hints=(
                    f"drop @{annotation.name}, or pass the value in as an argument",
                ),
            )
        )


def check_retry_targets(
    fn: ast.Fn,
    policy: RetryPolicy,
    annotation: ast.Annotation,
    errors: dict[str, ast.ErrorDecl],
    imports: Imports,
    diagnostics: list[Diagnostic],
) -> tuple[str, ...]:
    """`on = [...]` names known error classes, this module's errors or another module's
    (`stock::Busy`, `pub`), never a @panic one. Returns `on` with each other module's error
    written by its module's full path (`shop.stock::Busy`), as lowering needs it."""
    on_arg = next((a for a in annotation.args if a.name == "on"), None)
    if on_arg is None or not isinstance(on_arg.value, ast.ListLit):
        return policy.on
    resolved: dict[str, str] = {}
    for item in on_arg.value.items:
        if not isinstance(item, ast.Name):
            continue
        written = "::".join(item.path)
        if written in ERROR_CLASSES:
            continue
        if len(item.path) == 2:
            alias, name = item.path
            foreign = imports.find(alias)
            found = foreign.item(name) if foreign is not None else None
            decl = found if isinstance(found, ast.ErrorDecl) else None
            if foreign is None or decl is None or not decl.public:
                what = (
                    f"module `{alias}` is not imported"
                    if foreign is None
                    else f"`{alias}` has no error `{name}`"
                    if decl is None
                    else f"error `{name}` of `{alias}` is not `pub`"
                )
                diagnostics.append(
                    Diagnostic.of("retry-argument", f"`{written}` in `on`: {what}", item.span)
                )
                continue
            resolved[written] = f"{foreign.module.dotted_name}::{name}"
        else:
            name = written
            decl = errors.get(name)
            if decl is None:
                known = [*ERROR_CLASSES, *sorted(errors)]
                diagnostics.append(
                    Diagnostic.of(
                        "retry-argument",
                        f"`{name}` in `on` is neither an error class nor an error of this module"
                        f"{did_you_mean(name, known)}",
                        item.span,
                        hints=(
                            f"the classes are {', '.join(ERROR_CLASSES)}; another module's "
                            "error is written `module::Error`",
                        ),
                    )
                )
                continue
        if any(a.name == "panic" for a in decl.annotations):
            diagnostics.append(
                Diagnostic.of(
                    "retry-argument",
                    f"`{written}` is a @panic error: retrying cannot cure it, so it cannot be in `on`",
                    item.span,
                    # another module's declaration is in another file
                    notes=(Note(f"`{name}` is declared here", decl.span),) if written == name else (),
                )
            )
    return tuple(resolved.get(name, name) for name in policy.on)


def check_error_annotations(error: ast.ErrorDecl, diagnostics: list[Diagnostic]) -> None:
    categories = [a for a in error.annotations if a.name in ERROR_ANNOTATIONS]
    for annotation in error.annotations:
        if annotation.name not in ERROR_ANNOTATIONS:
            diagnostics.append(_unknown(annotation, ERROR_ANNOTATIONS, "an error"))
        else:
            _no_arguments(annotation, diagnostics)
    for extra in categories[1:]:
        diagnostics.append(
            Diagnostic.of(
                "annotation-argument",
                f"error `{error.name}` has two categories; give one of @propagate, @skip or @panic",
                extra.span,
                notes=(Note("the first is here", categories[0].span),),
            )
        )


def check_plain_annotations(
    annotations: tuple[ast.Annotation, ...], what: str, diagnostics: list[Diagnostic]
) -> None:
    """Records and enums take no annotations."""
    for annotation in annotations:
        diagnostics.append(_unknown(annotation, (), what))
