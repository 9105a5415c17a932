import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pgDriver from 'pg';
import { afterAll, expect, inject, it } from 'vitest';
import { FakeClock } from './fake-clock.js';
import { gitProject, startTestDaemon, until, within, type TestDaemon } from './harness.js';
import { startTestPostgres, type TestPostgres } from './pg-server.js';
import { freshStateDatabase } from './state-pg.js';

// A state server that goes away is an outage, not a crash: requests answer 503 unavailable with
// Retry-After while it is down, and the daemon carries on by itself once it is back.

const noPg = inject('pgUrl') === '';
let pg: TestPostgres | undefined;
let d: TestDaemon | undefined;
afterAll(async () => {
  await d?.close().catch(() => undefined);
  pg?.stop();
});

it.skipIf(noPg)('PostgreSQL stopped under the daemon: 503 unavailable, then served again once it is back', { timeout: 60_000 }, async () => {
  // Each step is timed and bounded well inside the test's time, a failure naming it and the steps
  // before it with their times: CI prints a failure's first line only.
  const taken: string[] = [];
  /** The daemon's, once it runs: a failure ends with their last lines. */
  let logs: string[] = [];
  const step = async <T>(what: string, p: () => Promise<T>): Promise<T> => {
    const t0 = Date.now();
    const r = await within(`${what} (after ${taken.join(', ') || 'nothing'})`, p(), 15_000, logs);
    taken.push(`${what} in ${Date.now() - t0} ms`);
    return r;
  };
  // A server of its own: this test stops it (pg_ctl blocks this process, and the daemon in it, until it has stopped or started).
  const started = await step('a PostgreSQL of its own', startTestPostgres);
  if ('skip' in started) throw new Error(started.skip);
  const server = (pg = started);
  const daemon = (d = await step('starting the daemon', () => startTestDaemon({ env: { SVC_STATE_URL: server.url, SVC_VAULT_KEY: randomBytes(32).toString('base64') } })));
  logs = daemon.logs;
  expect((await step('the first write', () => daemon.api('POST', '/api/v1/agents', { body: { name: 'ana' } }))).status).toBe(201);
  await step('stopping PostgreSQL', async () => server.halt());
  const down = await step('a read while it is down', () => daemon.api('GET', '/api/v1/agents/ana'));
  expect(down.status).toBe(503);
  expect(down.body).toMatchObject({ ok: false, code: 'unavailable' });
  expect(down.headers.get('retry-after')).toBe('1');
  expect((await step('/healthz while it is down', () => daemon.api('GET', '/healthz', { key: null }))).status).toBe(200);
  await step('starting it again', async () => server.start());
  expect((await step('a read once it is back', () => daemon.api('GET', '/api/v1/agents/ana'))).status).toBe(200);
  expect((await step('a write once it is back', () => daemon.api('POST', '/api/v1/agents', { body: { name: 'bob' } }))).status).toBe(201);
});

const FAKE_AGENT = fileURLToPath(new URL('./fixtures/runs/fake-agent.mjs', import.meta.url));

it.skipIf(noPg)('a run that falls due while PostgreSQL is down starts once it is back, with no event to wake the runner', { timeout: 60_000 }, async () => {
  const server = await startTestPostgres();
  if ('skip' in server) throw new Error(server.skip);
  const clock = new FakeClock(Date.now());
  const h = await startTestDaemon({ root: gitProject(), clock, env: { SVC_STATE_URL: server.url, SVC_VAULT_KEY: randomBytes(32).toString('base64'), PATH: process.env.PATH! } });
  const runs = async (taskId: string) => (await h.api('GET', `/api/v1/runs?taskId=${taskId}`)).body.data as any[];
  try {
    expect((await h.api('POST', '/api/v1/agents', { body: { name: 'ana', runtime: { kind: 'command', command: FAKE_AGENT } } })).status).toBe(201);
    const t = await h.api('POST', '/api/v1/tasks', { body: { title: 'fails once', description: '@exit 3', assignTo: 'ana', maxRetries: 1 } });
    const taskId = t.body.data.id as string;
    await until('the retry to be queued', async () => (await runs(taskId))[0]?.attempt === 2, 15_000);
    server.halt();
    // The retry falls due: the runner's wake timer runs a pass, which cannot reach the state.
    await clock.pass(10_100);
    await until('the pass to fail', async () => h.logs.some((l) => l.includes('could not look at its queue')), 15_000);
    server.start();
    // Nothing is written meanwhile, so no event asks for a pass: the runner tries again by itself.
    let last: any;
    await until(
      'the retry to run once PostgreSQL is back',
      async () => {
        last = (await runs(taskId))[0];
        return last?.attempt === 2 && last.status === 'failed';
      },
      15_000,
    ).catch((e: Error) => {
      throw new Error(`${e.message}: it is ${last?.status}\n${h.logs.slice(-20).join('\n')}`);
    });
  } finally {
    await h.close();
    server.stop();
  }
});

it.skipIf(noPg)('a task heard of while its run cannot be written is queued once it can, with no event to wake the runner', { timeout: 60_000 }, async () => {
  const url = await freshStateDatabase();
  const h = await startTestDaemon({
    root: gitProject({ state: { statementTimeoutMs: 300 } }),
    env: { SVC_STATE_URL: url, SVC_VAULT_KEY: randomBytes(32).toString('base64'), PATH: process.env.PATH! },
  });
  // Another session keeps every run from being written (a server too slow for them): reads go on.
  const other = new pgDriver.Client(url);
  await other.connect();
  try {
    expect((await h.api('POST', '/api/v1/agents', { body: { name: 'ana', runtime: { kind: 'command', command: FAKE_AGENT } } })).status).toBe(201);
    await other.query('BEGIN; LOCK TABLE runs IN SHARE MODE');
    const t = await h.api('POST', '/api/v1/tasks', { body: { title: 'heard in the outage', description: 'nothing to do', assignTo: 'ana' } });
    expect(t.status).toBe(201);
    await until('the pass to fail', async () => h.logs.some((l) => l.includes('could not look at its queue')), 15_000);
    await other.query('ROLLBACK');
    const taskId = t.body.data.id as string;
    await until('its run to succeed', async () => (await h.api('GET', `/api/v1/runs?taskId=${taskId}`)).body.data[0]?.status === 'succeeded', 15_000);
  } finally {
    await other.end();
    await h.close();
  }
});

/**
 * A TCP relay to `port` in a child process (the daemon's thread blocks on its state's answers, so
 * a relay in this process would never relay them). "freeze" on its stdin makes every connection it
 * holds go silent, like a network partition: no reset, no answer; new connections still relay.
 */
const RELAY = `
const net = require('node:net');
const held = [];
const relay = net.createServer((c) => {
  const up = net.connect(Number(process.argv[1]), '127.0.0.1');
  held.push([c, up]);
  c.pipe(up); up.pipe(c);
  const drop = () => (c.destroy(), up.destroy());
  c.on('error', drop).on('close', drop); up.on('error', drop).on('close', drop);
});
relay.listen(0, '127.0.0.1', () => process.stdout.write(relay.address().port + '\\n'));
process.stdin.on('data', () => { for (const [c, up] of held.splice(0)) (c.unpipe(), up.unpipe()); process.stdout.write('frozen\\n'); });
`;

// Up to a read per frozen connection of the pool (6), each 503 only after the wait (2.8 s), and the
// background's own 2.8 s: some 20 s by design, which a loaded machine stretches past the default 30 s.
it.skipIf(noPg)('a connection that hangs (the peer answers nothing): 503 after the wait, then a new connection serves', { timeout: 60_000 }, async () => {
  const target = new URL(await freshStateDatabase());
  const relay = spawn(process.execPath, ['-e', RELAY, target.port], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: string[] = [];
  relay.stdout.setEncoding('utf8').on('data', (d: string) => lines.push(...d.trim().split('\n')));
  const line = async (n: number) => {
    while (lines.length < n) await new Promise((r) => setTimeout(r, 10));
    return lines[n - 1]!;
  };
  const via = new URL(target);
  via.port = await line(1);
  // No runner: its presence, written every 5 s, could be the statement that meets the frozen
  // connection (and replaces it) before the read this test times.
  const h = await startTestDaemon({
    env: { SVC_STATE_URL: via.toString(), SVC_VAULT_KEY: randomBytes(32).toString('base64') },
    config: { state: { statementTimeoutMs: 300 }, runner: { enabled: false } },
  });
  try {
    expect((await h.api('POST', '/api/v1/agents', { body: { name: 'ana' } })).status).toBe(201);
    relay.stdin.write('freeze\n');
    expect(await line(2)).toBe('frozen');
    // The state is a pool: a read meets a frozen connection (503 once its wait is over; the
    // connection is dropped) unless it is given a new one, which relays. Each frozen connection is
    // met at most once, so the reads come back within the pool's size.
    const answers: { status: number; ms: number }[] = [];
    for (let i = 0; i < 8 && !(answers.some((a) => a.status === 503) && answers.at(-1)!.status === 200); i++) {
      const t0 = Date.now();
      const status = (await h.api('GET', '/api/v1/agents/ana')).status;
      answers.push({ status, ms: Date.now() - t0 });
    }
    const failed = answers.filter((a) => a.status === 503);
    // The daemon's own background work (the events' backup poll, its timers) shares the pool and
    // may be the one to meet the frozen connections: then the reads get new connections at once,
    // and the log says the state did not answer once that statement's wait (2.8 s) is over.
    const metByBackground = () => h.logs.some((l) => l.includes('did not answer within'));
    if (!failed.length) await until('the background statement on a frozen connection to fail', async () => metByBackground(), 6_000).catch(() => undefined);
    expect(failed.length > 0 || metByBackground(), `${JSON.stringify(answers)}\n${h.logs.slice(-20).join('\n')}`).toBe(true);
    // Not before the statement's bound.
    for (const a of failed) expect(a.ms).toBeGreaterThanOrEqual(300);
    expect(
      answers.every((a) => a.status === 503 || a.status === 200),
      JSON.stringify(answers),
    ).toBe(true);
    expect(answers.at(-1)!.status, JSON.stringify(answers)).toBe(200);
  } finally {
    await h.close();
    relay.kill();
  }
});

it.skipIf(noPg)('a write that cannot get the write lock in time: 503, and the next write goes through (nothing left half-open)', async () => {
  const url = await freshStateDatabase();
  const h = await startTestDaemon({ env: { SVC_STATE_URL: url, SVC_VAULT_KEY: randomBytes(32).toString('base64') }, config: { state: { statementTimeoutMs: 300 } } });
  // Another session holds what every write that emits an event needs last (a daemon stuck mid-write).
  const other = new pgDriver.Client(url);
  await other.connect();
  try {
    await other.query('BEGIN; LOCK TABLE events IN SHARE MODE');
    const held = await h.api('POST', '/api/v1/agents', { body: { name: 'ana' } });
    expect(held.status).toBe(503);
    expect(held.body).toMatchObject({ code: 'unavailable' });
    await other.query('ROLLBACK');
    expect((await h.api('POST', '/api/v1/agents', { body: { name: 'ana' } })).status).toBe(201);
    expect((await h.api('GET', '/api/v1/agents/ana')).status).toBe(200);
  } finally {
    await other.end();
    await h.close();
  }
});

it.skipIf(noPg)('a daemon waits for another daemon migrating the state, past its statement timeout', async () => {
  const url = await freshStateDatabase();
  // Another process holds the migration lock for 3.5 s (this process blocks while the daemon starts).
  const holder = spawn(
    process.execPath,
    [
      '-e',
      `const { Client } = require('pg'); (async () => { const c = new Client(process.argv[1]); await c.connect(); await c.query('SELECT pg_advisory_lock(${0x73766302})'); process.stdout.write('held\\n'); await new Promise((r) => setTimeout(r, 3500)); await c.end(); })();`,
      url,
    ],
    { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise<void>((r) => holder.stdout.once('data', () => r()));
  const t0 = Date.now();
  const h = await startTestDaemon({ env: { SVC_STATE_URL: url, SVC_VAULT_KEY: randomBytes(32).toString('base64') }, config: { state: { statementTimeoutMs: 300 } } });
  try {
    expect(Date.now() - t0).toBeGreaterThan(2_500);
    expect((await h.api('POST', '/api/v1/agents', { body: { name: 'ana' } })).status).toBe(201);
  } finally {
    await h.close();
    holder.kill();
  }
});
