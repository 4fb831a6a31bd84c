"""An ordinary Python test: the Pell project's items run beside it."""

from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_every_module_is_under_db() -> None:
    assert sorted(p.name for p in ROOT.glob("*.pell")) == []
    assert len(list((ROOT / "db").glob("*.pell"))) == 3
