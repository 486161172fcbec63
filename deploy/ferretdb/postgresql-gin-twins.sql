-- Indexes FerretDB 1.24 on PostgreSQL can use. Apply once to the database FerretDB stores in
-- (psql -v ON_ERROR_STOP=1 -d <database> -f postgresql-gin-twins.sql), before or after Keel starts.
--
-- Why: FerretDB keeps each document as jsonb (`_jsonb`) and pushes an equality filter down as
-- containment, `_jsonb->'field' @> '<value>'`. The btree index it creates for a MongoDB index is on
-- `(_jsonb->'field')`, which `@>` cannot use, so every query, `_id` lookups included, scans its
-- table. A GIN index on the same expression serves `@>`: this event trigger gives every btree index
-- FerretDB creates a GIN twin on each of its keys and, for a compound index, one more over all its
-- keys; the block at the end does it for the indexes already there. MongoDB itself needs none of
-- this; Keel's code is the same on both.
--
-- Why the compound twin: a table no ANALYZE has seen yet (a fresh database, autovacuum off or not
-- yet round) gives every `@>` the same default selectivity, so PostgreSQL picks among single-key
-- twins blindly. For Keel's bucket reads ({k, t, s}) it ANDs the bucket's and the tenant's twins,
-- which hold every commit of that bucket or tenant (20,000 commits of 500 conversations: 24.6 ms
-- per read), not the conversation's; with the (k, s) twin it reads that one index (0.24 ms).
--
-- Why `fastupdate = off`: by default a GIN index queues new entries in a pending list that every
-- query then scans, until a vacuum (or 4 MB of them) merges it. With autovacuum off or behind, a
-- busy log's `_id` lookup scanned up to 4 MB per query (1.9 ms where 1.0 ms without), and the
-- merge lands on one unlucky insert. Inserting straight into the index costs no more here
-- (an append 3.3 ms vs 3.7 ms with the list, FerretDB/PostgreSQL 15, 2 cores).
--
-- Why `plan_cache_mode = force_custom_plan` (the last statement, for this database's new
-- sessions): FerretDB sends each query as a prepared statement whose field names are parameters
-- too, `_jsonb->$1 @> $2`. After five runs of a statement PostgreSQL may switch that connection to
-- a generic plan, planned without the parameters' values, and a generic plan cannot match any
-- index, twin or not, since the indexed expression names its field: it scans the table, for the
-- life of the connection. It switches whenever the generic plan looks no dearer than the custom
-- ones, which is so on every table that was small when the connection first queried it (a fresh
-- database), and FerretDB's pooled connections live as long as FerretDB. Measured: 500 streamed
-- turns through one gateway on a fresh database ran 5,018 `_id` lookups as sequential scans,
-- 2.5 ms each, 12.4 s of PostgreSQL's 15 s. Custom plans cost a plan per query (~0.1 ms). Applied
-- after FerretDB started, it takes effect as FerretDB's connections are renewed: restart it.
CREATE OR REPLACE FUNCTION keel_ferretdb_gin_twins_of(index_oid oid) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  idx record;
  expr text;
  exprs text[] := '{}';
  n int;
BEGIN
  SELECT c.relname AS index_name, t.relname AS table_name, ns.nspname AS schema_name,
         am.amname, i.indnkeyatts
    INTO idx
    FROM pg_index i
    JOIN pg_class c ON c.oid = i.indexrelid
    JOIN pg_class t ON t.oid = i.indrelid
    JOIN pg_namespace ns ON ns.oid = t.relnamespace
    JOIN pg_am am ON am.oid = c.relam
   WHERE i.indexrelid = index_oid;
  IF NOT FOUND OR idx.amname <> 'btree' THEN
    RETURN;
  END IF;
  FOR n IN 1..idx.indnkeyatts LOOP
    expr := pg_get_indexdef(index_oid, n, true);
    -- Only FerretDB's document fields: `(_jsonb -> 'field'::text)` or a dotted path with #>.
    CONTINUE WHEN expr !~ '^\(?_jsonb (->|#>) ';
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I.%I USING gin ((%s)) WITH (fastupdate = off)',
                   left(idx.index_name, 50) || '_gin' || n, idx.schema_name, idx.table_name, expr);
    exprs := exprs || format('(%s)', expr);
  END LOOP;
  IF cardinality(exprs) > 1 THEN
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I.%I USING gin (%s) WITH (fastupdate = off)',
                   left(idx.index_name, 50) || '_gin', idx.schema_name, idx.table_name,
                   array_to_string(exprs, ', '));
  END IF;
END $$;

CREATE OR REPLACE FUNCTION keel_ferretdb_gin_twins() RETURNS event_trigger
LANGUAGE plpgsql AS $$
DECLARE
  cmd record;
BEGIN
  FOR cmd IN SELECT objid FROM pg_event_trigger_ddl_commands()
              WHERE command_tag = 'CREATE INDEX' AND object_type = 'index' LOOP
    PERFORM keel_ferretdb_gin_twins_of(cmd.objid);
  END LOOP;
END $$;

DROP EVENT TRIGGER IF EXISTS keel_ferretdb_gin_twins;
CREATE EVENT TRIGGER keel_ferretdb_gin_twins ON ddl_command_end
  WHEN TAG IN ('CREATE INDEX') EXECUTE FUNCTION keel_ferretdb_gin_twins();

-- The indexes FerretDB made before this file was applied; and twins an earlier version of this
-- file made with a pending list: switched off and merged.
DO $$
DECLARE
  existing record;
BEGIN
  FOR existing IN SELECT i.indexrelid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                   JOIN pg_am am ON am.oid = c.relam WHERE am.amname = 'btree' LOOP
    PERFORM keel_ferretdb_gin_twins_of(existing.indexrelid);
  END LOOP;
  FOR existing IN SELECT c.oid, ns.nspname, c.relname FROM pg_class c
                   JOIN pg_am am ON am.oid = c.relam JOIN pg_namespace ns ON ns.oid = c.relnamespace
                   WHERE am.amname = 'gin' AND c.relname ~ '_gin[0-9]*$'
                     AND NOT coalesce(c.reloptions @> '{fastupdate=off}', false) LOOP
    EXECUTE format('ALTER INDEX %I.%I SET (fastupdate = off)', existing.nspname, existing.relname);
    PERFORM gin_clean_pending_list(existing.oid::regclass);
  END LOOP;
END $$;

-- FerretDB's queries planned with their values, every time (see the top of this file).
DO $$
BEGIN
  EXECUTE format('ALTER DATABASE %I SET plan_cache_mode = force_custom_plan', current_database());
END $$;
