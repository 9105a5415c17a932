import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageVersion } from '../src/lib/version.js';
import { readDaemonInfo, readLocalKey } from '../src/state-dir.js';
import { verifyWebhook } from '../src/resources/webhooks/verify.js';
import { collect } from './sse-collector.js';
import { childrenOf } from './procs.js';
import { startTestPostgres, type TestPostgres } from './pg-server.js';
import { startReceiver, type Receiver } from './webhook-receiver.js';
import { tempDir } from './temp.js';

// The single executable (npm run build:exe) as a user gets it: built from this checkout with the
// node running the tests (and the native addons built for it), copied alone into an empty folder,
// and run with a PATH that holds no node, a fresh HOME and nothing of the repository: the CLI, the
// daemon, its webhook thread, a data query in its child process, SSE, MCP, the board and a clean SIGTERM.

const REPO = new URL('..', import.meta.url).pathname;
const work = tempDir('svc-exe-');
const alone = join(work, 'alone');
const exe = join(alone, process.platform === 'win32' ? 'svc.exe' : 'svc');
const home = join(work, 'home');
const noNode = join(work, 'bin');
let built: { skip?: string } = {};

const env = (more: Record<string, string> = {}): NodeJS.ProcessEnv => ({ PATH: noNode, HOME: home, SVC_KEYCHAIN: 'off', NO_COLOR: '1', ...more });

function svc(cwd: string, ...args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync(exe, args, { cwd, env: env(), encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

beforeAll(() => {
  mkdirSync(alone, { recursive: true });
  mkdirSync(noNode, { recursive: true });
  mkdirSync(home, { recursive: true });
  const out = join(work, 'build', 'svc');
  const r = spawnSync(process.execPath, [join(REPO, 'scripts', 'build-exe.mjs'), '--out', out], { encoding: 'utf8', timeout: 240_000 });
  if (r.status !== 0) {
    // Only a Node without the SEA fuse (a distribution's own build) is a reason to skip; anything else fails.
    if (/has no SEA fuse/.test(r.stderr)) {
      built = { skip: r.stderr.trim() };
      console.warn(`exe tests skipped: ${built.skip}`);
      return;
    }
    throw new Error(`build:exe failed (${r.status}): ${r.stderr}${r.stdout}`);
  }
  copyFileSync(out, exe);
  spawnSync('chmod', ['755', exe]);
}, 300_000);

/** `svc serve --port 0` from the executable, in the foreground as a service manager runs it; resolves once healthz answers. */
async function serve(root: string, more: Record<string, string> = {}): Promise<{ child: ChildProcess; url: string; key: string; stderr: () => string }> {
  const child = spawn(exe, ['serve', '--port', '0'], { cwd: root, env: env(more), stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`svc serve exited ${child.exitCode}: ${out}`);
    if (Date.now() > deadline) throw new Error(`svc serve not ready: ${out}`);
    const info = readDaemonInfo(root);
    if (info?.pid === child.pid) {
      const ok = await fetch(`${info.url}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return { child, url: info.url, key: readLocalKey(root)!, stderr: () => out };
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

const exited = (child: ChildProcess): Promise<number | null> => (child.exitCode !== null ? Promise.resolve(child.exitCode) : new Promise((r) => child.once('exit', (code) => r(code))));

describe('the single executable', () => {
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(() => receiver?.close());

  it('runs alone, with no node on PATH: the CLI, serve, a claim seen on SSE and by a webhook, a data query, MCP, the board, SIGTERM, --detach', async (ctx) => {
    if (built.skip) return ctx.skip(built.skip);
    expect(spawnSync('sh', ['-c', 'command -v node'], { env: env() }).status).not.toBe(0);
    expect(readdirSync(alone)).toEqual([exe.split('/').pop()]);

    const v = svc(alone, '--version');
    expect(v).toMatchObject({ code: 0, out: `${packageVersion()}\n` });

    const root = join(work, 'project');
    mkdirSync(root);
    expect(svc(root, 'init').code).toBe(0);
    const daemon = await serve(root);
    const api = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${daemon.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${daemon.key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as any };
    };

    // Webhooks: the delivery goes out through the sender thread, whose code is an asset of the executable.
    const hook = await api('POST', '/v1/webhooks', { url: receiver.url, events: ['task:claimed'] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    const sse = await collect(daemon.url, { key: daemon.key, filter: 'task:claimed' });
    try {
      expect(svc(root, 'agents', 'add', 'bot', '--role', 'dev').code).toBe(0);
      const added = svc(root, 'tasks', 'add', 'ship the executable', '--json');
      expect(added.code, added.err).toBe(0);
      const taskId = JSON.parse(added.out).id as string;
      const claimed = svc(root, 'tasks', 'claim', taskId, '--agent', 'bot');
      expect(claimed.code, claimed.err).toBe(0);
      await sse.until((c) => c.messages.some((m) => m.event === 'task:claimed'), 10_000);
      const [delivery] = await receiver.waitFor(1, 15_000);
      const secret = hook.body.data.secret as string;
      expect(verifyWebhook(delivery!.body, delivery!.headers['x-service-signature'] as string, secret)).toBe(true);
      expect(JSON.parse(delivery!.body)).toMatchObject({ event: 'task:claimed', data: { taskId } });
    } finally {
      sse.close();
    }

    // A data query runs in a child process: the executable started again as the data worker.
    writeFileSync(join(root, 'notes.json'), JSON.stringify({ tables: { notes: { columns: { body: { type: 'text' } } } } }));
    expect(svc(root, 'db', 'create', 'notes', '--schema', 'notes.json').code).toBe(0);
    const q = svc(root, 'db', 'query', 'notes', 'select 40 + 2 as answer', '--json');
    expect(q.code, q.err).toBe(0);
    expect(JSON.stringify(JSON.parse(q.out))).toContain('"answer":42');
    const workers = childrenOf(daemon.child.pid!);
    expect(workers.length).toBeGreaterThan(0);

    // MCP over HTTP lists the agent tools.
    const tools = await api('POST', '/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(tools.status).toBe(200);
    expect(tools.body.result.tools.map((t: { name: string }) => t.name)).toContain('task_claim');

    // The board is served from the executable's own assets.
    const board = await fetch(`${daemon.url}/`);
    expect(board.status).toBe(200);
    expect(board.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await board.text()).toContain('<script');

    // The native addons it needed went to the private cache, one folder per hash (with node:sqlite
    // and the keychain off, it may have needed none yet: the keychain's addon comes at first use).
    const cache = join(home, '.cache', 'svc', 'native');
    const inCache = () => (existsSync(cache) ? readdirSync(cache) : []);
    expect(inCache().every((d) => /^[0-9a-f]{64}$/.test(d))).toBe(true);

    // Nothing the data worker printed (a warning on each start would be logged as its stderr, a
    // second after it came).
    await new Promise((r) => setTimeout(r, 1_500));
    expect(daemon.stderr()).not.toContain('data worker stderr');

    daemon.child.kill('SIGTERM');
    expect(await exited(daemon.child)).toBe(0);
    for (const pid of workers) expect(existsSync(`/proc/${pid}`)).toBe(false);

    // The keychain's native addon loads from the executable: with the keychain on, doctor reaches
    // the OS keychain (there is none here, so it says why, in the addon's own words).
    const doctor = spawnSync(exe, ['doctor', '--json'], { cwd: root, env: { ...env(), SVC_KEYCHAIN: '' }, encoding: 'utf8', timeout: 30_000 });
    const keychain = (JSON.parse(doctor.stdout) as { check: string; status: string; detail: string }[]).find((c) => c.check === 'keychain')!;
    expect(keychain, doctor.stdout + doctor.stderr).toBeDefined();
    expect(keychain.detail).not.toMatch(/not in this executable|Cannot find module|dlopen/);
    expect(inCache().some((d) => existsSync(join(cache, d, 'keyring.node')))).toBe(true);

    // A cache folder others can write to is refused (it holds code the executable runs), with the fix.
    const open = join(work, 'open-cache');
    mkdirSync(open, { mode: 0o777 });
    chmodSync(open, 0o777);
    // The keychain on: its addon is what this executable unpacks on Node 22 and 24 (node:sqlite needs none).
    const refused = spawnSync(exe, ['doctor'], { cwd: root, env: env({ SVC_CACHE_DIR: open, SVC_KEYCHAIN: '' }), encoding: 'utf8', timeout: 30_000 });
    expect(refused.stdout + refused.stderr).toContain(`the cache ${open} is not a private folder of this user`);
    expect(existsSync(join(open, 'native')) ? readdirSync(join(open, 'native')).flatMap((d) => readdirSync(join(open, 'native', d))) : []).toEqual([]);

    // In the background, the executable starts itself (there is no bin/svc to give node).
    const detached = svc(root, 'serve', '--detach', '--port', '0');
    expect(detached.code, detached.err).toBe(0);
    expect(JSON.parse(svc(root, 'status', '--json').out)).toMatchObject({ pid: expect.any(Number), version: packageVersion() });
    expect(svc(root, 'stop').code).toBe(0);
  }, 120_000);

  describe('with the state on PostgreSQL', () => {
    let pg: TestPostgres | { skip: string };
    beforeAll(async () => {
      if (!built.skip) pg = await startTestPostgres();
    }, 60_000);
    afterAll(() => (pg && 'stop' in pg ? pg.stop() : undefined));

    it('serves tasks through its connection thread', async (ctx) => {
      if (built.skip) return ctx.skip(built.skip);
      if ('skip' in pg) return ctx.skip(pg.skip);
      const root = join(work, 'project-pg');
      mkdirSync(root);
      writeFileSync(join(root, 'project.json'), JSON.stringify({ name: 'exe-pg', state: { provider: 'postgres', url: pg.url } }));
      const daemon = await serve(root, { SVC_VAULT_KEY: randomBytes(32).toString('base64') });
      const add = svc(root, 'tasks', 'add', 'kept in postgres', '--json');
      expect(add.code, add.err).toBe(0);
      const ls = svc(root, 'tasks', 'ls', '--json');
      expect(ls.out).toContain('kept in postgres');
      // The state is reached through `pg`, plain JavaScript: no addon to carry.
      expect(daemon.stderr()).toContain('state on PostgreSQL');
      daemon.child.kill('SIGTERM');
      expect(await exited(daemon.child)).toBe(0);
    }, 60_000);
  });
});
