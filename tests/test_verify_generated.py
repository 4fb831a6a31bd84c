"""`pell.verify` on generated programs (tests/verify_programs.py): retried fns of both scopes,
with `recover` and `isolation`, plain fns, `transaction { }` blocks and @autonomous fns
calling each other, in one module or across two.

For every program pellc accepts (each module compiles, and the retry checks that follow calls
between the modules find no error), the verifier must find no error, and must run at least two
schedules for each retried fn. Warnings (verify-repeated-effect and the like) are allowed.

150 programs in the normal run, 2,000 under `pytest -m fuzz`; both derandomized, so a run
tests the same programs until the generator or hypothesis changes. `PELL_VERIFY_SEED=N` seeds
them instead, to explore new programs. A failure prints the program (every module) and the
findings; `python tests/verify_programs.py N` measures the generator.

Found so far: a `return` inside a `transaction { }` block of a fn with `finally`
(tests/verify/early_return.pell), and a committing `recover` fn of a transaction-scoped retry,
which pellc accepted (tests/cases/errors/commit_in_retry.pell).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, assume, given, seed, settings
from verify_programs import FEATURES, Program, programs

from pell import compile_source
from pell.checker.retry_safety import project_findings
from pell.compiler import CompileResult
from pell.diagnostics import Severity
from pell.verify import Report, verify

NORMAL_EXAMPLES = 150
FUZZ_EXAMPLES = 2_000
LEAST_COMPILE_RATE = 0.6  # the generator builds valid programs: most must compile


@dataclass(slots=True)
class Tally:
    generated: int = 0
    compiled: int = 0
    features: set[str] = field(default_factory=set)  # of the programs that compiled

    def rate(self) -> float:
        return self.compiled / max(self.generated, 1)


def compile_program(program: Program) -> list[CompileResult] | None:
    """The modules compiled together, as `pellc verify` does; None if pellc refuses any."""
    results = [
        compile_source(text, filename=name, target=program.target)
        for name, text in zip(program.filenames(), program.texts, strict=True)
    ]
    if not all(result.ok for result in results):
        return None
    facts = [result.retry_facts for result in results if result.retry_facts is not None]
    across = project_findings(facts) if len(facts) > 1 else {}
    if any(d.is_error for found in across.values() for d in found):
        return None
    return results


def explain(program: Program, report: Report, problem: str) -> str:
    findings = "\n".join(finding.render() for finding in report.findings) or "(no findings)"
    summary = "\n".join(report.summary_lines())
    return f"{problem}\n\n{program.render()}\n-- findings:\n{findings}\n-- verdicts:\n{summary}"


def check_program(program: Program, tally: Tally) -> None:
    tally.generated += 1
    results = compile_program(program)
    assume(results is not None)
    assert results is not None
    tally.compiled += 1
    tally.features |= program.features()
    report = verify(results)
    errors = [f for f in report.findings if f.severity is Severity.ERROR]
    assert not errors, explain(
        program, report, f"{len(errors)} error finding(s) on a valid program"
    )
    verdicts = {(".".join(v.module), v.fn): v for v in report.verdicts}
    unverified = sorted(program.retried() - verdicts.keys())
    assert not unverified, explain(program, report, f"retried fns not verified: {unverified}")
    thin = sorted(
        f"{module}::{fn} ({verdicts[module, fn].schedules})"
        for module, fn in program.retried()
        if verdicts[module, fn].schedules < 2
    )
    assert not thin, explain(program, report, f"retried fns with fewer than 2 schedules: {thin}")


def property_test(max_examples: int, tally: Tally) -> Callable[[], None]:
    chosen = os.environ.get("PELL_VERIFY_SEED")

    @settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=chosen is None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(programs())
    def verified_without_errors(program: Program) -> None:
        check_program(program, tally)

    return verified_without_errors if chosen is None else seed(int(chosen))(verified_without_errors)


def test_generated_programs_verify_without_errors() -> None:
    tally = Tally()
    property_test(NORMAL_EXAMPLES, tally)()
    assert tally.rate() > LEAST_COMPILE_RATE, (
        f"only {tally.compiled} of {tally.generated} generated programs compiled"
    )


@pytest.mark.fuzz
def test_many_generated_programs_verify_without_errors() -> None:
    """Also: every construct the generator is meant to reach is in a program that compiled (the
    normal run's 150 programs miss some of the rarer ones)."""
    tally = Tally()
    property_test(FUZZ_EXAMPLES, tally)()
    assert tally.rate() > LEAST_COMPILE_RATE, (
        f"only {tally.compiled} of {tally.generated} generated programs compiled"
    )
    missing = [feature for feature in FEATURES if feature not in tally.features]
    assert not missing, f"no program that compiled has: {missing}"
