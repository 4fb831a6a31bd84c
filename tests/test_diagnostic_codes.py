"""Every diagnostic code fires on a negative case whose rendered output is snapshotted."""

from __future__ import annotations

from pathlib import Path

from pell.diagnostics import CODES

SNAPSHOTS = Path(__file__).parent / "__snapshots__" / "test_cases"

# Codes whose negative case lives in another test, and where.
TESTED_ELSEWHERE = {
    "encoding": "test_cli.py::test_not_utf8_is_a_located_diagnostic",
    "too-many-errors": "test_cli.py::test_runtime_reports_a_full_code_range",
    "too-large": "test_robustness.py::test_a_huge_file_is_a_diagnostic",
    "too-deep": "test_robustness.py::test_deep_nesting_is_a_diagnostic",
    # pellc verify's findings: planted in statement trees, each asserted where it lands
    "verify-lost-work": "test_verify.py::test_a_planted_defect_is_found_where_it_is",
    "verify-repeated-work": "test_verify.py::test_a_planted_defect_is_found_where_it_is",
    "verify-leaked-work": "test_verify.py::test_a_planted_defect_is_found_where_it_is",
    "verify-no-savepoint": "test_verify.py::test_a_user_rollback_to_a_missing_savepoint_is_an_error",
    "verify-attempts": "test_verify.py::test_a_planted_defect_is_found_where_it_is",
    "verify-transaction-control": (
        "test_verify_postgres.py::test_a_planted_defect_is_found_where_it_is"
    ),
    "verify-retried-error": "test_verify.py::test_a_planted_defect_is_found_where_it_is",
    "verify-repeated-effect": "test_verify.py::test_the_lowered_trees_have_no_violation",
    # a project's codes need several files
    "package-clash": "test_package_names.py::test_a_package_named_like_a_table_its_sql_uses_is_a_warning_at_the_table",
    "duplicate-module": "test_projects.py::test_two_files_declaring_one_module_are_an_error_at_both",
    "unknown-module": "test_projects.py::test_cross_module_errors_are_reported_at_their_file_and_line",
    "private": "test_projects.py::test_cross_module_errors_are_reported_at_their_file_and_line",
    "list-between-modules": "test_list_crossings.py::test_a_list_that_cannot_cross_is_located",
}


def test_every_code_has_a_rendered_negative_case() -> None:
    rendered = "".join(p.read_text(encoding="utf-8") for p in SNAPSHOTS.glob("*.txt"))
    missing = [
        code for code in CODES if f"[{code}]" not in rendered and code not in TESTED_ELSEWHERE
    ]
    assert missing == []


def test_codes_are_kebab_case_with_a_summary() -> None:
    for code, (_, summary) in CODES.items():
        assert code == code.lower() and " " not in code and "_" not in code
        assert summary


def test_messages_use_the_article_the_word_is_said_with() -> None:
    from pell.diagnostics import quoted_with_article

    said = {
        "int": "an `int`",
        "Option<number>": "an `Option<number>`",
        "Item": "an `Item`",
        "number": "a `number`",
        "unit": "a `unit`",
        "Update": "an `Update`",
        "text": "a `text`",
    }
    assert {word: quoted_with_article(word) for word in said} == said


def test_no_message_names_the_unknown_type_of_error_recovery() -> None:
    # An expression whose type is unknown got its own error; a second message about it
    # ("cannot be stored in an `unknown`") would only repeat that error, worse.
    from pell import compile_source

    source = """module m;
pub fn f() {
    let r: Missing = sql! { select 1 from dual }.one();
    return nope;
}
"""
    messages = [d.message for d in compile_source(source, "m.pell").diagnostics]
    assert len(messages) == 2 and "Missing" in messages[0] and "nope" in messages[1]
    rendered = "".join(p.read_text(encoding="utf-8") for p in SNAPSHOTS.glob("*.txt"))
    assert "`unknown`" not in rendered + "".join(messages)
