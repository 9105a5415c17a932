import Database from '../../src/db/sqlite.js';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/kernel/errors.js';
import { DataFile } from '../../src/resources/data/engine.js';
import type { OperationT, SchemaDefT } from '../../src/resources/data/schema.js';
import { tempDir } from '../temp.js';
import { systemClock } from '../../src/lib/clock.js';

// A timestamp column holds one spelling of an instant (UTC, milliseconds, Z), whatever path wrote
// it, so that comparing the text in SQL compares the instants. The batch path converts; raw SQL
// is refused (422 naming the column) unless it writes that spelling; a file made before the
// triggers existed gets them, and its convertible values converted, when it is opened.

const SCHEMA: SchemaDefT = {
  tables: {
    ev: {
      columns: {
        k: { type: 'text', unique: true },
        at: { type: 'timestamp', nullable: true },
        due: { type: 'timestamp', default: '2026-03-01T10:00:00+01:00' },
      },
    },
    src: { columns: { s: { type: 'text' } } },
  },
};
const grants = { read: '*' as const, write: '*' as const };

/** Each spelling, and what the batch path stores for it (null: refused). */
const SPELLINGS: [label: string, input: string, stored: string | null][] = [
  ['stored form', '2026-03-01T10:00:00.000Z', '2026-03-01T10:00:00.000Z'],
  ['Z without milliseconds', '2026-03-01T10:00:00Z', '2026-03-01T10:00:00.000Z'],
  ['+01:00', '2026-03-01T10:00:00+01:00', '2026-03-01T09:00:00.000Z'],
  ['-05:30', '2026-03-01T10:00:00.250-05:30', '2026-03-01T15:30:00.250Z'],
  ['24:00', '2026-03-01T24:00:00Z', '2026-03-02T00:00:00.000Z'],
  ['no offset', '2026-03-01T10:00:00', null],
  ['date only', '2026-03-01', null],
  ['not a date', '2026-03-01T10:00 or so', null],
  ['past 9999 in UTC', '9999-12-31T23:30:00-01:00', null],
];

/** The write paths. Each writes `v` into ev.at of the row with key `k`, or throws. */
type Path = (f: DataFile, k: string, v: string) => void;
const sql = (f: DataFile, text: string, params: (string | number | null)[] = []) => f.query({ sql: text, params, mode: 'write', maxRows: 10, grants });
const batch = (f: DataFile, op: Record<string, unknown>) => f.batch([op as OperationT]);
const rowId = (f: DataFile, k: string) => (f.query({ sql: 'SELECT _id FROM ev WHERE k = ?', params: [k], mode: 'read', maxRows: 1, grants }).answer.rows[0] as { _id: string })._id;
const lit = (v: string) => `'${v.replace(/'/g, "''")}'`;

const BATCH_PATHS: Record<string, Path> = {
  'batch insert': (f, k, v) => batch(f, { op: 'insert', table: 'ev', values: { k, at: v } }),
  'batch update': (f, k, v) => {
    batch(f, { op: 'insert', table: 'ev', values: { k } });
    batch(f, { op: 'update', table: 'ev', id: rowId(f, k), values: { at: v } });
  },
  'batch upsert': (f, k, v) => {
    batch(f, { op: 'insert', table: 'ev', values: { k } });
    batch(f, { op: 'upsert', table: 'ev', values: { k, at: v }, onConflict: ['k'] });
  },
};
const SQL_PATHS: Record<string, Path> = {
  'INSERT … VALUES (?)': (f, k, v) => sql(f, 'INSERT INTO ev (k, at) VALUES (?, ?)', [k, v]),
  'INSERT … VALUES (literal)': (f, k, v) => sql(f, `INSERT INTO ev (k, at) VALUES (${lit(k)}, ${lit(v)})`),
  'INSERT … SELECT': (f, k, v) => {
    sql(f, 'DELETE FROM src');
    sql(f, 'INSERT INTO src (s) VALUES (?)', [v]);
    sql(f, `INSERT INTO ev (k, at) SELECT ${lit(k)}, s FROM src`);
  },
  'UPDATE … SET (literal)': (f, k, v) => {
    sql(f, 'INSERT INTO ev (k) VALUES (?)', [k]);
    sql(f, `UPDATE ev SET at = ${lit(v)} WHERE k = ${lit(k)}`);
  },
  'upsert DO UPDATE SET': (f, k, v) => {
    sql(f, 'INSERT INTO ev (k) VALUES (?)', [k]);
    sql(f, 'INSERT INTO ev (k, at) VALUES (?, NULL) ON CONFLICT (k) DO UPDATE SET at = ?', [k, v]);
  },
  REPLACE: (f, k, v) => sql(f, 'REPLACE INTO ev (k, at) VALUES (?, ?)', [k, v]),
};

describe('timestamps mean one thing', () => {
  const dir = tempDir('svc-ts-');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  const fresh = () => new DataFile(join(dir, `${++n}.sqlite`), systemClock, SCHEMA);
  const stored = (f: DataFile, k: string) => (f.query({ sql: 'SELECT at FROM ev WHERE k = ?', params: [k], mode: 'read', maxRows: 1, grants }).answer.rows[0] as { at: string | null } | undefined)?.at;
  const caught = (fn: () => void): AppError | null => {
    try {
      fn();
      return null;
    } catch (err) {
      if (err instanceof AppError) return err;
      throw err;
    }
  };

  const cases = [...Object.keys(BATCH_PATHS), ...Object.keys(SQL_PATHS)].flatMap((path) => SPELLINGS.map(([label, input, out]) => [path, label, input, out] as const));
  it.each(cases)('%s, %s', (path, _label, input, batchStores) => {
    const f = fresh();
    const k = 'row';
    const isBatch = Object.hasOwn(BATCH_PATHS, path);
    // Raw SQL keeps what it is given, so only the stored spelling itself may pass there.
    const expected = isBatch ? batchStores : input === batchStores ? input : null;
    const err = caught(() => (isBatch ? BATCH_PATHS : SQL_PATHS)[path]!(f, k, input));
    if (expected === null) {
      expect(err, `${path} stored ${stored(f, k)}`).not.toBeNull();
      if (isBatch) {
        expect(err!.code).toBe('data_invalid');
        expect(err!.details![0]!.path).toMatch(/\.at$/);
      } else {
        expect(err!.code).toBe('data_constraint');
        expect(err!.status).toBe(422);
        expect(err!.message).toBe("ev.at: must be UTC with milliseconds, like 2026-01-31T11:00:00.000Z (in SQL, strftime('%Y-%m-%dT%H:%M:%fZ', x) converts an x that names its zone).");
        expect(err!.details).toEqual([{ path: 'at', message: expect.stringContaining('strftime') }]);
      }
      // Nothing of the refused value was kept (the UPDATE and upsert paths made the row first).
      expect([undefined, null]).toContain(stored(f, k));
    } else {
      expect(err).toBeNull();
      expect(stored(f, k)).toBe(expected);
    }
    f.close();
  });

  it('the conversion the refusal suggests stores what the batch path stores; defaults are stored converted', () => {
    const f = fresh();
    for (const [label, input, batchStores] of SPELLINGS) {
      if (batchStores === null || label === '24:00') continue;
      sql(f, "INSERT INTO ev (k, at) VALUES (?, strftime('%Y-%m-%dT%H:%M:%fZ', ?))", [`sql ${label}`, input]);
      batch(f, { op: 'insert', table: 'ev', values: { k: `batch ${label}`, at: input } });
      expect(stored(f, `sql ${label}`), label).toBe(batchStores);
      expect(stored(f, `batch ${label}`), label).toBe(batchStores);
    }
    // A default given with an offset (ev.due), used by raw SQL and by a migration's new column.
    sql(f, "INSERT INTO ev (k) VALUES ('d')");
    f.migrate({ id: 'm', expectedVersion: 1, steps: [{ op: 'addColumn', table: 'ev', column: 'later', definition: { type: 'timestamp', default: '2026-03-01T10:00:00-05:30' } }] }, 'c');
    expect(f.query({ sql: "SELECT due, later FROM ev WHERE k = 'd'", params: [], mode: 'read', maxRows: 1, grants }).answer.rows[0]).toEqual({
      due: '2026-03-01T09:00:00.000Z',
      later: '2026-03-01T15:30:00.000Z',
    });
    f.close();
  });

  it('SQL comparisons and ordering give the instants’ answer, whichever path wrote each row', () => {
    const f = fresh();
    // 08:30Z, 09:00Z, 09:30Z, 10:00Z, written by four paths in four spellings.
    sql(f, "INSERT INTO ev (k, at) VALUES ('a', strftime('%Y-%m-%dT%H:%M:%fZ', '2026-03-01T09:30:00+01:00'))");
    batch(f, { op: 'insert', table: 'ev', values: { k: 'b', at: '2026-03-01T04:00:00-05:00' } });
    sql(f, "INSERT INTO ev (k, at) VALUES ('c', '2026-03-01T09:30:00.000Z')");
    batch(f, { op: 'insert', table: 'ev', values: { k: 'd', at: '2026-03-01T11:00:00+01:00' } });
    const read = (text: string) => f.query({ sql: text, params: [], mode: 'read', maxRows: 10, grants }).answer.rows.map((r) => (r as { k: string }).k);
    expect(read('SELECT k FROM ev ORDER BY at')).toEqual(['a', 'b', 'c', 'd']);
    expect(read("SELECT k FROM ev WHERE at < '2026-03-01T09:30:00.000Z' ORDER BY k")).toEqual(['a', 'b']);
    expect(read("SELECT k FROM ev WHERE at = strftime('%Y-%m-%dT%H:%M:%fZ', '2026-03-01T10:00:00+01:00')")).toEqual(['b']);
    // The raw write that used to pass and compare wrongly ('…10:00:00+01:00' sorts after 09:30Z).
    expect(caught(() => sql(f, "UPDATE ev SET at = '2026-03-01T10:00:00+01:00' WHERE k = 'a'"))?.code).toBe('data_constraint');
    expect(read("SELECT k FROM ev WHERE at > '2026-03-01T09:30:00.000Z'")).toEqual(['d']);
    f.close();
  });

  it('a file made before the triggers gets them when opened, its values with a zone converted like the batch path does', () => {
    const file = join(dir, 'old.sqlite');
    new DataFile(file, systemClock, {
      tables: { ev: { columns: { k: { type: 'text', unique: true }, at: { type: 'timestamp', nullable: true, unique: true }, n: { type: 'integer', nullable: true } } } },
    }).close();
    // What such a file holds: the tables without the timestamp triggers, and values raw SQL kept as written.
    const raw = new Database(file);
    for (const { name } of raw.prepare("SELECT name FROM sqlite_schema WHERE type = 'trigger' AND name LIKE '\\_svc\\_ts:%' ESCAPE '\\'").all() as { name: string }[])
      raw.exec(`DROP TRIGGER "${name}"`);
    raw.exec("DELETE FROM _svc_meta WHERE key = 'timestampTriggers'");
    const legacy: [string, string | null][] = [
      ['plus', '2026-03-01T10:00:00+01:00'],
      ['minus', '2026-03-01T10:00:00.5-05:30'],
      ['fine', '2026-03-01T12:00:00.000Z'],
      ['clash', '2026-03-01T12:00:00Z'], // converted, it would equal 'fine': unique, so left
      ['nozone', '2026-03-01T10:00:00'], // which instant is unknown: left
      ['garbage', '2026-03-01T10:00 or so'],
      ['null', null],
    ];
    for (const [k, at] of legacy) raw.prepare('INSERT INTO ev (k, at) VALUES (?, ?)').run(k, at);
    expect(raw.prepare("SELECT count(*) AS c FROM sqlite_schema WHERE name LIKE '\\_svc\\_ts:%' ESCAPE '\\'").get()).toEqual({ c: 0 });
    raw.close();

    const f = new DataFile(file, systemClock);
    const rows = Object.fromEntries(f.query({ sql: 'SELECT k, at, _version AS v FROM ev', params: [], mode: 'read', maxRows: 10, grants }).answer.rows.map((r) => [(r as { k: string }).k, r]));
    expect(rows).toEqual({
      plus: { k: 'plus', at: '2026-03-01T09:00:00.000Z', v: 2 },
      minus: { k: 'minus', at: '2026-03-01T15:30:00.500Z', v: 2 },
      fine: { k: 'fine', at: '2026-03-01T12:00:00.000Z', v: 1 },
      clash: { k: 'clash', at: '2026-03-01T12:00:00Z', v: 1 },
      nozone: { k: 'nozone', at: '2026-03-01T10:00:00', v: 1 },
      garbage: { k: 'garbage', at: '2026-03-01T10:00 or so', v: 1 },
      null: { k: 'null', at: null, v: 1 },
    });
    // The guarantee now holds for new writes; a row left as it was can still change other columns.
    expect(caught(() => sql(f, "UPDATE ev SET at = '2026-03-01T10:00:00+01:00' WHERE k = 'null'"))?.message).toMatch(/^ev\.at: must be UTC/);
    expect(caught(() => sql(f, "UPDATE ev SET n = 1 WHERE k = 'nozone'"))).toBeNull();
    // docs/data.md's query for the values left as they were.
    expect(f.query({ sql: "SELECT k FROM ev WHERE at IS NOT strftime('%Y-%m-%dT%H:%M:%fZ', at, '+0 seconds') ORDER BY k", params: [], mode: 'read', maxRows: 10, grants }).answer.rows).toEqual([
      { k: 'clash' },
      { k: 'garbage' },
      { k: 'nozone' },
    ]);
    f.close();
    // Opened again, nothing is converted twice.
    const again = new DataFile(file, systemClock);
    expect(again.query({ sql: "SELECT _version AS v FROM ev WHERE k = 'plus'", params: [], mode: 'read', maxRows: 1, grants }).answer.rows[0]).toEqual({ v: 2 });
    again.close();
  });

  it('renaming and dropping a timestamp column keeps the triggers right', () => {
    const f = fresh();
    f.migrate(
      {
        id: 'r',
        expectedVersion: 1,
        steps: [
          { op: 'renameColumn', table: 'ev', from: 'at', to: 'happened' },
          { op: 'addColumn', table: 'ev', column: 'gone', definition: { type: 'timestamp', nullable: true } },
        ],
      },
      'r',
    );
    expect(caught(() => sql(f, "INSERT INTO ev (k, happened) VALUES ('x', '2026-03-01T10:00:00+01:00')"))?.message).toMatch(/^ev\.happened: /);
    expect(caught(() => sql(f, "INSERT INTO ev (k, gone) VALUES ('x', '2026-03-01')"))?.message).toMatch(/^ev\.gone: /);
    // SQLite refuses to drop a column a trigger uses; the migration drops and remakes them.
    f.migrate({ id: 'd', expectedVersion: 2, allowDestructive: true, steps: [{ op: 'dropColumn', table: 'ev', column: 'gone' }] }, 'd');
    expect(caught(() => sql(f, "INSERT INTO ev (k, happened) VALUES ('y', '2026-03-01T10:00:00.000Z')"))).toBeNull();
    expect(caught(() => sql(f, "UPDATE ev SET happened = '2026-03-01T10:00:00+01:00'"))?.message).toMatch(/^ev\.happened: /);
    f.close();
  });
});
