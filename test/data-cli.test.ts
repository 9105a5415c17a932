import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { svcAgainst } from './cli-helpers.js';
import { startTestDaemon, type TestDaemon } from './harness.js';
import { tempDir } from './temp.js';

// `svc db` against a real daemon: tables for people, --json, --csv, the prompt, exit codes.

describe('svc db', () => {
  let d: TestDaemon;
  const dir = tempDir('svc-db-cli-');
  const file = (name: string, content: unknown) => {
    const p = join(dir, name);
    writeFileSync(p, JSON.stringify(content));
    return p;
  };
  beforeAll(async () => {
    d = await startTestDaemon();
  });
  afterAll(async () => {
    await d.close();
  });
  const run = async (...args: string[]) => await svcAgainst(d, args);

  it('creates, lists and shows', async () => {
    const schema = file('schema.json', { tables: { notes: { columns: { title: { type: 'text' }, done: { type: 'boolean', default: false } } } } });
    const c = await run('db', 'create', 'notes', '--schema', schema);
    expect(c.code, c.stderr).toBe(0);
    expect(c.stdout).toMatch(/created database notes/);
    const ls = await run('db', 'ls');
    expect(ls.stdout).toMatch(/^NAME\s+ID\s+VERSION\s+TABLES/);
    expect(ls.stdout).toMatch(/notes\s+\w{8}\s+1\s+notes/);
    const show = await run('db', 'show', 'notes');
    expect(show.stdout).toMatch(/done\s+boolean\s+no/);
    const json = await run('--json', 'db', 'show', 'notes');
    const db = JSON.parse(json.stdout);
    expect(db.schemaVersion).toBe(1);
    // By the last 8 characters of the id (as `db ls` shows it), or a prefix.
    expect(JSON.parse((await run('--json', 'db', 'show', db.id.slice(-8))).stdout).name).toBe('notes');
    expect(JSON.parse((await run('--json', 'db', 'show', db.id.slice(0, 13))).stdout).name).toBe('notes');
  });

  it('queries: aligned table, --json, --csv, parameters and write mode', async () => {
    const w = await run('db', 'query', 'notes', 'INSERT INTO notes (title) VALUES (?), (?)', '--param', 'a, "b"', '--param', 'plain', '--write');
    expect(w.code, w.stderr).toBe(0);
    expect(w.stdout).toMatch(/2 rows changed/);
    const t = await run('db', 'query', 'notes', 'SELECT title, done FROM notes ORDER BY title');
    expect(t.stdout.split('\n')[0]).toMatch(/^title\s+done$/);
    expect(t.stdout).toMatch(/a, "b"\s+false/);
    const csv = await run('db', 'query', 'notes', 'SELECT title, done FROM notes ORDER BY title', '--csv');
    expect(csv.stdout).toBe('title,done\n"a, ""b""",false\nplain,false\n');
    const json = await run('--json', 'db', 'query', 'notes', 'SELECT title FROM notes WHERE title = ?', '--param-json', '"plain"', '--max-rows', '1');
    expect(JSON.parse(json.stdout)).toEqual({ rows: [{ title: 'plain' }], rowCount: 1, truncated: false });
    // Bound in the order typed, whichever option gave each: 7 (JSON), then 'plain', then true.
    const mixed = await run('--json', 'db', 'query', 'notes', 'SELECT ? AS a, ? AS b, ? AS c', '--param-json', '7', '--param', 'plain', '--param-json', 'true');
    expect(JSON.parse(mixed.stdout).rows).toEqual([{ a: 7, b: 'plain', c: 1 }]);
    const refused = await run('db', 'query', 'notes', 'DROP TABLE notes', '--write');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/data_invalid \(400\)/);
  });

  it('opens a prompt without SQL', async () => {
    const r = await svcAgainst(d, ['db', 'query', 'notes'], {
      input: "SELECT count(*) AS n\nFROM notes;\nUPDATE notes SET done = 1 WHERE title = 'plain';\nSELECT nope;\nCREATE TABLE t (a);\n.exit\n",
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/n\s*\n2\b/);
    expect(r.stdout).toMatch(/1 row changed/);
    expect(r.stdout).toMatch(/error data_invalid/);
    // An error that sends people to an endpoint names the command instead.
    expect(r.stdout).toContain('schema changes go through `svc db migrate <name> <file>`.');
  });

  it('runs batches and migrations', async () => {
    const tx = await run(
      'db',
      'tx',
      'notes',
      file('ops.json', [
        { op: 'insert', table: 'notes', values: { title: 'c' } },
        { op: 'list', table: 'notes', limit: 1 },
      ]),
    );
    expect(tx.code, tx.stderr).toBe(0);
    expect(tx.stdout).toMatch(/\[1\] list notes\s+1 row\(s\), total 3, next offset 1/);
    const m = await run(
      'db',
      'migrate',
      'notes',
      file('m.json', { id: 'm1', expectedVersion: 1, steps: [{ op: 'addColumn', table: 'notes', column: 'due', definition: { type: 'timestamp', nullable: true } }] }),
    );
    expect(m.stdout).toMatch(/schemaVersion 2/);
    const list = await run('db', 'migrations', 'notes');
    expect(list.stdout).toMatch(/^VERSION\s+ID\s+APPLIED/);
    expect(list.stdout).toMatch(/2\s+m1/);
  });

  it('rm confirms: refuses without a terminal, deletes with --yes; unknown database exits 1', async () => {
    const no = await run('db', 'rm', 'notes');
    expect(no.code).toBe(2);
    const yes = await run('db', 'rm', 'notes', '--yes');
    expect(yes.code, yes.stderr).toBe(0);
    const gone = await run('db', 'show', 'notes');
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/data_not_found \(404\)/);
  });
});
