"""Aggregates: `pub aggregate total(x: number) -> number { state { acc: number = 0; }
step(v: number) { .. } merge(o: Self) { .. } finish() -> number { .. } }`.

An aggregate is a user-defined aggregate function of SQL: Oracle Database Data Cartridge
Developer's Guide, "Using User-Defined Aggregate Functions" and "User-Defined Aggregate
Functions Interface". Its state is an object type whose methods Oracle calls
(ODCIAggregateInitialize, Iterate, Merge, Terminate); `CREATE FUNCTION ... AGGREGATE USING`
that type makes the function SQL calls. Each part is checked here as a fn body of its own,
with `self` the state (an `inout` parameter where the part changes it) and `Self` its type;
pell.codegen.aggregates lowers them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pell import ast, naming, records
from pell.checker import types as t
from pell.checker.annotations import _unknown
from pell.checker.model import CheckedModule, FnAnalysis, FnInfo, ParamInfo, RecordInfo
from pell.checker.retry_facts import DML, tokens_of
from pell.diagnostics import Diagnostic, Note
from pell.records import record

if TYPE_CHECKING:
    from pell.checker import TypeResolver

SELF_TYPE = "Self"  # the state's type, as an aggregate's parts write it (`merge(o: Self)`)
SELF = "self"  # the state, as its parts write it (`self.acc`)
PARTS = ("step", "merge", "finish")
# The lowering's own part: the state defaults, set in ODCIAggregateInitialize
INITIALIZE = "initialize"
# Oracle's names for the state in each routine (Data Cartridge Developer's Guide, "User-Defined
# Aggregate Functions Interface": `actx IN OUT <impltype>` of the static Initialize, `self` of
# the member functions, whose SELF the body reads).
STATE_PLSQL = {INITIALIZE: "sctx", "step": "SELF", "merge": "SELF", "finish": "SELF"}
ANNOTATIONS = ("parallel",)
# SQL words that change data or end the transaction: none may run in an aggregate
_NOT_IN_QUERIES = DML | {"commit", "rollback", "savepoint", "lock", "set"}


@record
class AggregateInfo:
    """A checked aggregate: its state, its input and result types, and each part (with the
    state defaults as `initialize`) as a fn with its analysis, checked in `view`."""

    decl: ast.Aggregate
    state: dict[str, t.Type]
    input: t.Type  # the first argument's type
    returns: t.Type
    parallel: bool
    impl_type: str  # the object type: `[schema.]<name>_impl`
    function: str  # the aggregate function: `[schema.]<name>`
    parts: dict[str, tuple[FnInfo, FnAnalysis]]
    view: CheckedModule  # the module with `Self`, as the parts were checked in
    # a list field of the state -> its nested table type (a SQL collection type of the schema)
    collections: dict[str, str]
    # with several arguments: the object type that holds them, `[schema.]<name>_args`
    args_type: str = ""
    inputs: tuple[t.Type, ...] = ()  # each argument's type


def collection_name(function: str, field: str) -> str:
    """The nested table type of a list in an aggregate's state: `[schema.]<name>_<field>_list`."""
    return f"{function}_{field.lower()}_list"


def aggregate_names(module: ast.Module, name: str) -> tuple[str, str]:
    """(the aggregate function, its implementation type), schema-qualified as the module's
    package is: schema-level objects (CREATE FUNCTION, CREATE TYPE), SQL calls the function
    by its own name."""
    schema, _ = naming.module_package(module)
    prefix = f"{schema}." if schema else ""
    return f"{prefix}{name.lower()}", f"{prefix}{name.lower()}_impl"


def _sql_scalar(type_: t.Type) -> bool:
    """Can a SQL object attribute, argument or result hold `type_`? A scalar other than
    `bool` (BOOLEAN is a SQL type in 23ai only)."""
    return isinstance(type_, t.Scalar | t.UnknownType) and type_ != t.BOOL


def check_aggregates(
    checked: CheckedModule,
    resolver: TypeResolver,
    diagnostics: list[Diagnostic],
    target: str,
) -> dict[str, AggregateInfo]:
    found: dict[str, AggregateInfo] = {}
    for item in checked.module.items:
        if isinstance(item, ast.Aggregate) and item.name not in found:
            found[item.name] = _check_aggregate(item, checked, resolver, diagnostics, target)
    return found


def _shape(diagnostics: list[Diagnostic], message: str, span: ast.Span, *hints: str) -> None:
    diagnostics.append(Diagnostic.of("aggregate-shape", message, span, hints=hints))


def _check_aggregate(
    agg: ast.Aggregate,
    checked: CheckedModule,
    resolver: TypeResolver,
    diagnostics: list[Diagnostic],
    target: str,
) -> AggregateInfo:
    from pell.checker import TypeResolver
    from pell.checker.bodies import check_fn_body

    start = len(diagnostics)
    function, impl = aggregate_names(checked.module, agg.name)
    if naming.fn_name(agg.name) != agg.name.lower():
        # SQL calls it by this name: it cannot take the prefix a fn's reserved name gets
        diagnostics.append(
            Diagnostic.of(
                "reserved-name",
                f"aggregate `{agg.name}`: Oracle refuses `{agg.name}` as a function's name",
                agg.name_span,
                hints=("choose another name",),
            )
        )
    _, package = naming.module_package(checked.module)
    if agg.name.lower() == package:
        diagnostics.append(
            Diagnostic.of(
                "duplicate-name",
                f"aggregate `{agg.name}` has the name of the module's package `{package}`: "
                "one schema cannot hold both (ORA-00955)",
                agg.name_span,
            )
        )
    parallel = _check_annotations(agg, diagnostics)

    # Oracle PL/SQL Language Reference, "AGGREGATE Clause", Restriction on AGGREGATE USING:
    # "If you specify this clause, then you can specify only one input argument for the
    # function." Several are one object of a type holding them (`args_type`), as public Pell
    # lowers them: SQL passes `f(f_args(a, b))`.
    input_type: t.Type = t.UNKNOWN
    input_types: list[t.Type] = []
    if not agg.params:
        _shape(
            diagnostics,
            f"aggregate `{agg.name}` takes no argument: SQL gives it a value per row",
            agg.name_span,
        )
    for param in agg.params:
        param_type = resolver.resolve(param.type)
        if param.mode != "in" or not _sql_scalar(param_type):
            _shape(
                diagnostics,
                f"aggregate `{agg.name}` takes `{param.name}` from SQL: an `in` scalar other "
                f"than `bool`, not {'`' + param.mode + '` ' if param.mode != 'in' else ''}"
                f"`{param_type}`",
                param.span,
            )
        input_types.append(param_type)
        if param is agg.params[0]:
            input_type = param_type
    returns = resolver.resolve(agg.return_type)
    if not _sql_scalar(returns):
        _shape(
            diagnostics,
            f"aggregate `{agg.name}` returns `{returns}`; SQL takes a scalar other than `bool`",
            agg.return_type.span,
        )

    state: dict[str, t.Type] = {}
    collections: dict[str, str] = {}
    for field in agg.state:
        field_type = resolver.resolve(field.type)
        if field.name.lower() in {name.lower() for name in state}:
            diagnostics.append(
                Diagnostic.of(
                    "duplicate-name",
                    f"in the state of aggregate `{agg.name}`, `{field.name}` is declared twice",
                    field.span,
                )
            )
        elif isinstance(field_type, t.ListType) and _sql_scalar(field_type.element):
            # a nested table type of the schema (pell.codegen.aggregates)
            collections[field.name] = collection_name(function, field.name)
        elif not _sql_scalar(field_type):
            _shape(
                diagnostics,
                f"the state of aggregate `{agg.name}` is an object type's attributes: "
                f"`{field.name}` must be a scalar other than `bool` (or a list of them), not "
                f"`{field_type}`",
                field.type.span,
            )
        state[field.name] = field_type
    if not agg.state:
        _shape(
            diagnostics,
            f"aggregate `{agg.name}` has no state: declare it in `state {{ name: type = "
            "initial; }`",
            agg.name_span,
        )

    # The module as the parts see it: `Self` is the state, an object type of the schema
    self_type = t.RecordType(SELF_TYPE, plsql=impl)
    self_record = ast.Record(
        SELF_TYPE,
        tuple(ast.Field(f.name, f.type, span=f.span) for f in agg.state),
        False,
        (),
        span=agg.span,
    )
    view = records.replace(
        checked, records={**checked.records, SELF_TYPE: RecordInfo(self_record, state)}
    )
    part_resolver = TypeResolver(
        {*resolver.records, SELF_TYPE},
        resolver.errors,
        diagnostics,
        resolver.enums,
        resolver.imports,
    )

    def typed(param: ast.Param) -> ParamInfo:
        param_type = part_resolver.resolve(param.type)
        return ParamInfo(param, self_type if param_type == self_type else param_type)

    seen: dict[str, ast.AggregateMethod] = {}
    for method in agg.methods:
        if method.name not in PARTS:
            _shape(
                diagnostics,
                f"`{method.name}` is no part of an aggregate: it has `step`, `merge` and `finish`",
                method.name_span,
            )
        elif method.name in seen:
            _shape(
                diagnostics,
                f"aggregate `{agg.name}` has two `{method.name}` parts",
                method.name_span,
            )
        else:
            seen[method.name] = method
    for needed in ("step", "finish"):
        if needed not in seen:
            _shape(
                diagnostics,
                f"aggregate `{agg.name}` has no `{needed}`",
                agg.name_span,
                "`step(v: T) { .. }` takes each value; `finish() -> T { return .. }` gives "
                "the result",
            )

    parts: dict[str, tuple[FnInfo, FnAnalysis]] = {}

    def part_fn(
        name: str, params: tuple[ParamInfo, ...], returns: t.Type, body: ast.Block, at: ast.Span
    ) -> FnInfo:
        decl = ast.Fn(
            f"{agg.name}.{name}",
            tuple(p.decl for p in params),
            None,
            body,
            None,
            False,
            (),
            span=body.span,
            name_span=at,
        )
        return FnInfo(
            decl,
            params,
            returns,
            (),
            None,
            None,
            checked.module.path,
            param_plsql=((SELF, STATE_PLSQL[name]),),
        )

    def state_param(mode: str, at: ast.Span) -> ParamInfo:
        written = ast.NamedType(SELF_TYPE, span=at)
        return ParamInfo(ast.Param(SELF, mode, written, span=at), self_type)  # type: ignore[arg-type]

    # The defaults, as statements `self.f = default;` of Initialize (checked as one body)
    defaults = tuple(
        ast.Assign(
            ast.FieldAccess(ast.Name((SELF,), span=f.span), f.name, span=f.span),
            f.default,
            span=f.span,
        )
        for f in agg.state
        if f.default is not None
    )
    init_body = ast.Block(defaults, span=agg.span)
    init = part_fn(
        INITIALIZE, (state_param("inout", agg.name_span),), t.UNIT, init_body, agg.name_span
    )
    parts[INITIALIZE] = (init, check_fn_body(init, view, part_resolver, diagnostics, target))

    step = seen.get("step")
    if step is not None:
        params = tuple(typed(p) for p in step.params)
        given = [p.type for p in params]
        if len(given) != len(input_types) or any(
            wanted != got and not isinstance(wanted, t.UnknownType)
            for wanted, got in zip(input_types, given, strict=False)
        ):
            _shape(
                diagnostics,
                f"`step` takes the values aggregate `{agg.name}` is given: "
                f"`({', '.join(str(x) for x in input_types)})`",
                step.name_span,
            )
        for typed_param in params:
            if typed_param.decl.mode != "in":
                _shape(diagnostics, "`step`'s parameter is `in`", typed_param.decl.span)
        info = part_fn(
            "step",
            (state_param("inout", step.name_span), *params),
            t.UNIT,
            step.body,
            step.name_span,
        )
        parts["step"] = (info, check_fn_body(info, view, part_resolver, diagnostics, target))
        _no_return_type(step, diagnostics)
    merge = seen.get("merge")
    if merge is not None:
        params = tuple(typed(p) for p in merge.params)
        if len(params) != 1 or params[0].type != self_type or params[0].decl.mode != "in":
            _shape(
                diagnostics,
                "`merge` takes the other partial state: one parameter `o: Self`",
                merge.name_span,
            )
        info = part_fn(
            "merge",
            (state_param("inout", merge.name_span), *params),
            t.UNIT,
            merge.body,
            merge.name_span,
        )
        parts["merge"] = (info, check_fn_body(info, view, part_resolver, diagnostics, target))
        _no_return_type(merge, diagnostics)
    finish = seen.get("finish")
    if finish is not None:
        if finish.params:
            _shape(diagnostics, "`finish` takes no parameters", finish.params[0].span)
        finish_returns = (
            part_resolver.resolve(finish.return_type) if finish.return_type is not None else t.UNIT
        )
        if finish_returns != returns and not isinstance(returns, t.UnknownType):
            _shape(
                diagnostics,
                f"`finish` returns the result of aggregate `{agg.name}`: `-> {returns}`",
                finish.return_type.span if finish.return_type is not None else finish.name_span,
            )
        info = part_fn(
            "finish",
            (state_param("in", finish.name_span),),
            finish_returns,
            finish.body,
            finish.name_span,
        )
        parts["finish"] = (info, check_fn_body(info, view, part_resolver, diagnostics, target))

    own_fns = set(checked.fns)
    for name, (info, _) in parts.items():
        _check_part_effects(agg, name, info.decl.body, own_fns, diagnostics)
    found = AggregateInfo(
        agg,
        state,
        input_type,
        returns,
        parallel,
        impl,
        function,
        parts,
        view,
        collections,
        f"{function}_args" if len(agg.params) > 1 else "",
        tuple(input_types),
    )
    if target != "postgres" and not any(d.is_error for d in diagnostics[start:]):
        from pell.codegen.aggregates import package_dependencies

        # the package's private functions (a number's text, `text.split`) and its types (a
        # record, a list) are out of reach of a type's body
        uses = package_dependencies(found, target)
        if uses:
            diagnostics.append(
                Diagnostic.of(
                    "unsupported",
                    f"aggregate `{agg.name}` needs the package's own `{uses[0]}`, which its "
                    "type cannot use: not supported yet",
                    agg.name_span,
                    hints=(
                        "convert with SQL's functions (`to_char(n)`), and keep records and "
                        "lists other than the state's out of the aggregate",
                    ),
                )
            )
    return found


def _no_return_type(method: ast.AggregateMethod, diagnostics: list[Diagnostic]) -> None:
    if method.return_type is not None:
        _shape(
            diagnostics,
            f"`{method.name}` changes the state and returns nothing",
            method.return_type.span,
        )


def _check_annotations(agg: ast.Aggregate, diagnostics: list[Diagnostic]) -> bool:
    """@parallel: PARALLEL_ENABLE, which needs `merge` (Oracle merges the states of the
    parallel servers: Data Cartridge Developer's Guide, "Parallel Evaluation of User-Defined
    Aggregates")."""
    parallel = False
    for annotation in agg.annotations:
        if annotation.name not in ANNOTATIONS:
            diagnostics.append(_unknown(annotation, ANNOTATIONS, "an aggregate"))
            continue
        parallel = True
        if annotation.args:
            diagnostics.append(
                Diagnostic.of(
                    "parallel-misuse",
                    "an aggregate's @parallel takes no arguments: Oracle partitions its rows",
                    annotation.args[0].span,
                )
            )
        if agg.method("merge") is None:
            diagnostics.append(
                Diagnostic.of(
                    "parallel-misuse",
                    f"@parallel on aggregate `{agg.name}`, which has no `merge`: the parallel "
                    "servers' partial states are merged",
                    annotation.span,
                    hints=("add `merge(o: Self) { .. }`, which folds `o` into `self`",),
                )
            )
    return parallel


def _check_part_effects(
    agg: ast.Aggregate,
    part: str,
    body: ast.Block,
    own_fns: set[str],
    diagnostics: list[Diagnostic],
) -> None:
    """An aggregate runs inside a query: its parts change no data and end no transaction
    (ORA-14551, ORA-14552: PL/SQL Language Reference, "Subprogram Side Effects": a function
    called from a query cannot run DML or commit), and they are methods of a schema-level
    type, outside the module's package: they cannot call its fns."""
    from pell.checker.retry_facts import committing_call, ends_transaction

    for node in ast.walk(body):
        if type(node) is ast.SqlBlock:
            tokens = tokens_of(node)
            first = tokens[0].text.lower() if tokens else ""
            if first in ("begin", "declare", "call") or ends_transaction(node):
                # a PL/SQL block or CALL may run DML or commit: pellc does not follow it
                diagnostics.append(
                    Diagnostic.of(
                        "aggregate-dml",
                        f"`{part}` of aggregate `{agg.name}` runs a PL/SQL block or CALL, which "
                        "may change data or end the transaction: an aggregate runs inside a "
                        "query (ORA-14551, ORA-14552)",
                        node.span,
                    )
                )
            elif tokens and first in _NOT_IN_QUERIES:
                start = node.text_start + tokens[0].start
                diagnostics.append(
                    Diagnostic.of(
                        "aggregate-dml",
                        f"`{part}` of aggregate `{agg.name}` runs `{tokens[0].text}`: an "
                        "aggregate runs inside a query, which cannot change data or end the "
                        "transaction (ORA-14551, ORA-14552)",
                        ast.Span(start, start + len(tokens[0].text)),
                    )
                )
        elif isinstance(node, ast.Transaction):
            diagnostics.append(
                Diagnostic.of(
                    "aggregate-dml",
                    f"`{part}` of aggregate `{agg.name}` has a `transaction` block: an "
                    "aggregate runs inside a query, which cannot commit (ORA-14552)",
                    ast.Span(node.span.start, node.span.start + len("transaction")),
                )
            )
        elif isinstance(node, ast.Call) and (why := committing_call(node.callee.path)):
            diagnostics.append(
                Diagnostic.of(
                    "aggregate-dml",
                    f"`{part}` of aggregate `{agg.name}` calls `{node.callee.text}`, which "
                    f"{why}: an aggregate runs inside a query (ORA-14552)",
                    node.callee.span,
                )
            )
        elif (
            isinstance(node, ast.Call)
            and len(node.callee.path) == 1
            and node.callee.path[0] in own_fns
        ):
            diagnostics.append(
                Diagnostic.of(
                    "unsupported",
                    f"a call of this module's fn `{node.callee.path[0]}` from an aggregate is "
                    "not supported yet: the aggregate is a type of its own, outside the package",
                    node.callee.span,
                    notes=(Note(f"in `{part}` of aggregate `{agg.name}`", agg.name_span),),
                )
            )
