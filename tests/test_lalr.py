"""pell.lalr, pellc's own parser, against lark's parser, differentially.

Both parse with pellc's AST callbacks. Where lark parses a text, pell.lalr must parse it too,
to the same AST, with the same spans (every node's, and the names' inside them) and the same
diagnostics from the builder; where lark raises a syntax error, pell.lalr must reject the text
(pell.syntax.parse then asks lark, for its diagnostic). Inputs: every .pell file under
examples/ and tests/, with CRLF line ends too, the bench's synthetic module, generated programs
(tests/fuzz_programs.py), the lexer's tricky texts and seeded mutations (tests/test_lexer.py).
And a successful parse imports no lark at all.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import test_lexer
from conftest import ROOT
from fuzz_programs import generate
from lark.exceptions import UnexpectedInput
from test_lexer import SOURCES, TRICKY, mutate

from pell import ast, lalr, syntax
from pell.diagnostics import Diagnostic

NORMAL_MUTATIONS = 4_000
FUZZ_MUTATIONS = 40_000


def _shape(module: ast.Module | None) -> list[Any] | None:
    """Every node of `module` with the spans its equality leaves out."""
    if module is None:
        return None
    return [
        (repr(node), node.span, getattr(node, "name_span", None), getattr(node, "var_span", None))
        for node in ast.walk(module)
    ]


def _diagnostics(diagnostics: list[Diagnostic]) -> list[tuple[Any, ...]]:
    return [(d.code, d.message, d.span, d.hints, d.severity) for d in diagnostics]


def compare(text: str, label: str) -> bool:
    """Whether lark parses `text` (and pell.lalr as it does): a test failure where they differ."""
    fast = syntax._fast_built(text)
    fast_result = syntax._result(*fast) if fast is not None else None
    try:
        lark = syntax._lark_built(text)
    except UnexpectedInput as error:
        if fast is not None:
            pytest.fail(f"{label}: pell.lalr parses what lark rejects ({error!r})\n{text!r}")
        return False
    if fast is None or fast_result is None:
        pytest.fail(f"{label}: pell.lalr rejects what lark parses\n{text!r}")
    expected = syntax._result(*lark)
    assert fast[0][1:] == lark[0][1:], label  # the start rule's span
    assert fast_result[0] == expected[0], label
    assert _shape(fast_result[0]) == _shape(expected[0]), label
    assert _diagnostics(fast_result[1]) == _diagnostics(expected[1]), label
    return True


def test_the_tables_are_there_and_cover_every_state() -> None:
    syntax.grammar_parser()  # writes them when there are none
    parser = syntax._fast_parser()
    assert parser is not None
    assert -1 not in parser.state_modes  # pell.lalr lexes in every state itself
    # each mode's regex compiled ahead, the same as re.compile makes it from its pattern
    for (pattern, _), code in zip(parser.specs, parser.codes, strict=True):
        assert code is not None
        assert lalr.precompiled(pattern, code) == re.compile(pattern)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_files_parse_alike(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    compare(text, str(path))
    compare(text.replace("\n", "\r\n"), f"{path} (CRLF)")
    compare(text[: len(text) // 2], f"{path} (cut short)")


def test_the_synthetic_module_parses_alike() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from synthetic import module
    finally:
        sys.path.remove(str(ROOT / "bench"))
    assert compare(module(50), "bench/synthetic.py")


@pytest.mark.parametrize("text", TRICKY)
def test_tricky_texts_parse_alike(text: str) -> None:
    compare(text, "tricky text")


def test_generated_programs_parse_alike() -> None:
    parsed = sum(compare(generate(seed).text, f"fuzz_programs seed {seed}") for seed in range(100))
    assert parsed > 50


def _check_mutations(seeds: range) -> tuple[int, int]:
    texts = [path.read_text(encoding="utf-8") for path in SOURCES]
    parsed = 0
    for seed in seeds:
        rng = random.Random(seed)
        parsed += compare(mutate(rng.choice(texts), rng), f"mutation seed {seed}")
    return parsed, len(seeds) - parsed


def test_mutations_parse_alike() -> None:
    parsed, rejected = _check_mutations(range(NORMAL_MUTATIONS))
    # both outcomes are well represented
    assert parsed > NORMAL_MUTATIONS // 5 and rejected > NORMAL_MUTATIONS // 5


@pytest.mark.fuzz
@pytest.mark.parametrize("chunk", range(10))
def test_many_mutations_parse_alike(chunk: int) -> None:
    size = FUZZ_MUTATIONS // 10
    start = NORMAL_MUTATIONS + chunk * size
    _check_mutations(range(start, start + size))


# ---- start-up -------------------------------------------------------------------------------

_PARSE = (
    "import sys; from pell.syntax import parse; "
    "module, diagnostics = parse(sys.stdin.read()); "
    "print(module is not None, [str(d) for d in diagnostics], 'lark' in sys.modules)"
)


def _parse_in_a_new_process(text: str, cache_home: Path) -> str:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
    done = subprocess.run(
        [sys.executable, "-c", _PARSE], env=env, input=text, capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    return done.stdout.strip()


def test_a_successful_parse_imports_no_lark(tmp_path: Path) -> None:
    text = (ROOT / "examples" / "orders.pell").read_text(encoding="utf-8")
    # the first run analyses the grammar with lark and writes pell.lalr's tables
    assert _parse_in_a_new_process(text, tmp_path) == "True [] True"
    assert len(list((tmp_path / "pellc").glob("grammar-*.tables"))) == 1
    assert _parse_in_a_new_process(text, tmp_path) == "True [] False"
    # a syntax error is lark's to report
    broken = _parse_in_a_new_process(text.replace(";", "", 3), tmp_path)
    assert "code='syntax'" in broken and broken.endswith("True")
    assert broken == f"False {[str(d) for d in syntax.parse(text.replace(';', '', 3))[1]]} True"


def test_damaged_tables_fall_back_to_lark_and_are_written_again(tmp_path: Path) -> None:
    text = (ROOT / "examples" / "orders.pell").read_text(encoding="utf-8")
    _parse_in_a_new_process(text, tmp_path)
    (tables,) = (tmp_path / "pellc").glob("grammar-*.tables")
    tables.write_bytes(tables.read_bytes()[:1000])
    assert _parse_in_a_new_process(text, tmp_path) == "True [] True"
    assert _parse_in_a_new_process(text, tmp_path) == "True [] False"


def _keyword_case_variants() -> str:
    """A module whose fns, parameters and locals are named with each keyword of the grammar in
    another case (`Return`, `RETURN`, `rEtUrN`): names, since Pell's keywords are lower case."""
    grammar = (ROOT / "grammar" / "pell.lark").read_text(encoding="utf-8")
    keywords = sorted(set(re.findall(r'"([a-z_]+)"', grammar)))
    assert {"return", "if", "fn", "let", "while", "transaction"} <= set(keywords)
    lines = ["module casing;", ""]
    for word in keywords:
        capital, upper = word.capitalize(), word.upper()
        mixed = "".join(c.upper() if i % 2 else c for i, c in enumerate(word))
        lines += [
            f"fn {capital}({upper}: number) -> number {{",
            f"    let {mixed} = {upper} + 1;",
            f"    return {capital}({mixed});",
            "}",
            "",
        ]
    return "\n".join(lines)


def test_keywords_in_another_case_are_names_in_both_parsers() -> None:
    """The fast path's lexer looks keywords up by their exact text: `Return` is a NAME, as in
    lark's grammar (a lookup that ignored case would turn it into `return`, and the fast path
    would reject or misread the module)."""
    text = _keyword_case_variants()
    assert compare(text, "keywords in another case")  # both parse it, to the same AST
    fast = syntax._fast_built(text)
    assert fast is not None  # pell.lalr parsed it itself, without falling back to lark
    module = syntax._result(*fast)[0]
    assert module is not None
    names = [item.name for item in module.items if isinstance(item, ast.Fn)]
    assert "Return" in names and "If" in names and "Fn" in names and "Transaction" in names
    own = syntax._fast_parser()
    assert own is not None
    shifted = test_lexer.lalr_tokens(text, own)
    assert shifted == test_lexer.lark_tokens(text, test_lexer.LARK)
    assert shifted is not None
    variants = {value for _, value, _, _ in shifted if value.lower() != value}
    assert len(variants) > 3 * 30
    assert all(kind == "NAME" for kind, value, _, _ in shifted if value in variants)
