"""`pell.verify`: every retried fn, every fn that controls the transaction (a `transaction { }`
block, a COMMIT, ROLLBACK or SAVEPOINT, DDL, a procedure that commits), and every fn that calls
one, run against a model of Oracle transactions (or PostgreSQL's, for modules compiled for it)
under injected faults (docs/verify.md).

`verify(results)` takes the compile results of modules compiled together and gives a verdict
per fn: how many schedules ran and what they found, each finding with the schedule that shows
it.
"""

from __future__ import annotations

from collections.abc import Callable

from pell import ast, runtime
from pell.compiler import CompileResult
from pell.diagnostics import CODES, Severity, SourceFile
from pell.records import record
from pell.verify.interpreter import Program, ProgramModule, Violation
from pell.verify.model import Location
from pell.verify.schedules import FnVerdict, needs_verifying, verify_fn

__all__ = ["Finding", "Report", "Step", "verify", "verify_program"]


@record
class Step:
    """One step of a finding's schedule, at the Pell source it comes from when it has one."""

    text: str
    place: tuple[str, int, int] | None  # path, line, column

    def render(self) -> str:
        if self.place is None:
            return self.text
        path, line, column = self.place
        return f"{self.text}  ({path}:{line}:{column})"


@record
class Finding:
    """One violation, located in the Pell source, with the schedule that shows it."""

    code: str
    severity: Severity
    message: str
    source: SourceFile
    offset: int
    steps: tuple[Step, ...]

    @property
    def schedule(self) -> tuple[str, ...]:
        """The steps as printed."""
        return tuple(step.render() for step in self.steps)

    def render(self) -> str:
        line, col = self.source.line_col(self.offset)
        head = (
            f"{self.source.name}:{line}:{col}: {self.severity.value}: {self.message}  [{self.code}]"
        )
        return "\n".join([head, "  schedule:", *(f"    {step}" for step in self.schedule)])


@record
class Report:
    verdicts: tuple[FnVerdict, ...]
    findings: tuple[Finding, ...]
    sources: dict[tuple[str, ...], SourceFile]

    @property
    def has_errors(self) -> bool:
        return any(f.severity is Severity.ERROR for f in self.findings)

    def summary_lines(self) -> list[str]:
        """Per verified fn: where it is, how many schedules ran, how many findings."""
        lines = []
        for verdict in self.verdicts:
            source = self.sources[verdict.module]
            line, col = source.line_col(max(verdict.origin, 0))
            found = len(verdict.violations)
            outcome = f"{found} finding{'s' if found != 1 else ''}" if found else "no findings"
            lines.append(
                f"{source.name}:{line}:{col}: {'.'.join(verdict.module)}::{verdict.fn}: "
                f"{verdict.schedules} schedules, {outcome}"
            )
        return lines


def program_module(
    result: CompileResult, paths: frozenset[tuple[str, ...]] = frozenset()
) -> ProgramModule:
    """A compiled module as the verifier runs it; `paths`: the modules verified with it, by
    which `import std::b;` is the module `b` unless one of them is `std::b`
    (pell.checker.imports.imported_path)."""
    assert result.module is not None and result.lowered is not None, "verify needs SQL"
    module = result.module
    errors = [item for item in module.items if isinstance(item, ast.ErrorDecl)]
    imports = tuple(
        i.path[1:] if len(i.path) == 2 and i.path[0] == "std" and i.path not in paths else i.path
        for i in module.imports
    )
    return ProgramModule(
        path=module.path,
        imports=imports,
        subprograms={s.fn: s for s in result.lowered.subprograms},
        errors=tuple(e.name for e in errors),
        panics=frozenset(e.name for e in errors if runtime.error_category(e) == "panic"),
    )


def verify(
    results: list[CompileResult], progress: Callable[[int, int], None] | None = None
) -> Report:
    """Verify the modules of `results` (each compiled without errors, all for one target)
    together; `progress(done, total)` after each fn verified, if given."""
    from pell.postgres import PgModule

    paths = frozenset(r.module.path for r in results if r.module is not None)
    modules = [program_module(result, paths) for result in results]
    sources = {module.path: result.source for module, result in zip(modules, results, strict=True)}
    postgres = any(isinstance(result.lowered, PgModule) for result in results)
    return verify_program(Program(modules, postgres), sources, progress)


def verify_program(
    program: Program,
    sources: dict[tuple[str, ...], SourceFile],
    progress: Callable[[int, int], None] | None = None,
) -> Report:
    fns = needs_verifying(program)
    verdicts: list[FnVerdict] = []
    for module, subprogram in fns:
        verdicts.append(verify_fn(program, module, subprogram))
        if progress is not None:
            progress(len(verdicts), len(fns))
    findings: list[Finding] = []
    for verdict in verdicts:
        fallback = (verdict.module, verdict.origin)
        for violation in verdict.violations:
            findings.append(_finding(violation, fallback, sources))
    return Report(tuple(verdicts), tuple(findings), sources)


def _finding(
    violation: Violation, fallback: Location, sources: dict[tuple[str, ...], SourceFile]
) -> Finding:
    module, offset = violation.at if violation.at[1] >= 0 else fallback
    source = sources[module]
    steps = []
    for text, at in violation.log:
        place = None
        if at is not None and at[1] >= 0 and at[0] in sources:
            where = sources[at[0]]
            place = (where.name, *where.line_col(at[1]))
        steps.append(Step(text, place))
    severity = CODES[violation.code][0]
    return Finding(violation.code, severity, violation.message, source, offset, tuple(steps))
