"""Annotation rules: which annotations exist, what they take, and what @retry refuses to meet."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pell import ast
from pell.diagnostics import Diagnostic, Note, did_you_mean
from pell.oracle_errors import ERROR_CLASSES
from pell.retry import RetryPolicy, policy_from_annotation

if TYPE_CHECKING:
    from pell.checker.imports import Imports

FN_ANNOTATIONS = ("retry", "autonomous", "pipelined", "deterministic", "result_cache", "udf")
ERROR_ANNOTATIONS = ("propagate", "skip", "panic")

# @retry with one of these cannot be made safe; the reason completes "@retry cannot be used with ...".
_RETRY_CONFLICTS = {
    "autonomous": "an autonomous transaction commits inside the loop, so the savepoint "
    "cannot undo its work",
    "pipelined": "rows already piped to the caller cannot be taken back by a retry",
}


# Annotations of the wider Pell language that pellc does not take yet.
_OUT_OF_SCOPE = ("parallel",)

# Clauses Oracle allows on functions only.
_FUNCTION_ONLY = ("deterministic", "result_cache", "udf")


def _no_arguments(annotation: ast.Annotation, diagnostics: list[Diagnostic]) -> None:
    if annotation.args:
        diagnostics.append(
            Diagnostic.of(
                "annotation-argument",
                f"@{annotation.name} takes no arguments",
                annotation.args[0].span,
            )
        )


def _unknown(annotation: ast.Annotation, known: tuple[str, ...], what: str) -> Diagnostic:
    return Diagnostic.of(
        "unknown-annotation",
        f"unknown annotation @{annotation.name} on {what}; it is ignored",
        annotation.span,
        hints=(
            f"annotations here are: {', '.join('@' + k for k in known)}"
            if known
            else f"{what} takes no annotations",
        ),
    )


def check_fn_annotations(
    fn: ast.Fn, diagnostics: list[Diagnostic]
) -> tuple[RetryPolicy | None, ast.Annotation | None]:
    """Check a fn's annotations; return its retry policy and the @retry it came from."""
    retries = [a for a in fn.annotations if a.name == "retry"]
    by_name = {a.name: a for a in fn.annotations}
    for annotation in fn.annotations:
        if annotation.name in _OUT_OF_SCOPE:
            diagnostics.append(
                Diagnostic.of(
                    "unsupported", f"@{annotation.name} is not supported yet", annotation.span
                )
            )
        elif annotation.name not in FN_ANNOTATIONS:
            diagnostics.append(_unknown(annotation, FN_ANNOTATIONS, "a fn"))
        elif annotation.name != "retry":
            _no_arguments(annotation, diagnostics)
            if annotation.name in _FUNCTION_ONLY and fn.return_type is None:
                diagnostics.append(
                    Diagnostic.of(
                        "annotation-misuse",
                        f"@{annotation.name} applies to a fn that returns a value; "
                        f"`{fn.name}` returns nothing",
                        annotation.span,
                    )
                )
    if not retries:
        return None, None

    retry = retries[0]
    for extra in retries[1:]:
        diagnostics.append(
            Diagnostic.of(
                "retry-combination",
                f"@retry is given twice on fn `{fn.name}`; one retry loop would run inside "
                "the other",
                extra.span,
                notes=(Note("the first @retry is here", retry.span),),
                hints=("keep one @retry and put every argument in it",),
            )
        )
    if fn.finally_body is not None:
        diagnostics.append(
            Diagnostic.of(
                "retry-combination",
                f"@retry cannot be used on fn `{fn.name}`, which has a `finally` block: "
                "the cleanup would run once per attempt, inside the savepoint",
                retry.span,
                notes=(Note("the `finally` block is here", fn.finally_body.span),),
                hints=(
                    "move the cleanup into a helper fn and call it after the retried fn returns",
                ),
            )
        )
    for name, reason in _RETRY_CONFLICTS.items():
        if name in by_name:
            diagnostics.append(
                Diagnostic.of(
                    "retry-combination",
                    f"@retry cannot be used with @{name} on fn `{fn.name}`: {reason}",
                    retry.span,
                    notes=(Note(f"@{name} is here", by_name[name].span),),
                )
            )
    for name in ("udf", "deterministic", "result_cache"):
        if name in by_name:
            diagnostics.append(
                Diagnostic.of(
                    "retry-callable-from-sql",
                    f"@retry cannot be used with @{name} on fn `{fn.name}`: a fn called from SQL "
                    "cannot roll back to a savepoint or commit (ORA-14552)",
                    retry.span,
                    notes=(Note(f"@{name} is here", by_name[name].span),),
                    hints=("retry in the PL/SQL that runs the SQL, not in the fn SQL calls",),
                )
            )
    policy, retry_diagnostics = policy_from_annotation(retry)
    diagnostics.extend(retry_diagnostics)
    return policy, retry


def check_retry_targets(
    fn: ast.Fn,
    policy: RetryPolicy,
    annotation: ast.Annotation,
    errors: dict[str, ast.ErrorDecl],
    imports: Imports,
    diagnostics: list[Diagnostic],
) -> tuple[str, ...]:
    """`on = [...]` names known error classes, this module's errors or another module's
    (`stock::Busy`, `pub`), never a @panic one. Returns `on` with each other module's error
    written by its module's full path (`shop.stock::Busy`), as lowering needs it."""
    on_arg = next((a for a in annotation.args if a.name == "on"), None)
    if on_arg is None or not isinstance(on_arg.value, ast.ListLit):
        return policy.on
    resolved: dict[str, str] = {}
    for item in on_arg.value.items:
        if not isinstance(item, ast.Name):
            continue
        written = "::".join(item.path)
        if written in ERROR_CLASSES:
            continue
        if len(item.path) == 2:
            alias, name = item.path
            foreign = imports.find(alias)
            found = foreign.item(name) if foreign is not None else None
            decl = found if isinstance(found, ast.ErrorDecl) else None
            if foreign is None or decl is None or not decl.public:
                what = (
                    f"module `{alias}` is not imported"
                    if foreign is None
                    else f"`{alias}` has no error `{name}`"
                    if decl is None
                    else f"error `{name}` of `{alias}` is not `pub`"
                )
                diagnostics.append(
                    Diagnostic.of("retry-argument", f"`{written}` in `on`: {what}", item.span)
                )
                continue
            resolved[written] = f"{foreign.module.dotted_name}::{name}"
        else:
            name = written
            decl = errors.get(name)
            if decl is None:
                known = [*ERROR_CLASSES, *sorted(errors)]
                diagnostics.append(
                    Diagnostic.of(
                        "retry-argument",
                        f"`{name}` in `on` is neither an error class nor an error of this module"
                        f"{did_you_mean(name, known)}",
                        item.span,
                        hints=(
                            f"the classes are {', '.join(ERROR_CLASSES)}; another module's "
                            "error is written `module::Error`",
                        ),
                    )
                )
                continue
        if any(a.name == "panic" for a in decl.annotations):
            diagnostics.append(
                Diagnostic.of(
                    "retry-argument",
                    f"`{written}` is a @panic error: retrying cannot cure it, so it cannot be in `on`",
                    item.span,
                    # another module's declaration is in another file
                    notes=(Note(f"`{name}` is declared here", decl.span),) if written == name else (),
                )
            )
    return tuple(resolved.get(name, name) for name in policy.on)


def check_error_annotations(error: ast.ErrorDecl, diagnostics: list[Diagnostic]) -> None:
    categories = [a for a in error.annotations if a.name in ERROR_ANNOTATIONS]
    for annotation in error.annotations:
        if annotation.name not in ERROR_ANNOTATIONS:
            diagnostics.append(_unknown(annotation, ERROR_ANNOTATIONS, "an error"))
        else:
            _no_arguments(annotation, diagnostics)
    for extra in categories[1:]:
        diagnostics.append(
            Diagnostic.of(
                "annotation-argument",
                f"error `{error.name}` has two categories; give one of @propagate, @skip or @panic",
                extra.span,
                notes=(Note("the first is here", categories[0].span),),
            )
        )


def check_plain_annotations(
    annotations: tuple[ast.Annotation, ...], what: str, diagnostics: list[Diagnostic]
) -> None:
    """Records and enums take no annotations."""
    for annotation in annotations:
        diagnostics.append(_unknown(annotation, (), what))
