"""Retry-safety checks over whole retried bodies and every fn they reach (retry.md section 6):
what ends the transaction inside a retry or a `transaction { }` block, retried fns that reach
themselves, what a rollback cannot undo, and retries inside retries.

The checks read the facts and call graph of `retry_facts`, so the same checks see through
calls into other modules when a build joins their facts (`project_findings`).
"""

from __future__ import annotations

from collections.abc import Callable

from pell import ast
from pell.checker.model import CheckedModule, FnInfo
from pell.checker.retry_facts import (
    DML,
    Commit,
    Effect,
    FnFacts,
    FnKey,
    ModuleFacts,
    RetryGraph,
    module_facts,
    tokens_of,
)
from pell.diagnostics import Diagnostic, Note

# Oracle packages pellc has no stub of whose effects a rollback cannot take back, with what
# they do. A stubbed package's `@irreversible` marks decide for it (pell/stubs, or the
# project's own stub, which takes the place of pellc's).
SIDE_EFFECT_PACKAGES = {
    "utl_tcp": "writes to a socket",
    "utl_mail": "sends mail",
    "dbms_pipe": "sends a pipe message",
}


def irreversible_call(path: tuple[str, ...], checked: CheckedModule) -> str | None:
    """What a call in `checked` to the Oracle procedure `path` does that a rollback cannot
    undo, or None: the `@irreversible` mark of the stub it names, else SIDE_EFFECT_PACKAGES."""
    from pell.checker.stubs import marks

    if len(path) != 2:
        return None
    foreign = checked.imports.find(path[0])
    if foreign is not None:
        return marks(foreign.module, path[1])[1] if foreign.is_stub else None
    return SIDE_EFFECT_PACKAGES.get(path[0].lower())

# Values that differ from one attempt to the next when a DML statement uses them.
UNSTABLE_VALUES = ("sysdate", "systimestamp", "sys_guid", "dbms_random")


# ---- the checks --------------------------------------------------------------


def retry_findings(graph: RetryGraph, module: str, target: str = "23ai") -> list[Diagnostic]:
    """Every retry-safety diagnostic of `module`'s fns, seen through `graph`'s calls, for
    `target` (`for_target` then drops the findings that rest on Oracle's rules alone)."""
    diagnostics: list[Diagnostic] = []
    facts = graph.modules[module]

    def name_of(key: FnKey) -> str:
        return f"`{key[1]}`" if key[0] == module else f"`{key[0]}::{key[1]}`"

    def commit_notes(
        callee: FnKey, commit: Commit, notes: list[Note]
    ) -> tuple[str, tuple[Note, ...]]:
        """` (<what>, in `f`)` and, for a commit in this file, a note pointing at it."""
        inside = "" if commit.origin == callee else f", in {name_of(commit.origin)}"
        where = f" ({commit.what}{inside})"
        if commit.origin[0] == module:  # a note points into the same file only
            notes = [*notes, Note(f"{commit.what} here", commit.origin_span)]
        return where, tuple(notes)

    for aggregate, part, call in facts.aggregate_calls:
        callee = graph.resolve(module, call.callee)
        # a fn of its own module is refused where the aggregate is checked (unsupported)
        if callee is not None and callee[0] != module and callee in graph.commits:
            where, notes = commit_notes(callee, graph.commits[callee], [])
            diagnostics.append(
                Diagnostic.of(
                    "aggregate-dml",
                    f"`{part}` of aggregate `{aggregate}` calls {name_of(callee)}, which commits"
                    f"{where}: an aggregate runs inside a query, which cannot end the "
                    "transaction (ORA-14552)",
                    call.span,
                    notes=notes,
                )
            )
    for fn in facts.fns.values():
        key = (module, fn.name)
        calls = dict((id(effect), callee) for effect, callee in graph.calls[key])
        # calls that can only fail: reported once, as that, not as a commit too
        refused = _refused_calls(graph, key, name_of)
        diagnostics += refused.values()
        diagnostics += _called_from_sql(graph, key, name_of, commit_notes, target)
        if fn.parallel:
            # its own writes are parallel-misuse already (pell.checker.parallel); a call that
            # commits is one a query cannot run either (ORA-14552)
            for effect in fn.effects:
                callee = calls.get(id(effect))
                if effect.kind in ("commit", "transaction"):
                    diagnostics.append(
                        Diagnostic.of(
                            "parallel-misuse",
                            f"@parallel fn `{fn.name}`: {effect.what}: parallel query servers "
                            "run it inside a query, which cannot end the transaction "
                            "(ORA-14552)",
                            effect.span,
                        )
                    )
                elif callee is not None and callee in graph.commits:
                    where, notes = commit_notes(callee, graph.commits[callee], [])
                    diagnostics.append(
                        Diagnostic.of(
                            "parallel-misuse",
                            f"@parallel fn `{fn.name}` calls {name_of(callee)}, which commits"
                            f"{where}: parallel query servers run it inside a query, which "
                            "cannot end the transaction (ORA-14552)",
                            effect.span,
                            notes=notes,
                        )
                    )
        if fn.auto_rollback:
            diagnostics += _commits_in_suite(graph, fn, calls, name_of, commit_notes)
        if fn.retry_scope is not None and fn.retry_span is not None:
            at_retry = Note(f"`{fn.name}` is retried here", fn.retry_span)
            transaction = fn.retry_scope == "transaction"
            consequence = (
                "a transaction-scoped retry would commit part of an attempt and then repeat it"
                if transaction
                else "it ends the transaction, and with it the retry's savepoint (ORA-01086)"
            )
            for effect in fn.effects:
                if effect.in_transaction is not None or id(effect) in refused:
                    continue  # the block around it is reported; so is a call that fails
                callee = calls.get(id(effect))
                if effect.kind in ("commit", "transaction"):
                    diagnostics.append(
                        Diagnostic.of(
                            "commit-in-retry",
                            f"{effect.what} inside retried fn `{fn.name}`: {consequence}",
                            effect.span,
                            (
                                "commit once, after the retried fn returns"
                                if transaction
                                else "move it out of the retried fn, or make the entry point "
                                '@retry(scope = "transaction")',
                            ),
                            (at_retry,),
                        )
                    )
                elif callee is not None and callee in graph.commits:
                    commit = graph.commits[callee]
                    where, notes = commit_notes(callee, commit, [at_retry])
                    callee_fn = graph.fn(callee)
                    if callee_fn.retry_scope == "transaction":
                        message = (
                            f"{name_of(callee)} is transaction-scoped: it commits each attempt, "
                            f"so calling it inside retried fn `{fn.name}` commits part of "
                            "this attempt"
                        )
                    else:
                        message = f"{name_of(callee)} commits{where}: {consequence}"
                    diagnostics.append(
                        Diagnostic.of(
                            "commit-in-retry",
                            message,
                            effect.span,
                            ("call it before or after the retried fn, not inside it",),
                            notes,
                        )
                    )
            recover = (module, fn.recover) if fn.recover in facts.fns else None
            for effect, callee in graph.calls[key]:
                if effect.in_transaction is not None or effect.span == fn.retry_span:
                    continue  # the block is reported; a recover call is not made per attempt
                diagnostics += _repeated_by_attempts(graph, key, fn, effect, callee, name_of)
            if recover is not None and recover in graph.commits:
                commit = graph.commits[recover]
                where, notes = commit_notes(recover, commit, [])
                if transaction:
                    # The loop commits what recover did once it returns; a commit inside it
                    # would keep part of that work if recover then fails (found by pellc verify)
                    message = (
                        f"`recover = {fn.recover}`: {name_of(recover)} commits{where}; "
                        f"transaction-scoped `{fn.name}` commits what recover does once it "
                        "returns, and a commit inside it keeps part of its work when it then "
                        "fails"
                    )
                    hint = "leave the commit to the retry: remove it from the recover fn"
                else:
                    # recover runs in the caller's transaction, after the rollback to the
                    # savepoint
                    message = (
                        f"`recover = {fn.recover}`: {name_of(recover)} commits{where}, in the "
                        f"caller's transaction that savepoint-scoped `{fn.name}` must leave open"
                    )
                    hint = (
                        "recover without committing, or retry the whole transaction: "
                        '@retry(scope = "transaction")'
                    )
                diagnostics.append(
                    Diagnostic.of("commit-in-retry", message, fn.retry_span, (hint,), notes)
                )
            if not transaction:
                cycle = graph.cycle_through(key)
                if cycle is not None:
                    path = " -> ".join([f"`{fn.name}`", *(name_of(k) for _, k in cycle)])
                    diagnostics.append(
                        Diagnostic.of(
                            "retry-recursion",
                            f"retried fn `{fn.name}` can call itself ({path}): each level sets "
                            "the same savepoint again, moving it, so a failed outer attempt "
                            "would keep the inner levels' work",
                            cycle[0][0].span,
                            (
                                "retry once, at the outermost call: move the recursion into "
                                "a fn without @retry",
                            ),
                            (at_retry,),
                        )
                    )
        for effect in fn.effects:
            if effect.in_transaction is None or id(effect) in refused:
                continue
            at_block = Note("the `transaction { }` block is here", effect.in_transaction)
            callee = calls.get(id(effect))
            if effect.kind in ("commit", "transaction"):
                message = (
                    f"{effect.what} inside a `transaction {{ }}` block: "
                    "it ends the block's transaction early, so the block's error path can no "
                    "longer roll back to its savepoint (ORA-01086)"
                )
                block_notes: tuple[Note, ...] = (at_block,)
            elif callee is not None and callee in graph.commits:
                commit = graph.commits[callee]
                where, block_notes = commit_notes(callee, commit, [at_block])
                message = (
                    f"{name_of(callee)} commits{where}, inside a `transaction {{ }}` block: "
                    "the block's work would be committed before the block ends"
                )
            else:
                continue
            diagnostics.append(
                Diagnostic.of(
                    "commit-in-transaction",
                    message,
                    effect.span,
                    ("one `transaction { }` per transaction: commit at one level only",),
                    block_notes,
                )
            )
    return diagnostics + _parse_risks(graph, module, name_of)


def _parse_risks(
    graph: RetryGraph, module: str, name_of: Callable[[FnKey], str]
) -> list[Diagnostic]:
    """`parse-may-commit`: DBMS_SQL.PARSE of a text pellc cannot read, in a retried body or a
    `transaction { }` block, or in a fn called there. "DDL statements are run immediately when
    parsed" (Supplied PL/SQL Packages and Types Reference 9i, DBMS_SQL, PARSE Procedure), and
    DDL commits: a warning, as the text may as well be a query or DML."""
    found: list[Diagnostic] = []
    for fn in graph.modules[module].fns.values():
        calls = {id(effect): callee for effect, callee in graph.calls[(module, fn.name)]}
        for effect in fn.effects:
            if effect.in_transaction is not None:
                scope, keeps = "a `transaction { }` block", "the block"
                note = Note("the `transaction { }` block is here", effect.in_transaction)
            elif fn.retry_scope is not None and fn.retry_span is not None:
                scope, keeps = f"retried fn `{fn.name}`", "the retry"
                note = Note(f"`{fn.name}` is retried here", fn.retry_span)
            else:
                continue
            callee = calls.get(id(effect))
            if effect.kind == "parse":
                what = effect.what
            elif callee is not None and callee in graph.parses:
                parser = graph.parses[callee]
                via = "" if parser == callee else f", through {name_of(parser)}"
                what = f"{name_of(callee)} runs DBMS_SQL.PARSE of a text pellc cannot read{via}"
            else:
                continue
            found.append(
                Diagnostic.of(
                    "parse-may-commit",
                    f"{what} inside {scope}: if the text is DDL, DBMS_SQL runs it as it "
                    f"parses it, and DDL commits the transaction {keeps} must keep open",
                    effect.span,
                    ("parse only queries and DML here; run DDL before or after it",),
                    (note,),
                )
            )
    return found


def _refused_calls(
    graph: RetryGraph, key: FnKey, name_of: Callable[[FnKey], str]
) -> dict[int, Diagnostic]:
    """`transaction-already-open`: calls of fn `key` that reach a transaction-scoped fn after
    the fn's own DML (run before, on every path, and nothing between may have ended the
    transaction), by id of the call's effect. The retried fn checks
    `DBMS_TRANSACTION.LOCAL_TRANSACTION_ID` on entry and raises pell_transaction_open: such a
    call fails whenever the DML changed a row (Oracle's documents do not say whether one that
    changed none opens a transaction; an error all the same: a transaction-scoped entry point
    belongs before any DML of its caller), and in a `finally` it replaces the body's own
    error."""
    found: dict[int, Diagnostic] = {}
    for effect, callee in graph.calls[key]:
        target = graph.refuses_open.get(callee)
        if target is None or not graph.open_at(key, effect):
            continue
        assert effect.opened_by is not None
        what = (
            f"{name_of(callee)} is transaction-scoped: it"
            if target == callee
            else f"{name_of(callee)} calls transaction-scoped {name_of(target)}, which"
        )
        notes = [Note("this DML opens a transaction when it changes a row", effect.opened_by)]
        retry_span = graph.fn(target).retry_span
        if target[0] == key[0] and retry_span is not None:
            notes.append(Note(f"{name_of(target)} is retried here", retry_span))
        cleanup = graph.fn(key).finally_span
        if cleanup is not None and effect.opened_by.end <= cleanup.start <= effect.span.start:
            opened = (
                "this `finally` runs after the body's DML on every normal return, and that DML "
                "opens a transaction whenever it changes a row: the call then raises "
                "pell_transaction_open there, in place of the fn's result (and of the body's "
                "own error, after that DML)"
            )
        else:
            opened = (
                "the DML before this call opens one whenever it changes a row, and the call "
                "then raises pell_transaction_open"
            )
        found[id(effect)] = Diagnostic.of(
            "transaction-already-open",
            f"{what} refuses to start inside an open transaction; {opened}",
            effect.span,
            (
                "call it where no transaction is open (before any DML, or after a commit), "
                "or retry it in the caller's transaction: the default savepoint scope",
            ),
            tuple(notes),
        )
    return found


def _commits_in_suite(
    graph: RetryGraph,
    fn: FnFacts,
    calls: dict[int, FnKey],
    name_of: Callable[[FnKey], str],
    commit_notes: Callable[[FnKey, Commit, list[Note]], tuple[str, tuple[Note, ...]]],
) -> list[Diagnostic]:
    """`suite-commits`: a commit, itself or through a call, in a fn utPLSQL rolls back
    (pell.checker.ut.auto_rollback_fns): the rollback fails, and the test's changes stay."""
    found: list[Diagnostic] = []
    why = (
        "utPLSQL rolls back what each test of a suite did (`--%rollback(auto)`, the default), "
        "and after the transaction ends it cannot: it reports \"Unable to perform automatic "
        "rollback\" and the changes stay"
    )
    hint = '`@suite("...", rollback = "manual")`, and undo the changes in an @aftereach fn'
    for effect in fn.effects:
        callee = calls.get(id(effect))
        if effect.kind in ("commit", "transaction"):
            found.append(
                Diagnostic.of(
                    "suite-commits", f"{effect.what} in `{fn.name}`: {why}", effect.span, (hint,)
                )
            )
        elif callee is not None and callee in graph.commits:
            where, notes = commit_notes(callee, graph.commits[callee], [])
            found.append(
                Diagnostic.of(
                    "suite-commits",
                    f"`{fn.name}` calls {name_of(callee)}, which commits{where}: {why}",
                    effect.span,
                    (hint,),
                    notes,
                )
            )
    return found


def _called_from_sql(
    graph: RetryGraph,
    key: FnKey,
    name_of: Callable[[FnKey], str],
    commit_notes: Callable[[FnKey, Commit, list[Note]], tuple[str, tuple[Note, ...]]],
    target: str,
) -> list[Diagnostic]:
    """`transaction-in-sql`: a Pell fn named in a SQL statement of fn `key` that runs
    transaction control: retried (SAVEPOINT and ROLLBACK TO, or ROLLBACK and COMMIT), or
    committing, itself or through the fns it calls. Oracle: a function invoked from a SELECT,
    INSERT, UPDATE, DELETE or MERGE statement "cannot execute any of the following SQL
    statements (unless PRAGMA AUTONOMOUS_TRANSACTION was specified): Transaction control
    statements (such as COMMIT)", and "a runtime error occurs when that statement is parsed"
    (PL/SQL Language Reference 19c, 8.13 "PL/SQL Functions that SQL Statements Can Invoke").
    PostgreSQL: a savepoint-scoped retry is a subtransaction, which a query may run; a fn that
    commits, or reaches a transaction-scoped retry, is a PROCEDURE (docs/postgres.md), and a
    procedure "cannot be called" in a query, only by CALL (CREATE PROCEDURE)."""
    found = []
    postgres = target == "postgres"
    for effect, callee in graph.sql_calls[key]:
        retried = graph.retried_in_transaction.get(callee)
        if postgres and retried is not None and graph.fn(retried).retry_scope == "savepoint":
            retried = None
        notes: tuple[Note, ...] = ()
        if postgres and retried is None and callee not in graph.commits:
            continue
        if retried is not None:
            scope = graph.fn(retried).retry_scope
            run = "SAVEPOINT and ROLLBACK TO" if scope == "savepoint" else "ROLLBACK and COMMIT"
            is_retried = "is retried" if retried == callee else f"reaches {name_of(retried)}"
            what = f"{is_retried} (@retry runs {run})"
            retry_span = graph.fn(retried).retry_span
            if retried[0] == key[0] and retry_span is not None:
                notes = (Note(f"{name_of(retried)} is retried here", retry_span),)
        elif callee in graph.commits:
            where, notes = commit_notes(callee, graph.commits[callee], [])
            what = f"commits{where}"
        else:
            continue
        because = (
            "on postgres such a fn is a PROCEDURE, which only CALL runs, not a query"
            if postgres
            else "a fn called from SQL may not run SAVEPOINT, ROLLBACK or COMMIT, so Oracle "
            "raises an error when it does"
        )
        found.append(
            Diagnostic.of(
                "transaction-in-sql",
                f"this SQL statement calls {name_of(callee)}, which {what}: {because}",
                effect.span,
                (
                    "call it from PL/SQL before the statement and bind its result "
                    "(`let v = f(...);`, then `:v`)",
                ),
                notes,
            )
        )
    return found


def _repeated_by_attempts(
    graph: RetryGraph,
    key: FnKey,
    fn: FnFacts,
    effect: Effect,
    callee: FnKey,
    name_of: Callable[[FnKey], str],
) -> list[Diagnostic]:
    """Warnings for a call in retried `fn` whose effects every attempt repeats: an @autonomous
    fn's own commits, and another retry loop, at any depth of calls."""
    assert fn.retry_span is not None
    at_retry = (Note(f"`{fn.name}` is retried here", fn.retry_span),)
    found = []
    autonomous = graph.autonomous.get(callee)
    if autonomous is not None:
        via = "is" if autonomous == callee else f"calls {name_of(autonomous)}, which is"
        found.append(
            Diagnostic.of(
                "side-effect-in-retry",
                f"{name_of(callee)} {via} @autonomous: it commits on its own, so every attempt "
                "repeats what it writes",
                effect.span,
                ("call it once after the retried fn returns",),
                at_retry,
            )
        )
    reached = graph.retried.get(callee, ())
    # a retried callee is the nesting to name: what it reaches is its own nested-retry
    for inner in (callee,) if callee in reached else reached:
        if inner == key:  # reaching itself is retry-recursion
            continue
        attempts = graph.fn(inner).attempts
        via = "" if inner == callee else f", which reaches {name_of(inner)}"
        found.append(
            Diagnostic.of(
                "nested-retry",
                f"`{fn.name}` (@retry n={fn.attempts}) calls {name_of(callee)}{via} "
                f"(@retry n={attempts}): up to {fn.attempts * attempts} attempts of "
                f"{name_of(inner)} in one call",
                effect.span,
                ("retry at one level only, usually the outer one",),
                at_retry,
            )
        )
    return found


def _direct_side_effects(
    fn: FnInfo, checked: CheckedModule, sequences: set[str]
) -> list[Diagnostic]:
    """Calls and values a rollback cannot undo, and retries inside retries, in a retried body."""
    assert fn.retry is not None and fn.retry_annotation is not None
    at_retry = Note(f"`{fn.decl.name}` is retried here", fn.retry_annotation.span)
    found: list[Diagnostic] = []

    def warn(code: str, message: str, span: ast.Span, hint: str) -> None:
        found.append(Diagnostic.of(code, message, span, (hint,), (at_retry,)))

    def nextval(span: ast.Span) -> None:
        warn(
            "side-effect-in-retry",
            "a sequence's NEXTVAL is not given back by a rollback: each attempt uses up "
            "another value",
            span,
            "take the value in the caller and pass it in, if gaps matter",
        )

    for node in ast.walk(fn.decl.body):
        if (
            isinstance(node, ast.FieldAccess)
            and node.name == "nextval"
            and isinstance(node.target, ast.Name)
            and node.target.text in sequences  # `ids` or `hr::emp_seq`, as declared
        ):
            nextval(node.span)
        if isinstance(node, ast.SqlBlock):
            tokens = tokens_of(node)
            words = [token.text.lower() for token in tokens]
            if "nextval" in words:
                nextval(node.span)
            if words and words[0] in DML:
                for word in UNSTABLE_VALUES:
                    if word in words:
                        warn(
                            "side-effect-in-retry",
                            f"`{word}` in DML differs from one attempt to the next",
                            node.span,
                            "compute the value once in the caller and pass it in",
                        )
        elif isinstance(node, ast.Call):
            path = node.callee.path
            why = irreversible_call(path, checked)
            if why is not None:
                warn(
                    "side-effect-in-retry",
                    f"`{node.callee.text}` {why}; "
                    "a rollback cannot take that back, so every attempt repeats it",
                    node.span,
                    "record the intent in an outbox table and act on it after commit",
                )
    return found


def _raised_errors(
    checked: CheckedModule, facts: ModuleFacts, own: dict[str, dict[str, ast.Span]]
) -> dict[str, dict[str, ast.Span]]:
    """fn -> each error of this module it raises, itself or through the fns it calls, with
    where in the fn (the `Err(...)`, the `.one()?`, or the call that leads to it)."""
    raised = {
        name: {e: span for e, span in errors.items() if e in checked.errors}
        for name, errors in own.items()
    }
    calls = {
        name: [
            (e.callee[0], e.span)
            for e in fn.effects
            if e.kind == "call" and len(e.callee) == 1 and e.callee[0] in raised
        ]
        for name, fn in facts.fns.items()
    }
    changed = True
    while changed:  # to a fixed point: errors flow from callees to callers
        changed = False
        for name, targets in calls.items():
            for callee, span in targets:
                for error in raised[callee]:
                    if error not in raised[name]:
                        raised[name][error] = span
                        changed = True
    return raised


def _own_errors_retried(
    checked: CheckedModule, facts: ModuleFacts, own: dict[str, dict[str, ast.Span]]
) -> list[Diagnostic]:
    """`retry-own-error`: a policy that retries every error retries the fn's own decisions."""
    from pell.runtime import error_category

    found: list[Diagnostic] = []
    raised: dict[str, dict[str, ast.Span]] | None = None
    for name, fn in checked.fns.items():
        if fn.retry is None or fn.retry_annotation is None or fn.retry.on:
            continue
        raised = raised if raised is not None else _raised_errors(checked, facts, own)
        for error, span in sorted(raised[name].items(), key=lambda item: item[1].start):
            if error_category(checked.errors[error]) == "panic":
                continue  # pell_is_panic re-raises @panic errors at once
            found.append(
                Diagnostic.of(
                    "retry-own-error",
                    f"`{name}` retries every error but panics, so its own error `{error}` is "
                    f"retried {fn.retry.attempts} times, with the sleeps between, though each "
                    "attempt decides the same way",
                    span,
                    (
                        "name what is transient: `on = [deadlock, busy, ...]`, or make "
                        f"`{error}` @panic if no retry can change it",
                    ),
                    (Note(f"`{name}` is retried here", fn.retry_annotation.span),),
                )
            )
    return found


def check_retry_safety(
    checked: CheckedModule, diagnostics: list[Diagnostic], target: str = "23ai"
) -> ModuleFacts:
    """The module's own retry-safety diagnostics; returns its facts for project-wide checks."""
    facts, own = module_facts(checked)
    # the module's sequences, once: per retried fn this walked every item (quadratic)
    sequences = {i.name for i in checked.module.items if isinstance(i, ast.Sequence)}
    for fn in checked.fns.values():
        if fn.retry is not None and fn.retry_annotation is not None:
            diagnostics += _direct_side_effects(fn, checked, sequences)
    diagnostics += _own_errors_retried(checked, facts, own)
    diagnostics += retry_findings(RetryGraph([facts]), facts.name, target)
    return facts


# Findings that rest on Oracle's rules, not PostgreSQL's (docs/postgres.md): a subtransaction's
# rollback there releases the sessions waiting on it (a savepoint-scoped retry cures a
# deadlock); a retry with no `on` retries transient SQLSTATEs only, not the fn's own errors;
# each retried call has an anonymous subtransaction (recursion moves no savepoint, and a
# query may call a savepoint-scoped retried fn: `_called_from_sql` reports only the fns that
# are PROCEDUREs there); a schema and a table may share a name (no
# ORA-00955); a LIMIT stops locking only once enough rows are returned, after SKIP LOCKED
# skipped the locked ones (SELECT, The Locking Clause), and there is no ROWNUM.
ORACLE_ONLY_FINDINGS = frozenset(
    {
        "retry-deadlock-scope",
        "retry-own-error",
        "retry-recursion",
        "package-clash",
        "rownum-skip-locked",
    }
)


def for_target(diagnostics: list[Diagnostic], target: str) -> list[Diagnostic]:
    """The findings that hold for `target`."""
    if target != "postgres":
        return diagnostics
    return [d for d in diagnostics if d.code not in ORACLE_ONLY_FINDINGS]


def project_findings(
    modules: list[ModuleFacts], target: str = "23ai"
) -> dict[str, list[Diagnostic]]:
    """The diagnostics that only the whole build can see: each module's findings through calls
    into the other modules, less what the module found on its own."""
    graph = RetryGraph(modules)
    found: dict[str, list[Diagnostic]] = {}
    for module in modules:
        outgoing = (
            callee[0] != module.name
            for fn in module.fns
            for _, callee in (*graph.calls[(module.name, fn)], *graph.sql_calls[(module.name, fn)])
        )
        # an aggregate part's calls (a fn of the module itself is refused there)
        from_parts = (graph.resolve(module.name, c.callee) for *_, c in module.aggregate_calls)
        if not any(outgoing) and not any(k is not None and k[0] != module.name for k in from_parts):
            continue  # no call leaves the module: it found all of its findings on its own
        alone = set(retry_findings(RetryGraph([module]), module.name, target))
        extra = for_target(
            [d for d in retry_findings(graph, module.name, target) if d not in alone], target
        )
        if extra:
            found[module.name] = extra
    for name, clashes in schema_clashes(modules).items():
        found.setdefault(name, []).extend(clashes)
    return found


def schema_clashes(modules: list[ModuleFacts]) -> dict[str, list[Diagnostic]]:
    """Schema-level names two declarations would both create (an aggregate's function or type
    and another module's package or aggregate, in one schema): CREATE OR REPLACE of the
    second would silently replace the first, or fail (ORA-00955) where the kinds differ. And a
    `seq owner::name` whose owner is another module's package or schema-level object in the
    same schema, which PL/SQL finds before the schema `owner`."""
    from pell.checker.stubs import shipped_stub

    seen: dict[tuple[str | None, str], tuple[str, bool]] = {}  # -> (module, is its package)
    for module in modules:
        if module.stub:
            # a project's stub says its package exists: the Oracle package of its path
            # (imports.plsql_package), in the schema or the one its path names. pellc's own
            # stubs are SYS packages, reached through public synonyms: none of the schema's.
            path = tuple(part.lower() for part in module.path)
            if len(path) == 1 and not shipped_stub(path[0]):
                seen.setdefault((None, path[0]), (module.name, True))
            elif len(path) == 2:
                seen.setdefault(path, (module.name, True))
        elif module.package:
            schema = module.package[0] if len(module.package) == 2 else None
            seen.setdefault((schema, module.package[-1].lower()), (module.name, True))
    stubs = {module.name for module in modules if module.stub}
    # the other schema-level objects (an aggregate's function and types, an object type), by
    # (schema, name): the first module that creates each
    objects: dict[tuple[str | None, str], str] = {}
    for module in modules:
        schema = module.package[0] if len(module.package) == 2 else None
        for name, _ in module.schema_objects:
            objects.setdefault((schema, name), module.name)
    found: dict[str, list[Diagnostic]] = {}
    for module in modules:
        schema = module.package[0] if len(module.package) == 2 else None
        for sequence, span in module.schema_sequences:
            owner, name = sequence.split("::")
            other, package = seen.get((schema, owner.lower()), ("", False))
            if package and other != module.name:  # its own: the module's check (reserved-name)
                where = f"stub `{other}`" if other in stubs else f"module `{other}`"
                captor = f"the package `{owner.lower()}` of {where}"
                source = 'PL/SQL Language Reference, "PL/SQL Name Resolution"'
                captured = "a member of that package, not the sequence (PLS-00302)"
            elif objects.get((schema, owner.lower()), module.name) != module.name:
                # an object of the schema is found before a schema of its name ("In the
                # current schema, the database searches for an object whose name matches the
                # first piece of the object name": Database Administrator's Guide, "Managing
                # Object Name Resolution"); the module's own aggregates: its own check
                other = objects[(schema, owner.lower())]
                captor = (
                    f"the schema-level object `{owner.lower()}` (an aggregate's function or a "
                    f"type) of module `{other}`"
                )
                source = 'Database Administrator\'s Guide, "Managing Object Name Resolution"'
                captured = "a part of that object, not the sequence"
            else:
                continue
            found.setdefault(module.name, []).append(
                Diagnostic.of(
                    "reserved-name",
                    f"sequence `{sequence}`: {captor} is in the same schema, and PL/SQL finds "
                    f"it before the schema `{owner}` ({source}): `{owner}.{name}` names "
                    f"{captured}",
                    span,
                    hints=("use a synonym of the sequence, or put the module in another schema",),
                )
            )
        for name, span in module.schema_objects:
            first = seen.get((schema, name))
            if first is None:
                seen[(schema, name)] = (module.name, False)
                continue
            other, package = first
            if other == module.name and package:
                continue  # its own package: the module's own check (pell.checker.aggregates)
            where = "this module" if other == module.name else f"module `{other}`"
            if other in stubs:
                where = f"stub `{other}`"
            kind = "the package" if package else "a type or function"
            found.setdefault(module.name, []).append(
                Diagnostic.of(
                    "duplicate-name",
                    f"schema-level name `{name}` is also {kind} of {where} in the same "
                    "schema: one CREATE would replace or refuse the other",
                    span,
                    hints=("rename the aggregate or type, or put the module in another schema",),
                )
            )
    return found
