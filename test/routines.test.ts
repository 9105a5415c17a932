import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from './fake-clock.js';
import { startTestDaemon, until, type TestDaemon } from './harness.js';

// Routines on the daemon's clock seam: a test moves the fake clock to a schedule time and reads the
// firing right after, no sleeps. Triggers are matched when the event loop is free: `until` waits.

const R = '/api/v1/routines';
const T0 = Date.parse('2030-01-07T08:59:30.000Z'); // a Monday, 30 s before 09:00 UTC
const clock = new FakeClock(T0);
let d: TestDaemon;

beforeAll(async () => {
  d = await startTestDaemon({ clock });
  for (const name of ['lead', 'dev']) expect((await d.api('POST', '/api/v1/agents', { body: { name } })).status).toBe(201);
});
afterAll(async () => {
  await d?.close();
});

async function create(body: Record<string, unknown>, status = 201): Promise<any> {
  const r = await d.api('POST', R, { body });
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body.data ?? r.body;
}

const firings = async (name: string): Promise<any[]> => (await d.api('GET', `${R}/${name}/firings`)).body.data;
const task = async (id: string): Promise<any> => (await d.api('GET', `/api/v1/tasks/${id}`)).body.data;
const transition = async (id: string, ...to: string[]) => {
  for (const s of to) {
    const r = await d.api('POST', `/api/v1/tasks/${id}/transition`, { body: { to: s } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  }
};

describe('a scheduled routine', () => {
  it('answers its next five times, fires at the first on the fake clock, and records what it created', async () => {
    const r = await create({ name: 'weekly-deps', schedule: { cron: '0 9 * * MON', timezone: 'UTC' }, action: { task: { title: 'Update dependencies ({{firing.date}})', assignTo: 'dev', labels: ['deps'] } } });
    expect(r.nextFireTimes).toEqual(['2030-01-07T09:00:00.000Z', '2030-01-14T09:00:00.000Z', '2030-01-21T09:00:00.000Z', '2030-01-28T09:00:00.000Z', '2030-02-04T09:00:00.000Z']);
    expect(r.nextFireAt).toBe('2030-01-07T09:00:00.000Z');
    clock.advance(29_000);
    expect(await firings('weekly-deps')).toEqual([]);
    clock.advance(1_000);
    const [f] = await firings('weekly-deps');
    expect(f).toMatchObject({ reason: 'schedule', status: 'fired', scheduledAt: '2030-01-07T09:00:00.000Z', firedAt: '2030-01-07T09:00:00.000Z', chain: ['weekly-deps'] });
    const t = await task(f.created.taskIds[0]);
    expect(t).toMatchObject({ title: 'Update dependencies (2030-01-07)', assignTo: 'dev', labels: ['deps'], status: 'pending' });
    const shown = (await d.api('GET', `${R}/weekly-deps`)).body.data;
    expect(shown.nextFireAt).toBe('2030-01-14T09:00:00.000Z');
    expect(shown.lastFirings[0].id).toBe(f.id);
  });
});
