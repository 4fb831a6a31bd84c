"""Pell names that are Oracle reserved words, or words that begin a PL/SQL statement, reach
PL/SQL with a prefix: the table is pinned against Oracle's documented lists, typed here from
the documents, and a module of such names compiles to PL/SQL that calls what it means to."""

from __future__ import annotations

from conftest import assert_oracle_accepts

from pell import compile_source
from pell.naming import ORACLE_RESERVED, STATEMENT_KEYWORDS, field_name, fn_name, package_name

# PL/SQL Language Reference, appendix D "PL/SQL Reserved Words and Keywords", Table D-1
# "PL/SQL Reserved Words", row by row (A to W).
PLSQL_RESERVED_WORDS = {
    "ALL", "ALTER", "AND", "ANY", "AS", "ASC", "AT",
    "BEGIN", "BETWEEN", "BY",
    "CASE", "CHECK", "CLUSTERS", "CLUSTER", "COLAUTH", "COLUMNS", "COMPRESS", "CONNECT", "CRASH",
    "CREATE", "CURSOR",
    "DECLARE", "DEFAULT", "DESC", "DISTINCT", "DROP",
    "ELSE", "END", "EXCEPTION", "EXCLUSIVE",
    "FETCH", "FOR", "FROM", "FUNCTION",
    "GOTO", "GRANT", "GROUP",
    "HAVING",
    "IDENTIFIED", "IF", "IN", "INDEX", "INDEXES", "INSERT", "INTERSECT", "INTO", "IS",
    "LIKE", "LOCK",
    "MINUS", "MODE",
    "NOCOMPRESS", "NOT", "NOWAIT", "NULL",
    "OF", "ON", "OPTION", "OR", "ORDER", "OVERLAPS",
    "PROCEDURE", "PUBLIC",
    "RESOURCE", "REVOKE",
    "SELECT", "SHARE", "SIZE", "SQL", "START", "SUBTYPE",
    "TABAUTH", "TABLE", "THEN", "TO", "TYPE",
    "UNION", "UNIQUE", "UPDATE",
    "VALUES", "VIEW", "VIEWS",
    "WHEN", "WHERE", "WITH",
}  # fmt: skip

# SQL Language Reference, appendix "Oracle SQL Reserved Words and Keywords", section "Oracle
# SQL Reserved Words" (11.2 and 12.2; PRIVILEGES is in the 11.2 list).
SQL_RESERVED_WORDS = {
    "ACCESS", "ADD", "ALL", "ALTER", "AND", "ANY", "AS", "ASC", "AUDIT",
    "BETWEEN", "BY",
    "CHAR", "CHECK", "CLUSTER", "COLUMN", "COLUMN_VALUE", "COMMENT", "COMPRESS", "CONNECT",
    "CREATE", "CURRENT",
    "DATE", "DECIMAL", "DEFAULT", "DELETE", "DESC", "DISTINCT", "DROP",
    "ELSE", "EXCLUSIVE", "EXISTS",
    "FILE", "FLOAT", "FOR", "FROM",
    "GRANT", "GROUP",
    "HAVING",
    "IDENTIFIED", "IMMEDIATE", "IN", "INCREMENT", "INDEX", "INITIAL", "INSERT", "INTEGER",
    "INTERSECT", "INTO", "IS",
    "LEVEL", "LIKE", "LOCK", "LONG",
    "MAXEXTENTS", "MINUS", "MLSLABEL", "MODE", "MODIFY",
    "NESTED_TABLE_ID", "NOAUDIT", "NOCOMPRESS", "NOT", "NOWAIT", "NULL", "NUMBER",
    "OF", "OFFLINE", "ON", "ONLINE", "OPTION", "OR", "ORDER",
    "PCTFREE", "PRIOR", "PRIVILEGES", "PUBLIC",
    "RAW", "RENAME", "RESOURCE", "REVOKE", "ROW", "ROWID", "ROWNUM", "ROWS",
    "SELECT", "SESSION", "SET", "SHARE", "SIZE", "SMALLINT", "START", "SUCCESSFUL", "SYNONYM",
    "SYSDATE",
    "TABLE", "THEN", "TO", "TRIGGER",
    "UID", "UNION", "UNIQUE", "UPDATE", "USER",
    "VALIDATE", "VALUES", "VARCHAR", "VARCHAR2", "VIEW",
    "WHENEVER", "WHERE", "WITH",
}  # fmt: skip

# The first word of a PL/SQL statement that is not a reserved word (PL/SQL Language Reference,
# "PL/SQL Language Elements" and "Static SQL").
STATEMENT_WORDS = {
    "CLOSE", "COMMIT", "CONTINUE", "ELSIF", "EXECUTE", "EXIT", "FORALL", "LOOP", "MERGE", "OPEN",
    "PIPE", "RAISE", "RETURN", "ROLLBACK", "SAVEPOINT", "WHILE",
}  # fmt: skip


def test_the_reserved_words_are_oracles_documented_lists() -> None:
    documented = {word.lower() for word in PLSQL_RESERVED_WORDS | SQL_RESERVED_WORDS}
    assert sorted(documented - ORACLE_RESERVED) == []  # a reserved word pellc would emit bare
    assert sorted(ORACLE_RESERVED - documented) == []  # a word no list names
    assert {word.lower() for word in STATEMENT_WORDS} == STATEMENT_KEYWORDS
    assert not STATEMENT_KEYWORDS & ORACLE_RESERVED


def test_each_word_is_prefixed_where_it_would_be_read_as_oracles() -> None:
    for word in ORACLE_RESERVED:
        for written in (word, word.upper(), word.capitalize()):
            assert fn_name(written) == f"fn_{word}"
            assert field_name(written) == f"f_{word}"
            assert package_name((written,)) == (None, f"pkg_{word}")
    for word in STATEMENT_KEYWORDS:
        # a call of a fn, or into a package without a schema, begins a statement; a field never
        assert fn_name(word.capitalize()) == f"fn_{word}"
        assert package_name((word.upper(),)) == (None, f"pkg_{word}")
        assert package_name(("app", word)) == ("app", word)  # called as `app.{word}.f(...)`
        assert field_name(word) == word


# Fns, a record, fields and a module named with words Oracle reads as its own: Pell keywords
# written in another case (`Return`, `While`), and names Pell leaves free (`commit`, `raise`).
WORDS = """module exit;

pub record Row { level: number, column_value: number, privileges: text, open: number }

fn Return(IF: number) -> number {
    return IF + 1;
}

fn commit(n: number) {
    sql! { insert into audit_log (n) values (:n) };
}

fn While(n: number) {
    sql! { update counters set n = :n };
}

fn Loop() {
    sql! { update counters set n = 0 };
}

fn raise(n: number) {
    sql! { update counters set n = n + :n };
}

fn close(Open: number) {
    sql! { update accounts set closed = 'Y' where id = :Open };
}

fn Select(row: Row) -> number {
    return row.level + row.column_value + row.open;
}

pub fn run(n: number) -> number {
    commit(n);
    While(n);
    Loop();
    raise(n);
    close(n);
    let row = Row { level: 1, column_value: 2, privileges: "all", open: 3 };
    return Return(Select(row));
}
"""


def test_fns_fields_and_packages_named_with_oracles_words_call_what_they_mean() -> None:
    """`Return(x)` emitted as `return(x);` would be the RETURN statement, ending `run`;
    `commit(n)` as `commit(p_n);` a COMMIT; `Loop()` as `loop;` the start of a loop."""
    result = compile_source(WORDS, "words.pell")
    assert result.sql is not None, result.diagnostics
    sql = result.sql
    assert_oracle_accepts(sql)
    assert "CREATE OR REPLACE PACKAGE pkg_exit AS" in sql
    assert "FUNCTION fn_return(p_if IN NUMBER) RETURN NUMBER IS" in sql
    for call in ("fn_commit(p_n);", "fn_while(p_n);", "fn_loop;", "fn_raise(p_n);"):
        assert f"    {call}\n" in sql
    assert "    fn_close(p_n);\n" in sql and "PROCEDURE fn_close(p_open IN NUMBER)" in sql
    assert "RETURN fn_return(fn_select(l_row));" in sql
    assert "f_level NUMBER,\n    f_column_value NUMBER,\n    f_privileges VARCHAR2(4000)" in sql
    assert "l_row.open := 3;" in sql  # a field never begins a statement: left as it is
