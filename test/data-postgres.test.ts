import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SHOP } from './data-fixtures.js';
import { onProvider, DATA_PROVIDERS } from './data-providers.js';
import { svc } from './cli-helpers.js';
import { eventually, startTestDaemon, type TestDaemon } from './harness.js';
import { startTestPostgres, type TestPostgres } from './pg-server.js';
import { checkData } from '../src/resources/system/doctor-state.js';
import type { ProjectConfig } from '../src/config/schema.js';

// What only the PostgreSQL provider has: isolation by the server's own privileges (each database a
// schema and a login role), start-up errors, the server going away and coming back, the time limit
// and the result bound on the server. Against the run's real server (global-setup.ts).

const url = inject('pgUrl');
const PG = DATA_PROVIDERS[1]!;
const hex = (id: string) => id.replace(/-/g, '');

/** A superuser connection to the run's server, to look at what the provider made. */
async function superuser<T>(fn: (c: pg.Client) => Promise<T>, at = url): Promise<T> {
  const c = new pg.Client({ connectionString: at });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

const code = async (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => 'ok',
    (e: { code?: string }) => e.code ?? String(e),
  );

describe.skipIf(!url)(`PostgreSQL provider${url ? '' : ` (skipped: ${inject('pgSkip')})`}`, () => {
  let d: TestDaemon;
  let shop = '';
  let other = '';
  beforeAll(async () => {
    d = await startTestDaemon({ config: onProvider(PG, { data: { statementTimeoutMs: 1000 } }) });
    shop = (await d.api('POST', '/api/v1/data', { body: { name: 'shop', schema: SHOP } })).body.data.id;
    other = (await d.api('POST', '/api/v1/data', { body: { name: 'other', schema: { tables: { secrets: { columns: { value: { type: 'text' } } } } } } })).body.data.id;
    await d.api('POST', '/api/v1/data/other/transactions', { body: { operations: [{ op: 'insert', table: 'secrets', values: { value: 'hunter2' } }] } });
    await d.api('POST', '/api/v1/data/shop/transactions', { body: { operations: [{ op: 'insert', table: 'customers', values: { email: 'a@x.io' } }] } });
  });
  afterAll(async () => {
    await d?.close();
  });

  it('each database is a schema owned by the admin, with a role of its own that has no power beyond it', async () => {
    await superuser(async (c) => {
      const role = (await c.query('SELECT * FROM pg_roles WHERE rolname = $1', [`svc_${hex(shop)}`])).rows[0];
      expect(role).toMatchObject({ rolsuper: false, rolinherit: false, rolcreaterole: false, rolcreatedb: false, rolcanlogin: true, rolreplication: false, rolbypassrls: false, rolconnlimit: 5 });
      const owner = (await c.query('SELECT nspname, pg_get_userbyid(nspowner) AS owner FROM pg_namespace WHERE nspname LIKE $1 ORDER BY 1', [`svc_${hex(shop)}%`])).rows;
      expect(owner).toEqual([
        { nspname: `svc_${hex(shop)}`, owner: 'postgres' },
        { nspname: `svc_${hex(shop)}_m`, owner: 'postgres' },
      ]);
      const r = `svc_${hex(shop)}`;
      const can = (
        await c.query(
          `SELECT has_schema_privilege($1, 'svc_${hex(other)}', 'USAGE') AS other_schema, has_schema_privilege($1, 'public', 'CREATE') AS public_create,
                pg_has_role($1, 'pg_read_server_files', 'MEMBER') AS read_files, pg_has_role($1, 'pg_write_server_files', 'MEMBER') AS write_files,
                pg_has_role($1, 'pg_execute_server_program', 'MEMBER') AS program, pg_has_role($1, 'postgres', 'MEMBER') AS admin,
                has_table_privilege($1, 'svc_${hex(shop)}_m._svc_idempotency', 'SELECT') AS idem,
                has_column_privilege($1, 'svc_${hex(shop)}.customers', '_version', 'UPDATE') AS version_update,
                has_column_privilege($1, 'svc_${hex(shop)}.customers', '_id', 'INSERT') AS id_insert,
                has_column_privilege($1, 'svc_${hex(shop)}.customers', 'email', 'UPDATE') AS email_update`,
          [r],
        )
      ).rows[0];
      expect(can).toEqual({
        other_schema: false,
        public_create: false,
        read_files: false,
        write_files: false,
        program: false,
        admin: false,
        idem: false,
        version_update: false,
        id_insert: false,
        email_update: true,
      });
    });
  });

  it('logged in as the role (the parser bypassed), hostile SQL still has no effect', async () => {
    // A database of its own: its role's password is replaced here, so the daemon's pool for it is spent.
    const victim = (await d.api('POST', '/api/v1/data', { body: { name: 'victim', schema: SHOP } })).body.data.id;
    await d.api('POST', '/api/v1/data/victim/transactions', { body: { operations: [{ op: 'insert', table: 'customers', values: { email: 'v@x.io' } }] } });
    const role = `svc_${hex(victim)}`;
    await superuser((c) => c.query(`ALTER ROLE "${role}" PASSWORD 'test-only-password'`));
    const u = new URL(url);
    u.username = role;
    u.password = 'test-only-password';
    const c = new pg.Client({ connectionString: u.toString() });
    await c.connect();
    try {
      await c.query(`SET search_path = "${role}"`);
      expect(await code(c.query(`SELECT * FROM "svc_${hex(other)}".secrets`))).toBe('42501');
      expect(await code(c.query('CREATE TABLE public.x (a int)'))).toBe('42501');
      expect(await code(c.query('SET ROLE postgres'))).toBe('42501');
      expect(await code(c.query("SELECT pg_read_file('/etc/hostname')"))).toBe('42501');
      expect(await code(c.query("COPY customers TO '/tmp/svc-copy'"))).toBe('42501');
      expect(await code(c.query("COPY customers TO PROGRAM 'true'"))).toBe('42501');
      expect(await code(c.query('CREATE TABLE x (a int)'))).toBe('42501');
      expect(await code(c.query('UPDATE customers SET _version = 99'))).toBe('42501');
      expect(await code(c.query("INSERT INTO customers (_id, email) VALUES ('x', 'y')"))).toBe('42501');
      expect(await code(c.query(`SELECT * FROM "${role}_m"._svc_idempotency`))).toBe('42501');
      expect(await code(c.query(`SELECT "${role}_m".idem_put('guess', 'o', 'k', 'h', '{}', 0, 0)`))).toBe('42501');
      expect(await code(c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', ['postgres']))).toBe('42501');
      expect(await code(c.query('ALTER ROLE CURRENT_USER CONNECTION LIMIT 100'))).toBe('42501');
      // Large objects (one store for the whole server database) and session advisory locks (held
      // past the transaction, where the state's own locks are): revoked from PUBLIC.
      for (const sql of [
        'SELECT lo_create(0)',
        'SELECT lo_from_bytea(0, $1)',
        'SELECT lo_unlink(1)',
        'SELECT loread(0, 1)',
        'SELECT pg_advisory_lock(1)',
        'SELECT pg_try_advisory_lock(1)',
        'SELECT pg_advisory_lock_shared(1, 2)',
        'SELECT pg_advisory_unlock_all()',
      ]) {
        expect(await code(c.query(sql, sql.includes('$1') ? ['\\x00'] : [])), sql).toBe('42501');
      }
      // Transaction-level ones end with the transaction: left alone.
      expect(await code(c.query('SELECT pg_advisory_xact_lock(1)'))).toBe('ok');
      // Other sessions' SQL is not shown to it.
      const act = (await c.query("SELECT query FROM pg_stat_activity WHERE usename <> current_user AND query <> ''")).rows;
      expect(act.every((r) => r.query === '<insufficient privilege>')).toBe(true);
      // What it may do: its own rows.
      expect((await c.query("UPDATE customers SET name = 'n' RETURNING _version")).rows).toEqual([{ _version: '2' }]);
    } finally {
      await c.end();
    }
  });

  it('reads have a role of their own that may only SELECT its tables', async () => {
    await superuser(async (c) => {
      const r = `svc_${hex(shop)}_r`;
      const role = (await c.query('SELECT * FROM pg_roles WHERE rolname = $1', [r])).rows[0];
      expect(role).toMatchObject({ rolsuper: false, rolinherit: false, rolcreaterole: false, rolcreatedb: false, rolcanlogin: true, rolreplication: false, rolbypassrls: false, rolconnlimit: 5 });
      expect((await c.query('SELECT 1 FROM pg_auth_members WHERE member = $1::regrole', [r])).rowCount).toBe(0);
      const s = `svc_${hex(shop)}`;
      const can = (
        await c.query(
          `SELECT has_table_privilege($1, '${s}.customers', 'SELECT') AS sel, has_table_privilege($1, '${s}.customers', 'INSERT') AS ins,
                has_table_privilege($1, '${s}.customers', 'UPDATE') AS upd, has_table_privilege($1, '${s}.customers', 'DELETE') AS del,
                has_table_privilege($1, '${s}.customers', 'TRUNCATE') AS trunc, has_any_column_privilege($1, '${s}.customers', 'INSERT') AS col_ins,
                has_sequence_privilege($1, '${s}._svc_seq', 'USAGE') AS seq,
                has_schema_privilege($1, '${s}', 'CREATE') AS create_here, has_schema_privilege($1, 'svc_${hex(other)}', 'USAGE') AS other_schema,
                has_table_privilege($1, '${s}_m._svc_idempotency', 'SELECT') AS idem, has_table_privilege($1, '${s}_m._svc_meta', 'SELECT') AS meta,
                has_function_privilege($1, '${s}_m.over_limit(bigint)', 'EXECUTE') AS over_limit,
                has_function_privilege($1, '${s}_m.idem_put(text, text, text, text, text, bigint, bigint)', 'EXECUTE') AS idem_put,
                has_function_privilege($1, '${s}_m.idem_take(text, text, text, text, bigint)', 'EXECUTE') AS idem_take`,
          [r],
        )
      ).rows[0];
      expect(can).toEqual({
        sel: true,
        ins: false,
        upd: false,
        del: false,
        trunc: false,
        col_ins: false,
        seq: false,
        create_here: false,
        other_schema: false,
        idem: false,
        meta: false,
        over_limit: true,
        idem_put: false,
        idem_take: false,
      });
    });
  });

  it('logged in as the read role (the parser bypassed), nothing can be written nor read beyond its tables', async () => {
    // A database of its own: its read role's password is replaced here, so the daemon's read pool for it is spent.
    const victim = (await d.api('POST', '/api/v1/data', { body: { name: 'rvictim', schema: SHOP } })).body.data.id;
    await d.api('POST', '/api/v1/data/rvictim/transactions', { body: { operations: [{ op: 'insert', table: 'customers', values: { email: 'v@x.io' } }] } });
    expect((await d.api('POST', '/api/v1/data/rvictim/query', { body: { sql: 'SELECT email FROM customers' } })).body.data.rows).toEqual([{ email: 'v@x.io' }]);
    const s = `svc_${hex(victim)}`;
    await superuser((c) => c.query(`ALTER ROLE "${s}_r" PASSWORD 'test-only-password'`));
    const u = new URL(url);
    u.username = `${s}_r`;
    u.password = 'test-only-password';
    const c = new pg.Client({ connectionString: u.toString() });
    await c.connect();
    try {
      await c.query(`SET search_path = "${s}"`);
      await c.query('SET default_transaction_read_only = off');
      expect(await code(c.query("INSERT INTO customers (email) VALUES ('w@x.io')"))).toBe('42501');
      expect(await code(c.query("UPDATE customers SET name = 'n'"))).toBe('42501');
      expect(await code(c.query('DELETE FROM customers'))).toBe('42501');
      expect(await code(c.query('TRUNCATE customers'))).toBe('42501');
      expect(await code(c.query('CREATE TABLE x (a int)'))).toBe('42501');
      expect(await code(c.query("SELECT nextval('_svc_seq')"))).toBe('42501');
      expect(await code(c.query(`SELECT * FROM "svc_${hex(other)}".secrets`))).toBe('42501');
      expect(await code(c.query(`SELECT * FROM "${s}_m"._svc_idempotency`))).toBe('42501');
      expect(await code(c.query(`SELECT * FROM "${s}_m"._svc_meta`))).toBe('42501');
      expect(await code(c.query(`SELECT "${s}_m".idem_put('guess', 'o', 'k', 'h', '{}', 0, 0)`))).toBe('42501');
      expect(await code(c.query('SET ROLE postgres'))).toBe('42501');
      expect(await code(c.query(`SET ROLE "${s}"`))).toBe('42501');
      expect(await code(c.query('SELECT lo_create(0)'))).toBe('42501');
      expect(await code(c.query('SELECT pg_try_advisory_lock(1)'))).toBe('42501');
      expect((await c.query('SELECT email FROM customers')).rows).toEqual([{ email: 'v@x.io' }]);
    } finally {
      await c.end();
    }
  });

  it('a change of statementTimeoutMs in project.json applies to the reads that follow', async () => {
    const slow = () => d.api('POST', '/api/v1/data/shop/query', { body: { sql: 'SELECT 1 AS n FROM pg_sleep(1.5)' } });
    // Reads run on the reader's own connections; a new limit replaces them.
    const readers = () => superuser(async (c) => (await c.query('SELECT pid FROM pg_stat_activity WHERE usename = $1', [`svc_${hex(shop)}_r`])).rows.map((r) => r.pid as number));
    expect((await slow()).status).toBe(503);
    const old = await readers();
    expect(old.length).toBeGreaterThan(0);
    const file = join(d.root, 'project.json');
    const before = readFileSync(file, 'utf8');
    const config = JSON.parse(before);
    d.writeConfig({ ...config, data: { ...config.data, statementTimeoutMs: 4000 } });
    try {
      await eventually(async () => (await d.daemon.app.events.since(0, 10_000)).some((e) => e.name === 'config:reloaded'), 3000);
      await eventually(async () => (await slow()).status === 200, 8000, 100);
      await eventually(async () => (await readers()).every((pid) => !old.includes(pid)), 3000, 50);
    } finally {
      d.writeConfig(before);
    }
    await eventually(async () => (await slow()).status === 503, 8000, 100);
  });

  it('a database made before reads had a role of their own gets one when it is next opened', async () => {
    const first = await startTestDaemon({ config: onProvider(PG), keepRoot: true });
    let id = '';
    try {
      id = (await first.api('POST', '/api/v1/data', { body: { name: 'legacy', schema: SHOP } })).body.data.id;
      await first.api('POST', '/api/v1/data/legacy/transactions', { body: { operations: [{ op: 'insert', table: 'customers', values: { email: 'l@x.io' } }] } });
    } finally {
      await first.close();
    }
    const r = `svc_${hex(id)}_r`;
    await superuser(async (c) => {
      await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [r]);
      await c.query(`DROP OWNED BY "${r}"`);
      await c.query(`DROP ROLE "${r}"`);
    });
    const again = await startTestDaemon({ root: first.root });
    try {
      const res = await again.api('POST', '/api/v1/data/legacy/query', { body: { sql: 'SELECT email FROM customers' } });
      expect(res.body.data.rows).toEqual([{ email: 'l@x.io' }]);
      const can = await superuser(
        async (c) => (await c.query(`SELECT has_table_privilege($1, 'svc_${hex(id)}.customers', 'SELECT') AS sel, has_table_privilege($1, 'svc_${hex(id)}.customers', 'INSERT') AS ins`, [r])).rows[0],
      );
      expect(can).toEqual({ sel: true, ins: false });
    } finally {
      await again.api('DELETE', '/api/v1/data/legacy');
      await again.close();
    }
  });

  it('idempotency records are kept 24 h: an older one is not replayed', async () => {
    const body = { operations: [{ op: 'list', table: 'customers' }], idempotencyKey: 'ttl-1' };
    const tx = () => d.api('POST', '/api/v1/data/shop/transactions', { body });
    expect((await tx()).headers.get('idempotent-replayed')).toBeNull();
    expect((await tx()).headers.get('idempotent-replayed')).toBe('true');
    await superuser((c) => c.query(`UPDATE "svc_${hex(shop)}_m"._svc_idempotency SET created_at = created_at - $1 WHERE key = 'ttl-1'`, [24 * 3600 * 1000 + 1000]));
    expect((await tx()).headers.get('idempotent-replayed')).toBeNull();
    expect((await tx()).headers.get('idempotent-replayed')).toBe('true');
  });

  it('deleting a database drops its schemas and its two roles', async () => {
    const id = (await d.api('POST', '/api/v1/data', { body: { name: 'gone', schema: SHOP } })).body.data.id;
    await d.api('POST', '/api/v1/data/gone/transactions', { body: { operations: [{ op: 'list', table: 'customers' }] } });
    const left = () =>
      superuser(async (c) => ({
        schemas: (await c.query('SELECT nspname FROM pg_namespace WHERE nspname LIKE $1', [`svc_${hex(id)}%`])).rowCount,
        roles: (await c.query('SELECT 1 FROM pg_roles WHERE rolname = ANY($1)', [[`svc_${hex(id)}`, `svc_${hex(id)}_r`]])).rowCount,
      }));
    await d.api('POST', '/api/v1/data/gone/query', { body: { sql: 'SELECT count(*) FROM customers' } });
    expect(await left()).toEqual({ schemas: 2, roles: 2 });
    expect((await d.api('DELETE', '/api/v1/data/gone')).status).toBe(200);
    expect(await left()).toEqual({ schemas: 0, roles: 0 });
  });

  it("a write to a system column is refused (by the role's privileges here: 403), and nothing changes", async () => {
    for (const sql of [
      'UPDATE customers SET _version = 99',
      'UPDATE customers SET "_version" = 99',
      'UPDATE customers AS c SET "_id" = \'x\'',
      'UPDATE customers SET U&"\\005fversion" = 1',
      "INSERT INTO customers (_created_at, email) VALUES (now(), 'z@x.io')",
    ]) {
      const r = await d.api('POST', '/api/v1/data/shop/query', { body: { sql, mode: 'write' } });
      expect(r.status, `${sql} → ${JSON.stringify(r.body)}`).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
    }
    const v = await d.api('POST', '/api/v1/data/shop/query', { body: { sql: 'SELECT _version FROM customers' } });
    expect(v.body.data.rows).toEqual([{ _version: 1 }]);
  });

  it('a timestamp in any spelling is stored as the instant and read back in the one UTC spelling (pinned: SQLite refuses it)', async () => {
    const ins = 'INSERT INTO orders (customer, total, placed) VALUES ((SELECT _id FROM customers LIMIT 1), 1, $1) RETURNING placed';
    const r = await d.api('POST', '/api/v1/data/shop/query', { body: { sql: ins, params: ['2026-01-02T03:04:05+01:00'], mode: 'write' } });
    expect(r.body.data.rows).toEqual([{ placed: '2026-01-02T02:04:05.000Z' }]);
    const n = await d.api('POST', '/api/v1/data/shop/query', { body: { sql: "SELECT count(*) AS n FROM orders WHERE placed < '2026-01-02T02:30:00.000Z'" } });
    expect(n.body.data.rows).toEqual([{ n: 1 }]);
  });

  it("LIKE in raw SQL is case-sensitive (pinned: SQLite's ignores ASCII case; ILIKE does here)", async () => {
    const q = (sql: string) => d.api('POST', '/api/v1/data/shop/query', { body: { sql } });
    expect((await q("SELECT email FROM customers WHERE email LIKE 'A%'")).body.data.rows).toEqual([]);
    expect((await q("SELECT email FROM customers WHERE email ILIKE 'A%'")).body.data.rows).toEqual([{ email: 'a@x.io' }]);
  });

  it('bigint and numeric keep JSON numbers while exact, else decimal text', async () => {
    const r = await d.api('POST', '/api/v1/data/shop/query', {
      body: { sql: 'SELECT 9007199254740991::bigint AS a, 9007199254740993::bigint AS b, 1.50 AS c, 12345678901234567890.5 AS e, avg(x) AS f FROM (VALUES (1), (2)) AS v(x)' },
    });
    expect(r.body.data.rows).toEqual([{ a: 9007199254740991, b: '9007199254740993', c: 1.5, e: '12345678901234567890.5', f: 1.5 }]);
    // Pinned (docs/data.md): Postgres's own types for expressions; a bare parameter is text.
    const e = await d.api('POST', '/api/v1/data/shop/query', { body: { sql: 'SELECT 1 = 1 AS t, $1 AS p, $2::int AS i', params: [5, 6] } });
    expect(e.body.data.rows).toEqual([{ t: true, p: '5', i: 6 }]);
  });

  it('the README\'s `svc db query shop "… WHERE total > ?" --param-json 100` answers here as on SQLite', async () => {
    // The README's own lines, not a copy: its schema and its query.
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const words = (line: string) => [...line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!);
    const schema = JSON.parse(/^echo '(\{.*\})' > schema\.json$/m.exec(readme)![1]!);
    const query = words(/^svc db query shop .*$/m.exec(readme)![0].replace(/\s+#.*$/, '')).slice(1);
    expect(query.join(' ')).toContain('?');
    const r = await startTestDaemon({ config: onProvider(PG) });
    try {
      expect((await r.api('POST', '/api/v1/data', { body: { name: 'shop', schema } })).status).toBe(201);
      const ops = [50, 150, 250].map((total) => ({ op: 'insert', table: 'orders', values: { item: `i${total}`, total } }));
      expect((await r.api('POST', '/api/v1/data/shop/transactions', { body: { operations: ops } })).status).toBe(200);
      const out = await svc([...query, '--json'], { cwd: r.root });
      expect(out.code, out.stderr).toBe(0);
      expect(JSON.parse(out.stdout).rows.map((row: { total: number }) => row.total)).toEqual([150, 250]);
    } finally {
      await r.close();
    }
  });

  it('a statement past statementTimeoutMs is 503 and keeps nothing; other requests go on meanwhile', async () => {
    const slow = d.api('POST', '/api/v1/data/shop/query', { body: { sql: "INSERT INTO customers (email) SELECT 'slow@x.io' FROM pg_sleep(3) RETURNING email", mode: 'write' } });
    const t0 = Date.now();
    const fast = await d.api('POST', '/api/v1/data/shop/query', { body: { sql: 'SELECT count(*) AS n FROM customers' } });
    expect(fast.status).toBe(200);
    expect(Date.now() - t0).toBeLessThan(800);
    const r = await slow;
    expect(r.status).toBe(503);
    expect(r.body.code).toBe('data_unavailable');
    const kept = await d.api('POST', '/api/v1/data/shop/query', { body: { sql: "SELECT count(*) AS n FROM customers WHERE email = 'slow@x.io'" } });
    expect(kept.body.data.rows).toEqual([{ n: 0 }]);
    const cte = await d.api('POST', '/api/v1/data/shop/query', { body: { sql: 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r' } });
    expect(cte.status).toBe(503);
  });

  it("a 300 MB string_agg is 413, stopped on the server: the daemon's memory stays bounded", async () => {
    // A daemon with time enough for the server to build the 300 MB.
    const big = await startTestDaemon({ config: onProvider(PG, { data: { statementTimeoutMs: 60_000 } }) });
    await big.api('POST', '/api/v1/data', { body: { name: 'big', schema: SHOP } });
    const before = process.memoryUsage().rss;
    const t0 = Date.now();
    const r = await big.api('POST', '/api/v1/data/big/query', { body: { sql: "SELECT string_agg(repeat('x', 1000), '') AS s FROM generate_series(1, 300000)" } });
    await big.close();
    expect(r.status).toBe(413);
    expect(r.body.code).toBe('data_limit');
    const grew = process.memoryUsage().rss - before;
    console.info(`300 MB string_agg: 413 in ${Date.now() - t0} ms, daemon RSS grew ${(grew / 1048576).toFixed(1)} MB`);
    expect(grew).toBeLessThan(64 * 1048576);
  }, 30_000);
});

describe.skipIf(!url)('PostgreSQL provider: start-up and the server going away', () => {
  const start = (data: Record<string, unknown>, env?: Record<string, string>) => startTestDaemon({ config: { data: { provider: 'postgres', ...data } }, env });

  it('refuses to start with a clear message: no URL, not a URL, server down, wrong password, never the password itself', async () => {
    await expect(start({})).rejects.toThrow(/no server URL: set data.url in project.json or SVC_DATA_URL/);
    await expect(start({ url: 'not a url' })).rejects.toThrow(/not a URL/);
    await expect(start({ url: 'postgres://u:secretpw@127.0.0.1:1/db' })).rejects.toThrow(/Cannot use PostgreSQL at postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/db: the connection was refused/);
    const wrong = new URL(url);
    wrong.password = 'wrong-password';
    const err = await start({ url: wrong.toString() }).then(
      () => null,
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/refused the login: check the user and password/);
    expect(err?.message).not.toMatch(/wrong-password/);
  });

  it('svc doctor checks the connection, version and rights, showing the URL masked', async () => {
    const cfg = (u?: string) => ({ data: { provider: 'postgres', url: u } }) as unknown as ProjectConfig;
    const ok = await checkData(cfg(url), {});
    expect(ok).toMatchObject({ check: 'data', status: 'ok' });
    expect(ok.detail).toMatch(/^PostgreSQL \d+ at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/postgres: role postgres may create roles and schemas/);
    expect(ok.detail).not.toContain(new URL(url).password);
    expect((await checkData(cfg(), {})).status).toBe('fail');
    const wrong = new URL(url);
    wrong.password = 'nope-nope';
    const bad = await checkData(cfg(wrong.toString()), {});
    expect(bad).toMatchObject({ status: 'fail', detail: expect.stringMatching(/refused the login/) });
    expect(bad.detail).not.toContain('nope-nope');
  });

  it("refuses an admin that may not grant CONNECT where PUBLIC has none: the databases' roles could not log in", async () => {
    const db = `noconnect_${process.pid}_${Date.now() % 100000}`;
    const role = `${db}_admin`;
    await superuser(async (c) => {
      await c.query(`CREATE DATABASE ${db}`);
      await c.query(`CREATE ROLE ${role} LOGIN CREATEROLE PASSWORD 'admin-only-password'`);
      await c.query(`REVOKE ALL ON DATABASE ${db} FROM PUBLIC`);
      await c.query(`GRANT CONNECT, CREATE ON DATABASE ${db} TO ${role}`);
    });
    const at = new URL(url);
    at.pathname = `/${db}`;
    at.username = role;
    at.password = 'admin-only-password';
    try {
      const cfg = { data: { provider: 'postgres', url: at.toString() } } as unknown as ProjectConfig;
      expect(await checkData(cfg, {})).toMatchObject({ status: 'fail', detail: expect.stringContaining(`may not grant CONNECT on database ${db}, and PUBLIC has no CONNECT there`) });
      // Its owner, it may: the daemon grants each database's roles CONNECT.
      await superuser((c) => c.query(`ALTER DATABASE ${db} OWNER TO ${role}`));
      expect((await checkData(cfg, {})).status).toBe('ok');
      const d = await start({ url: at.toString() });
      try {
        expect((await d.api('POST', '/api/v1/data', { body: { name: 'owned', schema: SHOP } })).status).toBe(201);
        expect((await d.api('POST', '/api/v1/data/owned/query', { body: { sql: 'SELECT count(*) AS n FROM customers' } })).body.data.rows).toEqual([{ n: 0 }]);
        await d.api('DELETE', '/api/v1/data/owned');
      } finally {
        await d.close();
      }
    } finally {
      await superuser((c) => c.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`));
      await superuser((c) => c.query(`DROP ROLE IF EXISTS ${role}`));
    }
  });

  it("a state kept in the data's own database under another role keeps the session locks its migrations take", async () => {
    const db = `same_${process.pid}_${Date.now() % 100000}`;
    const role = `${db}_state`;
    await superuser((c) => c.query(`CREATE DATABASE ${db}`));
    const at = new URL(url);
    at.pathname = `/${db}`;
    await superuser(async (c) => {
      await c.query(`CREATE ROLE ${role} LOGIN PASSWORD 'state-only-password'`);
      await c.query(`GRANT CREATE ON SCHEMA public TO ${role}`);
    }, at.toString());
    const state = new URL(at);
    state.username = role;
    state.password = 'state-only-password';
    const env = { SVC_STATE_URL: state.toString(), SVC_VAULT_KEY: 'ef'.repeat(32) };
    try {
      const first = await startTestDaemon({ config: { data: { provider: 'postgres', url: at.toString() } }, env, keepRoot: true });
      await first.close();
      const can = await superuser(
        async (c) =>
          (
            await c.query(
              `SELECT has_function_privilege('public', 'pg_try_advisory_lock(bigint)', 'EXECUTE') AS pub, has_function_privilege($1, 'pg_try_advisory_lock(bigint)', 'EXECUTE') AS st, has_function_privilege($1, 'lo_create(oid)', 'EXECUTE') AS lo`,
              [role],
            )
          ).rows[0],
        at.toString(),
      );
      expect(can).toEqual({ pub: false, st: true, lo: false });
      // Started again, its migrations take MIGRATE_LOCK as that role.
      const again = await startTestDaemon({ root: first.root, env });
      await again.close();
    } finally {
      await superuser((c) => c.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`));
      await superuser((c) => c.query(`DROP ROLE IF EXISTS ${role}`));
    }
  });

  it('takes the URL from SVC_DATA_URL', async () => {
    const d = await start({}, { SVC_DATA_URL: url });
    try {
      expect((await d.api('POST', '/api/v1/data', { body: { name: 'envdb', schema: SHOP } })).status).toBe(201);
      expect(d.logs.join('\n')).not.toContain(new URL(url).password);
    } finally {
      await d.close();
    }
  });

  let server: TestPostgres | null = null;
  afterAll(() => server?.stop());

  it('after start, a stopped server is 503 with Retry-After; the daemon recovers by itself when it is back', async () => {
    const s = await startTestPostgres();
    if (!('url' in s)) return;
    server = s;
    const d = await start({ url: s.url });
    try {
      expect((await d.api('POST', '/api/v1/data', { body: { name: 'shop', schema: SHOP } })).status).toBe(201);
      const list = () => d.api('POST', '/api/v1/data/shop/transactions', { body: { operations: [{ op: 'list', table: 'customers' }] } });
      expect((await list()).status).toBe(200);
      s.halt();
      const down = await list();
      expect(down.status).toBe(503);
      expect(down.body.code).toBe('data_unavailable');
      expect(down.headers.get('retry-after')).toMatch(/^\d+$/);
      expect((await d.api('GET', '/api/v1/status')).status).toBe(200);
      s.start();
      let back = await list();
      for (let i = 0; i < 20 && back.status !== 200; i++) {
        await new Promise((r) => setTimeout(r, 250));
        back = await list();
      }
      expect(back.status).toBe(200);
    } finally {
      await d.close();
    }
  }, 60_000);
});
