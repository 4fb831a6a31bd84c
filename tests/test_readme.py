"""The README's reference output is what pellc prints for the example it shows."""

from __future__ import annotations

import re

from conftest import EXAMPLES, ROOT

from pell import compile_path


def test_readme_reference_output_is_current() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(
        r"<!-- reference-output -->\n```sql\n(.*?)```\n<!-- /reference-output -->", readme, re.S
    )
    assert match, "README.md lost its reference-output block"
    assert match.group(1) == compile_path(EXAMPLES / "orders.pell").sql


def test_readme_shows_the_example_source() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert (EXAMPLES / "orders.pell").read_text(encoding="utf-8") in readme
