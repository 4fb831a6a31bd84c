"""Generated whole programs (tests/fuzz_programs.py), each compiled for its target (23ai, 19c or
12.2): SQL that parseora and the output lint accept, or no SQL and located diagnostics with at
least one error; never an exception, never a hang.

1,000 programs in the normal run, 10,000 under `pytest -m fuzz`. `PELL_FUZZ_START=N` shifts the
seeds to explore new programs. Every failure names its seeds and prints a program; reproduce
with `python tests/fuzz_programs.py check SEED` (`show SEED` prints the program, `shrink SEED`
cuts it down to a small reproducer).
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable

import pytest
from conftest import ROOT
from fuzz_programs import (
    HANG_SECONDS,
    SLOW_SECONDS,
    TARGETS,
    Finding,
    RunSummary,
    describe,
    examine_text,
    generate,
    lint_sql,
    run,
    shrink,
)

START = int(os.environ.get("PELL_FUZZ_START", "0"))
NORMAL_PROGRAMS = 1_000
FUZZ_PROGRAMS = 10_000
# Below this share of programs with SQL the generator has stopped reaching code generation.
MIN_SQL_SHARE = 0.3


def _chunks(count: int, size: int) -> list[range]:
    return [range(START + i, START + min(i + size, count)) for i in range(0, count, size)]


def _check(seeds: range, slow_fails: bool) -> RunSummary:
    """Run the seeds; fail with every cause found (its seeds and one program each). A compile
    slower than SLOW_SECONDS fails under `-m fuzz` and is a warning in the normal run, where an
    absolute time would depend on the machine; one stopped at HANG_SECONDS always fails."""
    summary = run(seeds)
    slow = [f for f in summary.findings if f.kind == "slow"]
    if slow and not slow_fails:
        seeds_text = ", ".join(f"{f.seed} ({f.detail})" for f in slow)
        warnings.warn(
            f"compiles slower than {SLOW_SECONDS:g} s, seeds {seeds_text}: "
            "python tests/fuzz_programs.py check SEED",
            stacklevel=2,
        )
    if summary.failures(include_slow=slow_fails):
        pytest.fail(
            f"seeds {seeds.start}..{seeds.stop - 1}: findings, grouped by cause "
            f"(a hang is a compile stopped after {HANG_SECONDS:g} s)\n"
            + describe(summary, include_slow=slow_fails),
            pytrace=False,
        )
    return summary


@pytest.mark.parametrize(
    "seeds", _chunks(NORMAL_PROGRAMS, 250), ids=lambda r: f"{r.start}-{r.stop - 1}"
)
def test_generated_programs(seeds: range) -> None:
    summary = _check(seeds, slow_fails=False)
    assert summary.with_sql >= MIN_SQL_SHARE * summary.programs, (
        f"only {summary.with_sql} of {summary.programs} programs got SQL: the generator should "
        "keep most programs valid so they reach code generation"
    )


@pytest.mark.fuzz
@pytest.mark.parametrize(
    "seeds", _chunks(FUZZ_PROGRAMS, 1000), ids=lambda r: f"{r.start}-{r.stop - 1}"
)
def test_generated_programs_long(seeds: range) -> None:
    _check(seeds, slow_fails=True)


# ---- the generator -----------------------------------------------------------------------------


def test_programs_are_deterministic_and_differ() -> None:
    first = [generate(seed) for seed in range(20)]
    assert first == [generate(seed) for seed in range(20)]
    assert len({p.text for p in first}) == 20
    assert {p.target for p in (generate(seed) for seed in range(60))} == set(TARGETS)


# What the normal run's programs must contain between them: (what, pattern).
COVERAGE: list[tuple[str, str]] = [
    ("a module name of three parts", r"(?m)^module \w+(\.|::)\w+(\.|::)\w+;"),
    ("a module name with `::`", r"(?m)^module \w+::\w+;"),
    ("a reserved word in a module name", r"(?m)^module (\w+(\.|::))*(check|order|number|table)\b"),
    (
        "a case variant in a module name",
        r"(?m)^module (\w+(\.|::))*(Check|ORDER|Number|HR|Table)\b",
    ),
    *(
        (f"import {p}", rf"(?m)^import {p};")
        for p in ("dbms_output", "utl_http", "dbms_random", "dbms_stats")
    ),
    ("a record with a list field", r"record \w+ \{[^}]*: list<"),
    ("a record with an Option field", r"record \w+ \{[^}]*(\?|Option<)"),
    ("records named Order and ORDER", r"record (\w+) "),
    ("fields named a and A", r"record \w+ \{([^}]*)\}"),
    ("a record named like a built-in type", r"record (Number|Text|Date|Int)\b"),
    ("an error without fields", r"(?m)^(pub )?error \w+;"),
    ("an error with fields", r"(?m)^(pub )?error \w+ \{ \w+"),
    *((f"an @{c} error", rf"@{c}\n(pub )?error") for c in ("propagate", "skip", "panic")),
    ("an enum", r"(?m)^(pub )?enum \w+"),
    ("an enum variant with a value", r"enum \w+ \{[^}]*= \""),
    ("an out parameter", r"fn \w+\([^)]*\bout \w+:"),
    ("an inout parameter", r"fn \w+\([^)]*\binout \w+:"),
    ("parameters a and A", r"fn \w+\(([^)]*)\)"),
    ("a fn with no return type", r"fn \w+\([^)]*\) \{"),
    ("-> ()", r"\) -> \(\) \{"),
    ("a scalar return type", r"\) -> (number|int|text|bool|date|timestamp|bigtext) \{"),
    ("a record return type", r"\) -> [A-Z]\w* \{"),
    ("a list return type", r"\) -> list<"),
    ("an Option return type", r"\) -> Option<"),
    ("a T? return type", r"\) -> \w+\? \{"),
    ("Result<T, E1 | E2>", r"-> Result<\w+, \w+ \| \w+"),
    ("Result<Unit, E>", r"-> Result<Unit, "),
    ("let with a type", r"let \w+: [^=;]+ = "),
    ("let without a type", r"let \w+ = "),
    ("let without a value", r"let \w+: [^=;]+;"),
    ("var", r"var \w+"),
    ("an assignment", r"(?m)^\s+\w+ = [^=]"),
    ("a field assignment", r"(?m)^\s+\w+\.\w+ = [^=]"),
    ("else if", r"\} else if "),
    ("else", r"\} else \{"),
    ("while", r"while .* \{"),
    ("for over a range", r"for \w+ in .*\.\.[^.]"),
    ("for over an inclusive range", r"for \w+ in .*\.\.="),
    ("for over a SQL cursor", r"for \w+ in sql! \{"),
    ("for over a list literal", r"for \w+ in \["),
    ("for over .collect()", r"for \w+ in sql! \{[^}]*\}\.collect\(\)"),
    ("break", r"break;"),
    ("continue", r"continue;"),
    ("return;", r"return;"),
    ("return Ok(value)", r"return Ok\([^)]"),
    ("return Ok(())", r"return Ok\(\(\)\);"),
    ("return Err(E { .. })", r"return Err\(\w+ \{"),
    ("return Err(E)", r"return Err\(\w+\);"),
    ("return None", r"return None;"),
    ("transaction", r"transaction \{"),
    ("a call statement", r"(?m)^\s+\w+\([^;]*\);$"),
    ("an Oracle procedure call", r"(?m)^\s+dbms_output::put_line\("),
    ("a typed let of an Oracle call", r"let \w+: \w+ = \w+::\w+\("),
    (
        "an untyped let of an Oracle call",
        r"let \w+ = (dbms_random|utl_http|dbms_lob|dbms_utility)::\w+\(",
    ),
    ("an untyped let of a local call", r"let \w+ = [a-z]\w*\("),
    *(
        (f"sql! {d}", rf"sql! \{{\s*{d} ")
        for d in ("update", "insert", "delete", "merge", "select")
    ),
    *(
        (f".{t}()", rf"\}}(\.for_update\(\))?\.{t}\(\)")
        for t in ("one", "first", "collect", "rowcount")
    ),
    (".for_update()", r"\.for_update\(\)\.one\(\)"),
    (".returning::<T>().one()", r"\.returning::<number>\(\)\.one\(\)"),
    (".one()?", r"\.one\(\)\?;"),
    ("a bind", r"sql! \{[^}]*:\w+"),
    ("a `/` line in sql!", r"sql! \{[^}]*\n/\n"),
    ("yield", r"yield "),
    ("finally", r"\} finally \{"),
    ("an interpolated string", r'"[^"\n]*\{[^{}"]+\}[^"\n]*"'),
    ("a raw string", r"`[^`]*`"),
    ("a string escape", r'"[^"\n]*\\n'),
    ("a string with a `/` line", r'"[^"]*\n/\n'),
    ("a text literal over 32767 bytes", r'"[^"\n]{32768,}"'),
    ("a number of 40 digits", r"\b\d{40}"),
    ("a number of 4,301 digits", r"\d{4301}"),
    ("unary minus", r"[(=,] ?-[\w(]"),
    ("not", r"!\(|!\w"),
    *(
        (f"operator {op}", rf" {re.escape(op)} ")
        for op in ("+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "&&", "||")
    ),
    ("a chain of operators", r"\w+ [-+*/%] \w+ [-+*/%] \w+"),
    ("x == None", r"\w+ [!=]= None"),
    ("None == x", r"None [!=]= \w+"),
    *(
        (f".{m}()", rf"\.{m}\(")
        for m in (
            "len",
            "is_empty",
            "upper",
            "lower",
            "trim",
            "contains",
            "starts_with",
            "ends_with",
            "substr",
        )
    ),
    ("a record literal", r"\b[A-Z]\w* \{ \w+: "),
    ("a record literal shorthand", r"\b[A-Z]\w* \{ (\w+, )*\w+( \}|,)"),
    ("Some(...)", r"Some\("),
    ("an Enum::Variant", r"\b[A-Z]\w*::\w+"),
    ("a call with ?", r"\w+\([^;]*\)\?"),
    ("a list literal returned", r"return \[[^\]]"),
    ("a list literal as an argument", r"\w\((\w+, )*\["),
    ("a list literal before .len()", r"\[[^\]\n]*\]\.len\(\)"),
    ("a list literal as a field value", r"\w+: \[[^\]]"),
    ("a nested list literal", r"\[\["),
    ("a record literal in a list", r"\[[A-Z]\w* \{"),
    ("a list literal in an interpolation", r"\{\[[^\]]*\]\.len\(\)\}"),
    *(
        (f"@retry {a}", rf"@retry\([^\n]*\b{a} = ")
        for a in (
            "n",
            "backoff",
            "jitter",
            "exponential",
            "cap",
            "on",
            "scope",
            "isolation",
            "within",
            "recover",
            "observe",
            "backoff_ms",
            "cap_ms",
        )
    ),
    ("@retry with a positional n", r"@retry\(\d"),
    ("@retry without arguments", r"(?m)^@retry$"),
    ("@retry with a bad value", r"@retry\([^\n]*(= -1|= \"txn\"|= 1\.5|= \"yes\"|= 0\b)"),
    ("@retry with an unknown argument", r"@retry\([^\n]*(tries|backof|Jitter) ="),
    ("@retry twice", r"@retry[^\n]*\n@retry"),
    *(
        (f"@{a}", rf"(?m)^@{a}$")
        for a in ("autonomous", "pipelined", "deterministic", "result_cache", "udf")
    ),
    ("an unknown annotation", r"@(inline|memoize|cache|trace|Retry|RETRY|AUTONOMOUS)\b"),
    ("an annotation on a record", r"@\w+(\([^)]*\))?\n(pub )?record"),
    ("a reserved word as a local", r"let (order|check|number|table|level|select|from)\b"),
    ("a reserved word as a fn", r"fn (order|check|number|table|level|select|from|delete|update)\("),
    ("enums whose constants meet once joined", r"enum (\w+) \{[^}]*\}\s+enum \1_\w+ \{"),
    ("a record named X_list", r"record \w+_list \{"),
    ("module pell", r"(?m)^module pell(::transaction|\.transaction)?;"),
    ("a quoted reserved column", r'sql! \{ select [^}]*"(LEVEL|SIZE|ORDER)"'),
    ("a name of the lowering", r"\bpell_(result|attempt|i|finally)\b"),
    ("a name of 128 bytes or more", r"\b\w{128,}\b"),
    ("a name of 31 to 34 bytes", r"\b\w{31,34}\b"),
]


def _case_twins(names: list[str]) -> bool:
    """Two names that differ only in case (`Order` and `ORDER`)."""
    return len({n.lower() for n in names}) < len(set(names))


# Constructs found by a pattern and a test of what it captures.
TWINS: dict[str, Callable[[list[str]], bool]] = {
    "records named Order and ORDER": _case_twins,
    "fields named a and A": lambda bodies: any(
        _case_twins(re.findall(r"(\w+):", body)) for body in bodies
    ),
    "parameters a and A": lambda lists: any(
        _case_twins(re.findall(r"(\w+):", params)) for params in lists
    ),
}


def _has(what: str, pattern: str, text: str) -> bool:
    if what in TWINS:
        return TWINS[what](re.findall(pattern, text))
    return re.search(pattern, text) is not None


def test_generator_covers_the_language() -> None:
    """Every construct the fuzzing is meant to reach appears in the normal run's programs."""
    texts = [generate(seed).text for seed in range(NORMAL_PROGRAMS)]
    missing = [what for what, pattern in COVERAGE if not any(_has(what, pattern, t) for t in texts)]
    assert not missing, f"no program of seeds 0..{NORMAL_PROGRAMS - 1} has: {', '.join(missing)}"


# ---- the lint ----------------------------------------------------------------------------------

GOOD = """CREATE OR REPLACE PACKAGE hr.pay AS
  TYPE t_row IS RECORD (id NUMBER, f_level NUMBER);
  TYPE t_number_list IS TABLE OF NUMBER INDEX BY PLS_INTEGER;
  c_kind CONSTANT VARCHAR2(10) := 'it''s';
  FUNCTION f(p_a IN NUMBER) RETURN NUMBER;
  PROCEDURE g;
END pay;
/

CREATE OR REPLACE PACKAGE BODY hr.pay AS
  PROCEDURE h(p_x IN OUT NUMBER);

  FUNCTION f(p_a IN NUMBER) RETURN NUMBER IS
    l_a NUMBER;
    l_xs t_number_list;
    PROCEDURE pell_finally IS
    BEGIN
      NULL;
    END pell_finally;
  BEGIN
    l_xs.DELETE;
    FOR l_i IN 1 .. 3 LOOP
      IF l_i > 1 THEN
        l_a := CASE WHEN l_i = 2 THEN 1 ELSE 2 END;
      ELSIF l_i = 1 THEN
        BEGIN
          SAVEPOINT sp_pay_f;
        EXCEPTION
          WHEN OTHERS THEN RAISE;
        END;
      END IF;
    END LOOP;
    WHILE l_a = CASE WHEN l_a > 1 THEN 1 END LOOP
      l_a := 0;
    END LOOP;
    RETURN l_a / 2;
  END f;

  PROCEDURE g IS
  BEGIN
    update t set a = 1 where b = 'x
y';
  END g;

  PROCEDURE h(p_x IN OUT NUMBER) IS
  BEGIN
    p_x := p_x + 1;
  END h;
END pay;
/
"""


@pytest.mark.parametrize(
    ("change", "target", "rule", "words"),
    [
        (
            lambda s: s.replace("f_level NUMBER", "F_LEVEL NUMBER, f_level NUMBER"),
            "23ai",
            "duplicate",
            "record",
        ),
        (
            lambda s: s.replace(
                "FUNCTION f(p_a IN NUMBER) RETURN NUMBER;",
                "FUNCTION f(p_a IN NUMBER, P_A IN NUMBER) RETURN NUMBER;",
            ),
            "23ai",
            "duplicate",
            "parameter",
        ),
        (
            lambda s: s.replace("    l_a NUMBER;\n", "    l_a NUMBER;\n    L_A DATE;\n"),
            "23ai",
            "duplicate",
            "subprogram",
        ),
        (
            lambda s: s.replace("    l_a NUMBER;\n", "    l_a NUMBER;\n    p_a DATE;\n"),
            "23ai",
            "duplicate",
            "p_",
        ),
        (
            lambda s: s.replace(
                "  PROCEDURE h(p_x IN OUT NUMBER);\n", "  TYPE t_row IS TABLE OF NUMBER;\n"
            ),
            "23ai",
            "duplicate",
            "package",
        ),
        (
            lambda s: s.replace(
                "  PROCEDURE g IS\n",
                "  PROCEDURE F IS\n  BEGIN\n    NULL;\n  END F;\n\n  PROCEDURE g IS\n",
            ),
            "23ai",
            "duplicate",
            "two subprograms",
        ),
        (lambda s: s.replace("f_level NUMBER", "level NUMBER"), "23ai", "reserved", "record field"),
        (lambda s: s.replace("hr.pay", "check.pay"), "23ai", "reserved", "schema"),
        (
            lambda s: s.replace("l_a := CASE", "l_a := l_xs.order + CASE"),
            "23ai",
            "reserved",
            "member",
        ),
        (lambda s: s.replace("FOR l_i IN", "FOR number IN"), "23ai", "reserved", "loop index"),
        (
            lambda s: s.replace("l_xs t_number_list", "l_" + "x" * 127 + " t_number_list"),
            "23ai",
            "identifier-length",
            "128",
        ),
        (lambda s: s.replace("sp_pay_f", "sp_pay_" + "f" * 24), "12.2", "identifier-length", "30"),
        (
            lambda s: s.replace("'it''s'", "'" + "é" * 16384 + "'"),
            "23ai",
            "literal-length",
            "32767",
        ),
        (lambda s: s.replace("'x\ny'", "'x\n/\ny'"), "23ai", "slash-line", "`/`"),
        (
            lambda s: s.replace("    update t set a = 1", "    update t set a = a\n  /\n 2"),
            "23ai",
            "slash-line",
            "`/`",
        ),
        (lambda s: s.replace("l_a NUMBER;", "_a NUMBER;"), "23ai", "shape", "not SQL"),
    ],
)
def test_the_lint_finds(change: Callable[[str], str], target: str, rule: str, words: str) -> None:
    assert lint_sql(GOOD, target) == []
    problems = lint_sql(change(GOOD), target)
    assert any(p.rule == rule and words in p.message + " " + p.key for p in problems), problems


def test_the_lint_accepts_what_pellc_writes_for_the_cases_and_examples() -> None:
    snapshots = sorted((ROOT / "tests" / "__snapshots__").rglob("*.sql"))
    assert len(snapshots) >= 20
    for path in snapshots:
        target = "12.2" if "12_2" in path.name else "23ai"
        assert lint_sql(path.read_text(encoding="utf-8"), target) == [], path.name


def test_examine_reports_exceptions_and_unlocated_diagnostics(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pell

    def broken(text: str, filename: str = "", target: str = "23ai") -> pell.CompileResult:
        raise KeyError("boom")

    monkeypatch.setattr(pell, "compile_source", broken)
    (finding,) = examine_text("module m;", "23ai", seed=7).findings
    assert finding.kind == "exception" and "KeyError" in finding.cause
    report = finding.report()
    assert "seed 7" in report and "module m;" in report


def test_a_finding_shrinks_to_a_small_reproducer() -> None:
    text = (
        generate(3).text
        + "\nfn extra() -> number {\n    let xs: list<number> = [1, 2];\n    return xs.len();\n}\n"
    )

    def keep(candidate: str) -> bool:
        return "[1, 2]" in candidate and "module" in candidate

    small = shrink(text, keep)
    assert keep(small) and len(small) < 60, small


def test_findings_group_by_cause() -> None:
    findings = [
        Finding(seed, "23ai", "exception", "KeyError in x.py:f: _", "detail", "text")
        for seed in (1, 1, 2)
    ]
    summary = RunSummary(programs=2, findings=findings)
    ((key, members),) = summary.groups()
    assert key.startswith("exception: KeyError") and [f.seed for f in members] == [1, 2]
