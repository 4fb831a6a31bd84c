"""Diagnostics: one type, one registry of codes, two renderers (short and pretty)."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from enum import Enum
from itertools import accumulate

from pell.ast import Span
from pell.records import field, record, replace


class Severity(Enum):
    ERROR = "error"
    WARNING = "warning"


# Every diagnostic code pellc can emit, with its severity and what it is about.
CODES: dict[str, tuple[Severity, str]] = {
    "encoding": (Severity.ERROR, "a source file that is not UTF-8"),
    "too-large": (Severity.ERROR, "a source file larger than pellc compiles"),
    "too-deep": (Severity.ERROR, "code nested deeper than pellc compiles"),
    "syntax": (Severity.ERROR, "the source does not follow Pell's grammar"),
    "invalid-escape": (Severity.WARNING, "an unknown escape in a string, kept as written"),
    "unknown-name": (Severity.ERROR, "a name that is not declared"),
    "unknown-type": (Severity.ERROR, "a type that is not declared"),
    "unknown-field": (Severity.ERROR, "a field the record does not have"),
    "unknown-fn": (Severity.ERROR, "a call to a fn that is not declared"),
    "duplicate-name": (Severity.ERROR, "two declarations with one name"),
    "duplicate-module": (Severity.ERROR, "two files of one project that declare one module"),
    "package-clash": (Severity.WARNING, "a package named like a table or view its SQL uses"),
    "table-function": (Severity.ERROR, "a call of a @pipelined fn, which only SQL can read"),
    "keyword-argument": (Severity.ERROR, "a keyword argument that names no parameter, or twice"),
    "unknown-module": (Severity.ERROR, "an import that names no module of the project"),
    "private": (Severity.ERROR, "another module's item that is not `pub`"),
    "stub": (Severity.ERROR, "a stub module that declares more than signatures"),
    "missing-body": (Severity.ERROR, "a fn without a body outside a stub module"),
    "identifier-too-long": (Severity.ERROR, "a PL/SQL name longer than the target allows"),
    "too-many-errors": (Severity.ERROR, "more errors in one category than its code range holds"),
    "empty-record": (Severity.ERROR, "a record with no fields, which PL/SQL cannot declare"),
    "recursive-record": (Severity.ERROR, "a record type that contains itself"),
    "number-too-large": (Severity.ERROR, "a number literal outside Oracle NUMBER's range"),
    "reserved-name": (Severity.ERROR, "an Oracle reserved word where pellc cannot prefix it"),
    "text-too-long": (Severity.ERROR, "a text literal longer than PL/SQL's 32,767 bytes"),
    "arity": (Severity.ERROR, "a call with the wrong number of arguments"),
    "type-mismatch": (Severity.ERROR, "a value of the wrong type"),
    "return-type": (Severity.ERROR, "a return value of the wrong type"),
    "unknown-bind": (Severity.ERROR, "a `:name` bind in SQL that resolves to nothing"),
    "sql-column-count": (Severity.ERROR, "a query whose columns do not fit its target"),
    "sql-syntax": (Severity.ERROR, "embedded SQL that cannot be tokenized or placed"),
    "sql-ddl": (
        Severity.ERROR,
        "DDL, a session statement or CALL in sql! { }: PL/SQL runs them by EXECUTE IMMEDIATE",
    ),
    "sql-boolean": (Severity.ERROR, "a `bool` in SQL for a target before Oracle 23ai"),
    "unused-query": (Severity.ERROR, "a SELECT used as a statement, with nowhere to put its rows"),
    "rownum-skip-locked": (
        Severity.WARNING,
        "ROWNUM, FETCH or OFFSET in a FOR UPDATE SKIP LOCKED query: rows limited before skipped",
    ),
    "needs-annotation": (Severity.ERROR, "a value whose type must be written out"),
    "unsupported": (Severity.ERROR, "a construct pellc does not lower yet"),
    "list-between-modules": (
        Severity.ERROR,
        "an `out` or `inout` list parameter of another module's fn, called, or a list field of "
        "another module's record",
    ),
    "dynamic-sql": (
        Severity.ERROR,
        "`exec_dyn` or `pivot::sum_dyn` misused: outside an `unsafe fn`, not one literal text, a "
        "splice that could end its string, or a bind not in @binds",
    ),
    "bad-regex": (Severity.ERROR, "a regex literal Oracle's regular expressions would not read so"),
    "capture-fields": (
        Severity.ERROR,
        "a `re::capture` record's fields and its pattern's groups do not pair up",
    ),
    "bad-json-path": (Severity.ERROR, "a JSON path or key Oracle would not read so"),
    "bad-jq": (Severity.ERROR, "a `jq! { }` query pellc cannot make a JSON_TABLE query of"),
    "retry-argument": (Severity.ERROR, "a bad @retry argument"),
    "retry-no-effect": (Severity.WARNING, "a @retry argument that has no effect"),
    "retry-serialization-scope": (Severity.WARNING, "`on = [serialization]` under savepoint scope"),
    "deterministic-reads-tables": (
        Severity.WARNING,
        "@deterministic on a fn whose SQL reads or changes tables",
    ),
    "result-cache-writes": (Severity.WARNING, "@result_cache on a fn whose SQL changes tables"),
    "volatile-cached-fn": (
        Severity.WARNING,
        "@deterministic or @result_cache on a fn that reads a sequence, the clock or a random value",
    ),
    "retry-callable-from-sql": (
        Severity.ERROR,
        "@retry on a fn SQL calls (@udf, @deterministic, @result_cache)",
    ),
    "verify-lost-work": (
        Severity.ERROR,
        "pellc verify: a retried call that returns has lost work of its last attempt or its caller",
    ),
    "verify-repeated-work": (
        Severity.ERROR,
        "pellc verify: a retried call that returns leaves work of a failed attempt standing",
    ),
    "verify-leaked-work": (
        Severity.ERROR,
        "pellc verify: a retried call that raises leaves work standing, committed or open",
    ),
    "verify-no-savepoint": (
        Severity.ERROR,
        "pellc verify: a ROLLBACK TO a savepoint that is not there (ORA-01086)",
    ),
    "verify-transaction-control": (
        Severity.ERROR,
        "pellc verify: a COMMIT, ROLLBACK or SET TRANSACTION PostgreSQL refuses where it stands",
    ),
    "verify-attempts": (
        Severity.ERROR,
        "pellc verify: more attempts, or more sleep, than the retry policy allows",
    ),
    "verify-retried-error": (
        Severity.ERROR,
        "pellc verify: an error retried that the policy does not retry, or the reverse",
    ),
    "verify-repeated-effect": (
        Severity.WARNING,
        "pellc verify: an effect no rollback undoes, done again by the next attempt",
    ),
    "retry-deadlock-scope": (
        Severity.WARNING,
        "a savepoint-scoped retry of deadlocks or serialization failures, which it cannot cure",
    ),
    "commit-in-retry": (
        Severity.ERROR,
        "a commit, rollback, DDL or transaction-scoped call reachable from a retried body",
    ),
    "commit-in-transaction": (
        Severity.ERROR,
        "a commit, rollback, DDL or nested transaction inside a `transaction { }` block",
    ),
    "parse-may-commit": (
        Severity.WARNING,
        "DBMS_SQL.PARSE of a text pellc cannot read in a retried body or `transaction { }` block",
    ),
    "retry-recursion": (Severity.ERROR, "a savepoint-scoped retried fn that can call itself"),
    "transaction-already-open": (
        Severity.ERROR,
        "a transaction-scoped retried fn called after the caller's DML, which opens a "
        "transaction whenever it changes a row",
    ),
    "transaction-in-sql": (
        Severity.ERROR,
        "a SQL statement calling a Pell fn that retries or commits",
    ),
    "retry-own-error": (Severity.WARNING, "a retry policy that retries the fn's own Pell errors"),
    "side-effect-in-retry": (
        Severity.WARNING,
        "a call a rollback cannot undo, inside a retried body",
    ),
    "nested-retry": (Severity.WARNING, "a @retry fn calling another @retry fn"),
    "retry-recover": (Severity.ERROR, "a `recover` fn that does not fit the retried fn"),
    "retry-combination": (
        Severity.ERROR,
        "@retry with an annotation or block it cannot be made safe with",
    ),
    "annotation-argument": (Severity.ERROR, "a bad annotation argument"),
    "annotation-misuse": (Severity.ERROR, "an annotation on an item it does not apply to"),
    "aggregate-shape": (
        Severity.ERROR,
        "an aggregate Oracle cannot make: no input, a part missing or misshapen, a state field "
        "SQL cannot hold",
    ),
    "aggregate-dml": (
        Severity.ERROR,
        "an aggregate's part changes data or ends the transaction: it runs inside a query",
    ),
    "parallel-misuse": (
        Severity.ERROR,
        "@parallel where Oracle allows no PARALLEL_ENABLE clause of that form",
    ),
    "suite-commits": (
        Severity.WARNING,
        "a fn of a utPLSQL suite that commits, where utPLSQL rolls back each test",
    ),
    "return-in-finally": (
        Severity.ERROR,
        "`return`, `break` or `continue` leaving a `finally` block",
    ),
    "unknown-annotation": (Severity.WARNING, "an annotation pellc does not know"),
    "not-assignable": (Severity.ERROR, "an assignment to something that cannot be assigned"),
    "not-a-statement": (Severity.ERROR, "an expression used as a statement that does nothing"),
    "not-in-loop": (Severity.ERROR, "`break` or `continue` outside a loop"),
    "missing-return": (Severity.ERROR, "a fn with a return type that can end without `return`"),
    "non-exhaustive-match": (
        Severity.ERROR,
        "a `match` with no arm for some values: a case of a sealed type, or no `_`",
    ),
    "undeclared-error": (Severity.ERROR, "`Err(E)` where E is not in the fn's error list"),
}


@record
class Note:
    """A secondary location that explains a diagnostic ("`finally` is here")."""

    message: str
    span: Span


@record
class Fix:
    """An edit that resolves a diagnostic by itself: the text at `span` replaced by `text`
    (`pellc lsp` offers it as a quick fix)."""

    span: Span
    text: str


@record
class Diagnostic:
    code: str
    message: str
    span: Span
    hints: tuple[str, ...] = ()
    notes: tuple[Note, ...] = ()
    severity: Severity = field(default=Severity.ERROR)
    fixes: tuple[Fix, ...] = ()

    @staticmethod
    def of(
        code: str,
        message: str,
        span: Span,
        hints: tuple[str, ...] = (),
        notes: tuple[Note, ...] = (),
        fixes: tuple[Fix, ...] = (),
    ) -> Diagnostic:
        """A diagnostic with the severity its code has in the registry."""
        severity, _ = CODES[code]
        return Diagnostic(code, message, span, hints, notes, severity, fixes)

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR


# How many "did you mean" suggestions one compile offers: each compares the name with every
# candidate, so a file with thousands of unknown names among thousands of declared ones would
# take time quadratic in its size. The first misspellings are the ones a person reads.
SUGGESTIONS_PER_COMPILE = 100
suggestions_left: ContextVar[int] = ContextVar("suggestions_left", default=1 << 30)

Candidates = list[str] | tuple[str, ...] | Callable[[], Iterable[str]]


def did_you_mean(name: str, candidates: Candidates) -> str:
    """`; did you mean `x`?` when a candidate is close to `name`, else an empty string.
    `candidates` may be a function, called only while suggestions are still offered."""
    close = closest_name(name, candidates)
    return f"; did you mean `{close}`?" if close is not None else ""


def closest_name(name: str, candidates: Candidates) -> str | None:
    """The candidate did_you_mean would suggest for `name`, if any (one suggestion spent)."""
    left = suggestions_left.get()
    if left <= 0:
        return None
    suggestions_left.set(left - 1)
    names = list(candidates() if callable(candidates) else candidates)
    import difflib  # only when a name is not found

    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return close[0] if close else None


def quoted_with_article(name: object) -> str:
    """`name` in backticks after "a" or "an", by how it is said: an `int`, a `unit`."""
    text = str(name)
    lowered = text.lower()
    vowel = lowered[:1] in ("a", "e", "i", "o") or (
        lowered.startswith("u") and not lowered.startswith(("uni", "use", "usu", "uu"))
    )
    return f"{'an' if vowel else 'a'} `{text}`"


def settle(
    diagnostics: Iterable[Diagnostic], allow: frozenset[str], warnings_as_errors: bool
) -> list[Diagnostic]:
    """A project's settings applied: warnings of `allow`ed codes dropped, the others errors
    when `warnings_as_errors`."""
    settled = []
    for diagnostic in diagnostics:
        if diagnostic.is_error:
            settled.append(diagnostic)
        elif diagnostic.code not in allow:
            raised = Severity.ERROR if warnings_as_errors else diagnostic.severity
            settled.append(replace(diagnostic, severity=raised))
    return settled


def has_errors(diagnostics: list[Diagnostic] | tuple[Diagnostic, ...]) -> bool:
    return any(d.is_error for d in diagnostics)


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class SourceFile:
    """A source text and the name to show for it; maps offsets to 1-based line and column."""

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.text = text
        # made when first asked for: a build holds a SourceFile of every module, unchanged
        # ones too, and most are never shown
        self._lines: tuple[list[int], list[int]] | None = None

    def _line_table(self) -> tuple[list[int], list[int]]:
        """Where each line starts, and where it ends (before its line break)."""
        if self._lines is None:
            text = self.text
            if "\r" not in text:  # LF only (what the compiler reads): split is 4x the regex
                starts = [0, *accumulate(len(line) + 1 for line in text.split("\n"))]
                starts.pop()
                self._lines = starts, [*(start - 1 for start in starts[1:]), len(text)]
            else:
                # A line ends at LF, CRLF or a lone CR (old Mac files): each break's start and end.
                breaks = [(m.start(), m.end()) for m in _LINE_BREAK.finditer(text)]
                starts = [0, *(end for _, end in breaks)]
                self._lines = starts, [*(start for start, _ in breaks), len(text)]
        return self._lines

    def line_col(self, offset: int) -> tuple[int, int]:
        return self.line_cols((offset,))[0]

    def line_cols(self, offsets: Iterable[int]) -> list[tuple[int, int]]:
        """`line_col` of each offset: one call for a whole source map."""
        size = len(self.text)
        starts = self._line_table()[0]
        places: dict[int, tuple[int, int]] = {}  # a source map meets each offset ~2.5 times
        found = []
        for offset in offsets:
            place = places.get(offset)
            if place is None:
                at = max(0, min(offset, size))
                line = bisect_right(starts, at) - 1
                place = places[offset] = (line + 1, at - starts[line] + 1)
            found.append(place)
        return found

    def line_span(self, line: int) -> tuple[int, int]:
        """[start, end) of line `line` (1-based), without its line break."""
        starts, ends = self._line_table()
        return starts[line - 1], ends[line - 1]

    def line_text(self, line: int) -> str:
        start, end = self.line_span(line)
        return self.text[start:end]


def sort_key(diagnostic: Diagnostic) -> tuple[int, int, str]:
    return (diagnostic.span.start, diagnostic.span.end, diagnostic.code)


def render_short(diagnostic: Diagnostic, source: SourceFile) -> str:
    """`path:line:col: error: message  [code]`, then one line per note."""
    line, col = source.line_col(diagnostic.span.start)
    lines = [
        f"{source.name}:{line}:{col}: {diagnostic.severity.value}: "
        f"{diagnostic.message}  [{diagnostic.code}]"
    ]
    for note in diagnostic.notes:
        note_line, note_col = source.line_col(note.span.start)
        lines.append(f"{source.name}:{note_line}:{note_col}: note: {note.message}")
    return "\n".join(lines)


EXCERPT_WIDTH = 120  # a longer source line is shown as a window around the column


def _excerpt(source: SourceFile, span: Span) -> list[str]:
    line, col = source.line_col(span.start)
    end_line, end_col = source.line_col(max(span.start, span.end))
    line_start, line_end = source.line_span(line)
    length = line_end - line_start
    width = (end_col - col) if end_line == line and end_col > col else 1
    if length > EXCERPT_WIDTH:
        # only the window is copied: a long line is not read once per diagnostic
        start = max(0, min(col - 1 - EXCERPT_WIDTH // 2, length - EXCERPT_WIDTH))
        end = start + EXCERPT_WIDTH
        window = source.text[line_start + start : line_start + end].expandtabs(1)
        text = ("..." if start else "") + window + ("..." if end < length else "")
        col = col - start + (3 if start else 0)
    else:
        text = source.text[line_start:line_end].expandtabs(1)
    width = max(1, min(width, len(text) - col + 1))
    gutter = " " * len(str(line))
    return [
        f"{gutter} |",
        f"{line} | {text}",
        f"{gutter} | {' ' * (col - 1)}{'^' * width}",
    ]


def render_pretty(diagnostic: Diagnostic, source: SourceFile) -> str:
    """The short form, then the source line with carets, each note likewise, and `help:` hints."""
    line, col = source.line_col(diagnostic.span.start)
    out = [
        f"{source.name}:{line}:{col}: {diagnostic.severity.value}: "
        f"{diagnostic.message}  [{diagnostic.code}]",
        *_excerpt(source, diagnostic.span),
    ]
    for note in diagnostic.notes:
        note_line, note_col = source.line_col(note.span.start)
        out.append(f"{source.name}:{note_line}:{note_col}: note: {note.message}")
        out.extend(_excerpt(source, note.span))
    out.extend(f"  help: {hint}" for hint in diagnostic.hints)
    return "\n".join(out)


# How the command line shows diagnostics: "text" (`path:line:col: ...`) or "json" (one object
# per line, for editors and CI). Set once by `pellc` from `--format`.
output_format: ContextVar[str] = ContextVar("output_format", default="text")


def diagnostic_json(diagnostic: Diagnostic, source: SourceFile) -> dict[str, object]:
    """A diagnostic's fields in a `--format json` line (pell.report): 1-based lines and
    columns, `end` exclusive."""
    line, column = source.line_col(diagnostic.span.start)
    end_line, end_column = source.line_col(max(diagnostic.span.start, diagnostic.span.end))
    notes = []
    for note in diagnostic.notes:
        note_line, note_column = source.line_col(note.span.start)
        notes.append({"line": note_line, "column": note_column, "message": note.message})
    return {
        "code": diagnostic.code,
        "severity": diagnostic.severity.value,
        "path": source.name,
        "line": line,
        "column": column,
        "end": {"line": end_line, "column": end_column},
        "message": diagnostic.message,
        "hints": list(diagnostic.hints),
        "notes": notes,
    }


def render_all(
    diagnostics: list[Diagnostic] | tuple[Diagnostic, ...], source: SourceFile, pretty: bool = False
) -> str:
    """Every diagnostic, in source order, one block each (one JSON line each when the
    output format is json)."""
    if output_format.get() == "json":
        from pell.report import diagnostic_lines  # it imports this module

        return diagnostic_lines(sorted(diagnostics, key=sort_key), source)
    render = render_pretty if pretty else render_short
    blocks = [render(d, source) for d in sorted(diagnostics, key=sort_key)]
    return "\n".join(blocks) + ("\n" if blocks else "")
