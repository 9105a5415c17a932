import { spawn, spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatBytes, formatDuration, relativeTime, shortId } from '../src/lib/human.js';
import { matchIds } from '../src/cli/ids.js';
import { withIo, type CliIo } from '../src/cli/io.js';
import { table } from '../src/cli/output.js';
import { SVC, svcAgainst, type SvcOptions } from './cli-helpers.js';
import { startTestDaemon, type TestDaemon } from './harness.js';

// Short ids, human times, tables that fit the terminal, and confirmations, through the in-process
// CLI against a real daemon.

let d: TestDaemon;
const svc = async (args: string[], opts: SvcOptions = {}) => await svcAgainst(d, args, opts);
const newTask = async (title: string) => (await d.api('POST', '/api/v1/tasks', { body: { title } })).body.data as { id: string; title: string };

beforeAll(async () => {
  d = await startTestDaemon();
});
afterAll(async () => {
  await d?.close();
});

describe('short ids', () => {
  const ids = [{ id: '01a205f1-b71a-7000-969c-829461e1b882' }, { id: '01a205f1-b94c-7000-9cca-317dc6f722cb' }];
  it.each([
    ['a unique suffix', '61e1b882', [0]],
    ['the start of the short id a table printed', '61e1', [0]],
    ['a unique prefix', '01a205f1-b71a', [0]],
    ['the full id, in capitals', '01A205F1-B71A-7000-969C-829461E1B882', [0]],
    ['a prefix both share', '01a205f1', [0, 1]],
    ['no match', 'ffff', []],
  ])('matchIds: %s', (_name, input, expected) => {
    expect(matchIds(input as string, ids)).toEqual((expected as number[]).map((i) => ids[i]));
  });

  it('tables print the last 8 characters (the random end of a v7 id)', () => {
    expect(shortId('01a205f1-b71a-7000-969c-829461e1b882')).toBe('61e1b882');
  });

  it('resolves a unique prefix or suffix, refuses an ambiguous one listing the candidates, and one under 4 characters', async () => {
    const a = await newTask('alpha');
    const b = await newTask('beta');
    // Made within the same second: v7 ids share their first characters.
    expect(a.id.slice(0, 8)).toBe(b.id.slice(0, 8));

    const bySuffix = await svc(['tasks', 'show', a.id.slice(-6), '--json']);
    expect(bySuffix.code, bySuffix.stderr).toBe(0);
    expect(JSON.parse(bySuffix.stdout).id).toBe(a.id);
    const byShortStart = await svc(['tasks', 'mv', b.id.slice(-8, -4), 'assigned', '--json']);
    expect(byShortStart.code, byShortStart.stderr).toBe(0);
    expect(JSON.parse(byShortStart.stdout)).toMatchObject({ id: b.id, status: 'assigned' });

    const ambiguous = await svc(['tasks', 'show', a.id.slice(0, 8)]);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain('is ambiguous');
    expect(ambiguous.stderr).toContain(`${a.id.slice(-8)}  ${a.id}  alpha`);
    expect(ambiguous.stderr).toContain(`${b.id.slice(-8)}  ${b.id}  beta`);

    const short = await svc(['tasks', 'show', a.id.slice(-3)]);
    expect(short.code).toBe(2);
    expect(short.stderr).toContain('too short: give at least 4 characters');

    const none = await svc(['tasks', 'show', 'zzzz']);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('no task id starts or ends with "zzzz"');
  });

  it('works for missions, approvals, --depends-on and --mission', async () => {
    const m = (await d.api('POST', '/api/v1/missions', { body: { name: 'short ids' } })).body.data;
    const dep = await newTask('dependency');
    const add = await svc(['tasks', 'add', 'dependent', '--mission', m.id.slice(-6), '--depends-on', dep.id.slice(-6), '--json']);
    expect(add.code, add.stderr).toBe(0);
    expect(JSON.parse(add.stdout)).toMatchObject({ missionId: m.id, dependsOn: [dep.id] });
    const shown = await svc(['missions', 'show', m.id.slice(-5), '--json']);
    expect(JSON.parse(shown.stdout).id).toBe(m.id);

    const t = await newTask('gated');
    const ap = (await d.api('POST', '/api/v1/approvals', { body: { requestedBy: 'ana', title: 'ok?', taskId: t.id } })).body.data;
    const rejected = await svc(['approvals', 'reject', ap.id.slice(-5), '--feedback', 'no']);
    expect(rejected.code, rejected.stderr).toBe(0);
    expect(rejected.stdout).toBe(`rejected ${ap.id.slice(-8)}; task ${t.id.slice(-8)} is now pending\n`);
    const listed = await svc(['approvals', 'ls', '--task', t.id.slice(-6), '--json']);
    expect(JSON.parse(listed.stdout).map((x: { id: string }) => x.id)).toEqual([ap.id]);
  });

  it('--json keeps full ids and ISO times', async () => {
    const t = await newTask('json stays whole');
    const ls = JSON.parse((await svc(['tasks', 'ls', '--json'])).stdout) as { id: string; createdAt: string }[];
    const row = ls.find((x) => x.id === t.id)!;
    expect(row.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });
});

describe('human output', () => {
  const now = Date.parse('2026-01-01T12:00:00.000Z');
  it.each([
    ['2026-01-01T11:57:00.000Z', '3m ago'],
    ['2026-01-01T11:59:59.500Z', 'just now'],
    ['2026-01-01T14:00:00.000Z', 'in 2h'],
    ['2025-12-29T12:00:00.000Z', '3d ago'],
  ])('relativeTime(%s) = %s', (iso, expected) => {
    expect(relativeTime(iso, now)).toBe(expected);
  });

  it('durations and sizes', () => {
    expect(formatDuration(3_725_000)).toBe('1h 02m');
    expect(formatDuration(185_000)).toBe('3m 05s');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(512)).toBe('512 B');
  });

  const io = (columns: number): CliIo => ({
    stdout: { write: () => true },
    stderr: { write: () => true },
    stdin: process.stdin,
    env: {},
    cwd: '/',
    interactive: false,
    color: false,
    columns,
    exitCode: 0,
  });
  const rows = [{ id: 'abc', title: 'a title long enough to need cutting when the terminal is narrow, like this one here' }];
  const cols = [
    { header: 'ID', value: (r: (typeof rows)[0]) => r.id },
    { header: 'TITLE', value: (r: (typeof rows)[0]) => r.title, flex: true },
  ];

  it('cuts the flex column to the terminal width, not to a fixed 60', async () => {
    const narrow = await withIo(io(40), async () => table(rows, cols));
    for (const line of narrow.trimEnd().split('\n')) expect([...line].length).toBeLessThanOrEqual(40);
    expect(narrow).toContain('…');
    const wide = await withIo(io(200), async () => table(rows, cols));
    expect(wide).toContain(rows[0]!.title);
  });

  it('tasks ls fits the terminal it is given', async () => {
    await newTask('x'.repeat(150));
    const r = await svc(['tasks', 'ls'], { columns: 70 });
    for (const line of r.stdout.trimEnd().split('\n')) expect([...line].length).toBeLessThanOrEqual(70);
    const wide = await svc(['tasks', 'ls'], { columns: 300 });
    expect(wide.stdout).toContain('x'.repeat(150));
  });

  it('status prints human units', async () => {
    const r = await svc(['status']);
    expect(r.stdout).toMatch(/uptime\s+\d+s\n/);
    expect(r.stdout).toMatch(/started\s+(just now|\d+s ago) \(/);
  });
});

describe('confirmations', () => {
  it('asks on a terminal: "y" proceeds, anything else changes nothing', async () => {
    const keep = await newTask('keep me');
    const no = await svc(['tasks', 'rm', keep.id.slice(-6)], { isTTY: true, input: 'n\n' });
    // "n" is an answer, not a failure: exit 1, said plainly, no red "error" and no hint.
    expect(no.code).toBe(1);
    expect(no.stderr).toBe(`delete task ${keep.id.slice(-8)} "keep me"? [y/N] cancelled; nothing was changed\n`);
    expect(no.stdout).toBe('');
    expect((await d.api('GET', `/api/v1/tasks/${keep.id}`)).status).toBe(200);
    const colour = await svc(['tasks', 'rm', keep.id.slice(-6)], { isTTY: true, input: 'no\n', env: { NO_COLOR: '' } });
    expect(colour.code).toBe(1);
    expect(colour.stderr).not.toContain('\x1b[31m');
    expect(colour.stderr).toContain('cancelled; nothing was changed\n');
    const json = await svc(['tasks', 'rm', keep.id.slice(-6), '--json'], { isTTY: true, input: '\n' });
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stderr.slice(json.stderr.indexOf('{')))).toEqual({ code: 'cancelled', error: 'cancelled; nothing was changed' });

    const yes = await svc(['tasks', 'rm', keep.id.slice(-6)], { isTTY: true, input: 'y\n' });
    expect(yes.code, yes.stderr).toBe(0);
    expect(yes.stdout).toBe(`removed task ${keep.id.slice(-8)}\n`);
    expect((await d.api('GET', `/api/v1/tasks/${keep.id}`)).status).toBe(404);
  });

  it('the real binary asks on a real pseudo-terminal (script(1)), and proceeds on "y"', async () => {
    const has = spawnSync('sh', ['-c', 'command -v script'], { encoding: 'utf8' });
    if (has.status !== 0) return; // util-linux script(1) is not installed here
    const t = await newTask('on a pty');
    const child = spawn('script', ['-qec', `${process.execPath} ${SVC} --url ${d.url} --api-key ${d.key} tasks rm ${t.id.slice(-6)}`, '/dev/null'], {
      env: { ...process.env, NO_COLOR: '1', SERVICE_API_KEY: '' },
    });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    await expect.poll(() => out, { timeout: 15_000 }).toContain('[y/N]');
    child.stdin.write('y\n');
    const code = await new Promise((r) => child.on('close', r));
    expect(code).toBe(0);
    expect(out).toContain(`removed task ${t.id.slice(-8)}`);
    expect((await d.api('GET', `/api/v1/tasks/${t.id}`)).status).toBe(404);
  });

  it('names what --cascade takes with it', async () => {
    const m = (await d.api('POST', '/api/v1/missions', { body: { name: 'doomed', tasks: [{ title: 'a' }, { title: 'b' }] } })).body.data;
    const r = await svc(['missions', 'rm', m.id, '--cascade'], { isTTY: true, input: '\n' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`delete mission ${m.id.slice(-8)} "doomed" and its 2 tasks? [y/N]`);
    expect((await d.api('GET', `/api/v1/missions/${m.id}`)).status).toBe(200);
  });

  it.each([
    ['tasks rm', async () => ['tasks', 'rm', (await newTask('t')).id], async (args: string[]) => (await d.api('GET', `/api/v1/tasks/${args[2]}`)).status === 200],
    [
      'missions rm --cascade',
      async () => ['missions', 'rm', (await d.api('POST', '/api/v1/missions', { body: { name: `m${Date.now()}` } })).body.data.id, '--cascade'],
      async (args: string[]) => (await d.api('GET', `/api/v1/missions/${args[2]}`)).status === 200,
    ],
    [
      'teams rm',
      async () => (await d.api('POST', '/api/v1/agents/teams', { body: { name: 'keepers' } }), ['teams', 'rm', 'keepers']),
      async () => (await d.api('GET', '/api/v1/agents/teams')).body.data.some((t: { name: string }) => t.name === 'keepers'),
    ],
    [
      'agents rm',
      async () => (await d.api('POST', '/api/v1/agents', { body: { name: 'keeper' } }), ['agents', 'rm', 'keeper']),
      async () => (await d.api('GET', '/api/v1/agents/keeper')).status === 200,
    ],
    [
      'vault rm',
      async () => (await d.api('POST', '/api/v1/vault/entries', { body: { agent: 'keeper', service: 'api', type: 'api_key', credentials: { k: 'v' } } }), ['vault', 'rm', 'keeper', 'api']),
      async () => (await d.api('GET', '/api/v1/vault/entries')).body.data.length === 1,
    ],
    ['vault rotate-key', async () => ['vault', 'rotate-key'], async () => !d.logs.some((l) => l.includes('rotated the vault master key'))],
  ])('%s without a terminal and without --yes: exit 2 with a hint, nothing done', async (_name, setup, stillThere) => {
    const args = await setup();
    const r = await svc(args as string[]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('refusing without confirmation');
    expect(r.stderr).toContain('hint: add --yes to `svc');
    expect(await stillThere(args as string[])).toBe(true);
  });

  it('--yes proceeds without asking, also with --json', async () => {
    const t = await newTask('bye');
    const r = await svc(['tasks', 'rm', t.id, '--yes', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ removed: true });
    const refused = await svc(['--json', 'tasks', 'rm', (await newTask('stay')).id]);
    expect(JSON.parse(refused.stderr)).toMatchObject({ code: 'usage', hint: expect.stringContaining('--yes') });
  });
});

describe('errors name what was typed', () => {
  it('a refused field is named by its flag, not by its place in the request body', async () => {
    // Checked by the daemon (the CLI sends what was typed): its detail names body.maxRows.
    const rows = await svc(['db', 'query', 'nope-db', 'SELECT 1', '--max-rows', '500']);
    expect(rows.code).toBe(1);
    expect(rows.stderr).toMatch(/^ {2}--max-rows: /m);
    expect(rows.stderr).not.toContain('body.maxRows');
    const json = await svc(['--json', 'db', 'query', 'nope-db', 'SELECT 1', '--max-rows', '500']);
    expect(JSON.parse(json.stderr).details).toEqual([{ path: '--max-rows', message: expect.any(String) }]);
    // Checked before sending: named by its flag too.
    const turns = await svc(['agents', 'add', 'flagged', '--max-turns', '0']);
    expect(turns.code).toBe(2);
    expect(turns.stderr).toMatch(/^ {2}--max-turns: /m);
  });
});
