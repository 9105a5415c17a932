import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/kernel/errors.js';
import { ALLOWED_FUNCTIONS, ALLOWED_TYPES, PG_FUNCTIONS } from '../../src/resources/data/pg/functions.js';
import { admitPgSql, type PgAdmission } from '../../src/resources/data/pg/subset.js';
import { SYSTEM_COLUMNS } from '../../src/resources/data/schema.js';

// The Postgres provider's parser layer alone, with no database: what it admits (and the tables it
// says are read and written), and every hostile statement of issue 20's table refused by the parser
// with the right status and a message naming what was refused. The role's privileges are the second
// layer and are tested with a real server elsewhere.

const TABLES: ReadonlySet<string> = new Set(['orders', 'notes', 'items']);
type Mode = 'read' | 'write';

/** The highest $n in `sql`, which is what a well-formed request sends that many params for. */
const paramsOf = (sql: string): number => Math.max(0, ...[...sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));

/** The admission, less the text to run (the statement as sent, but for `?` placeholders: see 'parameters'). */
const admit = async (sql: string, mode: Mode = 'read', params = paramsOf(sql), tables = TABLES): Promise<Omit<PgAdmission, 'sql'>> => {
  const { sql: text, ...rest } = await admitPgSql(sql, mode, tables, params);
  if (!sql.includes('?')) expect(text).toBe(sql);
  return rest;
};

async function refusal(p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error('expected a refusal, got an admission');
}

/** [what, sql, mode, status, message pattern] */
type Hostile = [string, string, Mode, 400 | 403 | 404, RegExp];

// Issue 20's hostile table, every row, each by the parser alone.
const HOSTILE: Hostile[] = [
  ['COPY … TO a file', "COPY orders TO '/tmp/x'", 'write', 400, /^COPY is not in the subset/],
  ['COPY … FROM a file', "COPY orders FROM '/etc/passwd'", 'write', 400, /^COPY is not in the subset/],
  ['COPY … TO PROGRAM', "COPY (SELECT 1) TO PROGRAM 'id'", 'read', 400, /^COPY is not in the subset/],
  ['COPY … FROM PROGRAM', "COPY orders FROM PROGRAM 'curl x'", 'write', 400, /^COPY is not in the subset/],
  ['pg_read_file', "SELECT pg_read_file('/etc/passwd')", 'read', 403, /function pg_read_file\(\) is not available/],
  ['pg_read_file, qualified', "SELECT pg_catalog.pg_read_file('/etc/passwd')", 'read', 403, /function pg_catalog\.pg_read_file\(\) is not available/],
  ['pg_ls_dir in FROM', "SELECT * FROM pg_ls_dir('.')", 'read', 403, /function pg_ls_dir\(\)/],
  ['lo_import', "SELECT lo_import('/etc/passwd')", 'read', 403, /function lo_import\(\)/],
  ['lo_export', "SELECT lo_export(1, '/tmp/x')", 'read', 403, /function lo_export\(\)/],
  ['dblink', "SELECT * FROM dblink('dbname=x', 'SELECT 1') AS t(a int)", 'read', 403, /function dblink\(\)/],
  ['dblink_exec', "SELECT dblink_exec('dbname=x', 'DROP TABLE y')", 'read', 403, /function dblink_exec\(\)/],
  ['postgres_fdw: CREATE EXTENSION', 'CREATE EXTENSION postgres_fdw', 'write', 400, /^CREATE EXTENSION is not in the subset/],
  ['postgres_fdw: CREATE SERVER', 'CREATE SERVER s FOREIGN DATA WRAPPER postgres_fdw', 'write', 400, /^CREATE SERVER is not in the subset/],
  ['postgres_fdw: IMPORT FOREIGN SCHEMA', 'IMPORT FOREIGN SCHEMA public FROM SERVER s INTO x', 'write', 400, /^IMPORT FOREIGN SCHEMA is not/],
  ['SET ROLE', 'SET ROLE postgres', 'read', 400, /^SET role is not in the subset/],
  ['RESET ROLE', 'RESET ROLE', 'read', 400, /^RESET role is not in the subset/],
  ['SET SESSION AUTHORIZATION', 'SET SESSION AUTHORIZATION postgres', 'write', 400, /^SET session_authorization is not in the subset/],
  ['SET search_path', 'SET search_path = public', 'read', 400, /^SET search_path is not in the subset/],
  ['SET LOCAL search_path', 'SET LOCAL search_path TO pg_catalog', 'write', 400, /^SET search_path is not in the subset/],
  ['current_setting() by attribute notation', "SELECT ('search_path').current_setting", 'read', 403, /^\(…\)\.current_setting is refused/],
  ['set_config()', "SELECT set_config('search_path', 'public', true)", 'read', 403, /function set_config\(\)/],
  ['LISTEN', 'LISTEN chan', 'read', 400, /^LISTEN is not in the subset/],
  ['NOTIFY', "NOTIFY chan, 'x'", 'write', 400, /^NOTIFY is not in the subset/],
  ['pg_notify()', "SELECT pg_notify('chan', 'x')", 'read', 403, /function pg_notify\(\)/],
  // pg_sleep itself is admitted: statement_timeout ends it (503, nothing kept; data-postgres.test.ts).
  ['pg_sleep_until', "SELECT pg_sleep_until('2999-01-01')", 'read', 403, /function pg_sleep_until\(\)/],
  ['pg_read_file by attribute notation', "SELECT ('/etc/passwd').pg_read_file", 'read', 403, /^\(…\)\.pg_read_file is refused/],
  ['pg_terminate_backend by attribute notation', 'SELECT (qty).pg_terminate_backend FROM orders', 'read', 403, /^\(…\)\.pg_terminate_backend is refused/],
  ['a function on a whole row by attribute notation', 'SELECT o.pg_column_size FROM orders o', 'read', 403, /^o\.pg_column_size is the call pg_column_size\(o\)/],
  ['a function on a whole row, through the schema', 'SELECT app.orders.pg_typeof FROM orders', 'read', 403, /^app\.orders\.pg_typeof names a schema/],
  ['pg_terminate_backend in a write', 'UPDATE orders SET qty = 1 WHERE pg_terminate_backend(1) IS NULL', 'write', 403, /function pg_terminate_backend\(\)/],
  ['pg_terminate_backend', 'SELECT pg_terminate_backend(1)', 'read', 403, /function pg_terminate_backend\(\)/],
  ['pg_cancel_backend', 'SELECT pg_cancel_backend(pid) FROM orders', 'read', 403, /function pg_cancel_backend\(\)/],
  ['DO block', 'DO $$ BEGIN PERFORM 1; END $$', 'write', 400, /^DO is not in the subset/],
  ['CREATE FUNCTION', "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1'", 'write', 400, /^CREATE FUNCTION is not in the subset/],
  ['PREPARE', 'PREPARE p AS SELECT 1', 'read', 400, /^PREPARE is not in the subset/],
  ['EXECUTE', 'EXECUTE p', 'read', 400, /^EXECUTE is not in the subset/],
  ['pg_advisory_lock', 'SELECT pg_advisory_lock(1)', 'read', 403, /function pg_advisory_lock\(\)/],
  ['pg_try_advisory_xact_lock', 'SELECT pg_try_advisory_xact_lock(1)', 'read', 403, /function pg_try_advisory_xact_lock\(\)/],
  ['pg_catalog, qualified', "SELECT relname FROM pg_catalog.pg_class WHERE relnamespace <> 'x'::regnamespace", 'read', 403, /^pg_catalog\.pg_class is a system catalog/],
  ['pg_catalog, unqualified', 'SELECT tablename FROM pg_tables', 'read', 403, /^pg_tables is a system catalog name/],
  ['information_schema', "SELECT * FROM information_schema.columns WHERE table_schema <> 'x'", 'read', 403, /^information_schema\.columns is a system catalog/],
  ['pg_catalog in a subquery', 'SELECT * FROM orders WHERE item IN (SELECT nspname FROM pg_namespace)', 'read', 403, /^pg_namespace is a system catalog name/],
  ['pg_stat_activity', 'SELECT query FROM pg_stat_activity', 'read', 403, /^pg_stat_activity is a system catalog name/],
  ['pg_stat_activity, qualified', 'SELECT query FROM pg_catalog.pg_stat_activity', 'read', 403, /^pg_catalog\.pg_stat_activity is a system catalog/],
  ['another schema', 'SELECT * FROM app_other.orders', 'read', 403, /^app_other\.orders names a schema/],
  ['another schema, as a write target', "INSERT INTO app_other.orders (item) VALUES ('x')", 'write', 403, /^app_other\.orders names a schema/],
  ['another database', 'SELECT * FROM otherdb.public.orders', 'read', 403, /^otherdb\.public\.orders names another database/],
  ['two statements', 'SELECT 1; SELECT 2', 'read', 400, /^Send one statement per request \(this SQL has 2\)/],
  ['a write in read mode: INSERT', "INSERT INTO orders (item) VALUES ('x')", 'read', 403, /^INSERT writes; send it with mode "write"/],
  ['a write in read mode: UPDATE', 'UPDATE orders SET qty = 1', 'read', 403, /^UPDATE writes/],
  ['a write in read mode: DELETE', 'DELETE FROM orders', 'read', 403, /^DELETE writes/],
  ['a write in read mode: via a CTE', 'WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d', 'read', 403, /^The WITH query d is a DELETE: read mode runs no writes/],
  ['a write in read mode: via a nested CTE', 'WITH a AS (SELECT 1), b AS (INSERT INTO orders (item) VALUES (1) RETURNING *) SELECT * FROM a', 'read', 403, /^The WITH query b is an INSERT/],
  ['a write in read mode: SELECT … FOR UPDATE', 'SELECT * FROM orders FOR UPDATE', 'read', 403, /^FOR UPDATE locks rows, which read mode may not do/],
  ['a write in read mode: FOR SHARE in a subquery', 'SELECT * FROM (SELECT * FROM orders FOR SHARE) s', 'read', 403, /^FOR SHARE locks rows/],
  ['a write in read mode: FOR NO KEY UPDATE', 'SELECT * FROM orders FOR NO KEY UPDATE SKIP LOCKED', 'read', 403, /^FOR NO KEY UPDATE locks rows/],
  ['a write in read mode: via a volatile function (nextval)', "SELECT nextval('orders_seq')", 'read', 403, /function nextval\(\)/],
  ['a write in read mode: via a volatile function (setval)', "SELECT setval('orders_seq', 1)", 'read', 403, /function setval\(\)/],
  ['a write in read mode: via a volatile function (lo_create)', 'SELECT lo_create(0)', 'read', 403, /function lo_create\(\)/],
];

describe('the hostile table, refused by the parser', () => {
  it.each(HOSTILE)('%s', async (_what, sql, mode, status, message) => {
    const err = await refusal(admit(sql, mode));
    expect(err.status).toBe(status);
    expect(err.code).toBe(status === 400 ? 'data_invalid' : status === 403 ? 'data_forbidden' : 'data_not_found');
    expect(err.message).toMatch(message);
    expect(err.details).toEqual([{ path: 'body.sql', message: err.message }]);
  });
});

/** Writes to each system column, in every place a write names a column, under every spelling. */
function systemColumnWrites(): [string, string][] {
  const out: [string, string][] = [];
  for (const col of SYSTEM_COLUMNS) {
    const unicode = `U&"${[...col].map((c) => `\\${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"`;
    const unicodeEscape = `U&"!${[...col].map((c) => c.charCodeAt(0).toString(16).padStart(4, '0')).join('!')}" UESCAPE '!'`;
    const spellings = [col, col.toUpperCase(), `"${col}"`, `"${col.toUpperCase()}"`, `${col[0]}${col.slice(1, 3).toUpperCase()}${col.slice(3)}`, unicode, unicodeEscape];
    for (const s of spellings) {
      out.push(
        [col, `INSERT INTO orders (item, ${s}) VALUES ('x', NULL)`],
        [col, `INSERT INTO orders AS o (${s}) SELECT ${s} FROM notes`],
        [col, `UPDATE orders SET ${s} = NULL`],
        [col, `UPDATE orders AS o SET o.${s} = NULL`],
        [col, `UPDATE orders SET (item, ${s}) = ('x', NULL)`],
        [col, `UPDATE orders SET (item, ${s}) = (SELECT item, ${s} FROM notes LIMIT 1)`],
        [col, `INSERT INTO orders (item) VALUES ('x') ON CONFLICT (item) DO UPDATE SET ${s} = excluded.${s}`],
        [col, `WITH w AS (UPDATE orders SET ${s} = NULL RETURNING 1) SELECT * FROM w`],
        [col, `WITH w AS (INSERT INTO notes (${s}) VALUES (NULL) RETURNING 1) DELETE FROM orders WHERE item IN (SELECT 1 FROM w)`],
      );
    }
  }
  return out;
}

describe('writes to the system columns, under every spelling', () => {
  it.each(systemColumnWrites())('%s: %s', async (col, sql) => {
    const err = await refusal(admit(sql, 'write'));
    expect(err.status).toBe(403);
    expect(err.code).toBe('data_forbidden');
    expect(err.message).toMatch(new RegExp(`^${col} is a system column written only by the server`));
  });

  it('an INSERT without a column list is refused (it would write the system columns by position)', async () => {
    for (const sql of ["INSERT INTO orders VALUES ('x', 1)", 'INSERT INTO orders SELECT * FROM notes']) {
      const err = await refusal(admit(sql, 'write'));
      expect(err.status).toBe(400);
      expect(err.message).toMatch(/^Name the columns of an INSERT/);
    }
    await expect(admit('INSERT INTO orders DEFAULT VALUES RETURNING _id', 'write')).resolves.toMatchObject({ kind: 'insert', writes: ['orders'] });
  });

  it('reading the system columns is fine, in every place', async () => {
    await expect(admit('SELECT _id, _version, "_created_at" FROM orders WHERE _updated_at > now() ORDER BY _id')).resolves.toMatchObject({ reads: ['orders'] });
    await expect(admit('UPDATE orders SET qty = _version + 1 WHERE _id = $1 AND _version = $2 RETURNING _id, _version', 'write')).resolves.toMatchObject({
      kind: 'update',
      params: 2,
    });
    await expect(admit("INSERT INTO orders (item) VALUES ('x') ON CONFLICT (_id) DO UPDATE SET item = orders._id::text", 'write')).resolves.toMatchObject({ kind: 'insert' });
  });
});

/** [sql, mode, kind, reads, writes] */
type Allowed = [string, Mode, PgAdmission['kind'], string[], string[]];

const ALLOWED: Allowed[] = [
  ['SELECT 1', 'read', 'select', [], []],
  ['SELECT * FROM orders', 'read', 'select', ['orders'], []],
  ['TABLE orders', 'read', 'select', ['orders'], []],
  ["VALUES (1, 'a'), (2, 'b')", 'read', 'select', [], []],
  ['SELECT o.item, n.body FROM orders o JOIN notes n ON n.body = o.item LEFT JOIN items i USING (item) WHERE o.qty > $1', 'read', 'select', ['orders', 'notes', 'items'], []],
  ['SELECT * FROM orders NATURAL FULL JOIN notes CROSS JOIN items', 'read', 'select', ['orders', 'notes', 'items'], []],
  ['SELECT * FROM orders o, LATERAL (SELECT * FROM notes n WHERE n.body = o.item LIMIT 1) x', 'read', 'select', ['orders', 'notes'], []],
  ['WITH big AS (SELECT * FROM orders WHERE qty > 10), small AS MATERIALIZED (SELECT * FROM big) SELECT * FROM small', 'read', 'select', ['orders'], []],
  ['WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 10) SEARCH DEPTH FIRST BY n SET ord CYCLE n SET is_cycle USING path SELECT * FROM r', 'read', 'select', [], []],
  // A WITH query shadows a table of the same name, in its statement and the subqueries in it.
  ['WITH orders AS (SELECT * FROM notes) SELECT * FROM orders', 'read', 'select', ['notes'], []],
  ['SELECT (SELECT count(*) FROM (WITH x AS (SELECT 1) SELECT * FROM x) s) FROM items', 'read', 'select', ['items'], []],
  ['SELECT * FROM orders WHERE EXISTS (SELECT 1 FROM notes WHERE body = item) AND qty IN (SELECT qty FROM items) AND qty > ALL (SELECT 1)', 'read', 'select', ['orders', 'notes', 'items'], []],
  ['SELECT item FROM orders UNION SELECT body FROM notes INTERSECT SELECT item FROM items EXCEPT ALL SELECT 1::text', 'read', 'select', ['orders', 'notes', 'items'], []],
  [
    "SELECT item, count(*), sum(qty) FILTER (WHERE qty > 0), avg(qty), string_agg(DISTINCT item, ',' ORDER BY item), percentile_cont(0.5) WITHIN GROUP (ORDER BY qty), array_agg(qty), jsonb_agg(orders) FROM orders GROUP BY ROLLUP (item) HAVING count(*) > 1",
    'read',
    'select',
    ['orders'],
    [],
  ],
  [
    'SELECT item, row_number() OVER w, rank() OVER (PARTITION BY item ORDER BY qty DESC ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), lag(qty, 1) OVER w FROM orders WINDOW w AS (ORDER BY qty)',
    'read',
    'select',
    ['orders'],
    [],
  ],
  ['SELECT DISTINCT ON (item) item, qty FROM orders ORDER BY item, qty DESC NULLS LAST OFFSET 5 FETCH FIRST 10 ROWS WITH TIES', 'read', 'select', ['orders'], []],
  ["SELECT jsonb_build_object('a', 1) -> 'a', data->>'x', jsonb_path_query_first(data, '$.a'), to_jsonb(o) FROM orders o WHERE data @> '{\"a\": 1}'::jsonb", 'read', 'select', ['orders'], []],
  [
    "SELECT g.i, e.value FROM generate_series(1, 3) WITH ORDINALITY AS g(i, n), jsonb_array_elements('[1]') e, ROWS FROM (unnest(ARRAY[1, 2]), unnest(ARRAY['a'])) AS r(a, b), jsonb_to_record('{}') AS t(x int4, y text[])",
    'read',
    'select',
    [],
    [],
  ],
  [
    "SELECT CASE WHEN qty > 1 THEN 'many' ELSE 'one' END, COALESCE(item, ''), NULLIF(qty, 0), GREATEST(1, 2), LEAST(1, 2), ROW(1, 2), (ARRAY[1, 2, 3])[1:2], item IS DISTINCT FROM 'x', qty BETWEEN 1 AND 2, item ILIKE 'a%', item SIMILAR TO 'a' ESCAPE '!', item LIKE 'a!%' ESCAPE '!', qty IS NULL, (qty > 1) IS TRUE FROM orders",
    'read',
    'select',
    ['orders'],
    [],
  ],
  [
    "SELECT now(), pg_catalog.now(), CURRENT_TIMESTAMP, CURRENT_DATE, LOCALTIMESTAMP(3), EXTRACT(year FROM now()), date_trunc('day', now()) AT TIME ZONE 'UTC', now() AT LOCAL, INTERVAL '1 day', DATE '2026-01-01', '1'::int, CAST('1' AS bigint), 1::double precision, 'x'::varchar(10), now()::timestamp with time zone, '{}'::jsonb, gen_random_uuid(), random(), substring('abc' FROM 2), trim(both 'x' FROM 'xax'), position('a' IN 'cat'), overlay('abc' PLACING 'x' FROM 1), 'a' COLLATE \"C\", (now(), now()) OVERLAPS (now(), now())",
    'read',
    'select',
    [],
    [],
  ],
  // Attribute notation with an allowed function is that function's call.
  ['SELECT (o.item).upper, o.to_jsonb, (o).*, o.* FROM orders o', 'read', 'select', ['orders'], []],
  ["SELECT to_tsvector('english', item) @@ websearch_to_tsquery('english', $1) FROM orders", 'read', 'select', ['orders'], []],
  ['SELECT 1 OPERATOR(pg_catalog.+) 1 ORDER BY 1 USING OPERATOR(pg_catalog.<)', 'read', 'select', [], []],
  // Write mode.
  ["INSERT INTO orders (item, qty) VALUES ($1, $2), ('b', DEFAULT) RETURNING *", 'write', 'insert', [], ['orders']],
  [
    'INSERT INTO orders AS o (item, qty) VALUES ($1, $2) ON CONFLICT (item) WHERE qty > 0 DO UPDATE SET qty = o.qty + excluded.qty WHERE o.qty < 100 RETURNING _id, _version',
    'write',
    'insert',
    [],
    ['orders'],
  ],
  ["INSERT INTO orders (item) VALUES ('x') ON CONFLICT ON CONSTRAINT orders_item_key DO NOTHING", 'write', 'insert', [], ['orders']],
  ['INSERT INTO orders (item, qty) SELECT body, 1 FROM notes WHERE body IS NOT NULL', 'write', 'insert', ['notes'], ['orders']],
  ['UPDATE orders o SET qty = n.qty, (item) = (SELECT body FROM notes LIMIT 1) FROM items n WHERE o.item = n.item RETURNING o.*', 'write', 'update', ['notes', 'items'], ['orders']],
  ['DELETE FROM orders USING notes WHERE orders.item = notes.body RETURNING orders._id', 'write', 'delete', ['notes'], ['orders']],
  ['DELETE FROM ONLY orders WHERE qty IN (SELECT qty FROM items FOR UPDATE)', 'write', 'delete', ['items'], ['orders']],
  ['WITH moved AS (DELETE FROM orders WHERE qty = 0 RETURNING item) INSERT INTO notes (body) SELECT item FROM moved', 'write', 'insert', [], ['notes', 'orders']],
  ['WITH d AS (DELETE FROM orders RETURNING *) SELECT count(*) FROM d', 'write', 'select', [], ['orders']],
  // A write target is always a table, even when a WITH query has its name.
  ['WITH orders AS (SELECT * FROM notes) UPDATE orders SET qty = 1 WHERE item IN (SELECT body FROM orders)', 'write', 'update', ['notes'], ['orders']],
  // A table both read and written is listed as written.
  ['UPDATE orders SET qty = (SELECT max(qty) FROM orders) + 1', 'write', 'update', [], ['orders']],
];

describe('the admitted subset', () => {
  it.each(ALLOWED)('%s', async (sql, mode, kind, reads, writes) => {
    expect(await admit(sql, mode)).toEqual({ kind, reads, writes, params: paramsOf(sql) });
  });
});

describe('what is not in the subset', () => {
  const cases: [string, string, Mode, 400 | 403 | 404, RegExp][] = [
    ['SELECT … INTO', 'SELECT * INTO copy FROM orders', 'read', 400, /^SELECT … INTO creates a table/],
    ['TABLESAMPLE', 'SELECT * FROM orders TABLESAMPLE SYSTEM (10)', 'read', 400, /^TABLESAMPLE is not in the subset/],
    ['MERGE', 'MERGE INTO orders USING notes ON true WHEN MATCHED THEN DELETE', 'write', 400, /^MERGE is not in the subset/],
    ['WHERE CURRENT OF', 'DELETE FROM orders WHERE CURRENT OF c', 'write', 400, /^WHERE CURRENT OF is not in the subset/],
    ['OVERRIDING', "INSERT INTO orders (item) OVERRIDING USER VALUE VALUES ('x')", 'write', 400, /^INSERT … OVERRIDING is not/],
    ['XML', "SELECT xmlparse(document '<a/>')", 'read', 400, /^An XML expression is not in the subset/],
    ['SQL/JSON', "SELECT JSON_OBJECT('a': 1)", 'read', 400, /^JSON_OBJECT\(\) is not in the subset/],
    ['JSON_TABLE', "SELECT * FROM JSON_TABLE('[]', '$[*]' COLUMNS (a int PATH '$'))", 'read', 400, /^JSON_TABLE is not in the subset/],
    ['EXPLAIN', 'EXPLAIN ANALYZE DELETE FROM orders', 'write', 400, /^EXPLAIN is not in the subset/],
    ['DDL', 'CREATE TABLE x (a int)', 'write', 400, /^CREATE TABLE is not in the subset .*migrations/],
    ['DROP', 'DROP TABLE orders', 'write', 400, /^DROP is not in the subset .*migrations/],
    ['TRUNCATE', 'TRUNCATE orders', 'write', 400, /^TRUNCATE is not in the subset/],
    ['a transaction', 'BEGIN', 'write', 400, /^BEGIN is not in the subset/],
    ['LOCK', 'LOCK TABLE orders', 'write', 400, /^LOCK is not in the subset/],
    ['a read in write mode', 'SELECT * FROM orders', 'write', 400, /^The statement does not write; send it with mode "read"/],
    ['FOR UPDATE alone in write mode', 'SELECT * FROM orders FOR UPDATE', 'write', 400, /^The statement does not write/],
    ['a cast outside the list', 'SELECT 1::money', 'read', 400, /^The type money is not in the subset/],
    ["a cast to a table's row type", 'SELECT ROW(1)::orders', 'read', 400, /^The type orders is not in the subset/],
    ['a column definition outside the list', "SELECT * FROM jsonb_to_record('{}') AS t(a oid)", 'read', 400, /^The type oid is not in the subset/],
    ['a cast to regclass', "SELECT 'pg_authid'::regclass", 'read', 403, /^A cast to regclass is refused/],
    ['a cast to regclass, quoted', `SELECT 'pg_authid'::"regclass"::text`, 'read', 403, /^A cast to regclass is refused/],
    ['a cast to regproc[]', "SELECT ARRAY['now']::pg_catalog.regproc[]", 'read', 403, /^A cast to regproc is refused/],
    ['a typed literal of regnamespace', "SELECT regnamespace 'public'", 'read', 403, /^A cast to regnamespace is refused/],
    ['a type of another schema', 'SELECT 1::public.mytype', 'read', 403, /^The type public\.mytype is not available/],
    ['a function of another schema', 'SELECT public.lower(item) FROM orders', 'read', 403, /^The function public\.lower\(\) is not available: a function may be qualified only by pg_catalog/],
    ['current_setting', "SELECT current_setting('search_path')", 'read', 403, /function current_setting\(\)/],
    ['version', 'SELECT version()', 'read', 403, /function version\(\)/],
    ['to_regclass', "SELECT to_regclass('pg_authid')", 'read', 403, /function to_regclass\(\)/],
    ['query_to_xml', "SELECT query_to_xml('SELECT * FROM pg_authid', true, true, '')", 'read', 403, /function query_to_xml\(\)/],
    ['CURRENT_USER', 'SELECT CURRENT_USER', 'read', 403, /^CURRENT_USER is not available/],
    ['SESSION_USER', 'SELECT SESSION_USER', 'read', 403, /^SESSION_USER is not available/],
    ['CURRENT_SCHEMA', 'SELECT CURRENT_SCHEMA', 'read', 403, /^CURRENT_SCHEMA is not available/],
    ['SYSTEM_USER', 'SELECT SYSTEM_USER', 'read', 403, /function pg_catalog\.system_user\(\)/],
    ['a field that is not an allowed function', 'SELECT (r).f1 FROM (SELECT ROW(1, 2) AS r) s', 'read', 403, /^\(…\)\.f1 is refused/],
    ['a nextval by attribute notation', "SELECT ('orders_seq').nextval", 'read', 403, /^\(…\)\.nextval is refused/],
    [
      'a whole-row function by attribute notation in RETURNING',
      "INSERT INTO orders (item) VALUES ('x') RETURNING orders.pg_typeof",
      'write',
      403,
      /^orders\.pg_typeof is the call pg_typeof\(orders\)/,
    ],
    ['an operator of another schema', 'SELECT 1 OPERATOR(public.+) 1', 'read', 403, /^The operator public\.\+ is not available/],
    ['a collation of another schema', "SELECT 'a' COLLATE public.mine", 'read', 403, /^The collation public\.mine is not available/],
    ["the database's own schema, named", 'SELECT * FROM app_db.orders', 'read', 403, /^app_db\.orders names a schema/],
    ['a pg_* name that is a table of the database', 'SELECT * FROM pg_orders', 'read', 403, /^pg_orders is a system catalog name/],
    ['a WITH query out of its scope', 'SELECT (WITH s AS (SELECT 1) SELECT 1), * FROM s', 'read', 404, /^The table s is not in this database/],
    ['a WITH query before its definition', 'WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a', 'read', 404, /^The table b is not in this database/],
    ['a catalog hidden as an out-of-scope WITH name', 'SELECT * FROM (WITH pg_authid AS (SELECT 1) SELECT * FROM pg_authid) s, pg_authid', 'read', 403, /^pg_authid is a system catalog name/],
    ['FOR UPDATE OF a qualified name', 'UPDATE orders SET qty = 1 WHERE qty IN (SELECT qty FROM items FOR UPDATE OF public.items)', 'write', 403, /^public\.items: FOR UPDATE OF names/],
    ['an unknown table', 'SELECT * FROM nope', 'read', 404, /^The table nope is not in this database\.$/],
    ['a quoted name is not the folded one', 'SELECT * FROM "Orders"', 'read', 404, /^The table Orders is not in this database/],
    ['an unknown write target', 'INSERT INTO nope (a) VALUES (1)', 'write', 404, /^The table nope is not in this database/],
  ];
  it.each(cases)('%s', async (_what, sql, mode, status, message) => {
    const err = await refusal(admit(sql, mode, paramsOf(sql), new Set([...TABLES, 'pg_orders'])));
    expect([err.status, err.message]).toEqual([status, expect.stringMatching(message)]);
  });
});

describe('statements, text and parse errors', () => {
  it('two statements, however they are separated, are refused', async () => {
    for (const [sql, mode] of [
      ['SELECT 1;SELECT 2', 'read'],
      ['SELECT 1;;SELECT 2;', 'read'],
      ['SELECT 1; -- comment\nDELETE FROM orders', 'read'],
      ["SELECT 1 /* ; */; SELECT ';'", 'read'],
      ["INSERT INTO orders (item) VALUES ('a'); DELETE FROM orders", 'write'],
      ['SELECT 1; SELECT 2; SELECT 3', 'read'],
    ] as [string, Mode][]) {
      const err = await refusal(admit(sql, mode));
      expect([err.status, err.message]).toEqual([400, expect.stringMatching(/^Send one statement per request/)]);
    }
    // One statement with a trailing semicolon, or a semicolon inside a string, is one statement.
    await expect(admit("SELECT ';' FROM orders;")).resolves.toMatchObject({ reads: ['orders'] });
  });

  it('empty, whitespace-only and comment-only SQL is refused', async () => {
    for (const sql of ['', ' ', '\n\t\r\f\v', ';', ' ; ; ', '-- nothing', '/* nothing */', '/* a */ -- b\n']) {
      const err = await refusal(admit(sql));
      expect([err.status, err.code, err.message]).toEqual([400, 'data_invalid', 'The SQL has no statement.']);
    }
  });

  it('a NUL character is refused (the C parser would stop reading there)', async () => {
    const err = await refusal(admit('SELECT 1\u0000; DELETE FROM orders'));
    expect([err.status, err.message]).toEqual([400, 'The SQL contains a NUL character.']);
  });

  it("syntax errors are 400 with the parser's message and the character it points at", async () => {
    const cases: [string, string][] = [
      ['SELEC 1', 'syntax error at or near "SELEC" (at character 1).'],
      ['SELECT * FORM orders', 'syntax error at or near "FORM" (at character 10).'],
      ["SELECT 'ééé' FROM (", 'syntax error at end of input (at character 20).'],
      ["SELECT 'unterminated", 'unterminated quoted string at or near "\'unterminated" (at character 8).'],
      ['SELECT "a', 'unterminated quoted identifier at or near ""a" (at character 8).'],
      ['\u00a0SELECT 1', 'syntax error at or near "\u00a0SELECT" (at character 1).'],
    ];
    for (const [sql, message] of cases) {
      const err = await refusal(admit(sql));
      expect([err.status, err.code, err.message]).toEqual([400, 'data_invalid', message]);
      expect(err.details).toEqual([{ path: 'body.sql', message }]);
    }
  });

  it('deep nesting is 400, never a stack overflow, and the parser keeps working after it', async () => {
    const plus = (n: number) => `SELECT ${Array(n).fill('1').join(' + ')}`;
    const subqueries = (n: number) => `SELECT ${'(SELECT '.repeat(n)}1${')'.repeat(n)}`;
    await expect(admit(plus(300))).resolves.toMatchObject({ kind: 'select' });
    for (const sql of [plus(1500), plus(20_000), plus(60_000), subqueries(400), subqueries(3000), `SELECT 1${'::int4'.repeat(2000)}`, Array(3000).fill('SELECT 1').join(' UNION ')]) {
      const err = await refusal(admit(sql));
      expect([err.status, err.code]).toEqual([400, 'data_invalid']);
      expect(err.message).toMatch(/nested too deeply/);
    }
    // Parentheses alone past the grammar's own stack: the parser's answer.
    const err = await refusal(admit(`SELECT ${'('.repeat(20_000)}1${')'.repeat(20_000)}`));
    expect([err.status, err.message]).toEqual([400, expect.stringMatching(/^memory exhausted at or near "\("/)]);
    await expect(admit('SELECT count(*) FROM orders WHERE qty > $1')).resolves.toEqual({ kind: 'select', reads: ['orders'], writes: [], params: 1 });
  });

  it('a 100 KB statement is parsed and admitted', async () => {
    const rows: string[] = [];
    while (rows.join(', ').length < 100_000) rows.push(`(${rows.length}, 'item number ${rows.length}')`);
    const sql = `INSERT INTO orders (qty, item) VALUES ${rows.join(', ')} ON CONFLICT (qty) DO UPDATE SET item = excluded.item RETURNING _id`;
    expect(sql.length).toBeGreaterThan(100_000);
    expect(await admit(sql, 'write')).toEqual({ kind: 'insert', reads: [], writes: ['orders'], params: 0 });
    const read = `SELECT * FROM orders WHERE ${Array.from({ length: 6000 }, (_, i) => `qty = ${i}`).join(' OR ')} OR item IN (SELECT body FROM notes)`;
    expect(read.length).toBeGreaterThan(70_000);
    expect(await admit(read)).toEqual({ kind: 'select', reads: ['orders', 'notes'], writes: [], params: 0 });
  });
});

describe('parameters', () => {
  it('$1 … $n bind, and the number of params sent must be n', async () => {
    expect(await admit('SELECT * FROM orders WHERE qty > $1 AND item = $2 OR qty = $1', 'read', 2)).toMatchObject({ params: 2 });
    expect(await admit('SELECT \'$1\', "$2" FROM (SELECT 1 AS "$2") s', 'read', 0)).toMatchObject({ params: 0 });
    const cases: [string, number, string][] = [
      ['SELECT $1, $2', 1, 'The statement uses $1 to $2 but 1 param was sent; send exactly 2.'],
      ['SELECT $1', 3, 'The statement uses $1 to $1 but 3 params were sent; send exactly 1.'],
      ['SELECT 1', 2, 'The statement uses no parameter but 2 params were sent; send exactly 0.'],
      ['SELECT $1, $3', 3, 'The statement uses $3 but not $2: number the parameters $1 to $3 without gaps.'],
      ['SELECT $2', 2, 'The statement uses $2 but not $1: number the parameters $1 to $2 without gaps.'],
      ['SELECT $70000', 70_000, 'The statement uses $70000; a statement takes at most 65535 parameters.'],
    ];
    for (const [sql, count, message] of cases) {
      const err = await refusal(admit(sql, 'read', count));
      expect([err.status, err.code, err.message, err.details]).toEqual([400, 'data_invalid', message, [{ path: 'body.params', message }]]);
    }
  });
});

describe('? placeholders (as on SQLite)', () => {
  const run = async (sql: string, params: number, mode: Mode = 'read') => (await admitPgSql(sql, mode, TABLES, params)).sql;

  it('are numbered $1 … $n where the parser reads them as parameters, and nowhere else', async () => {
    expect(await run('SELECT * FROM orders WHERE qty > ?', 1)).toBe('SELECT * FROM orders WHERE qty > $1');
    expect(await run('SELECT * FROM orders WHERE qty=? AND item IN (?,?) LIMIT ?', 4)).toBe('SELECT * FROM orders WHERE qty=$1 AND item IN ($2,$3) LIMIT $4');
    // Not in a string, a quoted name, a comment, a dollar-quoted body or an escape string.
    const tricky = `SELECT '?' AS "a?", $$ ? $$ AS b, $t$?$t$ AS c, E'\\?' AS d, item -- what ?\nFROM orders /* ? */ WHERE qty = ? AND item <> '?'`;
    expect(await run(tricky, 1)).toBe(tricky.replace('qty = ?', 'qty = $1'));
    expect(await run("INSERT INTO orders (qty, item) VALUES (?, ?) RETURNING _id, '?' AS q", 2, 'write')).toBe("INSERT INTO orders (qty, item) VALUES ($1, $2) RETURNING _id, '?' AS q");
    // A placeholder before a negative number would parse as a prefix operator PostgreSQL does not have.
    expect(await run('SELECT qty FROM orders WHERE qty = ? - 1', 1)).toBe('SELECT qty FROM orders WHERE qty = $1 - 1');
    // The number of params sent must match the placeholders.
    const err = await refusal(admitPgSql('SELECT * FROM orders WHERE qty > ? AND qty < ?', 'read', TABLES, 1));
    expect(err.message).toBe('The statement uses $1 to $2 but 1 param was sent; send exactly 2.');
  });

  it("leave jsonb's ? operators alone, and name $1 when the statement cannot be read either way", async () => {
    for (const sql of ["SELECT item FROM orders WHERE item::jsonb ? 'k'", "SELECT item::jsonb ?| array['a'] FROM orders", "SELECT item::jsonb ?& array['a'] FROM orders"]) {
      expect(await run(sql, 0)).toBe(sql);
    }
    const both = await refusal(admitPgSql("SELECT item FROM orders WHERE item::jsonb ? 'k' AND qty > ?", 'read', TABLES, 1));
    expect([both.status, both.message]).toEqual([400, expect.stringMatching(/^syntax error at end of input \(at character \d+\)\. PostgreSQL numbers parameters \$1, \$2 …/)]);
    const mixed = await refusal(admitPgSql('SELECT * FROM orders WHERE qty > ? AND qty < $2', 'read', TABLES, 2));
    expect([mixed.status, mixed.message, mixed.details?.[0]?.path]).toEqual([400, 'The statement uses both ? placeholders and $n parameters: number them all $1, $2 …', 'body.sql']);
  });
});

describe('the admission cache', () => {
  it('gives the same answer the second time, and checks tables and params on every call', async () => {
    const sql = 'SELECT * FROM orders o JOIN notes n ON n.body = o.item WHERE o.qty = $1';
    const first = await admit(sql, 'read', 1);
    expect(await admit(sql, 'read', 1)).toEqual(first);
    // The caller's copy is its own.
    first.reads.push('x');
    expect((await admit(sql, 'read', 1)).reads).toEqual(['orders', 'notes']);
    // The same text in the other mode is its own entry.
    expect((await refusal(admit(sql, 'write', 1))).status).toBe(400);
    // After a migration drops a table, the cached admission answers 404.
    expect((await refusal(admit(sql, 'read', 1, new Set(['orders'])))).message).toBe('The table notes is not in this database.');
    expect((await refusal(admit(sql, 'read', 0))).message).toMatch(/^The statement uses \$1 to \$1 but 0 params were sent/);
    // Refusals are answered the same way each time, as new errors.
    const a = await refusal(admit('SELECT pg_sleep_until(now())'));
    const b = await refusal(admit('SELECT pg_sleep_until(now())'));
    expect(b).not.toBe(a);
    expect([b.status, b.message]).toEqual([a.status, a.message]);
  });

  it('answers the same text asked for at once, many times over, alike', async () => {
    const sql = 'SELECT item FROM orders WHERE qty = $1 -- at once';
    const all = await Promise.all(Array.from({ length: 50 }, () => admit(sql, 'read', 1)));
    for (const a of all) expect(a).toEqual({ kind: 'select', reads: ['orders'], writes: [], params: 1 });
  });

  it('holds many distinct statements without growing past its bound', async () => {
    for (let i = 0; i < 5000; i++) await admit(`SELECT ${i} FROM orders`);
    expect(await admit('SELECT 0 FROM orders')).toMatchObject({ reads: ['orders'] });
  });
});

describe('docs/data.md, the SQL subset on PostgreSQL', () => {
  const doc = readFileSync(new URL('../../docs/data.md', import.meta.url), 'utf8');
  const LABELS: Record<string, keyof typeof PG_FUNCTIONS> = {
    aggregate: 'aggregate',
    window: 'window',
    comparison: 'comparison',
    math: 'math',
    string: 'string',
    'text search': 'textSearch',
    'date and time': 'dateTime',
    JSON: 'json',
    array: 'array',
    UUID: 'uuid',
    delay: 'delay',
  };

  it('lists exactly the allowed functions, by kind', () => {
    const rows = Object.fromEntries(
      doc
        .split('\n')
        .map((l) => /^\| ([A-Za-z ]+) \| (`.*`) \|$/.exec(l))
        .filter((m): m is RegExpExecArray => m !== null && m[1]! in LABELS)
        .map((m) => [LABELS[m[1]!]!, [...m[2]!.matchAll(/`([a-z0-9_]+)`/g)].map((x) => x[1])]),
    );
    expect(rows).toEqual(Object.fromEntries(Object.entries(PG_FUNCTIONS).map(([k, v]) => [k, [...v]])));
    expect(new Set(Object.values(rows).flat()).size).toBe(ALLOWED_FUNCTIONS.size);
  });

  it('lists exactly the types a cast may name', () => {
    const para = /\*\*Casts\*\*[\s\S]*?qualified by `pg_catalog`: ([\s\S]*?)\. These are/.exec(doc);
    expect(para).not.toBeNull();
    expect([...para![1]!.matchAll(/`([a-z0-9_]+)`/g)].map((m) => m[1])).toEqual([...ALLOWED_TYPES]);
  });

  it('every allowed function is admitted, unqualified and qualified by pg_catalog', async () => {
    for (const name of ALLOWED_FUNCTIONS) {
      await expect(admit(`SELECT "${name}"(1)`)).resolves.toMatchObject({ kind: 'select' });
      await expect(admit(`SELECT pg_catalog."${name}"(1)`)).resolves.toMatchObject({ kind: 'select' });
    }
  });
});
