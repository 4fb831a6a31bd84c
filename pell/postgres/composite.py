"""A composite type of a module's schema (a record's, an aggregate's state), made so that a
deploy never drops what the user made of it (review 14: `DROP TYPE ... CASCADE` dropped table
columns of the type, and other modules' functions of it)."""

from __future__ import annotations

import hashlib


def composite_type_ddl(
    schema: str, qualified: str, fields: list[str], used: str = ""
) -> tuple[str, str, str]:
    """The block that drops the type where its definition changed, the block that makes it
    where it is missing, and its hash. Changed is told by the comment pellc puts on the type:
    the hash of its text and of `used` (the hashes of the module's types it uses; the drops
    run in reverse order). CREATE TYPE has no OR REPLACE: a changed type is dropped with the
    module's own routines that use it (aggregates first: they use the others; the script
    makes them all again), RESTRICT, and anything else that uses them stops the deploy with
    an error naming it."""
    lines = ",\n".join(f"    {field}" for field in fields)
    create = f"CREATE TYPE {qualified} AS (\n{lines}\n  );"
    digest = hashlib.sha256((create + used).encode("utf-8")).hexdigest()
    stamp = f"pellc {digest}"
    drop = f"""DO $pell$
DECLARE
  found oid := to_regtype('{qualified}');
  routine regprocedure;
  users text;
BEGIN
  IF obj_description(found, 'pg_type') IS DISTINCT FROM '{stamp}' THEN
    FOR routine IN
      SELECT p.oid FROM pg_proc p
      WHERE p.pronamespace = '{schema}'::regnamespace AND p.oid IN (
        SELECT d.objid FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass
          AND d.refobjid IN (found, (SELECT typarray FROM pg_type WHERE oid = found)))
      ORDER BY p.prokind <> 'a', p.oid
    LOOP
      EXECUTE format('DROP ROUTINE %s', routine);
    END LOOP;
    DROP TYPE IF EXISTS {qualified} RESTRICT;
  END IF;
EXCEPTION WHEN dependent_objects_still_exist THEN
  GET STACKED DIAGNOSTICS users = PG_EXCEPTION_DETAIL;
  RAISE EXCEPTION 'type {qualified} changed, and objects outside its module use it: %; '
    'change or drop them by hand (pellc drops nothing CASCADE), then deploy again',
    replace(users, E'\\n', '; ') USING ERRCODE = 'dependent_objects_still_exist';
END;
$pell$;"""
    made = f"""DO $pell$
BEGIN
  IF to_regtype('{qualified}') IS NULL THEN
  {create}
    COMMENT ON TYPE {qualified} IS '{stamp}';
  END IF;
END;
$pell$;"""
    return drop, made, digest
