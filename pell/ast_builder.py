"""Parser callbacks -> pell.ast nodes: one handler per grammar rule, spans from tokens. They run
in pell.lalr's parser loop, or in lark's (pell.syntax gives them pell.lalr Tokens either way)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from pell import ast, records
from pell.diagnostics import Diagnostic
from pell.lalr import FIRST, Rule, Token
from pell.naming import ORACLE_RESERVED

ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "{": "{", "}": "}"}


def as_text(value: ast.Expr) -> ast.Expr:
    """`value` as the text interpolation writes: "{value}", a text literal as it is, and a
    call into a package as it is (its stub types it for put_line's text parameter; a package
    with no stub returns what put_line is given, as before)."""
    if isinstance(value, ast.StringLit):
        return value
    if isinstance(value, ast.Call) and len(value.callee.path) > 1:
        return value
    return ast.StringLit((value,), span=value.span)


def token_span(token: Token) -> ast.Span:
    start = token.start_pos or 0
    return ast.Span(start, token.end_pos if token.end_pos is not None else start)


PRINT_CALL = ("dbms_output", "put_line")
# `p(x)`, `print(x)` and `println(x)` print a line, as public Pell writes it
PRINT_ALIASES = ("p", "print", "println")

# The query methods that end a `|>` pipeline (`... |> collect()`), as on `sql! { }`
_QUERY_METHODS = (("one",), ("first",), ("collect",))


def _sql_argument(arg: ast.Expr) -> str | None:
    """A `|>` stage's extra argument as SQL: a name is a `:name` bind, a literal itself."""
    if isinstance(arg, ast.Name) and len(arg.path) == 1:
        return f":{arg.path[0]}"
    if isinstance(arg, ast.NumberLit):
        return arg.text
    if isinstance(arg, ast.StringLit) and all(isinstance(part, str) for part in arg.parts):
        return "'" + "".join(str(part) for part in arg.parts).replace("'", "''") + "'"
    return None


def _present(children: list[Any]) -> list[Any]:
    """Children without the None placeholders of empty `[...]` groups."""
    return [child for child in children if child is not None]


class _FinallyClause:
    """A `finally { }` block on its way into the Fn node."""

    def __init__(self, block: ast.Block) -> None:
        self.block = block


class _Unsupported:
    """An item of public Pell that pellc does not lower yet (reported when it was built): it is
    left out of the module."""


UNSUPPORTED_ITEM = _Unsupported()


class _Method:
    """A method of an object type on its way into the TypeDecl: `map fn` marks the MAP method."""

    def __init__(self, fn: ast.Fn, map_method: bool) -> None:
        self.fn = fn
        self.map = map_method


class _Guard:
    """A match arm's `if condition`."""

    def __init__(self, condition: ast.Expr) -> None:
        self.condition = condition


class _StatePart:
    """An aggregate's `state { ... }` on its way into the Aggregate node."""

    def __init__(self, fields: tuple[ast.StateField, ...], span: ast.Span) -> None:
        self.fields = fields
        self.span = span


class _ReturnType:
    def __init__(self, type_ref: ast.TypeRef) -> None:
        self.type = type_ref


class _Inlined:
    """What an inlined `_rule` hands its parent: its kept children, and its own span."""

    __slots__ = ("end", "items", "start")

    def __init__(self, items: list[Any], start: int, end: int) -> None:
        self.items = items
        self.start = start
        self.end = end


# On the parser's value stack a parsed value is a Token, an _Inlined, or a (value, start, end) tuple:
# the value a handler built, with the span of everything the rule matched (start -1: empty).
Built = tuple[Any, int, int]


def _bounds(children: list[Any]) -> tuple[int, int]:
    """The span of a rule's children as matched, keywords and punctuation included."""
    start = end = -1
    for child in children:
        if type(child) is tuple:
            start = child[1]
        elif isinstance(child, Token):
            start = child.start_pos or 0
        else:
            start = child.start  # an _Inlined
        if start >= 0:
            break
    for child in reversed(children):
        if type(child) is tuple:
            end = child[2]
        elif isinstance(child, Token):
            end = child.end_pos or 0
        else:
            end = child.end
        if end >= 0:
            break
    return start, end


# Handlers given their children as matched, (value, start, end), rather than bare values.
_WITH_SPANS = frozenset({"binary_chain"})


# A rule's callback: its children as matched -> its value on the stack.
Callback = Callable[[list[Any]], Any]


def _single_index(rule: Rule) -> int | None:
    """The position of the one symbol `rule` keeps when it keeps exactly one and inlines
    nothing, else None."""
    kept = [
        position
        for position, symbol in enumerate(rule.expansion)
        if rule.keep_all_tokens or not (symbol.is_term and symbol.filter_out)
    ]
    if len(kept) != 1 or rule.empty_indices:
        return None
    symbol = rule.expansion[kept[0]]
    if symbol.name.startswith("_") and not symbol.is_term:
        return None
    return kept[0]


TYPED_PIVOT = ("pivot", "sum")
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_RESERVED = ORACLE_RESERVED


def _pivot_alias(value: str) -> str:
    """A PIVOT column's alias for an enum's value: the value as a name, quoted unless SQL reads
    it as one without quotes (a quoted name holds any character but `"`; a longer value is
    no name, and Oracle refuses it)."""
    if _PLAIN.fullmatch(value) and value.lower() not in _RESERVED:
        return value
    return '"' + value.replace('"', "") + '"'


class AstBuilder:
    """Builds pell.ast nodes while the LALR parser reduces, one `<rule>(span, children)`
    method per rule (or per alias); collects the few diagnostics found while building (escapes).

    The callbacks replace lark's tree building: no parse tree is made, no position metadata is
    propagated through it, and nothing recurses. Each callback shapes its children as lark's
    tree builder would (anonymous tokens dropped, `_rule`s inlined, `?rule`s with one child
    passed through, `[x]` placeholders as None), but takes the span from every token matched,
    so a node's span includes its keywords and punctuation.
    """

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.text = ""
        self.diagnostics: list[Diagnostic] = []
        self.tuple_args: list[ast.AnnotationArg] = []  # `order = (a, b)`: for `annotation`
        # the enums of the file so far, each variant's name and text: a typed PIVOT lists the
        # texts, and a record it fills names each field after its column
        self.enums: dict[str, tuple[tuple[str, str], ...]] = {}
        # `p(...)` calls read as prints, each with the callee and arguments as written: undone
        # in a module that declares its own fn of that name (`start`)
        self.alias_calls: list[tuple[ast.Call, ast.Name, tuple[ast.Expr, ...]]] = []
        # warnings for unknown escapes, by the id of the string they are in (not yet in
        # `diagnostics`: a `re::` pattern's, which are regex escapes, are dropped in `start`),
        # and the ids of those patterns (nodes of the tree: no other node takes their id)
        self.escape_warnings: dict[int, list[Diagnostic]] = {}
        self.regex_patterns: set[int] = set()
        # a string with `\{` or `\}` in it, by id, as a `re::` pattern reads it: there they
        # are the regex's escapes of a brace, kept as written (public Pell keeps them)
        self.brace_patterns: dict[int, ast.StringLit] = {}
        self.table = self.callbacks(rules)  # by rule number

    def begin(self, text: str) -> None:
        """Get ready to build the AST of `text` (not a grammar rule: `start` is one)."""
        self.text = text
        self.diagnostics = []
        self.tuple_args = []
        self.enums = {}
        self.alias_calls = []
        self.escape_warnings = {}
        self.regex_patterns = set()
        self.brace_patterns = {}

    def callbacks(self, rules: Sequence[Rule]) -> list[Callback]:
        """One parser callback per grammar rule, from the rules lark analysed."""
        by_origin: dict[str, list[Rule]] = {}
        for rule in rules:
            by_origin.setdefault(rule.origin, []).append(rule)
        # Inlined `_rule`s whose every alternative is one kept symbol hand that symbol's value
        # up as it is, and their parents take it as an ordinary child.
        single = {
            origin
            for origin, alternatives in by_origin.items()
            if origin.startswith("_")
            and all(_single_index(rule) is not None for rule in alternatives)
        }
        return [self._callback(rule, single) for rule in rules]

    def _callback(self, rule: Rule, single: set[str]) -> Callback:
        expansion = rule.expansion
        name = rule.alias or rule.template_source or rule.origin
        index = _single_index(rule)
        # A `?rule` or `_rule` reduced from one kept symbol passes that symbol's value up. Its
        # parent measures it from the tokens it dropped too, as lark's containers do: in
        # `(a).f()` the call starts at the `(`, while `a` keeps its own span.
        passes = rule.origin in single or (rule.expand1 and not rule.alias)
        if index is not None and passes:
            if len(expansion) == 1:
                return FIRST

            def pass_through(children: list[Any]) -> Built:
                start, end = _bounds(children)
                child = children[index]
                return (child[0] if type(child) is tuple else child, start, end)

            return pass_through
        # How many None placeholders go before each symbol, and after the last (lark's rule).
        if rule.empty_indices:
            flags = "".join(str(int(flag)) for flag in rule.empty_indices)
            nones = [len(ones) for ones in flags.split("0")]
        else:
            nones = [0] * (len(expansion) + 1)
        keep: list[tuple[int, bool, int]] = []
        pending = 0
        for position, symbol in enumerate(expansion):
            pending += nones[position]
            if rule.keep_all_tokens or not (symbol.is_term and symbol.filter_out):
                inline = symbol.name.startswith("_") and not symbol.is_term
                keep.append((position, inline and symbol.name not in single, pending))
                pending = 0
        trailing = pending + nones[len(expansion)]
        pass_single = rule.expand1 and not rule.alias
        inlined = name.startswith("_")
        handler = None if inlined else getattr(self, name, None)
        if handler is None and not inlined and not pass_single:
            raise AttributeError(f"AstBuilder has no handler for grammar rule {name!r}")
        no_span = ast.NO_SPAN
        span_type = ast.Span
        with_spans = name in _WITH_SPANS

        def callback(children: list[Any]) -> Any:
            start, end = _bounds(children)
            kept: list[Any] = []
            for position, inline, placeholders in keep:
                if placeholders:
                    kept.extend([None] * placeholders)
                if not inline:
                    kept.append(children[position])
                elif kept:
                    kept.extend(children[position].items)
                else:  # a left-recursive list: take it over instead of copying it each time
                    kept = children[position].items
            if trailing:
                kept.extend([None] * trailing)
            if pass_single and len(kept) == 1:
                child = kept[0]
                return (child[0] if type(child) is tuple else child, start, end)
            if handler is None:
                return _Inlined(kept, start, end)
            if not with_spans:
                kept = [child[0] if type(child) is tuple else child for child in kept]
            span = span_type(start, end) if start >= 0 else no_span
            return (handler(span, kept), start, end)

        return callback

    # -- module and items

    def start(self, span: ast.Span, children: list[Any]) -> ast.Module:
        path, annotations, span = children[0]
        imports = tuple(c for c in children[1:] if isinstance(c, ast.Import))
        items = tuple(c for c in children[1:] if not isinstance(c, ast.Import | _Unsupported))
        self._own_print_aliases(items)
        self._escape_warnings()
        return ast.Module(
            path, imports, items, annotations, span=ast.Span(span.start, len(self.text))
        )

    def _own_print_aliases(self, items: tuple[ast.Item, ...]) -> None:
        """A module's own fn `p` (`print`, `println`) wins over the print alias in that module, as
        a module's fn wins over an Oracle builtin: its `p(...)` calls become calls of it again.
        The calls are built before the module's items are known (the parser works bottom-up), and
        such a fn is rare: the few calls are set back in place rather than the tree rebuilt
        (records are frozen for mypy only, pell.records)."""
        own = {i.name for i in items if isinstance(i, ast.Fn) and i.name in PRINT_ALIASES}
        for call, callee, args in self.alias_calls:
            if callee.path[0] in own:
                setattr(call, "callee", callee)  # noqa: B010 (a frozen record, on purpose)
                setattr(call, "args", args)  # noqa: B010

    def _escape_warnings(self) -> None:
        """The unknown-escape warnings, except in the patterns of `re::` fns: there `\\d` is
        the regex escape it was written for."""
        for string, warnings in self.escape_warnings.items():
            if string not in self.regex_patterns:
                self.diagnostics += warnings

    def script(self, span: ast.Span, children: list[Any]) -> ast.Module:
        """A file with no `module` line: its statements become the body of one implicit
        procedure (ast.SCRIPT_FN), checked and lowered as any fn's, printed as an anonymous
        block; its fns and records are the block's local subprograms and types."""
        imports = tuple(c for c in children if isinstance(c, ast.Import))
        items = tuple(c for c in children if isinstance(c, ast.Fn | ast.Record))
        stmts = tuple(
            c for c in children if not isinstance(c, ast.Import | ast.Fn | ast.Record | _Unsupported)
        )
        self._own_print_aliases(items)
        self._escape_warnings()
        whole = ast.Span(span.start, len(self.text))
        body = ast.Block(stmts, span=whole)
        name_span = ast.Span(span.start, span.start)
        main = ast.Fn(ast.SCRIPT_FN, (), None, body, None, False, (), span=whole, name_span=name_span)
        return ast.Module(("script",), imports, (main, *items), (), span=whole, script=True)

    def script_item(self, span: ast.Span, children: list[Any]) -> ast.Fn | ast.Record | _Unsupported:
        item = self.item(span, children)
        if isinstance(item, ast.Fn | ast.Record):
            return item  # a local subprogram or type of the script's block (print_script)
        if not isinstance(item, _Unsupported):
            # an error needs pell_runtime's exception, an enum and a seq a package: a script
            # declares none
            self.unsupported(
                "an error, enum or seq in a script (a file with no `module` line) is not "
                "supported yet: declare it in a module and `import` that module",
                ast.Span(span.start, span.start + len(self.text[span.start :].split(None, 1)[0])),
            )
        return UNSUPPORTED_ITEM

    def module_decl(
        self, span: ast.Span, children: list[Any]
    ) -> tuple[tuple[str, ...], tuple[ast.Annotation, ...], ast.Span]:
        annotations = tuple(c for c in children if isinstance(c, ast.Annotation))
        return children[-1], annotations, span

    def module_path(self, span: ast.Span, children: list[Token]) -> tuple[str, ...]:
        return tuple(str(t) for t in children)

    def import_decl(self, span: ast.Span, children: list[Token]) -> ast.Import:
        return ast.Import(tuple(str(t) for t in children), span=span)

    def item(self, span: ast.Span, children: list[Any]) -> ast.Item | _Unsupported:
        annotations = tuple(c for c in children if isinstance(c, ast.Annotation))
        public = any(isinstance(c, Token) and c.type == "PUB" for c in children)
        body = children[-1]
        if isinstance(body, _Unsupported):
            return body
        if isinstance(body, ast.Fn):
            return ast.Fn(
                body.name,
                body.params,
                body.return_type,
                body.body,
                body.finally_body,
                public,
                annotations,
                span=span,
                name_span=body.name_span,
                has_body=body.has_body,
                unsafe=body.unsafe,
            )
        if isinstance(body, ast.Record):
            return ast.Record(body.name, body.fields, public, annotations, span=span)
        if isinstance(body, ast.ErrorDecl):
            return ast.ErrorDecl(body.name, body.fields, public, annotations, span=span)
        if isinstance(body, ast.Sequence):
            return ast.Sequence(body.name, public, annotations, span=span)
        if isinstance(body, ast.TypeDecl | ast.Aggregate):
            return records.replace(body, public=public, annotations=annotations, span=span)
        assert isinstance(body, ast.Enum)
        return ast.Enum(body.name, body.variants, public, annotations, span=span)

    def annotation(self, span: ast.Span, children: list[Any]) -> ast.Annotation:
        args: tuple[ast.AnnotationArg, ...] = children[1] if len(children) > 1 else ()
        tuple_arg = next((a for a in args if any(a is t for t in self.tuple_args)), None)
        # `@parallel(order = (a, b))` lists columns (pell.checker.parallel)
        if tuple_arg is not None and str(children[0]) != "parallel":
            self.unsupported(
                "a tuple `(a, b)` as an annotation argument is not supported yet", tuple_arg.span
            )
        return ast.Annotation(str(children[0]), args, span=span)

    def annotation_args(self, span: ast.Span, children: list[Any]) -> tuple[ast.AnnotationArg, ...]:
        return tuple(_present(children))

    def keyword_arg(self, span: ast.Span, children: list[Any]) -> ast.AnnotationArg:
        return ast.AnnotationArg(str(children[0]), children[1], span=span)

    def positional_arg(self, span: ast.Span, children: list[Any]) -> ast.AnnotationArg:
        return ast.AnnotationArg(None, children[0], span=span)

    # -- public Pell that pellc does not lower yet: reported at its keyword (parse() then gives
    # no module, so nothing is checked or generated around what was left out)

    def unsupported(self, message: str, at: Token | ast.Span) -> None:
        """Report a construct pellc parses but does not lower yet."""
        span = at if isinstance(at, ast.Span) else token_span(at)
        self.diagnostics.append(Diagnostic.of("unsupported", message, span))

    def unsafe_fn_decl(self, span: ast.Span, children: list[Any]) -> ast.Fn:
        fn: ast.Fn = children[1]
        return records.replace(fn, unsafe=True)

    def type_decl(self, span: ast.Span, children: list[Any]) -> ast.TypeDecl:
        sealed = isinstance(children[0], Token) and children[0].type == "SEALED"
        name_token = next(c for c in children if isinstance(c, Token) and c.type == "NAME")
        name = str(name_token)
        members = [c for c in children if not isinstance(c, Token)]
        fields = tuple(c for c in members if isinstance(c, ast.Field))
        methods = tuple(c for c in members if isinstance(c, _Method))
        cases = tuple(c for c in members if isinstance(c, ast.TypeCase))
        if not sealed and cases:
            at = ast.Span(cases[0].span.start, cases[0].span.start + len("case"))
            self.unsupported("`case` variants belong to a `sealed type`", at)
        return ast.TypeDecl(
            name,
            fields,
            tuple(m.fn for m in methods),
            cases,
            sealed,
            False,
            (),
            span=span,
            map_method=next((m.fn.name for m in methods if m.map), ""),
            name_span=token_span(name_token),
        )

    def type_field(self, span: ast.Span, children: list[Any]) -> ast.Field:
        if len(_present(children)) > 2:
            self.unsupported(
                "a default value of an object type's field is not supported yet", children[2].span
            )
        return ast.Field(str(children[0]), children[1], span=span)

    def method_decl(self, span: ast.Span, children: list[Any]) -> _Method:
        names = [c for c in children if isinstance(c, Token) and c.type == "NAME"]
        modifier = str(names[0]) if len(names) > 1 else ""
        if modifier not in ("", "map"):
            self.unsupported(
                f"`{modifier} fn` is not supported yet: a method is `fn` or `map fn`", names[0]
            )
        fn = self.fn_decl(span, children[1:] if modifier else children)
        return _Method(fn, modifier == "map")

    def type_case(self, span: ast.Span, children: list[Any]) -> ast.TypeCase:
        fields = tuple(c for c in children if isinstance(c, ast.Field))
        methods = tuple(c.fn for c in children if isinstance(c, _Method))
        if any(m.map for m in children if isinstance(m, _Method)):
            self.unsupported("a `map fn` belongs to the sealed type, not to a case", span)
        return ast.TypeCase(str(children[0]), fields, methods, span=span)

    def aggregate_decl(self, span: ast.Span, children: list[Any]) -> ast.Aggregate:
        name: Token = children[1]
        params = tuple(c for c in children if isinstance(c, ast.Param))
        return_type = next(c.type for c in children if isinstance(c, _ReturnType))
        states = [c for c in children if isinstance(c, _StatePart)]
        for extra in states[1:]:
            self.diagnostics.append(
                Diagnostic.of(
                    "aggregate-shape",
                    f"aggregate `{name}` has a second `state {{ }}`: give every field in one",
                    extra.span,
                )
            )
        return ast.Aggregate(
            str(name),
            params,
            return_type,
            tuple(f for state in states for f in state.fields),
            tuple(c for c in children if isinstance(c, ast.AggregateMethod)),
            False,
            (),
            span=span,
            name_span=token_span(name),
            state_spans=tuple(state.span for state in states),
        )

    def aggregate_state(self, span: ast.Span, children: list[Any]) -> _StatePart | None:
        word: Token = children[0]
        if str(word) != "state":
            self.diagnostics.append(
                Diagnostic.of(
                    "aggregate-shape",
                    f"`{word} {{ }}` is no part of an aggregate: its fields go in `state {{ }}`",
                    token_span(word),
                )
            )
            return None
        return _StatePart(tuple(c for c in children[1:] if isinstance(c, ast.StateField)), span)

    def aggregate_method(self, span: ast.Span, children: list[Any]) -> ast.AggregateMethod:
        name: Token = children[0]
        return ast.AggregateMethod(
            str(name),
            tuple(c for c in children if isinstance(c, ast.Param)),
            next((c.type for c in children if isinstance(c, _ReturnType)), None),
            next(c for c in children if isinstance(c, ast.Block)),
            span=span,
            name_span=token_span(name),
        )

    def state_field(self, span: ast.Span, children: list[Any]) -> ast.StateField:
        default = children[2] if len(children) > 2 and not isinstance(children[2], Token) else None
        return ast.StateField(str(children[0]), children[1], default, span=span)

    def tuple_arg(self, span: ast.Span, children: list[Any]) -> ast.AnnotationArg:
        # reported by `annotation`, which knows whose argument it is
        items = tuple(children[1:])
        value = ast.ListLit(items, span=ast.Span(items[0].span.start, items[-1].span.end))
        arg = ast.AnnotationArg(str(children[0]), value, span=span)
        self.tuple_args.append(arg)
        return arg

    def match_stmt(self, span: ast.Span, children: list[Any]) -> ast.ExprStmt:
        return ast.ExprStmt(children[0], span=span)

    def match_expr(self, span: ast.Span, children: list[Any]) -> ast.Match:
        arms = tuple(c for c in children[2:] if isinstance(c, ast.MatchArm))
        return ast.Match(children[1], arms, span=span)

    def match_arm(self, span: ast.Span, children: list[Any]) -> ast.MatchArm:
        patterns = tuple(c for c in children if isinstance(c, ast.Pattern))
        guard = next((c.condition for c in children if isinstance(c, _Guard)), None)
        body: ast.Block | ast.Expr = children[-1]  # the guard and patterns come before
        return ast.MatchArm(patterns, guard, body, span=span)

    def match_guard(self, span: ast.Span, children: list[Any]) -> _Guard:
        return _Guard(children[0])

    def number_pattern(self, span: ast.Span, children: list[Token]) -> ast.Pattern:
        return ast.Pattern("value", self.number(span, children), span=span)

    def string_pattern(self, span: ast.Span, children: list[Any]) -> ast.Pattern:
        return ast.Pattern("value", children[0], span=span)

    def true_pattern(self, span: ast.Span, children: list[Any]) -> ast.Pattern:
        return ast.Pattern("value", ast.BoolLit(True, span=span), span=span)

    def false_pattern(self, span: ast.Span, children: list[Any]) -> ast.Pattern:
        return ast.Pattern("value", ast.BoolLit(False, span=span), span=span)

    def none_pattern(self, span: ast.Span, children: list[Any]) -> ast.Pattern:
        return ast.Pattern("none", span=span)

    def name_pattern(self, span: ast.Span, children: list[Any]) -> ast.Pattern:
        path: tuple[str, ...] = children[0]
        if path == ("_",):
            return ast.Pattern("wildcard", span=span)
        if len(path) > 1:  # `Color::Red`: an enum's value
            return ast.Pattern("value", ast.Name(path, span=span), span=span)
        return ast.Pattern("case", case=path[0], span=span)

    def call_pattern(self, span: ast.Span, children: list[Any]) -> ast.Pattern:
        path: tuple[str, ...] = children[0]
        inner = [c for c in _present(children[1:]) if isinstance(c, ast.Pattern)]
        if len(inner) == 1 and inner[0].kind == "case" and not inner[0].bindings:
            # `Circle(c)`: `c` is the value seen as that case (public Pell's form); the field
            # "" stands for the whole value (pell.checker.matches)
            whole = (("", inner[0].case),)
            return ast.Pattern("case", case="::".join(path), bindings=whole, span=span)
        if any(p.kind != "wildcard" for p in inner):
            self.unsupported(
                "a case's fields are bound by name: `Case { field: name }`",
                next(p for p in inner if p.kind != "wildcard").span,
            )
        return ast.Pattern("case", case="::".join(path), span=span)

    def fields_pattern(self, span: ast.Span, children: list[Any]) -> ast.Pattern:
        path: tuple[str, ...] = children[0]
        bindings = tuple(c for c in _present(children[1:]) if isinstance(c, tuple))
        return ast.Pattern("case", case="::".join(path), bindings=bindings, span=span)

    def field_pattern(self, span: ast.Span, children: list[Any]) -> tuple[str, str] | None:
        first = children[0]
        if isinstance(first, Token) and first.type == "RANGE":
            return None  # `..`: the other fields, unbound
        inner = children[1] if len(children) > 1 else None
        if inner is None:
            return (str(first), str(first))  # `Case { head }` binds `head`
        if isinstance(inner, ast.Pattern) and inner.kind == "wildcard":
            return None
        if isinstance(inner, ast.Pattern) and inner.kind == "case" and not inner.bindings:
            return (str(first), inner.case)  # `head: h`: `h` parsed as a bare name
        self.unsupported("a field of a case binds a name (`field: name`) or `_`", span)
        return None

    def some_pattern(self, span: ast.Span, children: list[Any]) -> ast.Pattern:
        inner: ast.Pattern = children[0]
        if inner.kind not in ("wildcard", "case") or inner.bindings:
            self.unsupported("`Some(...)` binds a name or `_`", inner.span)
        return ast.Pattern("some", inner=inner, span=span)

    def ok_pattern(self, span: ast.Span, children: list[Any]) -> ast.Pattern:
        self.unsupported("`Ok(...)` and `Err(...)` patterns are not supported yet", span)
        return ast.Pattern("wildcard", span=span)

    err_pattern = ok_pattern

    def pipeline(self, span: ast.Span, children: list[Any]) -> ast.Expr:
        """`sql! { q } |> f |> g(a) |> collect()`: the query read through @pipelined table fns,
        as SQL writes it: `select * from table(g(cursor(select * from table(f(cursor(q)))), :a))`
        then `.collect()`. The checker, retry facts and codegen see an ordinary query.
        Oracle Database PL/SQL Language Reference 19c, 12.5 "Chaining Pipelined Table
        Functions for Multiple Transformations": one table fn's output is the next one's
        cursor input, each read in a query's TABLE clause."""
        source, *stages = [c for c in children if not isinstance(c, Token)]
        terminator: ast.Call | None = None
        if isinstance(stages[-1], ast.Call) and stages[-1].callee.path in _QUERY_METHODS:
            terminator = stages.pop()
        if not isinstance(source, ast.SqlBlock):
            return self._bad_pipe("a `|>` pipeline starts with a `sql! { }` query", source, span)
        if not stages:
            return self._bad_pipe(
                "pipe the query into a @pipelined fn: `q |> f |> collect()`", span, span
            )
        query = source.text.strip()
        before = after = ""  # the SQL around the query
        calls: list[ast.Call] = []
        for stage in stages:
            if isinstance(stage, ast.Name):
                stage = ast.Call(stage, (), span=stage.span)
            if not isinstance(stage, ast.Call):
                return self._bad_pipe(
                    "a `|>` stage names a @pipelined fn: `|> f` or `|> f(a, b)`", stage, span
                )
            if stage.keywords:
                return self._bad_pipe(
                    "a `|>` stage takes its arguments by position: `|> f(a, b)`",
                    stage.keywords[0],
                    span,
                )
            extra = ""
            for arg in stage.args:
                bind = _sql_argument(arg)
                if bind is None:
                    return self._bad_pipe(
                        "a `|>` stage's other arguments are names or literals, which SQL binds",
                        arg,
                        span,
                    )
                extra += f", {bind}"
            calls.append(stage)
            before = f"select * from table({'.'.join(stage.callee.path)}(cursor({before}"
            after = f"{after}){extra}))"
        # Offsets into the query keep pointing at its source: the added text goes before it.
        query_start = source.text_start + len(source.text) - len(source.text.lstrip())
        block = ast.SqlBlock(
            before + query + after,
            query_start - len(before),
            source.first_column,
            span=span,
            stages=tuple(calls),
        )
        if terminator is None:
            return block
        return ast.MethodCall(
            block,
            terminator.callee.path[-1],
            terminator.args,
            span=span,
            name_span=terminator.callee.span,
        )

    def _bad_pipe(self, message: str, at: ast.Node | ast.Span, span: ast.Span) -> ast.UnitLit:
        self.diagnostics.append(
            Diagnostic.of("syntax", message, at if isinstance(at, ast.Span) else at.span)
        )
        return ast.UnitLit(span=span)

    def jq_block(self, span: ast.Span, children: list[Any]) -> ast.JqBlock:
        opener: Token = children[0]
        text_start = opener.end_pos or 0
        return ast.JqBlock(self.text[text_start : span.end - 1], text_start, span=span)

    def regex(self, span: ast.Span, children: list[Token]) -> ast.RegexLit:
        return ast.RegexLit(str(children[0])[1:-1], span=span)

    def seq_decl(self, span: ast.Span, children: list[Any]) -> ast.Sequence:
        if len(children) > 2:  # `seq a::b::c;`: a sequence name has a schema part at most
            at = ast.Span(children[0].start_pos or 0, children[-1].end_pos or 0)
            self.unsupported("a sequence name is `name` or `schema::name`", at)
        # `seq hr::emp_seq;`, a sequence of another schema: named so, used as `hr::emp_seq`
        return ast.Sequence("::".join(str(c) for c in children), span=span)

    def record_decl(self, span: ast.Span, children: list[Any]) -> ast.Record:
        return ast.Record(str(children[0]), children[1], False, (), span=span)

    def error_decl(self, span: ast.Span, children: list[Any]) -> ast.ErrorDecl:
        fields = children[1] if len(children) > 1 else ()
        return ast.ErrorDecl(str(children[0]), fields, False, (), span=span)

    def field_list(self, span: ast.Span, children: list[Any]) -> tuple[ast.Field, ...]:
        return tuple(_present(children))

    def field(self, span: ast.Span, children: list[Any]) -> ast.Field:
        return ast.Field(str(children[0]), children[1], span=span)

    def enum_decl(self, span: ast.Span, children: list[Any]) -> ast.Enum:
        variants = tuple(_present(children[1:]))
        self.enums[str(children[0])] = tuple(
            (
                v.name,
                "".join(p for p in v.value.parts if isinstance(p, str))
                if isinstance(v.value, ast.StringLit)
                else v.name,
            )
            for v in variants
        )
        return ast.Enum(str(children[0]), variants, False, (), span=span)

    def variant(self, span: ast.Span, children: list[Any]) -> ast.Variant:
        value = children[1] if len(children) > 1 else None
        return ast.Variant(str(children[0]), value, span=span)

    def fn_decl(self, span: ast.Span, children: list[Any]) -> ast.Fn:
        name: Token = children[0]
        params = tuple(c for c in children if isinstance(c, ast.Param))
        return_type = next((c.type for c in children if isinstance(c, _ReturnType)), None)
        body = next((c for c in children if isinstance(c, ast.Block)), None)
        finally_body = next((c.block for c in children if isinstance(c, _FinallyClause)), None)
        return ast.Fn(
            str(name),
            params,
            return_type,
            body or ast.Block((), span=ast.Span(span.end, span.end)),
            finally_body,
            False,
            (),
            span=span,
            name_span=token_span(name),
            has_body=body is not None,
        )

    def return_type(self, span: ast.Span, children: list[Any]) -> _ReturnType:
        return _ReturnType(children[0])

    def finally_clause(self, span: ast.Span, children: list[Any]) -> _FinallyClause:
        # The block's span starts at the `finally` keyword, so messages point at it.
        return _FinallyClause(ast.Block(children[0].stmts, span=span))

    def param(self, span: ast.Span, children: list[Any]) -> ast.Param:
        mode: Any = "in"
        if isinstance(children[0], Token) and children[0].type in ("OUT", "INOUT"):
            mode = str(children[0])
            children = children[1:]
        elif children[0] is None:
            children = children[1:]
        default = children[2] if len(children) > 2 else None
        return ast.Param(str(children[0]), mode, children[1], default, span=span)

    # -- types

    def named_type(self, span: ast.Span, children: list[Any]) -> ast.NamedType:
        name = "::".join(str(c) for c in children if isinstance(c, Token) and c.type == "NAME")
        args: tuple[ast.TypeArg, ...] = ()
        optional = False
        for child in children[1:]:
            if isinstance(child, tuple):
                args = child
            elif isinstance(child, Token) and child.type == "OPTIONAL":
                optional = True
        return ast.NamedType(name, args, optional, span=span)

    def unit_type(self, span: ast.Span, children: list[Any]) -> ast.UnitType:
        return ast.UnitType(span=span)

    def type_args(self, span: ast.Span, children: list[Any]) -> tuple[ast.TypeArg, ...]:
        return tuple(children)

    def type_arg(self, span: ast.Span, children: list[Any]) -> ast.TypeArg:
        return ast.TypeArg(tuple(children), span=span)

    # -- statements

    def block(self, span: ast.Span, children: list[Any]) -> ast.Block:
        return ast.Block(tuple(children), span=span)

    def _binding(self, span: ast.Span, children: list[Any], mutable: bool) -> ast.Let:
        name: Token = children[0]
        type_ref = next(
            (c for c in children[1:] if isinstance(c, ast.NamedType | ast.UnitType)), None
        )
        value = next(
            (
                c
                for c in children[1:]
                if c is not None and not isinstance(c, ast.NamedType | ast.UnitType)
            ),
            None,
        )
        return ast.Let(str(name), type_ref, value, mutable, span=span, name_span=token_span(name))

    def let_stmt(self, span: ast.Span, children: list[Any]) -> ast.Let:
        return self._binding(span, children, mutable=False)

    def var_stmt(self, span: ast.Span, children: list[Any]) -> ast.Let:
        return self._binding(span, children, mutable=True)

    def assign_stmt(self, span: ast.Span, children: list[Any]) -> ast.Assign:
        return ast.Assign(children[0], children[1], span=span)

    def expr_stmt(self, span: ast.Span, children: list[Any]) -> ast.ExprStmt:
        return ast.ExprStmt(children[0], span=span)

    def if_stmt(self, span: ast.Span, children: list[Any]) -> ast.If:
        otherwise = children[2] if len(children) > 2 else None
        return ast.If(children[0], children[1], otherwise, span=span)

    def else_clause(self, span: ast.Span, children: list[Any]) -> ast.Block | ast.If:
        result: ast.Block | ast.If = children[0]
        return result

    def while_stmt(self, span: ast.Span, children: list[Any]) -> ast.While:
        return ast.While(children[0], children[1], span=span)

    def for_stmt(self, span: ast.Span, children: list[Any]) -> ast.For:
        var: Token = children[0]
        return ast.For(str(var), children[1], children[2], span=span, var_span=token_span(var))

    def forall_stmt(self, span: ast.Span, children: list[Any]) -> ast.For:
        var: Token = children[0]
        return ast.For(
            str(var), children[1], children[2], span=span, var_span=token_span(var), bulk=True
        )

    def range(self, span: ast.Span, children: list[Any]) -> ast.Range:
        return ast.Range(children[0], children[2], str(children[1]) == "..=", span=span)

    def break_stmt(self, span: ast.Span, children: list[Any]) -> ast.Break:
        return ast.Break(span=span)

    def continue_stmt(self, span: ast.Span, children: list[Any]) -> ast.Continue:
        return ast.Continue(span=span)

    def return_stmt(self, span: ast.Span, children: list[Any]) -> ast.Return:
        return ast.Return(children[0] if children else None, span=span)

    def transaction_stmt(self, span: ast.Span, children: list[Any]) -> ast.Transaction:
        return ast.Transaction(children[0], span=span)

    def yield_stmt(self, span: ast.Span, children: list[Any]) -> ast.Yield:
        return ast.Yield(children[0], span=span)

    # -- expressions

    def binary_chain(self, span: ast.Span, children: list[Any]) -> ast.Expr:
        # Called with its children as matched (see _WITH_SPANS): operands with their spans.
        return _climb(children[0::2], children[1::2])

    def prefix(self, span: ast.Span, children: list[Any]) -> ast.Unary:
        op: Any = str(children[0])
        return ast.Unary(op, children[1], span=span)

    def field_access(self, span: ast.Span, children: list[Any]) -> ast.FieldAccess:
        return ast.FieldAccess(children[0], str(children[1]), span=span)

    def method_call(self, span: ast.Span, children: list[Any]) -> ast.MethodCall:
        name: Token = children[1]
        return ast.MethodCall(
            children[0], str(name), children[2], span=span, name_span=token_span(name)
        )

    def generic_method_call(self, span: ast.Span, children: list[Any]) -> ast.MethodCall:
        name: Token = children[1]
        return ast.MethodCall(
            children[0],
            str(name),
            children[3],
            children[2],
            span=span,
            name_span=token_span(name),
        )

    def propagate(self, span: ast.Span, children: list[Any]) -> ast.Propagate:
        return ast.Propagate(children[0], span=span)

    def call_args(self, span: ast.Span, children: list[Any]) -> tuple[ast.Expr, ...]:
        return tuple(_present(children))

    def number(self, span: ast.Span, children: list[Token]) -> ast.NumberLit:
        return ast.NumberLit(str(children[0]).replace("_", ""), span=span)

    def raw_string(self, span: ast.Span, children: list[Token]) -> ast.StringLit:
        return ast.StringLit((str(children[0])[1:-1],), span=span)

    def string(self, span: ast.Span, children: list[Any]) -> ast.StringLit:
        warnings: list[Diagnostic] = []
        string = ast.StringLit(self._string_parts(children, warnings), span=span)
        if warnings:
            self.escape_warnings[id(string)] = warnings
        if any(isinstance(c, Token) and ("\\{" in c or "\\}" in c) for c in children[1:-1]):
            pattern = self._string_parts(children, [], keep_braces=True)
            self.brace_patterns[id(string)] = ast.StringLit(pattern, span=span)
        return string

    def _string_parts(
        self, children: list[Any], warnings: list[Diagnostic], keep_braces: bool = False
    ) -> tuple[str | ast.Expr, ...]:
        parts: list[str | ast.Expr] = []
        for child in children[1:-1]:
            if isinstance(child, Token):
                text = self._unescape(child, warnings, keep_braces)
                if parts and isinstance(parts[-1], str):
                    parts[-1] += text
                else:
                    parts.append(text)
            else:
                parts.append(child)
        return tuple(parts)

    def _unescape(self, token: Token, warnings: list[Diagnostic], keep_braces: bool = False) -> str:
        raw = str(token)
        out: list[str] = []
        index = 0
        while index < len(raw):
            char = raw[index]
            if char == "\\":
                escaped = raw[index + 1]
                if keep_braces and escaped in "{}":
                    out.append(raw[index : index + 2])  # a regex's `\{`: a brace, not a quantifier
                elif escaped in ESCAPES:
                    out.append(ESCAPES[escaped])
                else:
                    # kept as written, backslash and all, as public Pell keeps it: what a
                    # `re::` pattern means by `\d`; elsewhere likely a slip, so a warning
                    out.append(raw[index : index + 2])
                    start = (token.start_pos or 0) + index
                    warnings.append(
                        Diagnostic.of(
                            "invalid-escape",
                            f"unknown escape `\\{escaped}` in a string: kept as written, "
                            "backslash and all",
                            ast.Span(start, start + 2),
                            hints=(
                                f'write `\\\\{escaped}` for the backslash, or use a known '
                                'escape: \\n \\t \\r \\" \\\\ \\{ \\}',
                            ),
                        )
                    )
                index += 2
            elif raw.startswith(("{{", "}}"), index):
                out.append(char)
                index += 2
            else:
                out.append(char)
                index += 1
        return "".join(out)

    def true(self, span: ast.Span, children: list[Any]) -> ast.BoolLit:
        return ast.BoolLit(True, span=span)

    def false(self, span: ast.Span, children: list[Any]) -> ast.BoolLit:
        return ast.BoolLit(False, span=span)

    def none(self, span: ast.Span, children: list[Any]) -> ast.NoneLit:
        return ast.NoneLit(span=span)

    def unit(self, span: ast.Span, children: list[Any]) -> ast.UnitLit:
        return ast.UnitLit(span=span)

    def path(self, span: ast.Span, children: list[Token]) -> tuple[str, ...]:
        return tuple(str(t) for t in children)

    def name(self, span: ast.Span, children: list[Any]) -> ast.Name:
        return ast.Name(children[0], span=span)

    def call(self, span: ast.Span, children: list[Any]) -> ast.Call | ast.SqlBlock:
        name_span = ast.Span(span.start, span.start + len("::".join(children[0])))
        path = tuple(children[0])
        if path == TYPED_PIVOT:
            pivot = self.typed_pivot(span, children[1])
            if pivot is not None:
                return pivot
        # `p(...)`, `print(...)` and `println(...)` print: a call of the shipped dbms_output
        # stub, typed and seen by the retry checks as one (unless the module declares a fn of
        # that name: `_own_print_aliases`)
        alias = len(path) == 1 and path[0] in PRINT_ALIASES
        # `std::print(...)` (and `std::p`, `std::println`): public Pell's standard library
        # spelling of the same aliases, whatever the module declares
        std_alias = len(path) == 2 and path[0] == "std" and path[1] in PRINT_ALIASES
        written = ast.Name(path, span=name_span)
        callee = ast.Name(PRINT_CALL, span=name_span) if alias or std_alias else written
        # A positional argument after a keyword one keeps its place in `args`; the checker
        # tells them apart by position.
        args = written_args = tuple(a for a in children[1] if not isinstance(a, ast.KeywordArg))
        keywords = tuple(a for a in children[1] if isinstance(a, ast.KeywordArg))
        if callee.path == PRINT_CALL and len(args) == 1 and not keywords:
            # Any single value prints as interpolation writes it ("{x}"), in a form no session
            # setting changes (pell.codegen.text_forms), on both targets
            args = (as_text(args[0]),)
        if len(path) == 2 and path[0] == "re" and len(args) > 1:
            # a `re::` fn's pattern, as public Pell writes it: `"\\d+"` (pell.checker.regex)
            self.regex_patterns.add(id(args[1]))
            pattern = self.brace_patterns.get(id(args[1]))
            if pattern is not None:  # `\{` and `\}` kept: the regex's escapes of a brace
                args = (args[0], pattern, *args[2:])
                self.regex_patterns.add(id(pattern))
        call = ast.Call(callee, args, keywords, span=span)
        if alias:
            self.alias_calls.append((call, written, written_args))
        return call

    def generic_call(self, span: ast.Span, children: list[Any]) -> ast.Call | ast.SqlBlock:
        """`path::<T, U>(args)`: a call with type arguments (`re::capture::<T>(text, /re/)`)."""
        type_args = tuple(c for c in children[1:-1] if isinstance(c, ast.TypeArg))
        call = self.call(span, [children[0], children[-1]])
        if isinstance(call, ast.SqlBlock):  # `pivot::sum(...)`, which takes no type argument
            return call
        return records.replace(call, type_args=type_args)

    def typed_pivot(self, span: ast.Span, arguments: list[Any]) -> ast.SqlBlock | None:
        """`pivot::sum(source = sql! { q }, rows = r, col = c, over = E, value = v)`, with E an
        enum declared above it in the file: Oracle's PIVOT over E's values, a query like any
        `sql! { }` (its terminator follows), as SQL writes it:
        `select r, a, ... from (select r, c, v from (q)) pivot (sum(v) for c in ('A' as a, ...))`
        (SQL Language Reference, SELECT, pivot_clause: the IN list's values are constants,
        each column named by its alias). None when it is not so written: the checker says
        what is wrong."""
        given = {a.name: a.value for a in arguments if isinstance(a, ast.KeywordArg)}
        source = given.get("source")
        if len(given) != len(arguments) or set(given) != {"source", "rows", "col", "over", "value"}:
            return None
        names = [given[role] for role in ("rows", "col", "value", "over")]
        if not isinstance(source, ast.SqlBlock) or source.stages:
            return None
        if not all(isinstance(n, ast.Name) and len(n.path) == 1 for n in names):
            return None
        rows, col, value, over = (n.path[0] for n in names if isinstance(n, ast.Name))
        variants = self.enums.get(over)
        if not variants or any(c.lower() in _RESERVED for c in (rows, col, value)):
            return None
        values = [text for _, text in variants]
        aliases = [_pivot_alias(v) for v in values]
        # the field each column fills, by position: named as the column, or, for a quoted
        # alias (no field's name), as the variant
        fields = [rows.lower()] + [
            name.lower() if alias.startswith('"') else alias.lower()
            for (name, _), alias in zip(variants, aliases, strict=True)
        ]
        listed = ", ".join(
            "'" + v.replace("'", "''") + "' as " + alias for v, alias in zip(values, aliases, strict=True)
        )
        columns = ", ".join([rows, *aliases])
        before = f"select {columns} from (select {rows}, {col}, {value} from ("
        after = f")) pivot (sum({value}) for {col} in ({listed}))"
        query = source.text.strip()
        # Offsets into the query keep pointing at its source: the added text goes before it.
        query_start = source.text_start + len(source.text) - len(source.text.lstrip())
        return ast.SqlBlock(
            before + query + after,
            query_start - len(before),
            source.first_column,
            span=span,
            pivot=tuple(fields),
        )

    def fn_args(self, span: ast.Span, children: list[Any]) -> list[Any]:
        return _present(children)

    def keyword_value(self, span: ast.Span, children: list[Any]) -> ast.KeywordArg:
        name: Token = children[0]
        return ast.KeywordArg(str(name), children[1], span=span, name_span=token_span(name))

    def ok(self, span: ast.Span, children: list[Any]) -> ast.Wrap:
        return ast.Wrap("Ok", children[0] if children else None, span=span)

    def err(self, span: ast.Span, children: list[Any]) -> ast.Wrap:
        return ast.Wrap("Err", children[0], span=span)

    def some(self, span: ast.Span, children: list[Any]) -> ast.Wrap:
        return ast.Wrap("Some", children[0], span=span)

    def list_literal(self, span: ast.Span, children: list[Any]) -> ast.ListLit:
        return ast.ListLit(children[0], span=span)

    def record_literal(self, span: ast.Span, children: list[Any]) -> ast.RecordLit:
        fields = tuple(_present(children[1:]))
        return ast.RecordLit("::".join(children[0]), fields, span=span)

    def field_init(self, span: ast.Span, children: list[Any]) -> ast.FieldInit:
        name: Token = children[0]
        value = children[1] if len(children) > 1 and children[1] is not None else None
        if value is None:
            value = ast.Name((str(name),), span=token_span(name))
        return ast.FieldInit(str(name), value, span=span)

    def sql_block(self, span: ast.Span, children: list[Any]) -> ast.SqlBlock:
        opener: Token = children[0]
        text_start = opener.end_pos or 0
        text = self.text[text_start : span.end - 1]
        first = text_start + len(text) - len(text.lstrip())
        first_column = first - (self.text.rfind("\n", 0, first) + 1)
        return ast.SqlBlock(text, text_start, first_column, span=span)


def _climb(operands: list[Built], operators: list[Token]) -> ast.Expr:
    """Precedence climbing over a flat `a op b op c` chain (all operators left-associative).
    Operands come with their matched spans, so `(a + b) * c` starts at its `(`."""
    position = 0

    def parse_level(min_precedence: int) -> Built:
        nonlocal position
        left = operands[position]
        while position < len(operators):
            op = str(operators[position])
            precedence = ast.BINARY_PRECEDENCE[op]
            if precedence < min_precedence:
                break
            position += 1
            right = parse_level(precedence + 1)
            start, end = left[1], right[2]
            node = ast.Binary(op, left[0], right[0], span=ast.Span(start, end))
            left = (node, start, end)
        return left

    climbed: ast.Expr = parse_level(0)[0]
    return climbed
