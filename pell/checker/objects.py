"""Object types and sealed types: what a `type` (or a `sealed type` and its `case`s) declares,
and the checks of those declarations. Their methods' bodies are checked as fns' are, with
`self` (pell.checker.bodies), and lowered to schema-level types (pell.codegen.objects).

An object type is a schema-level Oracle type, so what it holds must be SQL's (PL/SQL Language
Reference, "CREATE TYPE Statement": an attribute's type cannot be a PL/SQL-only type such as
BOOLEAN before Oracle 23ai, PLS_INTEGER, or a type declared in a package; an object type has at
least one attribute). pellc's records and lists are package types, so fields are scalars or
other object types, and so are methods' parameters and results.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pell import ast, naming
from pell.checker import types as t
from pell.checker.annotations import check_plain_annotations
from pell.checker.model import CheckedModule, FnAnalysis, FnInfo, ObjectInfo, ParamInfo
from pell.diagnostics import Diagnostic, Note

if TYPE_CHECKING:
    from pell.checker import TypeResolver

SELF = "self"


def object_types(module: ast.Module) -> dict[str, t.ObjectType]:
    """Every type a module's `type`s declare, the cases of sealed types included."""
    found: dict[str, t.ObjectType] = {}
    for item in module.items:
        if not isinstance(item, ast.TypeDecl):
            continue
        found[item.name] = t.ObjectType(item.name, naming.object_type_name(module, item.name))
        for case in item.cases:
            plsql = naming.object_type_name(module, case.name)
            found.setdefault(case.name, t.ObjectType(case.name, plsql, item.name))
    return found


def declare_objects(
    module: ast.Module, resolver: TypeResolver, diagnostics: list[Diagnostic], target: str
) -> dict[str, ObjectInfo]:
    """Each type's attributes and methods (with their signatures), checked."""
    objects: dict[str, ObjectInfo] = {}
    # a type's name is never a fn's (`Cons { }` builds, `cons(...)` calls), but is a record's,
    # an error's or an enum's
    item_names = {
        i.name.lower(): i for i in module.items if not isinstance(i, ast.Fn | ast.Sequence)
    }
    seen_cases: dict[str, ast.TypeCase] = {}
    for item in module.items:
        if not isinstance(item, ast.TypeDecl):
            continue
        check_plain_annotations(item.annotations, "a type", diagnostics)
        type_ = resolver.objects[item.name]
        own = _fields(item.name, item.fields, type_, resolver, diagnostics, target)
        if not item.fields and not item.sealed:
            diagnostics.append(
                Diagnostic.of(
                    "empty-record",
                    f"type `{item.name}` has no fields; an Oracle object type needs at least "
                    "one attribute",
                    item.span,
                )
            )
        if item.sealed and not item.cases:
            diagnostics.append(
                Diagnostic.of(
                    "empty-record",
                    f"sealed type `{item.name}` has no `case`, so it has no values",
                    item.span,
                    hints=("add its cases: `case Name { fields } { methods }`",),
                )
            )
        methods = _methods(module, item, item.methods, type_, own, resolver, diagnostics)
        if item.map_method:
            _check_map(methods[item.map_method], diagnostics)
        for name, method in methods.items():
            if not method.decl.has_body and not item.sealed:
                diagnostics.append(
                    Diagnostic.of(
                        "missing-body",
                        f"method `{item.name}.{name}` has no body; only a sealed type's method "
                        "may go without one, for each case to define",
                        method.decl.name_span,
                    )
                )
        objects[item.name] = ObjectInfo(
            item,
            type_,
            own,
            methods,
            item.public,
            tuple(c.name for c in item.cases),
            item.map_method,
            tagged=item.sealed and not item.fields,
        )
        for case in item.cases:
            repeated = seen_cases.get(case.name.lower())
            seen_cases.setdefault(case.name.lower(), case)
            if repeated is not None:
                diagnostics.append(
                    Diagnostic.of(
                        "duplicate-name",
                        f"case `{case.name}` is declared twice",
                        case.span,
                        notes=(Note("the first is here", repeated.span),),
                    )
                )
                continue
            first = item_names.get(case.name.lower())
            if first is not None or resolver.objects[case.name].parent != item.name:
                diagnostics.append(
                    Diagnostic.of(
                        "duplicate-name",
                        f"case `{case.name}` has the name of another type or item",
                        case.span,
                        notes=(Note("the other is declared here", first.span),) if first else (),
                    )
                )
                continue
            case_type = resolver.objects[case.name]
            fields = dict(own)
            for name, field_type in _fields(
                case.name, case.fields, case_type, resolver, diagnostics, target
            ).items():
                if name in fields:
                    diagnostics.append(
                        Diagnostic.of(
                            "duplicate-name",
                            f"case `{case.name}` repeats the field `{name}` of `{item.name}`",
                            next(f.span for f in case.fields if f.name == name),
                        )
                    )
                fields[name] = field_type
            case_methods = _methods(
                module, item, case.methods, case_type, fields, resolver, diagnostics
            )
            _check_overrides(item, case, methods, case_methods, diagnostics)
            objects[case.name] = ObjectInfo(case, case_type, fields, case_methods, item.public)
    _check_type_cycles(objects, diagnostics)
    return objects


def held_types(objects: dict[str, ObjectInfo], name: str) -> list[str]:
    """The object types `name`'s own attributes hold, but its own sealed type (a case may
    hold one: `Cons { tail: IntList }`, created after it)."""
    info = objects[name]
    held = []
    for field_type in info.fields.values():
        if (
            isinstance(field_type, t.ObjectType)
            and field_type.name in objects
            and field_type.name != info.type.parent
            and field_type.name not in held
        ):
            held.append(field_type.name)
    return held


def _check_type_cycles(objects: dict[str, ObjectInfo], diagnostics: list[Diagnostic]) -> None:
    """A type that holds itself by value, directly or through others (`P { q: Q }` and
    `Q { p: P }`): Oracle creates each object type after the types its attributes hold, so
    such a cycle has no order (it takes a REF, which Pell has not)."""
    reported: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            cycle = [*path[path.index(name) :], name]
            if not reported & set(cycle):
                reported.update(cycle)
                diagnostics.append(
                    Diagnostic.of(
                        "recursive-record",
                        f"type `{name}` holds itself ({' -> '.join(cycle)}); Oracle creates "
                        "each object type after the types its attributes hold",
                        objects[name].decl.span,
                        hints=("hold the other value's key (an id) instead of the value",),
                    )
                )
            return
        for held in held_types(objects, name):
            visit(held, [*path, name])

    for name in objects:
        visit(name, [])


def _fields(
    owner: str,
    declared: tuple[ast.Field, ...],
    type_: t.ObjectType,
    resolver: TypeResolver,
    diagnostics: list[Diagnostic],
    target: str,
) -> dict[str, t.Type]:
    fields: dict[str, t.Type] = {}
    lowered: dict[str, str] = {}
    for field in declared:
        first = lowered.setdefault(field.name.lower(), field.name)
        if first != field.name or field.name in fields:
            diagnostics.append(
                Diagnostic.of(
                    "duplicate-name",
                    f"in type `{owner}`, field `{field.name}` is declared twice",
                    field.span,
                )
            )
        field_type = resolver.resolve(field.type)
        fields[field.name] = field_type
        if field.name.lower() == SELF:
            diagnostics.append(
                Diagnostic.of(
                    "reserved-name",
                    f"a field of type `{owner}` cannot be named `self`: `self` is the value a "
                    "method is called on",
                    field.span,
                )
            )
        if field_type == type_:
            diagnostics.append(
                Diagnostic.of(
                    "recursive-record",
                    f"type `{owner}` contains itself (field `{field.name}`)",
                    field.span,
                    hints=("a sealed type's case may hold the sealed type: `tail: List`",),
                )
            )
        elif field_type == t.BOOL and target != "23ai":
            # BOOLEAN is a SQL type from 23ai on (SQL Language Reference 23ai, "BOOLEAN Data
            # Type"); before, an attribute cannot be one (PL/SQL-only types)
            diagnostics.append(
                Diagnostic.of(
                    "sql-boolean",
                    f"field `{field.name}` of type `{owner}` is a `bool`, which an object type "
                    f"holds from Oracle 23ai on, not on {target}",
                    field.type.span,
                    hints=("hold a `number` (1 or 0) or a `text` ('Y' or 'N')",),
                )
            )
        elif not _sql_type(field_type):
            diagnostics.append(
                Diagnostic.of(
                    "unsupported",
                    f"field `{field.name}` of type `{owner}` is `{field_type}`: an object "
                    "type's fields are scalars or object types (records and lists are "
                    "package types, which a schema-level type cannot hold)",
                    field.type.span,
                )
            )
    return fields


def _sql_type(type_: t.Type) -> bool:
    """Can a schema-level type's attribute, or its method's parameter, be of `type_`?"""
    return isinstance(type_, t.Scalar | t.ObjectType | t.UnknownType)


def _methods(
    module: ast.Module,
    item: ast.TypeDecl,
    declared: tuple[ast.Fn, ...],
    type_: t.ObjectType,
    fields: dict[str, t.Type],
    resolver: TypeResolver,
    diagnostics: list[Diagnostic],
) -> dict[str, FnInfo]:
    methods: dict[str, FnInfo] = {}
    lowered = {name.lower(): name for name in fields}
    for fn in declared:
        first = lowered.setdefault(fn.name.lower(), fn.name)
        if first != fn.name or fn.name in methods:
            what = "field" if first in fields else "method"
            diagnostics.append(
                Diagnostic.of(
                    "duplicate-name",
                    f"in type `{type_.name}`, method `{fn.name}` has the name of a {what}",
                    fn.name_span,
                )
            )
            continue
        params: list[ParamInfo] = []
        for param in fn.params:
            param_type = resolver.resolve(param.type)
            if param.name == SELF:
                diagnostics.append(
                    Diagnostic.of(
                        "duplicate-name",
                        "a method's `self` is implied: no parameter may be named `self`",
                        param.span,
                    )
                )
            elif not _sql_type(param_type):
                diagnostics.append(_not_sql(f"parameter `{param.name}`", param_type, param.type))
            if param.default is not None:
                diagnostics.append(
                    Diagnostic.of(
                        "unsupported",
                        "default values of parameters are declared in stubs only, for now",
                        param.default.span,
                    )
                )
            params.append(ParamInfo(param, param_type))
        returns: t.Type = t.UNIT
        errors: tuple[str, ...] = ()
        if fn.return_type is not None:
            returns, errors = resolver.resolve_result(fn.return_type)
            if not _sql_type(returns):
                diagnostics.append(_not_sql("the result", returns, fn.return_type))
        methods[fn.name] = FnInfo(
            fn, tuple(params), returns, errors, None, None, module.path, self_type=type_
        )
    return methods


def _not_sql(what: str, type_: t.Type, ref: ast.TypeRef) -> Diagnostic:
    return Diagnostic.of(
        "unsupported",
        f"{what} of a method is `{type_}`: a method of a schema-level type takes and returns "
        "scalars or object types (records and lists are package types)",
        ref.span,
    )


def _check_map(method: FnInfo, diagnostics: list[Diagnostic]) -> None:
    """A MAP method takes no parameter and returns a scalar SQL orders: Object-Relational
    Developer's Guide, "Map Methods" (DATE, NUMBER, VARCHAR2, ... the values compared)."""
    returns = method.returns
    if method.params or not isinstance(returns, t.Scalar) or returns in (t.BOOL, t.BIGTEXT):
        diagnostics.append(
            Diagnostic.of(
                "type-mismatch",
                f"`map fn {method.decl.name}` orders the type's values: it takes no parameters "
                "and returns a number, text, date, timestamp or interval",
                method.decl.name_span,
            )
        )


def _check_overrides(
    sealed: ast.TypeDecl,
    case: ast.TypeCase,
    inherited: dict[str, FnInfo],
    own: dict[str, FnInfo],
    diagnostics: list[Diagnostic],
) -> None:
    """Each case defines every bodiless method of its sealed type, with its signature."""
    for name, method in inherited.items():
        override = own.get(name)
        if override is None:
            if not method.decl.has_body:
                diagnostics.append(
                    Diagnostic.of(
                        "missing-body",
                        f"case `{case.name}` of `{sealed.name}` does not define `{name}`",
                        ast.Span(case.span.start, case.span.start + len("case")),
                        notes=(
                            Note(f"`{sealed.name}.{name}` is declared here", method.decl.name_span),
                        ),
                    )
                )
            continue
        theirs = [(p.decl.mode, p.type) for p in method.params]
        ours = [(p.decl.mode, p.type) for p in override.params]
        if theirs != ours or method.returns != override.returns:
            diagnostics.append(
                Diagnostic.of(
                    "type-mismatch",
                    f"`{case.name}.{name}` must take and return what `{sealed.name}.{name}` "
                    "does (it overrides it)",
                    override.decl.name_span,
                    notes=(
                        Note(f"`{sealed.name}.{name}` is declared here", method.decl.name_span),
                    ),
                )
            )


def check_method_bodies(
    checked: CheckedModule, diagnostics: list[Diagnostic], target: str
) -> None:
    """What a method body may not do: the type is created before the package (its body cannot
    call the module's fns, nor use the package's private functions and types), and pellc's
    transaction and retry checks assume that a method call has no effect outside its object
    (docs/language.md, "Object types"): no `sql! { }`, `transaction`, `exec_dyn`, sequence,
    print or call of another package."""
    for info in checked.objects.values():
        for name, method in info.methods.items():
            analysis = checked.method_analyses.get(f"{info.type.name}.{name}")
            if analysis is None:
                continue
            before = len(diagnostics)
            for node in ast.walk(method.decl.body):
                if isinstance(node, ast.SqlBlock | ast.Transaction):
                    what = (
                        "runs no SQL" if isinstance(node, ast.SqlBlock) else "opens no transaction"
                    )
                elif isinstance(node, ast.FieldAccess) and id(node) in analysis.sequences:
                    what = "reads no sequence (a retried caller would not see it)"
                elif (
                    isinstance(node, ast.Call)
                    and id(node) not in analysis.builtins
                    and id(node) not in analysis.regex_calls
                ):
                    what = (
                        "calls no fn, prints nothing (its type is created before the package, "
                        "and a retried caller would not see the output)"
                    )
                else:
                    continue
                diagnostics.append(
                    Diagnostic.of(
                        "unsupported",
                        f"a method {what}: `{info.type.name}.{name}` cannot",
                        node.span,
                        hints=("do it in a fn of the module, which may call the method",),
                    )
                )
            if len(diagnostics) == before and method.decl.has_body and target != "postgres":
                _package_uses(checked, info, name, method, analysis, target, diagnostics)


def _package_uses(
    checked: CheckedModule,
    info: ObjectInfo,
    name: str,
    method: FnInfo,
    analysis: FnAnalysis,
    target: str,
    diagnostics: list[Diagnostic],
) -> None:
    """A method whose lowering needs the package's private functions (a number's text in
    `"{n}"`, `reverse`) or types (a local list or record): out of reach of the type's body,
    which Oracle compiles before the package (PLS-00201)."""
    import re

    from pell import plsql
    from pell.codegen.subprograms import FnLowerer

    lowerer = FnLowerer(checked, method, analysis, target)
    subprogram = lowerer.lower_fn()
    needed = set(lowerer.helpers)
    for declaration in subprogram.declarations:
        if isinstance(declaration, plsql.Variable):
            needed.update(re.findall(r"\bt_\w+", declaration.text))
    if needed:
        diagnostics.append(
            Diagnostic.of(
                "unsupported",
                f"method `{info.type.name}.{name}` needs the package's own `{min(needed)}`, "
                "which the type's body cannot use: not supported yet",
                method.decl.name_span,
                hints=(
                    "convert with SQL's functions (`to_char(n)`), and keep records and lists "
                    "out of methods; or do it in a fn of the module",
                ),
            )
        )
