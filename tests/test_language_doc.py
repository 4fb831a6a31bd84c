"""docs/language.md, the language reference, shows what pellc does today: every ```pell example
compiles (or, under `<!-- error: CODE -->`, fails with that code), every excerpt after it is
in its output, and every diagnostic code has a row in its index."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from conftest import ROOT

from pell import compile_source
from pell.diagnostics import CODES, SourceFile, render_all

DOC = ROOT / "docs" / "language.md"

# A marker line (optional), a fenced block; `pell` examples and the excerpts that follow them.
_BLOCK = re.compile(r"(?:<!-- (?P<marker>[^>]*) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)```", re.S)


@dataclass
class Example:
    line: int
    source: str
    error: str | None  # the code it must fail with, or None: it compiles
    excerpts: list[tuple[str, str]]  # (target, text) of each block after it


def examples() -> list[Example]:
    text = DOC.read_text(encoding="utf-8")
    found: list[Example] = []
    for match in _BLOCK.finditer(text):
        marker, lang, body = match["marker"] or "", match["lang"], match["body"]
        line = text.count("\n", 0, match.start()) + 1
        if lang == "pell":
            error = marker.removeprefix("error: ") if marker.startswith("error: ") else None
            found.append(Example(line, body, error, []))
        elif lang in ("sql", "text") and found:
            found[-1].excerpts.append(("postgres" if marker == "postgres" else "23ai", body))
    return found


def _in_order(excerpt: str, output: str) -> str | None:
    """The first excerpt line not found, in order, among the output's lines (None: all are)."""
    lines = [line.strip() for line in output.splitlines()]
    at = 0
    for wanted in (line.strip() for line in excerpt.splitlines()):
        if not wanted or wanted == "...":
            continue
        try:
            at = lines.index(wanted, at) + 1
        except ValueError:
            return wanted
    return None


EXAMPLES = examples()


def test_the_reference_has_examples() -> None:
    assert len(EXAMPLES) >= 20
    assert any(e.error for e in EXAMPLES)
    # every example is a whole module, but those of the section on scripts (no `module` line)
    text = DOC.read_text(encoding="utf-8").splitlines()
    scripts = text.index("## Scripts") + 1, text.index("## Items") + 1
    for e in EXAMPLES:
        assert e.source.startswith(("module", "@")) != (scripts[0] < e.line < scripts[1]), e.line


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"line-{e.line}" for e in EXAMPLES])
def test_example_compiles_to_what_the_reference_shows(example: Example) -> None:
    for target in ("23ai", "postgres"):
        excerpts = [text for t, text in example.excerpts if t == target]
        if target == "postgres" and not excerpts:
            continue
        result = compile_source(example.source, "example.pell", target=target)
        errors = [d for d in result.diagnostics if d.severity.value == "error"]
        if example.error is None:
            assert errors == [], f"line {example.line} does not compile on {target}: {errors}"
            output = result.sql or ""
        else:
            assert example.error in {d.code for d in errors}, (
                f"line {example.line} should fail with [{example.error}] on {target}"
            )
            output = render_all(result.diagnostics, SourceFile("example.pell", example.source))
        for excerpt in excerpts:
            missing = _in_order(excerpt, output)
            assert missing is None, f"line {example.line} ({target}): not in the output: {missing}"


def test_every_diagnostic_code_has_a_row_in_the_index() -> None:
    text = DOC.read_text(encoding="utf-8")
    indexed = re.findall(r'<a id="code-([a-z0-9-]+)"></a>', text)
    assert sorted(indexed) == sorted(CODES)
    linked = set(re.findall(r"\(#code-([a-z0-9-]+)\)", text))
    assert linked <= set(CODES), f"links to no code: {linked - set(CODES)}"


def test_the_readme_links_the_reference() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.count("(docs/language.md") >= 2
