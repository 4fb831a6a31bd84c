"""`@stub` modules: the signatures of an Oracle package, and what its procedures do to the
caller's transaction.

A stub declares records and bodiless `pub fn`s, with two marks: `@commits("why")` on a
procedure that commits the caller's transaction, and `@irreversible("why")` on one (or, before
`module`, on every one) whose effect a rollback cannot undo and a retry would repeat. A
project's own stubs may carry both (`stub_facts`); the stubs pellc ships in `pell/stubs/`
(docs/stubs.md) carry no `@commits`: which Oracle procedures commit is one table,
`retry_facts.COMMITTING_CALLS`, read for Pell calls and PL/SQL blocks alike.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from pell import ast
from pell.diagnostics import Diagnostic

if TYPE_CHECKING:
    from pell.checker.retry_facts import ModuleFacts

MODULE_ANNOTATIONS = ("stub", "irreversible", "package", "suite")  # @suite: pell.checker.ut
STUB_FN_ANNOTATIONS = ("commits", "irreversible")


def _reason(annotation: ast.Annotation, diagnostics: list[Diagnostic]) -> str | None:
    """The one text argument of a mark: why the procedure commits or cannot be undone."""
    args = annotation.args
    if len(args) == 1 and args[0].name is None and isinstance(args[0].value, ast.StringLit):
        parts = args[0].value.parts
        if all(isinstance(p, str) for p in parts):
            return "".join(str(p) for p in parts)
    diagnostics.append(
        Diagnostic.of(
            "annotation-argument",
            f'@{annotation.name} takes one text: why, e.g. @{annotation.name}("runs DDL")',
            annotation.span,
        )
    )
    return None


def check_module_annotations(module: ast.Module, diagnostics: list[Diagnostic]) -> None:
    """`@stub`, and `@irreversible("why")` on a stub."""
    for annotation in module.annotations:
        if annotation.name not in MODULE_ANNOTATIONS:
            diagnostics.append(
                Diagnostic.of(
                    "unknown-annotation",
                    f"unknown annotation @{annotation.name} on a module; it is ignored",
                    annotation.span,
                    hints=(
                        'annotations here are: @package("name"), @stub, @irreversible (stubs), '
                        '@suite("what it tests")',
                    ),
                )
            )
        elif annotation.name == "stub" and annotation.args:
            diagnostics.append(
                Diagnostic.of("annotation-argument", "@stub takes no arguments", annotation.span)
            )
        elif annotation.name == "irreversible" and not module.is_stub:
            diagnostics.append(
                Diagnostic.of(
                    "annotation-misuse",
                    "@irreversible marks an Oracle package's stub; pellc knows what Pell code does",
                    annotation.span,
                )
            )
        elif annotation.name == "irreversible":
            _reason(annotation, diagnostics)
        elif annotation.name == "package":
            _check_package_name(module, annotation, diagnostics)


def _check_package_name(
    module: ast.Module, annotation: ast.Annotation, diagnostics: list[Diagnostic]
) -> None:
    """`@package("name")`: the PL/SQL package a module lowers to, a plain Oracle name."""
    from pell.naming import ORACLE_RESERVED

    name = module.chosen_package
    problem = None
    if module.is_stub:
        problem = "a stub's package is the Oracle package of its module name; @package does not apply"
    elif name is None:
        problem = '@package takes one text, the package name: @package("orders_api")'
    elif not re.fullmatch(r"[A-Za-z][A-Za-z0-9_$#]*", name):
        problem = (
            f"`{name}` is not a plain Oracle name (a letter, then letters, digits, `_`, `$`, `#`)"
        )
    elif name.lower() in ORACLE_RESERVED:
        problem = f"`{name}` is an Oracle reserved word"
    if problem is not None:
        diagnostics.append(Diagnostic.of("annotation-argument", problem, annotation.span))


def check_stub_items(module: ast.Module, diagnostics: list[Diagnostic]) -> None:
    """A stub holds records and bodiless fns; other modules hold no bodiless fn."""
    for item in module.items:
        if not module.is_stub:
            if isinstance(item, ast.Fn) and not item.has_body:
                diagnostics.append(
                    Diagnostic.of(
                        "missing-body",
                        f"fn `{item.name}` has no body; only a `@stub` module declares "
                        "signatures alone",
                        item.name_span,
                        hints=("give it a body `{ ... }`, or put `@stub` before `module`",),
                    )
                )
            continue
        if isinstance(item, ast.Fn):
            # `{ }` is accepted for `;`, as the public Pell stubs write it
            if item.body.stmts or item.finally_body is not None:
                folder = module.stub_folder and module.annotation("stub") is None
                diagnostics.append(
                    Diagnostic.of(
                        "stub",
                        f"fn `{item.name}` of a stub has a body; a stub declares what Oracle "
                        "provides: end the signature with `;`",
                        item.name_span,
                        hints=(
                            ("its file is in a `stubs` folder, which makes its module a stub: "
                             "move a module with code out of it",)
                            if folder
                            else ()
                        ),
                    )
                )
            for annotation in item.annotations:
                if annotation.name in STUB_FN_ANNOTATIONS:
                    _reason(annotation, diagnostics)
                else:
                    diagnostics.append(
                        Diagnostic.of(
                            "stub",
                            f"@{annotation.name} on a stub fn; a stub's fns take "
                            "@commits(\"why\") and @irreversible(\"why\")",
                            annotation.span,
                        )
                    )
        elif not isinstance(item, ast.Record):
            kind = {
                ast.ErrorDecl: "an error",
                ast.TypeDecl: "an object type",
                ast.Aggregate: "an aggregate",
            }.get(type(item), "an enum"
            )
            diagnostics.append(
                Diagnostic.of(
                    "stub",
                    f"a stub declares records and fns; `{item.name}` is {kind}",
                    item.span,
                )
            )


def marks(module: ast.Module, fn_name: str) -> tuple[str | None, str | None]:
    """(why it commits, why a rollback cannot undo it) for a fn of a stub; None: it does not."""
    fn = next(
        (i for i in module.items if isinstance(i, ast.Fn) and i.name.lower() == fn_name.lower()),
        None,
    )
    if fn is None:
        return None, None
    found: dict[str, str | None] = {"commits": None, "irreversible": None}
    for annotation in (*module.annotations, *fn.annotations):
        if annotation.name in found:
            found[annotation.name] = _reason(annotation, [])
    return found["commits"], found["irreversible"]


def stub_facts(module: ast.Module) -> ModuleFacts:
    """A stub's retry facts: each fn marked `@commits("why")` commits, as a fn whose body holds
    a COMMIT does, so the checks find it through calls from any module of a project. (pellc's
    own stubs carry no `@commits`: COMMITTING_CALLS holds their procedures.)"""
    from pell.checker.retry_facts import Effect, FnFacts, ModuleFacts

    fns: dict[str, FnFacts] = {}
    for item in module.items:
        if not isinstance(item, ast.Fn):
            continue
        effects = tuple(
            Effect("commit", annotation.span, _marked(annotation))
            for annotation in item.annotations
            if annotation.name == "commits"
        )
        known = fns.get(item.name)
        if known is None or (effects and not known.effects):  # an overload that commits
            fns[item.name] = FnFacts(item.name, item.name_span, None, None, False, effects)
    return ModuleFacts(module.path, fns, stub=True)


def _marked(annotation: ast.Annotation) -> str:
    """How messages name a `@commits` mark (one without its text, an error of the stub, still
    commits)."""
    why = _reason(annotation, [])
    return "marked @commits" if why is None else f'marked @commits("{why}")'


@functools.cache
def shipped_stub(package: str) -> bool:
    """Does pellc ship a stub of this Oracle package?"""
    from pell.project import shipped_stubs

    return (package.lower(),) in shipped_stubs()
