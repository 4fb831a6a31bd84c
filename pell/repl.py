"""`pellc repl`: Pell cells run one after another against a database (pell.run.Session), with
the imports, fns and records of earlier cells kept; `:` commands for SQL, explain and verify.
prompt_toolkit (the extra `pellc[repl]`) reads the cells on a terminal, with history;
otherwise lines are read from standard input."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pell.run import Session

PROMPT, MORE = "pell> ", "...   "
_IMPORTS_ONLY = re.compile(r"(\s*import\s+[\w\s:]+;)+\s*")
HISTORY_ENV = "PELL_REPL_HISTORY"  # where the history is kept (tests point it elsewhere)
HELP = """\
A cell is Pell statements, run as one script (a DO block on PostgreSQL, an anonymous block on
Oracle); an expression with no `;` shows its value. A cell ends where its brackets close.
The imports, fns and records of the cells that compiled are kept for the next ones (fns and
records in a script are Oracle's only); variables are not: each cell is a block of its own.
  :sql STATEMENT...   run SQL, showing rows and notices (DBMS_OUTPUT)
  :explain MOD::FN    the retry schedule of a project module's @retry fn
  :verify             pellc verify over the project's modules
  :kept               show what is kept;  :forget  forget it
  :help  :quit
"""


def add_parser(commands: Any, database: argparse.ArgumentParser) -> None:
    repl = commands.add_parser(
        "repl",
        parents=[database],
        help="run Pell cells interactively, keeping declarations across cells",
        description="An interactive session: each cell is compiled and run as a script "
        "(pellc exec), against --db, $PELL_DB_URL or the embedded PostgreSQL server. "
        "`:help` lists its commands. Needs prompt_toolkit (the extra `repl`) on a terminal.",
    )
    repl.set_defaults(format="text")


def history_path() -> Path:
    override = os.environ.get(HISTORY_ENV)
    if override:
        return Path(override)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "pellc" / "repl_history"


def complete(text: str) -> bool:
    """Whether a cell is whole: a `:` command, or text whose brackets all close (strings and
    `//` comments skipped)."""
    if text.lstrip().startswith(":"):
        return True
    depth, index, quote = 0, 0, ""
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char == '"':
            quote = char
        elif text.startswith("//", index):
            end = text.find("\n", index)
            index = len(text) if end < 0 else end
            continue
        elif char in "({[":
            depth += 1
        elif char in ")}]":
            depth -= 1
        index += 1
    return depth <= 0 and not quote


class Repl:
    """The cells of one session and what they keep."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.imports: list[str] = []  # `import a::b;` of earlier cells
        self.declarations: list[str] = []  # their fns and records, as written
        self.count = 0

    def handle(self, cell: str) -> bool:
        """Run one cell or command; False when the session ends."""
        from pell.cli import InternalError, UsageError, _report

        stripped = cell.strip()
        if not stripped:
            return True
        try:
            if stripped.startswith(":"):
                return self.command(stripped)
            self.cell(cell)
        except (UsageError, InternalError) as error:
            _report(error)
        except KeyboardInterrupt:
            # Ctrl-C while a cell runs ends the cell, not the session (psycopg cancels the
            # statement it was waiting on); what earlier cells kept stays
            sys.stderr.write("cancelled\n")
        return True

    def cell(self, text: str) -> None:
        from pell import parse
        from pell.ast import SCRIPT_FN

        self.count += 1
        name = f"<cell {self.count}>"
        # kept imports before the cell on its first line (its lines keep their numbers), its
        # declarations after it; the cell's own imports come first in it, as a script's must
        if _IMPORTS_ONLY.fullmatch(text):
            # a script needs a statement: `return;` after the imports checks them (and deploys
            # the modules they name); kept when they compile
            text = " ".join(line.strip() for line in text.strip().splitlines()) + " return;"
        before = " ".join(self.imports) + " " if self.imports else ""
        after = "\n" + "\n".join(self.declarations) if self.declarations else ""
        path = self.session.start / name
        code = self.session.run(
            text, name, path, snippet=True, around=(before, after), imports="\n".join(self.imports)
        )
        if code and not self.session.compiled:
            return  # nothing of a cell that does not compile is kept
        module, diagnostics = parse(text)
        if module is None or diagnostics:
            return
        for imported in module.imports:
            line = text[imported.span.start : imported.span.end].strip()
            if line not in self.imports:
                self.imports.append(line)
        for item in module.items:
            if getattr(item, "name", None) == SCRIPT_FN:
                continue  # the cell's statements
            self.declarations.append(text[item.span.start : item.span.end])

    def command(self, text: str) -> bool:
        name, _, rest = text[1:].partition(" ")
        rest = rest.strip()
        if name in ("quit", "q", "exit"):
            return False
        if name == "help":
            _say(HELP)
        elif name == "kept":
            _say("".join(f"{line}\n" for line in [*self.imports, *self.declarations]) or "nothing\n")
        elif name == "forget":
            self.imports, self.declarations = [], []
        elif name == "sql" and rest:
            self.sql(rest)
        elif name == "explain" and "::" in rest:
            self.explain(rest)
        elif name == "verify":
            self.verify()
        else:
            _say(f"unknown command `{text}`: :help lists them\n")
        return True

    def sql(self, text: str) -> None:
        from pell.run import _sql_oracle, _sql_postgres, split_statements

        database = self.session.database
        statements = split_statements(text, database.kind)
        runner = _sql_postgres if database.kind == "postgres" else _sql_oracle
        runner(database, statements, Path("<sql>"))

    def _modules(self) -> dict[str, Path]:
        """The project's modules by dotted name."""
        from pell.run import _project

        project = _project(self.session.start, self.session.start / "<repl>", "")
        return {".".join(f.declares): f.path for f in project.files if f.declares is not None}

    def explain(self, text: str) -> None:
        from pell.cli import main

        module, _, fn = text.rpartition("::")
        found = self._modules().get(module.replace("::", "."))
        if found is None:
            _say(f"no module `{module}` in the project\n")
            return
        main(["explain", str(found), fn, "--target", self.session.target])

    def verify(self) -> None:
        from pell.cli import main

        modules = sorted(self._modules().values())
        if not modules:
            _say("no module in the project to verify\n")
            return
        main(["verify", *map(str, modules), "--target", self.session.target])


def _say(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _prompt_reader() -> Callable[[], str] | None:
    """prompt_toolkit's reader, Enter ending a cell when it is whole; None without
    prompt_toolkit or a terminal."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return None
    try:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory
        from prompt_toolkit.key_binding import KeyBindings
    except ImportError:
        return None
    keys = KeyBindings()

    @keys.add("enter")
    def _enter(event: Any) -> None:
        buffer = event.current_buffer
        if complete(buffer.text):
            buffer.validate_and_handle()
        else:
            buffer.insert_text("\n")

    path = history_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    prompt: PromptSession[str] = PromptSession(
        history=FileHistory(str(path)), multiline=True, key_bindings=keys
    )

    def read() -> str:
        return prompt.prompt(PROMPT, prompt_continuation=MORE)

    return read


def _line_reader() -> str:
    """A cell from standard input, line by line until it is whole (no history)."""
    lines = [input(PROMPT if sys.stdin.isatty() else "")]
    while not complete("\n".join(lines)):
        lines.append(input(MORE if sys.stdin.isatty() else ""))
    return "\n".join(lines)


def repl_command(args: argparse.Namespace) -> int:
    session = Session.of(args, Path.cwd())
    repl = Repl(session)
    read = _prompt_reader() or _line_reader
    where = session.database.shown
    _say(f"pellc repl: {session.target} on {where}; :help lists the commands\n")
    while True:
        try:
            cell = read()
        except EOFError:
            break
        except KeyboardInterrupt:
            continue
        if not repl.handle(cell):
            break
    return 0
