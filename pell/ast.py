"""The Pell syntax tree: frozen dataclasses, each carrying the source span it came from."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Literal


@dataclass(frozen=True, slots=True)
class Span:
    """Character offsets [start, end) into the source text."""

    start: int
    end: int


NO_SPAN = Span(0, 0)


# The node classes are declared with eq=False, repr=False: Node's __eq__, __hash__ and
# __repr__ do what dataclass would generate for each class (compare the fields, class first;
# hash them; show them), written once rather than compiled per class at every start-up (a
# third of the time importing this module took).
@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Node:
    span: Span = field(repr=False, compare=False, kw_only=True)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        compared = _compared_fields(self.__class__)
        return compared(self) == compared(other)

    def __hash__(self) -> int:
        return hash(_compared_fields(self.__class__)(self))

    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.repr)
        return f"{self.__class__.__qualname__}({shown})"


# class -> a function giving the values of its compared fields (all but `span`), as a tuple
_COMPARED: dict[type, Callable[[Node], tuple[object, ...]]] = {}


def _compared_fields(cls: type) -> Callable[[Node], tuple[object, ...]]:
    getter = _COMPARED.get(cls)
    if getter is None:
        names = [declared.name for declared in fields(cls) if declared.compare]
        if len(names) > 1:
            getter = attrgetter(*names)
        elif names:
            single = attrgetter(names[0])
            getter = lambda node: (single(node),)  # noqa: E731
        else:
            getter = _no_children
        _COMPARED[cls] = getter
    return getter


# ---- types -------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class NamedType(Node):
    """`number`, `Order`, `list<T>`, `Result<T, E1 | E2>`, `T?`."""

    name: str
    args: tuple[TypeArg, ...] = ()
    optional: bool = False


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class UnitType(Node):
    """`()`."""


TypeRef = NamedType | UnitType


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class TypeArg(Node):
    """One type argument; several alternatives for `E1 | E2` in `Result<T, E1 | E2>`."""

    alternatives: tuple[TypeRef, ...]


# ---- expressions -------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class NumberLit(Node):
    text: str  # underscores already removed


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class StringLit(Node):
    """A string; interpolated when `parts` holds expressions between the text pieces."""

    parts: tuple[str | Expr, ...]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class BoolLit(Node):
    value: bool


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class NoneLit(Node):
    pass


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class UnitLit(Node):
    pass


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Name(Node):
    """A name, possibly qualified: `x`, `dbms_output::put_line`."""

    path: tuple[str, ...]

    @property
    def text(self) -> str:
        return "::".join(self.path)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class FieldAccess(Node):
    target: Expr
    name: str


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Call(Node):
    callee: Name
    args: tuple[Expr, ...]  # the positional arguments
    keywords: tuple[KeywordArg, ...] = ()  # `f(a, limit = 10)`: after the positional ones


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class KeywordArg(Node):
    """`name = value` in a call: PL/SQL named notation `p_name => value`."""

    name: str
    value: Expr
    name_span: Span = field(default=NO_SPAN, repr=False, compare=False)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class MethodCall(Node):
    target: Expr
    name: str
    args: tuple[Expr, ...]
    type_args: tuple[TypeArg, ...] = ()
    name_span: Span = field(default=NO_SPAN, repr=False, compare=False)  # the method's name


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class FieldInit(Node):
    name: str
    value: Expr  # the shorthand `Order { id }` stores Name("id")


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class RecordLit(Node):
    type_name: str
    fields: tuple[FieldInit, ...]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Unary(Node):
    op: Literal["-", "!"]
    operand: Expr


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Binary(Node):
    op: str  # the Pell operator: "||", "&&", "==", "+", ...
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Wrap(Node):
    """`Ok(e)`, `Err(e)`, `Some(e)`; `Ok()` has no value."""

    kind: Literal["Ok", "Err", "Some"]
    value: Expr | None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Propagate(Node):
    """Postfix `?`."""

    operand: Expr


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ListLit(Node):
    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class SqlBlock(Node):
    """`sql! { ... }`: the raw SQL and where it starts in the source."""

    text: str
    text_start: int
    first_column: int  # 0-based source column of the first SQL character, for re-indenting


Expr = (
    NumberLit
    | StringLit
    | BoolLit
    | NoneLit
    | UnitLit
    | Name
    | FieldAccess
    | Call
    | MethodCall
    | RecordLit
    | Unary
    | Binary
    | Wrap
    | Propagate
    | ListLit
    | SqlBlock
)

# Binary operators, lowest precedence first; all are left-associative.
BINARY_PRECEDENCE: dict[str, int] = {
    "||": 1,
    "&&": 2,
    "==": 3,
    "!=": 3,
    "<": 4,
    "<=": 4,
    ">": 4,
    ">=": 4,
    "+": 5,
    "-": 5,
    "*": 6,
    "/": 6,
    "%": 6,
}


# ---- statements --------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Block(Node):
    stmts: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Let(Node):
    """`let x: T = e;` or `var x: T;` (`mutable` for `var`)."""

    name: str
    type: TypeRef | None
    value: Expr | None
    mutable: bool
    name_span: Span = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Assign(Node):
    target: Expr
    value: Expr


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ExprStmt(Node):
    expr: Expr


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class If(Node):
    condition: Expr
    then: Block
    otherwise: Block | If | None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class While(Node):
    condition: Expr
    body: Block


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Range(Node):
    start: Expr
    end: Expr
    inclusive: bool


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class For(Node):
    var: str
    source: Expr | Range
    body: Block
    var_span: Span = field(repr=False, compare=False)
    bulk: bool = False  # `forall r in rows { sql! { ... } }`: one DML statement, FORALL


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Break(Node):
    pass


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Continue(Node):
    pass


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Return(Node):
    value: Expr | None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Transaction(Node):
    body: Block


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Yield(Node):
    value: Expr


Stmt = Let | Assign | ExprStmt | If | While | For | Break | Continue | Return | Transaction | Yield


# ---- items -------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class AnnotationArg(Node):
    name: str | None  # None for a positional argument
    value: Expr


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Annotation(Node):
    name: str
    args: tuple[AnnotationArg, ...]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Field(Node):
    name: str
    type: TypeRef


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Record(Node):
    name: str
    fields: tuple[Field, ...]
    public: bool
    annotations: tuple[Annotation, ...]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ErrorDecl(Node):
    name: str
    fields: tuple[Field, ...]
    public: bool
    annotations: tuple[Annotation, ...]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Variant(Node):
    name: str
    value: Expr | None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Enum(Node):
    name: str
    variants: tuple[Variant, ...]
    public: bool
    annotations: tuple[Annotation, ...]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Param(Node):
    name: str
    mode: Literal["in", "out", "inout"]
    type: TypeRef
    default: Expr | None = None  # `name: T = value`: the argument may be left out


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Fn(Node):
    name: str
    params: tuple[Param, ...]
    return_type: TypeRef | None
    body: Block
    finally_body: Block | None
    public: bool
    annotations: tuple[Annotation, ...]
    name_span: Span = field(repr=False, compare=False)
    has_body: bool = True  # False: `fn f(...);`, a signature only (stub modules)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Sequence(Node):
    """`pub seq order_ids;`: an Oracle sequence the module's code reads with `.nextval` and
    `.currval`. It declares one that exists (created with the tables), and creates nothing."""

    name: str
    public: bool = False
    annotations: tuple[Annotation, ...] = ()


Item = Record | ErrorDecl | Enum | Fn | Sequence


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Import(Node):
    path: tuple[str, ...]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Module(Node):
    path: tuple[str, ...]
    imports: tuple[Import, ...]
    items: tuple[Item, ...]
    annotations: tuple[Annotation, ...] = ()  # before `module`: `@stub`, `@package("name")`

    def annotation(self, name: str) -> Annotation | None:
        return next((a for a in self.annotations if a.name == name), None)

    @property
    def is_stub(self) -> bool:
        return self.annotation("stub") is not None

    @property
    def dotted_name(self) -> str:
        return ".".join(self.path)

    @property
    def chosen_package(self) -> str | None:
        """The package name `@package("name")` gives (checked by the checker), if any."""
        annotation = self.annotation("package")
        if annotation is None or len(annotation.args) != 1:
            return None
        value = annotation.args[0].value
        if isinstance(value, StringLit) and all(isinstance(p, str) for p in value.parts):
            return "".join(str(p) for p in value.parts)
        return None


# Field types that never hold a node: walks skip them.
_LEAF_TYPES = frozenset({"Span", "bool", "int", "str", "str | None", "tuple[str, ...]"})
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(node: Node) -> tuple[str, ...]:
    """The names of the fields of `node`'s class that may hold nodes."""
    cls = type(node)
    names = _CHILD_FIELDS.get(cls)
    if names is None:
        names = _child_fields_of(cls)
    return names


def _child_fields_of(cls: type) -> tuple[str, ...]:
    names = _CHILD_FIELDS[cls] = tuple(
        declared.name
        for declared in fields(cls)
        if str(declared.type) not in _LEAF_TYPES and not str(declared.type).startswith("Literal[")
    )
    return names


def children(node: Node) -> Iterator[Node]:
    """The nodes directly below `node`, in source order."""
    stack: list[object] = [getattr(node, name) for name in reversed(_child_fields(node))]
    while stack:
        current = stack.pop()
        if isinstance(current, Node):
            yield current
        elif isinstance(current, tuple):
            stack.extend(reversed(current))


# class -> a function giving the values of its child fields, last first (what a stack pushes)
_REVERSED_CHILDREN: dict[type, Callable[[Node], tuple[object, ...]]] = {}


def _reversed_children(cls: type) -> Callable[[Node], tuple[object, ...]]:
    getter = _REVERSED_CHILDREN.get(cls)
    if getter is None:
        names = tuple(reversed(_CHILD_FIELDS.get(cls) or _child_fields_of(cls)))
        if not names:
            getter = _no_children
        elif len(names) == 1:
            single = attrgetter(names[0])
            getter = lambda node: (single(node),)  # noqa: E731
        else:
            getter = attrgetter(*names)
        _REVERSED_CHILDREN[cls] = getter
    return getter


def _no_children(node: Node) -> tuple[object, ...]:
    return ()


def walk(node: Node) -> Iterator[Node]:
    """`node` and every node below it, depth first, in source order. (The checker walks each
    fn several times: one attrgetter per class, not a getattr per field.)"""
    stack: list[object] = [node]
    pop, push = stack.pop, stack.extend
    while stack:
        current = pop()
        if isinstance(current, Node):
            yield current
            push(_reversed_children(type(current))(current))
        elif isinstance(current, tuple):
            push(current[::-1])


def deepest(node: Node) -> tuple[int, Node]:
    """How deep the tree below `node` goes, and a node at that depth (for the diagnostic)."""
    deepest_depth, deepest_node = 0, node
    stack: list[tuple[object, int]] = [(node, 0)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, Node):
            if depth > deepest_depth:
                deepest_depth, deepest_node = depth, current
            stack.extend((getattr(current, name), depth + 1) for name in _child_fields(current))
        elif isinstance(current, tuple):
            stack.extend((item, depth) for item in current)
    return deepest_depth, deepest_node
