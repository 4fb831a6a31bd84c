"""pell.records gives the semantics dataclasses gave pellc's classes, without importing
dataclasses: the same fields, __init__, __match_args__, eq, hash and repr, replace, pickling."""

from __future__ import annotations

import dataclasses
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest

import pell
from pell import ast, plsql, records
from pell.records import field, fields, record, replace


@record
class Span:
    start: int
    end: int


@record
class Node:
    span: Span = field(repr=False, compare=False, kw_only=True)


@record
class Leaf(Node):
    value: int


@record
class Empty(Node):
    pass


@record
class Pair(Node):
    left: Node
    right: Node | None = None
    note: str = field(default="", compare=False)
    hidden: int = field(default=0, repr=False)


@record(frozen=False)
class Stmt:
    body: list[int]
    handlers: list[int] = field(default_factory=list)
    label: str = ""
    origin: int = field(default=-1, kw_only=True)
    shared: ClassVar[int] = 3


# the same classes as dataclasses, to compare with
@dataclasses.dataclass(frozen=True, slots=True)
class DSpan:
    start: int
    end: int


@dataclasses.dataclass(frozen=True, slots=True)
class DNode:
    span: DSpan = dataclasses.field(repr=False, compare=False, kw_only=True)


@dataclasses.dataclass(frozen=True, slots=True)
class DLeaf(DNode):
    value: int


@dataclasses.dataclass(frozen=True, slots=True)
class DEmpty(DNode):
    pass


@dataclasses.dataclass(frozen=True, slots=True)
class DPair(DNode):
    left: DNode
    right: DNode | None = None
    note: str = dataclasses.field(default="", compare=False)
    hidden: int = dataclasses.field(default=0, repr=False)


@dataclasses.dataclass(slots=True)
class DStmt:
    body: list[int]
    handlers: list[int] = dataclasses.field(default_factory=list)
    label: str = ""
    origin: int = dataclasses.field(default=-1, kw_only=True)
    shared: ClassVar[int] = 3


PAIRS = [(Span, DSpan), (Node, DNode), (Leaf, DLeaf), (Empty, DEmpty), (Pair, DPair), (Stmt, DStmt)]


@pytest.mark.parametrize(("ours", "theirs"), PAIRS)
def test_fields_slots_and_match_args_are_dataclass_s(ours: type, theirs: type) -> None:
    mine = [(f.name, f.type, f.default, f.repr, f.compare, f.kw_only) for f in fields(ours)]
    dc = [
        (f.name, f.type, f.default, f.repr, f.compare, f.kw_only)
        for f in dataclasses.fields(theirs)
    ]
    assert mine == [
        (n, t.replace("D", ""), records.MISSING if d is dataclasses.MISSING else d, *rest)
        for n, t, d, *rest in dc
    ]
    assert ours.__slots__ == theirs.__slots__  # type: ignore[attr-defined]
    assert ours.__match_args__ == theirs.__match_args__  # type: ignore[attr-defined]
    assert ours.__qualname__ == theirs.__qualname__[1:]
    assert (ours.__hash__ is None) == (theirs.__hash__ is None)


def _twins() -> list[tuple[Any, Any]]:
    s, t = Span(1, 2), DSpan(1, 2)
    return [
        (s, t),
        (Leaf(3, span=s), DLeaf(3, span=t)),
        (Empty(span=s), DEmpty(span=t)),
        (Pair(Leaf(1, span=s), span=s), DPair(DLeaf(1, span=t), span=t)),
        (
            Pair(Leaf(1, span=s), Empty(span=s), "n", 5, span=s),
            DPair(DLeaf(1, span=t), DEmpty(span=t), "n", 5, span=t),
        ),
        (Stmt([1]), DStmt([1])),
        (Stmt([1], [2], "l", origin=4), DStmt([1], [2], "l", origin=4)),
    ]


@pytest.mark.parametrize(("ours", "theirs"), _twins())
def test_repr_eq_and_hash_are_dataclass_s(ours: Any, theirs: Any) -> None:
    assert repr(ours) == repr(theirs).replace("DSpan", "Span").replace("DLeaf", "Leaf").replace(
        "DEmpty", "Empty"
    ).replace("DPair", "Pair").replace("DStmt", "Stmt")
    if theirs.__hash__ is not None:
        assert hash(ours) == hash(theirs)
    else:
        with pytest.raises(TypeError):
            hash(ours)
    assert ours == pickle.loads(pickle.dumps(ours))
    assert ours != theirs and ours.__eq__(theirs) is NotImplemented


def test_eq_compares_the_compared_fields_of_the_same_class() -> None:
    a, b = Span(0, 1), Span(5, 9)
    assert Leaf(1, span=a) == Leaf(1, span=b)  # span: compare=False
    assert hash(Leaf(1, span=a)) == hash(Leaf(1, span=b)) == hash((1,))
    assert Leaf(1, span=a) != Leaf(2, span=a)
    assert Empty(span=a) == Empty(span=b) and hash(Empty(span=a)) == hash(())
    assert Pair(Leaf(1, span=a), note="x", span=a) == Pair(Leaf(1, span=b), note="y", span=b)
    assert Pair(Leaf(1, span=a), hidden=1, span=a) != Pair(Leaf(1, span=a), hidden=2, span=a)
    assert Stmt([1]) == Stmt([1]) and Stmt([1]) != Stmt([1], origin=2)


def test_init_defaults_factories_and_keywords() -> None:
    first, second = Stmt([]), Stmt([])
    assert first.handlers == [] and first.handlers is not second.handlers
    assert Stmt(body=[1], label="x", origin=3).label == "x"
    assert Stmt.shared == 3 and "shared" not in vars(Stmt)["__slots__"]
    with pytest.raises(TypeError):
        Stmt([1], [], "", 3)  # type: ignore[call-arg]  # origin is keyword-only
    with pytest.raises(TypeError):
        Leaf(1)  # type: ignore[call-arg]
    with pytest.raises(AttributeError):
        Leaf(1, span=Span(0, 0)).other = 2  # type: ignore[attr-defined]  # slots


def test_replace_and_fields() -> None:
    s = Span(1, 2)
    pair = Pair(Leaf(1, span=s), note="n", span=s)
    changed = replace(pair, note="m", span=Span(3, 4))
    assert (changed.left, changed.note, changed.span, changed.hidden) == (
        pair.left,
        "m",
        Span(3, 4),
        0,
    )
    assert replace(pair) == pair and replace(pair) is not pair
    assert [f.name for f in fields(pair)] == ["span", "left", "right", "note", "hidden"]
    with pytest.raises(TypeError):
        replace(pair, nothing=1)
    with pytest.raises(TypeError):
        fields(object())


def test_declaration_errors() -> None:
    with pytest.raises(TypeError, match="non-default argument 'b'"):

        @record
        class Bad:
            a: int = 0
            b: int  # type: ignore[misc]

    with pytest.raises(ValueError, match="mutable default"):

        @record(frozen=False)
        class Mutable:
            a: list[int] = []  # noqa: RUF012


def test_own_methods_are_kept() -> None:
    @record
    class Own:
        a: int

        def __repr__(self) -> str:
            return "own"

        def __eq__(self, other: object) -> bool:
            return True

    # Python sets __hash__ to None beside a class's own __eq__; dataclass then hashes the fields
    assert repr(Own(1)) == "own" and Own(1) == Own(2) and hash(Own(1)) == hash((1,))

    @record(frozen=False)
    class Hashed:
        a: int

        def __hash__(self) -> int:
            return 7

    assert hash(Hashed(1)) == 7

    @record(frozen=False)
    class OwnInit:
        a: int

        def __init__(self, a: int) -> None:
            self.a = a * 2

    assert OwnInit(2).a == 4


@pytest.mark.parametrize("protocol", range(2, pickle.HIGHEST_PROTOCOL + 1))
def test_pell_trees_pickle(protocol: int) -> None:
    module, diagnostics = pell.parse(
        "module m;\n\npub record Item { id: number, name: text }\n\n"
        "@retry(5)\npub fn f(item_id: number) -> number {\n"
        "    let y = item_id + 1;\n"
        "    sql! { update items set qty = qty - 1 where id = :item_id };\n"
        "    return y;\n}\n"
    )
    assert module is not None and not diagnostics
    loaded = pickle.loads(pickle.dumps(module, protocol))
    assert loaded == module and repr(loaded) == repr(module)
    assert [n.span for n in ast.walk(loaded)] == [n.span for n in ast.walk(module)]
    block = plsql.Block([plsql.Null(origin=1)], [plsql.Handler([plsql.OTHERS], [])], origin=2)
    assert pickle.loads(pickle.dumps(block, protocol)) == block


def test_pell_classes_are_slotted_records() -> None:
    for module in (ast, plsql):
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and value.__module__ == module.__name__
                and "__record_fields__" in vars(value)
            ):
                assert "__dict__" not in vars(value) and "__slots__" in vars(value), value


def test_importing_pell_imports_neither_dataclasses_nor_inspect() -> None:
    code = (
        "import sys, pell.cli, pell.build, pell.compiler, pell.codegen, pell.checker.checker, "
        "pell.verify, pell.deploy, pell.explain, pell.postgres, pell.error_codes\n"
        "print(sorted({'dataclasses', 'inspect'} & set(sys.modules)))"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "[]"


def test_a_module_s_compile_pickles_as_build_workers_hand_it_back() -> None:
    from pell.build import Compiled, compile_module
    from pell.project import ModuleIndex

    examples = Path(__file__).parent.parent / "examples"
    for path in sorted(examples.glob("*.pell")):
        compiled = compile_module(
            path.read_text("utf-8"), str(path), "23ai", ModuleIndex(), None, True
        )
        loaded: Compiled = pickle.loads(pickle.dumps(compiled, pickle.HIGHEST_PROTOCOL))
        assert loaded.sql == compiled.sql and loaded.sql is not None
        assert loaded.diagnostics == compiled.diagnostics
        assert loaded.retry_facts == compiled.retry_facts
        assert loaded.errors == compiled.errors and loaded.source_map == compiled.source_map
        assert repr(loaded.retry_facts) == repr(compiled.retry_facts)
