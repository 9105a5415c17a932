import { describe, expect, it } from 'vitest';
import Database, { SQLITE_PACKAGE, sqlite12Fix } from '../../src/db/sqlite.js';
import { resultCodeName } from '../../src/db/node-sqlite.js';

// src/db/sqlite.ts gives better-sqlite3's API whichever binding this Node uses: what svc relies on
// is checked here against the binding that runs (better-sqlite3 12 on Node 20, node:sqlite through
// src/db/node-sqlite.ts on 22.16+ and 24; .ci/run runs this file on all three).

describe(`SQLite through src/db/sqlite.ts (${SQLITE_PACKAGE})`, () => {
  const db = () => {
    const d = new Database(':memory:');
    d.exec('CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT UNIQUE, c BLOB)');
    return d;
  };

  it('names errors by SQLite result code, as better-sqlite3 does', () => {
    const d = db();
    d.prepare('INSERT INTO t (b) VALUES (?)').run('x');
    expect(() => d.prepare('INSERT INTO t (b) VALUES (?)').run('x')).toThrow(expect.objectContaining({ code: 'SQLITE_CONSTRAINT_UNIQUE', message: 'UNIQUE constraint failed: t.b' }));
    expect(() => d.prepare('SELEC 1')).toThrow(expect.objectContaining({ code: 'SQLITE_ERROR' }));
    expect([resultCodeName(2067), resultCodeName(1555), resultCodeName(5), resultCodeName(517), resultCodeName(19)]).toEqual([
      'SQLITE_CONSTRAINT_UNIQUE',
      'SQLITE_CONSTRAINT_PRIMARYKEY',
      'SQLITE_BUSY',
      'SQLITE_BUSY_SNAPSHOT',
      'SQLITE_CONSTRAINT',
    ]);
  });

  it('refuses a call with too few parameters, a missing named one, or a second statement', () => {
    const d = db();
    expect(() => d.prepare('SELECT ?, ?').get(1)).toThrow(RangeError);
    expect(() => d.prepare('SELECT :name').get()).toThrow(/named parameter/);
    expect(() => d.prepare('SELECT 1; SELECT 2')).toThrow(/more than one statement/);
    expect(d.prepare('SELECT 1 AS n; -- a comment\n').get()).toEqual({ n: 1 });
    expect(d.prepare('SELECT @a AS a, ? AS b').get(2, { a: 1 })).toEqual({ a: 1, b: 2 });
  });

  it('says whether a statement writes, and whether it returns rows', () => {
    const d = db();
    expect(['SELECT 1', 'WITH x AS (SELECT 1) SELECT * FROM x', 'INSERT INTO t (b) VALUES (1)', 'DELETE FROM t', 'BEGIN'].map((s) => d.prepare(s).readonly)).toEqual([true, true, false, false, true]);
    expect(d.prepare('SELECT 1').reader).toBe(true);
    expect(d.prepare('UPDATE t SET b = b').reader).toBe(false);
    expect(d.prepare('INSERT INTO t (b) VALUES (1) RETURNING a').reader).toBe(true);
  });

  it('gives blobs as Buffers, pluck, raw, columns, safe integers and pragmas', () => {
    const d = db();
    d.prepare('INSERT INTO t (b, c) VALUES (?, ?)').run('x', Buffer.from('hi'));
    const row = d.prepare('SELECT c FROM t').get() as { c: Buffer };
    expect(Buffer.isBuffer(row.c) && row.c.toString()).toBe('hi');
    expect(d.prepare('SELECT b FROM t').pluck().all()).toEqual(['x']);
    expect(d.prepare('SELECT a, b FROM t').raw().all()).toEqual([[1, 'x']]);
    expect(
      d
        .prepare('SELECT a, b FROM t')
        .columns()
        .map((c) => [c.name, c.table, c.column]),
    ).toEqual([
      ['a', 't', 'a'],
      ['b', 't', 'b'],
    ]);
    expect(d.prepare('SELECT 9007199254740993 AS n').safeIntegers().get()).toEqual({ n: 9007199254740993n });
    d.pragma('user_version = 7');
    expect(d.pragma('user_version', { simple: true })).toBe(7);
  });

  it('runs transactions, a nested one as a savepoint, and rolls back what threw', () => {
    const d = db();
    const insert = d.prepare('INSERT INTO t (b) VALUES (?)');
    const inner = d.transaction((b: string) => {
      insert.run(b);
      if (b === 'bad') throw new Error('no');
    });
    const outer = d.transaction(() => {
      inner('kept');
      expect(() => inner('bad')).toThrow('no');
      expect(d.inTransaction).toBe(true);
    });
    outer();
    expect(d.inTransaction).toBe(false);
    expect(d.prepare('SELECT b FROM t ORDER BY a').pluck().all()).toEqual(['kept']);
    expect(() => d.transaction(() => insert.run('kept'))()).toThrow(expect.objectContaining({ code: 'SQLITE_CONSTRAINT_UNIQUE' }));
    expect(d.inTransaction).toBe(false);
  });
});

describe('the command that installs better-sqlite3 12 where svc finds it', () => {
  it('in a checkout, beside a global install, in a project that depends on svc', () => {
    expect(sqlite12Fix('/home/u/svc', false)).toBe('cd /home/u/svc && npm install');
    expect(sqlite12Fix('/home/u/svc', true)).toBe('cd /home/u/svc && npm rebuild better-sqlite3-12');
    expect(sqlite12Fix('/usr/local/lib/node_modules/svc-daemon', false, 'linux')).toBe('npm install -g --prefix /usr/local better-sqlite3-12@npm:better-sqlite3@^12.6.2');
    expect(sqlite12Fix('/usr/local/lib/node_modules/svc-daemon', true, 'darwin')).toBe('npm rebuild -g --prefix /usr/local better-sqlite3-12');
    expect(sqlite12Fix('/home/u/my app/node_modules/svc-daemon', false, 'linux')).toBe("npm install --prefix '/home/u/my app' better-sqlite3-12@npm:better-sqlite3@^12.6.2");
  });
});
