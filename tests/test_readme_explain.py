"""The README's `pellc explain` sample is what the command prints."""

from __future__ import annotations

import re
import subprocess
import sys

from conftest import ROOT


def test_readme_explain_sample_is_current() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"```text\n\$ pellc explain (\S+)\n(.*?)```", readme, re.S)
    assert match, "README.md lost its explain sample"
    done = subprocess.run(
        [sys.executable, "-m", "pell", "explain", match.group(1)],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout == match.group(2)
