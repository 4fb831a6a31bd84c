"""Typing `sql! { }` blocks: their binds, terminators (.one(), .collect(), ...) and the rows
they fetch into."""

from __future__ import annotations

import re

from pell import ast, naming, sqltext
from pell.checker import builtins
from pell.checker import types as t
from pell.checker.model import FnInfo
from pell.checker.scopes import BodyScopes
from pell.diagnostics import did_you_mean, quoted_with_article
from pell.sqltokens import Token, TokenType

# sql! { } terminators and modifiers.
SQL_TERMINATORS = ("one", "first", "collect", "rowcount")
SQL_MODIFIERS = ("returning", "for_update", "nowait")


# First words of statements static PL/SQL refuses: DDL and session control (see `sql`).
STATIC_PLSQL_REFUSES = frozenset(
    {
        "create",
        "alter",
        "drop",
        "truncate",
        "grant",
        "revoke",
        "rename",
        "comment",
        "analyze",
        "audit",
        "noaudit",
        "purge",
        "flashback",
        "associate",
        "disassociate",
    }
)
# SQL statements that are neither DDL nor static SQL: the first would fail to compile in the
# package body; `sql! { begin name(...); end; }` calls a procedure.
NOT_STATIC_SQL = frozenset({"call", "explain"})


def sql_chain(expr: ast.Expr) -> tuple[ast.SqlBlock, list[ast.MethodCall]] | None:
    """`sql!{..}.a().b()` -> (the block, [a, b]); None when `expr` is not such a chain."""
    if not isinstance(expr, ast.MethodCall | ast.SqlBlock | ast.JqBlock):
        return None  # most expressions: asked for each, so no list made
    calls: list[ast.MethodCall] = []
    while isinstance(expr, ast.MethodCall):
        calls.append(expr)
        expr = expr.target
    if isinstance(expr, ast.SqlBlock):
        return expr, calls[::-1]
    if isinstance(expr, ast.JqBlock) and expr.compiled:  # its JSON_TABLE query, once checked
        return expr.compiled[0], calls[::-1]
    return None


def jq_chain(expr: ast.Expr) -> tuple[ast.JqBlock, list[ast.MethodCall]] | None:
    """`jq!{..}.a().b()` -> (the block, [a, b]); None when `expr` is not such a chain."""
    if not isinstance(expr, ast.MethodCall | ast.JqBlock):
        return None
    calls: list[ast.MethodCall] = []
    while isinstance(expr, ast.MethodCall):
        calls.append(expr)
        expr = expr.target
    return (expr, calls[::-1]) if isinstance(expr, ast.JqBlock) else None


class SqlChecker(BodyScopes):
    """Checks the `sql! { }` blocks of one fn body: binds resolve to names in scope, and the
    terminator fits the statement and the type expected of it."""

    def sql(self, block: ast.SqlBlock) -> sqltext.SqlShape | None:
        """Tokenize the SQL and resolve its binds; None (after a diagnostic) if it cannot be read."""
        self.check_stages(block)
        offset = block.text_start
        for line in block.text.splitlines(keepends=True):
            if line.strip() == "/":
                # SQL*Plus, SQLcl and pellc deploy end a statement at a line holding only `/`
                at = offset + line.index("/")
                self.error(
                    "sql-syntax",
                    "a line holding only `/` ends the whole statement in SQL*Plus and in the "
                    "deploy scripts, cutting the package body in two",
                    ast.Span(at, at + 1),
                    "write a division on one line with its operands",
                )
            offset += len(line)
        try:
            shape = sqltext.analyse(block.text)
        except sqltext.SqlTextError as error:
            at = block.text_start + error.offset
            self.error("sql-syntax", f"the SQL cannot be read: {error}", ast.Span(at, at + 1))
            return None
        if shape.limit_before_skip is not None:
            self.limit_before_skip(block, *shape.limit_before_skip)
        verb = shape.tokens[0].text.lower() if shape.tokens else ""
        if verb in STATIC_PLSQL_REFUSES:
            # PL/SQL's static SQL statements are SELECT, INSERT, UPDATE, DELETE, MERGE, COMMIT,
            # ROLLBACK, SAVEPOINT, SET TRANSACTION and LOCK TABLE (PL/SQL Language Reference,
            # "Description of Static SQL"); anything else runs through dynamic SQL.
            self.error(
                "sql-ddl",
                f"PL/SQL cannot run {verb.upper()} as written: DDL and session statements run "
                "only through EXECUTE IMMEDIATE",
                block.span,
                "write sql! { begin execute immediate '...'; end; } (DDL commits: keep it out "
                "of retried fns and transaction blocks)",
            )
        elif verb in NOT_STATIC_SQL:
            self.error(
                "sql-ddl",
                f"PL/SQL cannot run {verb.upper()} as written: it is not one of PL/SQL's static "
                "SQL statements",
                block.span,
                "call a procedure from a PL/SQL block: sql! { begin name(:arg); end; }"
                if verb == "call"
                else "run it through EXECUTE IMMEDIATE",
            )
        rewrites = []
        for bind in shape.binds:
            self.current_bind_span = ast.Span(
                block.text_start + bind.start, block.text_start + bind.end
            )
            replacement = self.resolve_bind(bind.name) or self.row_column_bind(
                bind.name, block.text[bind.end :]
            )
            row = self.lookup(bind.name)
            column = re.match(r"\.([A-Za-z_][A-Za-z0-9_$#]*)", block.text[bind.end :])
            if replacement is None and row is not None and isinstance(row.type, t.SqlRow):
                start = block.text_start + bind.start
                names = row.type.names
                self.error(
                    "unknown-bind",
                    f"the query of `{bind.name}` has no column `{column.group(1)}`"
                    f"{did_you_mean(column.group(1), names)}"
                    if column
                    else f"`:{bind.name}` is a whole row; bind one of its columns: "
                    f"`:{bind.name}.{names[0] if names else 'col'}`",
                    ast.Span(start, block.text_start + bind.end + (column.end() if column else 0)),
                    "give the column an alias in the loop's select list",
                )
                continue
            if replacement is None:
                start = block.text_start + bind.start

                def candidates() -> list[str]:
                    columns = [
                        n
                        for row in self.cursor_rows
                        if isinstance(row.type, t.SqlRow)
                        for n in row.type.names
                    ]
                    return self.visible_names() + columns

                self.error(
                    "unknown-bind",
                    f"bind `:{bind.name}` names no local, parameter, loop column or "
                    f"record-parameter field{did_you_mean(bind.name, candidates)}",
                    ast.Span(start, block.text_start + bind.end),
                )
                continue
            if isinstance(self.bind_type(bind.name), t.CursorType):
                self.error(
                    "unknown-bind",
                    f"`:{bind.name}` is a cursor, which SQL cannot take as a bind; "
                    f"`for r in {bind.name} {{ ... }}` reads its rows",
                    ast.Span(block.text_start + bind.start, block.text_start + bind.end),
                )
                continue
            rewrites.append((bind, replacement))
            if self.bind_type(bind.name) == t.BOOL:
                start = block.text_start + bind.start
                self.sql_boolean(
                    f"bind `:{bind.name}` is a `bool`",
                    ast.Span(start, block.text_start + bind.end),
                )
        self.analysis.binds[id(block)] = rewrites
        return shape

    def bind_type(self, name: str) -> t.Type:
        """The type of what bind `:name` resolves to (as resolve_bind finds it)."""
        symbol = self.lookup(name)
        if symbol is not None and not isinstance(symbol.type, t.SqlRow):
            return symbol.type
        if any(isinstance(r.type, t.SqlRow) and name in r.type.names for r in self.cursor_rows):
            return t.UNKNOWN  # a column of a query: SQL's own type
        for param in self.fn.params:
            if isinstance(param.type, t.RecordType):
                fields = self.module.record_info(param.type).fields
                if name in fields:
                    return fields[name]
        return t.UNKNOWN

    def limit_before_skip(self, block: ast.SqlBlock, word: str, offset: int) -> None:
        """ROWNUM (or FETCH, OFFSET) in a FOR UPDATE SKIP LOCKED query. SKIP LOCKED tells Oracle
        "to attempt to lock the rows specified by the WHERE clause and to skip any rows that
        are found to be already locked by another transaction" (SQL Language Reference, SELECT,
        for_update_clause): the rows the WHERE clause specifies are those ROWNUM leaves, so each
        locked one among them is a row fewer (`rownum <= 10`), and a locked first candidate
        leaves none (`rownum = 1`). Oracle allows no row_limiting_clause with the
        for_update_clause (same page). PostgreSQL applies LIMIT after locking: Oracle only."""
        start = block.text_start + offset
        word = word.upper()
        limited = (
            f"{word} limits the rows before SKIP LOCKED skips the locked ones: each row it keeps "
            "that another session holds is skipped, not replaced, so the query returns fewer "
            "rows than ROWNUM allows even while unlocked rows wait (none when other sessions "
            "hold every row it keeps)"
            if word == "ROWNUM"
            else f"{word} limits the rows before SKIP LOCKED skips the locked ones, and Oracle "
            "allows no row-limiting clause with FOR UPDATE"
        )
        self.error(
            "rownum-skip-locked",
            limited,
            ast.Span(start, start + len(word)),
            "drop it and fetch with `.first()`: one row from a cursor, so only the row fetched "
            "is locked (for a batch, claim one row at a time)",
        )

    def sql_boolean(self, what: str, span: ast.Span) -> None:
        """BOOLEAN is a SQL type from Oracle 23ai only; before it SQL can neither take a
        PL/SQL BOOLEAN as a bind nor fetch into one (PL/SQL Language Reference 19c, "BOOLEAN
        Data Type")."""
        if self.target != "23ai":
            self.error(
                "sql-boolean",
                f"{what}, and SQL has no BOOLEAN before Oracle 23ai (this builds for {self.target})",
                span,
                "use a number (1/0) or text ('Y'/'N') in SQL, and compare it in Pell",
            )

    def reserved_column(self, name: str, span: ast.Span) -> None:
        """A cursor row's column that is a reserved word (`level`): PL/SQL cannot name it as a
        field of the row, so it needs an alias in the select list."""
        self.error(
            "reserved-name",
            f"column `{name}` is an Oracle reserved word, so PL/SQL cannot name it as a field "
            "of the row",
            span,
            f"give it an alias in the select list: `{name} as {name}_value`",
        )

    def row_column_bind(self, name: str, following: str) -> str | None:
        """`:r.col` on the row of a cursor loop: the row variable (`.col` stays in the SQL),
        when the loop's query has that column."""
        symbol = self.lookup(name)
        column = re.match(r"\.([A-Za-z_][A-Za-z0-9_$#]*)", following)
        if symbol is None or not isinstance(symbol.type, t.SqlRow) or column is None:
            return None
        names = {n.lower() for n in symbol.type.names}
        return symbol.plsql if column.group(1).lower() in names else None

    def resolve_bind(self, name: str) -> str | None:
        symbol = self.lookup(name)
        if symbol is not None and not isinstance(symbol.type, t.SqlRow):
            return symbol.plsql
        for row in reversed(self.cursor_rows):
            if isinstance(row.type, t.SqlRow) and name in row.type.names:
                if name.lower() in naming.ORACLE_RESERVED:
                    self.reserved_column(name, self.current_bind_span)
                return f"{row.plsql}.{name}"
        owners = [
            param
            for param in self.fn.params
            if isinstance(param.type, t.RecordType)
            and name in self.module.record_info(param.type).fields
        ]
        if len(owners) == 1:
            return f"{naming.param_name(owners[0].decl.name)}.{naming.field_name(name)}"
        return None

    def sql_expr(
        self,
        block: ast.SqlBlock,
        calls: list[ast.MethodCall],
        expected: t.Type | None,
        as_statement: bool,
    ) -> t.Type:
        shape = self.sql(block)
        names = [call.name for call in calls]
        for call in calls:
            if call.name not in SQL_TERMINATORS + SQL_MODIFIERS:
                self.error(
                    "unknown-fn",
                    f"`sql! {{ }}` has no method `{call.name}`"
                    f"{did_you_mean(call.name, list(SQL_TERMINATORS + SQL_MODIFIERS))}",
                    call.name_span,
                    "the terminators are .one(), .first(), .collect(), .rowcount()",
                )
                return t.UNKNOWN
        terminators = [n for n in names if n in SQL_TERMINATORS]
        if not terminators and as_statement and shape is not None and shape.is_select:
            self.error(
                "unused-query",
                "a query used as a statement: PL/SQL has no SELECT without INTO",
                block.span,
                "fetch it with .one(), .first() or .collect(), or loop over it with "
                "`for row in sql! { ... } { ... }`",
            )
            return t.UNIT
        if not terminators:
            if not as_statement:
                self.error(
                    "needs-annotation",
                    "a `sql! { }` used as a value needs a terminator: .one(), .first(), "
                    ".collect() or .rowcount()",
                    block.span,
                )
                return t.UNKNOWN
            return t.UNIT
        if len(terminators) > 1 or names[-1] not in SQL_TERMINATORS:
            self.error("sql-syntax", "a `sql! { }` takes one terminator, last", calls[-1].name_span)
            return t.UNKNOWN
        terminator = calls[-1]
        modifiers = names[:-1]
        for index, call in enumerate(calls):
            if call.name == "nowait" and "for_update" not in names[:index]:
                # NOWAIT is part of the for_update_clause (SQL Language Reference, SELECT)
                self.error(
                    "sql-syntax",
                    "`.nowait()` makes FOR UPDATE fail at once on a locked row: it follows "
                    "`.for_update()`",
                    call.name_span,
                    "write `.for_update().nowait()`",
                )
        if terminator.name == "rowcount":
            if shape is not None and shape.is_select:
                self.error(
                    "sql-syntax",
                    "`.rowcount()` counts the rows a DML statement changed; this is a query",
                    terminator.name_span,
                    "count in SQL instead: `select count(*) ...` with .one()",
                )
            return t.INT
        if "returning" in modifiers:
            return self.returning(block, shape, calls, expected)
        if shape is not None and not shape.is_select:
            self.error("sql-syntax", f"`.{terminator.name}()` needs a query (SELECT)", block.span)
            return expected or t.UNKNOWN
        if terminator.name == "first" and "for_update" in modifiers:
            self.error(
                "sql-syntax",
                "`.first()` fetches with FETCH FIRST, which Oracle does not allow with FOR UPDATE",
                terminator.name_span,
                "lock with .one() on a query that selects exactly one row",
            )
        elif terminator.name == "first" and shape is not None and shape.skip_locked:
            if shape.row_clause != "FOR UPDATE":
                # the cursor's FETCH takes one row: the query's own FETCH or OFFSET is refused
                # by Oracle with FOR UPDATE (SQL Language Reference, SELECT, restrictions on the
                # row_limiting_clause)
                self.error(
                    "sql-syntax",
                    f"`.first()` on a SKIP LOCKED query fetches one row from a cursor, but this "
                    f"query has {shape.row_clause}: Oracle allows no row-limiting clause with "
                    "FOR UPDATE",
                    terminator.name_span,
                    f"drop {shape.row_clause}: the cursor's one FETCH takes the first row no "
                    "other session holds",
                )
        elif terminator.name == "first" and shape is not None and shape.row_clause is not None:
            self.error(
                "sql-syntax",
                f"`.first()` adds FETCH FIRST 1 ROWS ONLY, but this query already has "
                f"{shape.row_clause}: Oracle takes one row-limiting clause, and none with "
                "FOR UPDATE",
                terminator.name_span,
                "lock with .one() on a query that selects exactly one row, or add SKIP LOCKED "
                "to take the first row no other session holds"
                if shape.row_clause == "FOR UPDATE"
                else "limit the rows in one place: drop the query's own clause, or use .one()",
            )
        if terminator.name == "collect":
            if expected is None:
                row = self.piped_row(block) or self.infer_row(shape, terminator, block.text)
                return row if isinstance(row, t.UnknownType) else t.ListType(row)
            if isinstance(expected, t.UnknownType):
                return expected
            if not isinstance(expected, t.ListType):
                self.error(
                    "type-mismatch",
                    f"`.collect()` gives a list, but {quoted_with_article(expected)} is expected here",
                    terminator.name_span,
                )
                return t.UNKNOWN
            if shape is not None:
                self.check_column_count(block, shape, expected.element)
            return expected
        # .one() and .first(): one row
        row = expected or self.piped_row(block) or self.infer_row(shape, terminator, block.text)
        if isinstance(row, t.UnknownType):
            return row
        if shape is not None:
            self.check_column_count(block, shape, row)
        return row

    def piped_row(self, block: ast.SqlBlock) -> t.Type | None:
        """The row type a `|>` pipeline's last @pipelined fn pipes (unknown when a stage is
        wrong); None for a query written out."""
        if not block.stages:
            return None
        fn = self.stage_fn(block.stages[-1])
        if fn is None or not isinstance(fn.returns, t.ListType):
            return t.UNKNOWN
        return fn.returns.element

    def stage_fn(self, stage: ast.Call) -> FnInfo | None:
        """The @pipelined fn of this module a `|>` stage names, or None."""
        name = stage.callee
        fn = self.module.fns.get(name.path[0]) if len(name.path) == 1 else None
        return fn if fn is not None and fn.pipelined else None

    def check_stages(self, block: ast.SqlBlock) -> None:
        """Each `|>` stage: a @pipelined fn of this module, given the rows and its other
        arguments, reading the rows the stage before it pipes."""
        rows: t.Type | None = None  # the previous stage's rows; the query's are not typed
        for stage in block.stages:
            name = stage.callee
            fn = self.stage_fn(stage)
            if fn is None:
                self.error(
                    "type-mismatch",
                    f"`|>` pipes rows into a @pipelined fn of this module; `{name.text}` is "
                    "not one",
                    name.span,
                )
                return
            if len(stage.args) + 1 != len(fn.params):
                wanted = len(fn.params) - 1
                self.error(
                    "arity",
                    f"`{name.text}` takes the rows and {wanted} more argument"
                    f"{'s' * (wanted != 1)}; this stage gives it {len(stage.args)}",
                    stage.span,
                )
                return
            reads = fn.params[0].type
            if rows is not None and isinstance(reads, t.CursorType) and reads.element != rows:
                self.error(
                    "type-mismatch",
                    f"`{name.text}` reads rows of `{reads.element}`, but the stage before it "
                    f"pipes rows of `{rows}`",
                    name.span,
                )
            rows = fn.returns.element if isinstance(fn.returns, t.ListType) else None

    def infer_row(
        self, shape: sqltext.SqlShape | None, terminator: ast.MethodCall, sql: str
    ) -> t.Type:
        """An unannotated row: the one record whose field names are the select list's names;
        for one row of one column, the type the SQL tells (single_column)."""
        if shape is None:
            return t.UNKNOWN
        if terminator.name != "collect" and len(shape.select_items) == 1:
            start, end = shape.select_items[0]
            column = single_column(sql[start:end], sql)
            if column is not None:
                return column
        names = [n.lower() if n else None for n in shape.select_names]
        star = any(sql[a:b].strip().endswith("*") for a, b in shape.select_items)
        single = len(names) == 1 and not star
        row_example = "number" if single else "Order"
        example = f"list<{row_example}>" if terminator.name == "collect" else row_example
        if len(names) < 2 or None in names:
            why = (
                "a single column whose type the SQL does not tell (COUNT(...) and a plain column "
                "of the query's only table are inferred)"
                if single
                else "columns without names (`*`, or expressions without an alias)"
            )
            self.error(
                "needs-annotation",
                f"the type of this `.{terminator.name}()` cannot be inferred from {why}; "
                f"write it: `let x: {example} = sql! {{ ... }}.{terminator.name}();`",
                terminator.name_span,
            )
            return t.UNKNOWN
        matches = [
            name
            for name, record in self.module.records.items()
            if [f.lower() for f in record.fields] == names
        ]
        if len(matches) == 1:
            return t.RecordType(matches[0])
        shown = ", ".join(n or "?" for n in names)
        found = (
            f"several records match ({', '.join(sorted(matches))})"
            if matches
            else "no record has exactly these fields"
        )
        self.error(
            "needs-annotation",
            f"the row type of this `.{terminator.name}()` cannot be inferred from its columns "
            f"({shown}): {found}",
            terminator.name_span,
            f"write the type: `let row: {example} = sql! {{ ... }}.{terminator.name}();`",
        )
        return t.UNKNOWN

    def returning(
        self,
        block: ast.SqlBlock,
        shape: sqltext.SqlShape | None,
        calls: list[ast.MethodCall],
        expected: t.Type | None,
    ) -> t.Type:
        """`.returning::<T>().one()` on DML with a RETURNING clause."""
        call = next(c for c in calls if c.name == "returning")
        if calls[-1].name != "one" or calls[-2] is not call:
            self.error("sql-syntax", "write `.returning::<T>().one()`", call.name_span)
            return t.UNKNOWN
        if len(call.type_args) != 1 or len(call.type_args[0].alternatives) != 1:
            self.error(
                "needs-annotation",
                "write the returned type: `.returning::<number>()`",
                call.name_span,
            )
            return t.UNKNOWN
        returned = self.resolver.resolve(call.type_args[0].alternatives[0])
        if shape is not None and (shape.is_select or shape.returning_count == 0):
            self.error(
                "sql-syntax",
                "`.returning::<T>()` needs an INSERT, UPDATE or DELETE ending in a RETURNING "
                "clause: `insert into t (...) values (...) returning id`",
                block.span,
            )
            return returned
        if shape is not None and isinstance(returned, t.RecordType | t.Scalar):
            wanted = (
                len(self.module.record_info(returned).fields)
                if isinstance(returned, t.RecordType)
                else 1
            )
            if shape.returning_count != wanted:
                self.error(
                    "sql-column-count",
                    f"RETURNING gives {shape.returning_count} value"
                    f"{'s' * (shape.returning_count != 1)}, but `{returned}` takes {wanted}",
                    block.span,
                )
        if expected is not None and not t.assignable(returned, expected):
            self.error(
                "type-mismatch",
                f"`.returning::<{returned}>()` gives {quoted_with_article(returned)}, but {quoted_with_article(expected)} is "
                "expected here",
                call.name_span,
            )
        return returned

    def check_column_count(
        self, block: ast.SqlBlock, shape: sqltext.SqlShape, target: t.Type
    ) -> None:
        row = target.element if isinstance(target, t.ListType) else target
        if row == t.BOOL:
            self.sql_boolean("this query fetches into a `bool`", block.span)
        elif isinstance(row, t.RecordType):
            flags = [f for f, ft in self.module.record_info(row).fields.items() if ft == t.BOOL]
            if flags:
                self.sql_boolean(
                    f"this query fetches into record `{row.name}`, whose field `{flags[0]}` is "
                    "a `bool`",
                    block.span,
                )
        count = len(shape.select_items)
        if isinstance(target, t.UnknownType):
            return  # the error that made it is reported already
        if isinstance(target, t.TableRow):
            # pellc does not know the table's columns: Oracle matches the select list with the
            # record's fields when it compiles the package (PL/SQL Language Reference 11.1,
            # "SELECT INTO Statement", record_name: a user-defined or %ROWTYPE record, with a
            # corresponding type-compatible field for each select_item)
            return
        if isinstance(target, t.RecordType):
            wanted = len(self.module.record_info(target).fields)
            what = f"record `{target.name}` has {wanted} field{'s' * (wanted != 1)}"
        elif isinstance(target, t.Scalar | t.SqlValue):
            wanted = 1
            what = f"{quoted_with_article(target)} takes one column"
        else:
            self.error(
                "type-mismatch",
                f"a `.one()` row cannot be stored in {quoted_with_article(target)}",
                block.span,
            )
            return
        if block.pivot and isinstance(target, t.RecordType) and count == wanted:
            # `pivot::sum(...)` writes the select list (its rows column, then the enum's values
            # in their order), and a row is fetched by position: the fields must be the same
            # columns in the same order, or each would get another's sum. A value that is no
            # name is a quoted alias (`"Central 'hub'"`): its field is named as its variant.
            fields = [name.lower() for name in self.module.record_info(target).fields]
            if fields != list(block.pivot):
                self.error(
                    "type-mismatch",
                    f"`pivot::sum` fills the fields `{', '.join(block.pivot)}`, in that "
                    "order, but record "
                    f"`{target.name}`'s fields are `{', '.join(fields)}`: a row is fetched by "
                    "position",
                    block.span,
                    "declare the record's fields in the order the pivot selects them, each "
                    "named as its column, or as its enum variant where the value is no name",
                )
        star = any(block.text[start:end].strip().endswith("*") for start, end in shape.select_items)
        piped = self.piped_row(block)
        if piped is not None:
            # `select *` of a `|>` pipeline: the columns are the last fn's row, in its order
            if not isinstance(piped, t.UnknownType) and piped != row:
                last = block.stages[-1].callee
                self.error(
                    "type-mismatch",
                    f"`{last.text}` pipes rows of `{piped}`, but rows of `{row}` are expected here",
                    last.span,
                )
        elif star:
            self.error(
                "sql-column-count",
                f"`select *` cannot be matched to the target: {what}; list the columns",
                block.span,
            )
        elif count != wanted:
            self.error(
                "sql-column-count",
                f"the query selects {count} column{'s' * (count != 1)}, but {what}",
                block.span,
            )


_COUNT = re.compile(r"count\s*\((?:[^()]|\([^()]*\))*\)(?:\s+(?:as\s+)?[A-Za-z_]\w*)?", re.I)
_COLUMN = re.compile(r"(?:[A-Za-z_][\w$#]*\.)?([A-Za-z_][\w$#]*)(?:\s+(?:as\s+)?[A-Za-z_]\w*)?")


# `json_objectagg(k value v returning clob) as j`: a generation function (or JSON_QUERY), its
# arguments, and an alias
_JSON_TEXT = re.compile(
    r"(?:json_object|json_objectagg|json_array|json_arrayagg|json_query)\s*(\(.*\))"
    r"(?:\s+(?:as\s+)?[A-Za-z_]\w*)?",
    re.IGNORECASE | re.DOTALL,
)
_RETURNING = re.compile(r"\breturning\s+(\w+)", re.IGNORECASE)


def _json_text_item(item: str) -> bool:
    """Is the select item one call of a JSON function giving JSON text: its parentheses
    closed only at its end (`json_object(..) || x` is not), RETURNING absent (VARCHAR2(4000))
    or CLOB or VARCHAR2 (a JSON type or a BLOB is no text)?"""
    match = _JSON_TEXT.fullmatch(item)
    if match is None:
        return False
    arguments = re.sub(r"'(?:[^']|'')*'", "''", match.group(1))  # parentheses in strings
    depth = 0
    for index, char in enumerate(arguments):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and index != len(arguments) - 1:
            return False
    returning = _RETURNING.findall(arguments)
    return not returning or returning[-1].lower() in ("clob", "varchar2")


def single_column(item: str, sql: str) -> t.Type | None:
    """The type of a query's one select item when the SQL tells it: COUNT(...) is a number
    (COUNT "never returns null", SQL Language Reference, COUNT); a plain column of the query's
    only table is that column's type, `table.column%TYPE`. None otherwise."""
    item = item.strip()
    if _COUNT.fullmatch(item):
        return t.NUMBER
    if _json_text_item(item):
        # JSON text (pell.checker.json): the SQL/JSON generation functions return their JSON
        # "as a SQL value", VARCHAR2(4000) unless the RETURNING clause says CLOB (SQL Language
        # Reference, JSON_OBJECTAGG, JSON_returning_clause); JSON_QUERY likewise
        return t.JSON
    column = _COLUMN.fullmatch(item)
    tables = sqltext.tables_named(sql)
    if column is None or len(tables) != 1 or column.group(1).lower() in naming.ORACLE_RESERVED:
        return None
    schema, table, _ = tables[0]
    owner = f"{schema.lower()}." if schema else ""
    return t.SqlValue(f"{owner}{table.lower()}.{column.group(1).lower()}")


# SQL's built-ins whose value is text, by the builtin table's results (UPPER, SUBSTR, TO_CHAR, ...)
_TEXT_FUNCTIONS = frozenset(
    b.name
    for b in builtins.TABLE
    if b.form == "call" and b.result in (t.TEXT, "text_of_first", "text_of_args")
)
_STRINGS = frozenset(
    {
        TokenType.STRING,
        TokenType.NATIONAL_STRING,
        TokenType.UNICODE_STRING,
        TokenType.RAW_STRING,
        TokenType.NATIONAL_RAW_STRING,
    }
)

# What an operand ends with: a word after it is the item's alias (after a `.` it is a column)
_ENDS_OPERAND = frozenset(
    {TokenType.R_PAREN, TokenType.VAR, TokenType.IDENTIFIER, TokenType.NUMBER, *_STRINGS}
)


def text_columns(shape: sqltext.SqlShape) -> tuple[str, ...]:
    """The names of the select items the SQL itself makes text (is_text_item)."""
    texts: list[str] = []
    for (start, end), name in zip(shape.select_items, shape.select_names, strict=True):
        tokens = [token for token in shape.tokens if start <= token.start < end]
        if name and is_text_item(tokens):
            texts.append(name)
    return tuple(texts)


def is_text_item(tokens: list[Token]) -> bool:
    """Is a select item, as tokens, text whatever the tables hold: a string literal, a call
    of a built-in whose value is text (UPPER(...), TO_CHAR(...)), or such operands and column
    names joined by `||`, whose result "is another character string" (SQL Language Reference,
    Concatenation Operator)? Anything else (a column, CASE, a comparison) is not known."""
    if len(tokens) >= 2 and tokens[-2].token_type == TokenType.ALIAS:
        tokens = tokens[:-2]
    elif (
        len(tokens) >= 2
        and tokens[-1].token_type in (TokenType.VAR, TokenType.IDENTIFIER)
        and tokens[-2].token_type in _ENDS_OPERAND
    ):
        tokens = tokens[:-1]  # an alias without AS: `upper(x) label`, `a || b label`
    operands: list[list[Token]] = [[]]
    depth = 0
    for token in tokens:
        if depth == 0 and token.token_type == TokenType.OPERATOR and token.text == "||":
            operands.append([])
            continue
        depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(token.token_type, 0)
        operands[-1].append(token)
    if len(operands) == 1:
        return _is_text_operand(operands[0])
    return all(_is_text_operand(o) or _is_column(o) for o in operands)


def _is_text_operand(tokens: list[Token]) -> bool:
    """A string literal, or a whole call of a built-in whose value is text."""
    if len(tokens) == 1:
        return tokens[0].token_type in _STRINGS
    return (
        len(tokens) >= 3
        and tokens[0].token_type == TokenType.VAR
        and tokens[0].text.lower() in _TEXT_FUNCTIONS
        and tokens[1].token_type == TokenType.L_PAREN
        and tokens[-1].token_type == TokenType.R_PAREN
        and _closing(tokens, 1) == len(tokens) - 1
    )


def _is_column(tokens: list[Token]) -> bool:
    """A (qualified) name, a number or a bind: an operand of `||`, not an expression."""
    if len(tokens) == 1:
        return tokens[0].token_type in (TokenType.VAR, TokenType.IDENTIFIER, TokenType.NUMBER)
    if len(tokens) == 2:
        return tokens[0].token_type == TokenType.COLON and tokens[1].token_type == TokenType.VAR
    names = tokens[0::2]
    dots = tokens[1::2]
    return (
        len(tokens) % 2 == 1
        and all(n.token_type in (TokenType.VAR, TokenType.IDENTIFIER) for n in names)
        and all(d.token_type == TokenType.DOT for d in dots)
    )


def _closing(tokens: list[Token], opening: int) -> int:
    """The index of the `)` that closes the `(` at `opening`."""
    depth = 0
    for index in range(opening, len(tokens)):
        depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(tokens[index].token_type, 0)
        if depth == 0:
            return index
    return -1
