"""The hints of a qualified call whose module is not imported as written (review 16, finding
5): `shop::catalog::normalise(...)` is called `catalog::normalise(...)` after
`import shop::catalog;`, and a snippet, with no module line, is not told to import after it.
A compile error stops `exec` before any database is needed."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLES

from pell.cli import main


def _errors(capsys: pytest.CaptureFixture[str], *arguments: str) -> str:
    assert main(list(arguments)) == 1
    return capsys.readouterr().err


@pytest.fixture
def shop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(EXAMPLES / "shop")


def _exec(capsys: pytest.CaptureFixture[str], snippet: str) -> str:
    return _errors(capsys, "exec", "--pretty", "--target", "postgres", "-e", snippet)


@pytest.mark.usefixtures("shop")
def test_a_snippet_is_told_the_import_that_works(capsys: pytest.CaptureFixture[str]) -> None:
    shown = _exec(capsys, 'shop::catalog::normalise(" ab ")')
    assert "error: module `shop::catalog` is not imported  [unknown-name]" in shown
    assert "help: add `import shop::catalog;` first, and call `catalog::normalise(...)`" in shown
    assert "module line" not in shown
    shown = _exec(capsys, "nosuch::f(1)")
    assert "help: add `import nosuch;` first" in shown and "module line" not in shown


@pytest.mark.usefixtures("shop")
def test_a_three_part_call_after_an_import_names_the_call_that_works(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for imported in ("shop", "shop::catalog"):
        shown = _exec(capsys, f'import {imported}; shop::catalog::normalise(" ab ")')
        assert "`shop::catalog::normalise` is not a fn  [unknown-fn]" in shown
        assert "`catalog::normalise(...)`" in shown


def test_a_module_is_told_to_import_after_its_module_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = tmp_path / "a.pell"
    source.write_text(
        'module a;\npub fn f() -> text { return shop::catalog::normalise("x"); }\n',
        encoding="utf-8",
    )
    shown = _errors(capsys, "check", "--pretty", str(source))
    assert (
        "help: add `import shop::catalog;` after the module line, and call "
        "`catalog::normalise(...)`" in shown
    )
