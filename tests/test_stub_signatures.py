"""Signatures of the shipped stubs that were checked against Oracle's pages or package specs (docs/stubs.md):
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


def test_utl_http_set_proxy_no_proxy_domains_is_optional() -> None:
    # Oracle's spec utlhttp.sql (11.2): no_proxy_domains IN VARCHAR2 DEFAULT NULL (the 9.0.1
    # reference page showed no default).
    assert not _errors('module m;\n\npub fn f() {\n    utl_http::set_proxy("proxy:80");\n}\n')
    assert not _errors('module m;\n\npub fn f() {\n    utl_http::set_proxy("proxy:80", None);\n}\n')


def test_signatures_checked_against_oracle_specs() -> None:
    # Oracle's own package specs (rdbms/admin/dbmsrand.sql, dbmssch.sql, utlfile.sql, utlsmtp.sql,
    # utlhttp.sql, dbmsstat.sql, dbmssql.sql; 11.2), as listed in docs/stubs.md.
    source = """module m;

pub fn f() {
    let s: text = dbms_random::string(opt = "x", len = 8);
    dbms_random::seed(val = "abc");
    dbms_scheduler::create_job(job_name = "J", job_type = "PLSQL_BLOCK", job_action = "null;", enabled = true);
    dbms_scheduler::set_attribute(name = "J", attribute = "comments", value = "a", value2 = None);
    let h = utl_file::fopen(location = "D", filename = "f.txt", open_mode = "w", max_linesize = 32767);
    utl_file::put_line(file = h, buffer = "x", autoflush = true);
    let c = utl_smtp::open_connection(host = "mail", port = 25, tx_timeout = 10);
    utl_smtp::helo(c, domain = "example.com");
    let r = utl_http::begin_request(url = "http://x/", method = "POST", http_version = None, request_context = None);
    let p = utl_http::get_response(r, return_info_response = false);
    dbms_stats::delete_schema_stats(ownname = "HR", stattype = "ALL", force = true);
    dbms_stats::gather_schema_stats(ownname = "HR", gather_temp = false, gather_fixed = false, stattype = "DATA");
    dbms_sql::parse(c = 1, statement = "select 1 from dual", language_flag = 1);
}
"""
    result = compile_source(source, "m.pell")
    assert not [d for d in result.diagnostics if d.is_error]
    sql = (result.sql or "").lower()
    for fragment in (
        "dbms_random.string(opt => 'x', len => 8)",
        "dbms_random.seed(val => 'abc')",
        "value2 => null",
        "max_linesize => 32767",
        "autoflush => true",
        "utl_smtp.open_connection(host => 'mail', port => 25, tx_timeout => 10)",
        "request_context => null",
        "return_info_response => false",
        "gather_temp => false, gather_fixed => false, stattype => 'data'",
        "language_flag => 1",
    ):
        assert fragment in sql, fragment


def test_dbms_stats_positions_follow_oracle_spec() -> None:
    # Oracle's spec dbmsstat.sql (11.2): stattype comes between no_invalidate and force, so the
    # 11th positional argument of gather_index_stats and the 6th of delete_schema_stats is stattype.
    nulls = ", ".join(["None"] * 8)
    ok = f'module m;\n\npub fn f() {{\n    dbms_stats::gather_index_stats("HR", "I", {nulls}, "DATA", false);\n}}\n'
    assert not _errors(ok)
    too_many = ok.replace('"DATA", false)', '"DATA", false, true)')
    assert [code for code, _ in _errors(too_many)] == ["arity"]
    errors = _errors(
        'module m;\n\npub fn f() {\n    dbms_stats::delete_schema_stats("HR", None, None, None, None, 1, false);\n}\n'
    )
    assert errors and errors[0][0] == "type-mismatch"
