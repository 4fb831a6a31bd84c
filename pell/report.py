"""What `pellc` reports, as text or, under `--format json`, as JSON lines (docs/json.md).

Each function gives the text to write, in the output format of the run (`output_format`):
the command line only chooses the stream. Under json every line is one object with
`"schema": SCHEMA` and a `"kind"` (KINDS); nothing else is written.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pell.diagnostics import Diagnostic, SourceFile, diagnostic_json, output_format

if TYPE_CHECKING:
    from pell.checker.model import CheckedModule
    from pell.explain import RetryExplanation
    from pell.verify import Finding, Report, Step

# The version of the JSON lines: additions (a kind, a field) keep it; a removal, a rename or
# a change of a field's meaning bumps it (docs/json.md).
SCHEMA = 1

# Every kind of JSON line, with what it is (docs/json.md describes each one's fields).
KINDS: dict[str, str] = {
    "diagnostic": "a compiler diagnostic, or Oracle's compile error of a deployed object",
    "verify-finding": "a violation `pellc verify` found, with the schedule that shows it",
    "verify-fn": "a fn `pellc verify` ran: how many schedules, how many findings",
    "schedule": "a @retry fn's attempts and sleeps, as `pellc explain` shows them",
    "sql": "generated SQL written to standard output",
    "output-status": "`build --check`: an output that is missing or stale",
    "deploy-step": "a statement `pellc deploy` runs (or would run, with --dry-run)",
    "progress": "a directory build's progress: the module it is at",
    "summary": "the counts a command ends with",
    "rebuild": "`build --watch`: what one rebuild compiled and wrote, and its time",
    "note": "something to know that is neither a diagnostic nor an error",
    "error": "a usage, file, database or internal error: the run stops or skips a file",
}


def is_json() -> bool:
    return output_format.get() == "json"


def json_line(kind: str, fields: Mapping[str, object]) -> str:
    """One JSON line of `kind`: the schema version and kind first, then `fields`."""
    assert kind in KINDS, kind
    return json.dumps({"schema": SCHEMA, "kind": kind, **fields}) + "\n"


def diagnostic_lines(diagnostics: Iterable[Diagnostic], source: SourceFile) -> str:
    return "".join(json_line("diagnostic", diagnostic_json(d, source)) for d in diagnostics)


def error(message: str, category: str, path: Path | str | None = None) -> str:
    """`pellc: error: message`, or an error line; `category`: usage, file, database, internal."""
    if is_json():
        where = {} if path is None else {"path": str(path)}
        return json_line("error", {"category": category, "message": message, **where})
    return f"pellc: error: {message}\n"


def note(message: str, path: Path | str | None = None) -> str:
    """`path: message` (or the message alone), or a note line."""
    if is_json():
        where = {} if path is None else {"path": str(path)}
        return json_line("note", {"message": message, **where})
    return message + "\n" if path is None else f"{path}: {message}\n"


def sql(text: str, path: Path | str | None = None) -> str:
    """Generated SQL for standard output: the text itself, or one line holding it (`path`: the
    `.pell` file it was generated from, none for the runtime)."""
    if is_json():
        return json_line("sql", ({} if path is None else {"path": str(path)}) | {"text": text})
    return text


def summary(command: str, text: str, counts: dict[str, object]) -> str:
    """A command's closing counts: `text`, or a summary line of `counts`."""
    if is_json():
        return json_line("summary", {"command": command, **counts})
    return text + "\n"


def rebuild(text: str, counts: dict[str, object]) -> str:
    """One rebuild of `build --watch`: `text`, or a rebuild line of `counts`."""
    if is_json():
        return json_line("rebuild", counts)
    return text + "\n"


def output_status(path: Path, status: str) -> str:
    if is_json():
        return json_line("output-status", {"path": str(path), "status": status})
    return f"{path}: {status}\n"


def progress(done: int, total: int, path: Path) -> str:
    """A JSON progress line (the text form is a terminal's status line, written by cli)."""
    return json_line("progress", {"done": done, "total": total, "path": str(path)})


def deploy_step(number: int, script: Path, object_type: str, object_name: str, status: str) -> str:
    """A statement of a deploy: `status` planned (dry run), ok or failed."""
    if is_json():
        fields = {"number": number, "script": script.as_posix(), "object_type": object_type}
        fields |= {"object_name": object_name, "status": status}
        return json_line("deploy-step", fields)
    label = f"{object_type} {object_name}"
    if status == "planned":
        return f"  {number}. {script}: {label}\n"
    return f"{script}: {label}: {'FAILED' if status == 'failed' else 'ok'}\n"


def located_error(
    path: Path | str, line: int, column: int, severity: str, message: str, code: str
) -> str:
    """A diagnostic that has a place but no span of a source pellc holds (Oracle's compile
    errors, a script deploy cannot split): `path:line:col: severity: message  [code]`."""
    if is_json():
        fields = {"code": code, "severity": severity, "path": str(path), "line": line}
        fields |= {"column": column, "message": message, "hints": [], "notes": []}
        return json_line("diagnostic", fields)
    return f"{path}:{line}:{column}: {severity}: {message}  [{code}]\n"


def findings(found: Iterable[Finding]) -> str:
    """Each verify finding with its schedule, step by step."""
    if not is_json():
        return "".join(finding.render() + "\n" for finding in found)
    lines = []
    for finding in found:
        line, column = finding.source.line_col(finding.offset)
        fields: dict[str, object] = {
            "code": finding.code,
            "severity": finding.severity.value,
            "path": finding.source.name,
            "line": line,
            "column": column,
            "message": finding.message,
            "schedule": [_step(step) for step in finding.steps],
        }
        lines.append(json_line("verify-finding", fields))
    return "".join(lines)


def _step(step: Step) -> dict[str, object]:
    if step.place is None:
        return {"step": step.text}
    path, line, column = step.place
    return {"step": step.text, "path": path, "line": line, "column": column}


def verified_fns(report: Report) -> str:
    """Per verified fn: where it is, how many schedules ran, how many findings."""
    if not is_json():
        return "".join(line + "\n" for line in report.summary_lines())
    lines = []
    for verdict in report.verdicts:
        source = report.sources[verdict.module]
        line, column = source.line_col(max(verdict.origin, 0))
        fields: dict[str, object] = {
            "path": source.name,
            "line": line,
            "column": column,
            "module": ".".join(verdict.module),
            "fn": verdict.fn,
            "schedules": verdict.schedules,
            "findings": len(verdict.violations),
        }
        lines.append(json_line("verify-fn", fields))
    return "".join(lines)


def schedules(explanations: list[RetryExplanation], checked: CheckedModule, path: str) -> str:
    """`pellc explain`: its text, or one schedule line per retried fn (a note when there is
    none)."""
    from pell.explain import fn_json, render_text

    if not is_json():
        return render_text(explanations, checked, path)
    if not explanations:
        return note("no fn has @retry", path)
    module = checked.module.dotted_name
    lines = []
    for item in explanations:
        entry = fn_json(item)
        fields: dict[str, object] = {"path": path, "module": module, "fn": entry.pop("name")}
        lines.append(json_line("schedule", fields | entry))
    return "".join(lines)
