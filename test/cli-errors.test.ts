import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { svcAgainst } from './cli-helpers.js';
import { startTestDaemon, type TestDaemon } from './harness.js';
import { tempDir } from './temp.js';

// Errors of the API as the CLI prints them name what a person typed and can run: the flag or
// argument that filled a field (also one filled under another name: --write fills mode), and
// the command that does what an endpoint does, never the body path or the endpoint.

describe('CLI errors in the command line’s words', () => {
  let d: TestDaemon;
  let taskId = '';
  let hookId = '';
  const dir = tempDir('svc-cli-errors-');
  const run = async (...args: string[]) => await svcAgainst(d, args);
  beforeAll(async () => {
    d = await startTestDaemon();
    const schema = join(dir, 'schema.json');
    writeFileSync(schema, JSON.stringify({ tables: { notes: { columns: { title: { type: 'text' } } } } }));
    expect((await run('db', 'create', 'notes', '--schema', schema)).code).toBe(0);
    taskId = JSON.parse((await run('--json', 'tasks', 'add', 'gated')).stdout).id;
    hookId = JSON.parse((await run('--json', 'webhooks', 'add', 'http://127.0.0.1:9/hook')).stdout).id;
    expect((await run('webhooks', 'set', hookId, '--disable')).code).toBe(0);
  });
  afterAll(async () => {
    await d.close();
  });

  // [what, argv, exit code, lines stderr must hold]. Every case is refused by the API (or by its
  // schema, checked before the request: exit 2); what the API itself says is checked beside it.
  const cases: [string, () => string[], number, () => string[]][] = [
    ['a write without --write', () => ['db', 'query', 'notes', "INSERT INTO notes (title) VALUES ('x')"], 1, () => ['  [sql]: INSERT writes; send it with --write.']],
    ['a read with --write', () => ['db', 'query', 'notes', 'SELECT 1', '--write'], 1, () => ['  [sql]: A SELECT does not write; send it without --write (the default).']],
    [
      'a CTE that writes, without --write',
      () => ['db', 'query', 'notes', "WITH x AS (SELECT 1) INSERT INTO notes (title) SELECT 'a' FROM x"],
      1,
      () => ['  [sql]: The statement writes; read mode runs only statements that cannot write (send it with --write).'],
    ],
    [
      'DDL: migrations are a command',
      () => ['db', 'query', 'notes', 'CREATE TABLE t (a)', '--write'],
      1,
      () => ['  [sql]: CREATE is a schema change; schema changes go through `svc db migrate <name> <file>`.'],
    ],
    ['a parameter of the wrong kind', () => ['db', 'query', 'notes', 'SELECT ?', '--param-json', '{"a": 1}'], 1, () => ['  --param/--param-json (the 1st): ']],
    ['a team that does not exist', () => ['agents', 'add', 'bob', '--team', 'nope'], 1, () => ['  --team: team "nope" does not exist; create it with `svc teams add nope`']],
    ['a repeatable option’s value', () => ['agents', 'add', 'bob', '--tool', 'git', '--tool', ''], 2, () => ['  --tool (the 2nd): ']],
    ['awaiting_approval by hand', () => ['tasks', 'mv', taskId, 'awaiting_approval'], 1, () => [`Request one with \`svc approvals request ${taskId} --title …\`.`]],
    ['status through an edit', () => ['tasks', 'edit', taskId, '--unset', 'status'], 2, () => ['  --unset status: status changes only through a transition: `svc tasks mv <id> <state>`']],
    ['a disabled webhook', () => ['webhooks', 'test', hookId], 1, () => [`enable it first with \`svc webhooks set ${hookId} --enable\`.`]],
    [
      'an unknown event pattern',
      () => ['webhooks', 'add', 'http://127.0.0.1:9/x', '--events', 'task:*,nope:*'],
      1,
      () => ['  --events (the 2nd): unknown event category "nope" (see `svc events catalog`)'],
    ],
    ['a field given as --by', () => ['approvals', 'request', taskId, '--title', 't', '--by', ''], 2, () => ['  --by: ']],
  ];

  it.each(cases)('%s', async (_, argv, exit, expected) => {
    const lines = expected();
    const r = await run(...argv());
    expect(r.code, r.stderr).toBe(exit);
    for (const line of lines) expect(r.stderr).toContain(line);
    expect(r.stderr).not.toMatch(/\b(body|query|params)\.\w|\/api\/v1|\/v1\/|\bmode "/);
    // The same in --json, where the details carry the typed names too.
    const j = await run('--json', ...argv());
    const body = JSON.parse(j.stderr) as { error: string; details?: { path: string; message: string }[] };
    expect(JSON.stringify(body)).not.toMatch(/\b(body|query|params)\.\w|\/api\/v1|\/v1\/|\bmode \\"/);
    const detail = lines.find((l) => l.startsWith('  '));
    if (detail) expect(body.details?.map((x) => x.path)).toContain(detail.trim().replace(/:.*$/, ''));
  });

  it('the events catalog the messages point to is a command', async () => {
    const r = await run('events', 'catalog');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^EVENT\s+DESCRIPTION/);
    expect(r.stdout).toMatch(/\btask:created\s+\S/);
    const j = JSON.parse((await run('--json', 'events', 'catalog')).stdout) as { name: string }[];
    expect(j.map((e) => e.name)).toContain('data:migrated');
  });
});
