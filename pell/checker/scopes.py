"""The scopes of one fn body: which names are visible, what they resolve to, and the state
the body's checks share (diagnostics, the FnAnalysis for codegen, loop and finally context)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pell import ast, naming
from pell.checker import types as t
from pell.checker.model import CheckedModule, FnAnalysis, FnInfo, Symbol
from pell.diagnostics import Diagnostic, Fix, Note, closest_name

if TYPE_CHECKING:
    from pell.checker import TypeResolver


class BodyScopes:
    """One fn body's stack of scopes, and what its checks record; the checkers of SQL,
    expressions and statements build on it in turn."""

    def __init__(
        self,
        fn: FnInfo,
        module: CheckedModule,
        resolver: TypeResolver,
        diagnostics: list[Diagnostic],
        target: str = "23ai",
    ) -> None:
        self.fn = fn
        self.target = target
        self.current_bind_span = ast.NO_SPAN  # the bind being resolved, for its diagnostics
        self.module = module
        self.resolver = resolver
        self.diagnostics = diagnostics
        self.analysis = FnAnalysis()
        self.scopes: list[dict[str, Symbol]] = [{}]
        self.cursor_rows: list[Symbol] = []
        self.read_cursors: set[str] = set()  # the `cursor<T>` parameters a `for` reads
        self.cursor_depths: dict[str, int] = {}  # a `let` cursor -> the loop depth it is opened at
        self.loop_depth = 0
        self.lazy_operands = 0  # inside the right side of `&&`/`||` (pell.checker.matches)
        self.in_finally = False
        self.forall_seen = False  # a `forall` comes before, in the body's text: `bulk` counts it
        self.returned_errors: set[int] = set()
        self.taken = set(naming.RESERVED_LOCALS)
        # Locals without a type whose value is an `int`, or a list literal of them
        # (pell.checker.bodies.check_fn_body): the `let`s given a `number` (a list of them) in
        # an earlier pass, so declared `number` (`list<number>`) in this one;
        # each whole local's symbol (by id) -> its `let`; the `let`s this pass finds given one.
        self.widened: frozenset[int] = frozenset()
        self.whole_locals: dict[int, int] = {}
        self.widen: set[int] = set()

    # -- helpers

    def error(
        self,
        code: str,
        message: str,
        span: ast.Span,
        *hints: str,
        notes: tuple[Note, ...] = (),
        fixes: tuple[Fix, ...] = (),
    ) -> None:
        self.diagnostics.append(
            Diagnostic.of(code, message, span, hints=hints, notes=notes, fixes=fixes)
        )

    def fn_named(self) -> str:
        """The fn as messages name it: a script's statements are its implicit fn's body."""
        return "a script" if self.in_script_body else f"fn `{self.fn.decl.name}`"

    @property
    def in_script_body(self) -> bool:
        """Checking a script's statements (not one of its local fns)?"""
        return self.module.module.script and self.fn.decl.name == ast.SCRIPT_FN

    def diagnostic_count(self) -> int:
        """How many diagnostics so far: unchanged across a check means nothing was reported."""
        return len(self.diagnostics)

    def lookup(self, name: str) -> Symbol | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def visible_names(self) -> list[str]:
        return sorted({name for scope in self.scopes for name in scope})

    def declare_local(
        self, name: str, type_: t.Type, span: ast.Span, kind: str = "local"
    ) -> Symbol:
        plsql = naming.unique(naming.local_name(name), self.taken)
        symbol = Symbol(name, plsql, type_, "loop" if kind == "loop" else "local", True, span)
        self.scopes[-1][name] = symbol
        return symbol

    def resolve_name(self, expr: ast.Name) -> Symbol | None:
        name = expr.path[0]
        symbol = self.lookup(name)
        if symbol is not None:
            self.analysis.names[id(expr)] = symbol
            return symbol
        if name == "self":
            self.error(
                "unknown-name",
                "`self` is the value a method is called on: it is known only inside a method "
                "of a `type`",
                expr.span,
            )
            return None
        # a close name is the fix: `expr` is the one-part name written (a qualified one is
        # resolved elsewhere)
        close = closest_name(name, self.visible_names)
        self.error(
            "unknown-name",
            f"unknown name `{name}`" + (f"; did you mean `{close}`?" if close else ""),
            expr.span,
            fixes=(Fix(expr.span, close),) if close and len(expr.path) == 1 else (),
        )
        return None
