import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPostgres } from '../src/db/open.js';
import type { StoredEvent } from '../src/events/outbox.js';
import { FakeClock } from './fake-clock.js';
import { startTestDaemon, type TestDaemon } from './harness.js';

// The outbox promise: a change and its events are one transaction. Here the event insert itself
// fails (a trigger RAISEs on every insert into events), after the change's own rows are written:
// only a real transaction can take them back.

let d: TestDaemon;
const clock = new FakeClock(Date.now());
beforeAll(async () => {
  d = await startTestDaemon({ clock });
});
afterAll(async () => {
  await d?.close();
});

/** Every row of every table: what "nothing left behind" is compared against. */
async function snapshot(): Promise<Record<string, unknown[]>> {
  const db = d.daemon.app.db;
  const tables = (await db
    .prepare(
      isPostgres(db)
        ? 'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name'
        : "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
    )
    .all()) as { name: string }[];
  // Rows in a fixed order: PostgreSQL returns an updated row's new version at another place.
  const rows: Record<string, unknown[]> = {};
  for (const { name } of tables) rows[name] = ((await db.prepare(`SELECT * FROM "${name}"`).all()) as unknown[]).map((r) => JSON.stringify(r)).sort();
  return rows;
}

const breakEvents = async () =>
  await d.daemon.app.db.exec(
    isPostgres(d.daemon.app.db)
      ? `CREATE FUNCTION fail_events() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected: the event insert fails'; END $$;
         CREATE TRIGGER fail_events BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION fail_events()`
      : "CREATE TRIGGER fail_events BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'injected: the event insert fails'); END",
  );
const mendEvents = async () =>
  await d.daemon.app.db.exec(isPostgres(d.daemon.app.db) ? 'DROP TRIGGER IF EXISTS fail_events ON events; DROP FUNCTION IF EXISTS fail_events()' : 'DROP TRIGGER IF EXISTS fail_events');

const post = async (path: string, body?: unknown) => (await d.api('POST', path, body === undefined ? {} : { body })).body.data;

interface Case {
  name: string;
  /** Makes what the request needs, before the trigger exists; returns the request. */
  setup(): Promise<{ method: string; path: string; body?: unknown }>;
}

const cases: Case[] = [
  { name: 'create a task', setup: async () => ({ method: 'POST', path: '/api/v1/tasks', body: { title: 'never written', labels: ['x'] } }) },
  {
    name: 'create a task with dependencies',
    setup: async () => {
      const dep = await post('/api/v1/tasks', { title: 'dep' });
      return { method: 'POST', path: '/api/v1/tasks', body: { title: 'dependent', dependsOn: [dep.id] } };
    },
  },
  {
    name: 'transition a task',
    setup: async () => ({ method: 'POST', path: `/api/v1/tasks/${(await post('/api/v1/tasks', { title: 'stays pending' })).id}/transition`, body: { to: 'assigned' } }),
  },
  {
    name: 'claim a task (two moves)',
    setup: async () => {
      await d.api('POST', '/api/v1/agents', { body: { name: 'ana' } });
      return { method: 'POST', path: `/api/v1/tasks/${(await post('/api/v1/tasks', { title: 'unclaimed' })).id}/claim`, body: { agent: 'ana' } };
    },
  },
  { name: 'edit a task', setup: async () => ({ method: 'PATCH', path: `/api/v1/tasks/${(await post('/api/v1/tasks', { title: 'old' })).id}`, body: { title: 'new' } }) },
  { name: 'remove a task', setup: async () => ({ method: 'DELETE', path: `/api/v1/tasks/${(await post('/api/v1/tasks', { title: 'kept' })).id}` }) },
  { name: 'create a mission with its tasks', setup: async () => ({ method: 'POST', path: '/api/v1/missions', body: { name: 'torn', tasks: [{ title: 'a' }, { title: 'b', dependsOn: ['a'] }] } }) },
  {
    name: 'request an approval (the task moves too)',
    setup: async () => ({ method: 'POST', path: '/api/v1/approvals', body: { taskId: (await post('/api/v1/tasks', { title: 'gated' })).id, requestedBy: 'ana', title: 'ok?' } }),
  },
  { name: 'create an agent', setup: async () => ({ method: 'POST', path: '/api/v1/agents', body: { name: 'ghost' } }) },
];

describe('an event insert that fails leaves nothing behind', () => {
  it.each(cases.map((c) => [c.name, c] as const))('%s', async (_n, c) => {
    const req = await c.setup();
    const before = await snapshot();
    const heard: StoredEvent[] = [];
    const off = d.daemon.app.events.subscribe((e) => heard.push(e));
    await breakEvents();
    let res;
    try {
      res = await d.api(req.method, req.path, req.body === undefined ? {} : { body: req.body });
    } finally {
      await mendEvents();
      off();
    }
    expect(res.status).toBe(500);
    expect(res.body.code).toBe('internal');
    // No internals leaked: the trigger's message stays in the log.
    expect(res.body.error).not.toContain('injected');
    expect(await snapshot()).toEqual(before);
    expect(heard).toEqual([]);
  });

  it('an approval timeout whose event fails is not half-decided, and is decided once the log works again', async () => {
    const task = await post('/api/v1/tasks', { title: 'timed' });
    const a = await post('/api/v1/approvals', { taskId: task.id, requestedBy: 'ana', title: 'ok?', timeoutSeconds: 60 });
    const before = await snapshot();
    await breakEvents();
    try {
      await clock.pass(60_000);
    } finally {
      await mendEvents();
    }
    expect(await snapshot()).toEqual(before);
    expect(d.logs.some((l) => l.includes('deciding an expired approval failed'))).toBe(true);
    await clock.pass(60_000);
    expect((await d.api('GET', `/api/v1/approvals/${a.id}`)).body.data).toMatchObject({ status: 'rejected', timedOut: true });
    expect((await d.api('GET', `/api/v1/tasks/${task.id}`)).body.data.status).toBe('pending');
  });
});
