"""Every input, however broken, gets SQL or located diagnostics, never an exception.

The normal run is bounded in time; `pytest -m fuzz` runs the same tests far longer.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CASES, EXAMPLES, oracle_parse_errors
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pell import ast, compile_source, decode_source
from pell.diagnostics import render_all

LONG = os.environ.get("PELL_FUZZ_LONG") == "1"
SEEDS = sorted(
    p for p in [*CASES.glob("*.pell"), *(CASES / "errors").glob("*.pell"), *EXAMPLES.glob("*.pell")]
)


def _sql_blocks(module: object) -> list[str]:
    return [node.text for node in ast.walk(module) if isinstance(node, ast.SqlBlock)]  # type: ignore[arg-type]


def answer(text: str, seed: str | None = None) -> None:
    """Compile `text`: SQL that parseora accepts, or diagnostics located inside the text.

    pellc passes embedded SQL through as written, so when a mutation changed the SQL inside a
    `sql! { }` (the seed does not contain it any more), that SQL is the user's to get right and
    parseora is not asked about it; the compiler must still answer without crashing."""
    result = compile_source(text, "fuzz.pell")
    user_sql_intact = seed is None or (
        result.module is not None and all(block in seed for block in _sql_blocks(result.module))
    )
    if result.sql is None:
        assert result.diagnostics, "no SQL and no diagnostic"
    elif user_sql_intact:
        assert oracle_parse_errors(result.sql) == [], result.sql
    for diagnostic in result.diagnostics:
        assert 0 <= diagnostic.span.start <= diagnostic.span.end <= len(text)
    render_all(result.diagnostics, result.source, pretty=True)  # rendering never fails either


# ---- generated programs -----------------------------------------------------------------

names = st.sampled_from(["a", "b", "total", "order_id", "status", "level", "x1"])
numbers = st.integers(-(10**30), 10**30).map(str) | st.sampled_from(["0", "1.5", "1_000"])
texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12).map(
    lambda s: (
        '"'
        + s.replace("\\", "\\\\").replace('"', '\\"').replace("{", "{{").replace("}", "}}")
        + '"'
    )
)
atoms = names | numbers | texts | st.sampled_from(["true", "false", "None", "r.id", "o.status"])
operators = st.sampled_from(["+", "-", "*", "/", "%", "==", "!=", "<", ">=", "&&", "||"])


@st.composite
def expressions(draw: st.DrawFn, depth: int = 0) -> str:
    if depth > 3 or draw(st.booleans()):
        return draw(atoms)
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return f"{draw(expressions(depth + 1))} {draw(operators)} {draw(expressions(depth + 1))}"
    if kind == 1:
        return f"({draw(expressions(depth + 1))})"
    if kind == 2:
        return f"!{draw(expressions(depth + 1))}"
    if kind == 3:
        return f'"{{{draw(names)}}} and {{{draw(names)}}}"'
    return f"{draw(names)}.upper()"


@st.composite
def statements(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 7))
    expr = draw(expressions())
    if kind == 0:
        return f"let {draw(names)} = {expr};"
    if kind == 1:
        return f"{draw(names)} = {expr};"
    if kind == 2:
        return f"if {expr} {{ return {draw(expressions())}; }} else {{ {draw(names)} = 1; }}"
    if kind == 3:
        return f"for r in sql! {{ select id, name from t where id = :{draw(names)} }} {{ {draw(names)} = r.id; }}"
    if kind == 4:
        return f"sql! {{ update t set a = :{draw(names)} where b = '{{' }};"
    if kind == 5:
        return f"let o: Order = sql! {{ select id, status from orders where id = :{draw(names)} }}.one();"
    if kind == 6:
        return f"while {expr} {{ break; }}"
    return f"return {expr};"


@st.composite
def programs(draw: st.DrawFn) -> str:
    retry = draw(st.sampled_from(["", "@retry(n=3, backoff=50)\n", "@retry(on=[deadlock])\n"]))
    params = draw(st.sampled_from(["", "a: number", "a: number, status: text", "order_id: int"]))
    returns = draw(st.sampled_from(["", " -> number", " -> text", " -> Order"]))
    body = "\n    ".join(draw(st.lists(statements(), max_size=6)))
    return (
        "module fuzz;\npub record Order { id: number, status: text }\n"
        f"{retry}pub fn f({params}){returns} {{\n    {body}\n}}\n"
    )


@settings(
    max_examples=400 if LONG else 60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(programs())
def test_generated_programs_compile_or_get_diagnostics(program: str) -> None:
    answer(program)


@pytest.mark.fuzz
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_generated_programs_long(program: str) -> None:
    answer(program)


# ---- mutated inputs ---------------------------------------------------------------------


def mutate(text: str, rng: random.Random) -> str:
    kind = rng.randrange(9)
    if not text:
        return text
    at = rng.randrange(len(text))
    if kind == 0:  # delete a range
        return text[:at] + text[at + rng.randrange(1, 40) :]
    if kind == 1:  # duplicate a line
        lines = text.splitlines(keepends=True)
        i = rng.randrange(len(lines))
        return "".join([*lines[: i + 1], lines[i], *lines[i + 1 :]])
    if kind == 2:  # truncate
        return text[:at]
    if kind == 3:  # stray brackets
        return text[:at] + rng.choice("{}()[]<>") + text[at:]
    if kind == 4:  # a NUL byte
        return text[:at] + "\x00" + text[at:]
    if kind == 5:  # right-to-left marks
        return text[:at] + "\u202e\u200f" + text[at:]
    if kind == 6:  # a huge number
        return text[:at] + " 9" * 1 + "9" * rng.randrange(50, 5000) + text[at:]
    if kind == 7:  # quotes and comment starters
        return text[:at] + rng.choice(['"', "`", "'", "/*", "//", "--", "sql! {"]) + text[at:]
    return text[:at] + text[at:][::-1][:20] + text[at + 20 :]  # a reversed slice


def test_mutated_inputs_never_crash() -> None:
    rng = random.Random(20261121)
    count = 1500 if LONG else 300
    for _ in range(count):
        seed = rng.choice(SEEDS).read_text("utf-8")
        text = seed
        for _ in range(rng.randrange(1, 4)):
            text = mutate(text, rng)
        answer(text, seed)


def test_invalid_utf8_is_a_located_diagnostic() -> None:
    data = b"module m;\npub fn f() { }\n" + b"\xff\xfe\n"
    text, failure = decode_source(data, "bad.pell")
    assert text is None and failure is not None
    (diagnostic,) = failure.diagnostics
    assert diagnostic.code == "encoding"
    assert failure.source.line_col(diagnostic.span.start) == (3, 1)


# ---- limits --------------------------------------------------------------------------


def test_deep_nesting_is_a_diagnostic() -> None:
    for text in (
        "module m;\npub fn f() -> number { return " + "-" * 10_000 + "1; }\n",
        "module m;\npub fn f() -> number { return " + "!" * 10_000 + "true; }\n",
        "module m;\npub fn f(x: number) {\n" + "if x > 0 {\n" * 10_000 + "}\n" * 10_000 + "}\n",
    ):
        result = compile_source(text, "deep.pell")
        assert [d.code for d in result.diagnostics] == ["too-deep"]


def test_parentheses_nest_freely() -> None:
    text = "module m;\npub fn f() -> number { return " + "(" * 10_000 + "1" + ")" * 10_000 + "; }\n"
    assert compile_source(text, "parens.pell").sql is not None


def test_a_huge_file_is_a_diagnostic() -> None:
    text = "module m;\n" + ("// " + "x" * 997 + "\n") * 50_000  # 50 MB
    result = compile_source(text, "huge.pell")
    assert [d.code for d in result.diagnostics] == ["too-large"]


def test_a_30000_character_line() -> None:
    text = 'module m;\npub fn f() -> text { return "' + "a" * 30_000 + '"; }\n'
    result = compile_source(text, "line.pell")
    assert result.sql is not None
    broken = 'module m;\npub fn f() -> text { return "' + "a" * 30_000 + '" +; }\n'
    result = compile_source(broken, "line.pell")
    (diagnostic,) = result.diagnostics
    shown = render_all(result.diagnostics, result.source, pretty=True)
    assert max(len(line) for line in shown.splitlines()) < 400  # a window, not the whole line
    assert diagnostic.code == "syntax"


# ---- determinism -----------------------------------------------------------------------


def test_output_is_byte_identical_across_hash_seeds_and_directories(tmp_path: Path) -> None:
    outputs = []
    for seed, cwd in (("0", tmp_path), ("12345", Path(__file__).parent), ("random", Path("/"))):
        out = tmp_path / f"out-{seed}"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-m", "pell", "build", str(EXAMPLES), "-d", str(out)],
            cwd=cwd, env=env, capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        outputs.append(
            {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*.sql"))}
        )
    assert outputs[0] == outputs[1] == outputs[2]
    assert len(outputs[0]) >= 9


def test_grammar_and_template_caches_are_written_once_and_survive_a_read_only_directory(
    tmp_path: Path,
) -> None:
    source = (EXAMPLES / "orders.pell").read_text(encoding="utf-8")
    script = (
        "import sys, pell; "
        "sys.stdout.write(pell.compile_source(sys.stdin.read(), 'orders.pell').sql or '')"
    )
    cache_home = tmp_path / "cache"
    outputs = []
    # the first run fills the caches (lark's analysed grammar, and the tables pellc's own parser
    # exports from it), the next ones read them (lark is needed again only at a syntax error)
    for _ in range(3):
        env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, input=source, capture_output=True,
            text=True, check=True,
        )  # fmt: skip
        outputs.append(done.stdout)
    entries = sorted((cache_home / "pellc").iterdir())
    assert [p.name.split("-")[0] for p in entries] == ["grammar", "grammar", "templates"]
    (lark_cache,) = [p for p in entries if p.suffix == ".cache"]
    (tables,) = [p for p in entries if p.suffix == ".tables"]
    assert tables.stem.startswith(lark_cache.stem)  # lark's key, and pellc's code
    assert {p.suffix for p in entries[2].iterdir()} == {".cache"}  # compiled templates
    read_only = {**os.environ, "XDG_CACHE_HOME": "/proc/pellc-cannot-write-here"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=read_only, input=source, capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    assert outputs[0] == outputs[1] == outputs[2] == done.stdout
    assert "PACKAGE BODY orders" in done.stdout


def test_threads_compiling_at_once_get_what_one_thread_gets() -> None:
    # The parser's callback table is per thread; each file's diagnostics stay its own.
    from concurrent.futures import ThreadPoolExecutor

    paths = sorted(EXAMPLES.glob("*.pell")) + sorted((CASES / "errors").glob("*.pell"))
    texts = [path.read_text(encoding="utf-8") for path in paths]

    def compile_text(text: str) -> tuple[str | None, tuple[str, ...]]:
        result = compile_source(text, "t.pell")
        return result.sql, tuple(d.message for d in result.diagnostics)

    alone = [compile_text(text) for text in texts]
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(compile_text, texts * 3))
    assert together == alone * 3
    assert any(messages for _, messages in alone) and any(sql for sql, _ in alone)
