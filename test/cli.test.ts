import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { svc } from './cli-helpers.js';
import { startTestDaemon, type TestDaemon } from './harness.js';
import { tempDir } from './temp.js';

let d: TestDaemon;
let run: (...args: string[]) => ReturnType<typeof svc>;
beforeAll(async () => {
  d = await startTestDaemon();
  // The CLI finds the daemon and the key from the project's .svc/, as a user's would.
  run = (...args) => svc(args, { cwd: d.root });
});
afterAll(async () => {
  await d.close();
});

describe('svc agents and teams', () => {
  it('adds, lists, shows, sets and removes', async () => {
    expect((await run('teams', 'add', 'core', '-d', 'Core team')).code).toBe(0);
    const add = await run('agents', 'add', 'alice', '--role', 'dev', '--model', 'openai/gpt-4o', '--team', 'core', '--max-turns', '5', '--tool', 'git', '--tool', 'npm');
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout).toContain('created agent alice');

    const ls = await run('agents', 'ls');
    expect(ls.stdout.split('\n')[0]).toMatch(/^NAME\s+ROLE\s+MODEL\s+TEAM\s+REPORTS TO\s+RUNTIME$/);
    expect(ls.stdout).toMatch(/alice\s+dev\s+openai\/gpt-4o\s+core/);

    const json = await run('agents', 'ls', '--json');
    expect(JSON.parse(json.stdout)).toEqual([expect.objectContaining({ name: 'alice', allowedTools: ['git', 'npm'], maxTurns: 5 })]);

    expect((await run('agents', 'set', 'alice', '--reasoning', 'high', '--unset', 'team')).code).toBe(0);
    const shown = JSON.parse((await run('agents', 'show', 'alice', '--json')).stdout);
    expect(shown).toMatchObject({ reasoning: 'high', team: null, role: 'dev' });

    const human = await run('agents', 'show', 'alice');
    expect(human.stdout).toMatch(/reasoning\s+high/);

    expect((await run('teams', 'rename', 'core', 'platform')).code).toBe(0);
    const teams = JSON.parse((await run('teams', 'ls', '--json')).stdout);
    expect(teams).toEqual([expect.objectContaining({ name: 'platform', description: 'Core team' })]);

    expect((await run('agents', 'rm', 'alice', '--yes')).code).toBe(0);
    expect((await run('teams', 'rm', 'platform', '-y')).code).toBe(0);
    expect(JSON.parse((await run('agents', 'ls', '--json')).stdout)).toEqual([]);
  });

  it("checks option values with the API schema before any request: exit 2, with the API's message under the flag typed", async () => {
    const posts = () => d.logs.filter((l) => l.includes('"method":"POST","path":"/api/v1/agents"')).length;
    const before = posts();
    const r = await run('agents', 'add', 'bob', '--max-turns', '0');
    expect(r.code).toBe(2);
    expect(posts()).toBe(before);
    const api = await d.api('POST', '/api/v1/agents', { body: { name: 'bob', maxTurns: 0 } });
    expect(api.body.details).toEqual([{ path: 'body.maxTurns', message: expect.any(String) }]);
    expect(r.stderr).toContain(`--max-turns: ${api.body.details[0].message}`);
  });

  it('exits 1 with the code and message on an API error', async () => {
    const nf = await run('agents', 'show', 'nobody');
    expect(nf.code).toBe(1);
    expect(nf.stderr).toMatch(/not_found \(404\): Agent "nobody" not found/);
  });

  it('exits 2 on a usage error', async () => {
    expect((await run('agents', 'add')).code).toBe(2);
    expect((await run('agents', 'add', 'x', '--max-turns', 'many')).code).toBe(2);
    expect((await run('agents', 'add', 'x', '--reasoning', 'extreme')).code).toBe(2);
    expect((await run('agents', 'set', 'x')).code).toBe(2);
    expect((await run('no-such-command')).code).toBe(2);
  });

  it('exits 3 with a hint when no daemon answers', async () => {
    const r = await svc(['agents', 'ls', '--url', 'http://127.0.0.1:9', '--api-key', 'whatever-0123456789']);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('svc serve');
  });

  it('uses --url and --api-key over what the project says', async () => {
    const bad = await svc(['agents', 'ls', '--url', d.url, '--api-key', 'wrong-key-0123456789']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('unauthorized');
    const good = await svc(['agents', 'ls', '--json', '--url', d.url, '--api-key', d.key]);
    expect(good.code).toBe(0);
  });

  it('prints help and version with exit 0', async () => {
    const help = await svc(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('agents');
    expect((await svc(['--version'])).stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });
});

describe('finding the daemon', () => {
  it('outside any project, says so instead of calling whatever listens on the default port', async () => {
    const r = await svc(['agents', 'ls'], { cwd: tempDir('svc-noproj-') });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('svc init');
  });

  it('in a project whose daemon is not running, exits 3 with the hint to start it', async () => {
    const { makeProject } = await import('./harness.js');
    const r = await svc(['status'], { cwd: makeProject() });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('svc serve');
  });

  it('prints each invalid field once, and errors as JSON with --json', async () => {
    const r = await run('agents', 'add', 'bob', '--max-turns', '0');
    expect(r.stderr.match(/--max-turns:/g)).toHaveLength(1);
    const j = await run('--json', 'agents', 'show', 'ghost');
    expect(j.code).toBe(1);
    expect(JSON.parse(j.stderr)).toEqual({ code: 'not_found', error: 'Agent "ghost" not found.', status: 404 });
    const unknown = await run('--json', 'tasks', 'ls', '--colour');
    expect(unknown.code).toBe(2);
    expect(JSON.parse(unknown.stderr)).toEqual({ code: 'usage', error: "unknown option '--colour'", hint: expect.stringContaining('--help') });
    const usage = await run('--json', 'tasks', 'show', 'ab');
    expect(usage.code).toBe(2);
    expect(JSON.parse(usage.stderr)).toEqual({ code: 'usage', error: expect.stringContaining('too short') });
    const none = await svc(['--json', 'status'], { cwd: (await import('./harness.js')).makeProject() });
    expect(none.code).toBe(3);
    expect(JSON.parse(none.stderr)).toEqual({ code: 'unreachable', error: expect.stringContaining('no svc daemon is running'), hint: expect.stringContaining('svc serve') });
  });
});

describe('the real binary (child processes: exit codes as a shell sees them)', () => {
  it('exits 0, 1, 2 and 3', async () => {
    const { svcChild } = await import('./cli-helpers.js');
    const version = await svcChild(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    expect((await svcChild(['agents', 'show', 'ghost'], { cwd: d.root })).code).toBe(1);
    expect((await svcChild(['tasks', 'show', 'ab'], { cwd: d.root })).code).toBe(2);
    expect((await svcChild(['agents', 'ls', '--url', 'http://127.0.0.1:9', '--api-key', 'whatever-0123456789'])).code).toBe(3);
  });
});

describe('output', () => {
  it('exits quietly when the reader of its output goes away (svc openapi | head)', async () => {
    const { spawn } = await import('node:child_process');
    const { SVC } = await import('./cli-helpers.js');
    const child = spawn(process.execPath, [SVC, 'openapi'], { cwd: d.root, env: { ...process.env, SERVICE_API_KEY: '' } });
    let stderr = '';
    child.stderr.on('data', (c) => (stderr += c));
    child.stdout.once('data', () => child.stdout.destroy());
    const code = await new Promise<number | null>((r) => child.on('close', r));
    expect(stderr).not.toContain('EPIPE');
    expect(code).toBe(0);
  });
});
