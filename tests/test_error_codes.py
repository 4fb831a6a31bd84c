"""Error codes that never move: the code file a configured project commits, whole-project
runtimes for one-file builds and deploys, the runtime built whenever a module names it, and
the deploy order (runtime, every spec, every body)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import assert_oracle_accepts

from pell.cli import main
from pell.error_codes import CodeBook, DeclaredError, assign_codes

ACCOUNTS = """module bank.accounts;

pub error NotFound;
pub error Frozen;

pub fn find(id: number) -> Result<number, NotFound> {
    return Ok(id);
}
"""

VALIDATION = """module crm.validation;

pub error MissingName;

pub fn check_name(name: text) -> Result<text, MissingName> {
    if name == "" {
        return Err(MissingName {});
    }
    return Ok(name);
}
"""


def _project(tmp_path: Path, accounts: str = ACCOUNTS) -> Path:
    root = tmp_path / "proj"
    (root / "db" / "bank").mkdir(parents=True)
    (root / "db" / "crm").mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.pellc]\n', "utf-8")
    (root / "db" / "bank" / "accounts.pell").write_text(accounts, "utf-8")
    (root / "db" / "crm" / "validation.pell").write_text(VALIDATION, "utf-8")
    return root


def _codes(root: Path) -> dict[str, object]:
    data = json.loads((root / "pell-error-codes.json").read_text("utf-8"))
    assert isinstance(data, dict)
    return data


def _runtime_codes(path: Path) -> dict[str, int]:
    text = path.read_text("utf-8")
    assert_oracle_accepts(text)
    found = re.findall(r"^  c_(\w+) CONSTANT PLS_INTEGER := (-\d+);$", text, re.M)
    return {name: int(code) for name, code in found}


def test_a_build_records_every_code_and_a_new_error_moves_none(tmp_path: Path) -> None:
    root = _project(tmp_path)
    out = tmp_path / "out"
    assert main(["build", str(root / "db"), "-d", str(out)]) == 0
    # modules by name, then declaration order, from the top of the propagate range
    assert _codes(root) == {
        "format": 1,
        "codes": {
            "bank.accounts.NotFound": -20100,
            "bank.accounts.Frozen": -20101,
            "crm.validation.MissingName": -20102,
        },
        "retired": {},
    }
    # An error added to the first module takes a fresh code; crm's keeps -20102 (numbered
    # afresh, it would have moved to -20103).
    grown = ACCOUNTS.replace("pub error Frozen;", "pub error Frozen;\npub error Closed;")
    (root / "db" / "bank" / "accounts.pell").write_text(grown, "utf-8")
    assert main(["build", str(root / "db"), "-d", str(out)]) == 0
    assert _runtime_codes(out / "pell_runtime.sql") == {
        "bank_accounts_notfound": -20100,
        "bank_accounts_frozen": -20101,
        "bank_accounts_closed": -20103,
        "crm_validation_missingname": -20102,
        "pell_transaction_open": -20399,
    }


def test_a_removed_error_retires_its_code_and_gets_it_back_if_it_returns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _project(tmp_path)
    out = tmp_path / "out"
    accounts = root / "db" / "bank" / "accounts.pell"
    assert main(["build", str(root / "db"), "-d", str(out)]) == 0
    accounts.write_text(ACCOUNTS.replace("pub error Frozen;\n", ""), "utf-8")
    assert main(["build", str(root / "db"), "-d", str(out)]) == 0
    assert "pell-error-codes.json updated" in capsys.readouterr().err
    assert _codes(root)["retired"] == {"-20101": "bank.accounts.Frozen"}
    assert "bank_accounts_frozen" not in _runtime_codes(out / "pell_runtime.sql")
    # a new error never takes a retired code
    accounts.write_text(ACCOUNTS.replace("pub error Frozen;", "pub error Locked;"), "utf-8")
    assert main(["build", str(root / "db"), "-d", str(out)]) == 0
    assert _codes(root)["codes"] == {
        "bank.accounts.NotFound": -20100,
        "crm.validation.MissingName": -20102,
        "bank.accounts.Locked": -20103,
    }
    # the removed error, declared again, has its own code back
    both = ACCOUNTS.replace("pub error Frozen;", "pub error Frozen;\npub error Locked;")
    accounts.write_text(both, "utf-8")
    assert main(["build", str(root / "db"), "-d", str(out)]) == 0
    assert _codes(root)["retired"] == {}
    assert _runtime_codes(out / "pell_runtime.sql")["bank_accounts_frozen"] == -20101
    # an error moved to another category takes a code of that range; its old one retires
    accounts.write_text(both.replace("pub error Frozen;", "@panic\npub error Frozen;"), "utf-8")
    assert main(["build", str(root / "db"), "-d", str(out)]) == 0
    assert _codes(root)["retired"] == {"-20101": "bank.accounts.Frozen"}
    assert _runtime_codes(out / "pell_runtime.sql")["bank_accounts_frozen"] == -20300


def test_a_one_file_build_and_deploy_keep_every_project_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _project(tmp_path)
    assert main(["build", str(root / "db"), "-d", str(tmp_path / "all")]) == 0
    whole = _runtime_codes(tmp_path / "all" / "pell_runtime.sql")
    validation = root / "db" / "crm" / "validation.pell"
    assert main(["build", str(validation), "-d", str(tmp_path / "one")]) == 0
    assert sorted(p.name for p in (tmp_path / "one").glob("*.sql")) == [
        "pell_runtime.sql",
        "validation.sql",
    ]
    # the runtime is the project's, with bank's errors at their codes, not crm's alone
    assert _runtime_codes(tmp_path / "one" / "pell_runtime.sql") == whole
    assert whole["crm_validation_missingname"] == -20102
    capsys.readouterr()
    assert main(["deploy", "--dry-run", str(validation)]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        "  1. pell_runtime.sql: PACKAGE PELL_RUNTIME",
        "  2. pell_runtime.sql: PACKAGE BODY PELL_RUNTIME",
        "  3. validation.sql: PACKAGE VALIDATION",
        "  4. validation.sql: PACKAGE BODY VALIDATION",
    ]
    assert main(["runtime", str(root / "db" / "crm"), "-o", str(tmp_path / "rt.sql")]) == 0
    assert _runtime_codes(tmp_path / "rt.sql") == whole


def test_deploy_runs_the_runtime_then_every_spec_then_every_body(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _project(tmp_path)
    assert main(["deploy", "--dry-run", str(root / "db")]) == 0
    objects = [line.split(": ", 1)[1] for line in capsys.readouterr().out.splitlines()[1:]]
    assert objects == [
        "PACKAGE PELL_RUNTIME",
        "PACKAGE BODY PELL_RUNTIME",
        "PACKAGE ACCOUNTS",
        "PACKAGE VALIDATION",
        "PACKAGE BODY ACCOUNTS",
        "PACKAGE BODY VALIDATION",
    ]


def test_the_runtime_is_built_for_a_module_that_names_it_without_declaring_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "db"
    src.mkdir()
    (src / "jobs.pell").write_text(
        'module jobs;\n\n@retry(n=3, scope="transaction")\npub fn run() {\n'
        "    sql! { update t set x = 1 };\n}\n",
        "utf-8",
    )
    out = tmp_path / "out"
    assert main(["build", str(src), "-d", str(out)]) == 0
    assert "pell_runtime.c_pell_transaction_open" in (out / "jobs.sql").read_text("utf-8")
    assert _runtime_codes(out / "pell_runtime.sql") == {"pell_transaction_open": -20399}
    assert capsys.readouterr().err.endswith("runtime built\n")
    assert main(["deploy", "--dry-run", str(src)]) == 0
    assert "  1. pell_runtime.sql: PACKAGE PELL_RUNTIME" in capsys.readouterr().out


def test_check_reports_a_code_file_an_added_error_left_stale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _project(tmp_path)
    out = tmp_path / "out"
    assert main(["build", str(root / "db"), "-d", str(out)]) == 0
    before = (root / "pell-error-codes.json").read_text("utf-8")
    accounts = root / "db" / "bank" / "accounts.pell"
    accounts.write_text(ACCOUNTS.replace("pub error Frozen;", "pub error Frozen;\npub error X;"))
    capsys.readouterr()
    assert main(["build", "--check", str(root / "db"), "-d", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{root / 'pell-error-codes.json'}: stale" in err
    assert (root / "pell-error-codes.json").read_text("utf-8") == before  # --check writes nothing


def test_a_module_that_does_not_parse_keeps_its_codes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _project(tmp_path)
    out = tmp_path / "out"
    assert main(["build", str(root / "db"), "-d", str(out)]) == 0
    before = _codes(root)
    (root / "db" / "bank" / "accounts.pell").write_text(ACCOUNTS + "\npub fn broken( {\n")
    assert main(["build", str(root / "db"), "-d", str(out)]) == 1
    assert _codes(root) == before  # nothing retired while bank.accounts cannot be read
    assert _runtime_codes(out / "pell_runtime.sql")["bank_accounts_frozen"] == -20101


def test_a_damaged_code_file_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _project(tmp_path)
    codes = root / "pell-error-codes.json"
    for text, problem in [
        ("{", "not valid JSON"),
        ('{"format": 1, "codes": {"a.B": -20100, "a.C": -20100}}', "one code, -20100"),
        ('{"format": 1, "codes": {"a.B": -19000}}', "outside -20100 .. -20398"),
        ('{"codes": {}}', "not a pellc error code file"),
    ]:
        codes.write_text(text, "utf-8")
        assert main(["build", str(root / "db"), "-d", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"pellc: error: {codes}: ") and problem in err, err
        assert err.count("\n") == 1


def test_the_code_file_can_be_named_in_the_configuration(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / "pyproject.toml").write_text('[tool.pellc]\nerror-codes = "db/codes.json"\n')
    assert main(["build", str(root / "db"), "-d", str(tmp_path / "out")]) == 0
    assert (root / "db" / "codes.json").is_file()
    assert not (root / "pell-error-codes.json").exists()


def test_a_range_with_retired_codes_runs_out_sooner() -> None:
    retired = {-20100 - i: f"old.E{i}" for i in range(99)}
    book = CodeBook({}, retired)
    two = [DeclaredError("m", "A", "propagate"), DeclaredError("m", "B", "propagate")]
    numbering = assign_codes(two, book)
    assert [e.code for e in numbering.errors] == [-20199]
    (overflow,) = numbering.overflows
    assert (overflow.count, overflow.capacity, overflow.first_extra.name) == (101, 100, "B")
