"""`python -m pell`: the same as the `pellc` command."""

from pell.cli import entry_point

entry_point()
