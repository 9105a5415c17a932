import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { openPostgresState } from '../src/db/open.js';
import { PgStateDb, PgStateError, StateUnavailableError } from '../src/db/pg/sync.js';
import { freshStateDatabase } from './state-pg.js';
import { tempDir } from './temp.js';

// The state bridge's two channels (src/db/pg/channel.ts) against the run's real PostgreSQL: the
// values each gives the stores, answers bigger than the shared buffer, errors, reads that do not
// block (queryAsync) beside blocking statements, a server too slow for the wait bound, and the
// fallback from libpq to pg where the addon cannot load.

const noPg = inject('pgUrl') === '';
/** koffi (the FFI the libpq channel calls libpq through) is optional, and libpq a system library: without either, that channel cannot be tested. */
const noLibpq = (() => {
  try {
    const koffi = createRequire(import.meta.url)('koffi') as { load(name: string): unknown };
    koffi.load(process.platform === 'darwin' ? 'libpq.5.dylib' : 'libpq.so.5');
    return '';
  } catch (err) {
    return (err as Error).message;
  }
})();
if (noLibpq && !noPg) console.warn(`pg-channel: the libpq channel is not tested here: ${noLibpq}`);
const open: PgStateDb[] = [];
afterEach(() => {
  for (const db of open.splice(0)) db.close();
});

async function stateDb(driver: 'libpq' | 'pg', opts: { statementTimeoutMs?: number; waitMs?: number } = {}): Promise<PgStateDb> {
  const db = new PgStateDb({ url: await freshStateDatabase(), statementTimeoutMs: opts.statementTimeoutMs ?? 5_000, waitMs: opts.waitMs, driver });
  open.push(db);
  // The first statement makes the connection: on a loaded machine that can take longer than a
  // test's short wait bound, so setting up tries again (the test's own statements do not).
  for (let tries = 1; ; tries++) {
    try {
      db.exec('CREATE TABLE IF NOT EXISTS t (id TEXT PRIMARY KEY, n BIGINT, b BYTEA, j TEXT)');
      return db;
    } catch (err) {
      if (!(err instanceof StateUnavailableError) || tries === 5) throw err;
    }
  }
}

describe.each(['libpq', 'pg'] as const)('the %s channel', (driver) => {
  if (noPg || (driver === 'libpq' && noLibpq)) return void it.skip('needs PostgreSQL (and for libpq, its addon)');
  it('gives the stores the same values: BIGINT as a number, BYTEA as a Buffer, NULL, arrays as parameters', async () => {
    const db = await stateDb(driver);
    expect(db.driver).toBe(driver);
    const bytes = Buffer.from([0, 1, 2, 250, 255]);
    const ins = db.prepare('INSERT INTO t (id, n, b, j) VALUES (?, ?, ?, ?)');
    expect(ins.run('a', 2 ** 40, bytes, null)).toEqual({ changes: 1, lastInsertRowid: 0 });
    ins.run('b', -7, null, '{"x":1}');
    const a = db.prepare('SELECT id, n, b, j FROM t WHERE id = ?').get('a') as Record<string, unknown>;
    expect(a).toEqual({ id: 'a', n: 2 ** 40, b: bytes, j: null });
    expect(Buffer.isBuffer(a.b)).toBe(true);
    expect(db.prepare('SELECT id FROM t WHERE id = ANY($1::text[]) ORDER BY id').pluck().all(['a', 'b', 'q"\\'])).toEqual(['a', 'b']);
    expect(db.prepare('UPDATE t SET n = n + 1').run().changes).toBe(2);
  });

  it('carries answers and parameters bigger than the shared buffer', async () => {
    const db = await stateDb(driver);
    const big = 'x'.repeat(600_000);
    expect(db.prepare('SELECT length(?) AS n').get(big)).toEqual({ n: 600_000 });
    const rows = db.prepare("SELECT g, repeat('y', 1000) AS s FROM generate_series(1, 1000) g").all() as { g: number; s: string }[];
    expect(rows).toHaveLength(1000);
    expect(rows[999]).toEqual({ g: 1000, s: 'y'.repeat(1000) });
    // and small ones after them, through the shared buffer again
    expect(db.prepare('SELECT 1 AS one').get()).toEqual({ one: 1 });
  });

  it('a failed statement throws its SQLSTATE and leaves the connection usable', async () => {
    const db = await stateDb(driver);
    db.prepare('INSERT INTO t (id) VALUES (?)').run('dup');
    let err: unknown;
    try {
      db.prepare('INSERT INTO t (id) VALUES (?)').run('dup');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PgStateError);
    expect(err).toMatchObject({ code: '23505', message: expect.stringContaining('duplicate key') });
    expect(() => db.prepare('SELEC nonsense').get()).toThrow(expect.objectContaining({ code: '42601' }));
    expect(db.prepare('SELECT COUNT(*) AS n FROM t').get()).toEqual({ n: 1 });
  });

  it('reads that do not block come back in order, around blocking statements, each with its own answer', async () => {
    const db = await stateDb(driver);
    const reads = Array.from({ length: 40 }, (_, i) => db.queryAsync('SELECT $1::int AS i', [i]));
    // A blocking statement while those are queued or in flight: it waits for the one in flight, not for the queue.
    db.prepare('INSERT INTO t (id, n) VALUES (?, ?)').run('w', 1);
    expect(db.prepare('SELECT n FROM t WHERE id = ?').get('w')).toEqual({ n: 1 });
    const answers = await Promise.all(reads);
    expect(answers.map((r) => r.rows[0]!.i)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    // The first read goes out at once and sees the row before the write; the second waits
    // behind it, goes out after the write and sees it; one inside a transaction sees the
    // transaction's own write.
    const first = db.queryAsync('SELECT n FROM t WHERE id = $1', ['w']);
    const second = db.queryAsync('SELECT n FROM t WHERE id = $1', ['w']);
    let inside: Promise<unknown> | undefined;
    db.transaction(() => {
      db.prepare('UPDATE t SET n = 2 WHERE id = ?').run('w');
      inside = db.queryAsync('SELECT n FROM t WHERE id = $1', ['w']);
    })();
    db.prepare('UPDATE t SET n = 3 WHERE id = ?').run('w');
    expect((await first).rows).toEqual([{ n: 1 }]);
    expect((await inside!)).toMatchObject({ rows: [{ n: 2 }] });
    expect((await second).rows).toEqual([{ n: 3 }]);
    await expect(db.queryAsync('SELECT nope FROM t', [])).rejects.toMatchObject({ code: '42703' });
  });

  it('a server slower than the wait bound: unavailable, then a new connection serves, and the slow transaction lets go of the write lock', async () => {
    // A wait bound well above a connection's making on a loaded machine, and sleeps well above it.
    const db = await stateDb(driver, { statementTimeoutMs: 5_000, waitMs: 1_000 });
    const slow = db.transaction(() => db.prepare('SELECT pg_sleep(2)').get());
    expect(() => slow()).toThrow(StateUnavailableError);
    await expect(db.queryAsync('SELECT pg_sleep(2)', [])).rejects.toBeInstanceOf(StateUnavailableError);
    expect(db.prepare('SELECT 2 AS two').get()).toEqual({ two: 2 });
    // The abandoned thread ends its connection once its sleep returns: the lock it held is free again.
    const started = performance.now();
    for (;;) {
      try {
        db.transaction(() => db.prepare('INSERT INTO t (id) VALUES (?)').run('after'))();
        break;
      } catch (err) {
        if (!(err instanceof StateUnavailableError) || performance.now() - started > 8_000) throw err;
      }
    }
    expect(db.prepare('SELECT id FROM t').pluck().all()).toEqual(['after']);
  });

  it('reads queued behind a blocking statement that runs out of time still go out, on a new connection', async () => {
    const db = await stateDb(driver, { statementTimeoutMs: 5_000, waitMs: 1_000 });
    const first = db.queryAsync('SELECT 1 AS i', []);
    const second = db.queryAsync('SELECT 2 AS i', []);
    expect(() => db.prepare('SELECT pg_sleep(2)').get()).toThrow(StateUnavailableError);
    expect((await first).rows).toEqual([{ i: 1 }]);
    expect((await second).rows).toEqual([{ i: 2 }]);
  });

  it('closing while a read is under way fails that read and ends the thread and its connection', async () => {
    const url = await freshStateDatabase();
    const db = new PgStateDb({ url, statementTimeoutMs: 5_000, driver });
    db.prepare('SELECT 1').get();
    const read = db.queryAsync('SELECT pg_sleep(0.5)', []);
    await new Promise((r) => setTimeout(r, 100));
    db.close();
    await expect(read).rejects.toBeInstanceOf(StateUnavailableError);
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

  it('a parameter that cannot be sent fails at once, and leaves no transaction holding the write lock', async () => {
    const db = await stateDb(driver);
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const started = performance.now();
    let err: unknown;
    try {
      db.transaction(() => db.prepare('SELECT ?::text AS v').get(circular))();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PgStateError);
    expect(performance.now() - started).toBeLessThan(4_000);
    // Another connection takes the write lock at once: nothing was left open holding it.
    const other = new PgStateDb({ url: db.opts.url, statementTimeoutMs: 5_000, waitMs: 3_000, driver });
    open.push(other);
    expect(other.transaction(() => other.prepare('INSERT INTO t (id) VALUES (?)').run('after').changes)()).toBe(1);
    // A value no channel can carry at all fails its read; the reads after it go on.
    await expect(db.queryAsync('SELECT $1::text AS v', [() => 1])).rejects.toThrow();
    expect((await db.queryAsync('SELECT 3 AS i', [])).rows).toEqual([{ i: 3 }]);
  });

  it("hands the server's notices to the daemon (its debug log), never to stderr", async () => {
    const url = await freshStateDatabase();
    const dir = tempDir('svc-notices-');
    const sync = new URL('../dist/src/db/pg/sync.js', import.meta.url).href;
    // In a process of its own: libpq's default is to print them on the process's stderr.
    const file = join(dir, 'notices.mjs');
    writeFileSync(
      file,
      `import { PgStateDb } from ${JSON.stringify(sync)};` +
        `const notices = []; const db = new PgStateDb({ url: ${JSON.stringify(url)}, statementTimeoutMs: 5000, driver: '${driver}', onNotice: (m) => notices.push(m) });` +
        `db.exec("DO $$ BEGIN RAISE NOTICE 'svc-notice-probe'; RAISE WARNING 'svc-warning-probe'; END $$");` +
        `db.exec('CREATE TABLE IF NOT EXISTS n (id INT)'); db.exec('CREATE TABLE IF NOT EXISTS n (id INT)');` +
        `console.log(JSON.stringify({ notices, driver: db.driver })); db.close();`,
    );
    const r = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 20_000 });
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout.trim()) as { notices: string[]; driver: string };
    expect(out.driver).toBe(driver);
    expect(out.notices).toEqual([
      expect.stringContaining('svc-notice-probe'),
      expect.stringContaining('svc-warning-probe'),
      expect.stringContaining('relation "n" already exists, skipping'),
    ]);
  });

  it('refuses a NUL in text, as PostgreSQL does, rather than cutting the value short', async () => {
    const db = await stateDb(driver);
    expect(() => db.prepare('INSERT INTO t (id) VALUES (?)').run('a\0b')).toThrow(expect.objectContaining({ code: '22021' }));
    expect(db.prepare('SELECT COUNT(*) AS n FROM t').get()).toEqual({ n: 0 });
  });
});

it.skipIf(noPg)('without koffi, auto falls back to pg, and driver "libpq" says why it cannot start', async () => {
  const url = await freshStateDatabase();
  const dir = tempDir('svc-no-libpq-');
  // Preloaded in the process and in its threads: `koffi` is not found, as where the optional dependency was left out.
  const preload = join(dir, 'no-libpq.cjs');
  writeFileSync(preload, `const M = require('node:module'); const resolve = M._resolveFilename; M._resolveFilename = function (r, ...a) { if (/^koffi(\\/|$)/.test(r)) throw new Error('Cannot find module ' + r); return resolve.call(this, r, ...a); };`);
  const open = new URL('../dist/src/db/open.js', import.meta.url).href;
  // As the daemon opens its state (openPostgresState), so the refusal is the one a user reads.
  const script = (driver: string) =>
    `import { openPostgresState } from ${JSON.stringify(open)};` +
    `try { const db = openPostgresState({ url: ${JSON.stringify(url)}, statementTimeoutMs: 5000, driver: '${driver}' }, []);` +
    ` console.log(JSON.stringify({ row: db.prepare('SELECT 1 AS one').get(), driver: db.driver })); db.close(); } catch (e) { console.log(JSON.stringify({ error: e.message })); }`;
  const run = (driver: string) => {
    // A file, not -e: threads inherit --input-type, and an ES module thread then fails to start.
    const file = join(dir, `${driver}.mjs`);
    writeFileSync(file, script(driver));
    const r = spawnSync(process.execPath, ['--require', preload, file], { encoding: 'utf8', timeout: 20_000 });
    return JSON.parse(r.stdout.trim()) as Record<string, unknown>;
  };
  expect(run('auto')).toEqual({ row: { one: 1 }, driver: 'pg' });

  expect(run('libpq')).toEqual({ error: expect.stringMatching(/^state\.driver is "libpq", but libpq cannot be used: .*koffi.*set state\.driver to "auto" or "pg"\.$/) });
});

it.skipIf(noPg || noLibpq !== '')('a URL with a parameter only pg takes: auto connects with pg, driver "libpq" says so', async () => {
  const url = `${await freshStateDatabase()}?ssl=0`;
  const auto = new PgStateDb({ url, statementTimeoutMs: 5_000, driver: 'auto' });
  open.push(auto);
  expect(auto.prepare('SELECT 1 AS one').get()).toEqual({ one: 1 });
  expect(auto.driver).toBe('pg');
  expect(() => openPostgresState({ url, statementTimeoutMs: 5_000, driver: 'libpq' }, [])).toThrow(/^state\.driver is "libpq", but libpq does not take this URL: .*"ssl"/);
});
