import { EventSource } from 'eventsource';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsMarkdown } from '../src/events/docs.js';
import { EVENT_NAMES } from '../src/events/registry.js';
import { collect } from './sse-collector.js';
import { eventually, startTestDaemon, type TestDaemon } from './harness.js';

let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon({ sse: { heartbeatMs: 100 } });
});
afterAll(async () => {
  await d.close();
});

const addAgent = (name: string) => d.api('POST', '/api/v1/agents', { body: { name } });
const addTeam = (name: string) => d.api('POST', '/api/v1/agents/teams', { body: { name } });

describe('GET /v1/events authentication', () => {
  it('needs the Authorization header', async () => {
    expect((await collect(d.url)).status).toBe(401);
  });
  it('refuses a key in the query string', async () => {
    const c = await collect(d.url, { query: `?apiKey=${d.key}` });
    expect(c.status).toBe(401);
    const withHeader = await fetch(`${d.url}/v1/events?apiKey=${d.key}`, { headers: { authorization: `Bearer ${d.key}` } });
    expect(withHeader.status).toBe(400);
    expect((await withHeader.json()).details[0].path).toBe('query.apiKey');
  });
});

describe('GET /v1/events frames and filters', () => {
  it('sends id, event and data for each event', async () => {
    const c = await collect(d.url, { key: d.key });
    await addAgent('framed');
    await c.until((x) => x.messages.some((m) => m.event === 'agent:created'));
    const m = c.messages.find((x) => x.event === 'agent:created')!;
    expect(Number(m.id)).toBeGreaterThan(0);
    expect(JSON.parse(m.data)).toEqual({ name: 'framed' });
    c.close();
  });

  // Each filter gets a marker event it lets through, sent last: a stream delivers in order, so once
  // the marker is in, everything the filter passed before it is in too.
  const markers = {
    team: (name: string) => addTeam(name),
    agent: (name: string) => addAgent(name),
    task: (name: string) => d.api('POST', '/api/v1/tasks', { body: { title: name } }),
  };
  it.each([
    ['team:', ['team:created'], 'team'],
    ['team:*', ['team:created'], 'team'],
    ['agent:created', ['agent:created'], 'agent'],
    ['agent:,team:', ['agent:created', 'team:created'], 'team'],
    ['*', ['agent:created', 'team:created'], 'team'],
    ['task:,approval:', [], 'task'],
  ] as const)('filter %s', async (filter, expected, marker) => {
    const c = await collect(d.url, { key: d.key, filter });
    expect(c.status).toBe(200);
    await addAgent(`f-${Math.random().toString(36).slice(2, 8)}`);
    await addTeam(`t-${Math.random().toString(36).slice(2, 8)}`);
    const name = `marker-${Math.random().toString(36).slice(2, 8)}`;
    expect((await markers[marker](name)).status).toBe(201);
    const at = () => c.messages.findIndex((m) => m.data.includes(name));
    await c.until(() => at() !== -1);
    const got = [...new Set(c.messages.slice(0, at()).map((m) => m.event))].sort();
    expect(got).toEqual([...expected].sort());
    c.close();
  });

  it('refuses an unknown event name or category', async () => {
    const c = await collect(d.url, { key: d.key, filter: 'task:,nope:,agent:renamed' });
    expect(c.status).toBe(400);
  });

  it('sends a ping comment on the heartbeat', async () => {
    const c = await collect(d.url, { key: d.key });
    await c.until((x) => x.comments.includes('ping'), 2000);
    c.close();
  });
});

describe('replay', () => {
  it('replays what a client missed after Last-Event-ID, in order, then goes live', async () => {
    const c = await collect(d.url, { key: d.key, filter: 'agent:' });
    await addAgent('r1');
    await c.until((x) => x.messages.length === 1);
    const last = c.messages[0]!.id!;
    c.close();
    await addAgent('r2');
    await addTeam('r-team');
    await addAgent('r3');
    const again = await collect(d.url, { key: d.key, filter: 'agent:', lastEventId: last });
    await again.until((x) => x.messages.length === 2);
    expect(again.messages.map((m) => JSON.parse(m.data).name)).toEqual(['r2', 'r3']);
    const ids = again.messages.map((m) => Number(m.id));
    expect(ids[0]).toBeGreaterThan(Number(last));
    expect(ids[1]).toBeGreaterThan(ids[0]!);
    await addAgent('r4');
    await again.until((x) => x.messages.length === 3);
    expect(JSON.parse(again.messages[2]!.data).name).toBe('r4');
    again.close();
  });

  it('replays more history than one page without losing or repeating an event', async () => {
    const before = await d.daemon.app.events.lastId();
    const { app } = d.daemon;
    for (let i = 0; i < 1200; i++) await app.events.write(async () => app.events.emit('agent:updated', { name: `bulk-${i}`, fields: ['role'] }));
    const c = await collect(d.url, { key: d.key, filter: 'agent:updated', lastEventId: before });
    await c.until((x) => x.messages.length >= 1200, 10_000);
    expect(c.messages.map((m) => JSON.parse(m.data).name)).toEqual(Array.from({ length: 1200 }, (_, i) => `bulk-${i}`));
    c.close();
  });

  it('keeps event ids across a restart', async () => {
    const one = await startTestDaemon({ keepRoot: true });
    await one.api('POST', '/api/v1/agents/teams', { body: { name: 'before' } });
    const firstId = await one.daemon.app.events.lastId();
    await one.close();
    const two = await startTestDaemon({ root: one.root });
    try {
      const c = await collect(two.url, { key: two.key, lastEventId: firstId - 1 });
      await c.until((x) => x.messages.length >= 1);
      expect(c.messages[0]).toMatchObject({ id: String(firstId), event: 'team:created' });
      await two.api('POST', '/api/v1/agents/teams', { body: { name: 'after' } });
      await c.until((x) => x.messages.length >= 2);
      expect(Number(c.messages[1]!.id)).toBeGreaterThan(firstId);
      c.close();
    } finally {
      await two.close();
    }
  });
});

describe('retention', () => {
  it('prunes events older than 24 hours at start, and tells a replaying client what it can no longer get', async () => {
    const one = await startTestDaemon({ keepRoot: true });
    const { app } = one.daemon;
    for (const name of ['old-1', 'old-2', 'fresh']) await app.events.write(async () => app.events.emit('team:created', { name }));
    // Age all but the last past the window, as if the daemon had been running for a day (on a
    // shared state the log also holds the runner's runner:online, which ages with them).
    const old = (await app.events.since(0, 10)).filter((e) => e.data.name !== 'fresh');
    expect(old.filter((e) => e.name === 'team:created')).toHaveLength(2);
    for (const e of old) await app.db.prepare('UPDATE events SET created_at = ? WHERE id = ?').run(new Date(Date.now() - 25 * 3600 * 1000).toISOString(), e.id);
    await one.close();
    const two = await startTestDaemon({ root: one.root });
    try {
      // The pass the daemon starts with runs off the start-up path (db/prune.ts): it is awaited here, not called.
      const kept = async () => (await two.daemon.app.events.since(0, 10)).filter((e) => e.name === 'team:created').map((e) => e.data.name);
      await eventually(async () => JSON.stringify(await kept()) === '["fresh"]', 5_000);
      expect(await kept()).toEqual(['fresh']);
      const c = await collect(two.url, { key: two.key, lastEventId: 0, filter: 'team:' });
      await c.until((x) => x.messages.length === 1);
      expect(c.messages[0]!.data).toBe('{"name":"fresh"}');
      expect(c.comments.some((t) => /past the retention window/.test(t))).toBe(true);
      c.close();
    } finally {
      await two.close();
    }
  });
});

describe('stream lifecycle', () => {
  it('closes the streams of a key removed from project.json within a second', async () => {
    const key = 'revocable-key-0123456789';
    const r = await startTestDaemon({ config: { apiKeys: [key, 'kept-key-0123456789abc'] } });
    try {
      const revoked = await collect(r.url, { key });
      const kept = await collect(r.url, { key: 'kept-key-0123456789abc' });
      const local = await collect(r.url, { key: r.key });
      r.writeConfig({ name: 'test-project', apiKeys: ['kept-key-0123456789abc'] });
      await revoked.until((x) => x.ended, 1000);
      expect(kept.ended).toBe(false);
      expect(local.ended).toBe(false);
      kept.close();
      local.close();
    } finally {
      await r.close();
    }
  });

  it('cuts a reader that falls too far behind while a fast reader keeps receiving everything', async () => {
    const r = await startTestDaemon({ sse: { maxBacklogEvents: 200, maxBacklogBytes: 512 * 1024 } });
    try {
      const fast = await collect(r.url, { key: r.key, filter: 'agent:updated' });
      const u = new URL(r.url);
      await new Promise<void>((resolve, reject) => {
        const req = request({ host: u.hostname, port: u.port, path: '/v1/events', headers: { authorization: `Bearer ${r.key}` } }, (res) => {
          res.pause(); // never read: the server must not buffer for it without bound
          resolve();
        });
        req.on('error', reject);
        req.end();
      });
      expect(r.daemon.app.streams.size).toBe(2);
      const { app } = r.daemon;
      const big = 'x'.repeat(4000);
      const total = 3000;
      for (let i = 0; i < total; i += 20) {
        for (let j = i; j < i + 20; j++) await app.events.write(async () => app.events.emit('agent:updated', { name: `n${j}`, fields: [big] }));
        await new Promise((res) => setImmediate(res));
      }
      await fast.until((x) => x.messages.length === total, 20_000);
      expect(fast.ended).toBe(false);
      // The server dropped the paused reader (a paused client socket does not notice until it reads).
      expect(r.daemon.app.streams.size).toBe(1);
      fast.close();
    } finally {
      await r.close();
    }
  });

  it('works with the eventsource package through a custom fetch carrying the Authorization header', async () => {
    const es = new EventSource(`${d.url}/v1/events?filter=team:created`, {
      fetch: (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${d.key}` } }),
    });
    const got = new Promise<MessageEvent>((resolve, reject) => {
      es.addEventListener('team:created', (e) => resolve(e as MessageEvent));
      es.onerror = (e) => reject(new Error(`eventsource error: ${String((e as { message?: string }).message)}`));
    });
    await new Promise<void>((resolve) => (es.onopen = () => resolve()));
    await addTeam('from-eventsource');
    const e = await got;
    expect(JSON.parse(e.data)).toEqual({ name: 'from-eventsource' });
    expect(Number(e.lastEventId)).toBeGreaterThan(0);
    es.close();
  });
});

describe('GET /v1/events/catalog', () => {
  it('is public, grouped by category, and lists every event with a description and JSON Schema', async () => {
    const res = await fetch(`${d.url}/v1/events/catalog`);
    expect(res.status).toBe(200);
    const { data } = await res.json();
    const names = data.flatMap((c: { events: { name: string }[] }) => c.events.map((e) => e.name));
    expect(names.sort()).toEqual([...EVENT_NAMES].sort());
    const task = data.find((c: { category: string }) => c.category === 'task');
    const transition = task.events.find((e: { name: string }) => e.name === 'task:transition');
    expect(transition.description).toBeTruthy();
    expect(transition.dataSchema.required).toEqual(['taskId', 'from', 'to']);
    expect(Object.keys(transition.dataSchema.properties)).toEqual(['taskId', 'from', 'to', 'reason']);
  });

  it('docs/events.md is generated from the registry (run `npm run docs`)', () => {
    expect(readFileSync(new URL('../docs/events.md', import.meta.url), 'utf8')).toBe(eventsMarkdown());
  });
});
