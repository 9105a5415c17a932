import { createHook } from 'node:async_hooks';
import { existsSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { Client } from 'undici';
import { describe, expect, it } from 'vitest';
import { startDaemon } from '../src/daemon.js';
import { createLogger } from '../src/kernel/log.js';
import { systemClock } from '../src/lib/clock.js';
import { readLocalKey } from '../src/state-dir.js';
import { daemonEnv, eventually, makeProject } from './harness.js';

// What a daemon leaves in the process that started it once it has closed, or failed to start:
// every kind of handle (timers, unref'd ones included; fs.watch and fs.watchFile watchers; servers;
// sockets; child processes) and, on Linux, every open file descriptor (state database, WAL, log).

/**
 * Handle kinds as async_hooks names them. Requests, promises and immediates come and go on their
 * own and are not counted.
 */
const HANDLE_KINDS = new Set(['Timeout', 'FSEVENTWRAP', 'STATWATCHER', 'TCPWRAP', 'TCPSERVERWRAP', 'PIPEWRAP', 'PIPESERVERWRAP', 'TTYWRAP', 'UDPWRAP', 'PROCESSWRAP', 'SIGNALWRAP', 'FILEHANDLE']);

interface Census {
  /** Handles created since the census began and not yet destroyed, by kind. */
  created: Map<number, string>;
  /** process.getActiveResourcesInfo() (ref'd handles) and open file descriptors when it began. */
  active: Map<string, number>;
  stop(): void;
}

function activeNow(): Map<string, number> {
  const c = new Map<string, number>();
  for (const r of process.getActiveResourcesInfo()) c.set(r, (c.get(r) ?? 0) + 1);
  if (existsSync('/proc/self/fd')) c.set('file descriptor', readdirSync('/proc/self/fd').length);
  return c;
}

function census(): Census {
  const created = new Map<number, string>();
  // getActiveResourcesInfo() does not list unref'd timers (all of the daemon's are): async_hooks sees them.
  const hook = createHook({
    init(id, type) {
      if (HANDLE_KINDS.has(type)) created.set(id, type);
    },
    destroy(id) {
      created.delete(id);
    },
  });
  hook.enable();
  return { created, active: activeNow(), stop: () => hook.disable() };
}

/** What is still there that was not before: handle kinds with how many more. */
function leftSince(before: Census): string[] {
  const out = new Map<string, number>();
  for (const kind of before.created.values()) out.set(kind, (out.get(kind) ?? 0) + 1);
  for (const [kind, n] of activeNow()) {
    const more = n - (before.active.get(kind) ?? 0);
    if (more > 0) out.set(`active ${kind}`, more);
  }
  return [...out].map(([kind, n]) => `${kind} +${n}`).sort();
}

/** Waits (briefly) for handles being closed to go, then names those that stayed. */
async function expectNothingLeft(before: Census): Promise<void> {
  // async_hooks reports a destroyed handle a turn of the event loop later: let those reports land
  // (the poll's own timers included) before counting.
  const settled = async () => {
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
    return leftSince(before).length === 0;
  };
  try {
    await eventually(settled, 2_000).catch(() => undefined);
    await settled();
    expect(leftSince(before)).toEqual([]);
  } finally {
    before.stop();
  }
}

/**
 * Loads what a daemon loads once per process (modules, lazily made handles) before counting. In a
 * project of its own: chokidar shares one fs.watch handle between watchers of the same path, so a
 * warm-up in the same project would hide a watcher the daemon under test never closes.
 */
async function warmUp(): Promise<void> {
  const root = makeProject({}, { 'skills/warm/SKILL.md': '---\nname: warm\ndescription: d\n---\nbody\n' });
  await (await startDaemon({ root, host: '127.0.0.1', port: 0, env: daemonEnv(root), log: createLogger(() => {}) })).close();
}

describe('a daemon leaves nothing behind', () => {
  it('after running and closing: watchers, timers, sockets, the database and the log file all go', async () => {
    const root = makeProject({}, { 'skills/review/SKILL.md': '---\nname: review\ndescription: d\n---\nbody\n' });
    const env = daemonEnv(root);
    await warmUp();
    const before = census();

    // No `log` option: the daemon opens .svc/logs/daemon.log itself (and writes to stdout).
    const daemon = await startDaemon({ root, host: '127.0.0.1', port: 0, env });
    const client = new Client(daemon.url);
    const auth = { authorization: `Bearer ${readLocalKey(root)}` };
    try {
      const task = await client.request({ path: '/api/v1/tasks', method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ title: 't' }) });
      const taskId = ((await task.body.json()) as { data: { id: string } }).data.id;
      // An approval timeout arms the daemon's timer; an open event stream holds a socket.
      const approval = await client.request({
        path: '/api/v1/approvals',
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ taskId, requestedBy: 'a', title: 'ok?', timeoutSeconds: 3600 }),
      });
      expect(approval.statusCode).toBe(201);
      await approval.body.dump();
      const stream = await client.request({ path: '/v1/events', method: 'GET', headers: auth });
      expect(stream.statusCode).toBe(200);
      stream.body.resume();
      const ended = new Promise<void>((r) =>
        stream.body
          .on('end', r)
          .on('error', () => r())
          .on('close', r),
      );
      await daemon.close();
      await ended;
    } finally {
      await client.close().catch(() => undefined);
    }
    await expectNothingLeft(before);
  });

  it('a port in use rejects with a hint, after undoing everything it had started', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    const root = makeProject({}, { 'skills/review/SKILL.md': '---\nname: review\ndescription: d\n---\nbody\n' });
    await warmUp();
    const before = census();
    // No `log` option here either: the log file it opened must be closed again.
    const out = process.stdout.write;
    process.stdout.write = (() => true) as typeof process.stdout.write;
    try {
      await expect(startDaemon({ root, host: '127.0.0.1', port, env: daemonEnv(root) })).rejects.toThrow(/in use.*--port 0/);
    } finally {
      process.stdout.write = out;
    }
    await expectNothingLeft(before);
    blocker.close();
  });

  it('a vault key that cannot open the entries fails the start and leaves nothing open', async () => {
    const root = makeProject();
    const first = await startDaemon({ root, host: '127.0.0.1', port: 0, env: daemonEnv(root, { SVC_VAULT_KEY: 'a'.repeat(64) }), log: createLogger(() => {}) });
    const key = readLocalKey(root);
    await fetch(`${first.url}/api/v1/agents`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'dev' }) });
    const saved = await fetch(`${first.url}/api/v1/vault/entries`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', connection: 'close' },
      body: JSON.stringify({ agent: 'dev', service: 'gh', type: 'api_key', credentials: { token: 't' } }),
    });
    expect(saved.status).toBe(200);
    await first.close();
    const before = census();
    await expect(startDaemon({ root, host: '127.0.0.1', port: 0, env: daemonEnv(root, { SVC_VAULT_KEY: 'b'.repeat(64) }), log: createLogger(() => {}) })).rejects.toThrow(/SVC_VAULT_KEY/);
    await expectNothingLeft(before);
  });

  it('refuses a SERVICE_API_KEY shorter than 16 characters, leaving nothing open', async () => {
    const root = makeProject();
    const before = census();
    await expect(startDaemon({ root, host: '127.0.0.1', port: 0, env: daemonEnv(root, { SERVICE_API_KEY: 'short' }), log: createLogger(() => {}) })).rejects.toThrow(
      /SERVICE_API_KEY must be at least 16 characters/,
    );
    await expectNothingLeft(before);
  });

  it('refuses to open the event stream once shutting down', async () => {
    const { SseHub } = await import('../src/events/sse.js');
    const { EventLog } = await import('../src/events/outbox.js');
    const { openDatabase } = await import('../src/db/open.js');
    const { STATE_MIGRATIONS } = await import('../src/state-schema.js');
    const hub = new SseHub(new EventLog(await openDatabase(':memory:', STATE_MIGRATIONS), { clock: systemClock }), systemClock);
    hub.closeAll();
    await expect((async () => await hub.open({} as never, { keyId: 'k', matches: () => true }))()).rejects.toThrow(/shutting down/);
  });
});
