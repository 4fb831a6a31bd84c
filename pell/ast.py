"""The Pell syntax tree: frozen records, each carrying the source span it came from."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from operator import attrgetter
from typing import TYPE_CHECKING, Literal, TypeVar

from pell.records import field, fields, record, replace

if TYPE_CHECKING:
    from pell.checker.jq import JqRows


@record
class Span:
    """Character offsets [start, end) into the source text."""

    start: int
    end: int


NO_SPAN = Span(0, 0)


@record
class Node:
    span: Span = field(repr=False, compare=False, kw_only=True)


# ---- types -------------------------------------------------------------------


@record
class NamedType(Node):
    """`number`, `Order`, `list<T>`, `Result<T, E1 | E2>`, `T?`."""

    name: str
    args: tuple[TypeArg, ...] = ()
    optional: bool = False


@record
class UnitType(Node):
    """`()`."""


TypeRef = NamedType | UnitType


@record
class TypeArg(Node):
    """One type argument; several alternatives for `E1 | E2` in `Result<T, E1 | E2>`."""

    alternatives: tuple[TypeRef, ...]


# ---- expressions -------------------------------------------------------------


@record
class NumberLit(Node):
    text: str  # underscores already removed


@record
class StringLit(Node):
    """A string; interpolated when `parts` holds expressions between the text pieces."""

    parts: tuple[str | Expr, ...]


@record
class BoolLit(Node):
    value: bool


@record
class NoneLit(Node):
    pass


@record
class UnitLit(Node):
    pass


@record
class RegexLit(Node):
    """`/pattern/`: the pattern as written between the slashes (`\\/` still escaped), which
    only a `re::` fn takes (pell.checker.regex). `quoted`: written as a text literal in that
    place (`"\\d+"`), `source` its value."""

    source: str
    quoted: bool = False


@record
class Name(Node):
    """A name, possibly qualified: `x`, `dbms_output::put_line`."""

    path: tuple[str, ...]

    @property
    def text(self) -> str:
        return "::".join(self.path)


@record
class FieldAccess(Node):
    target: Expr
    name: str


@record
class Call(Node):
    callee: Name
    args: tuple[Expr, ...]  # the positional arguments
    keywords: tuple[KeywordArg, ...] = ()  # `f(a, limit = 10)`: after the positional ones
    type_args: tuple[TypeArg, ...] = ()  # `re::capture::<T>(...)`, `json::into::<User>(j)`


@record
class KeywordArg(Node):
    """`name = value` in a call: PL/SQL named notation `p_name => value`."""

    name: str
    value: Expr
    name_span: Span = field(default=NO_SPAN, repr=False, compare=False)


@record
class MethodCall(Node):
    target: Expr
    name: str
    args: tuple[Expr, ...]
    type_args: tuple[TypeArg, ...] = ()
    name_span: Span = field(default=NO_SPAN, repr=False, compare=False)  # the method's name


@record
class FieldInit(Node):
    name: str
    value: Expr  # the shorthand `Order { id }` stores Name("id")


@record
class RecordLit(Node):
    type_name: str
    fields: tuple[FieldInit, ...]


@record
class Unary(Node):
    op: Literal["-", "!"]
    operand: Expr


@record
class Binary(Node):
    op: str  # the Pell operator: "||", "&&", "==", "+", ...
    left: Expr
    right: Expr


@record
class Wrap(Node):
    """`Ok(e)`, `Err(e)`, `Some(e)`; `Ok()` has no value."""

    kind: Literal["Ok", "Err", "Some"]
    value: Expr | None


@record
class Propagate(Node):
    """Postfix `?`."""

    operand: Expr


@record
class ListLit(Node):
    items: tuple[Expr, ...]


@record
class SqlBlock(Node):
    """`sql! { ... }`: the raw SQL and where it starts in the source."""

    text: str
    text_start: int
    first_column: int  # 0-based source column of the first SQL character, for re-indenting
    # Made by a `|>` pipeline: its stages, each a @pipelined fn with the arguments after the
    # rows (`select *` is the last one's row)
    stages: tuple[Call, ...] = field(default=(), repr=False, compare=False)
    # The JSON_TABLE query of a `jq! { }` (pell.checker.jq): the jq query as parsed, with its
    # rows' type, which the PostgreSQL target lowers instead of the text
    jq: JqRows | None = field(default=None, repr=False, compare=False)
    # its columns, each aliased, when an `int` is among them (those in `whole`): the rows are
    # read one by one so that each int goes through pell_whole (pell.codegen.subprograms)
    jq_columns: tuple[str, ...] = field(default=(), repr=False, compare=False)
    jq_whole: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    # Made by `pivot::sum(...)` (pell.ast_builder.typed_pivot): Oracle's PIVOT clause; the
    # name of the record field each selected column fills, in order
    pivot: tuple[str, ...] = field(default=(), repr=False, compare=False)



@record
class JqBlock(Node):
    """`jq! { j | .users[] | .name }`: the query as written (pell.checker.json reads it), and
    where it starts in the source. The checker makes it a JSON_TABLE query (`compiled`, one
    SqlBlock once checked), which the terminators then read as they read a `sql! { }`."""

    text: str
    text_start: int
    compiled: list[SqlBlock] = field(default_factory=list, repr=False, compare=False)


@record
class Pattern(Node):
    """One pattern of a `match` arm: `_` (kind "wildcard"); a literal (kind "value", the
    literal in `value`); `None` / `Some(p)` on an optional value; a case of a sealed type
    (kind "case": `Circle(_)`, `Cons { head: h, tail: t }`, `Nil`), with the fields it binds
    as (field, name)."""

    kind: Literal["wildcard", "value", "none", "some", "case"]
    value: Expr | None = None
    case: str = ""
    bindings: tuple[tuple[str, str], ...] = ()
    inner: Pattern | None = None  # `Some(p)`'s p


@record
class MatchArm(Node):
    patterns: tuple[Pattern, ...]  # `p1 | p2`
    guard: Expr | None
    body: Block | Expr


@record
class Match(Node):
    """`match x { pattern -> value, ... }`, a statement or an expression."""

    subject: Expr
    arms: tuple[MatchArm, ...]


Expr = (
    NumberLit
    | StringLit
    | BoolLit
    | NoneLit
    | UnitLit
    | RegexLit
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
    | Match
    | JqBlock
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


@record
class Block(Node):
    stmts: tuple[Stmt, ...]


@record
class Let(Node):
    """`let x: T = e;` or `var x: T;` (`mutable` for `var`)."""

    name: str
    type: TypeRef | None
    value: Expr | None
    mutable: bool
    name_span: Span = field(repr=False, compare=False)


@record
class Assign(Node):
    target: Expr
    value: Expr


@record
class ExprStmt(Node):
    expr: Expr


@record
class If(Node):
    condition: Expr
    then: Block
    otherwise: Block | If | None


@record
class While(Node):
    condition: Expr
    body: Block


@record
class Range(Node):
    start: Expr
    end: Expr
    inclusive: bool


@record
class For(Node):
    var: str
    source: Expr | Range
    body: Block
    var_span: Span = field(repr=False, compare=False)
    bulk: bool = False  # `forall r in rows { sql! { ... } }`: one DML statement, FORALL


@record
class Break(Node):
    pass


@record
class Continue(Node):
    pass


@record
class Return(Node):
    value: Expr | None


@record
class Transaction(Node):
    body: Block


@record
class Yield(Node):
    value: Expr


Stmt = Let | Assign | ExprStmt | If | While | For | Break | Continue | Return | Transaction | Yield


# ---- items -------------------------------------------------------------------


@record
class AnnotationArg(Node):
    name: str | None  # None for a positional argument
    value: Expr


@record
class Annotation(Node):
    name: str
    args: tuple[AnnotationArg, ...]


@record
class Field(Node):
    name: str
    type: TypeRef


@record
class Record(Node):
    name: str
    fields: tuple[Field, ...]
    public: bool
    annotations: tuple[Annotation, ...]


@record
class ErrorDecl(Node):
    name: str
    fields: tuple[Field, ...]
    public: bool
    annotations: tuple[Annotation, ...]


@record
class Variant(Node):
    name: str
    value: Expr | None


@record
class Enum(Node):
    name: str
    variants: tuple[Variant, ...]
    public: bool
    annotations: tuple[Annotation, ...]


@record
class Param(Node):
    name: str
    mode: Literal["in", "out", "inout"]
    type: TypeRef
    default: Expr | None = None  # `name: T = value`: the argument may be left out


@record
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
    unsafe: bool = False  # `unsafe fn`: may run dynamic SQL (`exec_dyn`)


@record
class Sequence(Node):
    """`pub seq order_ids;`: an Oracle sequence the module's code reads with `.nextval` and
    `.currval`. It declares one that exists (created with the tables), and creates nothing."""

    name: str
    public: bool = False
    annotations: tuple[Annotation, ...] = ()


@record
class TypeCase(Node):
    """`case Circle { radius: number } { fn area() -> number { ... } }` of a sealed type."""

    name: str
    fields: tuple[Field, ...]
    methods: tuple[Fn, ...]


@record
class TypeDecl(Node):
    """`type Money { fields; fn methods }` (an object type), or `sealed type Shape { fn
    area() -> number; case Circle { ... } { ... } }`; each method's `self` is implied."""

    name: str
    fields: tuple[Field, ...]
    methods: tuple[Fn, ...]
    cases: tuple[TypeCase, ...]
    sealed: bool
    public: bool
    annotations: tuple[Annotation, ...]
    map_method: str = ""  # the `map fn` that orders values of the type
    name_span: Span = field(default=NO_SPAN, repr=False, compare=False)


@record
class StateField(Node):
    """`acc: number = 0;` in an aggregate's `state { }`: the default is its initial value."""

    name: str
    type: TypeRef
    default: Expr | None


@record
class AggregateMethod(Node):
    """`step(v: number) { }`, `merge(o: Self) { }` or `finish() -> number { }` of an
    aggregate: parts of it, never fns of the package (pell.checker.aggregates)."""

    name: str
    params: tuple[Param, ...]
    return_type: TypeRef | None
    body: Block
    name_span: Span = field(repr=False, compare=False)


@record
class Aggregate(Node):
    """`pub aggregate total(x: number) -> number { state { } step(..) { } ... }`: a
    user-defined aggregate function of SQL (Oracle's ODCIAggregate interface)."""

    name: str
    params: tuple[Param, ...]
    return_type: TypeRef
    state: tuple[StateField, ...]
    methods: tuple[AggregateMethod, ...]
    public: bool
    annotations: tuple[Annotation, ...]
    name_span: Span = field(repr=False, compare=False)
    state_spans: tuple[Span, ...] = field(default=(), repr=False, compare=False)  # `state {`

    def method(self, name: str) -> AggregateMethod | None:
        return next((m for m in self.methods if m.name == name), None)


Item = Record | ErrorDecl | Enum | Fn | Sequence | TypeDecl | Aggregate


@record
class Import(Node):
    path: tuple[str, ...]


SCRIPT_FN = "script"  # the implicit procedure a script's statements are the body of


@record
class Module(Node):
    path: tuple[str, ...]
    imports: tuple[Import, ...]
    items: tuple[Item, ...]
    annotations: tuple[Annotation, ...] = ()  # before `module`: `@stub`, `@package("name")`
    # A file with no `module` line: its statements are the body of the one fn SCRIPT_FN,
    # printed as an anonymous block (pell.codegen.print_script); no package, never imported.
    script: bool = False
    # Its file sits in a folder named `stubs` (STUBS_FOLDER): a stub without `@stub`, as the
    # public Pell runtime ships its stubs (pell.project.in_stubs_folder)
    stub_folder: bool = False

    def annotation(self, name: str) -> Annotation | None:
        return next((a for a in self.annotations if a.name == name), None)

    @property
    def is_stub(self) -> bool:
        return self.stub_folder or self.annotation("stub") is not None

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
_LEAF_TYPES = frozenset(
    {"Span", "bool", "int", "str", "str | None", "tuple[str, ...]", "tuple[tuple[str, str], ...]"}
)
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
    getters = _REVERSED_CHILDREN
    while stack:
        current = pop()
        if type(current) is tuple:
            push(current[::-1])
        elif isinstance(current, Node):
            yield current
            push((getters.get(type(current)) or _reversed_children(type(current)))(current))


def deepest(node: Node, sql_blocks: list[SqlBlock] | None = None) -> tuple[int, Node]:
    """How deep the tree below `node` goes, and the last node in source order at that depth
    (for the diagnostic). Level by level, without recursion: the tree may be deeper than
    the interpreter's stack, and a level is a flat list (no (node, depth) pair per node).
    Given `sql_blocks`, adds every SqlBlock met to it (in no set order): the checker needs
    them, and this visits every node anyway."""
    depth, level = 0, [node]
    getters = _REVERSED_CHILDREN
    while True:
        if sql_blocks is not None:
            sql_blocks += [n for n in level if type(n) is SqlBlock]
        below: list[Node] = []
        append = below.append
        for current in level:
            values = (getters.get(type(current)) or _reversed_children(type(current)))(current)
            for value in reversed(values):
                if type(value) is tuple:
                    below += [item for item in value if isinstance(item, Node)]
                elif isinstance(value, Node):
                    append(value)
        if not below:
            return depth, level[-1]
        depth, level = depth + 1, below


_N = TypeVar("_N", bound="Node")


def replaced(node: _N, by: dict[int, Node]) -> _N:
    """`node` with each node below it whose id is a key of `by` replaced by its value: the
    nodes on the way down to one are rebuilt, every other node is the same object (the
    checker keys what it records by node identity)."""
    found = by.get(id(node))
    if found is not None:
        return found  # type: ignore[return-value]
    changes: dict[str, object] = {}
    for name in _child_fields(node):
        value = getattr(node, name)
        new = _replaced_value(value, by)
        if new is not value:
            changes[name] = new
    return replace(node, **changes) if changes else node


def _replaced_value(value: object, by: dict[int, Node]) -> object:
    if isinstance(value, Node):
        return replaced(value, by)
    if type(value) is tuple:
        items = tuple(_replaced_value(item, by) for item in value)
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value
