"""Retry-safety checks over whole retried bodies (retry.md section 6): what a rollback cannot
undo, what destroys the savepoint, and retries inside retries."""

from __future__ import annotations

from dataclasses import dataclass

from pell import ast, sqltext
from pell.checker.model import CheckedModule, FnInfo
from pell.diagnostics import Diagnostic, Note

# Oracle packages whose effects a rollback cannot take back, with what they do.
SIDE_EFFECT_PACKAGES = {
    "utl_http": "sends an HTTP request",
    "utl_smtp": "sends mail",
    "utl_tcp": "writes to a socket",
    "utl_file": "writes a file",
    "dbms_pipe": "sends a pipe message",
    "dbms_output": "writes output that each attempt repeats",
}
# Values that differ from one attempt to the next when a DML statement uses them.
UNSTABLE_VALUES = ("sysdate", "systimestamp", "sys_guid", "dbms_random")
# Statements that end the transaction (DDL commits implicitly), destroying the savepoint.
ENDS_TRANSACTION = frozenset(
    "commit rollback create alter drop truncate grant revoke rename comment analyze audit "
    "noaudit flashback purge".split()
)
DML = frozenset({"insert", "update", "delete", "merge"})


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    message: str
    span: ast.Span
    hint: str


def _sql_findings(block: ast.SqlBlock) -> list[Finding]:
    try:
        tokens = sqltext.tokenize(block.text)
    except sqltext.SqlTextError:
        return []
    if not tokens:
        return []
    span = block.span
    first = tokens[0].text.lower()
    if first in ENDS_TRANSACTION:
        what = first.upper() if first in ("commit", "rollback") else f"DDL ({first.upper()})"
        return [
            Finding(
                "commit-in-retry",
                f"{what} ends the transaction, and with it the retry's savepoint (ORA-01086)",
                span,
                'move it out of the retried fn, or use @retry(scope = "transaction")',
            )
        ]
    findings = []
    words = [t.text.lower() for t in tokens]
    if "nextval" in words:
        findings.append(
            Finding(
                "side-effect-in-retry",
                "a sequence's NEXTVAL is not given back by a rollback: each attempt uses up "
                "another value",
                span,
                "take the value in the caller and pass it in, if gaps matter",
            )
        )
    if first in DML:
        for word in UNSTABLE_VALUES:
            if word in words:
                findings.append(
                    Finding(
                        "side-effect-in-retry",
                        f"`{word}` in DML differs from one attempt to the next",
                        span,
                        "compute the value once in the caller and pass it in",
                    )
                )
    return findings


class RetrySafety:
    """Findings per fn (direct), and whether each fn ends the transaction (through calls)."""

    def __init__(self, checked: CheckedModule) -> None:
        self.checked = checked
        self.commits: dict[str, ast.Span | None] = {}

    def direct(self, fn: FnInfo) -> tuple[list[Finding], list[tuple[ast.Call, FnInfo]]]:
        findings: list[Finding] = []
        calls: list[tuple[ast.Call, FnInfo]] = []
        for node in ast.walk(fn.decl.body):
            if isinstance(node, ast.Transaction):
                findings.append(
                    Finding(
                        "commit-in-retry",
                        "a `transaction { }` block commits, ending the retry's savepoint "
                        "(ORA-01086)",
                        node.span,
                        'let the retried fn be the transaction: @retry(scope = "transaction")',
                    )
                )
            elif isinstance(node, ast.SqlBlock):
                findings += _sql_findings(node)
            elif isinstance(node, ast.Call):
                path = node.callee.path
                if len(path) > 1 and path[0].lower() in SIDE_EFFECT_PACKAGES:
                    findings.append(
                        Finding(
                            "side-effect-in-retry",
                            f"`{node.callee.text}` {SIDE_EFFECT_PACKAGES[path[0].lower()]}; "
                            "a rollback cannot take that back, so every attempt repeats it",
                            node.span,
                            "record the intent in an outbox table and act on it after commit",
                        )
                    )
                elif len(path) == 1 and path[0] in self.checked.fns:
                    calls.append((node, self.checked.fns[path[0]]))
        return findings, calls

    def ends_transaction(
        self, fn: FnInfo, visiting: frozenset[str] = frozenset()
    ) -> ast.Span | None:
        """Where `fn` (or a fn it calls) commits, rolls back or runs DDL; None if nowhere.
        An @autonomous fn's commits are its own transaction's, not its caller's."""
        name = fn.decl.name
        if name in self.commits:
            return self.commits[name]
        if name in visiting or any(a.name == "autonomous" for a in fn.decl.annotations):
            return None
        findings, calls = self.direct(fn)
        where = next((f.span for f in findings if f.code == "commit-in-retry"), None)
        for call, callee in calls:
            if where is None and self.ends_transaction(callee, visiting | {name}) is not None:
                where = call.span
        self.commits[name] = where
        return where


def check_retry_safety(checked: CheckedModule, diagnostics: list[Diagnostic]) -> None:
    safety = RetrySafety(checked)
    for fn in checked.fns.values():
        policy, annotation = fn.retry, fn.retry_annotation
        if policy is None or annotation is None:
            continue
        at_retry = Note(f"`{fn.decl.name}` is retried here", annotation.span)
        findings, calls = safety.direct(fn)
        for finding in findings:
            if finding.code == "commit-in-retry" and policy.scope == "transaction":
                continue  # the whole transaction is the retry unit; no savepoint to lose
            diagnostics.append(
                Diagnostic.of(
                    finding.code, finding.message, finding.span, (finding.hint,), (at_retry,)
                )
            )
        for call, callee in calls:
            name = callee.decl.name
            if any(a.name == "autonomous" for a in callee.decl.annotations):
                diagnostics.append(
                    Diagnostic.of(
                        "side-effect-in-retry",
                        f"`{name}` is @autonomous: it commits on its own, so every attempt "
                        "repeats what it writes",
                        call.span,
                        ("call it once after the retried fn returns",),
                        (at_retry,),
                    )
                )
            elif policy.scope == "savepoint" and safety.ends_transaction(callee) is not None:
                diagnostics.append(
                    Diagnostic.of(
                        "commit-in-retry",
                        f"`{name}` commits, rolls back or runs DDL, ending the retry's savepoint "
                        "(ORA-01086)",
                        call.span,
                        ("move that out of the retried call chain",),
                        (at_retry, Note(f"in `{name}`, here", safety.commits[name] or call.span)),
                    )
                )
            if callee.retry is not None:
                worst = policy.attempts * callee.retry.attempts
                diagnostics.append(
                    Diagnostic.of(
                        "nested-retry",
                        f"`{fn.decl.name}` (@retry n={policy.attempts}) calls `{name}` "
                        f"(@retry n={callee.retry.attempts}): up to {worst} attempts of "
                        f"`{name}` in one call",
                        call.span,
                        ("retry at one level only, usually the outer one",),
                        (at_retry,),
                    )
                )
