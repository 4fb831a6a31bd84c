"""The checked module: what the checker learned, in the form code generation reads it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pell import ast
from pell.checker.types import ObjectType, RecordType, Type, UnitType
from pell.records import field, record
from pell.retry import RetryPolicy
from pell.sqltext import Bind

if TYPE_CHECKING:
    from pell.checker.aggregates import AggregateInfo
    from pell.checker.dynamic_sql import DynamicSql
    from pell.checker.imports import Imports
    from pell.checker.json import JsonCall
    from pell.checker.pivot import DynamicPivot
    from pell.checker.regex import Capture
    from pell.checker.retry_facts import ModuleFacts


@record
class RecordInfo:
    decl: ast.Record
    fields: dict[str, Type]


@record
class ParamInfo:
    decl: ast.Param
    type: Type


@record
class FnInfo:
    decl: ast.Fn
    params: tuple[ParamInfo, ...]
    returns: Type  # UNIT for a procedure
    errors: tuple[str, ...]  # the E of Result<T, E1 | E2>
    retry: RetryPolicy | None
    retry_annotation: ast.Annotation | None

    module_path: tuple[str, ...] = ()
    # a method of an object type: the type its `self` is (SELF in PL/SQL)
    self_type: ObjectType | None = None
    # Parameters whose PL/SQL name is not `p_<name>`: an aggregate's `self` (pell.checker.aggregates)
    param_plsql: tuple[tuple[str, str], ...] = ()
    # @parallel (pell.checker.parallel): the clause after the RETURN type, and the cursor
    # parameter it partitions by HASH or RANGE, which takes a strongly typed REF CURSOR
    parallel_clause: str = ""
    strong_cursor: str = ""

    @property
    def pipelined(self) -> bool:
        return any(a.name == "pipelined" for a in self.decl.annotations)

    @property
    def is_function(self) -> bool:
        return not isinstance(self.returns, UnitType)


@record
class ObjectInfo:
    """An object type, a sealed type or one of its cases, as the checker declared it."""

    decl: ast.TypeDecl | ast.TypeCase
    type: ObjectType
    fields: dict[str, Type]  # every attribute the constructor takes, inherited ones first
    methods: dict[str, FnInfo]  # its own: declared here, or overriding the sealed type's
    public: bool
    cases: tuple[str, ...] = ()  # a sealed type's
    map_method: str = ""
    # a sealed type without fields of its own: Oracle's object type needs one attribute, so
    # it has the case's name (pell.codegen.objects.CASE_ATTRIBUTE)
    tagged: bool = False


@record
class Symbol:
    """A value a Pell name refers to, with the PL/SQL name it has in the output."""

    name: str
    plsql: str
    type: Type
    kind: Literal["local", "param", "loop", "constant"]
    mutable: bool
    span: ast.Span


@record
class ListCopy:
    """A list crossing into or out of another module's package, copied element by element by a
    function of the caller's package (pell.checker.list_crossings, pell.codegen.list_copies)."""

    function: str  # `pell_to_text_utils_t_text_list`
    source: str  # the list type of the value: `t_text_list`
    target: str  # the list type it is copied into: `text_utils.t_text_list`
    element: str  # the element type, as Pell writes it, for the comment


@record(frozen=False)
class FnAnalysis:
    """Per-fn facts, keyed by the id() of the AST node they are about."""

    locals: list[Symbol] = field(default_factory=list)  # to declare, in order
    bindings: dict[int, Symbol] = field(default_factory=dict)  # Let and For nodes
    names: dict[int, Symbol] = field(default_factory=dict)  # Name nodes
    types: dict[int, Type] = field(default_factory=dict)  # expressions
    binds: dict[int, list[tuple[Bind, str]]] = field(default_factory=dict)  # SqlBlock -> rewrites
    # `.one()?` that maps NO_DATA_FOUND to the fn's *NotFound error: Propagate node ->
    # (error name, each field with the PL/SQL value it is filled from, or None for null)
    not_found: dict[int, tuple[str, tuple[tuple[str, str | None], ...]]] = field(
        default_factory=dict
    )
    falls_through: bool = True  # the body can reach its end without returning
    callees: dict[int, str] = field(default_factory=dict)  # Call -> another package's fn
    # a list passed to another package's fn: argument Expr -> its copy into the callee's type
    list_arguments: dict[int, ListCopy] = field(default_factory=dict)
    # a list another package's fn returns: Call -> its copy into the caller's own type
    list_results: dict[int, ListCopy] = field(default_factory=dict)
    builtins: dict[int, str] = field(default_factory=dict)  # Call or Name -> Oracle's fn (UPPER)
    regex_calls: dict[int, str] = field(default_factory=dict)  # Call -> its `re::` fn's name
    list_indexes: dict[int, ast.MethodCall] = field(default_factory=dict)  # `xs(1)` Call -> `xs.at(1)`
    keyword_names: dict[int, str] = field(default_factory=dict)  # KeywordArg -> `p_limit`
    sequences: dict[int, str] = field(default_factory=dict)  # FieldAccess -> `ids.NEXTVAL`
    # MethodCall -> `rowcount` or `total`: `bulk.rowcount(i)`, `bulk.total()` after a `forall`
    bulk_counts: dict[int, str] = field(default_factory=dict)
    dynamic_sql: dict[int, DynamicSql] = field(default_factory=dict)  # `exec_dyn` Call -> it
    captures: dict[int, Capture] = field(default_factory=dict)  # `re::capture::<T>` Call -> it
    # MethodCalls `ut::expect(actual).matcher(args)` (pell.checker.ut)
    ut_expectations: set[int] = field(default_factory=set)
    # Match -> the PL/SQL value its arms test, and whether a local must be given it first
    matches: dict[int, tuple[str, bool]] = field(default_factory=dict)
    # Pattern of a statement `match` -> the locals it binds, each with the value it is given
    pattern_values: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    # `json::` Call or json method MethodCall -> what it lowers to (pell.checker.json)
    json_calls: dict[int, JsonCall] = field(default_factory=dict)
    # `json::get_*` Calls whose value goes where an optional type is written: nothing selected
    # is None there
    json_optional: set[int] = field(default_factory=set)
    # `pivot::sum_dyn(...)` Call -> its lowering (pell.checker.pivot)
    pivots: dict[int, DynamicPivot] = field(default_factory=dict)
    fetched_rows: list[Type] = field(default_factory=list)  # row types `for` FETCHes a cursor of
    handed_cursors: set[str] = field(default_factory=set)  # local cursors passed to a call


@record
class CheckedModule:
    module: ast.Module
    records: dict[str, RecordInfo]
    errors: dict[str, ast.ErrorDecl]
    error_fields: dict[str, dict[str, Type]]
    fns: dict[str, FnInfo]
    analyses: dict[str, FnAnalysis]
    imports: Imports
    enums: dict[str, dict[str, str]]  # enum -> variant -> its text
    retry_facts: ModuleFacts | None = None  # what its fns commit and call, for build-wide checks
    objects: dict[str, ObjectInfo] = field(default_factory=dict)  # types, sealed types, cases
    method_analyses: dict[str, FnAnalysis] = field(default_factory=dict)  # `Type.method` -> it

    def method(self, object_type: ObjectType, name: str) -> FnInfo | None:
        """`name` of the type or, for a case, of its sealed type."""
        info = self.objects.get(object_type.name)
        while info is not None:
            if name in info.methods:
                return info.methods[name]
            info = self.objects.get(info.type.parent) if info.type.parent else None
        return None
    # `aggregate`s (pell.checker.aggregates): schema-level types and functions, no package fns
    aggregates: dict[str, AggregateInfo] = field(default_factory=dict)

    def error_info(self, name: str) -> tuple[tuple[str, ...], str, dict[str, Type]]:
        """The module that declares error `name` (`E` or `alias::E`), its own name for it,
        and its fields seen from here."""
        alias, _, error = name.rpartition("::")
        if not alias:
            return self.module.path, name, self.error_fields[name]
        foreign = self.imports.find(alias)
        assert foreign is not None, f"error of unknown module {alias}"
        fields = foreign.declared().error_fields[error]
        return foreign.module.path, error, {f: foreign.localise(ft) for f, ft in fields.items()}

    def record_info(self, record: RecordType) -> RecordInfo:
        """A record of this module, or of one it imports (its fields seen from here)."""
        if record.module:
            return self.imports.record_info(record)
        return self.records[record.name]
