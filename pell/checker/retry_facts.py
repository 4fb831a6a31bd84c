"""What each fn does to its caller's transaction, and the call graph that joins fns across
modules: the facts the retry-safety checks (`retry_safety`) read.

The facts are gathered per fn (`FnFacts`: commits, `transaction { }` blocks, calls), plain data
that a build keeps in its manifest between runs; `RetryGraph` joins the fns of one module, or of
every module of a build, and finds which fns end the transaction, through any depth of calls.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from pell import ast, naming, records, sqltext
from pell.checker import dynamic_sql
from pell.checker.imports import imported_path
from pell.checker.model import CheckedModule
from pell.checker.ut import auto_rollback_fns
from pell.records import record
from pell.sqltokens import Token, TokenType

# The Oracle-supplied procedures that commit the caller's transaction: the one table pellc
# reads for a Pell call (`dbms_stats::gather_table_stats(...)`), for a call in a PL/SQL block
# of `sql! { begin ... end; }` and for one in the literal text EXECUTE IMMEDIATE runs. Each
# row: a `package.procedure` pattern (fnmatch, lower case), why (as messages say it), and the
# source (documented, inferred or only observed). docs/retry.md prints this table.
COMMITTING_CALLS: tuple[tuple[str, str, str], ...] = (
    (
        "dbms_ddl.alter_compile",
        "documented to commit before and after",
        'documented: "The ALTER_COMPILE procedure commits the current transaction, performs '
        'the operation, and then commits again" (PL/SQL Packages and Types Reference 23ai, '
        "DBMS_DDL, Operational Notes)",
    ),
    (
        "dbms_ddl.analyze_object",
        "documented to commit before and after",
        'documented: "The ALTER_COMPILE and ANALYZE_OBJECT procedures commit the current '
        'transaction, perform the operation, and then commit again" (Supplied PL/SQL Packages '
        "Reference 8.1.6 and 9i, DBMS_DDL)",
    ),
    (
        "dbms_ddl.create_wrapped",
        "runs a CREATE OR REPLACE (DDL), which commits",
        'documented: it "generates a CREATE OR REPLACE statement ... and executes the generated '
        'statement" (PL/SQL Packages and Types Reference 23ai, DBMS_DDL); DDL commits before '
        "and after (SQL Language Reference, SET TRANSACTION)",
    ),
    *(
        (
            f"dbms_stats.{family}",
            "commits before and after its work (documented)",
            'documented: "Most of the procedures in this package commit the current '
            'transaction, perform the operation, and then commit again" (Supplied PL/SQL '
            "Packages and Types Reference 9i, DBMS_STATS); Oracle's spec dbmsstat.sql (11.2) "
            "names them: set_*, delete_*, export_*, import_*, gather_* and *_stat_table",
        )
        for family in ("gather_*", "delete_*", "set_*", "export_*", "import_*", "*_stat_table")
    ),
    *(
        (
            f"dbms_stats.{family}",
            "commits (observed)",
            "observed: they change the statistics lock in the dictionary; the spec's sentence "
            "on commits does not list lock_* / unlock_* (docs/stubs.md)",
        )
        for family in ("lock_*", "unlock_*")
    ),
    (
        "dbms_utility.exec_ddl_statement",
        "runs DDL, which commits (documented)",
        'documented: it "executes the DDL statement in parse_string" (Supplied PL/SQL Packages '
        "and Types Reference 9i, DBMS_UTILITY); DDL commits before and after (SQL Language "
        "Reference, SET TRANSACTION)",
    ),
    (
        "dbms_utility.compile_schema",
        "runs ALTER ... COMPILE (DDL), which commits (observed)",
        "observed: it issues ALTER ... COMPILE for each object; no Oracle sentence found "
        "(docs/stubs.md)",
    ),
    (
        "dbms_lock.allocate_unique",
        "commits (documented)",
        'documented: "ALLOCATE_UNIQUE performs a commit" (Supplied PL/SQL Packages and Types '
        "Reference 9i, DBMS_LOCK); Oracle's spec dbmslock.sql (11.2): \"Allocate_unique "
        'performs a commit."',
    ),
    *(
        (
            f"dbms_scheduler.{name}",
            "changes a scheduler object, which commits (observed)",
            "observed: no transaction is open after the call (public reports, docs/stubs.md); "
            "no Oracle sentence found",
        )
        for name in (
            "create_job",
            "drop_job",
            "stop_job",
            "enable",
            "disable",
            "set_attribute",
            "set_attribute_null",
        )
    ),
    *(
        (
            f"{package}.refresh*",
            "a materialized view refresh commits (observed)",
            "observed: a refresh stays committed after the caller's rollback (renenyffenegger.ch, "
            '"Oracle: DBMS_MVIEW.REFRESH", "Calling refresh commits the current transaction"); '
            "not stated in Oracle's reference. DBMS_MVIEW is a synonym of DBMS_SNAPSHOT",
        )
        for package in ("dbms_mview", "dbms_snapshot")
    ),
    (
        "dbms_redefinition.*",
        "online redefinition runs DDL, which commits (inferred)",
        "inferred: online redefinition builds and swaps tables with materialized views "
        "(PL/SQL Packages and Types Reference, DBMS_REDEFINITION, Overview), which is DDL; no "
        "Oracle sentence on its commits found",
    ),
    *(
        (
            f"dbms_aqadm.{family}",
            "creates or drops queue objects, committing first (documented)",
            'documented: auto_commit TRUE, the default, "Causes the current transaction, if any, '
            'to commit before the DROP_QUEUE operation is carried out" (Supplied PL/SQL Packages '
            "and Types Reference 9i, DBMS_AQADM, DROP_QUEUE; the same for DROP_QUEUE_TABLE, and "
            "CREATE_QUEUE takes the same auto_commit DEFAULT TRUE); the parameter is marked "
            "deprecated there",
        )
        for family in ("create_*", "drop_*")
    ),
    # DBMS_TRANSACTION: the procedures that are COMMIT or ROLLBACK. Not COMMIT_FORCE and
    # ROLLBACK_FORCE, which act on the in-doubt distributed transaction their text names: "A
    # ROLLBACK statement with a FORCE clause rolls back only the specified transaction. Such a
    # statement does not affect your current transaction" (SQL Reference 9.2, ROLLBACK); no
    # sentence found on COMMIT FORCE and the current transaction. Not ROLLBACK_SAVEPOINT, a
    # rollback to a savepoint (by its name and `savept` parameter; its page was not found),
    # which keeps the transaction.
    *(
        (
            f"dbms_transaction.{name}",
            f"runs {ends} (documented)",
            f'documented: "Equivalent to the SQL statement: {statement}" (PL/SQL Packages and '
            "Types Reference 10.2 and 11.2, DBMS_TRANSACTION, Summary of DBMS_TRANSACTION "
            f"Subprograms); {ends} ends the current transaction (SQL Reference 10.2, {ends})",
        )
        for name, statement, ends in (
            ("commit", "COMMIT", "COMMIT"),
            ("commit_comment", "COMMIT COMMENT <text>", "COMMIT"),
            ("rollback", "ROLLBACK", "ROLLBACK"),
        )
    ),
)

# Statements that end the transaction (DDL commits implicitly), destroying the savepoint.
ENDS_TRANSACTION = frozenset(
    "commit rollback create alter drop truncate grant revoke rename comment analyze audit "
    "noaudit flashback purge".split()
)

# Statements that write rows: the first of them opens the transaction ("A transaction begins
# with the first executable SQL statement", Oracle9i Database Concepts, 16 "Transaction
# Management"), as in pellc verify's model (a SAVEPOINT opens none there).
DML = frozenset({"insert", "update", "delete", "merge"})

# SQL statements that may call a Pell fn by name: a fn they call may run no transaction
# control (see `_sql_calls`).
_SQL_STATEMENTS = DML | {"select", "with"}

FnKey = tuple[str, str]  # (dotted module name, fn name)


def committing_call(path: tuple[str, ...]) -> str | None:
    """Why a call to the Oracle procedure `path` (`package.procedure`, any case) commits, or
    None if it is not known to."""
    if len(path) != 2:
        return None
    name = ".".join(part.lower() for part in path)
    return next(
        (why for pattern, why, _ in COMMITTING_CALLS if fnmatch.fnmatchcase(name, pattern)), None
    )


# ---- facts -------------------------------------------------------------------


@record
class Effect:
    """What a fn body (or its `finally`) does that the checks care about."""

    # "commit": ends the transaction itself; "transaction": a block; "call"; "parse": a
    # DBMS_SQL.PARSE of a text pellc cannot read, which commits if it is DDL; "plsql": a PL/SQL
    # block in `sql! { }` that commits nothing pellc can see (a procedure it calls may);
    # "sql-call": a Pell fn named in the text of a SQL statement, before `(`; "sql-name": a
    # dotted name without `(` there that no table or alias of the statement qualifies, a call
    # if it names a fn with no parameters; "plsql-call": a call in the PL/SQL of a PL/SQL
    # block (`pkg.proc(...)`, `pkg.proc;`, or the package's own `f(...)`), of a stub's fn or a
    # project fn of that PL/SQL name
    kind: str
    span: ast.Span
    what: str  # how messages name it: "COMMIT", "a `transaction { }` block", "`f`"
    callee: tuple[str, ...] = ()  # a call's path, as written; a SQL call's, as Pell writes it
    in_transaction: ast.Span | None = None  # the innermost `transaction { }` around it
    opened_by: ast.Span | None = None  # a call's: DML of this fn run before it on every path

    def to_json(self) -> list[object]:
        return [
            self.kind,
            self.span.start,
            self.span.end,
            self.what,
            list(self.callee),
            _span_json(self.in_transaction),
            _span_json(self.opened_by),
        ]

    @staticmethod
    def from_json(data: list[Any]) -> Effect:
        kind, start, end, what, callee, inside, opened_by = data
        assert isinstance(callee, list)
        return Effect(
            str(kind),
            ast.Span(int(start), int(end)),
            str(what),
            tuple(str(c) for c in callee),
            _span_from_json(inside),
            _span_from_json(opened_by),
        )


def _span_json(span: ast.Span | None) -> list[int] | None:
    return [span.start, span.end] if span is not None else None


def _span_from_json(data: object) -> ast.Span | None:
    if data is None:
        return None
    assert isinstance(data, list)
    start, end = data
    return ast.Span(int(start), int(end))


@record
class FnFacts:
    name: str
    name_span: ast.Span
    retry_scope: str | None  # None: not retried
    retry_span: ast.Span | None  # the @retry annotation
    autonomous: bool
    effects: tuple[Effect, ...]
    recover: str | None = None  # the fn `recover = ...` names
    attempts: int = 0  # @retry's n; 0 when not retried
    finally_span: ast.Span | None = None  # its `finally { }` block, if it has one
    params: int = 0  # how many parameters it takes (SQL calls one with none without `()`)
    parallel: bool = False  # @parallel: parallel query servers run it, inside a query
    # a procedure of a utPLSQL suite that rolls back automatically: utPLSQL runs it after a
    # savepoint it rolls back to (pell.checker.ut.auto_rollback_fns)
    auto_rollback: bool = False

    def to_json(self) -> list[object]:
        """[name, start, end, retry scope, retry span or None, autonomous, effects, recover,
        attempts, finally span or None, params]: a list, not an object, as a build's manifest
        holds one for every fn of the project, read and written by every build."""
        retry_span = [self.retry_span.start, self.retry_span.end] if self.retry_span else None
        return [
            self.name,
            self.name_span.start,
            self.name_span.end,
            self.retry_scope,
            retry_span,
            self.autonomous,
            [e.to_json() for e in self.effects],
            self.recover,
            self.attempts,
            _span_json(self.finally_span),
            self.params,
            self.parallel,
            self.auto_rollback,
        ]

    @staticmethod
    def from_json(data: list[Any]) -> FnFacts:
        # an older pellc's facts have no `params`: ValueError, and the module compiles again
        # (they also lack the SQL calls of its PL/SQL blocks and the names SQL calls bare)
        name, start, end, retry, retry_span, autonomous, effects, recover, attempts = data[:9]
        cleanup, params, parallel, auto_rollback = data[9:]
        assert isinstance(effects, list)
        return FnFacts(
            str(name),
            ast.Span(int(start), int(end)),
            None if retry is None else str(retry),
            _span_from_json(retry_span),
            bool(autonomous),
            tuple(Effect.from_json(e) for e in effects),
            None if recover is None else str(recover),
            int(attempts),
            _span_from_json(cleanup),
            int(params),
            bool(parallel),
            bool(auto_rollback),
        )


@record
class ModuleFacts:
    """The retry facts of one module: what its fns commit and call."""

    path: tuple[str, ...]
    fns: dict[str, FnFacts]
    imports: tuple[tuple[str, ...], ...] = ()  # the modules it imports, as paths
    stub: bool = False  # a `@stub` module: an Oracle package, which PL/SQL blocks call too
    # its PL/SQL package as SQL text names it: (schema, package), or (package,) without a
    # schema; () for a stub, whose fns no SQL-call resolves to
    package: tuple[str, ...] = ()
    # the schema-level objects it creates besides its package and its own prefixed types (an
    # aggregate's function and types), each with where it is declared: two modules of one
    # schema must not create one name (project_findings)
    schema_objects: tuple[tuple[str, ast.Span], ...] = ()
    # each call an aggregate's part makes, as (aggregate, part, call): a query runs the part,
    # so a callee that commits is `aggregate-dml` (retry_safety.retry_findings)
    aggregate_calls: tuple[tuple[str, str, Effect], ...] = ()
    # each `seq schema::name`, as written, and where it is declared: a package named like
    # its schema, in the module's schema, would capture `schema.name` (schema_clashes)
    schema_sequences: tuple[tuple[str, ast.Span], ...] = ()

    @property
    def name(self) -> str:
        return ".".join(self.path)

    def to_json(self) -> dict[str, object]:
        return {
            "path": list(self.path),
            "fns": [f.to_json() for f in self.fns.values()],
            "imports": [list(i) for i in self.imports],
            "package": list(self.package),
            "schema_objects": [[name, span.start, span.end] for name, span in self.schema_objects],
            "aggregate_calls": [
                [aggregate, part, call.to_json()] for aggregate, part, call in self.aggregate_calls
            ],
            "schema_sequences": [
                [name, span.start, span.end] for name, span in self.schema_sequences
            ],
            **({"stub": True} if self.stub else {}),  # a build's manifest records no stub
        }

    @staticmethod
    def from_json(data: dict[str, object]) -> ModuleFacts:
        path, fns, imports = data["path"], data["fns"], data["imports"]
        package = data["package"]  # none: facts of an older pellc, compiled again
        assert isinstance(path, list) and isinstance(fns, list) and isinstance(imports, list)
        assert isinstance(package, list)
        facts = [FnFacts.from_json(f) for f in fns]
        objects = data.get("schema_objects", [])
        aggregate_calls = data.get("aggregate_calls", [])
        sequences = data.get("schema_sequences", [])
        assert isinstance(objects, list) and isinstance(aggregate_calls, list)
        assert isinstance(sequences, list)
        return ModuleFacts(
            tuple(str(p) for p in path),
            {f.name: f for f in facts},
            tuple(tuple(str(p) for p in i) for i in imports),
            data.get("stub") is True,
            tuple(str(p) for p in package),
            tuple((str(name), ast.Span(int(start), int(end))) for name, start, end in objects),
            tuple(
                (str(aggregate), str(part), Effect.from_json(call))
                for aggregate, part, call in aggregate_calls
            ),
            tuple((str(name), ast.Span(int(start), int(end))) for name, start, end in sequences),
        )


def _ends_transaction(words: list[str]) -> str | None:
    """What a SQL statement (as lowercased words) does that ends the transaction, or None.
    ROLLBACK [WORK] TO SAVEPOINT keeps it, and so do ALTER SESSION and ALTER SYSTEM, which
    Oracle does not commit for (SQL Language Reference, "Types of SQL Statements"). COMMIT
    [WORK] FORCE 'id' and ROLLBACK [WORK] FORCE 'id' end the in-doubt distributed transaction
    the text names, not the current one: "A ROLLBACK statement with a FORCE clause rolls back
    only the specified transaction. Such a statement does not affect your current
    transaction" (SQL Reference 9.2, ROLLBACK); for COMMIT FORCE and ROLLBACK FORCE alike,
    FORCE commits or rolls back only the transaction it names and so leaves the current one
    alone (Pro*C/C++ Programmer's Guide 12.1, "Handling Distributed Transactions"; the page
    found is the Japanese edition, translated here). DBMS_TRANSACTION's COMMIT_FORCE and
    ROLLBACK_FORCE are left out of COMMITTING_CALLS for the same reason."""
    if not words or words[0] not in ENDS_TRANSACTION:
        return None
    first, rest = words[0], words[1:]
    if rest[:1] == ["work"]:
        rest = rest[1:]
    if first == "rollback" and rest[:1] == ["to"]:
        return None
    if first in ("commit", "rollback") and rest[:1] == ["force"]:
        return None
    if first == "alter" and rest[:1] in (["session"], ["system"]):
        return None
    return first.upper() if first in ("commit", "rollback") else f"DDL ({first.upper()})"


# A string literal's token kinds: '...', N'...', U'...', q'[...]', nq'[...]' (their text is
# the string's value)
_LITERALS = frozenset(
    {
        TokenType.STRING,
        TokenType.NATIONAL_STRING,
        TokenType.UNICODE_STRING,
        TokenType.RAW_STRING,
        TokenType.NATIONAL_RAW_STRING,
    }
)


def _literal_at(tokens: tuple[Token, ...], index: int) -> str | None:
    """The text of the string literal at `index` when it is the whole argument, not the start
    of a concatenation (`'drop table ' || l_name`): the SQL that EXECUTE IMMEDIATE or
    DBMS_SQL.PARSE runs; None when it is not such a literal."""
    if index >= len(tokens) or tokens[index].token_type not in _LITERALS:
        return None
    if index + 1 < len(tokens) and tokens[index + 1].text == "||":
        return None
    return tokens[index].text


def _dynamic_effects(text: str) -> tuple[str | None, str | None]:
    """What the SQL text that EXECUTE IMMEDIATE or DBMS_SQL.PARSE runs does to the transaction:
    (how it ends it, or None; a DBMS_SQL.PARSE of a text pellc cannot read in it, or None)."""
    try:
        tokens = sqltext.tokenize(text)
    except sqltext.SqlTextError:
        return _ends_transaction(text.lower().split()), None
    if not tokens:
        return None, None
    if tokens[0].text.lower() in ("begin", "declare"):
        return _block_effects(tokens)
    if tokens[0].text.lower() == "call" and len(tokens) > 1:
        # CALL runs one routine (SQL Language Reference, CALL): read as the block that calls it
        body = text[tokens[1].start :].rstrip().rstrip(";")
        return _dynamic_effects(f"begin {body}; end;")
    return _ends_transaction([token.text.lower() for token in tokens]), None


def _dotted_name(tokens: tuple[Token, ...], index: int) -> tuple[str, ...]:
    """The parts of the dotted name that starts at `index` (`pkg.proc`, `schema.pkg.proc`)."""
    parts = [tokens[index].text]
    index += 1
    while (
        index + 1 < len(tokens)
        and tokens[index].token_type == TokenType.DOT
        and tokens[index + 1].token_type in _NAMES
    ):
        parts.append(tokens[index + 1].text)
        index += 2
    return tuple(parts)


def _arguments(tokens: tuple[Token, ...], index: int) -> list[tuple[Token, ...]]:
    """The arguments of the call whose `(` is at `index`, each as its tokens (none when there
    is no `(`)."""
    if index >= len(tokens) or tokens[index].token_type != TokenType.L_PAREN:
        return []
    arguments: list[tuple[Token, ...]] = []
    depth, start = 0, index + 1
    for position in range(index, len(tokens)):
        kind = tokens[position].token_type
        if kind == TokenType.L_PAREN:
            depth += 1
        elif kind == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                arguments.append(tokens[start:position])
                break
        elif kind == TokenType.COMMA and depth == 1:
            arguments.append(tokens[start:position])
            start = position + 1
    return arguments


def _parse_statement(arguments: list[tuple[Token, ...]]) -> tuple[Token, ...] | None:
    """DBMS_SQL.PARSE's `statement` argument, by name (`statement => ...`) or position."""
    positional = []
    for argument in arguments:
        if len(argument) < 2 or argument[1].text != "=>":
            positional.append(argument)
        elif argument[0].text.lower() == "statement":
            return argument[2:]
    return positional[1] if len(positional) > 1 else None


PARSE = ("dbms_sql", "parse")  # runs DDL when it parses it (see `_parse_effects`)


def _parse_effects(statement: str | None, call: str) -> tuple[str | None, str | None]:
    """DBMS_SQL.PARSE of `statement` (its literal text; None: not a literal): "DDL statements
    are run immediately when parsed" (Supplied PL/SQL Packages and Types Reference 9i,
    DBMS_SQL, PARSE Procedure), and DDL commits. (how it ends the transaction, or None; the
    risk of a text pellc cannot read, or None)."""
    if statement is None:
        return None, f"`{call}` of a text pellc cannot read"
    what, risk = _dynamic_effects(statement)
    return (f"`{call}` of {what}" if what else None), risk


# What a PL/SQL statement may follow: BEGIN, THEN, ELSE, LOOP, a `;`, or a label's `>>`
_BEFORE_STATEMENT = frozenset({"begin", "then", "else", "loop", ";", ">>"})
# What may follow the COMMIT or ROLLBACK word of a statement: COMMIT [WORK] [COMMENT string |
# WRITE ... | FORCE ...] ; and ROLLBACK [WORK] [TO [SAVEPOINT] name | FORCE string] ; (SQL
# Language Reference, COMMIT and ROLLBACK).
_AFTER_COMMIT_WORD = frozenset({";", "work", "comment", "write", "force", "to"})


def _transaction_statement(tokens: tuple[Token, ...], words: list[str], index: int) -> bool:
    """Is the COMMIT or ROLLBACK word at `index` the start of a statement, not a name: a column
    or field after a dot (`b.commit`), a name it begins (`commit.x`, `commit := 1`), or a
    column where a statement cannot start (`select commit`, `then commit end` of a CASE)?
    Neither word is reserved (PL/SQL Table D-1, Oracle SQL Reserved Words: pell/naming.py)."""
    before = words[index - 1] if index else ";"
    if index >= 2 and words[index - 2 : index] == [">", ">"]:
        before = ">>"  # `<<label>> commit;`
    after = words[index + 1] if index + 1 < len(words) else ";"
    return (
        tokens[index].token_type == TokenType.VAR
        and before in _BEFORE_STATEMENT
        and after in _AFTER_COMMIT_WORD
    )


def _block_effects(tokens: tuple[Token, ...]) -> tuple[str | None, str | None]:
    """How an anonymous PL/SQL block ends the transaction: a COMMIT or ROLLBACK in it, a call of
    an Oracle procedure that commits (COMMITTING_CALLS, `pkg.proc` or `schema.pkg.proc`, any
    case), or dynamic SQL that runs DDL (or that pellc cannot read, and so cannot clear); and,
    apart, a DBMS_SQL.PARSE of a text pellc cannot read, which may be DDL."""
    words = [token.text.lower() for token in tokens]
    risk: str | None = None
    for index, word in enumerate(words):
        if tokens[index].token_type not in _NAMES:
            continue  # a string's text is no statement: put_line('commit')
        after_dot = index > 0 and tokens[index - 1].token_type == TokenType.DOT
        if word in ("commit", "rollback") and _transaction_statement(tokens, words, index):
            what = _ends_transaction(words[index:])
            if what is not None:
                return f"{what} in a PL/SQL block", risk
        elif word == "execute" and not after_dot and words[index + 1 : index + 2] == ["immediate"]:
            literal = _literal_at(tokens, index + 2)
            if literal is None:
                return f"EXECUTE IMMEDIATE of {UNREADABLE}", risk
            what, inner = _dynamic_effects(literal)
            if what is not None:
                return f"EXECUTE IMMEDIATE of {what}", risk
            risk = risk or inner
        elif not after_dot:
            written = _dotted_name(tokens, index)
            path = written[1:] if len(written) == 3 else written  # schema.package.procedure
            name = ".".join(written)
            why = committing_call(path)
            if why is not None:
                return f"`{name}` in a PL/SQL block ({why})", risk
            if tuple(part.lower() for part in path) == PARSE:
                arguments = _arguments(tokens, index + 2 * len(written) - 1)
                statement = _parse_statement(arguments)
                literal = _literal_at(statement, 0) if statement and len(statement) == 1 else None
                what, inner = _parse_effects(literal, name)
                if what is not None:
                    return f"{what} in a PL/SQL block", risk
                risk = risk or (f"{inner} in a PL/SQL block" if inner else None)
    return None, risk


_NAMES = frozenset({TokenType.VAR, TokenType.IDENTIFIER})  # a word or a "quoted" name
UNREADABLE = "SQL pellc cannot read (it may be DDL, which commits)"


def _block_calls(
    block: ast.SqlBlock,
    tokens: tuple[Token, ...],
    statements: list[tuple[int, int]],
    own: frozenset[str],
    names: _Names,
) -> list[Effect]:
    """The calls in the PL/SQL of a PL/SQL block, outside its SQL statements (`statements`,
    whose calls are SQL calls): a dotted name before `(` or `;` (`pkg.proc(...)`,
    `schema.pkg.proc;`), and a name of the module's own fns (`own`, by PL/SQL name) before
    `(` or `;`: the block runs inside the package's fn, where PL/SQL finds the package's
    own subprograms by their bare names, ahead of STANDARD's (PL/SQL Language Reference,
    "PL/SQL Name Resolution"; PLW-05004). Not a name the block declares (a local, a record
    whose field it sets, a label: `_Names.local`). Each once, as `plsql-call` effects, which
    the call graph resolves to a `@stub` module's fn or to a project fn by its PL/SQL name."""
    if tokens[0].text.lower() not in ("begin", "declare"):
        return []
    found: dict[tuple[str, ...], Effect] = {}
    skips = iter(statements)
    skip = next(skips, None)
    index = 0
    while index < len(tokens):
        if skip is not None and index == skip[0]:
            index = skip[1]
            skip = next(skips, None)
            continue
        token = tokens[index]
        index += 1
        if token.token_type not in _NAMES or (
            index > 1 and tokens[index - 2].token_type == TokenType.DOT
        ):
            continue
        written = _dotted_name(tokens, index - 1)
        after = index + 2 * len(written) - 2
        if after >= len(tokens) or tokens[after].token_type not in (
            TokenType.L_PAREN,
            TokenType.SEMICOLON,
        ):
            continue
        parts = tuple(
            _sql_name(tokens[index - 1 + 2 * i]) or written[i] for i in range(len(written))
        )
        if parts[0] in names.local:
            continue
        if len(written) in (2, 3) or (len(written) == 1 and parts[0] in own):
            what = f"`{'.'.join(written)}` in a PL/SQL block"
            found.setdefault(parts, Effect("plsql-call", block.span, what, parts))
    return list(found.values())


def _sql_effect(block: ast.SqlBlock, tokens: tuple[Token, ...]) -> Effect | None:
    first = tokens[0].text.lower()
    if first not in ENDS_TRANSACTION and first not in ("begin", "declare"):
        return None  # most statements (SELECT, DML): no need to lowercase every word
    if first not in ("begin", "declare"):
        what = _ends_transaction([token.text.lower() for token in tokens])
        return Effect("commit", block.span, what) if what is not None else None
    what, risk = _block_effects(tokens)
    if what is not None:
        return Effect("commit", block.span, what)
    return Effect("parse", block.span, risk) if risk is not None else None


def call_effect(call: ast.Call) -> Effect:
    """A Pell call's effect: a commit when it calls an Oracle procedure that commits (or
    DBMS_SQL.PARSE of literal DDL); `parse` for DBMS_SQL.PARSE of a text pellc cannot read;
    else a call, for the call graph to resolve."""
    path, written = call.callee.path, call.callee.text
    why = committing_call(path)
    if why is not None:
        return Effect("commit", call.span, f"`{written}` ({why})")
    if tuple(part.lower() for part in path) == PARSE:
        named = [k.value for k in call.keywords if k.name.lower() == "statement"]
        statement = named[0] if named else call.args[1] if len(call.args) > 1 else None
        literal = None
        if isinstance(statement, ast.StringLit) and all(type(p) is str for p in statement.parts):
            literal = "".join(str(p) for p in statement.parts)  # no `{...}` in it
        what, risk = _parse_effects(literal, written)
        if what is not None:
            return Effect("commit", call.span, what)
        if risk is not None:
            return Effect("parse", call.span, risk)
    return Effect("call", call.span, f"`{written}`", path)


EXEC_DYN = "exec_dyn"  # pell.checker.dynamic_sql.NAME (which imports nothing of this module)


def exec_dyn_text(call: ast.Call) -> tuple[str | None, bool]:
    """The SQL text an `exec_dyn(...)` runs as pellc reads it (pell.checker.dynamic_sql: a
    stand-in for each name or literal spliced in), None when it is no string literal or has a
    statement spliced in; and whether a name is spliced in."""
    text = call.args[0] if len(call.args) == 1 else None
    if not isinstance(text, ast.StringLit):
        return None, False
    readable, kinds = dynamic_sql.readable_text(text.parts)
    if "statement" in kinds:
        return None, False
    # a literal spliced in is read as the bind it stands for: a block's EXECUTE IMMEDIATE of
    # it, or a committing call given it, runs what pellc cannot read (as DynamicSql.readable)
    readable = readable.replace(f"'{dynamic_sql.LITERAL_STAND_IN}'", " :pell_literal ")
    return readable, "name" in kinds


def exec_dyn_effects(text: str | None, names: bool = False) -> tuple[str | None, str | None]:
    """What an `exec_dyn` of `text` (None: a text pellc cannot read all of; `names`: with names
    spliced in) does to the transaction, as EXECUTE IMMEDIATE of the same text in a PL/SQL
    block: (how it ends it, or None; the risk of a DBMS_SQL.PARSE in it of a text pellc
    cannot read, or None). A name spliced in may make any statement of it, DDL too, and DDL
    commits; but not of a query, as the first word says (a name spliced in is only a name):
    a query cannot commit, "ORA-14552: cannot perform a DDL, commit or rollback inside a
    query or DML" (Database Error Messages), so it is a read."""
    if text is not None:
        try:
            tokens = sqltext.tokenize(text)
        except sqltext.SqlTextError:
            tokens = ()
        if tokens and tokens[0].text.lower() in ("select", "with"):
            return None, None
    if text is None or names:
        return f"`{EXEC_DYN}` of {UNREADABLE}", None
    what, risk = _dynamic_effects(text)
    return (f"`{EXEC_DYN}` of {what}" if what else None), risk


def _exec_dyn_effect(call: ast.Call) -> Effect | None:
    what, risk = exec_dyn_effects(*exec_dyn_text(call))
    if what is not None:
        return Effect("commit", call.span, what)
    return Effect("parse", call.span, risk) if risk is not None else None


def _exec_dyn_calls(call: ast.Call) -> list[Effect]:
    """The routines a PL/SQL block (or CALL) that `exec_dyn` runs calls by a dotted name
    (`pkg.proc(...)`), as `plsql-call` effects at the call, which the call graph resolves as
    it resolves a `sql! { begin ... end; }` block's: to a project fn by its PL/SQL name, or
    a `@stub` module's. The block is an anonymous block of its own, compiled when it runs
    (PL/SQL Language Reference, "Native Dynamic SQL"), outside the package: a bare name is
    none of the module's fns, so only dotted names are read."""
    text, _ = exec_dyn_text(call)
    if text is None:
        return []
    try:
        tokens = sqltext.tokenize(text)
        if len(tokens) > 1 and tokens[0].text.lower() == "call":
            # CALL runs one routine (SQL Language Reference, CALL): the block that calls it
            text = f"begin {text[tokens[1].start :].rstrip().rstrip(';')}; end;"
            tokens = sqltext.tokenize(text)
    except sqltext.SqlTextError:
        return []
    if not tokens or tokens[0].text.lower() not in ("begin", "declare"):
        return []
    block = ast.SqlBlock(text, 0, 0, span=call.span)
    return _block_calls(block, tokens, _sql_statements(tokens), frozenset(), _Names(tokens))


def ends_transaction(block: ast.SqlBlock) -> str | None:
    """How a `sql! { }` block ends the transaction (`COMMIT`, `DDL (TRUNCATE)`, `EXECUTE
    IMMEDIATE of ...`), or None: what the retry checks and the verifier's model both read."""
    tokens = tokens_of(block)
    effect = _sql_effect(block, tokens) if tokens else None
    return effect.what if effect is not None and effect.kind == "commit" else None


def _walk_body(
    fn: ast.Fn,
    not_found: dict[int, tuple[str, tuple[tuple[str, str | None], ...]]],
    own: tuple[frozenset[str], frozenset[str]],
) -> tuple[list[Effect], dict[str, ast.Span]]:
    """One pass over a fn's body and its `finally` (which runs on every way out: what it
    commits or calls, the fn does): commits, `transaction { }` blocks, calls, PL/SQL blocks
    and the Pell fns SQL statements call, in source order, each with the innermost
    transaction block around it; and the Pell errors it raises itself (`Err(E ...)`, or
    `.one()?` mapped to E), each where it is first raised. `own`: the module's fns a bare
    name calls, in PL/SQL and in SQL (_own_names)."""
    own_plsql, own_sql = own
    effects: list[Effect] = []
    raised: dict[str, ast.Span] = {}
    blocks: list[ast.Span] = []
    writes = False  # a DML statement: then calls may run inside a transaction it opened
    calls: list[tuple[int, ast.Call]] = []  # each call's effect, by its index in `effects`
    bodies = (fn.body,) if fn.finally_body is None else (fn.body, fn.finally_body)
    for node in (node for body in bodies for node in ast.walk(body)):
        # most nodes are none of these: one type() lookup, not five isinstance calls (node
        # classes are not subclassed)
        kind = type(node)
        if kind not in _FACT_NODES:
            continue
        if isinstance(node, ast.Transaction):
            effects.append(Effect("transaction", node.span, "a `transaction { }` block"))
            blocks.append(node.span)
        elif isinstance(node, ast.SqlBlock):
            tokens = tokens_of(node)
            effect = _sql_effect(node, tokens) if tokens else None
            if effect is not None:
                effects.append(effect)
            first = tokens[0].text.lower() if tokens else ""
            if first in ("begin", "declare"):
                if effect is None:
                    effects.append(Effect("plsql", node.span, "a PL/SQL block"))
                # its SQL statements call from SQL; the rest of it is PL/SQL
                names = _Names(tokens)
                statements = _sql_statements(tokens)
                for start, end in statements:
                    effects += _sql_calls(node, tokens[start:end], own_sql, names)
                if effect is None or effect.kind != "commit":
                    effects += _block_calls(node, tokens, statements, own_plsql, names)
            elif effect is None and first in _SQL_STATEMENTS:
                writes = writes or first in DML
                effects += _sql_calls(node, tokens, own_sql, _Names(tokens))
        elif isinstance(node, ast.Call):
            if node.callee.path == (EXEC_DYN,) and EXEC_DYN not in own_plsql:
                dynamic = _exec_dyn_effect(node)
                if dynamic is not None:
                    effects.append(dynamic)
                if dynamic is None or dynamic.kind != "commit":
                    effects += _exec_dyn_calls(node)
                continue
            effect = call_effect(node)
            if effect.kind == "call":
                calls.append((len(effects), node))
            effects.append(effect)
        elif isinstance(node, ast.Wrap) and node.kind == "Err" and node.value is not None:
            value = node.value
            if isinstance(value, ast.RecordLit):
                raised.setdefault(value.type_name, node.span)
            elif isinstance(value, ast.Name):
                raised.setdefault(value.path[0], node.span)
        elif isinstance(node, ast.Propagate) and id(node) in not_found:
            raised.setdefault(not_found[id(node)][0], node.span)
    if writes and calls:  # find the DML each call certainly follows
        opened = _openers(fn)
        for index, call in calls:
            if id(call) in opened:
                effects[index] = records.replace(effects[index], opened_by=opened[id(call)])
    if blocks:  # rare: find the innermost block around each effect (spans nest)
        effects = [
            records.replace(effect, in_transaction=_innermost(effect.span, blocks))
            for effect in effects
        ]
    return effects, raised


_FACT_NODES = frozenset({ast.Transaction, ast.SqlBlock, ast.Call, ast.Wrap, ast.Propagate})


def _dml_statement(stmt: ast.Node) -> bool:
    """Is `stmt` a DML statement: `sql! { insert ... }`, alone or under `.returning()`,
    `.one()` and `?`? (Pell has no way to catch its error: when it fails, nothing after it in
    the fn body runs.)"""
    if isinstance(stmt, ast.ExprStmt):
        expr: ast.Node | None = stmt.expr
    elif isinstance(stmt, (ast.Let, ast.Assign)):
        expr = stmt.value
    else:
        return False
    while isinstance(expr, (ast.MethodCall, ast.Propagate)):
        expr = expr.target if isinstance(expr, ast.MethodCall) else expr.operand
    if not isinstance(expr, ast.SqlBlock):
        return False
    tokens = tokens_of(expr)
    return bool(tokens) and tokens[0].text.lower() in DML


def _openers(fn: ast.Fn) -> dict[int, ast.Span]:
    """id(call) -> the latest DML statement of `fn` that runs before the call on every path
    to it: one earlier in the same block or in a block around it. A `finally` runs after the
    body on every way out, error paths too: there, only the body's DML that every normal exit
    passes counts (a top-level statement with no `return` before it), so a call of the
    `finally` follows it whenever the fn would return normally."""
    found: dict[int, ast.Span] = {}
    stack: list[tuple[ast.Node, ast.Span | None]] = [(fn.body, None)]
    if fn.finally_body is not None:
        exit_dml = None
        for stmt in fn.body.stmts:
            if _dml_statement(stmt):
                exit_dml = stmt.span
            if any(isinstance(node, ast.Return) for node in ast.walk(stmt)):
                break
        stack.append((fn.finally_body, exit_dml))
    while stack:  # no recursion: a body may nest deeper than Python's stack
        node, opened = stack.pop()
        if type(node) is ast.Block:
            for stmt in node.stmts:
                stack.append((stmt, opened))
                if _dml_statement(stmt):
                    opened = stmt.span
            continue
        if opened is not None and type(node) is ast.Call:
            found[id(node)] = opened
        stack.extend((child, opened) for child in ast.children(node))
    return found


def _sql_name(token: Token) -> str | None:
    """A name in SQL text as Oracle resolves it: a word in lower case; a quoted identifier
    only when it is written in upper case (`"PRICE"` is `price`); None for anything else."""
    if token.token_type == TokenType.VAR:
        return token.text.lower()
    if token.token_type == TokenType.IDENTIFIER and token.text == token.text.upper():
        return token.text.lower()
    return None


# Words Oracle SQL writes right before `(` where it calls nothing: there, a module's fn of the
# same name is not called. Each row: where the word stands in its syntax, and where the SQL
# Language Reference (19c, 23ai) has it. Where: None, wherever it is written (a condition,
# which SQL takes for the condition as it takes a built-in's name for the built-in);
# _IN_PATTERN, inside MATCH_RECOGNIZE ( ... ); or the tokens that come right before it in
# its clause: "name" (a table, an alias, or a word of the clause: any name that is no
# reserved word), ")", "(", ",", "string" (a literal), or a keyword. Anywhere else the word
# may well be a fn's name: `select sample(3) from dual` calls `sample`. No reserved word
# needs a row: no fn is named one (pell.naming prefixes them).
_IN_PATTERN: frozenset[str] = frozenset({"MATCH_RECOGNIZE ( ... )"})
_AFTER_ITEM = frozenset({")", "name"})  # a table reference, a call's `)` or a clause's word
_TYPE_AFTER = frozenset({"as", "returning", "name"})  # CAST ... AS, RETURNING, a column's
_SAMPLE = "SELECT, sample_clause: SAMPLE [BLOCK] (sample_percent) [SEED (seed_value)]"
_PIVOT = (
    "SELECT, pivot_clause: PIVOT [XML] (...); unpivot_clause: UNPIVOT [{INCLUDE | EXCLUDE} "
    "NULLS] (...)"
)
_PATTERN = "SELECT, row_pattern_clause: MATCH_RECOGNIZE (... PATTERN (row_pattern) ...)"
_NAVIGATION = (
    "SELECT, row_pattern_clause: the row pattern navigation operations PREV, NEXT, FIRST and "
    "LAST and the functions CLASSIFIER() and MATCH_NUMBER() of its MEASURES and DEFINE, "
    "PERMUTE (...) in its PATTERN"
)
_MODEL = (
    "SELECT, model_clause: ... MEASURES (...) ... RULES [UPDATE | UPSERT [ALL]] [{AUTOMATIC | "
    "SEQUENTIAL} ORDER] [ITERATE (number) [UNTIL (condition)]] (...)"
)
_INTERVAL = (
    "Data Types: INTERVAL YEAR [(year_precision)] TO MONTH, INTERVAL DAY [(day_precision)] TO "
    "SECOND [(fractional_seconds_precision)]"
)
_TYPES = (
    "Data Types: NCHAR [(size)], NVARCHAR2 (size), UROWID [(size)], written after AS (CAST, "
    "TREAT), RETURNING, or a column's name (JSON_TABLE, XMLTABLE)"
)
SQL_SYNTAX_BEFORE_PAREN: dict[str, tuple[frozenset[str] | None, str]] = {
    "regexp_like": (None, "Conditions, Pattern-matching Conditions: REGEXP_LIKE (...)"),
    "json_exists": (None, "Conditions, SQL/JSON Conditions: JSON_EXISTS (...)"),
    "json_textcontains": (None, "Conditions, SQL/JSON Conditions: JSON_TEXTCONTAINS (...)"),
    "json_equal": (None, "Conditions, SQL/JSON Conditions: JSON_EQUAL (expr, expr)"),
    "equals_path": (None, "Conditions, XML Conditions: EQUALS_PATH (column, path_string ...)"),
    "under_path": (None, "Conditions, XML Conditions: UNDER_PATH (column, ...)"),
    "over": (
        _AFTER_ITEM,
        "Analytic Functions: analytic_function([arguments]) OVER (analytic_clause), also after "
        "IGNORE | RESPECT NULLS (FIRST_VALUE, LAG, NTH_VALUE ...)",
    ),
    "keep": (
        frozenset({")"}),
        "FIRST and LAST: aggregate_function KEEP (DENSE_RANK {FIRST | LAST} ORDER BY ...)",
    ),
    "sample": (_AFTER_ITEM, _SAMPLE),
    "block": (frozenset({"sample"}), _SAMPLE),
    "seed": (frozenset({")"}), _SAMPLE),
    "partition": (
        frozenset({"name"}),
        "SELECT, partition_extension_clause: PARTITION (partition) | PARTITION FOR (...)",
    ),
    "subpartition": (
        frozenset({"name"}),
        "SELECT, partition_extension_clause: SUBPARTITION (subpartition) | ...",
    ),
    "pivot": (_AFTER_ITEM, _PIVOT),
    "xml": (frozenset({"pivot"}), _PIVOT),
    "unpivot": (_AFTER_ITEM, _PIVOT),
    "nulls": (frozenset({"include", "exclude"}), _PIVOT),
    "match_recognize": (_AFTER_ITEM, _PATTERN),
    "pattern": (frozenset({")", "name", "row"}), _PATTERN),
    **{
        word: (_IN_PATTERN, _NAVIGATION)
        for word in ("prev", "next", "first", "last", "classifier", "match_number", "permute")
    },
    **{
        word: (
            frozenset({"group by", ","}),
            "SELECT, group_by_clause: rollup_cube_clause {ROLLUP | CUBE} (grouping_expression_list)",
        )
        for word in ("rollup", "cube")
    },
    "measures": (_AFTER_ITEM, _MODEL),
    "rules": (frozenset({")"}), _MODEL),
    "upsert": (frozenset({"rules"}), _MODEL),
    "iterate": (frozenset({"rules", "update", "upsert", "all", "order"}), _MODEL),
    "until": (frozenset({")"}), _MODEL),
    "scn": (
        frozenset({"of", "between"}),
        "SELECT, flashback_query_clause: VERSIONS BETWEEN {SCN | TIMESTAMP} ... | AS OF {SCN | "
        "TIMESTAMP} expr",
    ),
    "timestamp": (
        frozenset({"of", "between", *_TYPE_AFTER}),
        "SELECT, flashback_query_clause (AS OF TIMESTAMP); Data Types: TIMESTAMP "
        "[(fractional_seconds_precision)]",
    ),
    "year": (frozenset({"interval"}), _INTERVAL),
    "day": (frozenset({"interval"}), _INTERVAL),
    "second": (frozenset({"to"}), _INTERVAL),
    **{word: (_TYPE_AFTER, _TYPES) for word in ("nchar", "nvarchar2", "urowid")},
    "using": (_AFTER_ITEM, "MERGE: USING {table | view | subquery}; join_clause: USING (column)"),
    "value": (frozenset({")", "name", "string"}), "JSON_OBJECT: [KEY] expr VALUE expr"),
    "multiset": (frozenset({"("}), "CAST: CAST({expr | MULTISET (subquery)} AS type_name)"),
}


def _follows(before: Token | None, after: frozenset[str]) -> bool:
    """Is `before`, the token before a word, one that `after` (a row of
    SQL_SYNTAX_BEFORE_PAREN) says the word follows in its syntax?"""
    if before is None:
        return False
    kind = before.token_type
    if kind == TokenType.R_PAREN:
        return ")" in after
    if kind in _LITERALS:
        return "string" in after
    word = before.text.lower()
    return word in after or (
        "name" in after and kind in _NAMES and word not in naming.ORACLE_RESERVED
    )


def _is_syntax(name: str, before: Token | None, in_pattern: bool) -> bool:
    """Is `name`, before `(`, a word of SQL's own syntax where it is written?"""
    row = SQL_SYNTAX_BEFORE_PAREN.get(name)
    if row is None:
        return False
    after = row[0]
    if after is None:
        return True
    if after is _IN_PATTERN:
        return in_pattern
    return _follows(before, after)


def _closing(tokens: tuple[Token, ...], index: int) -> int | None:
    """The index of the `)` that closes the `(` at `index`."""
    depth = 0
    for position in range(index, len(tokens)):
        kind = tokens[position].token_type
        if kind == TokenType.L_PAREN:
            depth += 1
        elif kind == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return position
    return None


def _names_a_query(tokens: tuple[Token, ...], index: int) -> bool:
    """Is the `(` at `index` a WITH query's column list, `query_name (c_alias, ...) AS
    (subquery)` (SQL Language Reference, SELECT, subquery_factoring_clause)? A call's `)` is
    never followed by `AS (`."""
    close = _closing(tokens, index)
    return (
        close is not None
        and close + 2 < len(tokens)
        and tokens[close + 1].token_type == TokenType.ALIAS
        and tokens[close + 2].token_type == TokenType.L_PAREN
    )


# Words after which PL/SQL names what it declares: CURSOR c, TYPE t, SUBTYPE t, FUNCTION f
# and PROCEDURE p (a WITH clause's functions too: SQL Language Reference, SELECT,
# plsql_declarations), and the index of FOR i IN and FORALL i IN, which the loop declares
_DECLARING = frozenset({"cursor", "type", "subtype", "function", "procedure", "for", "forall"})
# What comes before a declaration of a variable, constant or exception (`v number;`, `e
# exception;`, after DECLARE, a `;`, or a subprogram's IS or AS): a name follows the declared
# one there, never in a statement of the body (`x := 1`, `p(1)`, `pkg.p;`), but after a
# keyword (`raise e`, `open c`), which no fn is named
_BEFORE_DECLARATION = frozenset({"declare", ";", "is", "as"})


def _declared_names(tokens: tuple[Token, ...]) -> frozenset[str]:
    """The names a PL/SQL block (or a WITH clause's functions) declares, read loosely: a name
    after CURSOR, TYPE, FUNCTION ... or FOR (see _DECLARING), a label's `<<name>>`, and a name
    that starts a declaration and is followed by another name (its type, CONSTANT,
    EXCEPTION). A word taken for one by mistake is a keyword, never a fn's name (pell.naming
    prefixes those), or a column, which no call needs."""
    found: set[str] = set()
    for index, token in enumerate(tokens):
        name = _sql_name(token)
        if name is None or not index:
            continue
        before = tokens[index - 1].text.lower()
        label = before == "<" and index >= 2 and tokens[index - 2].text == "<"
        starts = (
            before in _BEFORE_DECLARATION
            and index + 1 < len(tokens)
            and _sql_name(tokens[index + 1]) is not None
        )
        if before in _DECLARING or label or starts:
            found.add(name)
    return frozenset(found)


class _Names:
    """The names of a SQL text (a statement, or a PL/SQL block with its SQL statements) that
    decide what a name in it means; each set found when first asked."""

    def __init__(self, tokens: tuple[Token, ...]) -> None:
        self.tokens = tokens
        self._local: frozenset[str] | None = None
        self._standalone: frozenset[str] | None = None

    @property
    def local(self) -> frozenset[str]:
        """What the text declares (_declared_names): PL/SQL looks a name up in the block
        that declares it before the package around it (PL/SQL Language Reference, "Scope
        and Visibility of Identifiers"), so `v(i)` of a local collection calls nothing."""
        if self._local is None:
            self._local = _declared_names(self.tokens)
        return self._local

    @property
    def standalone(self) -> frozenset[str]:
        """The names the text writes on their own, not before a dot (nor as a bind): every
        table and alias a statement names is one (`from data.orders o`, `update orders`,
        `(subquery) o`), and so is every variable a block declares (`r orders%rowtype`)."""
        if self._standalone is None:
            tokens = self.tokens
            self._standalone = frozenset(
                name
                for index, token in enumerate(tokens)
                if (name := _sql_name(token)) is not None
                and not (index and tokens[index - 1].token_type == TokenType.COLON)
                and not (index + 1 < len(tokens) and tokens[index + 1].token_type == TokenType.DOT)
            )
        return self._standalone


def _sql_calls(
    block: ast.SqlBlock, tokens: tuple[Token, ...], own: frozenset[str], names: _Names
) -> list[Effect]:
    """What a SQL statement (`tokens`: its own, in a PL/SQL block) calls that may be a Pell
    fn, each at the name in the text, as its lower-case parts: `price(:id)`, when `own` (this
    module's fns, by PL/SQL name, SQL built-ins left out) has it; `pricing.price(:id)` or
    `shop.pricing.price(:id)`, a package's fn, with the schema or not, of any module of the
    project (raw SQL needs no Pell import: `RetryGraph` resolves it).

    A name before `(` is a call (`sql-call`), but not: a word of SQL's own syntax where it
    stands (SQL_SYNTAX_BEFORE_PAREN: `sample (10)`, `over (`, `regexp_like(`), a WITH query's
    name before its column list (`with totals (id, n) as (`), a table (`insert into t (`),
    nor a name the text declares (_Names.local). Without `(`, a bare name is a column, as SQL
    resolves it first ("the names of database columns take precedence over the names of
    functions with no parameters", SQL Language Reference, "About User-Defined Functions",
    Name Precedence); so is a dotted one that a table or alias of the statement qualifies
    (`orders.total`, `o.total`: _Names.standalone). Any other dotted name without `(` calls
    the function it names when one has no parameters: "To access the new_sal function,
    enter: SELECT hr.new_sal FROM new_emps" (ibid.). Those are `sql-name` effects, calls of a
    project fn of that name that takes no parameter. A name after a dot or a colon (a bind)
    starts none."""
    found: list[Effect] = []
    tables: set[int] | None = None
    depth = 0
    patterns: list[int] = []  # the depths of the MATCH_RECOGNIZE ( ... ) around a token
    index = 0
    while index < len(tokens):
        token = tokens[index]
        before = tokens[index - 1] if index else None
        index += 1
        if token.token_type == TokenType.L_PAREN:
            depth += 1
            continue
        if token.token_type == TokenType.R_PAREN:
            if patterns and patterns[-1] == depth:
                patterns.pop()
            depth -= 1
            continue
        name = _sql_name(token)
        if name is None or (
            before is not None and before.token_type in (TokenType.DOT, TokenType.COLON)
        ):
            continue
        parts, last = [name], token
        while (
            index + 1 < len(tokens)
            and tokens[index].token_type == TokenType.DOT
            and (part := _sql_name(tokens[index + 1])) is not None
        ):
            parts.append(part)
            last = tokens[index + 1]
            index += 2
        called = index < len(tokens) and tokens[index].token_type == TokenType.L_PAREN
        if len(parts) == 1:
            if called and name == "match_recognize":
                patterns.append(depth + 1)
            if (
                not called
                or name not in own
                or name in names.local
                or _is_syntax(name, before, bool(patterns))
                or _names_a_query(tokens, index)
            ):
                continue
        elif len(parts) > 3 or parts[0] in names.local:
            continue
        elif not called and any(part in names.standalone for part in parts[:-1]):
            continue  # a column of a table or alias the statement names
        if tables is None:
            first = tokens[0].start
            text = block.text[first : tokens[-1].end + 1]
            tables = {first + offset for _, _, offset in sqltext.tables_named(text)}
        if any(token.start <= offset <= last.end for offset in tables):
            continue
        span = ast.Span(block.text_start + token.start, block.text_start + last.end + 1)
        written = block.text[token.start : last.end + 1]
        kind = "sql-call" if called else "sql-name"
        found.append(Effect(kind, span, f"`{written}`", tuple(parts)))
    return found


# Where PL/SQL starts a query inside a statement of its own: a cursor FOR loop's `IN (`, a
# cursor declaration's IS, `OPEN c FOR` (PL/SQL Language Reference, "Static SQL", "Cursor
# FOR LOOP Statement", "Explicit Cursor Declaration and Definition", "OPEN FOR Statement").
# A DML word, reserved in PL/SQL, starts a statement wherever it stands but after a dot
# (`v.delete`, a collection method): also the one FORALL runs ("FORALL Statement").
_QUERY_AFTER = frozenset({"(", "is", "for"})


def _sql_statements(tokens: tuple[Token, ...]) -> list[tuple[int, int]]:
    """The SQL statements of a PL/SQL block, as (first, end) token indexes, `end` past the
    statement: from its first word to the `;` that ends it, or the `)` around a cursor FOR
    loop's query. A subquery is part of its statement."""
    found: list[tuple[int, int]] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        word = token.text.lower()
        if word in _SQL_STATEMENTS and token.token_type != TokenType.IDENTIFIER:
            before = tokens[index - 1].text.lower() if index else ";"
            if index >= 2 and tokens[index - 2].text == ">" and before == ">":
                before = ">>"  # `<<label>> update ...`
            if (
                before in _BEFORE_STATEMENT
                or (word in ("select", "with") and before in _QUERY_AFTER)
                or (word in DML and before != ".")  # FORALL's DML follows its bounds
            ):
                end = _statement_end(tokens, index)
                found.append((index, end))
                index = end
                continue
        index += 1
    return found


def _statement_end(tokens: tuple[Token, ...], start: int) -> int:
    """Where the SQL statement that starts at `start` ends: its `;`, or the `)` that closes
    a parenthesis it is in."""
    depth = 0
    for index in range(start, len(tokens)):
        kind = tokens[index].token_type
        if kind == TokenType.L_PAREN:
            depth += 1
        elif kind == TokenType.R_PAREN:
            if depth == 0:
                return index
            depth -= 1
        elif kind == TokenType.SEMICOLON and depth == 0:
            return index
    return len(tokens)


def _own_names(checked: CheckedModule) -> tuple[frozenset[str], frozenset[str]]:
    """The module's fns by PL/SQL name (`pell.naming`): (those a bare name in its PL/SQL
    calls, all of them; those a bare name in its SQL calls: not one that is a SQL
    built-in's, which SQL calls instead, builtins.SQL_FUNCTIONS)."""
    from pell.checker.builtins import SQL_FUNCTIONS

    plsql = frozenset(naming.fn_name(name) for name in checked.fns)
    return plsql, plsql - SQL_FUNCTIONS


def sql_packages(modules: Iterable[ModuleFacts]) -> set[str]:
    """The packages the SQL statements and PL/SQL blocks of `modules` call a fn of (`pkg.f(`,
    `schema.pkg.f`, `pkg.proc;`), by package name (lower case): the project modules a build
    must join to resolve those calls, which need no Pell import."""
    return {
        effect.callee[-2].lower()
        for module in modules
        for fn in module.fns.values()
        for effect in fn.effects
        if effect.kind in ("sql-call", "sql-name", "plsql-call") and len(effect.callee) > 1
    }


def _innermost(span: ast.Span, blocks: list[ast.Span]) -> ast.Span | None:
    around = [b for b in blocks if b.start <= span.start and span.end <= b.end and b != span]
    return min(around, key=lambda b: b.end - b.start) if around else None


def tokens_of(block: ast.SqlBlock) -> tuple[Token, ...]:
    try:
        return sqltext.tokenize(block.text)
    except sqltext.SqlTextError:
        return ()


def module_facts(checked: CheckedModule) -> tuple[ModuleFacts, dict[str, dict[str, ast.Span]]]:
    """The module's facts, and the Pell errors each fn raises itself (for `retry-own-error`)."""
    fns = {}
    raised = {}
    own = _own_names(checked)
    rolled_back = auto_rollback_fns(checked.module)
    for name, fn in checked.fns.items():
        annotations = {a.name for a in fn.decl.annotations}
        effects, raised[name] = _walk_body(fn.decl, checked.analyses[name].not_found, own)
        fns[name] = FnFacts(
            name,
            fn.decl.name_span,
            fn.retry.scope if fn.retry is not None else None,
            fn.retry_annotation.span if fn.retry_annotation is not None else None,
            "autonomous" in annotations,
            tuple(effects),
            fn.retry.recover if fn.retry is not None else None,
            fn.retry.attempts if fn.retry is not None else 0,
            fn.decl.finally_body.span if fn.decl.finally_body is not None else None,
            len(fn.decl.params),
            "parallel" in annotations,
            name in rolled_back,
        )
    # the modules as resolved (`import std::b;` is the module `b`: imports.imported_path)
    imports = tuple(imported_path(i.path, checked.imports.index) for i in checked.module.imports)
    schema, package = naming.module_package(checked.module)
    plsql = (schema, package) if schema else (package,)
    objects = tuple(
        (name.rsplit(".", 1)[-1].lower(), info.decl.name_span)
        for info in checked.aggregates.values()
        for name in (info.function, info.impl_type, info.args_type, *info.collections.values())
        if name
    ) + tuple(
        (info.type.plsql.rsplit(".", 1)[-1].lower(), info.decl.span)
        for info in checked.objects.values()
    )
    # the calls each aggregate part makes (its own commits and DML are aggregate-dml in
    # pell.checker.aggregates; a call of this module's fn is refused there)
    aggregate_calls = tuple(
        (info.decl.name, part, effect)
        for info in checked.aggregates.values()
        for part, (part_fn, analysis) in info.parts.items()
        for effect in _walk_body(part_fn.decl, analysis.not_found, own)[0]
        if effect.kind == "call"
    )
    facts = ModuleFacts(
        checked.module.path,
        fns,
        imports,
        package=plsql,
        schema_objects=objects,
        aggregate_calls=aggregate_calls,
        schema_sequences=tuple(
            (item.name, item.span)
            for item in checked.module.items
            if isinstance(item, ast.Sequence) and "::" in item.name
        ),
    )
    return facts, raised


# ---- the call graph ----------------------------------------------------------


@record
class Commit:
    """How a fn ends the transaction: at `span` in its own body (a commit, or the call that
    leads to one), and where the commit itself is."""

    span: ast.Span
    origin: FnKey
    origin_span: ast.Span
    what: str


_Witness = TypeVar("_Witness")  # what a fn reached is known by (RetryGraph._spread)


class RetryGraph:
    """The fns of one or more modules, their calls resolved, and which of them commit."""

    def __init__(self, modules: Iterable[ModuleFacts]) -> None:
        self.modules = {m.name: m for m in modules}
        # module names as the index finds them, case-blind (`import Shop::Stock;` is shop.stock)
        self.folded = {name.lower(): m for name, m in self.modules.items()}
        # each module's package, by the name SQL text gives it (a clash of two is an error
        # of its own: the first, in the modules' order, is taken)
        self.packages: dict[tuple[str, ...], ModuleFacts] = {}
        for module in self.modules.values():
            if module.package:
                self.packages.setdefault(module.package, module)
        self._plsql_fns: dict[str, dict[str, str]] = {}
        self.calls: dict[FnKey, list[tuple[Effect, FnKey]]] = {}
        for module in self.modules.values():
            for fn in module.fns.values():
                calls = [
                    (effect, callee)
                    for effect in fn.effects
                    if effect.kind in ("call", "plsql-call")
                    and (callee := self.resolve(module.name, effect.callee, effect.kind))
                    is not None
                ]
                if fn.recover in module.fns and fn.retry_span is not None:
                    # Giving up calls `recover`: what it does, the retried fn does.
                    recover = Effect("call", fn.retry_span, f"`{fn.recover}`", (fn.recover,))
                    calls.append((recover, (module.name, fn.recover)))
                self.calls[(module.name, fn.name)] = calls
        # the Pell fns each fn's SQL statements call: no edges of the call graph (a fn a
        # query calls runs in the query, where `transaction-in-sql` checks it)
        self.sql_calls: dict[FnKey, list[tuple[Effect, FnKey]]] = {
            (module.name, fn.name): [
                (effect, callee)
                for effect in fn.effects
                if effect.kind in ("sql-call", "sql-name")
                and (callee := self._sql_fn(module, effect.callee, effect.kind == "sql-name"))
                is not None
            ]
            for module in self.modules.values()
            for fn in module.fns.values()
        }
        self.callers: dict[FnKey, list[tuple[FnKey, Effect]]] = {}
        for caller, calls in self.calls.items():
            for effect, callee in calls:
                self.callers.setdefault(callee, []).append((caller, effect))
        self.commits = self._commits()
        # fn -> an @autonomous fn it is or calls; fn -> every savepoint-retried fn it is or
        # calls, sorted (nested-retry names each one but the caller itself)
        self.autonomous = self._reaching(lambda fn: fn.autonomous)
        self.retried = self._all_reached(lambda fn: fn.retry_scope == "savepoint")
        # fn -> a fn it is or calls that runs DBMS_SQL.PARSE of a text pellc cannot read, in the
        # caller's transaction (an @autonomous fn's DDL commits its own)
        self.parses = self._reaching(
            lambda fn: not fn.autonomous and any(e.kind == "parse" for e in fn.effects),
            through_autonomous=False,
        )
        # fn -> a retried fn it is or calls, in the caller's transaction (not behind an
        # @autonomous fn, whose body is a transaction of its own)
        self.retried_in_transaction = self._reaching(
            lambda fn: fn.retry_scope is not None and not fn.autonomous, through_autonomous=False
        )
        self.refuses_open = self._refusing_open_transaction()

    def _reaching(
        self, is_target: Callable[[FnFacts], bool], through_autonomous: bool = True
    ) -> dict[FnKey, FnKey]:
        """Every fn that is a target or calls one, through any depth (through @autonomous
        callers only if `through_autonomous`): fn -> a target it reaches (the nearest, see
        `_spread`)."""
        return self._spread(
            {key: key for key in self.calls if is_target(self.fn(key))},
            lambda caller, _: through_autonomous or not self.fn(caller).autonomous,
            lambda target, _: target,
        )

    def _all_reached(self, is_target: Callable[[FnFacts], bool]) -> dict[FnKey, tuple[FnKey, ...]]:
        """Every fn that is a target or calls one, through any depth: fn -> all the targets it
        reaches, sorted by module and fn name."""
        found: dict[FnKey, set[FnKey]] = {}
        for target in self.calls:
            if not is_target(self.fn(target)):
                continue
            queue = [target]
            seen = {target}
            while queue:
                callee = queue.pop()
                found.setdefault(callee, set()).add(target)
                for caller, _ in self.callers.get(callee, []):
                    if caller not in seen:
                        seen.add(caller)
                        queue.append(caller)
        return {key: tuple(sorted(targets)) for key, targets in found.items()}

    def _spread(
        self,
        start: dict[FnKey, _Witness],
        may_join: Callable[[FnKey, Effect], bool],
        carry: Callable[[_Witness, Effect], _Witness],
    ) -> dict[FnKey, _Witness]:
        """`start`, and every fn that reaches one of its fns by calls `may_join` accepts: fn ->
        the witness of `start` carried back along the shortest chain of calls, through the
        first such call in the caller's body when chains are as short. Level by level, so the
        witness depends on the program, not on the order of its files or declarations."""
        found = dict(start)
        frontier = set(start)
        while frontier:
            callers = {
                caller
                for callee in frontier
                for caller, _ in self.callers.get(callee, [])
                if caller not in found
            }
            reached: dict[FnKey, _Witness] = {}
            for caller in callers:
                call = next(
                    (
                        (effect, callee)
                        for effect, callee in self.calls[caller]
                        if callee in found and may_join(caller, effect)
                    ),
                    None,
                )
                if call is not None:
                    reached[caller] = carry(found[call[1]], call[0])
            found.update(reached)
            frontier = set(reached)
        return found

    def may_end_transaction(self, module: str, effect: Effect) -> bool:
        """Whether `effect`, in a fn of `module`, may end the transaction: a commit, a
        `transaction { }` block, a call of a fn that commits, and what pellc cannot see into
        (a PL/SQL block, which may call a procedure that commits; a call of an Oracle package
        pellc ships no stub of)."""
        if effect.kind in ("commit", "transaction", "plsql", "parse"):
            return True
        if effect.kind != "call":
            return False
        callee = self.resolve(module, effect.callee)
        if callee is not None:
            return callee in self.commits
        from pell.checker.stubs import shipped_stub

        # a builtin (one name) commits nothing; a shipped stub's commits are "commit" effects
        return len(effect.callee) > 1 and not shipped_stub(effect.callee[0])

    def open_at(self, key: FnKey, call: Effect) -> bool:
        """Whether fn `key` makes `call` inside the transaction of its own DML (open once that
        DML changed a row): DML of the fn ran before it on every path (`Effect.opened_by`),
        and nothing that may end the transaction comes between them (the call's arguments,
        run before it, included)."""
        opened = call.opened_by
        if opened is None:
            return False
        return not any(
            self.may_end_transaction(key[0], effect)
            for effect in self.fn(key).effects
            if effect is not call
            and opened.end <= effect.span.start
            and effect.span.end <= call.span.end
        )

    def _refusing_open_transaction(self) -> dict[FnKey, FnKey]:
        """fn -> the transaction-scoped fn it reaches when called inside an open transaction,
        with that transaction still open: the fn itself, or one it calls with nothing that
        may end the transaction before the call (so it refuses to start: it raises
        pell_transaction_open). Not through an @autonomous fn, whose body starts with no
        transaction open, nor through another transaction-scoped fn."""
        return self._spread(
            {
                key: key
                for key in self.calls
                if self.fn(key).retry_scope == "transaction" and not self.fn(key).autonomous
            },
            lambda caller, call: not self.fn(caller).autonomous
            and not any(
                self.may_end_transaction(caller[0], effect)
                for effect in self.fn(caller).effects
                if effect is not call and effect.span.end <= call.span.end
            ),
            lambda target, _: target,
        )

    def fn(self, key: FnKey) -> FnFacts:
        return self.modules[key[0]].fns[key[1]]

    def resolve(self, module: str, path: tuple[str, ...], kind: str = "call") -> FnKey | None:
        """The fn a call in `module` names: a fn of its own, or `m::f` for a module it imports
        as `import ...::m;` (as the checker resolves it), or `a::b::f` for module `a.b`; for a
        `plsql-call`, a fn of a `@stub` module by its Oracle name, else a project fn by its
        PL/SQL name, as SQL finds one (`_sql_fn`)."""
        if kind == "plsql-call":
            return self._stub_fn(path) or self._sql_fn(
                self.modules[module], tuple(part.lower() for part in path)
            )
        if len(path) == 1:
            return (module, path[0]) if path[0] in self.modules[module].fns else None
        prefix = path[:-1]
        if len(prefix) == 1:
            imported = [i for i in self.modules[module].imports if i[-1] == prefix[0]]
            prefix = imported[0] if len(imported) == 1 else prefix
        target = self.modules.get(".".join(prefix)) or self.folded.get(".".join(prefix).lower())
        if target is not None and path[-1] in target.fns:
            return target.name, path[-1]
        return None

    def _sql_fn(
        self, caller: ModuleFacts, parts: tuple[str, ...], bare: bool = False
    ) -> FnKey | None:
        """The Pell fn a SQL statement of module `caller` names (PL/SQL names, lower case): `f`,
        its own; `pkg.f`, of its own package, else of the package `pkg` of its schema or of
        one with no schema; `schema.pkg.f`, of that package. SQL resolves the names of the
        package its PL/SQL runs in, and the schema's objects, with no Pell import. A name of
        no project package may name a `@stub` module's fn. `bare`: named without `()`, which
        calls only a fn with no parameters (SQL Language Reference, "About User-Defined
        Functions", Name Precedence)."""
        prefix = parts[:-1]
        target: ModuleFacts | None
        if not prefix or prefix == caller.package or prefix == caller.package[-1:]:
            target = caller
        elif len(prefix) == 1 and len(caller.package) == 2:
            target = self.packages.get((caller.package[0], *prefix)) or self.packages.get(prefix)
        else:
            target = self.packages.get(prefix)
        if target is None:
            return None if bare else self._stub_fn(parts)
        fns = self._plsql_fns.get(target.name)
        if fns is None:  # by PL/SQL name: `delete` is `fn_delete` there
            fns = self._plsql_fns[target.name] = {naming.fn_name(f): f for f in target.fns}
        name = fns.get(parts[-1])
        if name is None or (bare and target.fns[name].params):
            return None
        return target.name, name

    def _stub_fn(self, path: tuple[str, ...]) -> FnKey | None:
        """The stub fn a PL/SQL block's `pkg.proc` or `schema.pkg.proc` names (Oracle's names
        are case-blind: so is the match)."""
        for package in (path[:-1], path[1:-1]):
            target = self.folded.get(".".join(package).lower()) if package else None
            if target is not None and target.stub:
                name = path[-1].lower()
                return next(((target.name, f) for f in target.fns if f.lower() == name), None)
        return None

    def _commits(self) -> dict[FnKey, Commit]:
        """Every fn that ends its caller's transaction, directly or through calls. An
        @autonomous fn commits its own transaction, never its caller's."""
        found: dict[FnKey, Commit] = {}
        for key in self.calls:
            fn = self.fn(key)
            if fn.autonomous:
                continue
            if fn.retry_scope == "transaction" and fn.retry_span is not None:
                what = "a transaction-scoped @retry"
                found[key] = Commit(fn.retry_span, key, fn.retry_span, what)
                continue
            direct = next((e for e in fn.effects if e.kind in ("commit", "transaction")), None)
            if direct is not None:
                found[key] = Commit(direct.span, key, direct.span, direct.what)
        return self._spread(
            found,
            lambda caller, _: not self.fn(caller).autonomous,
            lambda origin, effect: Commit(
                effect.span, origin.origin, origin.origin_span, origin.what
            ),
        )

    def cycle_through(self, start: FnKey) -> list[tuple[Effect, FnKey]] | None:
        """A chain of calls from `start` back to itself, not through an @autonomous fn (whose
        body is a transaction of its own); None if there is none."""
        parents: dict[FnKey, tuple[FnKey, Effect]] = {}
        frontier = [start]
        while frontier:
            following = []
            for key in frontier:
                if key != start and self.fn(key).autonomous:
                    continue
                for effect, callee in self.calls[key]:
                    if callee == start:
                        chain = [(effect, callee)]
                        while key != start:
                            parent, via = parents[key]
                            chain.insert(0, (via, key))
                            key = parent
                        return chain
                    if callee not in parents:
                        parents[callee] = (key, effect)
                        following.append(callee)
            frontier = following
        return None
