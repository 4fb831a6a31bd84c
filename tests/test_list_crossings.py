"""Lists passed to and returned by another module's fn (pell.checker.list_crossings): copied
element by element between the two packages' list types on Oracle, passed as they are on
PostgreSQL (one array type everywhere), refused where a copy cannot be sound."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import assert_oracle_accepts

from pell.cli import main

TEXT_UTILS = """module text_utils;

pub record Word { text: text, at: int }

pub fn split_words(s: text) -> list<text> {
    return s.split(" ");
}

pub fn count(xs: list<text>) -> int {
    return xs.len();
}

pub fn words(xs: list<text>) -> list<Word> {
    let out: list<Word> = [];
    for x in xs {
        out.append(Word { text: x, at: 1 });
    }
    return out;
}
"""

REPORT = """module report;
import text_utils;

pub fn run(s: text) -> int {
    let xs = text_utils::split_words(s);
    let ws: list<text_utils::Word> = text_utils::words(xs);
    return text_utils::count(xs) + text_utils::count(xs = ["a", "b"]) + ws.len();
}
"""


def _project(tmp_path: Path, report: str = REPORT) -> Path:
    tmp_path.mkdir()
    (tmp_path / "text_utils.pell").write_text(TEXT_UTILS, encoding="utf-8")
    (tmp_path / "report.pell").write_text(report, encoding="utf-8")
    return tmp_path


def test_a_list_crosses_packages_copied_element_by_element(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["build", str(_project(tmp_path / "src")), "-d", str(out)]) == 0
    report = (out / "report.sql").read_text(encoding="utf-8")
    text_utils = (out / "text_utils.sql").read_text(encoding="utf-8")
    for sql in (report, text_utils):
        assert_oracle_accepts(sql)
    # the callee's spec declares the list types its signatures name
    spec = text_utils.split("CREATE OR REPLACE PACKAGE BODY")[0]
    assert "TYPE t_text_list IS TABLE OF VARCHAR2(4000) INDEX BY PLS_INTEGER;" in spec
    assert "TYPE t_word_list IS TABLE OF t_word INDEX BY PLS_INTEGER;" in spec
    # into the callee's type: each element at its own index, by a FIRST/NEXT walk
    into = (
        "  FUNCTION pell_to_text_utils_t_text_list(p_list IN t_text_list) "
        "RETURN text_utils.t_text_list IS\n"
        "    l_copy text_utils.t_text_list;\n"
        "    l_at PLS_INTEGER := p_list.FIRST;\n"
        "  BEGIN\n"
        "    WHILE l_at IS NOT NULL LOOP\n"
        "      l_copy(l_at) := p_list(l_at);\n"
        "      l_at := p_list.NEXT(l_at);\n"
        "    END LOOP;\n"
        "    RETURN l_copy;\n"
        "  END pell_to_text_utils_t_text_list;\n"
    )
    assert into in report
    # out of it: a list of the other module's record is a list of that package's record type
    # here too, so its elements are assigned whole
    assert "TYPE t_text_utils_word_list IS TABLE OF text_utils.t_word INDEX BY PLS_INTEGER;" in (
        report
    )
    words = "pell_from_text_utils_t_84bdd6"  # `pell_from_text_utils_t_word_list`, cut to 30
    assert (
        f"  FUNCTION {words}(p_list IN text_utils.t_word_list) RETURN t_text_utils_word_list IS\n"
        "    l_copy t_text_utils_word_list;\n"
    ) in report
    texts = "pell_from_text_utils_t_5840be"
    assert f"l_xs := {texts}(text_utils.split_words(p_s));" in report
    assert f"l_ws := {words}(text_utils.words(pell_to_text_utils_t_text_list(l_xs)));" in report
    # a keyword argument is copied too; each function is declared once
    assert "text_utils.count(p_xs => pell_to_text_utils_t_text_list(" in report
    assert report.count("FUNCTION pell_to_text_utils_t_text_list(") == 1
    assert report.count("FUNCTION ") == 5  # three copies, and `run` in the spec and the body


def test_a_list_crosses_modules_as_it_is_on_postgres(tmp_path: Path) -> None:
    out = tmp_path / "out"
    source = _project(tmp_path / "src")
    assert main(["build", str(source), "-d", str(out), "--target", "postgres"]) == 0
    report = (out / "report.sql").read_text(encoding="utf-8")
    # an array type is one type in every schema: nothing to copy
    assert "l_xs := text_utils.split_words(p_s);" in report
    assert "l_ws := text_utils.words(l_xs);" in report
    assert "pell_to_" not in report and "pell_from_" not in report


@pytest.mark.parametrize(
    ("callee", "call", "message"),
    [
        (
            'pub fn fill(out xs: list<text>) { xs = ["a"]; }',
            "let ys: list<text> = [];\n    other::fill(ys);",
            "5:17: error: `other::fill` takes `xs` as an `out` list: another module's list is "
            "a type of its own, and pellc copies a list only into a call, not back out of it",
        ),
        (
            'pub fn grow(inout xs: list<text>) { xs.append("a"); }',
            "let ys: list<text> = [];\n    other::grow(ys);",
            "5:17: error: `other::grow` takes `xs` as an `inout` list: another module's list is "
            "a type of its own, and pellc copies a list only into a call, not back out of it",
        ),
    ],
)
def test_a_list_that_cannot_cross_is_located(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], callee: str, call: str, message: str
) -> None:
    (tmp_path / "other.pell").write_text(f"module other;\n{callee}\n", encoding="utf-8")
    (tmp_path / "user.pell").write_text(
        f"module user_of;\nimport other;\npub fn f() {{\n    {call}\n}}\n", encoding="utf-8"
    )
    assert main(["check", "--no-verify", str(tmp_path)]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]
    assert errors == [f"{tmp_path / 'user.pell'}:{message}  [list-between-modules]"]


def test_the_references_two_module_example_compiles_to_what_it_shows(tmp_path: Path) -> None:
    doc = (Path(__file__).parent.parent / "docs" / "language.md").read_text(encoding="utf-8")
    section = doc.split("### Lists between modules\n")[1].split("\n## ")[0]
    blocks = re.findall(r"^```\n(.*?)^```$", section, re.S | re.M)
    callee, caller, shown = blocks
    (tmp_path / "text_utils.pell").write_text(callee, encoding="utf-8")
    (tmp_path / "report.pell").write_text(caller, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["build", str(tmp_path), "-d", str(out)]) == 0
    report = (out / "report.sql").read_text(encoding="utf-8")
    assert_oracle_accepts(report)
    lines = [line.strip() for line in report.splitlines()]
    for line in shown.splitlines():
        assert line == "..." or line.strip() in lines, line


def test_a_script_copies_another_modules_list_in_its_block(tmp_path: Path) -> None:
    source = _project(tmp_path / "src")
    (source / "show.pell").write_text(
        'import text_utils;\n\nlet parts = text_utils::split_words("a b");\nprintln(parts.len());\n',
        encoding="utf-8",
    )
    out = tmp_path / "out"
    assert main(["build", str(source), "-d", str(out)]) == 0
    script = (out / "show.sql").read_text(encoding="utf-8")
    assert_oracle_accepts(script)
    declare, body = script.split("\nBEGIN\n")
    assert "  FUNCTION pell_from_text_utils_t_5840be(p_list IN text_utils.t_text_list)" in declare
    assert "l_parts := pell_from_text_utils_t_5840be(text_utils.split_words('a b'));" in body


def test_lists_cross_modules_on_the_postgres_server(tmp_path: Path, postgres_database: str) -> None:
    import psycopg

    out = tmp_path / "out"
    source = _project(tmp_path / "src")
    assert main(["build", str(source), "-d", str(out), "--target", "postgres"]) == 0
    with psycopg.connect(postgres_database, autocommit=True) as connection:
        for name in ("text_utils.sql", "report.sql"):  # the callee first
            connection.execute((out / name).read_text(encoding="utf-8"))
        # the three words, the literal's two, the three records: 3 + 2 + 3
        row = connection.execute("select report.run('a b c')").fetchone()
    assert row == (8,)


def test_an_aggregate_cannot_reach_the_packages_copy_function(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the aggregate's type body is a schema-level type: the package's functions are out of
    # its reach, the copy function too
    source = _project(tmp_path / "src")
    (source / "report.pell").write_text(
        "module report;\nimport text_utils;\n\npub aggregate words(x: text) -> number {\n"
        "    state { acc: number = 0; }\n"
        "    step(v: text) { self.acc = self.acc + text_utils::count(text_utils::split_words(v)); }\n"
        "    finish() -> number { return self.acc; }\n}\n",
        encoding="utf-8",
    )
    assert main(["check", "--no-verify", str(source)]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]
    assert errors == [
        f"{source / 'report.pell'}:4:15: error: aggregate `words` needs the package's own "
        "`pell_from_text_utils_t_5840be`, which its type cannot use: not supported yet  "
        "[unsupported]"
    ]


def test_a_list_field_of_another_modules_record_is_located(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # review 10: `r.tags` of `lm::R` is lm's list type, which the caller moved to and from its
    # own with no copy (PLS-00382)
    (tmp_path / "pell.toml").write_text("")
    (tmp_path / "lm.pell").write_text(
        "module lm;\npub record R { a: number, tags: list<text> }\n"
    )
    (tmp_path / "use2.pell").write_text(
        "module use2;\nimport lm;\n"
        "pub fn mk(tags: list<text>) -> lm::R { return lm::R { a: 1, tags: tags }; }\n"
        "pub fn first(r: lm::R) -> list<text> { return r.tags; }\n"
        "pub fn ok(r: lm::R) -> number { return r.a; }\n"
    )
    assert main(["check", "--no-verify", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "use2.pell:3:" in err and "use2.pell:4:" in err
    assert err.count("[list-between-modules]") == 2, err
    assert main(["check", "--no-verify", "--target", "postgres", str(tmp_path)]) == 0
