"""The PL/SQL statement tree: every statement class prints and runs in the verifier."""

from __future__ import annotations

import typing

from pell import plsql
from pell.verify.interpreter import EXECUTORS


def _statement_classes() -> set[type]:
    return set(typing.get_args(plsql.Stmt))


def test_every_statement_prints() -> None:
    assert set(plsql.PRINTERS) == _statement_classes()


def test_every_statement_runs_in_the_verifier() -> None:
    assert set(EXECUTORS) == _statement_classes()


def test_printer_indents_relative_to_the_parent() -> None:
    inner = plsql.If([plsql.Branch(plsql.Opaque("x > 1"), [plsql.Commit()])])
    tree = plsql.Block(
        [plsql.Loop("WHILE b", [inner])], [plsql.Handler([plsql.OTHERS], [plsql.Raise()])]
    )
    printer = plsql.Printer()
    printer.statements([tree], 2)
    assert printer.lines == [
        "    BEGIN",
        "      WHILE b LOOP",
        "        IF x > 1 THEN",
        "          COMMIT;",
        "        END IF;",
        "      END LOOP;",
        "    EXCEPTION",
        "      WHEN OTHERS THEN",
        "        RAISE;",
        "    END;",
    ]


def test_multi_line_sql_keeps_its_shape_under_any_depth() -> None:
    query = plsql.Sql("select a\n  from t\n\nwhere b = 1", "select")
    printer = plsql.Printer()
    printer.statements([query], 3)
    assert printer.lines == ["      select a", "        from t", "", "      where b = 1;"]
