"""Hypothesis strategies for Pell programs built around `@retry`, for
tests/test_verify_generated.py.

A program is one module, or two where the second imports the first and calls its pub fns. Its
fns are retried (`@retry` with varied arguments, both scopes, `recover`, `isolation`), plain,
holding `transaction { }` blocks, or `@autonomous`, and each calls only fns declared before it,
so no fn reaches itself. Bodies mix DML with binds of params, locals, loop variables and cursor
rows, `if` / `else` on params, `for`, `while` and cursor loops with `break` and `continue`,
`dbms_output::put_line`, COMMIT, ROLLBACK and `dbms_stats` calls, `.rowcount()` and `.one()`
locals (`.one()?` mapping NO_DATA_FOUND to a module error), calls as statements, values,
conditions, loop bounds and arguments, early returns and raised module errors (@panic ones
too), and `finally` cleanups.

The programs are valid by construction where pellc's retry-safety rules are simple to follow:
no fn that commits (a `transaction { }` block, a transaction-scoped retry, COMMIT, ROLLBACK, a
committing Oracle call, or a call reaching one, not through an `@autonomous` fn) is called
inside a retried fn or a `transaction { }` block, and a `recover` fn takes and returns what
its retried fn does and does not commit. Now and then a program breaks one of these rules on
purpose: pellc must refuse it (else pell.verify finds what goes wrong).

`python tests/verify_programs.py [N]` generates N programs, compiles and verifies them, and
prints the compile rate, the rejections by diagnostic code and the time taken.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

Draw = Callable[[st.SearchStrategy[Any]], Any]

TARGETS = ("23ai", "23ai", "19c", "12.2")
SIGNATURES: tuple[tuple[tuple[str, str], ...], ...] = (
    (("id", "number"),),
    (("id", "number"), ("qty", "number")),
    (("id", "number"), ("note", "text")),
    (("id", "number"), ("qty", "number"), ("note", "text")),
)
TABLES = ("orders", "stock", "lines", "ledger", "holds")
# Kinds of fn, repeated to weight the draw towards retried fns.
KINDS = ("retry", "retry", "retry", "plain", "plain", "transaction", "autonomous")
LOOP_VARS = ("i", "j", "k")


# What the generated programs are meant to reach, each as a pattern on a module's text; with
# the call patterns of Program.features, FEATURES. The `-m fuzz` run must see each in a program
# that compiles.
TEXT_FEATURES = {
    "@retry with no arguments": r"^@retry(\(\))?$",
    "@retry(n) positional": r"^@retry\(\d",
    "n = 1": r"\bn = 1\b",
    "n = 6": r"\bn = 6\b",
    "backoff": r"\bbackoff(_ms)? = ",
    "jitter": r"\bjitter = ",
    "exponential": r"\bexponential = true",
    "cap": r"\bcap = ",
    "within": r"\bwithin = ",
    "on = [deadlock]": r"on = \[deadlock\]",
    "on = [deadlock, serialization]": r"on = \[deadlock, serialization\]",
    "on = [a module error]": r"on = \[[^\]]*(Failed|Refused|NotFound)",
    'scope = "savepoint"': r'scope = "savepoint"',
    'scope = "transaction"': r'scope = "transaction"',
    'isolation = "serializable"': r'isolation = "serializable"',
    "recover": r"\brecover = ",
    "@autonomous": r"^@autonomous$",
    "transaction { }": r"\btransaction \{",
    "finally": r"\} finally \{",
    "COMMIT or ROLLBACK": r"sql! \{ (commit|rollback) \}",
    "a call that commits": r"dbms_stats::gather_table_stats",
    "dbms_output::put_line": r"dbms_output::put_line",
    "insert": r"sql! \{ insert ",
    "update": r"sql! \{ update ",
    "delete": r"sql! \{ delete ",
    ".rowcount()": r"\.rowcount\(\)",
    ".one()?": r"\.one\(\)\?",
    "if / else": r"\} else \{",
    "for i in a..b": r"for i in \d",
    "a cursor loop": r"for row\d+ in sql!",
    "while": r"\bwhile ",
    "break": r"\bbreak;",
    "continue": r"\bcontinue;",
    "return Err(E { ... })": r"return Err\(\w+ \{",
    "return Err(@panic error)": r"return Err\((Broken|Crashed)\);",
    "Result<number, E>": r"-> Result<number, ",
    "a call in a condition": r"if \w+(::\w+)?\(",
    "a call as an argument": r"\w\([^()]*\w+\([^()]*\)",
    "?": r"\)\?;",
    "a second module": r"^import gen::base;",
}
CALL_FEATURES = (
    "a retried fn calls a retried fn",
    "a transaction-scoped retry calls a retried fn",
    "a retried fn calls an @autonomous fn",
    "an @autonomous fn calls a retried fn",
    "a fn calls a transaction-scoped retry",
    "a call into the other module's retried fn",
)
FEATURES = (*TEXT_FEATURES, *CALL_FEATURES)


@dataclass(frozen=True, slots=True)
class ModuleShape:
    path: str  # as declared: `gen.base`
    alias: str  # how an importing module names it: `base`
    error: str  # its errors: one with a field
    not_found: str  # one that `.one()?` raises for NO_DATA_FOUND
    panic: str  # a @panic one


MODULES = (
    ModuleShape("gen.base", "base", "Failed", "StockNotFound", "Broken"),
    ModuleShape("gen.app", "app", "Refused", "LineNotFound", "Crashed"),
)


@dataclass(slots=True)
class Fn:
    name: str
    module: int
    kind: str  # "retry", "plain", "transaction" (holds a `transaction { }` block), "autonomous"
    params: tuple[tuple[str, str], ...]
    errors: tuple[str, ...]  # the error list of its `Result<_, ...>`
    pub: bool
    returns: str = "Unit"  # or "number"
    has_finally: bool = False
    calls: set[tuple[int, str]] = field(default_factory=set)  # (module, name) of its callees
    scope: str = "savepoint"  # of a retried fn
    commits: bool = False  # calling it ends the caller's transaction

    @property
    def retried(self) -> bool:
        return self.kind == "retry"

    def return_type(self) -> str:
        if self.errors:
            return f" -> Result<{self.returns}, {' | '.join(self.errors)}>"
        return "" if self.returns == "Unit" else f" -> {self.returns}"


@dataclass(frozen=True, slots=True)
class Program:
    target: str
    texts: tuple[str, ...]  # one per module, the first imported by the second
    fns: tuple[Fn, ...]

    def filenames(self) -> tuple[str, ...]:
        return tuple(f"{MODULES[index].alias}.pell" for index in range(len(self.texts)))

    def retried(self) -> set[tuple[str, str]]:
        """(module path, fn name) of every retried fn."""
        return {(MODULES[fn.module].path, fn.name) for fn in self.fns if fn.retried}

    def features(self) -> set[str]:
        """Which of FEATURES the program has."""
        found = {
            name
            for name, pattern in TEXT_FEATURES.items()
            if any(re.search(pattern, text, re.MULTILINE) for text in self.texts)
        }
        fns = {(fn.module, fn.name): fn for fn in self.fns}
        for fn in self.fns:
            for callee in (fns[key] for key in fn.calls):
                if fn.retried and callee.retried:
                    found.add("a retried fn calls a retried fn")
                if fn.retried and fn.scope == "transaction" and callee.retried:
                    found.add("a transaction-scoped retry calls a retried fn")
                if fn.retried and callee.kind == "autonomous":
                    found.add("a retried fn calls an @autonomous fn")
                if fn.kind == "autonomous" and callee.retried:
                    found.add("an @autonomous fn calls a retried fn")
                if fn.kind != "retry" and callee.retried and callee.scope == "transaction":
                    found.add("a fn calls a transaction-scoped retry")
                if fn.module != callee.module and callee.retried:
                    found.add("a call into the other module's retried fn")
        return found

    def render(self) -> str:
        parts = [f"// target {self.target}"]
        for name, text in zip(self.filenames(), self.texts, strict=True):
            parts.append(f"// ---- {name}\n{text}")
        return "\n".join(parts)


def callee_commits(fn: Fn) -> bool:
    """Does calling `fn` end the caller's transaction? An @autonomous fn commits only its own."""
    return fn.commits and fn.kind != "autonomous"


@dataclass(slots=True)
class Scope:
    numbers: list[str] = field(default_factory=list)  # number and int names in scope
    texts: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)  # of a cursor loop's row: binds only


class BodyGen:
    """The statements of one fn's body."""

    def __init__(
        self,
        draw: Draw,
        fn: Fn,
        callable_fns: list[Fn],
        packages: frozenset[str],
        shape: ModuleShape,
    ) -> None:
        self.draw = draw
        self.fn = fn
        self.callable = callable_fns
        self.output = "dbms_output" in packages
        self.stats = "dbms_stats" in packages
        self.shape = shape
        self.scopes = [
            Scope(
                [name for name, ty in fn.params if ty == "number"],
                [name for name, ty in fn.params if ty == "text"],
            )
        ]
        self.in_transaction = 0
        self.transactions = 0  # `transaction { }` blocks written
        self.loops = 0  # loops around the statement being generated
        self.loop_vars = 0  # `for` variables in scope
        self.locals = 0
        self.nested = False  # writing the arguments of a call
        self.commits = False

    # -- names in scope

    def numbers(self) -> list[str]:
        return [name for scope in self.scopes for name in scope.numbers]

    def texts(self) -> list[str]:
        return [name for scope in self.scopes for name in scope.texts]

    def binds(self) -> list[str]:
        """Number names a bind can use: those in scope, and the columns of cursor loops."""
        return self.numbers() + [name for scope in self.scopes for name in scope.columns]

    def pick(self, options: list[str] | tuple[str, ...]) -> str:
        return str(self.draw(st.sampled_from(options)))

    def number(self) -> str:
        """A number expression: a name in scope, a literal, or a sum."""
        choice = self.draw(st.integers(0, 5))
        if choice == 0:
            return str(self.draw(st.integers(0, 9)))
        if choice == 1:
            return f"{self.pick(self.numbers())} + {self.draw(st.integers(1, 3))}"
        return self.pick(self.numbers())

    def text(self) -> str:
        texts = self.texts()
        if texts and self.draw(st.booleans()):
            return self.pick(texts)
        return '"' + self.pick(("x", "held", "paid", "note {id}")) + '"'

    def condition(self) -> str:
        texts = self.texts()
        choice = self.draw(st.integers(0, 5 if texts else 3))
        if choice <= 1:
            op = self.pick((">", "<", "==", "!=", ">=", "<="))
            return f"{self.pick(self.numbers())} {op} {self.draw(st.integers(0, 5))}"
        if choice == 2:
            return f"{self.condition()} && {self.condition()}"
        if choice == 3:
            return f"!({self.condition()})"
        if choice == 4:
            return f'{self.pick(texts)} == "{self.pick(("x", "held"))}"'
        return f"{self.pick(texts)}.is_empty()"

    # -- statements

    def no_commit(self) -> bool:
        """Where a call that commits is an error: a retried body, a `transaction { }` block."""
        return self.fn.retried or self.in_transaction > 0

    def callees(self) -> list[Fn]:
        if self.no_commit() and self.draw(st.integers(0, 19)) > 0:
            return [f for f in self.callable if not callee_commits(f)]
        # now and then any fn: where that commits, pellc must refuse the program
        return self.callable

    def block(self, depth: int, least: int = 1) -> list[str]:
        self.scopes.append(Scope())
        count = self.draw(st.integers(least, 4 if depth == 0 else 2))
        lines = [line for _ in range(count) for line in self.statement(depth)]
        self.scopes.pop()
        return lines

    def statement(self, depth: int) -> list[str]:
        kinds = ["dml", "dml", "dml"]
        if depth < 2:
            kinds += ["if", "if", "for", "while", "cursor"]
        if self.loops:
            kinds += ["exit", "exit"]
        if self.output:
            kinds.append("output")
        if self.callable:
            kinds += ["call", "call", "call"]
        kinds += ["rowcount", "select"]
        if self.shape.not_found in self.fn.errors:
            kinds.append("select")  # with `?`, mostly
        kinds.append("return")
        if self.fn.kind in ("transaction", "autonomous") and not self.in_transaction:
            kinds.append("transaction")
        elif self.draw(st.integers(0, 39)) == 0:
            kinds.append("transaction")  # where pellc must refuse it
        if self.fn.kind in ("plain", "autonomous") and not self.no_commit():
            kinds.append("commit")
        elif self.draw(st.integers(0, 39)) == 0:
            kinds.append("commit")  # where pellc must refuse it
        kind = self.pick(kinds)
        return getattr(self, f"stmt_{kind}")(depth)  # type: ignore[no-any-return]

    def dml(self) -> str:
        table = self.pick(TABLES)
        key = self.pick(self.binds())
        choice = self.draw(st.integers(0, 3))
        if choice == 0:
            value = self.pick(self.binds())
            texts = self.texts()
            if texts and self.draw(st.booleans()):
                note = self.pick(texts)
                return f"insert into {table} (id, qty, note) values (:{key}, :{value}, :{note})"
            return f"insert into {table} (id, qty) values (:{key}, :{value})"
        if choice == 1:
            value = self.pick(self.binds())
            return f"update {table} set qty = qty + :{value} where id = :{key}"
        if choice == 2 and self.texts():
            return f"update {table} set note = :{self.pick(self.texts())} where id = :{key}"
        return f"delete from {table} where id = :{key}"

    def stmt_dml(self, depth: int) -> list[str]:
        return [f"sql! {{ {self.dml()} }};"]

    def stmt_if(self, depth: int) -> list[str]:
        condition = self.condition()
        if self.draw(st.integers(0, 2)) == 0 and (made := self.call(values=True)) is not None:
            condition = f"{made[1]} > {self.draw(st.integers(0, 3))}"
        lines = [f"if {condition} {{", *self.indent(self.block(depth + 1))]
        if self.draw(st.booleans()):
            if self.draw(st.integers(0, 3)) == 0:
                lines += [f"}} else if {self.condition()} {{", *self.indent(self.block(depth + 1))]
            lines += ["} else {", *self.indent(self.block(depth + 1))]
        return [*lines, "}"]

    def stmt_for(self, depth: int) -> list[str]:
        var = LOOP_VARS[self.loop_vars]
        self.loop_vars += 1
        self.loops += 1
        upper = self.pick(("0..3", "0..=2", "1..3"))
        if self.draw(st.integers(0, 5)) == 0 and (made := self.call(values=True)) is not None:
            upper = f"0..{made[1]}"
        self.scopes.append(Scope(numbers=[var]))
        body = self.block(depth + 1)
        self.scopes.pop()
        self.loops -= 1
        self.loop_vars -= 1
        return [f"for {var} in {upper} {{", *self.indent(body), "}"]

    def stmt_while(self, depth: int) -> list[str]:
        self.locals += 1
        name = f"c{self.locals}"
        self.scopes[-1].numbers.append(name)
        self.loops += 1
        body = self.block(depth + 1)
        self.loops -= 1
        step = f"{name} = {name} + 1;"
        condition = f"{name} < 2"
        if self.draw(st.integers(0, 4)) == 0 and (made := self.call(values=True)) is not None:
            condition += f" && {made[1]} > {self.draw(st.integers(0, 3))}"
        return [f"let {name} = 0;", f"while {condition} {{", f"    {step}", *self.indent(body), "}"]

    def stmt_exit(self, depth: int) -> list[str]:
        return [f"if {self.condition()} {{", f"    {self.pick(('break;', 'continue;'))}", "}"]

    def stmt_cursor(self, depth: int) -> list[str]:
        self.locals += 1
        row, column = f"row{self.locals}", f"rid{self.locals}"
        key = self.pick(self.binds())
        query = f"select id as {column} from {self.pick(TABLES)} where qty > :{key}"
        self.scopes.append(Scope(columns=[column]))
        self.loops += 1
        body = self.block(depth + 1)
        self.loops -= 1
        self.scopes.pop()
        return [f"for {row} in sql! {{ {query} }} {{", *self.indent(body), "}"]

    def stmt_commit(self, depth: int) -> list[str]:
        """What ends the transaction: COMMIT, ROLLBACK, or an Oracle call known to commit."""
        self.commits = True
        options = ["sql! { commit };", "sql! { rollback };"]
        if self.stats:
            options += ['dbms_stats::gather_table_stats("GEN", "STOCK");'] * 4
        return [self.pick(options)]

    def stmt_output(self, depth: int) -> list[str]:
        word = self.pick(("step", "done", "retrying"))
        if self.draw(st.booleans()):
            return [f'dbms_output::put_line("{word} {{{self.pick(self.numbers())}}}");']
        return [f'dbms_output::put_line("{word}");']

    def call(self, values: bool = False) -> tuple[Fn, str] | None:
        """A call of an earlier fn (one returning a number, with `values`), and its text."""
        callees = [f for f in self.callees() if f.returns == "number" or not values]
        if not callees:
            return None
        callee: Fn = self.draw(st.sampled_from(callees))
        return callee, self.call_of(callee)

    def call_of(self, callee: Fn) -> str:
        self.commits = self.commits or callee_commits(callee)
        self.fn.calls.add((callee.module, callee.name))
        args = []
        for name, ty in callee.params:
            ours = self.numbers() if ty == "number" else self.texts()
            if name in ours and self.draw(st.integers(0, 3)) > 0:
                args.append(name)
            elif ty == "number" and not self.nested and self.draw(st.integers(0, 3)) == 0:
                self.nested = True  # a call as an argument, one level deep
                made = self.call(values=True)
                self.nested = False
                args.append(made[1] if made is not None else self.number())
            else:
                args.append(self.number() if ty == "number" else self.text())
        qualified = callee.name
        if callee.module != self.fn.module:
            qualified = f"{MODULES[callee.module].alias}::{callee.name}"
        return f"{qualified}({', '.join(args)})"

    def propagates(self, callee: Fn) -> bool:
        """Can this fn's `?` pass on every error of `callee`?"""
        return (
            bool(callee.errors)
            and callee.module == self.fn.module
            and set(callee.errors) <= set(self.fn.errors)
        )

    def stmt_call(self, depth: int) -> list[str]:
        values = self.draw(st.integers(0, 3)) == 0
        made = self.call(values)
        if made is None:
            return self.stmt_dml(depth)
        callee, text = made
        mark = "?" if self.propagates(callee) and self.draw(st.booleans()) else ""
        if values and callee.returns == "number":
            self.locals += 1
            name = f"r{self.locals}"
            self.scopes[-1].numbers.append(name)
            return [f"let {name}: number = {text}{mark};"]
        return [f"{text}{mark};"]

    def stmt_rowcount(self, depth: int) -> list[str]:
        self.locals += 1
        name = f"n{self.locals}"
        dml = self.dml()
        self.scopes[-1].numbers.append(name)
        return [f"let {name} = sql! {{ {dml} }}.rowcount();"]

    def stmt_select(self, depth: int) -> list[str]:
        self.locals += 1
        name = f"v{self.locals}"
        key = self.pick(self.binds())
        query = f"select qty from {self.pick(TABLES)} where id = :{key}"
        mark = (
            "?" if self.shape.not_found in self.fn.errors and self.draw(st.integers(0, 2)) else ""
        )
        self.scopes[-1].numbers.append(name)
        return [f"let {name}: number = sql! {{ {query} }}.one(){mark};"]

    def stmt_return(self, depth: int) -> list[str]:
        """An early exit (a return, or a raised module error) under a condition."""
        if self.fn.errors and self.draw(st.integers(0, 2)) > 0:
            error = self.pick(self.fn.errors)
            if self.shape.panic in self.fn.errors and self.draw(st.booleans()):
                error = self.shape.panic
            if error == self.shape.panic:
                raised = f"return Err({error});"
            else:
                raised = f"return Err({error} {{ id: {self.number()} }});"
            return [f"if {self.condition()} {{", f"    {raised}", "}"]
        return [f"if {self.condition()} {{", f"    {self.final_return()}", "}"]

    def final_return(self) -> str:
        """`return` with a value of the fn's type."""
        if self.fn.returns == "Unit":
            return "return Ok(());" if self.fn.errors else "return;"
        if self.draw(st.integers(0, 3)) == 0:
            returned = [
                f
                for f in self.callees()
                if f.returns == "number"
                and set(f.errors) <= set(self.fn.errors)
                and (f.module == self.fn.module or not f.errors)
            ]
            if returned:
                callee = self.draw(st.sampled_from(returned))
                made = self.call_of(callee)
                return f"return {made};"
        value = self.number()
        return f"return Ok({value});" if self.fn.errors else f"return {value};"

    def stmt_transaction(self, depth: int) -> list[str]:
        self.in_transaction += 1
        body = self.block(depth + 1)
        self.in_transaction -= 1
        self.commits = True
        self.transactions += 1
        return ["transaction {", *self.indent(body), "}"]

    def cleanup(self) -> list[str]:
        """A `finally` body: DML or output, which every exit runs."""
        if self.output and self.draw(st.booleans()):
            return self.stmt_output(1)
        return self.stmt_dml(1)

    @staticmethod
    def indent(lines: list[str]) -> list[str]:
        return ["    " + line for line in lines]

    def body(self) -> list[str]:
        lines = self.block(0)
        if self.fn.kind == "transaction" and not self.transactions:
            # a block at the start, the end, or between the other statements
            before = self.draw(st.integers(0, len(lines)))
            lines[before:before] = self.stmt_transaction(0)
        if self.fn.errors or self.fn.returns != "Unit":
            lines.append(self.final_return())
        return lines


def retry_annotation(
    draw: Draw,
    fn: Fn,
    module: ModuleShape,
    errors: tuple[str, ...],
    earlier: list[Fn],
    twin: Fn | None,
) -> str:
    """`@retry(...)` with valid arguments, in any order; sets `fn.scope`."""
    args: list[str] = []
    positional = ""
    n = draw(st.sampled_from((None, 1, 2, 3, 4, 5, 6)))
    if n is not None:
        if draw(st.integers(0, 2)) == 0:
            positional = str(n)
        else:
            args.append(f"n = {n}")
    backoff = draw(st.sampled_from((None, None, 10, 50, 100, 250)))
    if backoff is not None:
        args.append(f"{draw(st.sampled_from(('backoff', 'backoff', 'backoff_ms')))} = {backoff}")
        jitter = draw(st.sampled_from((None, 0, 20, 50)))
        if jitter is not None:
            args.append(f"jitter = {jitter}")
        exponential = draw(st.sampled_from((None, "true", "false")))
        if exponential is not None:
            args.append(f"exponential = {exponential}")
        cap = draw(st.sampled_from((None, backoff, backoff * 4, 2000)))
        if cap is not None:
            args.append(f"cap = {cap}")
        within = draw(st.sampled_from((None, None, backoff * 3, 5000)))
        if within is not None:
            args.append(f"within = {within}")
    on = draw(
        st.sampled_from(
            (
                None,
                "[deadlock]",
                "[deadlock, serialization]",
                "[busy, lock_timeout]",
                "[snapshot_too_old]",
                "[deadlock, serialization, busy, lock_timeout]",
                f"[deadlock, {module.error}]" if module.error in errors else None,
                f"[{module.error}]" if module.error in errors else None,
                f"[busy, {module.not_found}]" if module.not_found in errors else None,
            )
        )
    )
    if on is not None:
        args.append(f"on = {on}")
    scope = draw(st.sampled_from((None, "savepoint", "transaction", "transaction")))
    if scope is not None:
        args.append(f'scope = "{scope}"')
    fn.scope = scope or "savepoint"
    if fn.scope == "transaction":
        isolation = draw(st.sampled_from((None, "serializable", "read_committed")))
        if isolation is not None:
            args.append(f'isolation = "{isolation}"')
    recovers = [
        f
        for f in earlier
        if f.module == fn.module
        and f.kind == "plain"
        and f.params == fn.params
        and f.errors == fn.errors
        and f.returns == fn.returns
        and (not f.commits or draw(st.integers(0, 9)) == 0)  # if it does, pellc must refuse it
    ]
    if twin in recovers and draw(st.integers(0, 3)) > 0:
        args.append(f"recover = {twin.name}")  # the fn it was shaped after
    elif recovers and draw(st.booleans()):
        args.append(f"recover = {draw(st.sampled_from(recovers)).name}")
    args = list(draw(st.permutations(args)))
    if positional:
        args.insert(0, positional)
    return f"@retry({', '.join(args)})" if args else draw(st.sampled_from(("@retry", "@retry()")))


def module_text(draw: Draw, index: int, fns: list[Fn]) -> str:
    """One module's text; its fns are appended to `fns`."""
    shape = MODULES[index]
    output = draw(st.booleans())
    stats = draw(st.integers(0, 2)) == 0
    packages = frozenset(
        name for name, used in (("dbms_output", output), ("dbms_stats", stats)) if used
    )
    lines = [f"module {shape.path};", ""]
    if output:
        lines.append("import dbms_output;")
    if stats:
        lines.append("import dbms_stats;")
    if index > 0:
        lines.append(f"import {MODULES[0].path.replace('.', '::')};")
    errors: tuple[str, ...] = draw(
        st.sampled_from(
            (
                (),
                (shape.error,),
                (shape.error, shape.not_found),
                (shape.error, shape.panic),
                (shape.error, shape.not_found, shape.panic),
            )
        )
    )
    for error in (shape.error, shape.not_found):
        if error in errors:
            lines.append(f"error {error} {{ id: number }}")
    if shape.panic in errors:
        lines.append(f"@panic error {shape.panic};")
    count = draw(st.integers(2 if index == 0 else 1, 4))
    for number in range(count):
        kind = draw(st.sampled_from(KINDS))
        # A retried fn shaped like an earlier plain fn, which can be its `recover`.
        twins = [f for f in fns if f.module == index and f.kind == "plain" and not f.commits]
        twin = (
            draw(st.sampled_from(twins))
            if twins and kind == "retry" and draw(st.booleans())
            else None
        )
        fn = Fn(
            name=f"{shape.alias[0]}{number}_{kind[:5]}",
            module=index,
            kind=kind,
            params=draw(st.sampled_from(SIGNATURES)),
            errors=draw(st.sampled_from(((), errors[:1], errors, errors))) if errors else (),
            returns=draw(st.sampled_from(("Unit", "Unit", "number"))),
            pub=index == 0 and draw(st.integers(0, 3)) > 0,
        )
        if twin is not None:
            fn.params, fn.errors, fn.returns = twin.params, twin.errors, twin.returns
        fn.has_finally = kind in ("plain", "transaction") and draw(st.integers(0, 4)) == 0
        callable_fns = [f for f in fns if f.module == index or f.pub]
        annotation = ""
        if fn.retried:
            annotation = retry_annotation(draw, fn, shape, errors, fns, twin) + "\n"
        elif fn.kind == "autonomous":
            annotation = "@autonomous\n"
        gen = BodyGen(draw, fn, callable_fns, packages, shape)
        body = gen.body()
        fn.commits = gen.commits or (fn.retried and fn.scope == "transaction")
        params = ", ".join(f"{name}: {ty}" for name, ty in fn.params)
        lines += [
            "",
            f"{annotation}{'pub ' if fn.pub else ''}fn {fn.name}({params}){fn.return_type()} {{",
            *BodyGen.indent(body),
            "}",
        ]
        if fn.has_finally:
            cleanup = BodyGen(draw, fn, [], packages, shape)
            lines[-1] = "} finally {"
            lines += [*BodyGen.indent(cleanup.cleanup()), "}"]
        fns.append(fn)
    return "\n".join(lines) + "\n"


@st.composite
def programs(draw: Draw) -> Program:
    """A program of one module, or of two where the second calls into the first."""
    target = draw(st.sampled_from(TARGETS))
    fns: list[Fn] = []
    texts = [module_text(draw, 0, fns)]
    if draw(st.booleans()):
        texts.append(module_text(draw, 1, fns))
    return Program(target, tuple(texts), tuple(fns))


if __name__ == "__main__":  # pragma: no cover - a tool for measuring the generator
    import collections
    import sys
    import time

    from hypothesis import HealthCheck, given, settings

    from pell import compile_source
    from pell.checker.retry_safety import project_findings
    from pell.verify import verify

    total = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    tally: collections.Counter[str] = collections.Counter()
    rejected: collections.Counter[str] = collections.Counter()
    features: collections.Counter[str] = collections.Counter()
    started = time.perf_counter()

    @settings(
        max_examples=total,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(programs())
    def measure(program: Program) -> None:
        tally["generated"] += 1
        results = [
            compile_source(text, filename=name, target=program.target)
            for name, text in zip(program.filenames(), program.texts, strict=True)
        ]
        codes = {d.code for r in results for d in r.diagnostics if d.is_error}
        facts = [r.retry_facts for r in results if r.retry_facts is not None]
        if len(facts) > 1 and all(r.ok for r in results):
            across = project_findings(facts)
            codes |= {d.code for found in across.values() for d in found if d.is_error}
        if codes:
            rejected.update(codes)
            return
        tally["compiled"] += 1
        tally["modules"] += len(results)
        features.update(program.features())
        report = verify(results)
        if report.has_errors:
            tally["verify errors"] += 1
            print(program.render())
            print("\n".join(f.render() for f in report.findings if f.severity.value == "error"))

    measure()
    elapsed = time.perf_counter() - started
    print(dict(tally), f"{elapsed:.1f}s")
    print("compile rate", tally["compiled"] / max(tally["generated"], 1))
    print("rejected by", dict(rejected.most_common()))
    print("programs that compiled, per feature:")
    for feature in FEATURES:
        print(f"  {features[feature]:5d}  {feature}")
