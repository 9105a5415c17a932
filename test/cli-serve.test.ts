import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { formatRecord, prettyLogSink } from '../src/cli/log-format.js';
import { SvcClient } from '../src/client/client.js';
import { stopDaemon } from '../src/cli/system/serve-command.js';
import { readDaemonInfo } from '../src/state-dir.js';
import { exited, serve, svc } from './cli-helpers.js';
import { makeProject } from './harness.js';
import { pidAlive } from '../src/lib/proc.js';

// `svc serve` for people, and the daemon in the background: --detach, stop, restart and logs with
// real processes, driven through the in-process CLI.

const pids: number[] = [];
afterEach(() => {
  for (const pid of pids.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

describe('serve --detach, stop, restart, logs', () => {
  it('starts in the background once it answers, restarts on the same port, and stop returns once it has exited', async () => {
    const root = makeProject();
    const start = await svc(['serve', '--detach', '--port', '0'], { cwd: root });
    expect(start.code, start.stderr).toBe(0);
    const first = readDaemonInfo(root)!;
    pids.push(first.pid);
    expect(first.pid).not.toBe(process.pid);
    expect(start.stdout).toContain(`running in the background on ${first.url} (pid ${first.pid})`);
    // It answered before serve --detach returned.
    expect((await fetch(`${first.url}/healthz`)).status).toBe(200);

    const again = await svc(['serve', '--detach'], { cwd: root });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`already running for this project (pid ${first.pid}`);

    const status = await svc(['status'], { cwd: root });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`pid\\s+${first.pid}`));

    const restart = await svc(['restart'], { cwd: root });
    expect(restart.code, restart.stderr).toBe(0);
    const second = readDaemonInfo(root)!;
    pids.push(second.pid);
    expect(second.pid).not.toBe(first.pid);
    expect(second.port).toBe(first.port);
    expect(pidAlive(first.pid)).toBe(false);
    expect(restart.stdout).toContain(`restarted (pid ${first.pid} → ${second.pid})`);

    const logs = await svc(['logs', '-n', '50'], { cwd: root });
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toMatch(/^svc \S+ listening on http:\/\/127\.0\.0\.1:\d+ — project test-project, vault key from file$/m);
    expect(logs.stdout).toMatch(/^\d\d:\d\d:\d\d 200 GET \/api\/v1\/status [\d.]+ ms$/m);
    expect(logs.stdout).not.toContain('{"time"');
    const raw = await svc(['logs', '-n', '2', '--json'], { cwd: root });
    expect(
      raw.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).level),
    ).toHaveLength(2);

    const stop = await svc(['stop'], { cwd: root });
    expect(stop.code, stop.stderr).toBe(0);
    expect(stop.stdout).toBe(`stopped (pid ${second.pid})\n`);
    // Returned only once the process had exited, and it cleaned up after itself.
    expect(pidAlive(second.pid)).toBe(false);
    expect(existsSync(join(root, '.svc', 'daemon.json'))).toBe(false);

    const stopAgain = await svc(['stop'], { cwd: root });
    expect(stopAgain.code).toBe(3);
  });

  it('says why when the background daemon cannot start', async () => {
    const root = makeProject({ server: { port: 'not a port' } });
    const r = await svc(['serve', '--detach'], { cwd: root });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('exited (1) before it answered');
    expect(r.stderr).toContain('server.port');
  });
});

describe('restart never stops a daemon it could not start again', () => {
  const pgUrl = inject('pgUrl');

  it('an invalid project.json: refused before the stop, the daemon keeps running', async () => {
    const root = makeProject();
    expect((await svc(['serve', '--detach', '--port', '0'], { cwd: root })).code).toBe(0);
    const running = readDaemonInfo(root)!;
    pids.push(running.pid);
    const good = readFileSync(join(root, 'project.json'), 'utf8');
    writeFileSync(join(root, 'project.json'), JSON.stringify({ name: 'test-project', server: { port: 'not a port' } }));
    const r = await svc(['restart'], { cwd: root });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('not restarting: from this shell the daemon could not start again');
    expect(r.stderr).toContain('server.port');
    expect(r.stderr).toContain(`the daemon (pid ${running.pid}) was left running`);
    expect(pidAlive(running.pid)).toBe(true);
    expect((await fetch(`${running.url}/healthz`)).status).toBe(200);
    writeFileSync(join(root, 'project.json'), good);
  });

  it.skipIf(!pgUrl)('data on PostgreSQL with SVC_DATA_URL only in the shell that started it: refused from another shell, until the settings file gives it (600 only)', async () => {
    const root = makeProject({ data: { provider: 'postgres' }, envFile: 'svc.env' });
    writeFileSync(join(root, 'svc.env'), '# nothing yet\n', { mode: 0o600 });
    expect((await svc(['serve', '--detach', '--port', '0'], { cwd: root, env: { SVC_DATA_URL: pgUrl } })).code).toBe(0);
    const first = readDaemonInfo(root)!;
    pids.push(first.pid);

    const refused = await svc(['restart'], { cwd: root, env: { SVC_DATA_URL: '' } });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('data: data.provider is "postgres" but there is no server URL');
    expect(refused.stderr).toContain('envFile');
    expect(pidAlive(first.pid)).toBe(true);

    // The settings file, readable by others: refused (it holds a password), the daemon untouched.
    writeFileSync(join(root, 'svc.env'), `SVC_DATA_URL=${pgUrl}\n`);
    chmodSync(join(root, 'svc.env'), 0o644);
    const open = await svc(['restart'], { cwd: root, env: { SVC_DATA_URL: '' } });
    expect(open.code).toBe(1);
    expect(open.stderr).toContain('chmod 600');
    expect(open.stderr).not.toContain(new URL(pgUrl).password);
    expect(pidAlive(first.pid)).toBe(true);

    chmodSync(join(root, 'svc.env'), 0o600);
    const ok = await svc(['restart'], { cwd: root, env: { SVC_DATA_URL: '' } });
    expect(ok.code, ok.stderr).toBe(0);
    const second = readDaemonInfo(root)!;
    pids.push(second.pid);
    expect(second.pid).not.toBe(first.pid);
    expect(pidAlive(first.pid)).toBe(false);
    const key = readFileSync(join(root, '.svc', 'local.key'), 'utf8').trim();
    const made = await fetch(`${second.url}/api/v1/data`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'restarted', schema: { tables: { t: { columns: { a: { type: 'text' } } } } } }),
    });
    expect(made.status).toBe(201);
    await fetch(`${second.url}/api/v1/data/restarted`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } });
    const log = readFileSync(join(root, '.svc', 'logs', 'daemon.log'), 'utf8');
    expect(log).toContain('"msg":"settings file"');
    expect(log).not.toContain(new URL(pgUrl).password);
  });
});

describe('stop', () => {
  it('says so, naming the pid, when the daemon has not exited in time', async () => {
    // A "daemon" that accepts the shutdown request and stays: this test process itself.
    const server = createServer((_req, res) => res.writeHead(202, { 'content-type': 'application/json' }).end('{"ok":true,"data":{"stopping":true}}'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const root = makeProject();
    mkdirSync(join(root, '.svc'), { mode: 0o700 });
    writeFileSync(join(root, '.svc', 'daemon.json'), JSON.stringify({ pid: process.pid, url }));
    try {
      const err = await stopDaemon({ json: false, yes: false, root, client: new SvcClient({ url }) }, 300).catch((e) => e);
      expect(err).toBeInstanceOf(Error);
      expect(err.message).toBe(`the daemon (pid ${process.pid}) did not exit within 0.3 s`);
      expect(err.hint).toContain(`kill ${process.pid}`);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe('serve output', () => {
  it('on a terminal: one start line, then one short line per request; the log file keeps JSON', async () => {
    const root = makeProject();
    let out = '';
    const lines: string[] = [];
    const sink = prettyLogSink((t) => (out += t), { quietStart: true });
    const records = [
      { time: '2026-01-01T12:01:02.000Z', level: 'info', msg: 'skills indexed', count: 0 },
      {
        time: '2026-01-01T12:01:02.000Z',
        level: 'info',
        msg: 'vault master key',
        source: 'file',
        where: '/x',
        entries: 0,
        keychainSkipped: 'the OS keychain is unavailable: Platform secure storage failure: DBus error: The name org.freedesktop.secrets was not provided by any .service files\n  at dbus::…',
      },
      { time: '2026-01-01T12:01:02.000Z', level: 'info', msg: 'listening', url: 'http://127.0.0.1:7420', project: 'demo', root, version: '1.2.3' },
      { time: '2026-01-01T12:01:03.000Z', level: 'info', msg: 'request', id: 'r1', method: 'POST', path: '/api/v1/tasks', status: 201, ms: 3.2 },
    ];
    for (const r of records) {
      lines.push(JSON.stringify(r));
      sink(JSON.stringify(r) + '\n');
    }
    const printed = out.trimEnd().split('\n');
    expect(printed).toHaveLength(3);
    expect(printed[0]).toMatch(/^\d\d:\d\d:\d\d warn {2}OS keychain unavailable \(Platform secure storage failure: DBus error: [^\n]*…\); the vault key is in a file$/);
    expect(printed[0]!.length).toBeLessThan(160);
    expect(printed[1]).toBe('svc 1.2.3 listening on http://127.0.0.1:7420 — project demo, vault key from file');
    expect(printed[2]).toMatch(/^\d\d:\d\d:\d\d 201 POST \/api\/v1\/tasks 3\.2 ms$/);
    expect(formatRecord({ level: 'warn', msg: 'slow', ms: 900 })).toMatch(/warn {2}slow ms=900$/);
    // A request that comes before the start line (a client that knew the port) is shown all the same.
    let early = '';
    prettyLogSink((t) => (early += t), { quietStart: true })(JSON.stringify(records[3]) + '\n' + JSON.stringify(records[0]));
    expect(early).toMatch(/^\d\d:\d\d:\d\d 201 POST \/api\/v1\/tasks 3\.2 ms\n$/);
    // `svc logs` starts anywhere in the file: nothing is held back waiting for a start line.
    let logs = '';
    prettyLogSink((t) => (logs += t))(JSON.stringify(records[3]));
    expect(logs).toMatch(/^\d\d:\d\d:\d\d 201 POST \/api\/v1\/tasks 3\.2 ms\n$/);
  });

  it('svc serve in a (pseudo) terminal prints readable lines, with --log-format json it prints JSON, and the file is JSON either way', async () => {
    const root = makeProject();
    let stdout = '';
    const { run } = await import('../bin/svc.js');
    const serving = run(['serve', '--port', '0'], {
      stdout: { write: (s: string) => (stdout += s), isTTY: true },
      stderr: { write: () => true, isTTY: true },
      env: { ...process.env, NO_COLOR: '1' },
      cwd: root,
      isTTY: true,
    });
    await expect.poll(() => readDaemonInfo(root)?.url, { timeout: 15_000 }).toBeTruthy();
    const info = readDaemonInfo(root)!;
    const key = readFileSync(join(root, '.svc', 'local.key'), 'utf8').trim();
    await fetch(`${info.url}/api/v1/status`, { headers: { authorization: `Bearer ${key}` } });
    // Request lines are batched (every 25 ms) and written off the event loop: wait for this one
    // rather than race it against the shutdown's final drain on a loaded machine.
    await expect.poll(() => stdout, { timeout: 10_000 }).toMatch(/ GET \/api\/v1\/status /);
    await fetch(`${info.url}/api/v1/shutdown`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
    expect(await serving).toBe(0);
    expect(stdout).toMatch(/^svc \S+ listening on http:\/\/127\.0\.0\.1:\d+ — project test-project, vault key from file\n/);
    expect(stdout).toMatch(/^\d\d:\d\d:\d\d 200 GET \/api\/v1\/status [\d.]+ ms$/m);
    expect(stdout).not.toContain('{');
    const file = readFileSync(join(root, '.svc', 'logs', 'daemon.log'), 'utf8')
      .trim()
      .split('\n');
    expect(file.every((l) => JSON.parse(l).time)).toBe(true);

    let json = '';
    const serving2 = run(['serve', '--port', '0', '--log-format', 'json'], {
      stdout: { write: (s: string) => (json += s), isTTY: true },
      stderr: { write: () => true },
      env: { ...process.env },
      cwd: root,
      isTTY: true,
    });
    await expect.poll(() => readDaemonInfo(root)?.url, { timeout: 15_000 }).toBeTruthy();
    await fetch(`${readDaemonInfo(root)!.url}/api/v1/shutdown`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
    expect(await serving2).toBe(0);
    expect(
      json
        .trim()
        .split('\n')
        .every((l) => JSON.parse(l).msg),
    ).toBe(true);
  });
});

describe('signals', () => {
  it('a second SIGTERM during the shutdown grace period exits at once and still removes daemon.json', async () => {
    const root = makeProject();
    const { child, url } = await serve(root);
    // A request whose body never finishes holds the graceful close open for its grace period.
    const u = new URL(url);
    const sock = connect(Number(u.port), u.hostname);
    sock.on('error', () => undefined); // reset when the daemon quits: expected
    await new Promise((r) => sock.once('connect', r));
    const key = readFileSync(join(root, '.svc', 'local.key'), 'utf8').trim();
    // Expect: 100-continue makes the server say when it has the request head (the request is then
    // in flight, and the graceful close waits for it); the body never comes.
    const continued = new Promise((r) => sock.on('data', (c) => String(c).includes('100 Continue') && r(undefined)));
    sock.write(`POST /api/v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n`);
    await continued;
    sock.write('{"ti');
    let out = '';
    child.stdout!.on('data', (c) => (out += c));
    child.kill('SIGTERM');
    await expect.poll(() => out, { timeout: 10_000 }).toContain('"msg":"shutting down"');
    expect(existsSync(join(root, '.svc', 'daemon.json'))).toBe(true);
    child.kill('SIGTERM');
    expect(await exited(child)).toBe(143);
    expect(existsSync(join(root, '.svc', 'daemon.json'))).toBe(false);
    sock.destroy();
  });
});
