"""Retried subprograms in the generated PL/SQL keep the caller's transaction safe (plain asserts).

Every example (`examples/*.pell`, one project) and every good case (`tests/cases/*.pell`, another
project) is compiled, the SQL is tokenized with parseora, and each package body is read into a
small statement tree: plain statements (everything up to `;` outside parentheses), IF / CASE
branches, loops, and BEGIN ... EXCEPTION ... END blocks. A subprogram is *retried* when its
declarations include `l_pell_attempt`; its retry loop is the first plain LOOP of its body, and the
*attempt* is the first BEGIN ... EXCEPTION ... END block in that loop. A `SAVEPOINT x;` at the top
of the loop makes the scope "savepoint"; without one the scope is "transaction".

The three rules, one check function each:

(a) `savepoint_violations`: a retry's savepoint name is used (`SAVEPOINT x`, `ROLLBACK TO x`) by no
    other subprogram of the project. Oracle erases an earlier savepoint of the same name, so a
    shared name lets one retried fn move another's savepoint.
(b) `handler_violations`: every RAISE (or RAISE_APPLICATION_ERROR) reachable in the attempt's
    exception handlers comes after the rollback of that scope on its own path (`ROLLBACK TO x` for
    savepoint scope, a full `ROLLBACK` for transaction scope); and there is a WHEN OTHERS, since
    an error no handler names leaves the attempt as if re-raised before any rollback.
(c) `attempt_violations`: nothing reachable from the attempt's body ends the transaction: no
    COMMIT, full ROLLBACK or DDL in it, nor in a project subprogram it calls (recursively; an
    autonomous-transaction callee is its own transaction), nor a call to an Oracle package
    documented to commit. Transaction scope may `COMMIT;` right before `RETURN ...;` or the
    `EXIT;` that leaves the retry loop.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache

import parseora
import pytest
from conftest import CASES, EXAMPLES

from pell import compile_source
from pell.diagnostics import render_all

# ---------------------------------------------------------------------------------------------
# Tokens


SKIPPED_KINDS = frozenset({"Whitespace", "LineComment", "BlockComment"})


@dataclass(frozen=True)
class Token:
    """One significant token; `line` is its line in the whole generated SQL file."""

    kind: str
    text: str
    line: int

    @property
    def keyword(self) -> str:
        """Upper-cased text of a word or punctuation; '' for strings and quoted identifiers."""
        return "" if self.kind in ("String", "QuotedIdent") else self.text.upper()

    @property
    def name(self) -> str:
        """The identifier as Oracle compares it (unquoted upper-cased); '' if not an identifier."""
        if self.kind == "Ident":
            return self.text.upper()
        if self.kind == "QuotedIdent":
            return self.text[1:-1]
        return ""


def tokenize(sql: str, first_line: int = 1) -> list[Token]:
    """parseora's tokens without whitespace and comments, lines counted from `first_line`."""
    return [
        Token(raw["kind"], raw["text"], raw["line"] + first_line - 1)
        for raw in parseora.tokenize(sql)
        if raw["kind"] not in SKIPPED_KINDS
    ]


# ---------------------------------------------------------------------------------------------
# The statement tree


@dataclass
class Stmt:
    """A plain statement: its tokens, the closing `;` included."""

    tokens: list[Token]

    @property
    def line(self) -> int:
        return self.tokens[0].line

    @property
    def head(self) -> str:
        return self.tokens[0].keyword

    @property
    def words(self) -> list[str]:
        """The keywords of the statement without its `;`."""
        return [token.keyword for token in self.tokens[:-1]]


@dataclass
class Branch:
    """One arm of an IF or CASE, or one WHEN of an exception section."""

    head: list[Token]  # the condition, the CASE choice, or the exception names
    body: list[Node]
    line: int


@dataclass
class If:
    """IF ... ELSIF ... ELSE ... END IF, and CASE statements (branches in order)."""

    line: int
    branches: list[Branch]
    has_else: bool
    head: list[Token] = field(default_factory=list)  # a CASE selector


@dataclass
class Loop:
    """LOOP, WHILE ... LOOP or FOR ... LOOP; `head` is empty for a plain LOOP."""

    line: int
    head: list[Token]
    body: list[Node]


@dataclass
class Block:
    """[DECLARE ...] BEGIN ... [EXCEPTION WHEN ... THEN ...] END."""

    line: int
    declarations: list[Stmt]
    body: list[Node]
    handlers: list[Branch]


Node = Stmt | If | Loop | Block


@dataclass(eq=False)
class Package:
    file: str  # the Pell file whose SQL holds this package body
    schema: str | None  # as Oracle compares it
    name: str
    written: str  # the name as the SQL writes it, schema included
    subprograms: list[Subprogram] = field(default_factory=list)  # top level only
    initialization: Block | None = None


@dataclass(eq=False)
class Subprogram:
    kind: str  # FUNCTION or PROCEDURE
    name: str  # as Oracle compares it
    written: str  # as the SQL writes it
    package: Package
    parent: Subprogram | None
    line: int
    declarations: list[Stmt] = field(default_factory=list)  # nested subprograms left out
    locals: list[Subprogram] = field(default_factory=list)
    block: Block = field(default_factory=lambda: Block(0, [], [], []))
    tokens: list[Token] = field(default_factory=list)  # header to `END name;`, locals included

    @property
    def qualified(self) -> str:
        """`name`, or `outer.name` for a local subprogram."""
        return self.written if self.parent is None else f"{self.parent.qualified}.{self.written}"

    @property
    def autonomous(self) -> bool:
        return any(
            statement.words[:2] == ["PRAGMA", "AUTONOMOUS_TRANSACTION"]
            for statement in self.declarations
        )

    @property
    def retried(self) -> bool:
        return any(statement.tokens[0].name == "L_PELL_ATTEMPT" for statement in self.declarations)

    def describe(self, project: str, line: int) -> str:
        """Where a finding is: project, package, subprogram and a line of the SQL."""
        return (
            f"[{project}] package {self.package.written}, {self.kind} {self.qualified} "
            f"(SQL of {self.package.file} line {line})"
        )


@dataclass
class Project:
    name: str
    packages: list[Package]

    def subprograms(self) -> Iterator[Subprogram]:
        """Every subprogram of every package body, local ones after their parent."""

        def walk(subprograms: list[Subprogram]) -> Iterator[Subprogram]:
            for subprogram in subprograms:
                yield subprogram
                yield from walk(subprogram.locals)

        for package in self.packages:
            yield from walk(package.subprograms)

    def retried(self) -> list[Subprogram]:
        return [subprogram for subprogram in self.subprograms() if subprogram.retried]

    def retries(self) -> list[Retry]:
        """The retry loop of every retried subprogram whose loop has the expected shape."""
        found = (find_retry(subprogram) for subprogram in self.retried())
        return [retry for retry in found if retry is not None]


class ParseError(Exception):
    pass


# Words that end a statement list: none of them can start a statement.
LIST_ENDS = ("END", "ELSIF", "ELSE", "EXCEPTION", "WHEN")


class Parser:
    """Recursive descent over the significant tokens of one package body."""

    def __init__(self, tokens: list[Token], file: str) -> None:
        self.tokens = tokens
        self.file = file
        self.pos = 0
        self.package: Package | None = None
        self.owner: Subprogram | None = None  # the subprogram whose body is being read

    # -- token access

    def peek(self) -> Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def at(self, *keywords: str) -> bool:
        token = self.peek()
        return token is not None and token.keyword in keywords

    def take(self) -> Token:
        token = self.peek()
        if token is None:
            raise ParseError(f"{self.file}: the SQL ends in the middle of a package body")
        self.pos += 1
        return token

    def expect(self, *keywords: str) -> Token:
        token = self.take()
        if token.keyword not in keywords:
            wanted = " or ".join(keywords)
            raise ParseError(
                f"{self.file} line {token.line}: expected {wanted}, found {token.text}"
            )
        return token

    def until(self, *stops: str) -> list[Token]:
        """The tokens before the first stop word outside parentheses and CASE ... END."""
        start = self.pos
        depth = cases = 0
        while (token := self.peek()) is not None:
            if depth == 0 and cases == 0 and token.keyword in stops:
                return self.tokens[start : self.pos]
            if token.keyword == "(":
                depth += 1
            elif token.keyword == ")":
                depth -= 1
            elif token.keyword == "CASE":
                cases += 1
            elif token.keyword == "END" and cases:
                cases -= 1
            self.pos += 1
        raise ParseError(
            f"{self.file}: no {' or '.join(stops)} after line {self.tokens[start].line}"
        )

    def plain(self) -> Stmt:
        tokens = self.until(";")
        return Stmt([*tokens, self.take()])

    def end(self, *words: str) -> None:
        """`END <words> [label];`"""
        self.expect("END")
        for word in words:
            self.expect(word)
        if not self.at(";"):
            self.take()
        self.expect(";")

    # -- units

    def package_body(self) -> Package:
        """`CREATE [OR REPLACE] [EDITIONABLE] PACKAGE BODY [schema.]name IS|AS ... END [name];`"""
        self.expect("CREATE")
        if self.at("OR"):
            self.take()
            self.expect("REPLACE")
        if self.at("EDITIONABLE", "NONEDITIONABLE"):
            self.take()
        self.expect("PACKAGE")
        self.expect("BODY")
        parts = [self.take()]
        while self.at("."):
            self.take()
            parts.append(self.take())
        self.expect("IS", "AS")
        schema = parts[0].name if len(parts) == 2 else None
        written = ".".join(part.text for part in parts)
        self.package = Package(self.file, schema, parts[-1].name, written)
        _, self.package.subprograms = self.declarations(None)
        if self.at("BEGIN"):
            self.package.initialization = self.block([])
        else:
            self.end()
        if self.peek() is not None:
            raise ParseError(f"{self.file} line {self.take().line}: text after the package body")
        return self.package

    def declarations(self, parent: Subprogram | None) -> tuple[list[Stmt], list[Subprogram]]:
        """Declarations up to BEGIN or END: plain ones, and the subprograms defined there."""
        plain: list[Stmt] = []
        subprograms: list[Subprogram] = []
        while not self.at("BEGIN", "END"):
            if self.at("FUNCTION", "PROCEDURE"):
                subprogram = self.subprogram(parent)
                if subprogram is not None:
                    subprograms.append(subprogram)
            else:
                plain.append(self.plain())
        return plain, subprograms

    def subprogram(self, parent: Subprogram | None) -> Subprogram | None:
        """`FUNCTION|PROCEDURE name ... IS|AS declarations BEGIN ... END [name];` (None for a
        forward declaration or a call specification)."""
        assert self.package is not None
        start = self.pos
        kind = self.take()
        name = self.take()
        self.until("IS", "AS", ";")
        if self.take().keyword == ";":
            return None
        if self.at("LANGUAGE", "EXTERNAL"):
            self.plain()
            return None
        subprogram = Subprogram(kind.keyword, name.name, name.text, self.package, parent, kind.line)
        subprogram.declarations, subprogram.locals = self.declarations(subprogram)
        outer, self.owner = self.owner, subprogram
        subprogram.block = self.block([])
        self.owner = outer
        subprogram.tokens = self.tokens[start : self.pos]
        return subprogram

    # -- statements

    def statements(self) -> list[Node]:
        nodes: list[Node] = []
        while not self.at(*LIST_ENDS):
            nodes.append(self.statement())
        return nodes

    def statement(self) -> Node:
        while self.at("<<"):  # a label
            self.take()
            self.take()
            self.expect(">>")
        if self.at("IF"):
            return self.if_statement()
        if self.at("CASE"):
            return self.case_statement()
        if self.at("LOOP", "WHILE", "FOR"):
            return self.loop()
        if self.at("BEGIN"):
            return self.block([])
        if self.at("DECLARE"):
            self.take()
            plain, subprograms = self.declarations(self.owner)
            if self.owner is not None:
                self.owner.locals.extend(subprograms)
            return self.block(plain)
        return self.plain()

    def if_statement(self) -> If:
        line = self.expect("IF").line
        condition = self.until("THEN")
        self.take()
        branches = [Branch(condition, self.statements(), line)]
        while self.at("ELSIF"):
            elsif = self.take().line
            condition = self.until("THEN")
            self.take()
            branches.append(Branch(condition, self.statements(), elsif))
        has_else = self.at("ELSE")
        if has_else:
            else_line = self.take().line
            branches.append(Branch([], self.statements(), else_line))
        self.end("IF")
        return If(line, branches, has_else)

    def case_statement(self) -> If:
        line = self.expect("CASE").line
        selector = self.until("WHEN")
        branches: list[Branch] = []
        while self.at("WHEN"):
            when = self.take().line
            choice = self.until("THEN")
            self.take()
            branches.append(Branch(choice, self.statements(), when))
        has_else = self.at("ELSE")
        if has_else:
            else_line = self.take().line
            branches.append(Branch([], self.statements(), else_line))
        self.end("CASE")
        return If(line, branches, has_else, selector)

    def loop(self) -> Loop:
        line = self.tokens[self.pos].line
        head = [] if self.at("LOOP") else self.until("LOOP")
        self.expect("LOOP")
        body = self.statements()
        self.end("LOOP")
        return Loop(line, head, body)

    def block(self, declarations: list[Stmt]) -> Block:
        line = self.expect("BEGIN").line
        body = self.statements()
        handlers: list[Branch] = []
        if self.at("EXCEPTION"):
            self.take()
            while self.at("WHEN"):
                when = self.take().line
                names = self.until("THEN")
                self.take()
                handlers.append(Branch(names, self.statements(), when))
        self.end()
        return Block(line, declarations, body, handlers)


def parse_package_bodies(sql: str, file: str) -> list[Package]:
    """Every `CREATE PACKAGE BODY` of one generated file; specs and types are left out."""
    packages: list[Package] = []
    for unit in parseora.split(sql):
        tokens = tokenize(unit["text"], unit["line"])
        options = ("OR", "REPLACE", "EDITIONABLE", "NONEDITIONABLE")
        words = [token.keyword for token in tokens[:6] if token.keyword not in options]
        if words[:3] == ["CREATE", "PACKAGE", "BODY"]:
            packages.append(Parser(tokens, file).package_body())
    return packages


# ---------------------------------------------------------------------------------------------
# Walking the tree


def walk_statements(nodes: Sequence[Node]) -> Iterator[Stmt]:
    """Every plain statement in `nodes`, nested ones included (handlers too)."""
    for node in nodes:
        if isinstance(node, Stmt):
            yield node
        elif isinstance(node, If):
            for branch in node.branches:
                yield from walk_statements(branch.body)
        elif isinstance(node, Loop):
            yield from walk_statements(node.body)
        else:
            yield from walk_statements(node.declarations)
            yield from walk_statements(node.body)
            for handler in node.handlers:
                yield from walk_statements(handler.body)


def walk_token_lists(nodes: Sequence[Node]) -> Iterator[list[Token]]:
    """The tokens of every statement, condition, loop header and CASE choice in `nodes`."""
    for node in nodes:
        if isinstance(node, Stmt):
            yield node.tokens
        elif isinstance(node, If):
            yield node.head
            for branch in node.branches:
                yield branch.head
                yield from walk_token_lists(branch.body)
        elif isinstance(node, Loop):
            yield node.head
            yield from walk_token_lists(node.body)
        else:
            yield from walk_token_lists(node.declarations)
            yield from walk_token_lists(node.body)
            for handler in node.handlers:
                yield from walk_token_lists(handler.body)


def rollback_target(statement: Stmt) -> str | None:
    """For `ROLLBACK [WORK] TO [SAVEPOINT] x;` the name x (upper-cased); '' for a full ROLLBACK;
    None for any other statement."""
    if statement.head != "ROLLBACK":
        return None
    names = [token.name for token in statement.tokens[1:-1]]
    if "TO" not in names:
        return ""
    rest = [name for name in names[names.index("TO") + 1 :] if name != "SAVEPOINT"]
    return rest[0] if rest else ""


def savepoint_name(statement: Stmt) -> str | None:
    """The savepoint a `SAVEPOINT x;` sets or a `ROLLBACK TO x;` returns to, else None."""
    if statement.head == "SAVEPOINT" and len(statement.tokens) > 2:
        return statement.tokens[1].name
    return rollback_target(statement) or None


DDL = frozenset({"CREATE", "ALTER", "DROP", "TRUNCATE", "GRANT", "REVOKE", "RENAME"})


def ends_transaction(statement: Stmt) -> str | None:
    """What about `statement` ends the transaction (COMMIT, full ROLLBACK, DDL, or dynamic SQL
    whose literal text is one of these), or None."""
    if statement.head == "COMMIT":
        return "COMMIT"
    if rollback_target(statement) == "":
        return "a full ROLLBACK"
    if statement.head in DDL:
        return f"DDL ({statement.head})"
    if statement.words[:2] == ["EXECUTE", "IMMEDIATE"] and statement.tokens[2].kind == "String":
        literal = re.match(r"(?i)n?q?'[\[({<!]?\s*(\w*)\s*(\w*)", statement.tokens[2].text)
        first, second = literal.groups() if literal else ("", "")
        word = first.upper()
        if word == "ALTER" and second.upper() in ("SESSION", "SYSTEM"):
            return None  # these two do not commit
        if word in DDL or word in ("COMMIT", "ROLLBACK"):
            return f"dynamic {word}"
    return None


def is_raise(statement: Stmt) -> bool:
    return statement.head in ("RAISE", "RAISE_APPLICATION_ERROR")


def ends_path(statement: Stmt) -> bool:
    """RAISE, RETURN, GOTO, bare EXIT / CONTINUE: control does not reach the next statement."""
    if is_raise(statement) or statement.head in ("RETURN", "GOTO"):
        return True
    return statement.head in ("EXIT", "CONTINUE") and len(statement.tokens) == 2


# ---------------------------------------------------------------------------------------------
# Retry loops


@dataclass
class Retry:
    subprogram: Subprogram
    loop: Loop
    savepoint: Stmt | None  # the SAVEPOINT at the top of the loop; None for transaction scope
    attempt: Block  # BEGIN <attempt body> EXCEPTION <handlers> END

    @property
    def savepoint_name(self) -> str | None:
        return None if self.savepoint is None else savepoint_name(self.savepoint)

    @property
    def scope(self) -> str:
        return "transaction" if self.savepoint is None else "savepoint"

    def is_rollback(self, statement: Stmt) -> bool:
        """The rollback this scope needs: `ROLLBACK TO <its savepoint>`, or a full ROLLBACK."""
        target = rollback_target(statement)
        return target == "" if self.savepoint is None else target == self.savepoint_name


def find_retry(subprogram: Subprogram) -> Retry | None:
    """The first plain LOOP of the body that holds a block with handlers, and that block."""
    for node in subprogram.block.body:
        if not isinstance(node, Loop) or node.head:
            continue
        attempt = next((n for n in node.body if isinstance(n, Block) and n.handlers), None)
        if attempt is None:
            continue
        first = node.body[0]
        savepoint = first if isinstance(first, Stmt) and first.head == "SAVEPOINT" else None
        return Retry(subprogram, node, savepoint, attempt)
    return None


# ---------------------------------------------------------------------------------------------
# Calls


# Oracle-supplied subprograms documented to commit (most run DDL): package, name prefix.
COMMITTING_CALLS: tuple[tuple[str, str], ...] = (
    ("DBMS_STATS", "GATHER_"),
    ("DBMS_STATS", "DELETE_"),
    ("DBMS_STATS", "SET_"),
    ("DBMS_STATS", "LOCK_"),
    ("DBMS_STATS", "UNLOCK_"),
    ("DBMS_STATS", "IMPORT_"),
    ("DBMS_STATS", "RESTORE_"),
    ("DBMS_UTILITY", "EXEC_DDL_STATEMENT"),
    ("DBMS_UTILITY", "COMPILE_SCHEMA"),
    ("DBMS_UTILITY", "ANALYZE_"),
    ("DBMS_SCHEDULER", "CREATE_"),
    ("DBMS_SCHEDULER", "DROP_"),
    ("DBMS_SCHEDULER", "ENABLE"),
    ("DBMS_SCHEDULER", "DISABLE"),
    ("DBMS_SCHEDULER", "SET_ATTRIBUTE"),
    ("DBMS_MVIEW", "REFRESH"),
    ("DBMS_SNAPSHOT", "REFRESH"),
    ("DBMS_REFRESH", "REFRESH"),
    ("DBMS_DDL", "ALTER_"),
    ("DBMS_DDL", "CREATE_WRAPPED"),
)


def committing_oracle_call(parts: list[str]) -> str | None:
    """`PKG.NAME` when the dotted name (optionally `SYS.`-qualified) commits, else None."""
    if len(parts) == 3 and parts[0] == "SYS":
        parts = parts[1:]
    if len(parts) != 2:
        return None
    package, name = parts
    if any(package == p and name.startswith(prefix) for p, prefix in COMMITTING_CALLS):
        return f"{package}.{name}"
    return None


def dotted_names(tokens: Sequence[Token]) -> Iterator[tuple[list[str], Token, str]]:
    """Every dotted name in `tokens` that is not itself after a `.` or `%`: its parts (as Oracle
    compares them), its first token, and the keyword after it ('' at the end of `tokens`)."""
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if not token.name or (i > 0 and tokens[i - 1].keyword in (".", "%")):
            i += 1
            continue
        parts = [token.name]
        j = i + 1
        while j + 1 < len(tokens) and tokens[j].keyword == "." and tokens[j + 1].name:
            parts.append(tokens[j + 1].name)
            j += 2
        yield parts, token, tokens[j].keyword if j < len(tokens) else ""
        i = j


def resolve(
    parts: list[str], follower: str, caller: Subprogram, project: Project
) -> list[Subprogram]:
    """The project subprograms a dotted name calls: a bare `name(` or `name;` in the scope of
    `caller` (its locals, its parents' locals, then its package), `pkg.name` or
    `schema.pkg.name`."""
    if len(parts) == 1:
        if follower not in ("(", ";"):
            return []
        scope: Subprogram | None = caller
        while scope is not None:
            found = [local for local in scope.locals if local.name == parts[0]]
            if found:
                return found
            scope = scope.parent
        return [sub for sub in caller.package.subprograms if sub.name == parts[0]]
    if len(parts) == 2:
        schema, (package, name) = None, parts
    elif len(parts) == 3:
        schema, package, name = parts
    else:
        return []
    return [
        sub
        for pkg in project.packages
        if pkg.name == package and (schema is None or pkg.schema == schema)
        for sub in pkg.subprograms
        if sub.name == name
    ]


# ---------------------------------------------------------------------------------------------
# The three checks


def savepoint_violations(project: Project) -> list[str]:
    """Rule (a): the savepoint of a savepoint-scoped retry is set or rolled back to by no other
    subprogram of the project (any package)."""
    uses: list[tuple[Subprogram, Stmt, str]] = []
    for subprogram in project.subprograms():
        for statement in walk_statements([subprogram.block]):
            name = savepoint_name(statement)
            if name:
                uses.append((subprogram, statement, name))
    problems: list[str] = []
    for retry in project.retries():
        if retry.savepoint is None:
            continue
        others: dict[Subprogram, list[int]] = {}  # each other user, and the lines it uses it on
        for other, statement, name in uses:
            if name == retry.savepoint_name and other is not retry.subprogram:
                others.setdefault(other, []).append(statement.line)
        where = retry.subprogram.describe(project.name, retry.savepoint.line)
        for other, lines in others.items():
            also = f" (and lines {', '.join(map(str, lines[1:]))})" if lines[1:] else ""
            problems.append(
                f"{where}: its savepoint {retry.savepoint.tokens[1].text} is also used by "
                f"{other.describe(project.name, lines[0])}{also}"
            )
    return problems


def unrolled_raises(
    nodes: Sequence[Node], rolled: bool, is_rollback: Callable[[Stmt], bool], found: list[Stmt]
) -> bool | None:
    """Walk one path set through `nodes`, starting with `rolled` (has the rollback happened?).
    Appends to `found` each RAISE reached before a rollback; returns whether the rollback has
    happened on every path that falls through, or None when no path falls through."""
    state: bool | None = rolled
    for node in nodes:
        if state is None:  # the rest is unreachable
            break
        if isinstance(node, Stmt):
            if is_rollback(node):
                state = True
            elif is_raise(node) and not state:
                found.append(node)
            if ends_path(node):
                state = None
        elif isinstance(node, If):
            ends = [unrolled_raises(b.body, state, is_rollback, found) for b in node.branches]
            state = join(ends if node.has_else else [*ends, state])
        elif isinstance(node, Loop):
            state = join([state, unrolled_raises(node.body, state, is_rollback, found)])
        else:
            # an inner handler starts from the state before the inner BEGIN
            ends = [unrolled_raises(node.body, state, is_rollback, found)]
            ends += [unrolled_raises(h.body, state, is_rollback, found) for h in node.handlers]
            state = join(ends)
    return state


def join(states: Sequence[bool | None]) -> bool | None:
    """Paths meeting again: rolled back only if every path that gets here rolled back."""
    live = [state for state in states if state is not None]
    return all(live) if live else None


def handler_violations(project: Project) -> list[str]:
    """Rule (b): in every handler of the attempt, each RAISE / RAISE_APPLICATION_ERROR comes
    after `ROLLBACK TO <savepoint>` (savepoint scope) or `ROLLBACK` (transaction scope) on its
    own path. Handlers without WHEN OTHERS fail too: an error they do not name propagates as
    if re-raised at once, before any rollback."""
    problems: list[str] = []
    for retry in project.retries():
        written = None if retry.savepoint is None else retry.savepoint.tokens[1].text
        wanted = f"ROLLBACK TO {written}" if written else "ROLLBACK"
        handlers = retry.attempt.handlers
        for handler in handlers:
            found: list[Stmt] = []
            unrolled_raises(handler.body, False, retry.is_rollback, found)
            names = " ".join(token.text for token in handler.head)
            for statement in found:
                problems.append(
                    f"{retry.subprogram.describe(project.name, statement.line)}: "
                    f"{statement.tokens[0].text} in the handler WHEN {names} "
                    f"before {wanted} ({retry.scope} scope)"
                )
        if not any([token.keyword for token in handler.head] == ["OTHERS"] for handler in handlers):
            problems.append(
                f"{retry.subprogram.describe(project.name, handlers[0].line)}: no WHEN OTHERS, so "
                f"an error the handlers do not name leaves without {wanted} ({retry.scope} scope)"
            )
    return problems


def body_enders(nodes: Sequence[Node], transaction: bool, nested_loop: bool = False) -> list[Stmt]:
    """Rule (c) inside the attempt body: statements that end the transaction. In transaction
    scope a COMMIT is allowed right before `RETURN ...;`, or before a bare `EXIT;` that leaves
    the retry loop (not one inside a loop of the body)."""
    found: list[Stmt] = []
    for i, node in enumerate(nodes):
        if isinstance(node, Stmt):
            following = nodes[i + 1] if i + 1 < len(nodes) else None
            if ends_transaction(node) and not (
                transaction and node.head == "COMMIT" and leaves_retry(following, nested_loop)
            ):
                found.append(node)
        elif isinstance(node, If):
            for branch in node.branches:
                found += body_enders(branch.body, transaction, nested_loop)
        elif isinstance(node, Loop):
            found += body_enders(node.body, transaction, nested_loop=True)
        else:
            found += body_enders(node.declarations, transaction, nested_loop)
            found += body_enders(node.body, transaction, nested_loop)
            for handler in node.handlers:
                found += body_enders(handler.body, transaction, nested_loop)
    return found


def leaves_retry(node: Node | None, nested_loop: bool) -> bool:
    if not isinstance(node, Stmt):
        return False
    return node.head == "RETURN" or (node.words == ["EXIT"] and not nested_loop)


def subprogram_enders(subprogram: Subprogram) -> list[Stmt]:
    """Everything in a callee that ends the transaction, its non-autonomous locals included."""
    found = [s for s in walk_statements([subprogram.block]) if ends_transaction(s)]
    for local in subprogram.locals:
        if not local.autonomous:
            found += subprogram_enders(local)
    return found


def attempt_violations(project: Project) -> list[str]:
    """Rule (c): no commit is reachable from the attempt body: no COMMIT, full ROLLBACK or DDL
    in it (but see `body_enders`), no call to a project subprogram that has one (followed
    through calls, cycles guarded, autonomous-transaction subprograms not entered), no call to
    an Oracle package documented to commit."""
    problems: list[str] = []
    for retry in project.retries():
        subprogram = retry.subprogram
        body = retry.attempt.body
        for statement in body_enders(body, retry.scope == "transaction"):
            problems.append(
                f"{subprogram.describe(project.name, statement.line)}: the retried body ends "
                f"the transaction ({ends_transaction(statement)}, {retry.scope} scope)"
            )
        # (tokens to scan, the subprogram they are in, line of the call in the body, callees)
        pending: list[tuple[list[list[Token]], Subprogram, int, tuple[str, ...]]] = [
            (list(walk_token_lists(body)), subprogram, 0, ())
        ]
        seen: set[int] = {id(subprogram)}
        while pending:
            token_lists, caller, call_line, path = pending.pop()
            for tokens in token_lists:
                for parts, token, follower in dotted_names(tokens):
                    where = subprogram.describe(project.name, call_line or token.line)
                    via = "".join(f"{name} -> " for name in path)
                    oracle = committing_oracle_call(parts)
                    if oracle is not None:
                        problems.append(
                            f"{where}: the retried body calls {via}{oracle}, which commits"
                        )
                    for callee in resolve(parts, follower, caller, project):
                        if callee.autonomous or id(callee) in seen:
                            continue
                        seen.add(id(callee))
                        problems += [
                            f"{where}: the retried body calls {via}{callee.qualified}, which ends "
                            f"the transaction ({ends_transaction(statement)}) at SQL of "
                            f"{callee.package.file} line {statement.line}"
                            for statement in subprogram_enders(callee)
                        ]
                        calls = (*path, callee.qualified)
                        pending.append(([callee.tokens], callee, call_line or token.line, calls))
    return problems


# ---------------------------------------------------------------------------------------------
# The projects


def _target(text: str) -> str:
    """A case may start with `// pellc: --target 12.2` (as in test_cases.py)."""
    match = re.match(r"// pellc: --target (\S+)", text)
    return match.group(1) if match else "23ai"


PROJECTS = {"examples": EXAMPLES, "cases": CASES}


@cache
def compiled_project(name: str) -> Project:
    """Every `.pell` file of the project compiled, and the package bodies of its SQL."""
    packages: list[Package] = []
    for path in sorted(PROJECTS[name].glob("*.pell")):
        text = path.read_text(encoding="utf-8")
        result = compile_source(text, path.name, _target(text))
        assert result.sql is not None, render_all(result.diagnostics, result.source)
        packages += parse_package_bodies(result.sql, path.name)
    return Project(name, packages)


def _report(problems: list[str]) -> str:
    return f"{len(problems)} problem(s):\n" + "\n".join(problems)


@pytest.mark.parametrize("name", PROJECTS)
def test_retried_subprograms_have_a_retry_loop(name: str) -> None:
    """The checks below see every retried subprogram (and there are some)."""
    project = compiled_project(name)
    retried = project.retried()
    assert retried, f"[{name}] no retried subprogram: the checks would pass without looking"
    shapeless = [s.describe(name, s.line) for s in retried if find_retry(s) is None]
    assert not shapeless, "no LOOP holding BEGIN ... EXCEPTION ... END:\n" + "\n".join(shapeless)


def test_the_cases_have_both_scopes() -> None:
    scopes = {retry.scope for retry in compiled_project("cases").retries()}
    assert scopes == {"savepoint", "transaction"}


@pytest.mark.parametrize("name", PROJECTS)
def test_savepoint_names_are_not_shared(name: str) -> None:
    problems = savepoint_violations(compiled_project(name))
    assert not problems, _report(problems)


@pytest.mark.parametrize("name", PROJECTS)
def test_handlers_roll_back_before_raising(name: str) -> None:
    problems = handler_violations(compiled_project(name))
    assert not problems, _report(problems)


@pytest.mark.parametrize("name", PROJECTS)
def test_retried_bodies_do_not_commit(name: str) -> None:
    problems = attempt_violations(compiled_project(name))
    assert not problems, _report(problems)


# ---------------------------------------------------------------------------------------------
# The walker itself, on hand-written PL/SQL


# The new shape: f and g in savepoint scope (g with `on = [...]`), close_day and settle in
# transaction scope (close_day with a `recover` give-up), calls to a savepoint-scoped fn, to a
# local `pell_finally` and to an autonomous logger that commits.
GOOD = """\
CREATE OR REPLACE PACKAGE BODY shop.orders AS
  FUNCTION pell_is_panic(p_code IN NUMBER) RETURN BOOLEAN IS
  BEGIN
    RETURN p_code BETWEEN -20399 AND -20300 OR p_code IN (-1476, -6502);
  END pell_is_panic;

  PROCEDURE g(p_x IN NUMBER);

  FUNCTION f(p_x IN NUMBER, p_o OUT NUMBER, p_io IN OUT NUMBER) RETURN NUMBER IS
    l_pell_attempt PLS_INTEGER := 0;
    l_pell_saved_io NUMBER;
  BEGIN
    l_pell_saved_io := p_io;
    LOOP
      SAVEPOINT sp_orders_f_1a2b3c4d;
      BEGIN
        p_o := NULL;
        update orders set n = n + 1 where id = p_x;
        audit.log_event('f', p_x);
        g(p_x);
        RETURN p_x;
      EXCEPTION
        WHEN OTHERS THEN
          IF pell_is_panic(SQLCODE) THEN ROLLBACK TO sp_orders_f_1a2b3c4d; RAISE; END IF;
          l_pell_attempt := l_pell_attempt + 1;
          ROLLBACK TO sp_orders_f_1a2b3c4d;
          p_io := l_pell_saved_io;
          IF l_pell_attempt >= 5 THEN RAISE; END IF;
          DBMS_SESSION.SLEEP(LEAST(0.1 * POWER(2, l_pell_attempt - 1), 2.0));
      END;
    END LOOP;
  END f;

  PROCEDURE g(p_x IN NUMBER) IS
    l_pell_attempt PLS_INTEGER := 0;
    e_pell_deadlock EXCEPTION;
    PRAGMA EXCEPTION_INIT(e_pell_deadlock, -60);
  BEGIN
    LOOP
      SAVEPOINT sp_orders_g_5e6f7a8b;
      BEGIN
        update orders set m = CASE WHEN m > 0 THEN m + 1 ELSE 1 END where id = p_x;
        EXIT;
      EXCEPTION
        WHEN e_pell_deadlock OR pell_runtime.shop_busy THEN
          l_pell_attempt := l_pell_attempt + 1;
          ROLLBACK TO sp_orders_g_5e6f7a8b;
          IF l_pell_attempt >= 3 THEN RAISE; END IF;
          DBMS_SESSION.SLEEP(0.05);
        WHEN OTHERS THEN
          ROLLBACK TO sp_orders_g_5e6f7a8b;
          RAISE;
      END;
    END LOOP;
  END g;

  FUNCTION closed_count(p_day IN DATE) RETURN NUMBER IS
    l_n NUMBER;
  BEGIN
    select count(*) INTO l_n from ledger where day = p_day;
    RETURN l_n;
  END closed_count;

  FUNCTION close_day(p_day IN DATE) RETURN NUMBER IS
    l_closed PLS_INTEGER;
    l_pell_result NUMBER;
    l_pell_attempt PLS_INTEGER := 0;
    l_pell_action VARCHAR2(64);
  BEGIN
    IF DBMS_TRANSACTION.LOCAL_TRANSACTION_ID IS NOT NULL THEN
      RAISE_APPLICATION_ERROR(-20100, 'shop.orders.close_day: a transaction is open');
    END IF;
    LOOP
      BEGIN
        SET TRANSACTION ISOLATION LEVEL SERIALIZABLE;
        update ledger set closed = 1 where day = p_day;
        l_closed := SQL%ROWCOUNT;
        IF l_closed = 0 THEN
          COMMIT;
          RETURN 0;
        END IF;
        l_pell_result := l_closed;
        COMMIT;
        RETURN l_pell_result;
      EXCEPTION
        WHEN OTHERS THEN
          IF pell_is_panic(SQLCODE) THEN
            DBMS_APPLICATION_INFO.SET_ACTION(l_pell_action);
            ROLLBACK;
            RAISE;
          END IF;
          l_pell_attempt := l_pell_attempt + 1;
          ROLLBACK;
          IF l_pell_attempt >= 5 THEN
            BEGIN
              l_pell_result := closed_count(p_day);
              COMMIT;
            EXCEPTION
              WHEN OTHERS THEN ROLLBACK; RAISE;
            END;
            DBMS_APPLICATION_INFO.SET_ACTION(l_pell_action);
            RETURN l_pell_result;
          END IF;
          DBMS_SESSION.SLEEP(0.1);
          DBMS_APPLICATION_INFO.SET_ACTION('retry ' || TO_CHAR(l_pell_attempt + 1) || '/5');
      END;
    END LOOP;
  END close_day;

  PROCEDURE settle(p_id IN NUMBER) IS
    l_pell_attempt PLS_INTEGER := 0;
    l_pell_finally_done BOOLEAN := FALSE;
    PROCEDURE pell_finally IS
    BEGIN
      IF l_pell_finally_done THEN RETURN; END IF;
      l_pell_finally_done := TRUE;
      update locks set holder = null where id = p_id;
    END pell_finally;
  BEGIN
    LOOP
      BEGIN
        FOR l_row IN (select id from lines where settle_id = p_id) LOOP
          update lines set settled = 1 where id = l_row.id;
        END LOOP;
        pell_finally;
        COMMIT;
        EXIT;
      EXCEPTION
        WHEN OTHERS THEN
          l_pell_attempt := l_pell_attempt + 1;
          ROLLBACK;
          CASE
            WHEN l_pell_attempt >= 3 THEN RAISE;
            ELSE DBMS_SESSION.SLEEP(0.1);
          END CASE;
      END;
    END LOOP;
  END settle;
END orders;
/
"""

AUDIT = """\
CREATE OR REPLACE PACKAGE BODY audit AS
  PROCEDURE log_event(p_kind IN VARCHAR2, p_id IN NUMBER) IS
    PRAGMA AUTONOMOUS_TRANSACTION;
  BEGIN
    insert into audit_log (kind, id) values (p_kind, p_id);
    COMMIT;
  EXCEPTION
    WHEN OTHERS THEN
      ROLLBACK;
      RAISE;
  END log_event;
END audit;
/
"""


def snippet_project(orders: str = GOOD, audit: str = AUDIT) -> Project:
    packages = parse_package_bodies(orders, "orders.pell") + parse_package_bodies(
        audit, "audit.pell"
    )
    return Project("snippets", packages)


def edited(old: str, new: str, text: str = GOOD) -> str:
    """`text` with its one occurrence of `old` replaced by `new`."""
    assert text.count(old) == 1, old
    return text.replace(old, new)


def line_of(text: str, part: str) -> int:
    """The line of `text` where `part` first occurs."""
    return text[: text.index(part)].count("\n") + 1


def lines_of(text: str, part: str) -> list[int]:
    """Every line of `text` that holds `part`."""
    return [number for number, line in enumerate(text.splitlines(), 1) if part in line]


def all_problems(project: Project) -> list[str]:
    return savepoint_violations(project) + handler_violations(project) + attempt_violations(project)


def test_walker_reads_the_good_shape() -> None:
    project = snippet_project()
    retries = {retry.subprogram.name: retry for retry in project.retries()}
    assert {name: retry.scope for name, retry in retries.items()} == {
        "F": "savepoint",
        "G": "savepoint",
        "CLOSE_DAY": "transaction",
        "SETTLE": "transaction",
    }
    assert retries["F"].savepoint_name == "SP_ORDERS_F_1A2B3C4D"
    assert [len(retry.attempt.handlers) for retry in retries.values()] == [1, 2, 1, 1]
    settle = retries["SETTLE"].subprogram
    assert [local.qualified for local in settle.locals] == ["settle.pell_finally"]
    orders, audit = project.packages
    assert (orders.schema, orders.name, audit.schema, audit.name) == (
        "SHOP",
        "ORDERS",
        None,
        "AUDIT",
    )
    # the forward declaration of g is not a subprogram of its own
    assert [sub.written for sub in orders.subprograms] == [
        "pell_is_panic",
        "f",
        "g",
        "closed_count",
        "close_day",
        "settle",
    ]
    assert [sub.autonomous for sub in audit.subprograms] == [True]


def test_walker_passes_the_good_shape() -> None:
    assert all_problems(snippet_project()) == []


def test_walker_finds_a_shared_savepoint_name() -> None:
    text = GOOD.replace("sp_orders_g_5e6f7a8b", "sp_orders_f_1a2b3c4d")
    f_uses = lines_of(GOOD, "sp_orders_f_1a2b3c4d")  # SAVEPOINT, then two ROLLBACK TOs
    g_uses = lines_of(GOOD, "sp_orders_g_5e6f7a8b")
    assert len(f_uses) == len(g_uses) == 3
    assert savepoint_violations(snippet_project(text)) == [
        f"[snippets] package shop.orders, FUNCTION f (SQL of orders.pell line {f_uses[0]}): its "
        "savepoint sp_orders_f_1a2b3c4d is also used by [snippets] package shop.orders, "
        f"PROCEDURE g (SQL of orders.pell line {g_uses[0]}) (and lines {g_uses[1]}, {g_uses[2]})",
        f"[snippets] package shop.orders, PROCEDURE g (SQL of orders.pell line {g_uses[0]}): its "
        "savepoint sp_orders_f_1a2b3c4d is also used by [snippets] package shop.orders, "
        f"FUNCTION f (SQL of orders.pell line {f_uses[0]}) (and lines {f_uses[1]}, {f_uses[2]})",
    ]
    assert handler_violations(snippet_project(text)) == []


def test_walker_finds_a_raise_before_the_rollback_in_the_panic_check() -> None:
    text = edited(
        "THEN ROLLBACK TO sp_orders_f_1a2b3c4d; RAISE; END IF;",
        "THEN RAISE; END IF;",
    )
    assert handler_violations(snippet_project(text)) == [
        "[snippets] package shop.orders, FUNCTION f (SQL of orders.pell line "
        f"{line_of(text, 'IF pell_is_panic(SQLCODE) THEN RAISE')}): RAISE in the handler "
        "WHEN OTHERS before ROLLBACK TO sp_orders_f_1a2b3c4d (savepoint scope)"
    ]


def test_walker_finds_a_when_others_that_raises_without_rollback() -> None:
    text = edited(
        "WHEN OTHERS THEN\n          ROLLBACK TO sp_orders_g_5e6f7a8b;\n          RAISE;",
        "WHEN OTHERS THEN\n          RAISE;",
    )
    problems = handler_violations(snippet_project(text))
    assert len(problems) == 1
    assert "PROCEDURE g" in problems[0] and "handler WHEN OTHERS" in problems[0]
    raise_line = line_of(text, "WHEN OTHERS THEN\n          RAISE;") + 1
    assert f"line {raise_line})" in problems[0]


def test_walker_finds_handlers_without_when_others() -> None:
    text = edited(
        "        WHEN OTHERS THEN\n          ROLLBACK TO sp_orders_g_5e6f7a8b;\n          RAISE;\n",
        "",
    )
    assert handler_violations(snippet_project(text)) == [
        "[snippets] package shop.orders, PROCEDURE g (SQL of orders.pell line "
        f"{line_of(text, 'WHEN e_pell_deadlock OR')}): no WHEN OTHERS, so an error the handlers "
        "do not name leaves without ROLLBACK TO sp_orders_g_5e6f7a8b (savepoint scope)"
    ]


def test_walker_finds_a_rollback_in_only_one_branch() -> None:
    """A rollback inside an IF branch does not cover a RAISE after the IF."""
    text = edited(
        "          ROLLBACK TO sp_orders_f_1a2b3c4d;\n          p_io",
        "          IF l_pell_attempt > 1 THEN ROLLBACK TO sp_orders_f_1a2b3c4d; END IF;\n"
        "          p_io",
    )
    problems = handler_violations(snippet_project(text))
    assert len(problems) == 1 and "FUNCTION f" in problems[0]
    assert f"line {line_of(text, 'IF l_pell_attempt >= 5 THEN RAISE')})" in problems[0]


def test_walker_finds_a_raise_in_an_inner_handler_without_rollback() -> None:
    text = edited("WHEN OTHERS THEN ROLLBACK; RAISE;", "WHEN OTHERS THEN RAISE;")
    assert handler_violations(snippet_project(text)) == []  # the outer path rolled back already
    # without the rollback before it, the inner handler's RAISE has none on its path
    text = edited(
        "END IF;\n          l_pell_attempt := l_pell_attempt + 1;\n          ROLLBACK;\n",
        "END IF;\n          l_pell_attempt := l_pell_attempt + 1;\n",
        text,
    )
    assert handler_violations(snippet_project(text)) == [
        "[snippets] package shop.orders, FUNCTION close_day (SQL of orders.pell line "
        f"{line_of(text, 'WHEN OTHERS THEN RAISE;')}): RAISE in the handler WHEN OTHERS before "
        "ROLLBACK (transaction scope)"
    ]


def test_walker_finds_a_commit_in_a_savepoint_scoped_body() -> None:
    text = edited(
        "update orders set n = n + 1 where id = p_x;\n",
        "update orders set n = n + 1 where id = p_x;\n        COMMIT;\n",
    )
    assert attempt_violations(snippet_project(text)) == [
        "[snippets] package shop.orders, FUNCTION f (SQL of orders.pell line "
        f"{line_of(text, 'COMMIT;')}): the retried body ends the transaction (COMMIT, "
        "savepoint scope)"
    ]


def test_walker_finds_transaction_enders_that_do_not_leave_the_loop() -> None:
    """Transaction scope: COMMIT only right before RETURN or the EXIT of the retry loop; DDL and a
    full ROLLBACK never."""
    text = edited(
        "          update lines set settled = 1 where id = l_row.id;\n",
        "          update lines set settled = 1 where id = l_row.id;\n"
        "          COMMIT;\n          EXIT;\n",
    )
    text = edited(
        "        l_pell_result := l_closed;\n",
        "        EXECUTE IMMEDIATE 'truncate table ledger_tmp';\n        ROLLBACK;\n"
        "        l_pell_result := l_closed;\n",
        text,
    )
    problems = attempt_violations(snippet_project(text))
    assert [problem.split(": ", 1)[1] for problem in problems] == [
        "the retried body ends the transaction (dynamic TRUNCATE, transaction scope)",
        "the retried body ends the transaction (a full ROLLBACK, transaction scope)",
        "the retried body ends the transaction (COMMIT, transaction scope)",
    ]


def test_walker_finds_a_call_to_a_fn_that_commits() -> None:
    flush = (
        "  PROCEDURE flush_queue(p_x IN NUMBER) IS\n  BEGIN\n"
        "    delete from queue where id = p_x;\n    COMMIT;\n  END flush_queue;\n\n"
    )
    text = edited("  PROCEDURE g(p_x IN NUMBER) IS\n", flush + "  PROCEDURE g(p_x IN NUMBER) IS\n")
    text = edited("        g(p_x);\n", "        g(p_x);\n        flush_queue(p_x);\n", text)
    assert attempt_violations(snippet_project(text)) == [
        "[snippets] package shop.orders, FUNCTION f (SQL of orders.pell line "
        f"{line_of(text, '        flush_queue(p_x);')}): the retried body calls flush_queue, "
        f"which ends the transaction (COMMIT) at SQL of orders.pell line {line_of(text, 'COMMIT;')}"
    ]


def test_walker_follows_calls_across_packages_and_through_cycles() -> None:
    """f -> g (same package) -> audit.relay -> shop.orders.f and audit.purge (no pragma)."""
    relay = (
        "  PROCEDURE relay(p_id IN NUMBER) IS\n  BEGIN\n    shop.orders.g(p_id);\n"
        "    purge;\n  END relay;\n\n  PROCEDURE purge IS\n  BEGIN\n"
        "    DBMS_UTILITY.EXEC_DDL_STATEMENT('truncate table audit_tmp');\n  END purge;\n"
    )
    audit = edited("END audit;", relay + "END audit;", AUDIT)
    text = edited("        EXIT;\n      EXCEPTION\n        WHEN e_pell", "        audit.relay(p_x);\n"
                  "        EXIT;\n      EXCEPTION\n        WHEN e_pell")  # fmt: skip
    problems = attempt_violations(snippet_project(text, audit))
    assert [problem.split(": ", 1)[1] for problem in problems] == [
        "the retried body calls g -> relay -> purge -> DBMS_UTILITY.EXEC_DDL_STATEMENT, which "
        "commits",
        "the retried body calls relay -> purge -> DBMS_UTILITY.EXEC_DDL_STATEMENT, which commits",
    ]
    assert f"FUNCTION f (SQL of orders.pell line {line_of(text, '        g(p_x);')})" in problems[0]
    assert f"PROCEDURE g (SQL of orders.pell line {line_of(text, 'audit.relay')})" in problems[1]


def test_walker_finds_a_call_to_dbms_stats() -> None:
    text = edited(
        "        RETURN p_x;\n",
        "        dbms_stats.gather_table_stats(USER, 'ORDERS');\n        RETURN p_x;\n",
    )
    assert attempt_violations(snippet_project(text)) == [
        "[snippets] package shop.orders, FUNCTION f (SQL of orders.pell line "
        f"{line_of(text, 'dbms_stats')}): the retried body calls "
        "DBMS_STATS.GATHER_TABLE_STATS, which commits"
    ]
