import { spawn, type ChildProcess } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { connectionCapFor, readFileLimit } from '../src/kernel/connections.js';
import { readLocalKey } from '../src/state-dir.js';
import { SVC } from './cli-helpers.js';
import { eventually, makeProject, startTestDaemon, type TestDaemon } from './harness.js';
import { collect } from './sse-collector.js';

const sockets: Socket[] = [];
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
});

/** A TCP connection that sends nothing; resolves once connected, records when the server closes it. */
function idleConnection(port: number, localAddress = '127.0.0.1'): Promise<{ socket: Socket; closed: () => boolean; data: () => string }> {
  return new Promise((resolve, reject) => {
    let closed = false;
    let data = '';
    const socket = connect({ host: '127.0.0.1', port, localAddress });
    sockets.push(socket);
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (data += c));
    socket.on('close', () => (closed = true));
    socket.once('error', () => undefined);
    socket.once('connect', () => resolve({ socket, closed: () => closed, data: () => data }));
    socket.once('error', reject);
  });
}

describe('connection timeouts', () => {
  let d: TestDaemon;
  afterEach(async () => {
    await d?.close();
  });

  it('closes a connection that sends nothing, and one that sends half a head, after headersTimeoutMs', async () => {
    d = await startTestDaemon({ connections: { headersTimeoutMs: 300 } });
    const silent = await idleConnection(d.port);
    const half = await idleConnection(d.port);
    half.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    await eventually(() => silent.closed() && half.closed(), 5_000);
    expect(d.daemon.http.connections().open).toBe(0);
  });

  it('keeps a keep-alive connection and an SSE stream open past the headers timeout', async () => {
    d = await startTestDaemon({ connections: { headersTimeoutMs: 200, keepAliveTimeoutMs: 2_000 }, sse: { heartbeatMs: 100 } });
    const stream = await collect(d.url, { key: d.key });
    const c = await idleConnection(d.port);
    const ask = async () => {
      const before = c.data().length;
      c.socket.write(`GET /api/v1/agents HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${d.key}\r\n\r\n`);
      await eventually(() => /\r\n\r\n\{"ok":true/.test(c.data().slice(before)));
    };
    await ask();
    // Three headers timeouts pass, measured on the daemon's own timers: seven more heartbeats of the
    // stream, 100 ms apart (600 ms at least, however late a loaded machine runs them).
    const pings = stream.comments.length;
    await stream.until((x) => x.comments.length >= pings + 7, 10_000);
    await ask(); // the same socket, three headers timeouts later
    expect(c.closed()).toBe(false);
    await d.api('POST', '/api/v1/agents/teams', { body: { name: 'after-timeout' } });
    await stream.until((x) => x.messages.some((m) => m.event === 'team:created'));
    expect(stream.ended).toBe(false);
    stream.close();
  });
});

describe('connection cap', () => {
  let d: TestDaemon;
  afterEach(async () => {
    await d?.close();
  });

  it('derives the cap from the file limit, below it', () => {
    expect(connectionCapFor(1024)).toBe(896);
    expect(connectionCapFor(256)).toBe(128);
    expect(connectionCapFor(1_048_576)).toBe(4096);
    expect(connectionCapFor(undefined)).toBe(896);
    expect(connectionCapFor(100)).toBe(16);
    if (process.platform === 'linux') expect(readFileLimit()).toBeGreaterThan(0);
  });

  it('takes server.maxConnections from project.json, and the default from the file limit', async () => {
    d = await startTestDaemon({ config: { server: { maxConnections: 40 } } });
    expect(d.daemon.http.connections().max).toBe(40);
    await d.close();
    d = await startTestDaemon();
    expect(d.daemon.http.connections().max).toBe(connectionCapFor(readFileLimit()));
    expect(d.logs.some((l) => l.includes('"msg":"connection limits"'))).toBe(true);
  });

  it('at the cap, an idle connection makes room for a talking one; when all are busy a new one is closed and logged once', async () => {
    d = await startTestDaemon({ connections: { maxConnections: 20 } });
    const idle = [];
    for (let i = 0; i < 20; i++) idle.push(await idleConnection(d.port));
    await eventually(() => d.daemon.http.connections().open === 20);
    // Full of connections that send nothing: a real request still gets in, first try.
    const r = await d.api('GET', '/api/v1/agents');
    expect(r.status).toBe(200);
    await eventually(() => idle[0]!.closed());
    expect(d.daemon.http.connections().evicted).toBeGreaterThanOrEqual(1);

    // Now fill the cap with busy connections (event streams): a new one is closed at once, the streams live on.
    for (const c of idle) c.socket.destroy();
    await eventually(() => d.daemon.http.connections().open <= 1);
    const streams = [];
    for (let i = 0; i < 20; i++) streams.push(await collect(d.url, { key: d.key, filter: 'team:' }));
    await eventually(() => d.daemon.http.connections().open === 20);
    const refused = [];
    for (let i = 0; i < 5; i++) refused.push(await idleConnection(d.port));
    await eventually(() => refused.every((c) => c.closed()));
    expect(d.daemon.http.connections().refused).toBe(5);
    expect(d.logs.filter((l) => l.includes('connection limit reached'))).toHaveLength(1);
    await d.daemon.app.events.write(async () => d.daemon.app.events.emit('team:created', { name: 'still-here' }));
    for (const s of streams) await s.until((x) => x.messages.length === 1);
    expect(streams.every((s) => !s.ended)).toBe(true);
    for (const s of streams) s.close();
  });
});

describe('1,100 idle connections under a 1,024 file limit (svc serve as a child process)', () => {
  let child: ChildProcess | undefined;
  afterEach(async () => {
    if (child && child.exitCode === null) {
      const gone = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      await gone;
    }
  });

  it.skipIf(process.platform !== 'linux')('a valid request succeeds at the first try while they are open', async () => {
    const root = makeProject();
    // `ulimit -n` lowers both the soft and the hard limit, as the measurement did.
    child = spawn('sh', ['-c', 'ulimit -n 1024 && exec "$0" "$@"', process.execPath, SVC, 'serve', '--port', '0'], {
      cwd: root,
      env: { ...process.env, NO_COLOR: '1', SERVICE_API_KEY: '' },
    });
    let out = '';
    child.stdout!.on('data', (c) => (out += c));
    child.stderr!.on('data', (c) => (out += c));
    await eventually(() => /"msg":"listening"/.test(out), 15_000);
    const url = /"msg":"listening","url":"([^"]+)"/.exec(out)![1]!;
    expect(out).toMatch(/"msg":"connection limits","maxConnections":896,"fileLimit":1024/);
    const port = Number(new URL(url).port);
    const key = readLocalKey(root)!;

    const idle = [];
    for (let i = 0; i < 1100; i += 50) idle.push(...(await Promise.all(Array.from({ length: 50 }, () => idleConnection(port)))));
    expect(idle).toHaveLength(1100);
    // Before the fix every request failed here for 89 s; now the first attempt is answered.
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${url}/api/v1/agents`, { headers: { authorization: `Bearer ${key}` } });
      expect(res.status).toBe(200);
    }
    await eventually(() => /connection limit reached/.test(out));
    expect(out.match(/connection limit reached/g)).toHaveLength(1);
    expect(out).not.toMatch(/EMFILE/);
    // The oldest idle ones were closed to make room; no more than the cap is ever open.
    await eventually(() => idle.filter((c) => !c.closed()).length <= 896);
  });
});
