"""Public Pell's module conventions (issue 26, point 10): stubs in a `stubs/` folder without
`@stub`, `import std::name;`, and a project module or stub called by its name with no import."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import assert_oracle_accepts

from pell import compile_path
from pell.cli import main
from pell.diagnostics import render_all

# As the public runtime ships a stub: empty `{ }` bodies, no `@stub`, fns that return a value
LOCK_STUB = """module acme_lock;

pub fn request(handle: text, timeout: number) -> number { }

pub fn release(handle: text) { }
"""

USES_LOCK = """module app;

pub fn take(handle: text) -> number {
    let status = acme_lock::request(handle, 10);
    acme_lock::release(handle);
    return status;
}
"""


def _build(root: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["build", str(root), "-d", str(out)])
    return code, capsys.readouterr().err


def test_a_module_in_a_stubs_folder_is_a_stub_with_no_at_stub(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pell.toml").write_text("")
    (tmp_path / "runtime" / "stubs").mkdir(parents=True)
    (tmp_path / "runtime" / "stubs" / "acme_lock.pell").write_text(LOCK_STUB)
    (tmp_path / "app.pell").write_text(USES_LOCK)
    code, err = _build(tmp_path, tmp_path / "out", capsys)
    assert code == 0, err
    assert "failed 0" in err
    sql = (tmp_path / "out" / "app.sql").read_text("utf-8")
    assert_oracle_accepts(sql)
    # checked against the stub (the type of `status` came from it), no import needed
    assert "l_status := acme_lock.request(p_handle, 10);" in sql
    assert "acme_lock.release(p_handle);" in sql
    assert not (tmp_path / "out" / "runtime" / "stubs" / "acme_lock.sql").exists()


def test_a_stubs_folder_file_compiled_alone_is_a_stub(tmp_path: Path) -> None:
    (tmp_path / "stubs").mkdir()
    stub = tmp_path / "stubs" / "acme_lock.pell"
    stub.write_text(LOCK_STUB)
    result = compile_path(stub)
    assert result.ok_stub, render_all(result.diagnostics, result.source)


def test_empty_bodies_outside_a_stubs_folder_stay_errors(tmp_path: Path) -> None:
    plain = tmp_path / "acme_lock.pell"
    plain.write_text(LOCK_STUB)
    result = compile_path(plain)
    assert result.sql is None and not result.ok_stub
    assert [d.code for d in result.diagnostics] == ["missing-return"]
    assert result.diagnostics[0].hints == (
        "add a `return` on every path",
        "if the module declares an Oracle package, put `@stub` before `module`, or its file "
        "in a `stubs` folder",
    )


def test_a_fn_with_a_body_in_a_stubs_folder_is_a_stub_error(tmp_path: Path) -> None:
    (tmp_path / "stubs").mkdir()
    stub = tmp_path / "stubs" / "acme_lock.pell"
    stub.write_text(LOCK_STUB.replace("-> number { }", "-> number { return 1; }"))
    result = compile_path(stub)
    assert [d.code for d in result.diagnostics] == ["stub"]
    assert "in a `stubs` folder" in result.diagnostics[0].hints[0]


def test_a_script_in_a_stubs_folder_is_still_a_script(tmp_path: Path) -> None:
    (tmp_path / "stubs").mkdir()
    script = tmp_path / "stubs" / "run.pell"
    script.write_text('dbms_output::put_line("x");\n')
    result = compile_path(script)
    assert result.sql is not None and "dbms_output.put_line('x');" in result.sql


LOGGER = """module logger;

pub fn info(msg: text) {
    dbms_output::put_line("INFO: {msg}");
}
"""

USES_STD_LOGGER = """module app;

import std::logger;

pub fn run(n: number) {
    logger::info("n = {n}");
}
"""


def test_import_std_name_is_the_project_module_of_that_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pell.toml").write_text("")
    (tmp_path / "runtime").mkdir()
    (tmp_path / "runtime" / "logger.pell").write_text(LOGGER)
    (tmp_path / "app.pell").write_text(USES_STD_LOGGER)
    code, err = _build(tmp_path, tmp_path / "out", capsys)
    assert code == 0, err
    sql = (tmp_path / "out" / "app.sql").read_text("utf-8")
    assert_oracle_accepts(sql)
    assert "logger.info('n = ' || pell_number_text(p_n));" in sql
    # checked against the module: a wrong call is an error (an unchecked package's is not)
    (tmp_path / "app.pell").write_text(USES_STD_LOGGER.replace('"n = {n}"', '"a", "b"'))
    code, err = _build(tmp_path, tmp_path / "out", capsys)
    assert code == 1
    assert "app.pell:6:5: error:" in err and "[arity]" in err, err


def test_import_std_name_with_no_such_module_is_an_oracle_package(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # (`std::logger` and `std::log` are pellc's own logger then: tests/test_logger.py)
    (tmp_path / "pell.toml").write_text("")
    (tmp_path / "app.pell").write_text(
        "module app;\n\nimport std::audit;\n\npub fn run(n: number) {\n"
        "    audit::note(\"x\");\n}\n"
    )
    code, err = _build(tmp_path, tmp_path / "out", capsys)
    assert code == 0, err
    assert "audit.note('x');" in (tmp_path / "out" / "app.sql").read_text("utf-8")


CATALOG = """module catalog;

pub fn table_count() -> number {
    return 3;
}
"""

USES_CATALOG = """module quals;

pub fn tables() -> number {
    let n = catalog::table_count();
    return n;
}
"""


def test_a_project_module_is_called_by_its_name_with_no_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pell.toml").write_text("")
    (tmp_path / "catalog.pell").write_text(CATALOG)
    (tmp_path / "quals.pell").write_text(USES_CATALOG)
    code, err = _build(tmp_path, tmp_path / "out", capsys)
    assert code == 0, err
    sql = (tmp_path / "out" / "quals.sql").read_text("utf-8")
    assert_oracle_accepts(sql)
    assert "l_n := catalog.table_count;" in sql
    # the module it names is a dependency: when it changes, the caller is compiled again
    (tmp_path / "catalog.pell").write_text(CATALOG.replace("-> number", "-> text").replace("3", '"3"'))
    code, err = _build(tmp_path, tmp_path / "out", capsys)
    assert code == 1
    assert "quals.pell:5:12: error:" in err and "[return-type]" in err, err


def test_a_name_that_is_no_module_stays_a_located_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pell.toml").write_text("")
    (tmp_path / "quals.pell").write_text(USES_CATALOG.replace("let n =", "let n: number ="))
    code, err = _build(tmp_path, tmp_path / "out", capsys)
    assert code == 1
    assert "quals.pell:4:21: error: package `catalog` is not imported  [unknown-name]" in err


def test_a_retried_fn_calling_an_unimported_modules_committing_fn_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pell.toml").write_text("")
    (tmp_path / "jobs.pell").write_text(
        "module jobs;\n\npub fn close_day() {\n    sql! { commit };\n}\n"
    )
    (tmp_path / "orders.pell").write_text(
        "module orders;\n\n@retry(n = 3, on = [deadlock])\n"
        "pub fn run() {\n    jobs::close_day();\n}\n"
    )
    # checked alone, as a build of the whole project would check it
    code = main(["check", "--no-verify", str(tmp_path / "orders.pell")])
    err = capsys.readouterr().err
    assert code == 1
    assert "orders.pell:5:5: error:" in err and "[commit-in-retry]" in err, err


def test_a_stubs_folder_stubs_commits_mark_is_seen_by_the_retry_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pell.toml").write_text("")
    (tmp_path / "stubs").mkdir()
    (tmp_path / "stubs" / "acme_jobs.pell").write_text(
        'module acme_jobs;\n\n@commits("purges in batches")\npub fn purge(days: number) { }\n'
    )
    # through a module that calls it: the stub is in the project's facts with no import
    (tmp_path / "cleanup.pell").write_text(
        "module cleanup;\n\npub fn nightly() {\n    acme_jobs::purge(30);\n}\n"
    )
    (tmp_path / "orders.pell").write_text(
        "module orders;\n\nimport cleanup;\n\n@retry(n = 3, on = [deadlock])\n"
        "pub fn run() {\n    cleanup::nightly();\n}\n"
    )
    code = main(["check", "--no-verify", str(tmp_path / "orders.pell")])
    err = capsys.readouterr().err
    assert code == 1
    assert "orders.pell:7:5: error:" in err and "[commit-in-retry]" in err, err


def test_import_std_name_keeps_the_modules_commit_in_sight(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # review 9: the retry facts and verify kept `std::b` as written, found no such module and
    # lost b's COMMIT; they resolve it as the checker does
    (tmp_path / "pell.toml").write_text("")
    (tmp_path / "b.pell").write_text("module b;\npub fn commit_it() {\n    sql! { commit };\n}\n")
    (tmp_path / "a.pell").write_text(
        "module a;\nimport std::b;\n@retry(n = 3, on = [deadlock])\n"
        "pub fn go() {\n    b::commit_it();\n}\n"
    )
    code = main(["check", "--no-verify", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1 and "a.pell:5:5: error:" in err and "[commit-in-retry]" in err, err
    from pell.verify import program_module

    caller = compile_path(tmp_path / "a.pell")
    assert caller.module is not None and caller.lowered is not None
    paths = frozenset({("a",), ("b",)})
    assert program_module(caller, paths).imports == (("b",),)
    assert program_module(caller, frozenset({("std", "b")})).imports == (("std", "b"),)
