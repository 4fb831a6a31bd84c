"""Signatures of the shipped stubs that were checked against Oracle's pages (docs/stubs.md):
named notation uses Oracle's own parameter names, and optional parameters are the ones Oracle
gives a default."""

from __future__ import annotations

from pell import compile_source


def _errors(source: str) -> list[tuple[str, str]]:
    result = compile_source(source, "m.pell")
    return [(d.code, d.message) for d in result.diagnostics if d.is_error]


def test_named_arguments_lower_to_oracle_parameter_names() -> None:
    source = """module m;

pub fn f() {
    dbms_output::put_line(a = "x");
    dbms_application_info::set_module(module_name = "m", action_name = "a");
    dbms_lock::sleep(seconds = 1);
    dbms_stats::gather_table_stats(ownname = "HR", tabname = "EMP", cascade = true);
}
"""
    result = compile_source(source, "m.pell")
    assert not [d for d in result.diagnostics if d.is_error]
    sql = (result.sql or "").lower()
    assert "dbms_output.put_line(a => 'x')" in sql
    assert "module_name => 'm'" in sql and "action_name => 'a'" in sql
    assert "seconds => 1" in sql
    assert "ownname => 'HR'".lower() in sql and "cascade => true" in sql


def test_utl_http_set_proxy_needs_no_proxy_domains() -> None:
    # Oracle 9.0.1, UTL_HTTP "SET_PROXY Procedure": no_proxy_domains IN VARCHAR2 (no default).
    errors = _errors('module m;\n\npub fn f() {\n    utl_http::set_proxy("proxy:80");\n}\n')
    assert [code for code, _ in errors] == ["arity"]
    assert not _errors('module m;\n\npub fn f() {\n    utl_http::set_proxy("proxy:80", None);\n}\n')
