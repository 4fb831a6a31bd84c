"""The README's library example runs as written, in a project holding db/orders.pell."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT


def _library_example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n## Library\n") :]
    section = section[: section.index("\n## ", 1)]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "the Library section has one python example"
    return str(blocks[0])


def test_readme_library_example_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "db").mkdir()
    shutil.copy(EXAMPLES / "orders.pell", tmp_path / "db" / "orders.pell")
    monkeypatch.chdir(tmp_path)
    names: dict[str, object] = {}
    exec(compile(_library_example(), "README.md (Library)", "exec"), names)
    result = names["result"]
    assert getattr(result, "sql", None), "compile_source gave no SQL"
    assert (tmp_path / "sql" / "orders.sql").is_file(), "build_tree wrote nothing"
    # what the comments say the names hold
    assert names["more"] is not None and names["checked"] is not None
    assert names["build"].summary() == "built 1, unchanged 0, failed 0"  # type: ignore[attr-defined]
