import pg from 'pg';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { migrate } from '../src/db/migrate.js';
import { openPostgresState } from '../src/db/open.js';
import { isStateOutage, PgStateError, StateUnavailableError } from '../src/db/pg/errors.js';
import { PgState } from '../src/db/pg/state.js';
import { freshStateDatabase } from './state-pg.js';

// The state on PostgreSQL (src/db/pg/state.ts) against the run's real PostgreSQL: the values it
// gives the stores, errors, transactions that follow their async call chain, statements that do
// not wait for each other, a server too slow for the wait bound, closing, and the server's notices.

const noPg = inject('pgUrl') === '';
const open: PgState[] = [];
afterEach(async () => {
  for (const db of open.splice(0)) await db.close();
});

async function stateDb(opts: { statementTimeoutMs?: number; waitMs?: number; onNotice?: (m: string) => void } = {}): Promise<PgState> {
  const db = new PgState({ url: await freshStateDatabase(), statementTimeoutMs: opts.statementTimeoutMs ?? 5_000, waitMs: opts.waitMs, onNotice: opts.onNotice });
  open.push(db);
  await db.exec('CREATE TABLE IF NOT EXISTS t (id TEXT PRIMARY KEY, n BIGINT, b BYTEA, j TEXT)');
  return db;
}

describe.skipIf(noPg)('the PostgreSQL state', () => {
  it('gives the stores the same values: BIGINT as a number, BYTEA as a Buffer, NULL, arrays as parameters', async () => {
    const db = await stateDb();
    const bytes = Buffer.from([0, 1, 2, 250, 255]);
    const ins = db.prepare('INSERT INTO t (id, n, b, j) VALUES (?, ?, ?, ?)');
    expect(await ins.run('a', 2 ** 40, bytes, null)).toEqual({ changes: 1, lastInsertRowid: 0 });
    await ins.run('b', -7, null, '{"x":1}');
    const a = (await db.prepare('SELECT id, n, b, j FROM t WHERE id = ?').get('a')) as Record<string, unknown>;
    expect(a).toEqual({ id: 'a', n: 2 ** 40, b: bytes, j: null });
    expect(Buffer.isBuffer(a.b)).toBe(true);
    expect(await db.prepare('SELECT id FROM t WHERE id = ANY($1::text[]) ORDER BY id').all(['a', 'b', 'q"\\'])).toEqual([{ id: 'a' }, { id: 'b' }]);
    expect((await db.prepare('UPDATE t SET n = n + 1').run()).changes).toBe(2);
  });

  it('a failed statement throws its SQLSTATE and leaves the connection usable', async () => {
    const db = await stateDb();
    await db.prepare('INSERT INTO t (id) VALUES (?)').run('dup');
    const err = await db
      .prepare('INSERT INTO t (id) VALUES (?)')
      .run('dup')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PgStateError);
    expect(err).toMatchObject({ code: '23505', message: expect.stringContaining('duplicate key') });
    await expect(db.prepare('SELEC nonsense').get()).rejects.toMatchObject({ code: '42601' });
    expect(await db.prepare('SELECT COUNT(*) AS n FROM t').get()).toEqual({ n: 1 });
  });

  it('a transaction follows its async call chain: its statements see its writes, others see them once it commits, a nested one is a savepoint', async () => {
    const db = await stateDb();
    const read = () => db.prepare('SELECT id FROM t ORDER BY id').all();
    let seen: unknown;
    const other = new pg.Client(db.opts.url);
    await other.connect();
    await db.transaction(async () => {
      await db.prepare('INSERT INTO t (id) VALUES (?)').run('one');
      expect(await read()).toEqual([{ id: 'one' }]);
      // Another session sees what is committed only.
      seen = (await other.query('SELECT count(*)::int AS n FROM t')).rows[0];
      await expect(
        db.transaction(async () => {
          await db.prepare('INSERT INTO t (id) VALUES (?)').run('two');
          throw new Error('the inner part fails');
        }),
      ).rejects.toThrow('the inner part fails');
      expect(await read()).toEqual([{ id: 'one' }]);
    });
    expect(seen).toEqual({ n: 0 });
    expect((await other.query('SELECT count(*)::int AS n FROM t')).rows[0]).toEqual({ n: 1 });
    await other.end();
    expect(await read()).toEqual([{ id: 'one' }]);
    await expect(
      db.transaction(async () => {
        await db.prepare('INSERT INTO t (id) VALUES (?)').run('three');
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await read()).toEqual([{ id: 'one' }]);
  });

  it('a statement waiting on a lock holds up only its own caller: the others are answered meanwhile', async () => {
    const db = await stateDb();
    await db.prepare('INSERT INTO t (id, n) VALUES (?, ?)').run('x', 1);
    const holder = new pg.Client(db.opts.url);
    await holder.connect();
    try {
      await holder.query("BEGIN; SELECT * FROM t WHERE id = 'x' FOR UPDATE");
      const waiting = db.transaction(() => db.prepare('UPDATE t SET n = 2 WHERE id = ?').run('x'));
      await new Promise((r) => setTimeout(r, 100));
      for (let i = 0; i < 5; i++) {
        const t0 = performance.now();
        expect(await db.prepare('SELECT n FROM t WHERE id = ?').get('x')).toEqual({ n: 1 });
        expect(performance.now() - t0).toBeLessThan(500);
      }
      await holder.query('COMMIT');
      expect((await waiting).changes).toBe(1);
    } finally {
      await holder.end();
    }
  });

  it('a server slower than the wait bound: unavailable, then a new connection serves, and the slow transaction lets go of its locks', async () => {
    const db = await stateDb({ statementTimeoutMs: 5_000, waitMs: 1_000 });
    await db.prepare('INSERT INTO t (id) VALUES (?)').run('locked');
    await expect(
      db.transaction(async () => {
        await db.prepare('SELECT * FROM t FOR UPDATE').all();
        await db.prepare('SELECT pg_sleep(2)').get();
      }),
    ).rejects.toBeInstanceOf(StateUnavailableError);
    expect(await db.prepare('SELECT 2 AS two').get()).toEqual({ two: 2 });
    // The abandoned connection is gone: the row it locked is free again.
    expect((await db.transaction(() => db.prepare('UPDATE t SET n = 1 WHERE id = ?').run('locked'))).changes).toBe(1);
  });

  it('a transaction whose daemon stalls between two statements lets go of its locks after the wait bound, and fails as an outage when it resumes', async () => {
    const db = await stateDb({ statementTimeoutMs: 5_000, waitMs: 600 });
    await db.prepare('INSERT INTO t (id, n) VALUES (?, ?)').run('row', 1);
    let resume!: () => void;
    const stalled = new Promise<void>((r) => (resume = r));
    let updated!: () => void;
    const holding = new Promise<void>((r) => (updated = r));
    // Stands in for a daemon suspended (SIGSTOP, a closed lid) after its UPDATE and before its COMMIT.
    const frozen = db.transaction(async () => {
      await db.prepare('UPDATE t SET n = 2 WHERE id = ?').run('row');
      updated();
      await stalled;
      await db.prepare('SELECT 1 AS one').get();
    });
    const other = new pg.Client({ connectionString: db.opts.url, statement_timeout: 5_000 });
    await other.connect();
    try {
      await holding;
      const t0 = performance.now();
      // Without the server's bound this waits for the stalled transaction's COMMIT, that is forever.
      expect((await other.query("UPDATE t SET n = 3 WHERE id = 'row'")).rowCount).toBe(1);
      expect(performance.now() - t0).toBeLessThan(3_000);
      resume();
      const err = await frozen.catch((e: unknown) => e);
      expect(isStateOutage(err), String(err)).toBe(true);
      // A statement of its own that meets the server's ending (rather than the closed connection) is one too.
      expect(new PgStateError('terminating connection due to idle-in-transaction timeout', '25P03').stateOutage).toBe(true);
      // Its UPDATE was never kept, and the pool serves again on a new connection.
      expect(await db.prepare('SELECT n FROM t WHERE id = ?').get('row')).toEqual({ n: 3 });
    } finally {
      resume();
      await other.end();
    }
  });

  it("a migration's statements may run past the state's statement timeout and wait bound, and its connection goes back with the state's own", async () => {
    const db = await stateDb({ statementTimeoutMs: 200, waitMs: 500 });
    // Longer than both: a request's statement would be stopped by the server, then cut by the daemon.
    const slow = 'SELECT pg_sleep(0.8)';
    expect(await migrate(db, [{ version: 1, name: 'slow', sql: slow, postgres: slow }], 'test')).toBe(1);
    expect(await db.prepare('SELECT version FROM schema_migrations').all()).toEqual([{ version: 1 }]);
    // Every connection of the pool (the migration's among them) has the state's timeout again.
    const all = await Promise.all(
      Array.from({ length: 6 }, () =>
        db
          .prepare(slow)
          .get()
          .catch((e: unknown) => e),
      ),
    );
    for (const e of all) expect(e).toMatchObject({ code: '57014' });
  });

  it("a statement past statement_timeout fails as an outage (503), not as the request's fault", async () => {
    const db = await stateDb({ statementTimeoutMs: 200 });
    await expect(db.prepare('SELECT pg_sleep(1)').get()).rejects.toMatchObject({ code: '57014' });
    expect(await db.prepare('SELECT 1 AS one').get()).toEqual({ one: 1 });
  });

  it('closing while a statement is under way fails it and ends the connections', async () => {
    const url = await freshStateDatabase();
    const db = new PgState({ url, statementTimeoutMs: 5_000 });
    await db.prepare('SELECT 1').get();
    const read = db.prepare('SELECT pg_sleep(0.5)').get();
    await new Promise((r) => setTimeout(r, 100));
    const closed = db.close();
    await read.catch(() => undefined);
    await closed;
    await expect(db.prepare('SELECT 1').get()).rejects.toBeInstanceOf(StateUnavailableError);
    const admin = new pg.Client(inject('pgUrl'));
    await admin.connect();
    try {
      const name = new URL(url).pathname.slice(1);
      const deadline = Date.now() + 5_000;
      let left = -1;
      while (Date.now() < deadline && left !== 0) {
        left = Number((await admin.query('SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1', [name])).rows[0].n);
        if (left) await new Promise((r) => setTimeout(r, 100));
      }
      expect(left).toBe(0);
    } finally {
      await admin.end();
    }
  });

  it('a parameter that cannot be sent fails, and leaves no transaction open', async () => {
    const db = await stateDb();
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    await expect(db.transaction(() => db.prepare('SELECT ?::text AS v').get(circular))).rejects.toThrow();
    expect((await db.transaction(() => db.prepare('INSERT INTO t (id) VALUES (?)').run('after'))).changes).toBe(1);
  });

  it("hands the server's notices to the daemon (its debug log)", async () => {
    const notices: string[] = [];
    const db = await stateDb({ onNotice: (m) => notices.push(m) });
    await db.exec("DO $$ BEGIN RAISE NOTICE 'svc-notice-probe'; RAISE WARNING 'svc-warning-probe'; END $$");
    await db.exec('CREATE TABLE IF NOT EXISTS n (id INT)');
    await db.exec('CREATE TABLE IF NOT EXISTS n (id INT)');
    expect(notices).toEqual([expect.stringContaining('svc-notice-probe'), expect.stringContaining('svc-warning-probe'), expect.stringContaining('relation "n" already exists, skipping')]);
  });

  it('refuses a NUL in text, as PostgreSQL does, rather than cutting the value short', async () => {
    const db = await stateDb();
    await expect(db.prepare('INSERT INTO t (id) VALUES (?)').run('a\0b')).rejects.toMatchObject({ code: '22021' });
    expect(await db.prepare('SELECT COUNT(*) AS n FROM t').get()).toEqual({ n: 0 });
  });

  it('a server that cannot be reached: the start says what to fix', async () => {
    await expect(openPostgresState({ url: 'postgres://svc@127.0.0.1:1/none', statementTimeoutMs: 5_000 }, [])).rejects.toThrow(/^Cannot use PostgreSQL for the state at .*refused/);
  });
});
