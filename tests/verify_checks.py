"""What the verifier tests of both targets share: a fn's tree, its retry loop, the findings
by location, and the check that a planted defect is found where it is."""

from __future__ import annotations

from pell import plsql
from pell.compiler import CompileResult
from pell.verify import Report


def tree(result: CompileResult, fn: str) -> plsql.Subprogram:
    assert result.lowered is not None
    return next(s for s in result.lowered.subprograms if s.fn == fn)


def retry_parts(subprogram: plsql.Subprogram) -> tuple[plsql.RetryLoop, plsql.Block]:
    loop = next(s for s in subprogram.body if isinstance(s, plsql.RetryLoop))
    attempt = next(s for s in loop.body if isinstance(s, plsql.Block))
    return loop, attempt


def findings(report: Report) -> list[tuple[str, str]]:
    located = []
    for finding in report.findings:
        line, col = finding.source.line_col(finding.offset)
        located.append((finding.code, f"{line}:{col}"))
    return sorted(located)


def assert_found(report: Report, expected: tuple[str, str], message: str) -> None:
    """`expected` (code, line:col) is among the findings, saying `message`, with the schedule
    that shows it, and the report fails."""
    assert expected in findings(report), findings(report)
    finding = next(
        f
        for f in report.findings
        if (f.code, "{}:{}".format(*f.source.line_col(f.offset))) == expected
    )
    assert message in finding.message
    assert finding.schedule
    assert report.has_errors
