"""The `json` type, `json::` fns, json methods and `jq! { }` (pell.checker.json,
pell.checker.jq, pell.codegen.json_lowering): the PL/SQL each lowers to, and the located
errors of misuse. Every generated package is parsed by parseora."""

from __future__ import annotations

import re

import pytest
from conftest import assert_oracle_accepts

from pell import compile_source
from pell.checker import types as t
from pell.checker.jq import JqError, parse
from pell.checker.json import path_problem
from pell.checker.sql_typing import single_column


def _sql(body: str, target: str = "23ai") -> str:
    result = compile_source(f"module m;\n\n{body}\n", "m.pell", target)
    assert result.sql is not None, [d.message for d in result.diagnostics]
    if target != "postgres":
        assert_oracle_accepts(result.sql)
    return result.sql


def _errors(body: str, target: str = "23ai") -> list[tuple[str, str, str]]:
    """(code, message, the source text the diagnostic points at) of each error."""
    text = f"module m;\n\n{body}\n"
    result = compile_source(text, "m.pell", target)
    assert result.sql is None
    return [(d.code, d.message, text[d.span.start : d.span.end]) for d in result.diagnostics]


# -- what a missing member or a wrong value gives


def test_a_value_asked_for_is_an_error_when_missing_and_none_only_where_optional() -> None:
    sql = _sql(
        "pub record R { a: text, b: text? }\n"
        'pub fn required(j: json) -> text { return json::get_text(j, "$.a"); }\n'
        'pub fn returned(j: json) -> text? { return json::get_text(j, "$.b"); }\n'
        "pub fn declared(j: json) -> number {\n"
        '    let x: Option<number> = json::get_number(j, "$.c");\n'
        '    let y: number = json::get_number(j, "$.d");\n'
        "    return x + y;\n"
        "}\n"
        "pub fn record_of(j: json) -> R { return json::into::<R>(j); }\n"
    )
    assert "JSON_VALUE(p_j, '$.a' RETURNING VARCHAR2(4000) ERROR ON ERROR ERROR ON EMPTY)" in sql
    assert "JSON_VALUE(p_j, '$.b' RETURNING VARCHAR2(4000) ERROR ON ERROR NULL ON EMPTY)" in sql
    assert "JSON_VALUE(p_j, '$.c' RETURNING NUMBER ERROR ON ERROR NULL ON EMPTY)" in sql
    assert "JSON_VALUE(p_j, '$.d' RETURNING NUMBER ERROR ON ERROR ERROR ON EMPTY)" in sql
    assert ".a := JSON_VALUE(p_j, '$.a' RETURNING VARCHAR2(4000) ERROR ON ERROR ERROR ON EMPTY)" in sql
    assert ".b := JSON_VALUE(p_j, '$.b' RETURNING VARCHAR2(4000) ERROR ON ERROR NULL ON EMPTY)" in sql


def test_every_query_function_raises_on_error_instead_of_giving_null() -> None:
    sql = _sql(
        'pub fn a(j: json) -> json { return json::get_json(j, "$.items"); }\n'
        'pub fn b(j: json) -> bool { return json::has(j, "$.items[0]"); }\n'
        "pub fn c(s: text) -> json { return json::parse(s); }\n"
    )
    assert "JSON_QUERY(p_j, '$.items' RETURNING CLOB ERROR ON ERROR ERROR ON EMPTY)" in sql
    assert "JSON_EXISTS(p_j, '$.items[0]' ERROR ON ERROR)" in sql
    assert "JSON_QUERY(p_s, '$' RETURNING CLOB ERROR ON ERROR)" in sql
    calls = re.findall(r"JSON_(?:VALUE|QUERY|EXISTS)\([^;]*", sql)
    assert calls and all("ERROR ON ERROR" in call for call in calls)


def test_a_path_computed_at_run_time_is_a_literal_made_by_enquote_literal_and_a_bound_doc() -> None:
    sql = _sql(
        "pub fn f(j: json, key: text) -> number {\n"
        '    let path = "$." + key;\n'
        "    if json::has(j, path) { return json::get_number(j, path); }\n"
        "    return 0;\n"
        "}\n"
    )
    assert "pell_json_exists(p_j, l_path)" in sql
    assert "pell_json_number(p_j, l_path, FALSE)" in sql
    number = sql[sql.index("FUNCTION pell_json_number") : sql.index("END pell_json_number")]
    assert "DBMS_ASSERT.ENQUOTE_LITERAL('''' || REPLACE(p_path, '''', '''''') || '''')" in number
    assert "USING p_doc" in number
    assert "|| p_path" not in number  # never spliced as it is
    # only the functions used are declared
    assert "FUNCTION pell_json_exists" in sql
    assert "pell_json_text" not in sql and "pell_json_set" not in sql


def test_helpers_are_absent_from_modules_that_do_not_use_them() -> None:
    sql = _sql('pub fn f(j: json) -> text { return json::get_text(j, "$.a"); }')
    assert "pell_json" not in sql


# -- the text a json value has


def test_generated_json_is_the_same_in_every_session() -> None:
    sql = _sql(
        "pub fn f(d: date, t: timestamp, ok: bool, n: number) -> json {\n"
        "    return json::object(d = d, t = t, ok = ok, yes = true, n = n, none = None);\n"
        "}\n"
    )
    assert (
        "JSON_OBJECT('d' VALUE TO_CHAR(p_d, 'YYYY-MM-DD\"T\"HH24:MI:SS'), "
        "'t' VALUE TO_CHAR(p_t, 'YYYY-MM-DD\"T\"HH24:MI:SS.FF6'), "
        "'ok' VALUE CASE WHEN p_ok THEN 'true' WHEN NOT p_ok THEN 'false' END FORMAT JSON, "
        "'yes' VALUE 'true' FORMAT JSON, 'n' VALUE p_n, 'none' VALUE NULL "
        "NULL ON NULL RETURNING CLOB)"
    ) in sql


def test_a_date_read_back_uses_the_mask_it_was_written_with() -> None:
    sql = _sql(
        "pub record E { at: date }\n"
        "pub fn f(j: json) -> E { return json::into::<E>(j); }\n"
        "pub fn g(e: E) -> json { return json::from(e); }\n"
    )
    mask = "'YYYY-MM-DD\"T\"HH24:MI:SS'"
    assert f"TO_DATE(JSON_VALUE(p_j, '$.at' RETURNING VARCHAR2(4000) ERROR ON ERROR ERROR ON EMPTY), {mask})" in sql
    assert f"'at' VALUE TO_CHAR(p_e.f_at, {mask})" in sql  # AT is reserved: its field is f_at


def test_into_reads_a_computed_document_once() -> None:
    sql = _sql(
        "pub record U { name: text, age: number }\n"
        'pub fn f(j: json) -> U { return json::into::<U>(json::get_json(j, "$.user")); }\n'
    )
    assert sql.count("JSON_QUERY(p_j, '$.user'") == 1
    holder = re.search(r"(l_pell_json\w*) := JSON_QUERY\(p_j, '\$\.user'", sql)
    assert holder is not None
    assert f"JSON_VALUE({holder.group(1)}, '$.name'" in sql
    assert f"JSON_VALUE({holder.group(1)}, '$.age'" in sql


def test_methods_give_new_values_through_the_package_functions() -> None:
    sql = _sql(
        "pub fn f(j: json) -> json {\n"
        '    return j.set("a.b", 1).remove("c").append("d", j);\n'
        "}\n"
    )
    assert (
        "pell_json_append(pell_json_remove(pell_json_set(p_j, 'a.b', JSON_ARRAY(1 NULL ON NULL "
        "RETURNING CLOB)), 'c'), 'd', JSON_ARRAY(p_j FORMAT JSON NULL ON NULL RETURNING CLOB))"
    ) in sql
    assert "JSON_OBJECT_T.parse(p_doc)" in sql


def test_a_json_aggregate_column_is_typed_json() -> None:
    sql = _sql(
        "pub fn f() -> json {\n"
        "    let doc = sql! { select json_arrayagg(name returning clob) from users }.one();\n"
        "    return doc;\n"
        "}\n"
    )
    assert "l_doc CLOB;" in sql


@pytest.mark.parametrize(
    ("item", "is_json"),
    [
        ("json_objectagg(k value v returning clob) as j", True),
        ("JSON_ARRAY(1, 'a)') arr", True),
        ("json_object(k value json_query(d, '$' returning clob) returning varchar2(200))", True),
        ("json_object('a' value 1) || upper(b)", False),  # text, but not JSON text
        ("json_query(doc, '$.a' returning json)", False),  # 23ai's JSON type: no text
        ("json_arrayagg(x returning blob)", False),
    ],
)
def test_only_a_json_function_giving_text_types_a_column_json(item: str, is_json: bool) -> None:
    assert (single_column(item, f"select {item} from t") == t.JSON) == is_json


def test_json_is_a_clob_and_jsonb_on_postgres() -> None:
    source = "pub fn f(j: json) -> json { return j; }"
    assert "FUNCTION f(p_j IN CLOB) RETURN CLOB" in _sql(source)
    assert "jsonb" in _sql(source, "postgres")


# -- jq! { }


def test_jq_values_must_be_there_and_compared_members_filter() -> None:
    sql = _sql(
        "pub fn f(j: json) -> list<text> {\n"
        '    let xs: list<text> = jq!{ j | .a.b[] | select(.n == 1 or .k == "x" and .n > 2) | .name }.collect();\n'
        "    return xs;\n"
        "}\n"
    )
    assert "JSON_TABLE(p_j, '$.a.b[*]' ERROR ON ERROR" in sql
    assert "v VARCHAR2(4000) PATH '$.name' ERROR ON ERROR ERROR ON EMPTY" in sql
    assert "f0 NUMBER PATH '$.n' NULL ON ERROR NULL ON EMPTY" in sql
    assert "f1 VARCHAR2(4000) PATH '$.k' NULL ON ERROR NULL ON EMPTY" in sql
    # `and` binds tighter than `or`, as in jq; one column per compared member and type
    assert "WHERE jt.pell_f0 = 1 OR (jt.pell_f1 = 'x' AND jt.pell_f0 > 2)" in sql


def test_jq_takes_the_terminators_of_sql() -> None:
    sql = _sql(
        "pub record U { name: text, age: number }\n"
        "pub fn one(j: json) -> number {\n"
        "    let n: number = jq!{ j | .count }.one();\n"
        "    return n;\n"
        "}\n"
        "pub fn first(j: json) -> U {\n"
        "    let u: U = jq!{ j | .users[] | select(.age > 1) }.first();\n"
        "    return u;\n"
        "}\n"
    )
    assert "SELECT jt.v INTO l_n\n      FROM JSON_TABLE(p_j, '$' ERROR ON ERROR" in sql
    assert "v NUMBER PATH '$.count' ERROR ON ERROR ERROR ON EMPTY" in sql
    assert "SELECT jt.name, jt.age INTO l_u.name, l_u.age" in sql
    assert "WHERE jt.pell_f0 > 1 FETCH FIRST 1 ROWS ONLY;" in sql
    assert "WHEN NO_DATA_FOUND THEN" in sql


@pytest.mark.parametrize(
    ("query", "at", "words"),
    [
        (" .users[].name ", ".users", "starts with the json value"),
        (" j | select(.a > 1) ", "select", "filters the rows of an iteration"),
        (" j | .a[]| .b[] ", "[] ", "one `[]` per query"),
        (" j | .a[2] ", "2", "not an index or a slice"),
        (" j | .a[] | select(.b > c) ", "c)", "a number or a string"),
        (" j | .a[] | select(.b ~ 1) ", "~", "cannot stand in a jq query"),
        (" j | .a[] | .b | select(.c > 1) ", "select", "select first, then take"),
        (" j .a ", ".a", "expected `|` or the end"),
    ],
)
def test_jq_queries_pellc_cannot_lower_are_located(query: str, at: str, words: str) -> None:
    with pytest.raises(JqError) as raised:
        parse(query)
    assert raised.value.offset == query.index(at)
    assert words in str(raised.value)


def test_jq_errors_point_into_the_query() -> None:
    errors = _errors("pub fn f(j: json) -> list<text> { return jq!{ j | .users[0] }.collect(); }")
    assert errors == [
        ("bad-jq", "only `[]` (each element) is taken here, not an index or a slice", "0")
    ]


# -- paths, arguments, names


@pytest.mark.parametrize(
    "path",
    ["$", "$.a", "$.a.b", '$."e-mail"', "$.a[0]", "$.a[*].b", "$[last]", "$.a[1 to 3]", "$.*"],
)
def test_paths_oracle_reads_are_accepted(path: str) -> None:
    assert path_problem(path) is None


@pytest.mark.parametrize(
    ("path", "offset"), [("a.b", 0), ("$.", 1), ("$.a[x]", 3), ("$..a", 1), ("$.a b", 3)]
)
def test_paths_oracle_would_not_read_are_refused_at_the_step(path: str, offset: int) -> None:
    problem = path_problem(path)
    assert problem is not None and problem[1] == offset


def test_misuse_is_located() -> None:
    errors = _errors(
        "pub fn f(j: json, s: text) -> text {\n"
        '    let a = json::get_txt(j, "$.a");\n'
        '    let b = json::get_text(s, "$.b");\n'
        '    let c = json::get_text(j, "$.c[d]");\n'
        "    return s;\n"
        "}\n"
    )
    assert errors == [
        ("unknown-fn", "`json` has no fn `get_txt`; did you mean `get_text`?", "json::get_txt"),
        ("type-mismatch", "argument 1 of `json::get_text` must be a `json`, not a `text`", "s"),
        ("bad-json-path", "`[d]` is not a step of a JSON path (`.name`, `[0]`, `[*]`)", "["),
    ]


def test_a_turbofish_other_than_json_into_keeps_its_located_errors() -> None:
    errors = _errors(
        "pub fn f(s: text) -> text { let p: text = re::capture::<text>(s); return p; }\n"
        "pub fn g() -> number { return f::<number>(); }\n"
    )
    assert errors == [
        ("type-mismatch", "`re::capture` fills a record, not a `text`", "text"),
        (
            "arity",
            "`re::capture` takes the text and the pattern: `re::capture::<T>(s, /pattern/)`",
            "re::capture::<text>(s)",
        ),
        ("type-mismatch", "`f` takes no type argument", "number"),
    ]


def test_postgres_refuses_the_json_forms_without_a_faithful_lowering_where_they_are() -> None:
    errors = _errors(
        "record H { city: text }\nrecord R { a: date, h: H }\n"
        "pub fn a(j: json) -> R { return json::into::<R>(j); }\n"
        "pub fn b(j: json) -> list<text> { return json::get_keys(j); }\n"
        "pub fn c(j: json) -> list<text> { return jq!{ j | .[] }.collect(); }\n",
        "postgres",
    )
    # a date field and jq! are lowered (tests/test_postgres.py runs them)
    assert [(code, at) for code, _, at in errors] == [
        ("unsupported", "json::into"),  # of a nested record field
        ("unsupported", "json::get_keys"),
    ]


POSTGRES_JSON = """module pgjson;

pub record Home { city: text }
pub record Person { name: text, age: number, since: date, ok: bool, home: Home }

pub fn pack(name: text, age: number) -> json {
    let home = Home { city: "Oslo" };
    let p = Person { name: name, age: age, since: sysdate(), ok: true, home: home };
    return json::object(person = json::from(p), tags = json::array([1, "a", None, false]));
}
pub fn age_of(j: json) -> number { return json::get_number(j, "$.person.age"); }
pub fn maybe(j: json) -> number? { return json::get_number(j, "$.missing"); }
pub fn value_at(j: json, key: text) -> number { return json::get_number(j, "$." + key); }
pub fn has_city(j: json) -> bool { return json::has(j, "$.person.home.city"); }
pub fn has_zip(j: json) -> bool { return json::has(j, "$.person.home.zip"); }
pub fn round_trip(s: text) -> text { return json::stringify(json::parse(s)); }
"""


def test_postgres_json_fns_behave_as_on_oracle(postgres_database: str) -> None:
    psycopg = pytest.importorskip("psycopg")
    from pell.postgres import runtime_sql

    result = compile_source(POSTGRES_JSON, "pgjson.pell", "postgres")
    assert result.sql is not None, [d.message for d in result.diagnostics]
    with psycopg.connect(postgres_database, autocommit=True) as connection:
        connection.execute(runtime_sql([], "-- runtime"))
        connection.execute(result.sql)

        def one(query: str, *args: object) -> object:
            row = connection.execute(query, args).fetchone()
            assert row is not None
            return row[0]

        doc = one("select pgjson.pack('Ann', 41.50)::text")
        assert isinstance(doc, str)
        assert '"age": 41.5,' in doc and '"ok": true' in doc and '"home": {"city": "Oslo"}' in doc
        assert '"tags": [1, "a", null, false]' in doc
        assert one("select pgjson.age_of(%s::jsonb)", doc) == 41.5
        assert one("select pgjson.maybe(%s::jsonb)", doc) is None
        assert one("select pgjson.value_at(%s::jsonb, 'person.age')", doc) == 41.5
        assert one("select pgjson.has_city(%s::jsonb)", doc) is True
        assert one("select pgjson.has_zip(%s::jsonb)", doc) is False
        assert one("select pgjson.round_trip(%s)", '{"b": 1, "a": [2]}') == '{"a": [2], "b": 1}'
        # a member that is missing, or no number, is an error, not NULL
        for bad in ('{"person": {}}', '{"person": {"age": "old"}}'):
            with pytest.raises(psycopg.Error):
                one("select pgjson.age_of(%s::jsonb)", bad)
        with pytest.raises(psycopg.Error):
            one("select pgjson.round_trip(%s)", "{not json")


def test_jq_columns_of_its_own_never_clash_and_an_empty_string_is_refused() -> None:
    # review 8: a record row's field `f0` and the column `select` compares were both `f0`;
    # `select(.x != "")` compared with Oracle's NULL and passed no row
    result = compile_source(
        "module m;\nrecord P { f0: text }\npub fn d(j: json) -> list<P> {\n"
        "    let ps: list<P> = jq!{ j | .users[] | select(.age >= 18) | .p }.collect();\n"
        "    return ps;\n}\n",
        "m.pell",
    )
    assert result.sql is not None, [d.message for d in result.diagnostics]
    assert "pell_f0 NUMBER PATH '$.age'" in result.sql and "WHERE jt.pell_f0 >= 18" in result.sql
    empty = compile_source(
        "module m;\npub fn n(j: json) -> list<text> {\n"
        '    let xs: list<text> = jq!{ j | .users[] | select(.nick != "") | .name }.collect();\n'
        "    return xs;\n}\n",
        "m.pell",
    )
    assert [d.code for d in empty.diagnostics] == ["bad-jq"]


def test_json_is_refused_on_12_2_whose_sql_json_functions_return_no_clob() -> None:
    # review 8: 12.2's JSON_QUERY returns VARCHAR2 only; LOB results came in 18c
    source = (
        "module m;\npub fn p(s: text) -> json { return json::parse(s); }\n"
        "pub fn r(j: json) -> list<text> {\n"
        "    let xs: list<text> = jq!{ j | .a[] }.collect();\n    return xs;\n}\n"
    )
    refused = compile_source(source, "m.pell", "12.2")
    assert [d.code for d in refused.diagnostics] == ["unsupported", "unsupported"]
    assert compile_source(source, "m.pell", "19c").sql is not None


def test_jq_keeps_a_missing_member_where_jq_s_null_compares_true() -> None:
    # review 10: jq's null != "bob" and null < 18 are true; the row was left out
    result = compile_source(
        "module m;\npub fn n(j: json) -> list<text> {\n"
        '    let xs: list<text> = jq!{ j | .users[] | select(.nick != "bob" and .age < 18) '
        "| .name }.collect();\n    return xs;\n}\n",
        "m.pell",
    )
    assert result.sql is not None, [d.message for d in result.diagnostics]
    assert "(jt.pell_f0 IS NULL OR jt.pell_f0 <> 'bob')" in result.sql
    assert "(jt.pell_f1 IS NULL OR jt.pell_f1 < 18)" in result.sql


def test_json_into_an_int_field_refuses_a_fraction_instead_of_rounding() -> None:
    # review 8: NUMBER(38) rounded 1.5 to 2 silently
    result = compile_source(
        "module m;\nrecord R { n: int, x: number }\n"
        "pub fn f(j: json) -> R { return json::into::<R>(j); }\n",
        "m.pell",
    )
    assert result.sql is not None, [d.message for d in result.diagnostics]
    assert_oracle_accepts(result.sql)
    assert "l_pell_r.n := pell_whole(JSON_VALUE(p_j, '$.n' RETURNING NUMBER" in result.sql
    assert "l_pell_r.x := JSON_VALUE(p_j, '$.x' RETURNING NUMBER" in result.sql
    assert "IF p_value <> TRUNC(p_value) THEN\n      RAISE VALUE_ERROR;" in result.sql


def test_jq_rows_refuse_a_fraction_in_an_int_instead_of_rounding() -> None:
    # review 8: a jq row's int (a record field or the value) was BULK COLLECTed or fetched
    # INTO NUMBER(38) / PLS_INTEGER, which round 1.5 to 2 silently
    result = compile_source(
        "module m;\nrecord P { name: text, n: int }\n"
        "pub fn d(j: json) -> list<P> { return jq!{ j | .users[] }.collect(); }\n"
        "pub fn e(j: json) -> list<int> { return jq!{ j | .users[] | .age }.collect(); }\n"
        "pub fn g(j: json) -> int { let n: int = jq!{ j | .user | .age }.one(); return n; }\n"
        "pub fn h(j: json) -> P { let p: P = jq!{ j | .users[] }.first(); return p; }\n",
        "m.pell",
    )
    assert result.sql is not None, [d.message for d in result.diagnostics]
    assert_oracle_accepts(result.sql)
    assert "INTO" not in result.sql.split("FUNCTION d(")[1].split("END d;")[0]
    assert "l_pell_p.n := pell_whole(r_pell_row.n);" in result.sql
    assert "l_pell_p.name := r_pell_row.name;" in result.sql
    assert ":= pell_whole(r_pell_row.v);" in result.sql
    assert "l_n := pell_whole(l_pell_number);" in result.sql
    assert "INTO l_p.name, l_pell_number" in result.sql
    assert "l_p.n := pell_whole(l_pell_number);" in result.sql
    assert "IF p_value <> TRUNC(p_value) THEN\n      RAISE VALUE_ERROR;" in result.sql
