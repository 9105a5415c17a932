import { existsSync, readFileSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { exited, serve, svc } from './cli-helpers.js';
import { eventually, makeProject } from './harness.js';
import { tempDir } from './temp.js';

const mode = (p: string) => statSync(p).mode & 0o777;
const children: { kill(): void }[] = [];
afterEach(() => children.splice(0).forEach((c) => c.kill()));

describe('svc serve', () => {
  it('writes .svc/daemon.json with the real port, private files, and status reports it', async () => {
    const root = makeProject();
    const { child, url } = await serve(root);
    children.push(child);
    const info = JSON.parse(readFileSync(join(root, '.svc/daemon.json'), 'utf8'));
    expect(info).toMatchObject({ pid: child.pid, host: '127.0.0.1', url, version: expect.any(String), startedAt: expect.any(String) });
    expect(info.port).toBeGreaterThan(0);
    expect(url).toBe(`http://127.0.0.1:${info.port}`);
    expect(mode(join(root, '.svc'))).toBe(0o700);
    for (const f of ['daemon.json', 'local.key', 'state.sqlite', 'logs/daemon.log']) expect(mode(join(root, '.svc', f)), f).toBe(0o600);

    const st = await svc(['status', '--json'], { cwd: root });
    expect(st.code).toBe(0);
    expect(JSON.parse(st.stdout)).toMatchObject({ pid: child.pid, port: info.port, version: info.version, uptimeSeconds: expect.any(Number) });

    const human = await svc(['status'], { cwd: root });
    expect(human.stdout).toMatch(/status\s+running/);
    expect(human.stdout).toContain(String(info.port));
  });

  it('runs without promise hooks: the CLI enters no AsyncLocalStorage when it is the process', async () => {
    // Entered once, a storage taxes every promise of the process for good (a fifth of the CPU of
    // a POST); the in-process runs the tests use need it, the real binary does not.
    const root = makeProject();
    const log = join(tempDir('svc-probe-'), 'probe.txt');
    const probe = fileURLToPath(new URL('./fixtures/promise-hooks-probe.mjs', import.meta.url));
    const { child, url } = await serve(root, ['--port', '0'], { NODE_OPTIONS: `--import=${probe}`, SVC_TEST_PROBE_LOG: log });
    children.push(child);
    const samples = () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    // Two more samples: the later one was certainly taken after the request was served.
    const served = samples().length;
    await eventually(() => samples().length >= served + 2, 10_000);
    expect(new Set(samples())).toEqual(new Set(['off']));
  });

  it('SIGTERM lets an in-flight request finish, then removes daemon.json and exits 0', async () => {
    const root = makeProject();
    const { child, url, output } = await serve(root);
    children.push(child);
    const key = readFileSync(join(root, '.svc/local.key'), 'utf8').trim();
    const u = new URL(url);
    const body = JSON.stringify({ name: 'late' });
    // Start a request, send half its body, stop the daemon, then finish the body once it is shutting down.
    const response = new Promise<number>((resolve, reject) => {
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), expect: '100-continue' };
      const req = request({ host: u.hostname, port: u.port, method: 'POST', path: '/api/v1/agents', headers }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      });
      req.on('error', reject);
      // 100 Continue: the daemon has read the head and is handling the request.
      req.once('continue', () => {
        req.write(body.slice(0, 5));
        child.kill('SIGTERM');
        eventually(() => output().includes('"msg":"shutting down"'), 10_000).then(() => req.end(body.slice(5)), reject);
      });
    });
    expect(await response).toBe(201);
    expect(await exited(child)).toBe(0);
    expect(existsSync(join(root, '.svc/daemon.json'))).toBe(false);
  });

  it('svc stop shuts it down gracefully and status then exits 3 with a hint', async () => {
    const root = makeProject();
    const { child } = await serve(root);
    children.push(child);
    const stop = await svc(['stop'], { cwd: root });
    expect(stop.code).toBe(0);
    expect(await exited(child)).toBe(0);
    expect(existsSync(join(root, '.svc/daemon.json'))).toBe(false);
    const st = await svc(['status'], { cwd: root });
    expect(st.code).toBe(3);
    expect(st.stderr).toContain('svc serve');
  });

  it('data acknowledged before a kill -9 is there after restart', async () => {
    const root = makeProject();
    const first = await serve(root);
    children.push(first.child);
    const add = await svc(['agents', 'add', 'durable', '--role', 'keeper'], { cwd: root });
    expect(add.code).toBe(0);
    first.child.kill('SIGKILL');
    await exited(first.child);
    const second = await serve(root);
    children.push(second.child);
    const show = await svc(['agents', 'show', 'durable', '--json'], { cwd: root });
    expect(JSON.parse(show.stdout)).toMatchObject({ name: 'durable', role: 'keeper' });
  });

  it('refuses to start without a project.json, with a hint', async () => {
    const empty = tempDir('svc-empty-');
    const r = await svc(['serve', '--port', '0'], { cwd: empty });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('svc init');
  });

  it('refuses an invalid project.json at start, naming the field', async () => {
    const root = makeProject({ server: { port: -1 } });
    const r = await svc(['serve'], { cwd: root });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('server.port');
  });
});

describe('svc init', () => {
  it('writes a starter project.json and ignores .svc/', async () => {
    const { writeFileSync } = await import('node:fs');
    const dir = tempDir('svc-init-');
    writeFileSync(join(dir, '.gitignore'), 'node_modules/');
    const r = await svc(['init', '--name', 'demo'], { cwd: dir });
    expect(r.code).toBe(0);
    expect(JSON.parse(readFileSync(join(dir, 'project.json'), 'utf8'))).toMatchObject({ name: 'demo', server: { host: '127.0.0.1', port: 7420 } });
    expect(readFileSync(join(dir, '.gitignore'), 'utf8')).toBe('node_modules/\n.svc/\n');
    const again = await svc(['init'], { cwd: dir });
    expect(again.code).toBe(2);
    expect(readFileSync(join(dir, '.gitignore'), 'utf8')).toBe('node_modules/\n.svc/\n');
  });
});
