"""Oracle's SQL functions that Pell code calls as free fns (`upper(name)`, `nvl(a, 0)`,
`sysdate`): one table that the checker (arity, argument kinds, result type, "did you mean")
and the lowering (PL/SQL) both read.

A local fn of the same name wins over a builtin: the checker looks here only for a
single-segment name the module does not declare. The checker records, per Call or Name node,
the PL/SQL name of the builtin it resolved to (`FnAnalysis.builtins`); codegen lowers that
with `lower`, without deciding again.

References are to the Oracle Database SQL Language Reference (23ai), one page per function:
https://docs.oracle.com/en/database/oracle/oracle-database/23/sqlrf/<NAME>.html
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pell import ast, naming
from pell.checker import types as t
from pell.diagnostics import did_you_mean, quoted_with_article
from pell.precedence import ADDITIVE, ATOM, Lowered, wrap
from pell.records import record

if TYPE_CHECKING:
    from pell.checker.expressions import ExpressionChecker

DATE = t.Scalar("date")
TIMESTAMP = t.Scalar("timestamp")

# What an argument may be. Oracle converts many types implicitly (SQL Language Reference,
# "Data Type Comparison Rules", implicit conversion matrix: "If you call a SQL function with
# an argument of a data type other than the data type expected ..., then Oracle implicitly
# converts the argument"); Pell rejects only the calls that are surely wrong:
#   text      text, or a number (lowered to its text as interpolation writes it,
#             pell.codegen.text_forms, not left to an implicit, NLS-dependent conversion);
#             not a date (its text would follow NLS_DATE_FORMAT: `to_char(d, fmt)` says
#             which), nor a bool (no implicit conversion from PL/SQL's BOOLEAN)
#   format    text only: a format model or an NLS parameter string
#   numeric   a number (`sqrt("x")` is surely wrong: convert with `to_number`)
#   datetime  a date or a timestamp (`add_months("2024-01-31", 1)` would parse by NLS)
#   number_or_datetime   ROUND and TRUNC take either
#   scalar    any scalar but bool, unless the builtin `allows_bool`: NVL, whose PL/SQL
#             STANDARD package has a BOOLEAN overload (`IF NVL(a <> n, TRUE) THEN` is common
#             PL/SQL), and NVL2, which lowers to a CASE
#   same      as `scalar`, and of one type with the other `same` arguments of the call
#   places_or_format     ROUND/TRUNC's 2nd: decimal places after a number, a format after a date
#   field     EXTRACT's field: a text literal, YEAR ... SECOND
Kind = Literal[
    "text",
    "format",
    "numeric",
    "datetime",
    "number_or_datetime",
    "scalar",
    "same",
    "places_or_format",
    "field",
]

# How the result's type follows from the arguments':
#   a t.Type           always that type
#   "text_of_first"    bigtext if the first argument is bigtext (Oracle returns a CLOB for a
#                      CLOB argument), else text
#   "text_of_args"     bigtext if any argument is bigtext, else text
#   "numeric_of_args"  int if every argument is an int, else number
#   "same"             the one type of the `same` arguments (int and number make number)
#   "rounded"          ROUND/TRUNC: a number's own type; DATE for a date or a timestamp
Result = t.Type | Literal["text_of_first", "text_of_args", "numeric_of_args", "same", "rounded"]

# How the call is written in PL/SQL:
#   call      NAME(args)
#   bare      NAME, without parentheses: SYSDATE, SYSTIMESTAMP and USER are written so in
#             PL/SQL (STANDARD declares them as parameterless functions; `USER()` is no SQL)
#   nvl2      CASE WHEN a IS NOT NULL THEN b ELSE c END (NVL2 is a SQL-only function)
#   extract   EXTRACT(FIELD FROM d)
#   sys_guid  RAWTOHEX(SYS_GUID())
#   helper    a private function of the package, named `plsql` (templates/), where Oracle has
#             no documented function that does it right
Form = Literal["call", "bare", "nvl2", "extract", "sys_guid", "helper"]


@record
class Builtin:
    """`name(params) -> result` in Pell; `plsql(...)` in PL/SQL."""

    name: str
    plsql: str
    params: tuple[Kind, ...]  # one kind per parameter; with `variadic`, the last repeats
    required: int  # how many of `params` must be given
    result: Result
    form: Form = "call"
    variadic: bool = False
    bare: bool = False  # may also be written as a bare name: `sysdate`
    allows_bool: bool = False  # `scalar`/`same` arguments may be bools

    @property
    def most(self) -> int | None:
        """The most arguments it takes; None for no limit."""
        return None if self.variadic else len(self.params)

    def kind(self, index: int) -> Kind:
        return self.params[min(index, len(self.params) - 1)]

    def wanted(self) -> str:
        """`2 arguments`, `1 to 3 arguments`, `at least 2 arguments`."""
        most = self.most
        if most is None:
            return f"at least {self.required} argument{'s' * (self.required != 1)}"
        if most == self.required:
            return "no arguments" if most == 0 else f"{most} argument{'s' * (most != 1)}"
        return f"{self.required} to {most} arguments"


def _b(
    name: str,
    params: tuple[Kind, ...],
    result: Result,
    required: int | None = None,
    *,
    form: Form = "call",
    variadic: bool = False,
    bare: bool = False,
    allows_bool: bool = False,
) -> Builtin:
    """A row of the table: Oracle's function of the same name, all its parameters required
    unless `required` says how many are."""
    return Builtin(
        name,
        name.upper(),
        params,
        len(params) if required is None else required,
        result,
        form,
        variadic,
        bare,
        allows_bool,
    )


TABLE: tuple[Builtin, ...] = (
    # -- text. LENGTH, INSTR and ASCII return NUMBER (LENGTH.html: "The return value is of
    # data type NUMBER"), so `number`: a CLOB's length need not fit a PLS_INTEGER.
    _b("upper", ("text",), "text_of_first"),
    _b("lower", ("text",), "text_of_first"),
    _b("initcap", ("text",), "text_of_first"),
    _b("length", ("text",), t.NUMBER),
    _b("substr", ("text", "numeric", "numeric"), "text_of_first", 2),
    _b("instr", ("text", "text", "numeric", "numeric"), t.NUMBER, 2),
    _b("replace", ("text", "text", "text"), "text_of_first", 2),
    # TRIM with a character to trim is special syntax (`TRIM(c FROM s)`); only `trim(s)` here
    _b("trim", ("text",), "text_of_first"),
    _b("ltrim", ("text", "text"), "text_of_first", 1),
    _b("rtrim", ("text", "text"), "text_of_first", 1),
    _b("lpad", ("text", "numeric", "text"), "text_of_first", 2),
    _b("rpad", ("text", "numeric", "text"), "text_of_first", 2),
    _b("chr", ("numeric",), t.TEXT),
    _b("ascii", ("text",), t.NUMBER),
    # CONCAT takes exactly two arguments (CONCAT.html: CONCAT(char1, char2))
    _b("concat", ("text", "text"), "text_of_args"),
    # -- numbers
    _b("abs", ("numeric",), "numeric_of_args"),
    _b("ceil", ("numeric",), "numeric_of_args"),
    _b("floor", ("numeric",), "numeric_of_args"),
    # ROUND(date) and TRUNC(date) return DATE "even if you specify a different datetime data
    # type for date" (ROUND-date.html, TRUNC-date.html): "rounded" makes a timestamp's a date.
    _b("round", ("number_or_datetime", "places_or_format"), "rounded", 1),
    _b("trunc", ("number_or_datetime", "places_or_format"), "rounded", 1),
    _b("mod", ("numeric", "numeric"), "numeric_of_args"),
    _b("power", ("numeric", "numeric"), t.NUMBER),
    _b("sqrt", ("numeric",), t.NUMBER),
    _b("sign", ("numeric",), t.NUMBER),
    # BITAND "returns an integer" of two nonnegative integers (BITAND.html); PL/SQL's STANDARD
    # has it too, so an aggregate's step may call it (tests/cases/aggregates.pell)
    _b("bitand", ("numeric", "numeric"), t.NUMBER),
    # GREATEST and LEAST compare with the first argument's type (GREATEST.html); Oracle takes
    # one argument too, but the greatest of one value is a mistake: two at least.
    _b("greatest", ("same",), "same", 2, variadic=True),
    _b("least", ("same",), "same", 2, variadic=True),
    # -- nulls. NVL's result has the type of its first argument, or the higher numeric type
    # (NVL.html); COALESCE needs at least two expressions (COALESCE.html).
    _b("nvl", ("same", "same"), "same", allows_bool=True),
    _b("nvl2", ("scalar", "same", "same"), "same", form="nvl2", allows_bool=True),
    _b("coalesce", ("same",), "same", 2, variadic=True),
    _b("nullif", ("same", "same"), "same"),
    # -- conversions. The optional arguments are a format model and an NLS parameter string.
    _b("to_char", ("scalar", "format", "format"), t.TEXT, 1),
    _b("to_number", ("text", "format", "format"), t.NUMBER, 1),
    _b("to_date", ("text", "format", "format"), DATE, 1),
    _b("to_timestamp", ("text", "format", "format"), TIMESTAMP, 1),
    # -- dates. ADD_MONTHS and LAST_DAY return DATE "regardless of the data type of date"
    # (ADD_MONTHS.html, LAST_DAY.html).
    _b("sysdate", (), DATE, form="bare", bare=True),
    _b("systimestamp", (), TIMESTAMP, form="bare", bare=True),
    _b("add_months", ("datetime", "numeric"), DATE),
    _b("months_between", ("datetime", "datetime"), t.NUMBER),
    # NUMTODSINTERVAL(n, 'DAY' | 'HOUR' | 'MINUTE' | 'SECOND') is an INTERVAL DAY TO SECOND
    # (NUMTODSINTERVAL.html)
    _b("numtodsinterval", ("numeric", "format"), t.INTERVAL),
    _b("last_day", ("datetime",), DATE),
    # EXTRACT returns a NUMBER for YEAR ... SECOND (EXTRACT-datetime.html)
    _b("extract", ("field", "datetime"), t.NUMBER, form="extract"),
    # -- the session. SYS_GUID returns a RAW(16) (SYS_GUID.html), and Pell has no raw type:
    # RAWTOHEX makes it the 32 hex digits Oracle shows for it, a `text` that compares,
    # concatenates and binds like any other (a RAW would convert implicitly, but only where
    # PL/SQL sees a VARCHAR2 is wanted; RAWTOHEX says it once).
    _b("sys_guid", (), t.TEXT, form="sys_guid"),
    _b("user", (), t.TEXT, form="bare", bare=True),
    # -- Pell's own. `reverse(s)`, as public Pell writes it: Oracle's REVERSE is no documented
    # SQL function (the SQL Language Reference lists none), and it reverses bytes; a package
    # function reverses the characters (templates/reverse_function.sql.j2).
    Builtin("reverse", naming.REVERSE_FUNCTION, ("text",), 1, t.TEXT, form="helper"),
)

BUILTINS: dict[str, Builtin] = {b.name: b for b in TABLE}
BY_PLSQL: dict[str, Builtin] = {b.plsql: b for b in TABLE}
# Pell's own, which SQL does not know by these names
HELPERS = frozenset(b.name for b in TABLE if b.form == "helper")

# Every Oracle SQL built-in function called as `name(...)`, in lower case: the TABLE above is
# the part Pell code calls; this is what a SQL statement's bare `name(` means (a test keeps
# TABLE inside it). In SQL, such a name is the built-in, not a fn of the package of the same
# name: "the STANDARD/builtin declaration will be chosen over the local declaration in SQL
# statements" (Database Error Messages, PLW-05004, Cause). By the categories of the SQL
# Language Reference (19c, 23ai), "Functions" chapter, each family as the chapter lists it: the
# single-row functions (numeric, character, datetime, comparison, conversion, large object,
# collection, hierarchical, data mining, XML, JSON, encoding, NULL-related, environment and
# identifier; 23ai adds the domain, vector and boolean ones), the aggregate, analytic, object
# reference, model and OLAP functions; and the operators written like calls (JSON_ID,
# FUZZY_MATCH, PHONIC_ENCODE: 23ai "Data Quality Operators", "JSON_ID Operator"). Also the
# XML update functions of 11.2 (APPENDCHILDXML ... UPDATEXML: SQL Language Quick Reference
# 11.2, "Syntax for SQL Functions"), deprecated since. FIRST, LAST, DEPTH, PATH and VALUE,
# written only inside other constructs (KEEP, MATCH_RECOGNIZE, UNDER_PATH, object tables),
# are left out; so are SQL's conditions, which retry_facts.SQL_SYNTAX_BEFORE_PAREN lists.
SQL_FUNCTIONS = frozenset(
    """
    abs acos asin atan atan2 bitand ceil cos cosh exp floor ln log mod nanvl power remainder
    round round_ties_to_even sign sin sinh sqrt tan tanh trunc width_bucket

    chr concat initcap lower lpad ltrim nchr nls_initcap nls_lower nls_upper nlssort
    regexp_replace regexp_substr replace rpad rtrim soundex substr substrb substrc substr2
    substr4 translate treat trim upper
    nls_charset_decl_len nls_charset_id nls_charset_name collation nls_collation_id
    nls_collation_name
    ascii instr instrb instrc instr2 instr4 length lengthb lengthc length2 length4
    regexp_count regexp_instr

    add_months current_date current_timestamp dbtimezone extract from_tz last_day
    localtimestamp months_between new_time next_day numtodsinterval numtoyminterval
    ora_dst_affected ora_dst_convert ora_dst_error sessiontimezone sys_extract_utc sysdate
    systimestamp time_bucket to_timestamp to_timestamp_tz to_dsinterval to_utc_timestamp_tz
    to_yminterval tz_offset

    greatest least

    asciistr bin_to_num cast chartorowid compose convert decompose hextoraw rawtohex
    rawtonhex rowidtochar rowidtonchar scn_to_timestamp timestamp_to_scn to_binary_double
    to_binary_float to_blob to_boolean to_char to_clob to_date to_lob to_multi_byte to_nchar
    to_nclob to_number to_single_byte unistr validate_conversion

    bfilename empty_blob empty_clob
    cardinality collect powermultiset powermultiset_by_cardinality set
    sys_connect_by_path

    cluster_details cluster_distance cluster_id cluster_probability cluster_set
    feature_compare feature_details feature_id feature_set feature_value
    ora_dm_partition_name prediction prediction_bounds prediction_cost prediction_details
    prediction_probability prediction_set

    existsnode extractvalue sys_dburigen sys_xmlagg sys_xmlgen xmlagg xmlcast xmlcdata
    xmlcolattval xmlcomment xmlconcat xmldiff xmlelement xmlexists xmlforest xmlisvalid
    xmlparse xmlpatch xmlpi xmlquery xmlroot xmlsequence xmlserialize xmltable xmltransform
    appendchildxml deletexml insertchildxml insertchildxmlafter insertchildxmlbefore
    insertxmlafter insertxmlbefore updatexml
    json json_array json_arrayagg json_dataguide json_id json_mergepatch json_object
    json_objectagg json_query json_scalar json_serialize json_table json_transform json_value

    decode dump ora_hash standard_hash vsize
    coalesce lnnvl nullif nvl nvl2
    con_dbid_to_id con_guid_to_id con_id_to_con_name con_id_to_dbid con_id_to_guid
    con_id_to_uid con_name_to_id con_uid_to_id ora_invoking_user ora_invoking_userid
    sys_context sys_guid sys_row_etag sys_typeid uid user userenv
    dataobj_to_mat_partition dataobj_to_partition sys_op_zone_id

    domain_check domain_check_type domain_display domain_name domain_order
    vector to_vector from_vector vector_serialize vector_norm vector_dimension_count
    vector_dims vector_dimension_format vector_distance l1_distance l2_distance
    cosine_distance inner_product hamming_distance jaccard_distance vector_chunks
    vector_embedding
    fuzzy_match phonic_encode

    any_value approx_count approx_count_distinct approx_count_distinct_agg
    approx_count_distinct_detail approx_median approx_percentile approx_percentile_agg
    approx_percentile_detail approx_rank approx_sum avg bit_and_agg bit_or_agg bit_xor_agg
    bitmap_bit_position bitmap_bucket_number bitmap_construct_agg bitmap_count bitmap_or_agg
    boolean_and_agg boolean_or_agg
    checksum corr corr_k corr_s count covar_pop covar_samp cume_dist dense_rank group_id
    grouping grouping_id kurtosis_pop kurtosis_samp listagg max median min percent_rank
    percentile_cont percentile_disc rank regr_avgx regr_avgy regr_count regr_intercept
    regr_r2 regr_slope regr_sxx regr_sxy regr_syy skewness_pop skewness_samp
    stats_binomial_test stats_crosstab stats_f_test stats_ks_test stats_mode stats_mw_test
    stats_one_way_anova stats_t_test_indep stats_t_test_indepu stats_t_test_one
    stats_t_test_paired stats_wsr_test stddev stddev_pop stddev_samp sum
    to_approx_count_distinct to_approx_percentile var_pop var_samp variance
    first_value lag last_value lead nth_value ntile ratio_to_report row_number

    deref make_ref ref reftohex
    cv iteration_number presentnnv presentv previous
    cube_table
    """.split()
)

# EXTRACT's fields Pell takes: those of a DATE or a TIMESTAMP (the TIMEZONE_* ones need a
# TIMESTAMP WITH TIME ZONE, which Pell has not). HOUR, MINUTE and SECOND need a TIMESTAMP:
# EXTRACT treats a DATE as an ANSI date, without time fields (EXTRACT-datetime.html).
EXTRACT_FIELDS = ("year", "month", "day", "hour", "minute", "second")
TIME_FIELDS = ("hour", "minute", "second")

_KIND_WORDS: dict[str, str] = {
    "text": "text or a number",
    "format": "text (a format model)",
    "numeric": "a number",
    "datetime": "a `date` or a `timestamp`",
    "number_or_datetime": "a number, a `date` or a `timestamp`",
    "scalar": "a number, text, a `date` or a `timestamp`",
    "same": "a number, text, a `date` or a `timestamp`",
}


def accepts(kind: Kind, type_: t.Type, allows_bool: bool = False) -> bool:
    """May an argument of type `type_` stand where `kind` is expected?"""
    if isinstance(type_, t.UnknownType | t.NullType | t.NeverType | t.SqlValue):
        return True
    family = t.family(type_)
    if family is None:
        return False
    if kind == "text":
        return family in ("text", "numeric")
    if kind == "format":
        return family == "text"
    if kind == "numeric":
        return family == "numeric"
    if kind == "datetime":
        return family in ("date", "timestamp")
    if kind == "number_or_datetime":
        return family in ("numeric", "date", "timestamp")
    if kind in ("scalar", "same"):
        return family != "bool" or allows_bool
    raise AssertionError(f"kind {kind} is checked by its caller")


def _hint(kind: Kind, type_: t.Type) -> tuple[str, ...]:
    family = t.family(type_)
    if kind in ("text", "format") and family in ("date", "timestamp"):
        return ('format it first: `to_char(d, "YYYY-MM-DD")`',)
    if kind in ("numeric", "number_or_datetime") and family == "text":
        return ("convert it first: `to_number(s)`",)
    if kind == "datetime" and family == "text":
        return ('convert it first: `to_date(s, "YYYY-MM-DD")`',)
    return ()


def common_type(types: Sequence[t.Type]) -> t.Type:
    """The one type of arguments already checked to be of one family: int and number make
    number, text and bigtext make bigtext, a SQL value leaves a number's kind open."""
    if any(isinstance(x, t.UnknownType) for x in types):
        return t.UNKNOWN
    concrete = [x for x in types if isinstance(x, t.Scalar)]
    open_ = any(isinstance(x, t.SqlValue) for x in types)
    if not concrete:
        return t.SqlValue() if open_ else t.NullType()
    first = concrete[0]
    family = t.family(first)
    if family == "numeric":
        return t.INT if not open_ and all(x == t.INT for x in concrete) else t.NUMBER
    if family == "text":
        return t.BIGTEXT if t.BIGTEXT in concrete else t.TEXT
    return first


def check_call(
    checker: ExpressionChecker, expr: ast.Call | ast.Name, builtin: Builtin, expected: t.Type | None
) -> t.Type:
    """Type a call of `builtin` (or its bare name), reporting what is surely wrong, and record
    its lowering in the analysis."""
    as_statement = checker.as_statement  # before the arguments' checks reset it
    args = expr.args if isinstance(expr, ast.Call) else ()
    name = builtin.name
    reported = checker.diagnostic_count()
    most = builtin.most
    if not builtin.required <= len(args) <= (len(args) if most is None else most):
        checker.error(
            "arity",
            f"fn `{name}` takes {builtin.wanted()}, "
            f"but {len(args)} {'was' if len(args) == 1 else 'were'} given",
            expr.span,
            f"`{name}` is Oracle's {builtin.plsql}",
        )
    types: list[t.Type] = []
    same: list[tuple[ast.Expr, t.Type]] = []
    for index, arg in enumerate(args):
        kind = builtin.kind(index) if index < len(builtin.params) or builtin.variadic else None
        if kind is None:  # an extra argument, reported above
            types.append(checker.expr(arg, None))
            continue
        types.append(_check_argument(checker, builtin, index, arg, kind, types, same, expected))
    if builtin.form == "extract" and len(args) == 2:
        _check_time_field(checker, args, types[1])
    if name == "nullif" and args and isinstance(args[0], ast.NoneLit):
        # "You cannot specify the literal NULL for expr1" (NULLIF.html)
        checker.error(
            "type-mismatch",
            "the first argument of `nullif` cannot be `None`: Oracle refuses a literal null there",
            args[0].span,
        )
    checker.analysis.builtins[id(expr)] = builtin.plsql
    if checker.diagnostic_count() != reported and not isinstance(builtin.result, t.Scalar):
        result: t.Type = t.UNKNOWN  # it hangs on arguments already reported as wrong
    else:
        result = _result(builtin, types, [type_ for _, type_ in same])
    if as_statement:
        checker.error(
            "not-a-statement",
            f"the value of `{name}(...)` is not used; a builtin only computes a value",
            expr.span,
            f"store it: `let x = {name}(...);`",
        )
    return result


def _check_argument(
    checker: ExpressionChecker,
    builtin: Builtin,
    index: int,
    arg: ast.Expr,
    kind: Kind,
    types: list[t.Type],
    same: list[tuple[ast.Expr, t.Type]],
    expected: t.Type | None,
) -> t.Type:
    name = builtin.name
    if kind == "field":
        type_ = checker.expr(arg, t.TEXT)
        _check_field(checker, arg)
        return type_
    if kind == "places_or_format":
        first = types[0] if types else t.UNKNOWN
        kind = "format" if t.family(first) in ("date", "timestamp") else "numeric"
        if isinstance(first, t.SqlValue | t.UnknownType | t.NullType):
            type_ = checker.expr(arg, None)
            if not (accepts("numeric", type_) or accepts("format", type_)):
                _mismatch(checker, name, index, arg, "numeric", type_)
            return type_
    hinted: t.Type | None = {"text": t.TEXT, "format": t.TEXT, "numeric": t.NUMBER}.get(kind)
    if kind == "same":  # the type of the first `same` argument that has one, else the caller's
        hinted = next((x for _, x in same if isinstance(x, t.Scalar)), expected)
    type_ = checker.expr(arg, hinted)
    if not accepts(kind, type_, builtin.allows_bool):
        _mismatch(checker, name, index, arg, kind, type_)
        return type_
    if builtin.form == "helper" and type_ == t.BIGTEXT and checker.target != "postgres":
        # Oracle: the helper takes and returns a VARCHAR2, and a CLOB over 32,767 bytes would
        # raise VALUE_ERROR (ORA-06502) when passed (PostgreSQL's reverse takes any text)
        checker.error(
            "unsupported",
            f"`{name}` of a `bigtext` is not supported yet: `{builtin.plsql}` takes a text of "
            "up to 32,767 bytes, and a longer one would raise VALUE_ERROR",
            arg.span,
        )
        return type_
    if kind == "same":
        for _, other in same:
            if not t.comparable(type_, other):
                checker.error(
                    "type-mismatch",
                    f"`{name}` takes values of one type; here {quoted_with_article(other)} "
                    f"and {quoted_with_article(type_)}",
                    arg.span,
                )
                break
        same.append((arg, type_))
    return type_


def _mismatch(
    checker: ExpressionChecker, name: str, index: int, arg: ast.Expr, kind: Kind, type_: t.Type
) -> None:
    checker.error(
        "type-mismatch",
        f"argument {index + 1} of `{name}` must be {_KIND_WORDS.get(kind, kind)}, "
        f"not {quoted_with_article(type_)}",
        arg.span,
        *_hint(kind, type_),
    )


def field_of(arg: ast.Expr) -> str | None:
    """EXTRACT's field as written: a text literal without interpolation, else None."""
    if isinstance(arg, ast.StringLit) and len(arg.parts) == 1 and isinstance(arg.parts[0], str):
        return arg.parts[0]
    return None


def _check_field(checker: ExpressionChecker, arg: ast.Expr) -> None:
    field = field_of(arg)
    if field is None:
        checker.error(
            "unsupported",
            "the field of `extract` must be written as a text literal: "
            '`extract("year", d)`; Oracle takes it as a keyword, not a value',
            arg.span,
        )
        return
    if field.lower() not in EXTRACT_FIELDS:
        listed = ", ".join(f'"{f}"' for f in EXTRACT_FIELDS)
        if field.lower().startswith("timezone"):
            checker.error(
                "unsupported",
                f'`extract("{field}", ...)` needs a timestamp with a time zone, '
                "which Pell does not have",
                arg.span,
                f"`extract` takes {listed}",
            )
            return
        checker.error(
            "unknown-name",
            f'`extract` has no field "{field}"'
            f"{did_you_mean(_quoted(field.lower()), [_quoted(f) for f in EXTRACT_FIELDS])}",
            arg.span,
            f"`extract` takes {listed}",
        )


def _quoted(field: str) -> str:
    return f'"{field}"'


def _check_time_field(checker: ExpressionChecker, args: Sequence[ast.Expr], source: t.Type) -> None:
    """HOUR, MINUTE and SECOND of a DATE: ORA-30076 at run time, so an error here."""
    field = field_of(args[0])
    if field is not None and field.lower() in TIME_FIELDS and source == DATE:
        checker.error(
            "type-mismatch",
            f'`extract("{field}", ...)` needs a `timestamp`; Oracle\'s EXTRACT sees a `date` '
            "as a day without a time of day",
            args[1].span,
            f'format the time instead: `to_char(d, "{_TIME_FORMATS[field.lower()]}")`',
        )


_TIME_FORMATS = {"hour": "HH24", "minute": "MI", "second": "SS"}


def _result(builtin: Builtin, types: Sequence[t.Type], same: Sequence[t.Type]) -> t.Type:
    rule = builtin.result
    if not isinstance(rule, str):
        return rule
    if rule == "same":
        return common_type(same)
    if rule == "numeric_of_args":
        return common_type(types)
    if rule == "text_of_first":
        return t.BIGTEXT if types and types[0] == t.BIGTEXT else t.TEXT
    if rule == "text_of_args":
        return t.BIGTEXT if t.BIGTEXT in types else t.TEXT
    # "rounded": a number keeps its type, a date or a timestamp becomes a DATE
    first = types[0] if types else t.UNKNOWN
    if t.family(first) in ("date", "timestamp"):
        return DATE
    return common_type([first])


def lower(plsql: str, args: Sequence[Lowered]) -> Lowered:
    """The PL/SQL of a call of the builtin named `plsql` (as the checker recorded it), from its
    lowered arguments."""
    builtin = BY_PLSQL[plsql]
    if builtin.form == "bare":
        return builtin.plsql, ATOM
    if builtin.form == "sys_guid":
        return "RAWTOHEX(SYS_GUID())", ATOM
    if builtin.form == "nvl2":
        # NVL2 is one of the SQL functions PL/SQL expressions cannot use (PL/SQL Language
        # Reference, "SQL Functions in PL/SQL Expressions"): the CASE it stands for.
        tested, if_set, if_null = args
        return (
            f"CASE WHEN {wrap(tested, ADDITIVE)} IS NOT NULL THEN {if_set[0]} "
            f"ELSE {if_null[0]} END",
            ATOM,
        )
    if builtin.form == "extract":
        field, source = args
        # the field's literal, as the checker accepted it: 'year' -> YEAR
        return f"EXTRACT({field[0].strip(chr(39)).upper()} FROM {source[0]})", ATOM
    return f"{builtin.plsql}({', '.join(text for text, _ in args)})", ATOM
