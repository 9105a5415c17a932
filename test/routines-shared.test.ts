import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readLocalKey } from '../src/state-dir.js';
import { exited, serve } from './cli-helpers.js';
import { FakeClock } from './fake-clock.js';
import { makeProject, startTestDaemon, until, type TestDaemon } from './harness.js';
import { freshStateDatabase } from './state-pg.js';

// Several daemons on one PostgreSQL state: each routine's firing happens on exactly one of them,
// on the clock seam (three daemons in this process on one fake clock) and on the real clock (three
// `svc serve` processes, one killed with SIGKILL as the firings are due).

const noPg = inject('pgUrl') === '';
if (noPg) console.warn(`routines-shared: skipped, ${inject('pgSkip')}`);

const R = '/api/v1/routines';
const N = 30;

describe.skipIf(noPg)('routines on one PostgreSQL state, three daemons, one fake clock', () => {
  const clock = new FakeClock(Date.parse('2030-06-03T10:00:30.000Z'));
  const ds: TestDaemon[] = [];

  beforeAll(async () => {
    const env = { SVC_STATE_URL: await freshStateDatabase(), SVC_VAULT_KEY: randomBytes(32).toString('base64') };
    for (let i = 0; i < 3; i++) ds.push(await startTestDaemon({ env, clock }));
  });
  afterAll(async () => {
    await Promise.all(ds.map((d) => d.close()));
  });

  it('fires each due routine once per schedule time, whichever daemon gets there first', async () => {
    for (let i = 0; i < N; i++) {
      const r = await ds[i % 3]!.api('POST', R, {
        body: { name: `minutely-${i}`, schedule: { cron: '* * * * *' }, concurrency: 'allow', action: { task: { title: 'm{{routine.name}} {{firing.time}}' } } },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
    // Every daemon hears the others' routine:created before the clock moves.
    for (const d of ds) await until('every routine armed', async () => (await d.api('GET', R)).body.data.length === N);
    for (const d of ds) await d.daemon.app.events.catchUp();
    for (let m = 1; m <= 3; m++) await clock.passTo(Date.parse('2030-06-03T10:00:00.000Z') + m * 60_000);
    const all = (await ds[2]!.api('GET', R)).body.data as any[];
    for (const r of all) {
      const fs = (await ds[0]!.api('GET', `${R}/${r.name}/firings`)).body.data as any[];
      expect(fs.map((f) => f.scheduledAt).sort(), r.name).toEqual(['2030-06-03T10:01:00.000Z', '2030-06-03T10:02:00.000Z', '2030-06-03T10:03:00.000Z']);
      expect(fs.every((f) => f.status === 'fired' && f.created.taskIds.length === 1)).toBe(true);
    }
    let tasks: any[] = [];
    for (let cursor: string | null = null, page; ; cursor = page.headers.get('x-next-cursor')) {
      page = await ds[1]!.api('GET', `/api/v1/tasks?limit=200${cursor ? `&cursor=${cursor}` : ''}`);
      tasks = tasks.concat(page.body.data);
      if (!page.headers.get('x-next-cursor')) break;
    }
    expect(tasks.filter((t) => t.title.startsWith('mminutely-'))).toHaveLength(3 * N);
  });

  it('fires a trigger once for an event every daemon hears', async () => {
    const r = await ds[0]!.api('POST', R, {
      body: { name: 'shared-trigger', trigger: { event: 'task:created', filter: { title: { prefix: 'shared ' } } }, concurrency: 'allow', action: { task: { title: 'seen {{event.data.title}}' } } },
    });
    expect(r.status).toBe(201);
    for (const d of ds) await until('the trigger known everywhere', async () => (await d.daemon.app.events.catchUp(), (await d.api('GET', `${R}/shared-trigger`)).status === 200));
    for (let i = 0; i < 6; i++) await ds[i % 3]!.api('POST', '/api/v1/tasks', { body: { title: `shared ${i}` } });
    let fs: any[] = [];
    await until('six firings', async () => {
      for (const d of ds) await d.daemon.app.events.catchUp();
      fs = (await ds[1]!.api('GET', `${R}/shared-trigger/firings`)).body.data;
      return fs.length >= 6;
    });
    // Every daemon has heard every event by now: still one firing each.
    await new Promise((r) => setTimeout(r, 300));
    for (const d of ds) await d.daemon.app.events.catchUp();
    fs = (await ds[2]!.api('GET', `${R}/shared-trigger/firings`)).body.data;
    expect(fs).toHaveLength(6);
    expect(new Set(fs.map((f) => f.eventId)).size).toBe(6);
  });
});

describe.skipIf(noPg)('routines on one PostgreSQL state, three `svc serve`, the real clock', () => {
  it('a daemon killed (SIGKILL) as the firings are due: each still fires exactly once', { timeout: 150_000 }, async () => {
    const env = { SVC_STATE_URL: await freshStateDatabase(), SVC_VAULT_KEY: randomBytes(32).toString('base64'), SVC_KEYCHAIN: 'off' };
    const roots = [0, 1, 2].map(() => makeProject());
    const daemons = await Promise.all(roots.map((root) => serve(root, ['--port', '0'], { ...env, SVC_CONFIG_DIR: `${root}/.user-config` })));
    const call = async (i: number, method: string, path: string, body?: unknown) =>
      (
        await fetch(daemons[i]!.url + path, {
          method,
          headers: { authorization: `Bearer ${readLocalKey(roots[i]!)}`, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        })
      ).json() as Promise<any>;
    try {
      const n = 60;
      for (let i = 0; i < n; i++) {
        const r = await call(i % 3, 'POST', R, { name: `kill-${i}`, schedule: { cron: '* * * * *' }, concurrency: 'allow', action: { task: { title: 'k {{routine.name}}' } } });
        expect(r.ok, JSON.stringify(r)).toBe(true);
      }
      // The first minute boundary at least two seconds away, so that every daemon has armed it.
      let due = Math.ceil(Date.now() / 60_000) * 60_000;
      if (due - Date.now() < 2_000) due += 60_000;
      await new Promise((r) => setTimeout(r, due - Date.now() + 20));
      daemons[1]!.child.kill('SIGKILL');
      await exited(daemons[1]!.child);
      const at = new Date(due).toISOString();
      await until(
        'every routine fired for the boundary',
        async () => {
          const list = (await call(0, 'GET', R)).data as any[];
          return list.length === n && list.every((r) => r.lastFirings.some((f: any) => f.scheduledAt === at));
        },
        20_000,
      );
      for (let i = 0; i < n; i++) {
        const fs = ((await call(2, 'GET', `${R}/kill-${i}/firings`)).data as any[]).filter((f) => f.scheduledAt === at);
        expect(fs, `kill-${i}`).toHaveLength(1);
        expect(fs[0].status).toBe('fired');
      }
      const tasks = ((await call(0, 'GET', '/api/v1/tasks?limit=200')).data as any[]).filter((t) => t.title.startsWith('k kill-'));
      expect(tasks.length).toBeGreaterThanOrEqual(n);
      // Exactly n for this boundary: one task per firing, none from a rolled-back half of one.
      const firedIds = new Set<string>();
      for (let i = 0; i < n; i++) for (const f of (await call(0, 'GET', `${R}/kill-${i}/firings`)).data as any[]) for (const id of f.created.taskIds) firedIds.add(id);
      expect(tasks.filter((t) => !firedIds.has(t.id))).toEqual([]);
    } finally {
      for (const d of daemons) if (d.child.exitCode === null && d.child.signalCode === null) d.child.kill('SIGTERM');
      await Promise.all(daemons.map((d) => exited(d.child)));
    }
  });
});
