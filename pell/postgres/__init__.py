"""`--target postgres`: a checked module -> PL/pgSQL (docs/postgres.md).

A module is a schema; a record a composite type of it; a fn a FUNCTION (RETURNS void for a
procedure); a list an array; a Pell error an exception with a SQLSTATE of pellc's own class
`PE` that the `pell_runtime` schema names. What has no faithful PostgreSQL form is a located
`unsupported` error, never approximate code.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from pell import ast, naming, plsql
from pell.checker import types as t
from pell.checker.model import CheckedModule, FnInfo
from pell.checker.ut import suite_annotation
from pell.codegen import strip_markers
from pell.codegen.expressions import quote_text
from pell.diagnostics import Diagnostic
from pell.error_codes import TRANSACTION_OPEN_CODE
from pell.postgres.aggregates import aggregate_ddl
from pell.postgres.composite import composite_type_ddl
from pell.postgres.json_lowering import json_helper
from pell.postgres.lower import PgFnLowerer, Unsupported
from pell.postgres.names import MAX_IDENTIFIER_BYTES, Commits, fn_name, schema_of, sql_type
from pell.postgres.retry import RESULT_PARAMETER
from pell.records import record

__all__ = ["PgModule", "lower_module", "lower_script", "runtime_sql"]


@record
class PgModule:
    """A module lowered to PL/pgSQL: its script, and its fns as statement trees (what
    `pell.verify` runs under PostgreSQL's rules)."""

    sql: str
    subprograms: tuple[plsql.Subprogram, ...]
    # SQL line (1-based) -> the source offset of its statement: `pellc exec` maps an error's
    # PL/pgSQL line back to Pell through it
    origins: dict[int, int] | None = None


def _record_ddl(
    checked: CheckedModule, schema: str, name: str, used: str
) -> tuple[str, str, str]:
    """A record's composite type (composite_type_ddl); `used`: the hashes of this module's
    records it uses, so that it changes with them."""
    info = checked.records[name]
    fields = [
        f"{naming.field_name(field)} {sql_type(type_, checked)}"
        for field, type_ in info.fields.items()
    ]
    return composite_type_ddl(schema, f"{schema}.{naming.record_type_name(name)}", fields, used)


def _records_used(checked: CheckedModule, name: str) -> list[str]:
    """The records of this module that `name`'s fields are or hold, in field order."""
    used: list[str] = []
    for type_ in checked.records[name].fields.values():
        element = type_.element if isinstance(type_, t.ListType) else type_
        if isinstance(element, t.RecordType) and not element.module and element.name not in used:
            used.append(element.name)
    return used


def _record_order(checked: CheckedModule) -> list[str]:
    """Records after the records their fields use (the checker rejects cycles)."""
    ordered: list[str] = []

    def visit(name: str) -> None:
        if name in ordered:
            return
        for used in _records_used(checked, name):
            visit(used)
        ordered.append(name)

    for name in checked.records:
        visit(name)
    return ordered


_MODES = {"in": "", "out": "OUT ", "inout": "INOUT "}


def _signature(
    fn: FnInfo, checked: CheckedModule, schema: str, procedure: bool, name: str = ""
) -> str:
    name = name or fn_name(fn.decl.name)
    params = ", ".join(
        f"{_MODES[p.decl.mode]}{naming.param_name(p.decl.name)} {sql_type(p.type, checked)}"
        for p in fn.params
    )
    if procedure:
        # a PROCEDURE: only a procedure may COMMIT, and its CALL assigns OUT and INOUT
        # parameters back; a value is one more OUT parameter
        if fn.is_function:
            result = f"OUT {RESULT_PARAMETER} {sql_type(fn.returns, checked)}"
            params = f"{params}, {result}" if params else result
        return f"PROCEDURE {schema}.{name}({params})"
    if fn.pipelined:
        assert isinstance(fn.returns, t.ListType)
        returns = f"SETOF {sql_type(fn.returns.element, checked)}"
    elif fn.is_function:
        returns = sql_type(fn.returns, checked)
    else:
        returns = "void"
    return f"FUNCTION {schema}.{name}({params}) RETURNS {returns}"


def lower_module(checked: CheckedModule, header: str) -> tuple[PgModule | None, list[Diagnostic]]:
    """The module's PL/pgSQL script and trees, or the located `unsupported` errors that
    prevent them."""
    diagnostics: list[Diagnostic] = []
    module = checked.module
    schema = schema_of(module.path, module.chosen_package)
    for item in module.items:
        if isinstance(item, ast.TypeDecl):
            # a composite type has no methods, and no subtypes to match by case
            what = "a sealed type" if item.sealed else "an object type (`type Name { }`)"
            diagnostics.append(_unsupported(what, item.name_span))
    suite = suite_annotation(module)
    if suite is not None:  # utPLSQL is Oracle's: no PostgreSQL framework reads its annotations
        diagnostics.append(_unsupported("a utPLSQL suite (`@suite`)", suite.span))
    if checked.objects:
        # every use of an object type (a signature, a record field, a list) has no type to
        # lower to: the declarations are what is reported
        return None, diagnostics
    functions: list[str] = []
    # each function's body line (1-based, in the function's text) -> source offset
    function_origins: list[dict[int, int]] = []
    subprograms: list[plsql.Subprogram] = []
    helpers: set[str] = set()
    commits = Commits()
    for name, fn in checked.fns.items():
        try:
            lowerer = PgFnLowerer(checked, fn, checked.analyses[name], schema, commits)
            marked, tree = lowerer.lower_fn(marks=True)
            helpers |= lowerer.helpers
            autonomous = _autonomous(fn, checked, schema)
        except Unsupported as problem:
            diagnostics.append(_unsupported(problem.what, problem.span))
            continue
        body, body_origins = strip_markers(marked)
        if autonomous is not None:
            # the body is a function of its own, which the fn runs in a session of its own
            body_name, wrapper = autonomous
            quote = next(q for q in _dollar_quotes() if q not in body)
            functions.append(
                f"CREATE OR REPLACE {_signature(fn, checked, schema, False, body_name)}\n"
                f"LANGUAGE plpgsql AS {quote}\n{body}\n{quote};"
            )
            function_origins.append({line + 2: offset for line, offset in body_origins.items()})
            body, body_origins = wrapper, {}
            tree.autonomous = True
            tree.transaction_control = False  # the body runs as a FUNCTION there
        deterministic = any(a.name == "deterministic" for a in fn.decl.annotations)
        # a procedure takes no volatility
        volatility = " IMMUTABLE" if deterministic and not lowerer.procedure else ""
        # @parallel(...) with a partition is refused by the checker (pell.checker.parallel)
        if fn.parallel_clause and not lowerer.procedure:
            # "PARALLEL SAFE indicates that the function is safe to run in parallel mode
            # without restriction" (PostgreSQL, CREATE FUNCTION): Oracle's PARALLEL_ENABLE
            volatility += " PARALLEL SAFE"
        # the body's dollar quote must not occur in it (a string or SQL of the user's)
        quote = next(q for q in _dollar_quotes() if q not in body)
        subprograms.append(tree)
        functions.append(
            f"CREATE OR REPLACE {_signature(fn, checked, schema, lowerer.procedure)}\n"
            f"LANGUAGE plpgsql{volatility} AS {quote}\n{body}\n{quote};"
        )
        # the body starts on the function's third line
        function_origins.append({line + 2: offset for line, offset in body_origins.items()})
    aggregates: list[str] = []
    for info in checked.aggregates.values():
        try:
            ddl = "\n\n".join(aggregate_ddl(info, schema, _QUOTE, helpers))
        except Unsupported as problem:
            diagnostics.append(_unsupported(problem.what, problem.span))
            continue
        quote = next(q for q in _dollar_quotes() if q not in ddl)
        aggregates.append(ddl.replace(_QUOTE, quote))
    if diagnostics:
        return None, diagnostics
    parts = [header, f"CREATE SCHEMA IF NOT EXISTS {schema};"]
    if any(_is_autonomous(fn) for fn in checked.fns.values()):
        parts.append(_CREATE_DBLINK)
    digests: dict[str, str] = {}
    drops: list[str] = []
    for name in _record_order(checked):
        used = "".join(digests[n] for n in _records_used(checked, name))
        drop, made, digests[name] = _record_ddl(checked, schema, name, used)
        drops.insert(0, drop)  # a type after the types that use it
        parts.append(made)
    parts[len(parts) - len(digests) : len(parts) - len(digests)] = drops
    parts += [json_helper(schema, helper) for helper in sorted(helpers)]
    # the script's line of each function's first line: parts are joined by a blank line
    first = sum(part.count("\n") + 2 for part in parts) + 1
    origins: dict[int, int] = {}
    for function, lines in zip(functions, function_origins, strict=True):
        origins |= {first + line - 1: offset for line, offset in lines.items()}
        first += function.count("\n") + 2
    parts += functions
    parts += aggregates
    return PgModule("\n\n".join(parts) + "\n", tuple(subprograms), origins), []


def lower_script(checked: CheckedModule, header: str) -> tuple[PgModule | None, list[Diagnostic]]:
    """A script (a file with no `module` line) as a DO block: its implicit procedure's
    declarations and statements are the block's (PostgreSQL 15 docs, "DO": "the code block
    is treated as though it were the body of a function with no parameters, returning
    void"). It creates nothing, so it needs no schema."""
    # a DO block declares no functions or types of its own
    declared = [r.decl.span for r in checked.records.values()]
    declared += [f.decl.name_span for name, f in checked.fns.items() if name != ast.SCRIPT_FN]
    if declared:
        return None, [_unsupported("a fn or record in a script", min(declared, key=lambda s: s.start))]
    fn = checked.fns[ast.SCRIPT_FN]
    lowerer = PgFnLowerer(checked, fn, checked.analyses[fn.decl.name], "pg_temp")
    try:
        marked, tree = lowerer.lower_fn(marks=True)
    except Unsupported as problem:
        return None, [_unsupported(problem.what, problem.span)]
    body, body_origins = strip_markers(marked)
    quote = next(q for q in _dollar_quotes() if q not in body)
    # the helpers its body calls (xs.at(i), json::...), as a module has them in its schema:
    # temporary functions of the session, which the block calls qualified (PostgreSQL 15
    # docs, 20.11.1 search_path: the temporary schema "is never searched for function or
    # operator names")
    helpers = "".join(f"{json_helper('pg_temp', name)}\n\n" for name in sorted(lowerer.helpers))
    # the body's first line follows `DO $pell$`, on the line after the header, a blank one
    # and the helpers
    first = header.count("\n") + helpers.count("\n") + 4
    origins = {first + line - 1: offset for line, offset in body_origins.items()}
    sql = f"{header}\n\n{helpers}DO {quote}\n{body}\n{quote};\n"
    return PgModule(sql, (tree,), origins), []


def _is_autonomous(fn: FnInfo) -> bool:
    return any(a.name == "autonomous" for a in fn.decl.annotations)


def _autonomous(fn: FnInfo, checked: CheckedModule, schema: str) -> tuple[str, str] | None:
    """An `@autonomous` fn: the name of the function its body is, and the fn's own body, which
    runs that function in a connection of its own to the same database, through dblink
    (`pell_runtime.autonomous`): the work done there commits when that statement ends, or is
    rolled back when it fails, whatever the caller's transaction does later, as an
    autonomous transaction's (docs/postgres.md, "@autonomous"). Its arguments go as SQL
    literals of their text, read back there in the caller's DateStyle and IntervalStyle;
    its value comes back as text, cast to its type here."""
    if not _is_autonomous(fn):
        return None
    span = fn.decl.name_span
    if fn.pipelined or isinstance(fn.returns, t.CursorType):
        raise Unsupported("an `@autonomous` fn that returns rows or a cursor", span)
    for param in fn.params:
        if param.decl.mode != "in":
            raise Unsupported("an `@autonomous` fn with `out` or `inout` parameters", span)
        if isinstance(param.type, t.CursorType | t.SqlValue | t.TableRow):
            # a cursor is the caller's session's; a column's type has no name to cast to
            raise Unsupported(f"an `@autonomous` fn's parameter of type `{param.type}`", span)
    body_name = f"pell_autonomous_{fn_name(fn.decl.name)}"
    if len(body_name) > MAX_IDENTIFIER_BYTES:
        raise Unsupported("an `@autonomous` fn with a name this long", span)
    casts = ", ".join(f"%L::{sql_type(p.type, checked)}" for p in fn.params)
    statement = quote_text(f"SELECT CAST({schema}.{body_name}({casts}) AS text)")
    arguments = "".join(f", {naming.param_name(p.decl.name)}" for p in fn.params)
    run = f"pell_runtime.autonomous(format({statement}{arguments}))"
    if fn.is_function:
        line = f"RETURN CAST({run} AS {sql_type(fn.returns, checked)});"
    else:
        line = f"PERFORM {run};"
    return body_name, f"BEGIN\n  {line}\nEND;"


# A module with `@autonomous` fns needs dblink (F.12 "dblink"), which is an extension of
# PostgreSQL's contrib modules: CREATE EXTENSION wants a superuser (it is not "trusted").
_CREATE_DBLINK = """DO $pell$
BEGIN
  CREATE EXTENSION IF NOT EXISTS dblink;
EXCEPTION
  WHEN OTHERS THEN
    RAISE EXCEPTION 'the @autonomous fns of this module need the dblink extension: %', SQLERRM
      USING HINT = 'docs/postgres.md, "@autonomous": a superuser runs CREATE EXTENSION dblink; '
        'the server needs PostgreSQL''s contrib modules';
END;
$pell$;"""


# Where an aggregate's functions' dollar quote goes, until one is chosen that its text lacks
_QUOTE = "\x00quote\x00"


def _dollar_quotes() -> Iterator[str]:
    yield "$pell$"
    for number in itertools.count(2):
        yield f"$pell{number}$"


def _unsupported(what: str, span: ast.Span) -> Diagnostic:
    return Diagnostic.of(
        "unsupported",
        f"{what} is not supported on postgres yet",
        span,
        hints=("docs/postgres.md lists what the postgres target lowers",),
    )


def sqlstate(code: int) -> str:
    """A Pell error's SQLSTATE: class `PE` and the last three digits of its Oracle code
    (-20100 -> PE100): the same numbering, the same categories (PE3xx: panics)."""
    return f"PE{-code - 20000:03d}"


def runtime_sql(errors: list[tuple[str, int]], header: str) -> str:
    """The `pell_runtime` schema: one function per Pell error returning its SQLSTATE, so module
    code names errors, never numbers (as the Oracle runtime's constants do)."""
    parts = [header, "CREATE SCHEMA IF NOT EXISTS pell_runtime;", *_AUTONOMOUS_RUNTIME]
    # pellc's own: a transaction-scoped retry called with the caller's transaction open
    own = [(naming.TRANSACTION_OPEN, TRANSACTION_OPEN_CODE)]
    for exception, code in [*errors, *own]:
        parts.append(
            f"CREATE OR REPLACE FUNCTION pell_runtime.{exception}() RETURNS text\n"
            f"LANGUAGE sql IMMUTABLE AS $pell$ SELECT '{sqlstate(code)}' $pell$;"
        )
    return "\n\n".join(parts) + "\n"


# `@autonomous` (docs/postgres.md): a statement run in a connection of its own to the same
# database, through dblink, found wherever CREATE EXTENSION put it. A statement dblink runs is
# a transaction of its own there, committed when it ends; the settings that decide how the
# arguments' text reads (search_path too, for the body's SQL) are the caller's. The connection
# is the foreign server `pell_autonomous` when there is one (dblink takes a server's name for
# a connection string; its user mapping holds the password a non-superuser needs), else this
# server's own socket, database and user (F.12 "dblink": "Only superusers may use dblink_connect
# to create non-password-authenticated connections").
_AUTONOMOUS_RUNTIME = (
    r"""CREATE OR REPLACE FUNCTION pell_runtime.conninfo_value(value text) RETURNS text
LANGUAGE sql IMMUTABLE AS $pell$
SELECT '''' || replace(replace(value, '\', '\\'), '''', '\''') || ''''
$pell$;""",
    """CREATE OR REPLACE FUNCTION pell_runtime.autonomous_connection() RETURNS text
LANGUAGE plpgsql STABLE AS $pell$
BEGIN
  IF EXISTS (SELECT FROM pg_foreign_server WHERE srvname = 'pell_autonomous') THEN
    RETURN 'pell_autonomous';
  END IF;
  IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
    RAISE EXCEPTION USING
      ERRCODE = 'insufficient_privilege',
      MESSAGE = 'an @autonomous fn called by a role that is no superuser needs the foreign '
        'server pell_autonomous, whose user mapping holds the password dblink asks for',
      HINT = 'docs/postgres.md, "@autonomous"';
  END IF;
  RETURN concat_ws(' ',
    'dbname=' || pell_runtime.conninfo_value(current_database()),
    'user=' || pell_runtime.conninfo_value(current_user),
    'port=' || current_setting('port'),
    'host=' || pell_runtime.conninfo_value(coalesce(
      nullif(trim(split_part(current_setting('unix_socket_directories'), ',', 1)), ''),
      'localhost')));
END;
$pell$;""",
    """CREATE OR REPLACE FUNCTION pell_runtime.autonomous(statement text) RETURNS text
LANGUAGE plpgsql AS $pell$
DECLARE
  l_schema name;
  l_value text;
  l_remote integer;
  l_busy integer;
  l_check timestamptz;
  l_stale boolean;
  l_blocked boolean;
BEGIN
  SELECT n.nspname INTO l_schema
    FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
   WHERE e.extname = 'dblink';
  IF l_schema IS NULL THEN
    RAISE EXCEPTION USING
      ERRCODE = 'feature_not_supported',
      MESSAGE = 'an @autonomous fn needs the dblink extension, which this database lacks',
      HINT = 'docs/postgres.md, "@autonomous": a superuser runs CREATE EXTENSION dblink';
  END IF;
  -- a call ended by the session's death leaves no connection; one ended otherwise without
  -- reaching the handler below would leave its connection open under this name
  EXECUTE format('SELECT $1 = ANY(%I.dblink_get_connections())', l_schema)
    INTO l_stale USING 'pell_autonomous';
  IF l_stale THEN
    EXECUTE format('SELECT %I.dblink_disconnect($1)', l_schema) USING 'pell_autonomous';
  END IF;
  EXECUTE format('SELECT %I.dblink_connect($1, $2)', l_schema)
    USING 'pell_autonomous', pell_runtime.autonomous_connection();
  BEGIN
    EXECUTE format(
      'SELECT r.pid FROM %I.dblink($1, $2) AS r(pid integer, a text, b text, c text, d text, '
      'e text, f text)', l_schema)
      INTO l_remote
      USING 'pell_autonomous', format(
        'SELECT pg_backend_pid(), set_config(''search_path'', %L, false), '
        'set_config(''DateStyle'', %L, false), set_config(''IntervalStyle'', %L, false), '
        'set_config(''TimeZone'', %L, false), set_config(''lock_timeout'', %L, false), '
        'set_config(''statement_timeout'', %L, false)',
        current_setting('search_path'), current_setting('DateStyle'),
        current_setting('IntervalStyle'), current_setting('TimeZone'),
        current_setting('lock_timeout'), current_setting('statement_timeout'));
    -- sent, then waited for here, where a cancel or the caller's statement_timeout can
    -- interrupt the wait (pg_sleep)
    EXECUTE format('SELECT %I.dblink_send_query($1, $2)', l_schema)
      USING 'pell_autonomous', statement;
    l_check := clock_timestamp() + current_setting('deadlock_timeout')::interval;
    LOOP
      EXECUTE format('SELECT %I.dblink_is_busy($1)', l_schema) INTO l_busy USING 'pell_autonomous';
      EXIT WHEN l_busy = 0;
      IF clock_timestamp() >= l_check THEN
        -- PostgreSQL's deadlock detector does not see this session waiting for the other
        -- one: it is checked here as often, whether that one waits for a lock this session
        -- holds, directly or through other sessions waiting for locks
        WITH RECURSIVE blocking(pid) AS (
          SELECT unnest(pg_blocking_pids(l_remote))
          UNION
          SELECT unnest(pg_blocking_pids(blocking.pid)) FROM blocking
        )
        SELECT pg_backend_pid() IN (SELECT pid FROM blocking) INTO l_blocked;
        IF l_blocked THEN
          RAISE EXCEPTION USING
            ERRCODE = 'deadlock_detected',
            MESSAGE = 'deadlock detected: an @autonomous fn waits for a lock its caller holds',
            HINT = 'docs/postgres.md, "@autonomous"';
        END IF;
        l_check := clock_timestamp() + current_setting('deadlock_timeout')::interval;
      END IF;
      PERFORM pg_sleep(0.001);
    END LOOP;
    EXECUTE format('SELECT r.v FROM %I.dblink_get_result($1) AS r(v text)', l_schema)
      INTO l_value
      USING 'pell_autonomous';
  EXCEPTION
    -- OTHERS "matches every error type except QUERY_CANCELED and ASSERT_FAILURE" (43.6.8
    -- "Trapping Errors"): a cancel or statement_timeout must close the connection too. The
    -- remote statement, if it still runs, is cancelled: its work is rolled back there
    WHEN OTHERS OR query_canceled THEN
      EXECUTE format('SELECT %I.dblink_cancel_query($1)', l_schema) USING 'pell_autonomous';
      EXECUTE format('SELECT %I.dblink_disconnect($1)', l_schema) USING 'pell_autonomous';
      RAISE;
  END;
  EXECUTE format('SELECT %I.dblink_disconnect($1)', l_schema) USING 'pell_autonomous';
  RETURN l_value;
END;
$pell$;""",
)
