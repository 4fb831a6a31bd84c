"""Object types and sealed types -> schema-level Oracle types: CREATE TYPE ... AS OBJECT (or
UNDER the sealed type, for a case) with the attributes and method specs, then CREATE TYPE
BODY with the methods' bodies, lowered as fns' are (`self` is SELF).

Each statement is `CREATE OR REPLACE TYPE name FORCE ...`: FORCE replaces a type that other
types depend on (a sealed type's cases, a type holding it), which Oracle would otherwise refuse
with ORA-02303; a type that a table depends on is still refused (SQL Language Reference,
CREATE TYPE, "FORCE"; Database Error Messages, ORA-02303: "drop all tables depending on the
type and retry with the FORCE option"), so no stored data is touched. docs/language.md,
"Object types", says what `pellc deploy` does.
"""

from __future__ import annotations

from pell import naming
from pell.checker.model import CheckedModule, FnInfo, ObjectInfo
from pell.codegen.subprograms import FnLowerer, subprogram_view
from pell.codegen.types import plsql_type
from pell.plsql import source_marker
from pell.resources import template_environment

# The one attribute of a sealed type with no fields of its own: an object type has at least one
# attribute (PL/SQL Language Reference, "CREATE TYPE Statement"); it holds the case's name.
CASE_ATTRIBUTE = "pell_case"
CASE_ATTRIBUTE_TYPE = "VARCHAR2(128)"

_MODES = {"in": "IN", "out": "OUT", "inout": "IN OUT"}


def method_signature(method: FnInfo, kind: str) -> str:
    """`[kind ]MEMBER FUNCTION name(p_x IN T) RETURN T` (a method without a result is a
    MEMBER PROCEDURE); `kind` is MAP, OVERRIDING, NOT INSTANTIABLE or empty."""
    params = ", ".join(
        f"{naming.param_name(p.decl.name)} {_MODES[p.decl.mode]} {plsql_type(p.type, 'param')}"
        for p in method.params
    )
    head = "MEMBER FUNCTION" if method.is_function else "MEMBER PROCEDURE"
    text = f"{kind + ' ' if kind else ''}{head} {naming.fn_name(method.decl.name)}"
    if params:
        text += f"({params})"
    if method.is_function:
        text += f" RETURN {plsql_type(method.returns, 'param')}"
    return text


def _kind(checked: CheckedModule, info: ObjectInfo, name: str) -> str:
    method = info.methods[name]
    if not method.decl.has_body:
        return "NOT INSTANTIABLE"
    if name == info.map_method:
        return "MAP"
    parent = checked.objects.get(info.type.parent)
    if parent is not None and name in parent.methods:
        return "OVERRIDING"
    return ""


def object_type_statements(checked: CheckedModule, target: str) -> list[str]:
    """Every type's spec (a sealed type before its cases), then the type bodies."""
    specs: list[str] = []
    bodies: list[str] = []
    for name in _creation_order(checked):
        info = checked.objects[name]
        specs.append(_spec(checked, info))
        body = _body(checked, info, target)
        if body:
            bodies.append(body)
    return specs + bodies


def _creation_order(checked: CheckedModule) -> list[str]:
    """Each type after its sealed type and the types its attributes hold, else as declared
    (the checker refuses cycles: pell.checker.objects)."""
    from pell.checker.objects import held_types

    ordered: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in ordered or name in visiting:
            return
        visiting.add(name)
        info = checked.objects[name]
        if info.type.parent in checked.objects:
            visit(info.type.parent)
        for held in held_types(checked.objects, name):
            visit(held)
        ordered.append(name)

    for name in checked.objects:
        visit(name)
    return ordered


def _spec(checked: CheckedModule, info: ObjectInfo) -> str:
    parent = checked.objects.get(info.type.parent)
    own = (
        info.fields
        if parent is None
        else {name: type_ for name, type_ in info.fields.items() if name not in parent.fields}
    )
    spans = {f.name: f.span.start for f in info.decl.fields}
    elements = [
        source_marker(spans.get(name, info.decl.span.start))
        + f"{naming.field_name(name)} {plsql_type(type_, 'field')}"
        for name, type_ in own.items()
    ]
    if info.tagged:
        elements.insert(0, f"{CASE_ATTRIBUTE} {CASE_ATTRIBUTE_TYPE}")
    elements += [
        source_marker(m.decl.name_span.start) + method_signature(m, _kind(checked, info, name))
        for name, m in info.methods.items()
    ]
    head = source_marker(info.decl.span.start)
    head += f"CREATE OR REPLACE TYPE {info.type.plsql} FORCE"
    head += f" UNDER {parent.type.plsql}" if parent is not None else " AS OBJECT"
    listed = "".join(
        f"\n  {element}{',' if i < len(elements) - 1 else ''}" for i, element in enumerate(elements)
    )
    text = f"{head} ({listed}\n)" if elements else head
    if info.cases:  # a sealed type: only its cases have values, and only they derive from it
        text += " NOT FINAL NOT INSTANTIABLE"
    return f"{text};\n/"


def _body(checked: CheckedModule, info: ObjectInfo, target: str) -> str:
    """CREATE TYPE BODY with each method that has a body; empty when none has."""
    template = template_environment().get_template("subprogram.sql.j2")
    methods: list[str] = []
    for name, method in info.methods.items():
        if not method.decl.has_body:
            continue
        analysis = checked.method_analyses[f"{info.type.name}.{name}"]
        subprogram = FnLowerer(checked, method, analysis, target).lower_fn()
        subprogram.signature = method_signature(method, _kind(checked, info, name))
        rendered = template.render(subprogram=subprogram_view(subprogram)).rstrip("\n")
        methods.append("\n".join(f"  {line}" if line else line for line in rendered.split("\n")))
    if not methods:
        return ""
    joined = "\n\n".join(methods)
    marker = source_marker(info.decl.span.start)
    return f"{marker}CREATE OR REPLACE TYPE BODY {info.type.plsql} AS\n{joined}\nEND;\n/"
