"""Whole Pell programs from a seed, and a lint of the PL/SQL pellc writes for them.

`generate(seed)` writes one program, deterministically from `random.Random(seed)`: a module name
(reserved words and case variants as parts), Oracle package imports, records, errors of every
category, enums, and fns with every parameter mode, return type, statement, expression form and
annotation, nested to a bounded depth. Most programs are meant to be valid so they reach code
generation; some carry deliberate mistakes, and a few are stress shapes (deep nesting, huge
numbers, long literals).

`examine(program)` compiles it and returns its findings. The contract for every program: either
SQL that parseora accepts and that passes `lint_sql` (what parseora cannot see: duplicate
declarations, identifier and literal lengths, reserved words, `/` lines), or no SQL and located
diagnostics with at least one error. An exception, or a compile slower than `SLOW_SECONDS`, is a
finding too.

Command line (from the repository root):

    python tests/fuzz_programs.py show SEED            # the program of one seed
    python tests/fuzz_programs.py check SEED           # its findings
    python tests/fuzz_programs.py run [START] [COUNT]  # findings of a range, grouped by cause
    python tests/fuzz_programs.py shrink SEED          # a small reproducer of its first finding
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import re
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

if __name__ == "__main__":  # run as a script: conftest and pell from this checkout
    sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

import parseora
from conftest import oracle_parse_errors

import pell
from pell.diagnostics import render_all
from pell.naming import MAX_IDENTIFIER_BYTES, ORACLE_RESERVED, PIVOT_ITEM_FUNCTION

TARGETS = ("23ai", "19c", "12.2")
# A compile slower than this is a finding; one that reaches HANG_SECONDS is stopped.
SLOW_SECONDS = float(os.environ.get("PELL_FUZZ_SLOW_SECONDS", "5"))
HANG_SECONDS = float(os.environ.get("PELL_FUZZ_HANG_SECONDS", "20"))
MAX_TEXT_LITERAL_BYTES = 32767

# ---- names -------------------------------------------------------------------------------

PELL_KEYWORDS = frozenset(
    """module import pub fn let var return if else for while in break continue transaction
    record error enum true false None Some Ok Err finally out inout unsafe yield""".split()
)
# Names that are types in Pell: a record of that name could not be named as a type.
PELL_TYPE_NAMES = frozenset(
    {"Option", "Result", "Unit", "list", *("number int text bigtext bool date timestamp".split())}
)
PLAIN_WORDS = (
    "a", "b", "x", "y", "n", "k", "total", "amount", "status", "qty", "label", "flag", "note",
    "price", "rate", "day", "msg", "acc", "item", "val", "res", "idx", "owner", "balance",
    "code", "score", "source", "target", "x1", "v2", "name", "id",
)  # fmt: skip
# Oracle reserved words that are legal Pell names (ORACLE_RESERVED minus Pell's keywords).
RESERVED_WORDS = (
    "check", "order", "number", "table", "level", "comment", "delete", "update", "select",
    "from", "type", "date", "size", "start", "user", "rows", "file", "mode", "session", "index",
    "access", "uid", "group", "desc", "option", "share", "lock", "raw", "long", "values", "view",
    "where", "with", "when", "by", "of", "on", "to", "is", "as", "and", "or", "not", "null",
    "all", "any", "column", "row", "set", "union", "unique", "resource", "public", "trigger",
    "current", "cursor", "default", "exception", "function", "procedure", "declare", "begin",
    "end", "between", "like", "having", "distinct", "connect", "prior", "exists", "sql",
    "rowid", "rownum", "sysdate", "char", "integer", "float", "decimal", "varchar2",
)  # fmt: skip
# Names the lowering uses for its own locals and helpers, written by a user.
INTERNAL_WORDS = (
    "pell_result", "pell_attempt", "pell_i", "pell_saved_a", "pell_finally", "pell_is_panic",
    "pell_finally_done", "pell_deadline", "pell_sleep", "pell_module", "pell_action",
    "pell_number_list", "pell_text_list", "pell_deadlock", "pell_runtime", "pell_busy",
)  # fmt: skip
RECORD_WORDS = (
    "Order", "Item", "Account", "Pay", "Entry", "Line", "Check", "Table", "Level", "Comment",
    "Session", "Type", "User", "Group", "Row", "Point", "Money", "Ledger", "Stock",
)  # fmt: skip
# Record names whose PL/SQL names meet those of built-in types: t_number, t_number_list.
TYPE_LIKE_WORDS = (
    "Number",
    "Date",
    "Text",
    "Int",
    "Bool",
    "Order_list",
    "Number_list",
    "Text_list",
)
MODULE_WORDS = ("billing", "hr", "orders", "app", "core", "feed", "sales", "x", "inventory")
ODD_MODULE_WORDS = (
    "check", "order", "number", "table", "level", "user", "session", "Check", "ORDER", "Number",
    "HR", "Table", "pell_runtime", "dual", "sys", "pell",
)  # fmt: skip
ORACLE_PACKAGES = (
    "dbms_output", "utl_http", "dbms_random", "dbms_stats", "dbms_lock", "dbms_utility",
    "dbms_lob", "dbms_application_info", "utl_file", "dbms_session", "dbms_sql", "utl_smtp",
)  # fmt: skip
ODD_NAMES = ("_x", "x_", "a__b", "X9", "_9", "_", "__")
# (package, fn, parameter kinds, result kind or None for a procedure, commits)
ORACLE_CALLS: tuple[tuple[str, str, tuple[str, ...], str | None, bool], ...] = (
    ("dbms_output", "put_line", ("text",), None, False),
    ("dbms_output", "put", ("text",), None, False),
    ("dbms_random", "value", (), "number", False),
    ("dbms_random", "value", ("number", "number"), "number", False),
    ("dbms_random", "string", ("text", "int"), "text", False),
    ("dbms_random", "seed", ("int",), None, False),
    ("utl_http", "request", ("text",), "text", False),
    ("dbms_stats", "gather_table_stats", ("text", "text"), None, True),
    ("dbms_lock", "sleep", ("number",), None, False),
    ("dbms_session", "sleep", ("number",), None, False),
    ("dbms_utility", "get_time", (), "number", False),
    ("dbms_lob", "getlength", ("bigtext",), "int", False),
    ("dbms_application_info", "set_action", ("text",), None, False),
    ("utl_file", "fremove", ("text", "text"), None, False),
    ("utl_smtp", "quit", ("text",), None, False),
)
EXTRA_IMPORTS = (
    "dbms_sql",
    "dbms_lob",
    "apex_json",
    "utl_raw",
    "hr::employees",
    "sys::dbms_output",
)
TABLES = ("items", "orders_t", "accounts", "ledger", "t1", "audit_log", "jobs")
COLUMNS = ("id", "name", "amount", "status", "price", "qty", "note", "created", "c1", "c2", "c3")
SCALAR_KINDS = ("number", "int", "text", "bigtext", "bool", "date", "timestamp")


# ---- types --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Ty:
    """A Pell type as the generator sees it."""

    kind: str  # a scalar kind, "record", "enum", "list" or "option"
    name: str = ""  # the record's or enum's name
    elem: Ty | None = None  # a list's element, an option's inner type
    spelling: str = ""  # "?" or "Option" for an option

    def pell(self) -> str:
        if self.kind == "list":
            assert self.elem is not None
            return f"list<{self.elem.pell()}>"
        if self.kind == "option":
            assert self.elem is not None
            inner = self.elem.pell()
            return f"{inner}?" if self.spelling == "?" else f"Option<{inner}>"
        if self.kind in ("record", "enum"):
            return self.name
        return self.kind

    def base(self) -> Ty:
        ty = self
        while ty.kind == "option" and ty.elem is not None:
            ty = ty.elem
        return ty

    def family(self) -> str:
        """What the checker compares: numeric and text families, records by name."""
        base = self.base()
        if base.kind in ("number", "int"):
            return "numeric"
        if base.kind in ("text", "bigtext", "enum"):
            return "text"
        if base.kind == "record":
            return "record:" + base.name
        if base.kind == "list":
            assert base.elem is not None
            return "list:" + base.elem.base().pell()
        return base.kind

    def scalar(self) -> bool:
        return self.base().kind in SCALAR_KINDS or self.base().kind == "enum"

    def fits(self, wanted: Ty) -> bool:
        """May a value of this type stand where `wanted` is expected? One family, and never a
        `number` where an `int` is wanted (it may hold a fraction)."""
        return self.family() == wanted.family() and not (
            wanted.base().kind == "int" and self.base().kind == "number"
        )


NUMBER = Ty("number")
INT = Ty("int")
TEXT = Ty("text")
BOOL = Ty("bool")


@dataclass(slots=True)
class Var:
    name: str
    ty: Ty | None  # None: the row of a cursor loop
    assignable: bool
    columns: tuple[str, ...] = ()  # a cursor row's names


@dataclass(slots=True)
class RecordDecl:
    name: str
    fields: list[tuple[str, Ty]]


@dataclass(slots=True)
class ErrorDecl:
    name: str
    fields: list[tuple[str, Ty]] | None  # None: `error Name;`
    category: str = "propagate"


@dataclass(slots=True)
class EnumDecl:
    name: str
    variants: list[str]


@dataclass(slots=True)
class Param:
    mode: str  # "in", "out" or "inout"
    name: str
    ty: Ty


@dataclass(slots=True)
class FnDecl:
    name: str
    params: list[Param]
    ret: Ty | None  # the value type; None: no value
    result: bool = False  # Result<..., E1 | E2>
    errors: list[str] = field(default_factory=list)
    annotations: list[str] = field(default_factory=list)
    pub: bool = True
    pipelined: bool = False
    retried: bool = False
    transaction_scoped: bool = False
    autonomous: bool = False
    has_finally: bool = False
    recover_of: FnDecl | None = None  # this fn is the `recover` of that one
    ret_text: str = ""
    index: int = 0  # a fn calls only fns of a lower index: no recursion, known commits
    commits: bool = False  # its body (or a fn it calls) commits


@dataclass(frozen=True, slots=True)
class Program:
    seed: int
    target: str
    text: str
    # Also read from bytes with a byte-order mark and/or other line ends ("bom", "crlf", "cr",
    # "bom+crlf", "bom+cr"): only offsets may change.
    variant: str = ""


# ---- the generator ---------------------------------------------------------------------------


class Generator:
    """One program from one seed. Every choice comes from `self.rng`."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        rng = self.rng
        roll = rng.random()
        # How often a choice is deliberately wrong: most programs are meant to be valid.
        self.chaos = 0.0 if roll < 0.7 else 0.2 if roll < 0.9 else 1.0
        self.target = rng.choice(TARGETS)
        # Shapes at the edges, each in some programs only, so the rest stay mostly valid.
        self.long_names = rng.random() < 0.08
        self.huge_numbers = rng.random() < 0.06
        self.long_literals = rng.random() < 0.06
        self.odd_names = rng.random() < 0.06
        self.nested_lists = rng.random() < 0.04
        self.join_twins = (
            rng.random() < 0.05
        )  # names that meet once joined with `_`  # `[[1, 2], [3]].len()`: not supported, answered
        self.internal_names = rng.random() < 0.25
        self.case_twins = rng.random() < 0.12  # `Order` beside `ORDER`, `a` beside `A`
        self.type_like_names = rng.random() < 0.06
        self.slash_lines = rng.random() < 0.1  # a line holding only `/` in a literal or sql!
        self.all_names: list[str] = []
        self.items: list[
            str
        ] = []  # every item name: records, errors, enums, fns share one namespace
        self.records: list[RecordDecl] = []
        self.errors: list[ErrorDecl] = []
        self.enums: list[EnumDecl] = []
        self.fns: list[FnDecl] = []
        self.imports: list[str] = []
        self.counter = 0

    # -- helpers

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def bad(self, p: float) -> bool:
        """A deliberate mistake, as often as this program's chaos allows."""
        return self.chaos > 0 and self.rng.random() < p * self.chaos

    def pick(self, weighted: list[tuple[float, Callable[[], str]]]) -> str:
        options = [(w, f) for w, f in weighted if w > 0]
        total = sum(w for w, _ in options)
        roll = self.rng.random() * total
        for weight, make in options:
            roll -= weight
            if roll <= 0:
                return make()
        return options[-1][1]()

    def case_variant(self, name: str) -> str:
        for variant in self.rng.sample(
            [name.upper(), name.lower(), name.swapcase(), name[:1].upper() + name[1:]], 4
        ):
            if variant != name:
                return variant
        return name + "_"

    def long_name(self) -> str:
        length = self.rng.choice(
            [self.rng.randint(24, 34), self.rng.randint(118, 135), self.rng.randint(60, 70)]
        )
        stem = self.rng.choice(["long", "very_long", "customer_account", "x"])
        return (stem + "_" + "abcdefghij" * 20)[:length].rstrip("_")

    def fresh(self, taken: Iterable[str], capital: bool = False) -> str:
        """A name not in `taken`: mostly plain words, also reserved words, case variants of
        names already used, the lowering's own names, long names and odd shapes."""
        taken = set(taken)
        if self.bad(0.01):
            return self.rng.choice(sorted(PELL_KEYWORDS))
        for _ in range(60):
            roll = self.rng.random()
            if roll < 0.55:
                name = self.rng.choice(RECORD_WORDS if capital else PLAIN_WORDS)
            elif roll < 0.72:
                name = self.rng.choice(RESERVED_WORDS)
            elif roll < 0.8 and capital and self.type_like_names:
                name = self.rng.choice(TYPE_LIKE_WORDS)
            elif roll < 0.8 and self.all_names and self.case_twins:
                name = self.case_variant(self.rng.choice(self.all_names))
            elif roll < 0.86 and self.internal_names:
                name = self.rng.choice(INTERNAL_WORDS)
            elif roll < 0.9 and self.long_names:
                name = self.long_name()
            elif roll < 0.94 and self.odd_names:
                name = self.rng.choice(ODD_NAMES) + str(self.rng.randrange(3))
            else:
                name = f"{self.rng.choice(PLAIN_WORDS)}_{self.rng.choice(PLAIN_WORDS)}"
            if capital and name[:1].islower():
                name = name[:1].upper() + name[1:]
            folded = {t.lower() for t in taken} if not self.case_twins else set()
            if (
                name not in taken
                and name.lower() not in folded
                and name not in PELL_KEYWORDS
                and (not capital or name not in PELL_TYPE_NAMES)
            ):
                self.all_names.append(name)
                return name
        self.counter += 1
        return f"z{self.counter}"

    # -- types

    def scalar_ty(self, sql: bool = False) -> Ty:
        """A scalar type; `sql`: one a SQL row of this target can hold."""
        kinds: tuple[str, ...] = SCALAR_KINDS
        if sql and self.target != "23ai":
            kinds = tuple(k for k in kinds if k != "bool")
        weights = {
            "number": 6,
            "int": 4,
            "text": 6,
            "bigtext": 1,
            "bool": 2,
            "date": 1,
            "timestamp": 1,
        }
        return Ty(self.rng.choices(kinds, weights=[weights[k] for k in kinds])[0])

    def list_elem_ty(self) -> Ty:
        if self.records and self.chance(0.35):
            return Ty("record", self.rng.choice(self.records).name)
        if self.bad(0.05):
            return Ty("list", elem=NUMBER)  # list<list<number>>: not supported
        return Ty(self.rng.choice(["number", "text", "int", "number", "bool", "date"]))

    def value_ty(self, allow_records: bool = True, allow_lists: bool = True) -> Ty:
        roll = self.rng.random()
        if roll < 0.62:
            return self.scalar_ty()
        if roll < 0.77 and allow_records and self.records:
            return Ty("record", self.rng.choice(self.records).name)
        if roll < 0.87 and allow_lists:
            return Ty("list", elem=self.list_elem_ty())
        if roll < 0.92 and self.enums:
            return Ty("enum", self.rng.choice(self.enums).name)
        return Ty("option", elem=self.scalar_ty(), spelling=self.rng.choice(["?", "Option"]))

    def record(self, name: str) -> RecordDecl:
        return next(r for r in self.records if r.name == name)

    def sql_record(self, record: RecordDecl) -> bool:
        """Can a SQL row of this target fill the record, field by field?"""
        return all(
            t.scalar() and (self.target == "23ai" or t.base().kind != "bool")
            for _, t in record.fields
        ) and bool(record.fields)

    def row_record(self, record: RecordDecl) -> bool:
        """Can the record be the row of a @pipelined fn (a SQL object type)?"""
        return bool(record.fields) and all(
            t.kind in SCALAR_KINDS and t.kind != "bool" for _, t in record.fields
        )

    # -- the program

    def program(self) -> Program:
        rng = self.rng
        parts = [self.module_part() for _ in range(rng.choice([1, 1, 2, 2, 2, 3]))]
        separator = rng.choice([".", "::"])
        for package in rng.sample(ORACLE_PACKAGES, rng.randint(0, 3)):
            self.imports.append(package)
        items: list[str] = []
        for _ in range(rng.choice([0, 1, 1, 2, 2, 3])):
            items.append(self.record_item())
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
            items.append(self.error_item())
        for _ in range(rng.choice([0, 0, 0, 1, 2])):
            items.append(self.enum_item())
        if self.join_twins:  # one shape per program, so that no one hides another
            shape = rng.choice(["enum", "record", "runtime"])
            if shape == "runtime" and "Transaction_open" not in self.items:
                # module `pell` (or `pell.transaction`) with an error whose exception would be
                # pell_transaction_open, the runtime's own
                parts = ["pell"] if self.chance(0.5) else ["pell", "transaction"]
                name = "Transaction_open" if len(parts) == 1 else "Open"
                self.items.append(name)
                self.errors.append(ErrorDecl(name, None))
                items.append(f"error {name};")
            else:
                items += self.join_twin_items(shape)
        for _ in range(rng.choice([1, 1, 2, 2, 3, 4])):
            fn = self.fn_signature()
            fn.index = len(self.fns)
            self.fns.append(fn)
        for fn in list(self.fns):
            self.fn_annotations(fn)
        for index, fn in enumerate(self.fns):
            fn.index = index
        fn_items = [self.fn_item(fn) for fn in self.fns]
        body = items + fn_items
        if rng.random() < 0.3:
            rng.shuffle(body)
        if self.chance(0.03):
            body.append(self.stress_item())
        head = [f"module {separator.join(parts)};"]
        head += [f"import {package};" for package in self.imports]
        if self.chance(0.1):
            head.append(f"import {rng.choice(EXTRA_IMPORTS)};")
        text = "\n".join(head) + "\n\n" + "\n\n".join(body) + "\n"
        if self.chance(0.05):
            text = "// generated\n/* a block\n   comment */\n" + text
        if self.bad(0.12):
            text = self.corrupt(text)
        variant = ""
        if self.chance(0.08):
            variant = self.rng.choice(["bom", "crlf", "cr", "bom+crlf", "bom+cr"])
        return Program(self.seed, self.target, text, variant)

    def module_part(self) -> str:
        roll = self.rng.random()
        if roll < 0.8:
            return self.rng.choice(MODULE_WORDS)
        if roll < 0.88:
            return self.rng.choice(ODD_MODULE_WORDS)
        if roll < 0.92:
            return self.case_variant(self.rng.choice(MODULE_WORDS))
        if self.long_names:
            return self.long_name()
        return self.rng.choice(["m1", "a_b", "Sales_2024", "_m" if self.odd_names else "m2"])

    def pub(self) -> str:
        return "pub " if self.chance(0.6) else ""

    def misc_annotation(self) -> str:
        """Annotations on records, errors and enums: mostly none, sometimes a misuse."""
        if self.bad(0.08):
            return self.rng.choice(["@retry\n", "@autonomous\n", "@panic\n", "@udf\n"])
        if self.chance(0.03):
            return self.rng.choice(['@doc("x")\n', "@Deprecated\n", "@since(2)\n"])
        return ""

    def record_item(self) -> str:
        taken = self.items
        name = self.fresh(taken, capital=True)
        if self.records and self.case_twins and self.chance(0.3):
            twin = self.case_variant(self.rng.choice(self.records).name)  # Order beside ORDER
            if twin not in taken and twin not in PELL_TYPE_NAMES:
                name = twin
        self.items.append(name)
        fields: list[tuple[str, Ty]] = []
        for _ in range(self.rng.randint(1 if not self.bad(0.05) else 0, 5)):
            names = [f for f, _ in fields]
            fname = self.fresh(names)
            if fields and self.case_twins and self.chance(0.2):
                twin = self.case_variant(self.rng.choice(names))  # a beside A
                if twin not in names:
                    fname = twin
            ty = self.value_ty()
            if ty.kind == "record" and self.chance(0.5):
                ty = self.scalar_ty()
            fields.append((fname, ty))
        if self.bad(0.04) and fields:
            fields.append(fields[0])  # a duplicate field
        if self.bad(0.03):
            fields.append(("me", Ty("record", name)))  # a record that holds itself
        self.records.append(RecordDecl(name, fields))
        body = ", ".join(f"{f}: {t.pell()}" for f, t in fields)
        if len(fields) > 2 and self.chance(0.5):
            body = "\n    " + ",\n    ".join(f"{f}: {t.pell()}" for f, t in fields) + ",\n"
        return f"{self.misc_annotation()}{self.pub()}record {name} {{ {body} }}"

    def error_item(self) -> str:
        taken = self.items
        name = ""
        if self.chance(0.3):
            name = self.rng.choice(["Order", "Account", "Item", "Row", "Check"]) + "NotFound"
        elif self.chance(0.03):
            name = "Transaction_open"  # in module `pell`: the runtime's own pell_transaction_open
        elif self.errors and self.case_twins and self.chance(0.3):
            name = self.case_variant(self.rng.choice(self.errors).name)  # E beside e
        if not name or name in taken:
            name = self.fresh(taken, capital=True)
        self.items.append(name)
        category = self.rng.choice(["", "", "@propagate\n", "@skip\n", "@panic\n"])
        if self.bad(0.05):
            category = self.rng.choice(["@skip @panic\n", "@propagate(1)\n", "@fatal\n"])
        annotations = category + self.misc_annotation()
        kind = category.strip().lstrip("@") or "propagate"
        if self.chance(0.4):
            self.errors.append(ErrorDecl(name, None, kind))
            return f"{annotations}{self.pub()}error {name};"
        fields: list[tuple[str, Ty]] = []
        for _ in range(self.rng.randint(0, 4)):
            fname = self.fresh([f for f, _ in fields])
            ty = self.scalar_ty() if not self.bad(0.1) else self.value_ty()
            fields.append((fname, ty))
        self.errors.append(ErrorDecl(name, fields, kind))
        body = ", ".join(f"{f}: {t.pell()}" for f, t in fields)
        return f"{annotations}{self.pub()}error {name} {{ {body} }}"

    def enum_item(self) -> str:
        name = self.fresh(self.items, capital=True)
        self.items.append(name)
        variants: list[str] = []
        for _ in range(self.rng.randint(1, 4)):
            if variants and self.case_twins and self.chance(0.25):
                variant = self.case_variant(self.rng.choice(variants))  # Red beside RED
            else:
                variant = self.fresh(variants, capital=True)
            if variant not in variants:
                variants.append(variant)
        self.enums.append(EnumDecl(name, variants))
        written = []
        for variant in variants:
            if self.chance(0.4):
                written.append(f"{variant} = {self.string_literal()}")
            else:
                written.append(variant)
        return f"{self.misc_annotation()}{self.pub()}enum {name} {{ {', '.join(written)} }}"

    def join_twin_items(self, shape: str) -> list[str]:
        """Items whose PL/SQL names meet once their parts are joined with `_`: enum `A` with
        variant `B_c` beside enum `A_b` with variant `C` (both `c_a_b_c`), or a record
        `X_list` beside `list<X>` (both `t_x_list`)."""
        out: list[str] = []
        if shape == "enum":
            a, b, c = (self.fresh(self.items, capital=True) for _ in range(3))
            out = [f"enum {a} {{ {b}_{c.lower()} }}", f"enum {a}_{b.lower()} {{ {c} }}"]
            self.enums += [EnumDecl(a, [f"{b}_{c.lower()}"]), EnumDecl(f"{a}_{b.lower()}", [c])]
            self.items += [a, f"{a}_{b.lower()}"]
            return out
        element = self.rng.choice([*(r.name for r in self.records), "Number", "Text", "Int"])
        if f"{element}_list" not in self.items:
            self.items.append(f"{element}_list")
            self.records.append(RecordDecl(f"{element}_list", [("a", NUMBER)]))
            out.append(f"record {element}_list {{ a: number }}")
        return out

    def fn_signature(self) -> FnDecl:
        taken = self.items
        name = self.fresh(taken)
        if self.fns and self.case_twins and self.chance(0.2):
            twin = self.case_variant(self.rng.choice(self.fns).name)  # f beside F
            if twin not in taken:
                name = twin
        self.items.append(name)
        params: list[Param] = []
        for _ in range(self.rng.choice([0, 1, 1, 2, 2, 3, 4])):
            names = [p.name for p in params]
            pname = self.fresh(names)
            if params and self.case_twins and self.chance(0.15):
                twin = self.case_variant(self.rng.choice(names))
                if twin not in names:
                    pname = twin
            mode = self.rng.choices(["in", "out", "inout"], weights=(7, 1, 2))[0]
            params.append(Param(mode, pname, self.value_ty()))
        if self.chance(0.04):  # list<number> beside a record Number: t_number_list twice?
            params.append(
                Param("in", self.fresh([p.name for p in params]), Ty("list", elem=NUMBER))
            )
        fn = FnDecl(name, params, None)
        roll = self.rng.random()
        if roll < 0.25:
            fn.ret_text = self.rng.choice(["", "", "", " -> ()", " -> Unit"])
        elif roll < 0.6:
            fn.ret = self.value_ty()
            fn.ret_text = f" -> {fn.ret.pell()}"
        elif roll < 0.7:
            inner = self.value_ty(allow_lists=False).base()
            fn.ret = Ty("option", elem=inner, spelling=self.rng.choice(["?", "Option"]))
            fn.ret_text = f" -> {fn.ret.pell()}"
        elif roll < 0.93 and self.errors:
            fn.result = True
            fn.errors = self.rng.sample(
                [e.name for e in self.errors], self.rng.randint(1, min(3, len(self.errors)))
            )
            value = "Unit"
            if self.chance(0.7):
                fn.ret = self.value_ty()
                value = fn.ret.pell()
            if self.bad(0.05):
                fn.errors.append("Nope")
            fn.ret_text = f" -> Result<{value}, {' | '.join(fn.errors)}>"
        elif roll < 0.99:
            fn.pipelined = True
            rows = [r for r in self.records if self.row_record(r)]
            if rows and self.chance(0.5):
                elem = Ty("record", self.rng.choice(rows).name)
            else:
                elem = Ty(self.rng.choice(["number", "text", "int", "date"]))
            if self.bad(0.1):
                elem = self.value_ty()
            fn.ret = Ty("list", elem=elem)
            fn.ret_text = f" -> {fn.ret.pell()}"
            for param in params:  # SQL calls it: `in` parameters only
                if not self.bad(0.1):
                    param.mode = "in"
        else:
            fn.ret = self.value_ty()
            fn.ret_text = f" -> {fn.ret.pell()}"
        fn.pub = self.chance(0.65)
        fn.has_finally = self.chance(0.08) and not fn.pipelined
        return fn

    def fn_annotations(self, fn: FnDecl) -> None:
        rng = self.rng
        notes: list[str] = []
        if fn.pipelined or self.bad(0.03):
            notes.append("@pipelined")
        plain = not fn.pipelined and not fn.has_finally
        if fn.recover_of is None and self.chance(0.25) and (plain or self.bad(0.5)):
            fn.retried = True
            notes.append(self.retry_annotation(fn))
            if self.chance(0.02):
                notes.append(self.retry_annotation(fn))  # twice: an error
        if self.chance(0.08) and (not fn.retried or self.bad(0.5)):
            fn.autonomous = True
            notes.append("@autonomous")
        for name, p in (("@deterministic", 0.05), ("@result_cache", 0.04), ("@udf", 0.04)):
            if self.chance(p) and ((fn.ret is not None and not fn.retried) or self.bad(0.5)):
                notes.append(name)
        if self.chance(0.05):
            notes.append(
                rng.choice(
                    ["@inline", "@memoize(3)", "@cache(ttl = 10)", "@Retry", "@RETRY(n = 2)",
                     '@trace(level = "debug", on = true)', "@AUTONOMOUS",
                     f"@trace({self.annotation_args()})"]
                )
            )  # fmt: skip
        if self.bad(0.03):
            notes.append(rng.choice(["@panic", "@skip", "@propagate"]))
        rng.shuffle(notes)
        fn.annotations = notes

    def annotation_args(self) -> str:
        """Arguments of an unknown annotation: any expression form, positional or named."""
        values = [
            "1 + 2 * 3", "[1, [2]]", '"a {1 + 1} {{b}}"', "-1", "[deadlock, busy]", "f(1, x)",
            "R { a: 1 }", "Some(None)", "x.y.z", "!true", "`raw`", self.number_literal(),
            "(1)", "None", "Ok(())", "Err(E)",
        ]  # fmt: skip
        args = []
        for _ in range(self.rng.randint(1, 3)):
            value = self.rng.choice(values)
            args.append(
                value if self.chance(0.5) else f"{self.rng.choice(['x', 'on', 'n'])} = {value}"
            )
        return ", ".join(args)

    def number_literal(self, integer: bool = False) -> str:
        roll = self.rng.random()
        if roll < 0.55:
            return str(self.rng.choice([0, 1, 2, 3, 5, 7, 10, 42, 100, 1000]))
        if roll < 0.7 and not integer:
            return self.rng.choice(["3.14", "0.5", "1.0", "2.25", "1_000.5", "0.000_1"])
        if roll < 0.85:
            return self.rng.choice(["1_000", "007", "65535", "2147483647", "99", "0_0"])
        if integer:  # past PLS_INTEGER's range a literal is a `number`
            return str(self.rng.randrange(10**6, 2**31))
        if roll < 0.93 or not self.huge_numbers:
            return str(self.rng.randrange(10**6, 10**12))
        return self.huge_number()

    def huge_number(self) -> str:
        roll = self.rng.random()
        if roll < 0.7:
            return "9" * self.rng.choice([30, 38, 39, 40, 125, 126, 127, 200])
        if roll < 0.8:
            return "2147483648"
        if roll < 0.9:
            return "1." + "5" * self.rng.choice([40, 130, 5000])
        return "1" + "0" * self.rng.choice([4300, 4301, 5000])

    def retry_annotation(self, fn: FnDecl) -> str:
        """`@retry(...)` with every argument, now and then one with a wrong value."""
        rng = self.rng
        if self.chance(0.1):
            return "@retry"
        if self.chance(0.05):
            return "@retry()"
        wrong_key = rng.choice(
            ["n", "backoff", "jitter", "exponential", "cap", "on", "scope", "isolation", "within",
             "recover", "observe", "positional", "unknown"]
        ) if self.chance(0.15) else ""  # fmt: skip
        own_errors = [e.name for e in self.errors if e.category != "panic"]
        args: list[str] = []
        if self.chance(0.2) or wrong_key == "positional":
            if wrong_key == "positional":
                args.append(rng.choice(["0", "-2", "1.5", "true", self.huge_number()]))
            else:
                args.append(rng.choice(["3", "5", "1"]))
        keys = rng.sample(
            ["n", "backoff", "jitter", "exponential", "cap", "on", "scope", "isolation", "within",
             "recover", "observe"],
            rng.randint(0, 6),
        )  # fmt: skip
        if wrong_key and wrong_key in keys:
            keys.remove(wrong_key)
        if wrong_key and wrong_key not in ("positional", "unknown"):
            keys.append(wrong_key)
        if args and "n" in keys and wrong_key != "n":
            keys.remove("n")
        if "isolation" in keys and "scope" not in keys:
            keys.insert(0, "scope")
        scope = "savepoint"
        backoff = rng.choice([0, 10, 50, 100, 2000])
        for key in keys:
            wrong = key == wrong_key
            if key == "n":
                value = (
                    str(rng.randint(1, 8))
                    if not wrong
                    else rng.choice(
                        ["0", "-1", "1.5", '"3"', "true", "100000000", "n", self.huge_number()]
                    )
                )
            elif key == "backoff":
                key = rng.choice(["backoff", "backoff", "backoff_ms"])
                value = (
                    str(backoff)
                    if not wrong
                    else rng.choice(["-5", "1.5", '"100"', "true", "3600001", self.huge_number()])
                )
            elif key == "jitter":
                value = (
                    rng.choice(["0", "20", "true", "false"])
                    if not wrong
                    else rng.choice(["-1", '"x"', "1.5", "[1]"])
                )
            elif key == "exponential":
                value = rng.choice(["true", "false"]) if not wrong else rng.choice(["1", '"yes"'])
            elif key == "cap":
                key = rng.choice(["cap", "cap", "cap_ms"])
                value = str(backoff + rng.choice([0, 100, 5000]))
                if wrong:
                    value = rng.choice(["-1", "0.5", '"2s"'])
            elif key == "on":
                classes = ["deadlock", "busy", "lock_timeout", "snapshot_too_old"]
                if scope == "transaction":
                    classes.append("serialization")
                chosen = rng.sample(classes + own_errors, rng.randint(1, 3))
                value = "[" + ", ".join(chosen) + "]"
                if wrong:
                    value = rng.choice(
                        ["[]", "[nope]", "deadlock", "[deadlock, deadlock]", '["busy"]', "[1]",
                         "[serialization]"]
                    )  # fmt: skip
            elif key == "scope":
                scope = rng.choice(["savepoint", "transaction"])
                if "isolation" in keys:
                    scope = "transaction"
                value = f'"{scope}"' if not wrong else rng.choice(['"txn"', "savepoint", "1"])
            elif key == "isolation":
                value = rng.choice(['"serializable"', '"read_committed"'])
                if wrong:
                    value = rng.choice(['"dirty"', "serializable"])
            elif key == "within":
                value = (
                    rng.choice(["100", "5000", "3600000"])
                    if not wrong
                    else rng.choice(["0", "-1", '"1s"'])
                )
            elif key == "recover":
                value = self.recover_target(fn, wrong)
            else:
                value = rng.choice(["true", "false"]) if not wrong else rng.choice(['"yes"', "1"])
            args.append(f"{key} = {value}")
        fn.transaction_scoped = scope == "transaction"
        if wrong_key == "unknown":
            args.append(
                rng.choice(["tries = 3", "backof = 10", "Jitter = 1", "n = 2, n = 3",
                            "on = [busy], on = [deadlock]", "5"])
            )  # fmt: skip
        trailing = "," if args and self.chance(0.1) else ""
        return f"@retry({', '.join(args)}{trailing})"

    def recover_target(self, fn: FnDecl, wrong: bool) -> str:
        if wrong:
            return self.rng.choice(['"fallback"', "missing_fn", fn.name, "a::b"])
        name = self.fresh(self.items)
        self.items.append(name)
        twin = FnDecl(
            name,
            [Param(p.mode, p.name, p.ty) for p in fn.params],
            fn.ret,
            fn.result,
            list(fn.errors),
            [],
            self.chance(0.3),
            recover_of=fn,
            ret_text=fn.ret_text,
        )
        self.fns.append(twin)
        return twin.name

    def fn_item(self, fn: FnDecl) -> str:
        body = BodyGen(self, fn)
        lines = body.fn_body()
        cleanup: list[str] = []
        if fn.has_finally:
            cleanup = BodyGen(self, fn, in_finally=True).finally_body()
        fn.commits = fn.commits or body.commits or fn.transaction_scoped
        params = ", ".join(
            f"{'' if p.mode == 'in' else p.mode + ' '}{p.name}: {p.ty.pell()}" for p in fn.params
        )
        if fn.params and self.chance(0.05):
            params += ","
        head = "".join(a + "\n" for a in fn.annotations)
        text = f"{head}{'pub ' if fn.pub else ''}fn {fn.name}({params}){fn.ret_text} {{\n"
        text += "".join("    " + line + "\n" for line in lines) + "}"
        if fn.has_finally:
            text += " finally {\n" + "".join("    " + line + "\n" for line in cleanup) + "}"
        return text

    def string_literal(self, depth: int = 0, body: BodyGen | None = None) -> str:
        """A `"..."` literal: escapes, quotes, braces, unicode, `/` lines, long ones; with a
        body, also interpolation."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.4:
            content = rng.choice(["paid", "", "x", "hello world", "pending", "a b c", "OK"])
        elif roll < 0.6:
            content = rng.choice(
                ["it's", "a''b", "ünïcödé ✓", "tab\\there", "line\\nnext", "{{braces}}",
                 "\\{x\\}", "-- not a comment", "/* nor this */", "q'[x]'", "'; drop table t; --",
                 "\\\"quoted\\\"", "back\\\\slash", "\\r\\n", "€100", "日本語", "a\\n/\\nb",
                 "' || 'x", "&amp", "\\t/"]
            )  # fmt: skip
        elif roll < 0.64 and self.slash_lines:
            content = rng.choice(["first\n/\nsecond", "x\n  /  \ny", "\n/"])  # a `/` line
        elif roll < 0.7 and self.long_literals:
            content = rng.choice(
                ["x" * 4001, "x" * 32767, "x" * 32768, "é" * 16384, "€" * 11000, "y" * 40000,
                 "it's " * 7000]
            )  # fmt: skip
        elif body is not None and depth < 3:
            parts: list[str] = []
            for _ in range(rng.randint(1, 2)):
                parts.append(rng.choice(["id ", " of ", "", "x=", "{{", " it's "]))
                parts.append("{" + body.expr(body.any_scalar_ty(), depth + 1) + "}")
            parts.append(rng.choice(["", " done", "}}"]))
            content = "".join(parts)
        else:
            content = rng.choice(["n/a", "0", "None", "true", "%s"])
        return f'"{content}"'

    def stress_item(self) -> str:
        """One shape at the edge: deep nesting, many binds, many items."""
        rng = self.rng
        kind = rng.randrange(8)
        name = self.fresh(self.items)
        if kind == 0:
            depth = rng.randint(6, 24)
            return f"fn {name}() -> number {{\n    let xs = {'[' * depth}1{']' * depth};\n    return 1;\n}}"
        if kind == 1:
            depth = rng.randint(6, 24)
            return f"fn {name}() -> list<number> {{\n    return {'[' * depth}1{']' * depth};\n}}"
        if kind == 2:
            depth = rng.randint(100, 260)
            return f"fn {name}() -> number {{\n    return {'-' * depth}1;\n}}"
        if kind == 3:
            depth = rng.randint(60, 240)
            return f"fn {name}(x: number) {{\n" + "if x > 0 {\n" * depth + "}\n" * depth + "}"
        if kind == 4:
            count = rng.choice([100, 300, 1000])
            binds = " + ".join(":x" for _ in range(count))
            return f"fn {name}(x: number) {{\n    sql! {{ update t set a = {binds} }};\n}}"
        if kind == 5:
            count = rng.choice([50, 200])
            return "\n".join(f"record R{i} {{ a: number }}" for i in range(count))
        if kind == 6:
            depth = rng.randint(20, 60)
            inner = "1"
            for _ in range(depth):
                inner = f"[{inner}].len()"
            return f"fn {name}() -> int {{\n    return {inner};\n}}"
        return f"fn {name}() -> number {{\n    return {self.number_literal()} + {self.huge_number()};\n}}"

    def corrupt(self, text: str) -> str:
        """A textual mistake: a token dropped, a line repeated or lost, a stray character."""
        rng = self.rng
        lines = text.split("\n")
        kind = rng.randrange(5)
        i = rng.randrange(len(lines))
        if kind == 0:
            del lines[i]
        elif kind == 1:
            lines.insert(i, lines[i])
        elif kind == 2:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == 3 and lines[i]:
            at = rng.randrange(len(lines[i]))
            lines[i] = lines[i][:at] + rng.choice(";{}()<>,:?@`\"'!") + lines[i][at:]
        elif lines[i]:
            at = rng.randrange(len(lines[i]))
            lines[i] = lines[i][:at] + lines[i][at + 1 :]
        return "\n".join(lines)


class BodyGen:
    """The statements of one fn body (or its finally block), with a typed scope."""

    MAX_DEPTH = 3  # blocks and expressions

    def __init__(self, gen: Generator, fn: FnDecl, in_finally: bool = False) -> None:
        self.g = gen
        self.rng = gen.rng
        self.fn = fn
        self.in_finally = in_finally
        self.scopes: list[list[Var]] = [[Var(p.name, p.ty, p.mode != "in") for p in fn.params]]
        self.declared: list[tuple[str, Ty]] = []  # every local of the fn, in or out of scope
        self.loops = 0
        self.transactions = 0
        self.pending: list[str] = []  # declarations an expression needs before its statement
        self.commits = False
        self.no_rows = 0  # inside `a + b` on texts
        # Where a commit is an error: a retried body, a recover fn, inside `transaction { }`.
        self.no_commit_fn = fn.retried or fn.recover_of is not None
        self.callable = [
            f
            for f in gen.fns
            if f.index < fn.index and not (fn.recover_of is not None and f.retried)
        ]

    # -- scope

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def no_commit(self) -> bool:
        return self.no_commit_fn or self.transactions > 0

    def visible(self) -> list[Var]:
        seen: dict[str, Var] = {}
        for scope in self.scopes:
            for var in scope:
                seen[var.name] = var
        return list(seen.values())

    def rows(self) -> list[Var]:
        return [v for v in self.visible() if v.ty is None]

    def declare(self, name: str, ty: Ty | None, assignable: bool = True) -> None:
        self.scopes[-1].append(Var(name, ty, assignable))
        if ty is not None:
            self.declared.append((name, ty))

    def new_local(self) -> str:
        """A local name: fresh, or one a sibling block used (hoisted locals may collide), or a
        case variant of a visible name."""
        visible = [v.name for v in self.visible()]
        if self.declared and self.chance(0.12):
            name = self.rng.choice(self.declared)[0]
            if name not in visible:
                return name
        if visible and self.g.case_twins and self.chance(0.15):
            name = self.g.case_variant(self.rng.choice(visible))
            if name not in visible:
                return name
        if visible and self.g.bad(0.03):
            return self.rng.choice(visible)  # shadowing: may be an error
        return self.g.fresh(visible + [d for d, _ in self.declared])

    def flush(self, lines: list[str]) -> list[str]:
        out = self.pending + lines
        self.pending = []
        return out

    def calls(self, ty: Ty | None) -> list[FnDecl]:
        """Fns this body may call that return `ty` (None: procedures), and commit only where
        committing is allowed."""
        found = []
        for f in self.callable:
            if f.pipelined or f.result or (f.commits and self.no_commit()):
                continue
            if (ty is None and f.ret is None) or (
                ty is not None and f.ret is not None and f.ret.fits(ty)
            ):
                found.append(f)
        return found

    def result_calls(self, ty: Ty | None) -> list[FnDecl]:
        """Result fns whose errors this fn declares too, for `f(...)?`."""
        if not self.fn.result:
            return []
        return [
            f
            for f in self.callable
            if f.result
            and not (f.commits and self.no_commit())
            and (set(f.errors) <= set(self.fn.errors) or self.g.bad(0.3))
            and ((f.ret is None) if ty is None else (f.ret is not None and f.ret.fits(ty)))
        ]

    # -- bodies

    def fn_body(self) -> list[str]:
        fn = self.fn
        lines: list[str] = []
        count = self.rng.choice([0, 1, 2, 3, 3, 4, 5, 6, 8])
        for _ in range(count):
            lines += self.stmt(0)
            if self.chance(0.03):
                lines.append(
                    self.rng.choice(["// a } brace {", "/* { */", "/* a\n } */", "// sql! {"])
                )
        if fn.pipelined:
            if not any(line.strip().startswith(("yield", "for")) for line in lines):
                lines += self.flush([f"yield {self.expr(self.pipe_elem(), 0)};"])
            if self.chance(0.3):
                lines.append("return;")
            return lines
        lines += self.final_return()
        return lines

    def finally_body(self) -> list[str]:
        lines: list[str] = []
        for _ in range(self.rng.randint(1, 3)):
            lines += self.stmt(1)
        if self.g.bad(0.2):
            lines.append("return;")
        return lines

    def pipe_elem(self) -> Ty:
        assert self.fn.ret is not None and self.fn.ret.elem is not None
        return self.fn.ret.elem

    def final_return(self) -> list[str]:
        fn = self.fn
        if self.g.bad(0.05):
            return []  # missing return
        if fn.result:
            if fn.ret is None:
                return [self.rng.choice(["return Ok(());", "return Ok(());", "return;"])]
            value = self.expr(fn.ret, 0)
            return self.flush([f"return Ok({value});" if self.chance(0.7) else f"return {value};"])
        if fn.ret is None:
            return ["return;"] if self.chance(0.2) else []
        if self.g.bad(0.05):
            return self.flush([f"return {self.expr(self.other_ty(fn.ret), 0)};"])
        return self.flush([f"return {self.expr(fn.ret, 0)};"])

    def other_ty(self, ty: Ty) -> Ty:
        for _ in range(10):
            other = self.g.value_ty()
            if other.family() != ty.family():
                return other
        return BOOL if ty.family() != "bool" else NUMBER

    def inner(self, depth: int, count: int | None = None) -> list[str]:
        self.scopes.append([])
        lines: list[str] = []
        for _ in range(count if count is not None else self.rng.randint(0, 3)):
            lines += self.stmt(depth + 1)
        self.scopes.pop()
        return ["    " + line for line in lines]

    # -- statements

    def stmt(self, depth: int) -> list[str]:
        deep = depth < self.MAX_DEPTH
        fn = self.fn
        weighted: list[tuple[float, Callable[[], list[str]]]] = [
            (12, self.let_typed),
            (7, self.let_untyped),
            (2, self.let_empty),
            (1.5, self.ints_then_numbers),
            (6, self.var_stmt),
            (8, self.assign),
            (4, self.field_assign),
            (8 if deep else 0, lambda: self.if_stmt(depth)),
            (3 if deep else 0, lambda: self.while_stmt(depth)),
            (4 if deep else 0, lambda: self.for_range(depth)),
            (4 if deep else 0, lambda: self.for_list(depth)),
            (4 if deep else 0, lambda: self.for_cursor(depth)),
            (3 if self.loops else 0, self.break_continue),
            (0.3 if self.g.chaos else 0, self.break_continue),
            (3 if depth > 0 and not self.in_finally else 0, self.early_return),
            (3 if fn.result and fn.errors and deep and not self.in_finally else 0, self.guard),
            (
                1.5 if deep and not self.no_commit() and not self.in_finally else 0,
                lambda: self.transaction(depth),
            ),
            (0.2 if deep and self.g.chaos else 0, lambda: self.transaction(depth)),
            (6, self.call_stmt),
            (6, self.sql_dml),
            (3, self.sql_rowcount),
            (5, self.sql_one),
            (2, self.sql_first),
            (2, self.sql_collect),
            (1, self.sql_returning),
            (6 if fn.pipelined and not self.in_finally else 0, self.yield_stmt),
            (0.1 if self.g.chaos else 0, self.yield_stmt),
            (0.5, self.oracle_let),
            (0.3 if self.g.chaos else 0, self.sql_query_statement),
        ]
        total = sum(w for w, _ in weighted)
        roll = self.rng.random() * total
        for weight, make in weighted:
            roll -= weight
            if weight > 0 and roll <= 0:
                return self.flush(make())
        return self.flush(self.let_typed())

    def let_typed(self) -> list[str]:
        ty = self.g.value_ty()
        value = self.expr(ty, 0) if not self.g.bad(0.05) else self.expr(self.other_ty(ty), 0)
        name = self.new_local()
        keyword = "let" if self.chance(0.8) else "var"
        self.declare(name, ty)
        return [f"{keyword} {name}: {ty.pell()} = {value};"]

    def inferable(self, ty: Ty) -> Ty:
        """`ty`, unless a value of it cannot be written without a declared type here (a date
        with no date in scope)."""
        base = ty.base()
        probe = base.elem if base.kind == "list" and base.elem is not None else base
        if probe.kind in ("date", "timestamp") and not self.leaves(probe, rows=False):
            return NUMBER if base.kind != "list" else Ty("list", elem=NUMBER)
        return base

    def let_untyped(self) -> list[str]:
        ty = self.inferable(self.g.value_ty())
        calls = self.calls(ty)
        if calls and self.chance(0.3):
            fn = self.rng.choice(calls)
            assert fn.ret is not None
            ty = fn.ret.base()
            value = self.call(fn, 0)
        else:
            value = self.expr(ty, 0, inferable=True)
        name = self.new_local()
        self.declare(name, ty)
        return [f"let {name} = {value};"]

    def ints_then_numbers(self) -> list[str]:
        """`var xs = [1, 2];` then given numbers: an untyped list literal of ints is a
        `list<number>` once it is appended a number or assigned a list of them (and when it
        is passed where one is wanted, which any later use as a `list<number>` may do)."""
        name = self.new_local()
        count = self.rng.randint(1, 3)
        items = ", ".join(self.g.number_literal(integer=True) for _ in range(count))
        numbers = Ty("list", elem=NUMBER)
        if self.chance(0.5):
            given = f"{name}.append({self.expr(NUMBER, 1)});"
        else:
            given = f"{name} = {self.expr(numbers, 1)};"
        self.declare(name, numbers)
        return [f"var {name} = [{items}];", given]

    def let_empty(self) -> list[str]:
        ty = self.g.value_ty()
        name = self.new_local()
        self.declare(name, ty)
        if self.g.bad(0.2):
            return [f"let {name};"]
        return [f"{self.rng.choice(['let', 'var'])} {name}: {ty.pell()};"]

    def var_stmt(self) -> list[str]:
        ty = self.g.value_ty()
        name = self.new_local()
        if self.chance(0.5):
            line = f"var {name}: {ty.pell()};"
        else:
            line = f"var {name}: {ty.pell()} = {self.expr(ty, 0)};"
        self.declare(name, ty)
        return [line]

    def assign(self) -> list[str]:
        targets = [v for v in self.visible() if v.assignable and v.ty is not None]
        if self.g.bad(0.05):
            targets = [v for v in self.visible() if v.ty is not None]  # maybe an `in` param
        if not targets:
            return self.let_typed()
        var = self.rng.choice(targets)
        assert var.ty is not None
        return [f"{var.name} = {self.expr(var.ty, 0)};"]

    def field_assign(self) -> list[str]:
        targets = [
            v for v in self.visible()
            if v.assignable and v.ty is not None and v.ty.kind == "record"
        ]  # fmt: skip
        if not targets:
            return self.assign()
        var = self.rng.choice(targets)
        assert var.ty is not None
        record = self.g.record(var.ty.name)
        if not record.fields:
            return self.assign()
        fname, fty = self.rng.choice(record.fields)
        if self.g.bad(0.05):
            fname = "no_such_field"
        return [f"{var.name}.{fname} = {self.expr(fty, 0)};"]

    def take_pending(self) -> list[str]:
        """The declarations a compound statement's head needs, to go before the statement."""
        taken, self.pending = self.pending, []
        return taken

    def if_stmt(self, depth: int) -> list[str]:
        conditions = [self.expr(BOOL, 1, nr=True) for _ in range(self.rng.choice([1, 1, 2, 3]))]
        lines = self.take_pending()
        for index, condition in enumerate(conditions):
            lines += [f"{'} else ' if index else ''}if {condition} {{", *self.inner(depth)]
        if self.chance(0.5):
            lines += ["} else {", *self.inner(depth)]
        lines.append("}")
        return lines

    def while_stmt(self, depth: int) -> list[str]:
        condition = self.expr(BOOL, 1, nr=True)
        before = self.take_pending()
        self.loops += 1
        body = self.inner(depth)
        self.loops -= 1
        if self.chance(0.7):
            body.append("    break;")
        return [*before, f"while {condition} {{", *body, "}"]

    def loop(self, depth: int, head: str, var: Var) -> list[str]:
        before = self.take_pending()
        self.loops += 1
        self.scopes.append([var])
        lines: list[str] = []
        for _ in range(self.rng.randint(0, 3)):
            lines += self.stmt(depth + 1)
        self.scopes.pop()
        self.loops -= 1
        return [*before, head, *("    " + line for line in lines), "}"]

    def for_range(self, depth: int) -> list[str]:
        low = self.expr(INT, 1, nr=True)
        high = self.expr(INT, 1, nr=True)
        name = self.new_local()
        operator = self.rng.choice(["..", "..="])
        return self.loop(depth, f"for {name} in {low}{operator}{high} {{", Var(name, INT, False))

    def for_list(self, depth: int) -> list[str]:
        elem = self.inferable(self.g.list_elem_ty())
        source = self.list_expr(Ty("list", elem=elem), 1, inferable=True)
        name = self.new_local()
        return self.loop(depth, f"for {name} in {source} {{", Var(name, elem, False))

    def for_cursor(self, depth: int) -> list[str]:
        records = [r for r in self.g.records if self.g.sql_record(r) and self.plain_columns(r)]
        if records and self.chance(0.2):
            record = self.rng.choice(records)
            source = f"sql! {{ {self.select_for(record, exact=True)} }}.collect()"
            name = self.new_local()
            row = Var(name, Ty("record", record.name), False)
            return self.loop(depth, f"for {name} in {source} {{", row)
        columns = self.rng.sample(
            ["id", "name", "amount", "status", "price", "qty"], self.rng.randint(1, 4)
        )
        if self.chance(0.2):
            columns[0] = f"{columns[0]} as {self.rng.choice(['total', 'pay', 'n1'])}"
        if self.chance(0.08):  # a column whose name is a reserved word, quoted in the SQL
            columns.append(self.rng.choice(['"LEVEL"', 'qty as "SIZE"', 'id as "ORDER"']))
        names = tuple(c.split(" as ")[-1].strip('"') for c in columns)
        sql = self.sql_text(
            f"select {', '.join(columns)} from {self.rng.choice(TABLES)}", where=True
        )
        name = self.new_local()
        return self.loop(depth, f"for {name} in sql! {{ {sql} }} {{", Var(name, None, False, names))

    def break_continue(self) -> list[str]:
        return [self.rng.choice(["break;", "continue;"])]

    def early_return(self) -> list[str]:
        fn = self.fn
        if fn.pipelined:
            return ["return;"]
        if fn.result:
            if fn.errors and self.chance(0.5):
                return [f"return Err({self.error_value(self.rng.choice(fn.errors))});"]
            if fn.ret is None:
                return ["return Ok(());"]
            return [f"return Ok({self.expr(fn.ret, 0)});"]
        if fn.ret is None:
            return ["return;"]
        if fn.ret.kind == "option" and self.chance(0.4):
            return ["return None;"]
        return [f"return {self.expr(fn.ret, 0)};"]

    def guard(self) -> list[str]:
        """`if cond { return Err(E { .. }); }`: a Result fn raising one of its errors."""
        condition = self.expr(BOOL, 1, nr=True)
        raised = self.error_value(self.rng.choice(self.fn.errors))
        return [*self.take_pending(), f"if {condition} {{", f"    return Err({raised});", "}"]

    def error_value(self, name: str) -> str:
        if self.g.bad(0.05):
            name = self.rng.choice([e.name for e in self.g.errors] + ["Missing"])
        decl = next((e for e in self.g.errors if e.name == name), None)
        if decl is None or decl.fields is None:
            return name
        inits = ", ".join(f"{f}: {self.expr(t, 2)}" for f, t in decl.fields)
        return f"{name} {{ {inits} }}"

    def transaction(self, depth: int) -> list[str]:
        self.commits = True
        self.transactions += 1
        body = self.inner(depth, self.rng.randint(1, 3))
        self.transactions -= 1
        return ["transaction {", *body, "}"]

    def call_stmt(self) -> list[str]:
        roll = self.rng.random()
        procedures = self.calls(None)
        if roll < 0.45 and procedures:
            return [self.call(self.rng.choice(procedures)) + ";"]
        results = self.result_calls(None) + self.result_calls(self.g.value_ty())
        if roll < 0.6 and results:
            return [self.call(self.rng.choice(results)) + "?;"]
        if roll < 0.65 and self.fn.result is False and self.calls(NUMBER) and self.g.chaos:
            return [self.call(self.rng.choice(self.calls(NUMBER))) + ";"]  # a value dropped
        oracle = [c for c in ORACLE_CALLS if c[3] is None and not (c[4] and self.no_commit())]
        package, name, params, _, commits = self.rng.choice(oracle)
        self.commits |= commits
        return [self.oracle_call(package, name, params) + ";"]

    def oracle_call(self, package: str, name: str, params: tuple[str, ...], depth: int = 1) -> str:
        if package not in self.g.imports and not self.g.bad(0.3):
            self.g.imports.append(package)  # the header is written last
        args = ", ".join(self.expr(Ty(kind), depth + 1) for kind in params)
        return f"{package}::{name}({args})"

    def oracle_let(self) -> list[str]:
        """`let v = pkg::f(...)` with and without a declared type."""
        calls = [c for c in ORACLE_CALLS if c[3] is not None]
        package, name, params, result, _ = self.rng.choice(calls)
        assert result is not None
        value = self.oracle_call(package, name, params)
        local = self.new_local()
        self.declare(local, Ty(result))
        if self.chance(0.75):
            return [f"let {local}: {result} = {value};"]
        return [f"let {local} = {value};"]

    def call(self, fn: FnDecl, depth: int = 1) -> str:
        args: list[str] = []
        for param in fn.params:
            if param.mode == "in":
                args.append(self.expr(param.ty, depth + 1))
                continue
            targets = [
                v for v in self.visible()
                if v.assignable and v.ty is not None and v.ty.pell() == param.ty.pell()
            ]  # fmt: skip
            if targets and self.chance(0.7):
                args.append(self.rng.choice(targets).name)
            elif self.g.bad(0.1):
                args.append(self.expr(param.ty, depth + 1))  # an out argument that is no variable
            else:
                name = self.g.fresh(
                    [v.name for v in self.visible()] + [d for d, _ in self.declared]
                )
                self.pending.append(f"var {name}: {param.ty.pell()};")
                self.declare(name, param.ty)
                args.append(name)
        if self.g.bad(0.04):
            args.append("1")  # arity
        self.commits |= fn.commits
        return f"{fn.name}({', '.join(args)})"

    def yield_stmt(self) -> list[str]:
        if not self.fn.pipelined:
            return [f"yield {self.expr(NUMBER, 1)};"]
        return [f"yield {self.expr(self.pipe_elem(), 1)};"]

    # -- embedded SQL

    def bind(self) -> str:
        """A `:name` that resolves: a scalar local or param, or a cursor row's column."""
        kinds = ["number", "int", "text", "date", "timestamp", "enum", "bigtext"]
        if self.g.target == "23ai":
            kinds.append("bool")
        candidates = [
            v.name for v in self.visible() if v.ty is not None and v.ty.base().kind in kinds
        ]
        for row in self.rows():
            candidates += list(row.columns)
        # a field of the one record parameter that has it: `:from_id` -> p_args.from_id
        records = [p.ty.name for p in self.fn.params if p.ty.kind == "record"]
        fields = [
            fname
            for name in records
            for fname, fty in self.g.record(name).fields
            if fty.base().kind in kinds
        ]
        candidates += [f for f in fields if fields.count(f) == 1 and self.chance(0.5)]
        if self.g.bad(0.05):
            return ":" + self.rng.choice(["nowhere", "x_unknown"])
        if not candidates:
            return self.rng.choice(["1", "'x'", "sysdate", "null"])
        return ":" + self.rng.choice(candidates)

    def sql_text(self, head: str, where: bool = False) -> str:
        """SQL around `head`: binds, and now and then braces in strings and comments, a
        q-quoted literal."""
        text = head
        if where:
            text += f" where {self.rng.choice(COLUMNS)} = {self.bind()}"
            if self.chance(0.3):
                text += f" and {self.rng.choice(COLUMNS)} <> {self.bind()}"
        roll = self.rng.random()
        if roll < 0.04:
            text += " -- a } brace\n"
        elif roll < 0.08:
            text += " /* { */"
        elif roll < 0.11:
            text += " and note <> '}'"
        elif roll < 0.14:
            text += " and note <> q'[{x}]'"
        elif roll < 0.18 and self.g.slash_lines:
            text += " and note <> 'a\n/\nb'"  # a `/` line inside a SQL literal
        return text

    def select_for(self, record: RecordDecl, exact: bool = False) -> str:
        columns = [self.rng.choice(COLUMNS) for _ in record.fields]
        if exact:
            columns = [f for f, _ in record.fields]
        elif self.g.bad(0.05):
            columns.append("id")  # one column too many
        listing = ", ".join(columns) if columns else "id"
        return self.sql_text(f"select {listing} from {self.rng.choice(TABLES)}", where=True)

    def sql_dml(self) -> list[str]:
        table = self.rng.choice(TABLES)
        roll = self.rng.random()
        if roll < 0.4:
            if self.g.slash_lines and self.chance(0.2):
                # a lone `/` line: a division split over lines, valid SQL
                return [
                    f"sql! {{ update {table} set amount = amount",
                    "/",
                    f"2 where id = {self.bind()} }};",
                ]
            column = self.rng.choice(COLUMNS)
            sql = self.sql_text(f"update {table} set {column} = {self.bind()}", where=True)
        elif roll < 0.7:
            columns = self.rng.sample(COLUMNS, self.rng.randint(1, 3))
            values = ", ".join(self.bind() for _ in columns)
            sql = self.sql_text(f"insert into {table} ({', '.join(columns)}) values ({values})")
        elif roll < 0.9:
            sql = self.sql_text(f"delete from {table}", where=True)
        else:
            sql = (
                f"merge into {table} d using (select {self.bind()} id from dual) s "
                "on (d.id = s.id) when matched then update set d.qty = d.qty + 1"
            )
        if self.chance(0.2):
            return ["sql! {", "    " + sql, "};"]
        return [f"sql! {{ {sql} }};"]

    def sql_rowcount(self) -> list[str]:
        table = self.rng.choice(TABLES)
        sql = self.sql_text(f"update {table} set qty = qty + 1", where=True)
        name = self.new_local()
        self.declare(name, INT)
        typed = ": int" if self.chance(0.4) else ""
        return [f"let {name}{typed} = sql! {{ {sql} }}.rowcount();"]

    def sql_one(self) -> list[str]:
        suffix = "?" if self.fn.result and self.chance(0.3) else ""
        modifier = ".for_update()" if self.chance(0.15) else ""
        records = [r for r in self.g.records if self.g.sql_record(r)]
        if records and self.chance(0.5):
            record = self.rng.choice(records)
            if self.plain_columns(record) and self.chance(0.3):
                sql = self.select_for(record, exact=True)
                name = self.new_local()
                self.declare(name, Ty("record", record.name))
                return [f"let {name} = sql! {{ {sql} }}{modifier}.one(){suffix};"]
            sql = self.select_for(record)
            name = self.new_local()
            self.declare(name, Ty("record", record.name))
            return [f"let {name}: {record.name} = sql! {{ {sql} }}{modifier}.one(){suffix};"]
        ty = self.g.scalar_ty(sql=True)
        table = self.rng.choice(TABLES)
        sql = self.sql_text(f"select {self.rng.choice(COLUMNS)} from {table}", where=True)
        name = self.new_local()
        self.declare(name, ty)
        if self.g.bad(0.1):
            return [f"let {name} = sql! {{ {sql} }}.one();"]  # needs an annotation
        return [f"let {name}: {ty.pell()} = sql! {{ {sql} }}{modifier}.one(){suffix};"]

    def plain_columns(self, record: RecordDecl) -> bool:
        """Can the record's field names be written as SQL columns, so a row infers its type?"""
        return len(record.fields) > 1 and all(
            f not in RESERVED_WORDS and re.fullmatch(r"[a-z][a-z0-9_]*", f)
            for f, _ in record.fields
        )

    def sql_first(self) -> list[str]:
        records = [r for r in self.g.records if self.g.sql_record(r)]
        if not records:
            return self.sql_one()
        record = self.rng.choice(records)
        optional = "?" if self.chance(0.4) else ""
        sql = self.select_for(record)
        name = self.new_local()
        self.declare(name, Ty("record", record.name))
        return [f"let {name}: {record.name}{optional} = sql! {{ {sql} }}.first();"]

    def sql_collect(self) -> list[str]:
        records = [r for r in self.g.records if self.g.sql_record(r)]
        if records and self.chance(0.6):
            record = self.rng.choice(records)
            sql = self.select_for(record)
            ty = Ty("list", elem=Ty("record", record.name))
        else:
            kind = self.rng.choice(["number", "text", "int"])
            table = self.rng.choice(TABLES)
            sql = self.sql_text(f"select {self.rng.choice(COLUMNS)} from {table}", where=True)
            ty = Ty("list", elem=Ty(kind))
        name = self.new_local()
        self.declare(name, ty)
        return [f"let {name}: {ty.pell()} = sql! {{ {sql} }}.collect();"]

    def sql_returning(self) -> list[str]:
        table = self.rng.choice(TABLES)
        sql = f"insert into {table} (name) values ({self.bind()}) returning id"
        name = self.new_local()
        self.declare(name, NUMBER)
        typed = ": number" if self.chance(0.5) else ""
        return [f"let {name}{typed} = sql! {{ {sql} }}.returning::<number>().one();"]

    def sql_query_statement(self) -> list[str]:
        return [f"sql! {{ select id from {self.rng.choice(TABLES)} }};"]  # unused-query

    # -- expressions

    def any_scalar_ty(self) -> Ty:
        return Ty(self.rng.choice(["number", "int", "text", "bool", "number", "text"]))

    def leaves(self, ty: Ty, rows: bool = True) -> list[str]:
        """Names and fields of the wanted type in scope; a cursor row's columns fit scalars."""
        out: list[str] = []
        for var in self.visible():
            if var.ty is None:
                # a column is a SQL value, and arithmetic on one a `number`: no `int` operand
                if rows and ty.scalar() and not self.no_rows and ty.base().kind != "int":
                    out += [f"{var.name}.{c}" for c in var.columns]
                continue
            if var.ty.fits(ty):
                out.append(var.name)
            if var.ty.kind == "record":
                for fname, fty in self.g.record(var.ty.name).fields:
                    if fty.fits(ty):
                        out.append(f"{var.name}.{fname}")
        return out

    def expr(self, ty: Ty, depth: int, nr: bool = False, inferable: bool = False) -> str:
        """An expression of type `ty` (or, as a deliberate mistake, of another)."""
        if self.g.bad(0.02):
            return self.rng.choice(["undefined_name", "nope.field", "missing_fn(1)", "1 +", "(("])
        if ty.kind == "option":
            assert ty.elem is not None
            roll = self.rng.random()
            if roll < 0.2 and not inferable:
                return "None"
            if roll < 0.3:
                return f"Some({self.expr(ty.elem, depth + 1)})"
            return self.expr(ty.elem, depth, nr, inferable)
        kind = ty.kind
        if kind in ("number", "int"):
            return self.num_expr(kind == "int", depth, inferable)
        if kind in ("text", "bigtext"):
            return self.text_expr(depth, inferable)
        if kind == "bool":
            return self.bool_expr(depth, inferable)
        if kind == "enum":
            leaves = self.leaves(ty, rows=not inferable)
            if leaves and self.chance(0.4):
                return self.rng.choice(leaves)
            return self.enum_constant(ty.name)
        if kind == "record":
            return self.record_expr(ty, depth, nr)
        if kind == "list":
            return self.list_expr(ty, depth, inferable)
        leaves = self.leaves(ty, rows=not inferable)  # date, timestamp
        if leaves:
            return self.rng.choice(leaves)
        if inferable:
            return "sysdate_is_not_pell" if self.g.bad(0.5) else self.num_expr(False, depth, True)
        return "None"

    def paren(self, text: str) -> str:
        return f"({text})"

    def num_expr(self, integer: bool, depth: int, inferable: bool = False) -> str:
        ty = INT if integer else NUMBER
        leaves = self.leaves(ty, rows=not inferable)
        deep = depth < self.MAX_DEPTH
        calls = self.calls(ty)
        results = self.result_calls(ty)
        oracle = [c for c in ORACLE_CALLS if c[3] in (("int",) if integer else ("number", "int"))]
        g = self.g
        options: list[tuple[float, Callable[[], str]]] = [
            (5, lambda: g.number_literal(integer)),
            (6 if leaves else 0, lambda: self.rng.choice(leaves)),
            (3 if deep else 0, lambda: self.arith(integer, depth)),
            (1 if deep else 0, lambda: "-" + self.operand(INT if integer else NUMBER, depth)),
            (0.5 if deep else 0, lambda: self.paren(self.num_expr(integer, depth + 1))),
            (2 if deep else 0, lambda: self.receiver(TEXT, depth) + ".len()"),
            (2 if deep else 0, lambda: self.list_receiver(depth) + ".len()"),
            (1 if deep else 0, lambda: self.field_of(INT if integer else NUMBER, depth)),
            (3 if calls and deep else 0, lambda: self.call(self.rng.choice(calls), depth)),
            (
                1 if deep and not inferable else 0,
                lambda: self.oracle_call(*self.rng.choice(oracle)[:3], depth),
            ),
            (
                1 if results and deep else 0,
                lambda: self.call(self.rng.choice(results), depth) + "?",
            ),
        ]
        return g.pick(options)

    def field_of(self, ty: Ty, depth: int) -> str:
        """A field of a record value that is not a variable: `Order { .. }.id`, `find(1).id`."""
        choices = [
            (record, fname)
            for record in self.g.records
            for fname, fty in record.fields
            if fty.fits(ty) and fty.kind != "option"
        ]
        if not choices:
            return self.expr(ty, self.MAX_DEPTH)
        record, fname = self.rng.choice(choices)
        rty = Ty("record", record.name)
        calls = self.calls(rty)
        if calls and self.chance(0.4):
            return f"{self.call(self.rng.choice(calls), depth)}.{fname}"
        literal = self.record_literal(record, depth, nr=False)
        if depth >= 2 and self.chance(0.5):
            return f"{literal}.{fname}"
        return f"({literal}).{fname}"

    def operand(self, ty: Ty, depth: int) -> str:
        """An operand of an operator: parenthesised unless it is a name, a field or a number."""
        text = self.expr(ty, depth + 1)
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*|[0-9][0-9_.]*|\"[^\"{}]*\"", text):
            return text
        return self.paren(text)

    def arith(self, integer: bool, depth: int) -> str:
        """`a op b`, or a flat chain `a op b op c` whose precedence the compiler must get right."""
        ty = INT if integer else NUMBER
        # `/` and `*` make a `number`, even of two ints
        operators = ["+", "-", "%", "+"] if integer else ["+", "-", "*", "/", "%", "+", "*"]
        text = self.operand(ty, depth)
        for _ in range(self.rng.choice([1, 1, 1, 2, 3])):
            text += f" {self.rng.choice(operators)} {self.operand(ty, depth)}"
        return text

    def receiver(self, ty: Ty, depth: int) -> str:
        text = self.expr(ty, depth + 1)
        if text == "None":
            text = self.g.string_literal()
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*|\"[^\"{}]*\"", text):
            return text
        return self.paren(text)

    def list_receiver(self, depth: int) -> str:
        """A list before `.len()`: a variable, a call, or a list literal."""
        if self.g.nested_lists and self.chance(0.3):
            inner = ", ".join(
                f"[{self.expr(NUMBER, self.MAX_DEPTH)}]" for _ in range(self.rng.randint(1, 3))
            )
            return f"[{inner}]" if self.chance(0.7) else f"[[{inner}]]"
        elem = self.inferable(self.g.list_elem_ty())
        text = self.list_expr(Ty("list", elem=elem), depth + 1, inferable=True)
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text) or text.startswith("["):
            return text
        return self.paren(text)

    def text_expr(self, depth: int, inferable: bool = False) -> str:
        leaves = self.leaves(TEXT, rows=not inferable)
        deep = depth < self.MAX_DEPTH
        calls = self.calls(TEXT)
        oracle = [c for c in ORACLE_CALLS if c[3] == "text"]
        g = self.g
        options: list[tuple[float, Callable[[], str]]] = [
            (5, lambda: g.string_literal(depth, self)),
            (
                0.5,
                lambda: self.rng.choice(
                    [
                        "`C:\\temp\\{x}`",
                        "`raw ' \" text`",
                        "``",
                        "`a\n/\nb`" if g.slash_lines else "`/`",
                    ]
                ),
            ),
            (6 if leaves else 0, lambda: self.rng.choice(leaves)),
            (3 if deep else 0, lambda: self.concat(depth)),
            (0.7 if deep else 0, lambda: self.field_of(TEXT, depth)),
            (
                3 if deep else 0,
                lambda: (
                    self.receiver(TEXT, depth)
                    + self.rng.choice([".upper()", ".lower()", ".trim()"])
                ),
            ),
            (
                1 if deep else 0,
                lambda: (
                    f"{self.receiver(TEXT, depth)}.substr({self.expr(INT, depth + 1)}, {self.expr(INT, depth + 1)})"
                ),
            ),
            (1 if g.enums else 0, lambda: self.enum_constant()),
            (2 if calls and deep else 0, lambda: self.call(self.rng.choice(calls), depth)),
            (
                0.7 if deep and not inferable else 0,
                lambda: self.oracle_call(*self.rng.choice(oracle)[:3], depth),
            ),
        ]
        return g.pick(options)

    def concat(self, depth: int) -> str:
        """`a + b` on texts; a SQL row's columns stay out (their type is the database's)."""
        self.no_rows += 1
        text = f"{self.operand(TEXT, depth)} + {self.operand(TEXT, depth)}"
        self.no_rows -= 1
        return text

    def enum_constant(self, name: str | None = None) -> str:
        enum = next((e for e in self.g.enums if e.name == name), None) or self.rng.choice(
            self.g.enums
        )
        return f"{enum.name}::{self.rng.choice(enum.variants)}"

    def bool_expr(self, depth: int, inferable: bool = False) -> str:
        leaves = self.leaves(BOOL, rows=not inferable)
        deep = depth < self.MAX_DEPTH
        calls = self.calls(BOOL)
        scalars = [v for v in self.visible() if v.ty is not None and v.ty.scalar()]
        g = self.g
        options: list[tuple[float, Callable[[], str]]] = [
            (2, lambda: self.rng.choice(["true", "false"])),
            (4 if leaves else 0, lambda: self.rng.choice(leaves)),
            (4 if deep else 0, lambda: self.comparison(NUMBER, depth)),
            (2 if deep else 0, lambda: self.comparison(TEXT, depth)),
            (2 if scalars else 0, lambda: self.none_comparison(scalars)),
            (3 if deep else 0, lambda: self.logic(depth)),
            (2 if deep else 0, lambda: "!" + self.operand(BOOL, depth)),
            (2 if deep else 0, lambda: self.text_predicate(depth)),
            (2 if deep else 0, lambda: self.list_receiver(depth) + ".is_empty()"),
            (0.5 if deep else 0, lambda: self.field_of(BOOL, depth)),
            (1 if calls and deep else 0, lambda: self.call(self.rng.choice(calls), depth)),
        ]
        return g.pick(options)

    def logic(self, depth: int) -> str:
        text = self.operand(BOOL, depth)
        for _ in range(self.rng.choice([1, 1, 2])):
            text += f" {self.rng.choice(['&&', '||'])} {self.operand(BOOL, depth)}"
        return text

    def comparison(self, ty: Ty, depth: int) -> str:
        op = self.rng.choice(["==", "!=", "<", "<=", ">", ">="])
        return f"{self.operand(ty, depth)} {op} {self.operand(ty, depth)}"

    def none_comparison(self, scalars: list[Var]) -> str:
        var = self.rng.choice(scalars)
        op = self.rng.choice(["==", "!="])
        return f"{var.name} {op} None" if self.chance(0.6) else f"None {op} {var.name}"

    def text_predicate(self, depth: int) -> str:
        method = self.rng.choice(["contains", "starts_with", "ends_with", "is_empty"])
        receiver = self.receiver(TEXT, depth)
        if method == "is_empty":
            return f"{receiver}.is_empty()"
        return f"{receiver}.{method}({self.expr(TEXT, depth + 1)})"

    def record_expr(self, ty: Ty, depth: int, nr: bool) -> str:
        record = self.g.record(ty.name)
        leaves = self.leaves(ty)
        calls = self.calls(ty)
        if depth > self.MAX_DEPTH + 2:  # a record that holds itself
            return self.rng.choice(leaves) if leaves else "None"
        options: list[tuple[float, Callable[[], str]]] = [
            (5 if leaves else 0, lambda: self.rng.choice(leaves)),
            (5, lambda: self.record_literal(record, depth, nr)),
            (
                2 if calls and depth < self.MAX_DEPTH else 0,
                lambda: self.call(self.rng.choice(calls), depth),
            ),
        ]
        return self.g.pick(options)

    def record_literal(self, record: RecordDecl, depth: int, nr: bool) -> str:
        inits: list[str] = []
        for fname, fty in record.fields:
            shorthand = [
                v for v in self.visible()
                if v.name == fname and v.ty is not None and v.ty.fits(fty)
            ]  # fmt: skip
            if shorthand and self.chance(0.6):
                inits.append(fname)
            else:
                inits.append(f"{fname}: {self.expr(fty, depth + 1)}")
        if self.g.bad(0.05):
            inits.append("extra: 1")
        if self.g.bad(0.04) and inits:
            inits.pop()
        if len(inits) > 1 and self.chance(0.2):
            self.rng.shuffle(inits)
        text = f"{record.name} {{ {', '.join(inits)} }}"
        return self.paren(text) if nr else text

    def list_expr(self, ty: Ty, depth: int, inferable: bool = False) -> str:
        assert ty.elem is not None
        leaves = self.leaves(ty)
        calls = self.calls(ty)
        elem = ty.elem

        def literal() -> str:
            count = self.rng.choice([0, 1, 2, 3]) if not inferable else self.rng.randint(1, 3)
            items = [self.expr(elem, depth + 1, inferable=inferable) for _ in range(count)]
            return "[" + ", ".join(items) + "]"

        options: list[tuple[float, Callable[[], str]]] = [
            (4 if leaves else 0, lambda: self.rng.choice(leaves)),
            (5, literal),
            (
                2 if calls and depth < self.MAX_DEPTH else 0,
                lambda: self.call(self.rng.choice(calls), depth),
            ),
        ]
        return self.g.pick(options)


def generate(seed: int) -> Program:
    """The program of one seed."""
    return Generator(seed).program()


# ---- the lint of generated PL/SQL ----------------------------------------------------------

_SKIPPED = frozenset({"Whitespace", "LineComment", "BlockComment"})
# Collection methods: after a dot they are not identifiers (`l_xs.DELETE`, `l_xs.PRIOR(i)`).
_COLLECTION_METHODS = frozenset(
    {"delete", "prior", "count", "exists", "first", "last", "next", "extend", "trim", "limit"}
)
# Subprograms of Oracle's own packages whose names are on the reserved list: COLUMN_VALUE is
# reserved as an attribute name only (pell.naming.ORACLE_RESERVED), and DBMS_SQL declares a
# procedure of that name (PL/SQL Packages and Types Reference, DBMS_SQL, COLUMN_VALUE
# Procedure), which pell_dyn_row calls.
_SUPPLIED_MEMBERS = frozenset({("dbms_sql", "column_value")})
_PLAIN_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_$#]*")


@dataclass(frozen=True, slots=True)
class Problem:
    rule: str  # duplicate, reserved, identifier-length, literal-length, slash-line, shape
    message: str
    line: int
    key: str = ""  # the message without its particulars, to group problems of one cause


def _a(noun: str) -> str:
    return ("an " if noun[:1] in "aeiou" else "a ") + noun


def _name_class(name: str) -> str:
    """`l_pell_result` -> `l_pell_*`, `p_order` -> `p_*`, `total` -> `*`: what made a name."""
    lowered = name.lower().strip('"')
    for prefix in (
        "l_pell_",
        "e_pell_",
        "sp_",
        "c_",
        "l_",
        "p_",
        "t_",
        "fn_",
        "f_",
        "pkg_",
        "pell_",
    ):
        if lowered.startswith(prefix):
            return prefix + "*"
    return "*"


@dataclass(slots=True)
class _Token:
    kind: str
    text: str
    line: int

    @property
    def word(self) -> str:
        return self.text.upper() if self.kind == "Ident" else ""


def _normal(token: _Token) -> str:
    """Oracle's name for an identifier: unquoted ones are case-insensitive."""
    if token.kind == "QuotedIdent":
        return token.text[1:-1]
    return token.text.upper()


class _Scope:
    """One declarative section (or a parameter or field list): names declared once each."""

    def __init__(self, what: str, problems: list[Problem], kind: str = "") -> None:
        self.what = what
        self.kind = kind or what.split()[0]  # package, subprogram, record, ...
        self.problems = problems
        self.names: dict[str, tuple[str, int]] = {}  # name -> (kind, line)
        self.subprograms: dict[str, dict[str, int]] = {}  # name -> {"spec"/"forward"/"body": count}

    def declare(self, token: _Token, kind: str) -> None:
        name = _normal(token)
        if name in self.names or (kind != "subprogram" and name in self.subprograms):
            first = self.names.get(name, ("subprogram", 0))
            self.problems.append(
                Problem(
                    "duplicate",
                    f"{token.text} is declared twice in {self.what} (as {_a(first[0])} on line "
                    f"{first[1]} and as {_a(kind)})",
                    token.line,
                    f"{_a(first[0])} and {_a(kind)} named {_name_class(token.text)} in one "
                    f"{self.kind}",
                )
            )
            return
        self.names[name] = (kind, token.line)

    def subprogram(self, token: _Token, role: str) -> None:
        """role: `spec` (a package spec declaration), `forward` (a body declaration) or `body`."""
        name = _normal(token)
        if name in self.names:
            self.declare(token, "subprogram")
            return
        roles = self.subprograms.setdefault(name, {})
        roles[role] = roles.get(role, 0) + 1
        # pellc's one deliberate overload: pivot::sum_dyn's IN item, one per column type,
        # which Oracle picks by the type of the value read (templates/pivot_functions.sql.j2)
        if roles[role] > 1 and name != PIVOT_ITEM_FUNCTION.upper():
            self.problems.append(
                Problem(
                    "duplicate",
                    f"{token.text} is {'defined' if role == 'body' else 'declared'} twice in "
                    f"{self.what} (Pell has no overloading: two fns became one name)",
                    token.line,
                    f"two subprograms named {_name_class(token.text)} in one {self.kind}",
                )
            )


class _Linter:
    """Walks pellc's output: CREATE statements, declarative sections, blocks."""

    def __init__(self, sql: str, target: str) -> None:
        self.sql = sql
        self.limit = MAX_IDENTIFIER_BYTES[target]
        self.problems: list[Problem] = []
        self.tokens = [
            _Token(t["kind"], t["text"], t["line"])
            for t in parseora.tokenize(sql)
            if t["kind"] not in _SKIPPED
        ]
        self.i = 0
        self.terminator_lines: set[int] = set()
        self.packages: dict[str, _Scope] = {}
        self.schema_objects = _Scope("the schema", self.problems, "schema")

    # -- tokens

    def peek(self, ahead: int = 0) -> _Token:
        index = self.i + ahead
        return self.tokens[index] if index < len(self.tokens) else _Token("EOF", "", 0)

    def next(self) -> _Token:
        token = self.peek()
        self.i += 1
        return token

    def at(self, *words: str) -> bool:
        return self.peek().word in words

    def accept(self, *words: str) -> bool:
        if self.at(*words):
            self.i += 1
            return True
        return False

    def shape(self, message: str) -> None:
        self.problems.append(Problem("shape", message, self.peek().line))

    def skip_to(self, *ends: str, kinds: tuple[str, ...] = ("Semicolon",)) -> None:
        """Up to (not past) the first of `ends` (words) or `kinds` outside parentheses."""
        depth = 0
        while self.peek().kind != "EOF":
            token = self.peek()
            if depth == 0 and (token.kind in kinds or (token.word and token.word in ends)):
                return
            if token.kind == "LParen":
                depth += 1
            elif token.kind == "RParen":
                depth -= 1
            self.i += 1

    def expect_semicolon(self) -> None:
        if self.peek().kind == "Semicolon":
            self.i += 1
        else:
            self.shape(f"expected `;`, found {self.peek().text!r}")

    # -- declarations

    def declared(self, token: _Token, what: str) -> None:
        """A name pellc declares: a plain identifier, not a reserved word."""
        if token.kind == "Ident":
            if token.text.lower() in ORACLE_RESERVED:
                self.problems.append(
                    Problem(
                        "reserved",
                        f"the reserved word {token.text} is declared as {what} unquoted",
                        token.line,
                        f"a reserved word declared as {what}",
                    )
                )
            elif not _PLAIN_IDENTIFIER.fullmatch(token.text):
                self.problems.append(
                    Problem(
                        "shape",
                        f"{token.text} is not an Oracle identifier",
                        token.line,
                        f"{what} that is not an Oracle identifier",
                    )
                )
        elif token.kind != "QuotedIdent":
            self.problems.append(
                Problem(
                    "shape",
                    f"expected a name for {what}, found {token.text!r}",
                    token.line,
                    f"{what} that is not an Oracle identifier",
                )
            )

    def name(self, what: str) -> _Token:
        token = self.next()
        self.declared(token, what)
        return token

    def qualified_name(self, what: str) -> tuple[str, _Token]:
        first = self.name("a schema" if self.peek(1).kind == "Dot" else what)
        parts = [_normal(first)]
        last = first
        while self.peek().kind == "Dot":
            self.i += 1
            last = self.name(what)
            parts.append(_normal(last))
        return ".".join(parts), last

    # -- the script

    def run(self) -> list[Problem]:
        while self.peek().kind != "EOF":
            if self.at("CREATE"):
                self.create()
            elif self.at("DECLARE", "BEGIN"):
                self.anonymous_block()
            else:
                self.shape(f"expected CREATE, found {self.peek().text!r}")
                self.i += 1
                while self.peek().kind != "EOF" and not self.at("CREATE"):
                    self.i += 1
        self.lengths()
        self.slash_lines()
        return self.problems

    def create(self) -> None:
        self.next()
        if self.accept("OR"):
            self.accept("REPLACE")
        self.accept("EDITIONABLE", "NONEDITIONABLE")
        kind = self.next().word
        body = self.accept("BODY")
        if kind == "FUNCTION":
            self.aggregate_function()
            return
        if kind not in ("PACKAGE", "TYPE"):
            self.shape(f"CREATE {kind} is not what pellc writes")
            self.skip_to()
            self.terminate()
            return
        full, last = self.qualified_name(f"a {kind.lower()}")
        if kind == "TYPE":
            if not body:
                self.schema_objects.declare(_Token("QuotedIdent", f'"{full}"', last.line), "type")
                self.type_statement()
            else:
                self.type_body(full)
            self.terminate()
            return
        scope = self.packages.get(full)
        if scope is None:
            scope = self.packages[full] = _Scope(f"package {full}", self.problems)
        self.skip_to("AS", "IS")
        self.accept("AS", "IS")
        self.declarations(scope, "body" if body else "spec")
        if self.accept("BEGIN"):
            self.statements()
            return self.after_package()
        if not self.accept("END"):
            self.shape(f"expected END of package {full}, found {self.peek().text!r}")
            self.skip_to()
        self.after_package()

    def anonymous_block(self) -> None:
        """A script's block (a file with no `module` line): `[DECLARE ...] BEGIN ... END;`."""
        if self.accept("DECLARE"):
            self.declarations(_Scope("an anonymous block", self.problems), "body")
        if not self.accept("BEGIN"):
            self.shape(f"expected BEGIN of an anonymous block, found {self.peek().text!r}")
            self.skip_to()
        self.statements()
        self.expect_semicolon()
        self.terminate()

    def after_package(self) -> None:
        if self.peek().kind in ("Ident", "QuotedIdent"):
            self.i += 1
        self.expect_semicolon()
        self.terminate()

    def type_statement(self) -> None:
        """`CREATE TYPE t [FORCE] AS OBJECT (...)`, `... UNDER parent (...)` or `AS TABLE OF`:
        the attributes, then the method specs (pell.codegen.objects), in one scope."""
        self.accept("FORCE")
        self.skip_to("AS", "IS", "UNDER")
        elements = _Scope("an object type", self.problems, "object type")
        if self.accept("UNDER"):
            self.skip_to(kinds=("LParen", "Semicolon"))
            if self.peek().kind == "LParen":
                self.i += 1
                self.type_elements(elements)
        elif self.accept("AS", "IS") and self.accept("OBJECT") and self.peek().kind == "LParen":
            self.i += 1
            self.type_elements(elements)
        self.skip_to()
        self.expect_semicolon()

    def aggregate_function(self) -> None:
        """`CREATE FUNCTION f(p IN T) RETURN R [PARALLEL_ENABLE] AGGREGATE USING t;`, the only
        schema-level function pellc writes (an aggregate: pell.codegen.aggregates)."""
        full, last = self.qualified_name("a function")
        self.schema_objects.declare(_Token("QuotedIdent", f'"{full}"', last.line), "function")
        if self.peek().kind == "LParen":
            self.i += 1
            self.field_list(_Scope(f"the parameters of {full}", self.problems), "a parameter")
        self.skip_to("AGGREGATE", "IS", "AS")
        if not self.accept("AGGREGATE"):
            self.shape(f"CREATE FUNCTION {full} is no aggregate, which is all pellc writes")
        self.skip_to()
        self.expect_semicolon()
        self.terminate()

    def type_elements(self, scope: _Scope) -> None:
        """An object type's attributes and method specs, up to and past the close."""
        while self.peek().kind not in ("EOF", "RParen"):
            method = False
            while self.at(*_METHOD_WORDS):
                method = True
                self.i += 1
            if method and self.accept("FUNCTION", "PROCEDURE"):
                scope.declare(self.name("a method"), "method")
            else:
                scope.declare(self.name("an attribute"), "attribute")
            self.skip_to(kinds=("Comma", "RParen"))
            if self.peek().kind == "Comma":
                self.i += 1
        if self.peek().kind == "RParen":
            self.i += 1

    def type_body(self, full: str) -> None:
        """`CREATE TYPE BODY t AS` its methods' bodies `END;`."""
        self.skip_to("AS", "IS")
        self.accept("AS", "IS")
        scope = _Scope(f"type body {full}", self.problems)
        while self.peek().kind != "EOF" and not self.at("END"):
            while self.at(*_METHOD_WORDS):
                self.i += 1
            if self.at("FUNCTION", "PROCEDURE"):
                self.subprogram(scope, "body")
            else:
                self.shape(f"unexpected {self.peek().text!r} in a type body")
                self.skip_to()
                self.expect_semicolon()
        self.accept("END")
        self.expect_semicolon()

    def terminate(self) -> None:
        """After a CREATE (or an anonymous block): the `/` line that ends it in SQL*Plus."""
        token = self.peek()
        if token.kind == "Slash":
            self.terminator_lines.add(token.line)
            self.i += 1
        else:
            self.shape(f"a CREATE statement is not followed by a `/` line (found {token.text!r})")

    def field_list(self, scope: _Scope, what: str) -> None:
        """`name type [...], ...)`: after the open parenthesis, up to and past the close. In
        an object type, a method's specification (`MEMBER FUNCTION f(...) RETURN T`) declares
        no attribute."""
        while self.peek().kind not in ("EOF", "RParen"):
            if what == "an attribute" and self.at("STATIC", "MEMBER", "MAP", "ORDER"):
                self.skip_to(kinds=("Comma", "RParen"))
                if self.peek().kind == "Comma":
                    self.i += 1
                continue
            token = self.name(what)
            scope.declare(token, what.split()[-1])
            self.skip_to(kinds=("Comma", "RParen"))
            if self.peek().kind == "Comma":
                self.i += 1
        if self.peek().kind == "RParen":
            self.i += 1

    def declarations(self, scope: _Scope, role: str) -> None:
        """A declarative section, up to BEGIN or END."""
        while self.peek().kind != "EOF" and not self.at("BEGIN", "END"):
            token = self.peek()
            word = token.word
            if word in ("TYPE", "SUBTYPE") and self.peek(2).word in ("IS", "AS"):
                self.i += 1
                name = self.name("a type")
                scope.declare(name, "type")
                self.i += 1
                if self.accept("RECORD") and self.peek().kind == "LParen":
                    self.i += 1
                    self.field_list(_Scope(f"record {name.text}", self.problems), "a record field")
                self.skip_to()
                self.expect_semicolon()
            elif word in ("FUNCTION", "PROCEDURE"):
                self.subprogram(scope, role)
            elif word == "PRAGMA":
                self.skip_to()
                self.expect_semicolon()
            elif word == "CURSOR":
                self.i += 1
                scope.declare(self.name("a cursor"), "cursor")
                self.skip_to()
                self.expect_semicolon()
            elif token.kind in ("Ident", "QuotedIdent"):
                self.i += 1
                self.declared(token, "a variable")
                kind = "exception" if self.at("EXCEPTION") else "variable"
                scope.declare(token, kind)
                self.skip_to()
                self.expect_semicolon()
            else:
                self.shape(f"unexpected {token.text!r} in a declarative section")
                self.skip_to()
                self.expect_semicolon()

    def subprogram(self, scope: _Scope, role: str) -> None:
        self.i += 1
        name = self.name("a subprogram")
        params = _Scope(f"the parameters of {name.text}", self.problems, "parameter list")
        if self.peek().kind == "LParen":
            self.i += 1
            self.field_list(params, "a parameter")
        self.skip_to("IS", "AS")
        if self.peek().kind == "Semicolon":
            self.i += 1
            scope.subprogram(name, "spec" if role == "spec" else "forward")
            return
        scope.subprogram(name, "body")
        self.i += 1
        local = _Scope(f"subprogram {name.text}", self.problems)
        local.names.update(params.names)
        self.declarations(local, "local")
        if not self.accept("BEGIN"):
            self.shape(f"expected BEGIN in {name.text}, found {self.peek().text!r}")
            return
        self.statements()
        if self.peek().kind in ("Ident", "QuotedIdent"):
            self.i += 1
        self.expect_semicolon()

    def statements(self) -> None:
        """A block's statements after BEGIN, up to and past its END (not the name after it)."""
        stack: list[str] = []
        while self.peek().kind != "EOF":
            token = self.next()
            word = token.word
            if word == "END":
                if not stack:
                    return
                opener = stack.pop()
                # END IF, END LOOP, END CASE; a CASE expression's END may be followed by the
                # LOOP of a WHILE or the THEN of an IF, which open or continue their own.
                if opener != "BEGIN" and self.at(opener):
                    self.i += 1
            elif word in ("IF", "LOOP", "CASE", "BEGIN"):
                stack.append(word)
            elif word == "DECLARE":
                self.declarations(_Scope("a block", self.problems, "block"), "local")
                if self.accept("BEGIN"):
                    stack.append("BEGIN")
            elif word == "FOR" and self.peek(1).word == "IN":
                self.declared(self.next(), "a loop index")
            elif word == "SAVEPOINT" or (
                word == "TO" and self.tokens[self.i - 2].word == "ROLLBACK"
            ):
                self.accept("SAVEPOINT")
                self.declared(self.next(), "a savepoint")
            elif token.kind == "LabelOpen":
                self.declared(self.next(), "a label")
            elif token.kind == "Dot" and self.peek().kind == "Ident":
                member = self.peek()
                qualifier = self.tokens[self.i - 2].text.lower() if self.i >= 2 else ""
                if (
                    member.text.lower() in ORACLE_RESERVED
                    and member.text.lower() not in _COLLECTION_METHODS
                    and (qualifier, member.text.lower()) not in _SUPPLIED_MEMBERS
                ):
                    self.problems.append(
                        Problem(
                            "reserved",
                            f"the reserved word {member.text} is used unquoted as a member name",
                            member.line,
                            "a reserved word used as a member name",
                        )
                    )

    # -- whole-text rules

    def lengths(self) -> None:
        for token in self.tokens:
            if token.kind in ("Ident", "QuotedIdent"):
                name = token.text[1:-1] if token.kind == "QuotedIdent" else token.text
                size = len(name.encode("utf-8"))
                if size > self.limit:
                    self.problems.append(
                        Problem(
                            "identifier-length",
                            f"{name[:40]}... is {size} bytes; the target allows {self.limit}",
                            token.line,
                            f"a name {_name_class(name)} over {self.limit} bytes",
                        )
                    )
            elif token.kind == "String":
                size = len(_literal_value(token.text).encode("utf-8"))
                if size > MAX_TEXT_LITERAL_BYTES:
                    self.problems.append(
                        Problem(
                            "literal-length",
                            f"a text literal of {size} bytes; PL/SQL allows {MAX_TEXT_LITERAL_BYTES}",
                            token.line,
                            "a text literal over 32767 bytes",
                        )
                    )
            elif token.kind == "Unknown":
                self.problems.append(
                    Problem(
                        "shape",
                        f"{token.text!r} is not SQL",
                        token.line,
                        "a character that is not SQL",
                    )
                )

    def slash_lines(self) -> None:
        for number, line in enumerate(self.sql.split("\n"), start=1):
            if line.strip() == "/" and number not in self.terminator_lines:
                self.problems.append(
                    Problem(
                        "slash-line",
                        "a line holding only `/` inside a CREATE statement (SQL*Plus ends the "
                        "statement there)",
                        number,
                    )
                )


def _literal_value(text: str) -> str:
    """The value of a SQL text literal: `'it''s'`, `q'[...]'`, `N'...'`."""
    if text[:1] in "nN" and text[1:2] in "'qQ":
        text = text[1:]
    if text[:1] in "qQ":
        return text[3:-2]
    return text[1:-1].replace("''", "'")


# The words before FUNCTION or PROCEDURE in an object type's method spec or body
_METHOD_WORDS = ("MAP", "ORDER", "OVERRIDING", "MEMBER", "STATIC", "FINAL", "NOT", "INSTANTIABLE")


def lint_sql(sql: str, target: str) -> list[Problem]:
    """What parseora cannot see in pellc's output for `target`: duplicate declarations in one
    declarative section, package or parameter or field list (names are case-insensitive);
    identifiers over the target's limit; text literals over 32,767 bytes; reserved words
    declared (or used as member names) unquoted; and lines holding only `/` anywhere but right
    after a CREATE statement."""
    return _Linter(sql, target).run()


# ---- examining one program -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Finding:
    seed: int | None
    target: str
    kind: str  # exception, hang, slow, parseora, lint, unlocated, no-error, sql-with-errors, render
    cause: str  # what groups findings: the exception and where, the lint rule, the message shape
    detail: str
    text: str
    variant: str = ""  # found when the program was read from bytes in this form

    def report(self, max_text: int = 20_000) -> str:
        """The finding, how to reproduce it, and the program (cut after `max_text` characters:
        `python tests/fuzz_programs.py show SEED` prints it whole)."""
        seed = "text given" if self.seed is None else f"seed {self.seed}"
        text = self.text
        if len(text) > max_text:
            text = text[:max_text] + f"\n... ({len(self.text) - max_text} more characters)"
        command = (
            f"python tests/fuzz_programs.py check {self.seed}" if self.seed is not None else ""
        )
        if self.variant:
            command += f" (the program read as bytes with {self.variant})"
        return (
            f"[{self.kind}] {self.cause}\n  {seed}, target {self.target}: {command}\n"
            f"  {self.detail}\n---- program ----\n{text}\n---- end ----"
        )


class _Hang(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Stop the body after `seconds` (main thread only; elsewhere it just runs)."""
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "setitimer"
    ):
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        raise _Hang()

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _normalise(message: str) -> str:
    """A message with its particulars blanked, so findings of one cause group together."""
    message = re.sub(r"`[^`]*`", "`_`", message)
    message = re.sub(r"'[^']*'", "'_'", message)
    message = re.sub(r"\b\d+(:\d+)?\b", "N", message)
    message = re.sub(r"\b[A-Za-z_][A-Za-z0-9_$#]*\.\.\.", "NAME...", message)
    return message[:160]


def _exception_cause(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    inside = [f for f in frames if "/pell/" in f.filename.replace("\\", "/")] or frames
    where = f"{Path(inside[-1].filename).name}:{inside[-1].name}" if inside else "?"
    return f"{type(error).__name__} in {where}: {_normalise(str(error))[:100]}"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What examining one program found, whether it got SQL, and how long the compile took."""

    findings: list[Finding]
    sql: bool
    seconds: float
    result: pell.CompileResult | None = None


def examine_text(text: str, target: str, seed: int | None = None) -> Outcome:
    """Compile `text` for `target` and return every way the outcome breaks the contract."""
    findings: list[Finding] = []

    def found(kind: str, cause: str, detail: str) -> None:
        findings.append(Finding(seed, target, kind, cause, detail, text))

    started = time.perf_counter()
    try:
        with _deadline(HANG_SECONDS):
            result = pell.compile_source(text, "fuzz.pell", target)
    except _Hang:
        found("hang", f"no answer within {HANG_SECONDS:g} s", "the compile was stopped")
        return Outcome(findings, False, time.perf_counter() - started)
    except Exception as error:  # every exception is a finding
        tail = "".join(traceback.format_exception(error)[-6:])
        found("exception", _exception_cause(error), tail.strip())
        return Outcome(findings, False, time.perf_counter() - started)
    elapsed = time.perf_counter() - started
    if elapsed > SLOW_SECONDS:
        found("slow", f"a compile slower than {SLOW_SECONDS:g} s", f"{elapsed:.1f} s")
    _check_diagnostics(result, text, found)
    if result.sql is not None:
        _check_sql(result, target, found)
    return Outcome(findings, result.sql is not None, elapsed, result)


Found = Callable[[str, str, str], None]  # (kind, cause, detail)


def _check_diagnostics(result: pell.CompileResult, text: str, found: Found) -> None:
    """Every diagnostic inside the text, rendering never fails, and no SQL means an error."""
    for diagnostic in result.diagnostics:
        spans = [diagnostic.span, *(note.span for note in diagnostic.notes)]
        if not all(0 <= s.start <= s.end <= len(text) for s in spans):
            found(
                "unlocated",
                f"[{diagnostic.code}] span outside the text",
                f"{diagnostic.code} {diagnostic.span} in a text of {len(text)}: "
                f"{diagnostic.message}",
            )
    try:
        render_all(result.diagnostics, result.source, pretty=True)
    except Exception as error:  # rendering must never fail either
        found("render", _exception_cause(error), "".join(traceback.format_exception(error)[-4:]))
    errors = [d for d in result.diagnostics if d.is_error]
    if result.sql is None and not errors:
        found("no-error", "no SQL and no error", str([d.code for d in result.diagnostics]))
    if result.sql is not None and errors:
        found(
            "sql-with-errors",
            f"[{errors[0].code}] SQL written despite an error",
            errors[0].message,
        )


def _check_sql(result: pell.CompileResult, target: str, found: Found) -> None:
    """parseora and the lint on the module's SQL and on the pell_runtime package it needs."""
    assert result.sql is not None
    outputs = [("module", result.sql)]
    try:
        runtime = _runtime_sql(result)
    except Exception as error:  # the runtime of a module that compiled must build too
        found(
            "exception", "pell_runtime: " + _exception_cause(error), traceback.format_exc()[-800:]
        )
        runtime = None
    if runtime is not None:
        outputs.append(("pell_runtime", runtime))
    for what, sql in outputs:
        for problem in oracle_parse_errors(sql):
            message = problem.split(": ", 1)[-1]
            found("parseora", f"{what}: {_normalise(message)}", _excerpt(sql, problem))
        for lint in lint_sql(sql, target):
            found(
                "lint",
                f"{what}: {lint.rule}: {lint.key or _normalise(lint.message)}",
                f"line {lint.line}: {lint.message}\n  {_line(sql, lint.line)}",
            )


def _runtime_sql(result: pell.CompileResult) -> str | None:
    """The pell_runtime package a build writes for this module's errors, if it has any."""
    from pell import ast
    from pell.runtime import number_errors, runtime_sql

    module = result.module
    if module is None or not any(isinstance(i, ast.ErrorDecl) for i in module.items):
        return None
    numbered, _ = number_errors([module])
    return runtime_sql(numbered, pell.__version__)


def _line(sql: str, number: int) -> str:
    lines = sql.split("\n")
    text = lines[number - 1] if 0 < number <= len(lines) else ""
    return text.strip()[:200]


def _excerpt(sql: str, problem: str) -> str:
    match = re.match(r"(\d+):", problem)
    return f"{problem}\n  {_line(sql, int(match.group(1)))}" if match else problem


def examine(program: Program) -> Outcome:
    """Examine a program; one with a `variant` is also read from bytes in that form."""
    outcome = examine_text(program.text, program.target, program.seed)
    if program.variant and outcome.result is not None:
        outcome.findings.extend(_examine_variant(program, outcome.result))
    return outcome


def variant_bytes(text: str, variant: str) -> bytes:
    """The program as a file with a byte-order mark and/or CRLF or CR line ends."""
    if "crlf" in variant:
        text = text.replace("\n", "\r\n")
    elif "cr" in variant:
        text = text.replace("\n", "\r")
    data = text.encode("utf-8")
    return b"\xef\xbb\xbf" + data if "bom" in variant else data


def _examine_variant(program: Program, plain: pell.CompileResult) -> list[Finding]:
    """The program read from bytes with a byte-order mark or other line ends, as `pellc` reads
    a file: the same outcome and the same diagnostics at the same lines and columns."""
    findings: list[Finding] = []

    def found(kind: str, cause: str, detail: str) -> None:
        cause = f"read with {program.variant}: {cause}"
        findings.append(
            Finding(
                program.seed, program.target, kind, cause, detail, program.text, program.variant
            )
        )

    data = variant_bytes(program.text, program.variant)
    try:
        with _deadline(HANG_SECONDS):
            text, failure = pell.decode_source(data, "fuzz.pell")
            if text is None:
                assert failure is not None
                result = failure
            else:
                result = pell.compile_source(text, "fuzz.pell", program.target)
    except _Hang:
        found("hang", f"no answer within {HANG_SECONDS:g} s", "the compile was stopped")
        return findings
    except Exception as error:  # every exception is a finding
        tail = "".join(traceback.format_exception(error)[-6:])
        found("exception", _exception_cause(error), tail.strip())
        return findings
    _check_diagnostics(result, result.source.text, found)

    def places(r: pell.CompileResult) -> list[tuple[str, int, int]]:
        return sorted((d.code, *r.source.line_col(d.span.start)) for d in r.diagnostics)

    if (plain.sql is None) != (result.sql is None):
        shown_diagnostics = render_all(result.diagnostics, result.source, pretty=False)
        found("variant", "changes whether SQL is written", shown_diagnostics[:2000])
    elif sorted(d.code for d in plain.diagnostics) != sorted(d.code for d in result.diagnostics):
        found("variant", "changes the diagnostics", f"{places(plain)} -> {places(result)}")
    elif places(plain) != places(result):
        found("variant", "moves the diagnostics", f"{places(plain)} -> {places(result)}")
    if result.sql is not None and _body(result.sql) != _body(plain.sql or ""):
        _check_sql(result, program.target, found)
    return findings


def _body(sql: str) -> str:
    """The SQL without the header line that names the source's hash."""
    return "\n".join(line for line in sql.split("\n") if not line.startswith("-- Source SHA-256"))


def examine_seed(seed: int) -> Outcome:
    return examine(generate(seed))


# ---- many programs -----------------------------------------------------------------------------


@dataclass(slots=True)
class RunSummary:
    programs: int = 0
    with_sql: int = 0
    seconds: float = 0.0
    slowest: tuple[float, int] = (0.0, -1)  # (seconds, seed)
    findings: list[Finding] = field(default_factory=list)

    def groups(self, include_slow: bool = True) -> list[tuple[str, list[Finding]]]:
        """Findings grouped by cause, most frequent first (one finding per program per cause)."""
        grouped: dict[str, list[Finding]] = {}
        for finding in self.findings:
            if finding.kind == "slow" and not include_slow:
                continue
            key = f"{finding.kind}: {finding.cause}"
            members = grouped.setdefault(key, [])
            if not members or members[-1].seed != finding.seed:
                members.append(finding)
        return sorted(grouped.items(), key=lambda item: (-len(item[1]), item[0]))

    def failures(self, include_slow: bool) -> list[Finding]:
        return [f for f in self.findings if include_slow or f.kind != "slow"]


def run(seeds: Iterable[int]) -> RunSummary:
    summary = RunSummary()
    started = time.perf_counter()
    for seed in seeds:
        outcome = examine_seed(seed)
        summary.programs += 1
        summary.with_sql += outcome.sql
        summary.findings += outcome.findings
        summary.slowest = max(summary.slowest, (outcome.seconds, seed))
    summary.seconds = time.perf_counter() - started
    return summary


def describe(summary: RunSummary, include_slow: bool = True, examples: int = 1) -> str:
    """The findings grouped by cause, most frequent first, each with its first program."""
    failing = {f.seed for f in summary.failures(include_slow)}
    lines = [
        f"{summary.programs} programs in {summary.seconds:.1f} s, {summary.with_sql} with SQL, "
        f"slowest compile {summary.slowest[0]:.2f} s (seed {summary.slowest[1]}); "
        f"{len(failing)} programs with findings"
    ]
    for key, members in summary.groups(include_slow):
        seeds = ", ".join(str(f.seed) for f in members[:8])
        more = ", ..." if len(members) > 8 else ""
        lines.append(f"\n== {len(members)} x {key}  (seeds {seeds}{more})")
        for finding in members[:examples]:
            lines.append(finding.report())
    return "\n".join(lines)


# ---- shrinking -----------------------------------------------------------------------------------


# A token of Pell with the white space after it: a string, a word, or one other character.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"\s*|`[^`]*`\s*|\w+\s*|\s+|.\s*', re.S)


def shrink(text: str, keep: Callable[[str], bool], budget: int = 4000) -> str:
    """A smaller text for which `keep` still holds (a greedy delta debugging): whole brace
    blocks, then runs of lines, then runs of tokens are removed while it does, until a
    round removes nothing or `budget` attempts are spent."""
    attempts = 0

    def holds(candidate: str) -> bool:
        nonlocal attempts
        attempts += 1
        return bool(candidate.strip()) and keep(candidate)

    def blocks(current: str) -> str:
        lines = current.split("\n")
        i = 0
        while i < len(lines) and attempts < budget:
            if lines[i].rstrip().endswith("{"):
                depth = 0
                for j in range(i, len(lines)):
                    depth += lines[j].count("{") - lines[j].count("}")
                    if depth <= 0:
                        removed = lines[:i] + lines[j + 1 :]
                        unwrapped = lines[:i] + lines[i + 1 : j] + lines[j + 1 :]
                        for candidate in (removed, unwrapped) if j > i else (removed,):
                            if holds("\n".join(candidate)):
                                lines = candidate
                                i -= 1
                                break
                        break
            i += 1
        return "\n".join(lines)

    def runs(parts: list[str], joiner: str) -> list[str]:
        size = max(1, len(parts) // 2)
        while size >= 1 and attempts < budget:
            i = 0
            changed = False
            while i < len(parts) and attempts < budget:
                candidate = parts[:i] + parts[i + size :]
                if holds(joiner.join(candidate)):
                    parts = candidate
                    changed = True
                else:
                    i += size
            if not changed:
                size //= 2
        return parts

    while attempts < budget:
        before = text
        text = blocks(text)
        text = "\n".join(runs(text.split("\n"), "\n"))
        text = "".join(runs(_TOKEN.findall(text), ""))
        if text == before:
            break
    return text


def _sql_blocks(text: str) -> list[str] | None:
    """The SQL of every `sql! { }` in the text; None when it does not parse."""
    from pell import ast

    module, _ = pell.parse(text)
    if module is None:
        return None
    return [node.text for node in ast.walk(module) if isinstance(node, ast.SqlBlock)]


def shrink_finding(finding: Finding, budget: int = 4000) -> str:
    """The smallest text found that still has a finding of the same kind and cause. The SQL
    inside `sql! { }` is the user's and passes through as written, so a smaller text keeps
    each block it still has whole: a cut-down query is not a reproducer."""
    original = set(_sql_blocks(finding.text) or [])

    def keep(candidate: str) -> bool:
        blocks = _sql_blocks(candidate)
        if blocks is not None and not all(block in original for block in blocks):
            return False
        program = Program(finding.seed or 0, finding.target, candidate, finding.variant)
        return any(
            f.kind == finding.kind and f.cause == finding.cause for f in examine(program).findings
        )

    return shrink(finding.text, keep, budget)


# ---- command line --------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("show", help="print the program of a seed")
    show.add_argument("seed", type=int)
    check = commands.add_parser("check", help="the findings of a seed's program")
    check.add_argument("seed", type=int)
    many = commands.add_parser("run", help="the findings of a range of seeds, grouped by cause")
    many.add_argument("start", type=int, nargs="?", default=0)
    many.add_argument("count", type=int, nargs="?", default=1000)
    many.add_argument("--examples", type=int, default=1)
    small = commands.add_parser("shrink", help="a small reproducer of a seed's findings")
    small.add_argument("seed", type=int)
    small.add_argument("--all", action="store_true", help="every finding, not only the first")
    args = parser.parse_args(argv)
    if args.command == "show":
        program = generate(args.seed)
        variant = f", also read as bytes with {program.variant}" if program.variant else ""
        print(f"// seed {program.seed}, target {program.target}{variant}")
        print(program.text, end="")
        return 0
    if args.command == "check":
        findings = examine_seed(args.seed).findings
        for finding in findings:
            print(finding.report())
        print(f"{len(findings)} findings")
        return 1 if findings else 0
    if args.command == "run":
        summary = run(range(args.start, args.start + args.count))
        print(describe(summary, examples=args.examples))
        return 1 if summary.findings else 0
    findings = examine_seed(args.seed).findings
    if not findings:
        print("no findings")
        return 0
    seen: set[str] = set()
    for finding in findings if args.all else findings[:1]:
        if finding.cause in seen:
            continue
        seen.add(finding.cause)
        print(f"[{finding.kind}] {finding.cause} (target {finding.target})")
        print(shrink_finding(finding))
        print("----")
    return 1


if __name__ == "__main__":
    sys.exit(main())
