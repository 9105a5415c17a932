import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock, type Clock } from '../src/lib/clock.js';
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

/**
 * Waits until the triggers have been matched against every event so far: a sentinel routine fires
 * on an event made now, and events are matched in order. What did not fire by then never will.
 */
let sentinels = 0;
async function settled(): Promise<void> {
  const name = `sentinel-${++sentinels}`;
  await create({ name, trigger: { event: 'task:created', filter: { title: name } }, concurrency: 'allow', action: { task: { title: 'seen' } } });
  await d.api('POST', '/api/v1/tasks', { body: { title: name } });
  await until('the sentinel', async () => (await firings(name)).length === 1);
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
    const r = await create({
      name: 'weekly-deps',
      schedule: { cron: '0 9 * * MON', timezone: 'UTC' },
      action: { task: { title: 'Update dependencies ({{firing.date}})', assignTo: 'dev', labels: ['deps'] } },
    });
    expect(r.nextFireTimes).toEqual(['2030-01-07T09:00:00.000Z', '2030-01-14T09:00:00.000Z', '2030-01-21T09:00:00.000Z', '2030-01-28T09:00:00.000Z', '2030-02-04T09:00:00.000Z']);
    expect(r.nextFireAt).toBe('2030-01-07T09:00:00.000Z');
    await clock.pass(29_000);
    expect(await firings('weekly-deps')).toEqual([]);
    await clock.pass(1_000);
    const [f] = await firings('weekly-deps');
    expect(f).toMatchObject({ reason: 'schedule', status: 'fired', scheduledAt: '2030-01-07T09:00:00.000Z', firedAt: '2030-01-07T09:00:00.000Z', chain: ['weekly-deps'] });
    const t = await task(f.created.taskIds[0]);
    expect(t).toMatchObject({ title: 'Update dependencies (2030-01-07)', assignTo: 'dev', labels: ['deps'], status: 'pending' });
    const shown = (await d.api('GET', `${R}/weekly-deps`)).body.data;
    expect(shown.nextFireAt).toBe('2030-01-14T09:00:00.000Z');
    expect(shown.lastFirings[0].id).toBe(f.id);
  });
});

describe('bad input names the field', () => {
  const task = { task: { title: 't' } };
  const cases: [string, Record<string, unknown>, number, string, RegExp][] = [
    ['both schedule and trigger', { schedule: { cron: '* * * * *' }, trigger: { event: 'task:created' }, action: task }, 400, 'body.trigger', /either schedule or trigger/],
    ['neither', { action: task }, 400, 'body.schedule', /one of schedule .* or trigger .* is required/],
    ['a minute out of range', { schedule: { cron: '61 * * * *' }, action: task }, 400, 'body.schedule.cron', /minute field "61" at position 1: 61 .* out of range 0-59/],
    ['a bad day of week', { schedule: { cron: '0 9 * * FRY' }, action: task }, 400, 'body.schedule.cron', /day of week field "FRY" at position 9/],
    [
      'a number past the range in a list',
      { schedule: { cron: '0 9,25 * * *' }, action: task },
      400,
      'body.schedule.cron',
      /hour field "9,25" at position 3: 25 \(at position 5\) is out of range 0-23/,
    ],
    ['six fields', { schedule: { cron: '0 0 9 * * *' }, action: task }, 400, 'body.schedule.cron', /has 6 fields; a cron expression has 5/],
    ['an unknown alias', { schedule: { cron: '@reboot' }, action: task }, 400, 'body.schedule.cron', /unknown alias "@reboot" at position 1/],
    ['an unknown time zone', { schedule: { cron: '@daily', timezone: 'Mars/Olympus' }, action: task }, 400, 'body.schedule.timezone', /unknown time zone "Mars\/Olympus"/],
    ['an unknown event', { trigger: { event: 'task:exploded' }, action: task }, 400, 'body.trigger.event', /unknown event or category "task:exploded"/],
    [
      'a filter field no heard event has',
      { trigger: { event: 'task:transition', filter: { state: 'failed' } }, action: task },
      400,
      'body.trigger.filter.state',
      /no event this trigger hears has a data field "state"/,
    ],
    [
      'an event variable in a schedule',
      { schedule: { cron: '@daily' }, action: { task: { title: 'x {{event.data.taskId}}' } } },
      400,
      'body.action.task.title',
      /only a routine with a trigger has an event/,
    ],
    [
      'an unknown variable',
      { trigger: { event: 'task:transition' }, action: { task: { title: 'x {{event.data.nope}}' } } },
      400,
      'body.action.task.title',
      /\{\{event\.data\.nope\}\} is not a variable/,
    ],
    ['a task body that is not valid', { schedule: { cron: '@daily' }, action: { task: { title: 'x', priority: 'asap' } } }, 400, 'body.action.task.priority', /./],
    ['an action that says nothing', { schedule: { cron: '@daily' }, action: {} }, 400, 'body.action', /say what it creates: playbook, task or mission/],
    ['an action of two kinds', { schedule: { cron: '@daily' }, action: { task: { title: 'x' }, playbook: 'p' } }, 400, 'body.action', /give one of playbook, task or mission, not playbook and task/],
    ['a task action without its title', { schedule: { cron: '@daily' }, action: { task: { assignTo: 'dev' } } }, 400, 'body.action', /task\.title: .*expected string/],
    ['an unknown playbook', { schedule: { cron: '@daily' }, action: { playbook: 'no-such-playbook' } }, 422, 'body.action.playbook', /playbook "no-such-playbook" does not exist/],
    ['an unknown agent', { schedule: { cron: '@daily' }, action: { task: { title: 'x', assignTo: 'nobody' } } }, 422, 'body.action.task.assignTo', /agent "nobody" does not exist/],
    [
      'an unknown agent in a mission',
      { schedule: { cron: '@daily' }, action: { mission: { name: 'm', tasks: [{ title: 'a', assignTo: 'nobody' }] } } },
      422,
      'body.action.mission.tasks.0.assignTo',
      /agent "nobody" does not exist/,
    ],
  ];
  for (const [what, body, status, path, message] of cases) {
    it(what, async () => {
      const r = await d.api('POST', R, { body: { name: 'bad', ...body } });
      expect(r.status, JSON.stringify(r.body)).toBe(status);
      const detail = r.body.details.find((x: any) => x.path === path);
      expect(detail, JSON.stringify(r.body.details)).toBeTruthy();
      expect(detail.message).toMatch(message);
    });
  }

  it('a name taken is 409', async () => {
    await create({ name: 'taken', schedule: { cron: '@yearly' }, action: task });
    const r = await d.api('POST', R, { body: { name: 'taken', schedule: { cron: '@yearly' }, action: task } });
    expect(r.status).toBe(409);
    expect(r.body.error).toMatch(/Routine "taken" already exists/);
  });

  it('a patch that leaves both or neither is 400 naming the field', async () => {
    await create({ name: 'patched', schedule: { cron: '@yearly' }, action: task });
    let r = await d.api('PATCH', `${R}/patched`, { body: { trigger: { event: 'task:created' } } });
    expect(r.status).toBe(400);
    expect(r.body.details[0].path).toBe('body.trigger');
    r = await d.api('PATCH', `${R}/patched`, { body: { schedule: null } });
    expect(r.status).toBe(400);
    expect(r.body.details[0].path).toBe('body.schedule');
    r = await d.api('PATCH', `${R}/patched`, { body: { schedule: null, trigger: { event: 'task:created' }, action: { task: { title: '{{event.data.title}}' } } } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ schedule: null, trigger: { event: 'task:created', filter: null }, nextFireAt: null });
    expect((await d.api('DELETE', `${R}/patched`)).status).toBe(200);
    expect((await d.api('GET', `${R}/patched`)).status).toBe(404);
  });
});

describe('time zones and daylight saving, on the daemon clock', () => {
  it('a fixed time in a skipped hour fires once right after it, in a repeated hour once; an interval keeps its pace', async () => {
    const c = new FakeClock(Date.parse('2030-03-30T12:00:00.000Z'));
    const z = await startTestDaemon({ clock: c });
    try {
      const post = async (name: string, cron: string) => {
        const r = await z.api('POST', R, { body: { name, schedule: { cron, timezone: 'Europe/Berlin' }, concurrency: 'allow', action: { task: { title: '{{routine.name}} {{firing.time}}' } } } });
        expect(r.status, JSON.stringify(r.body)).toBe(201);
        return r.body.data;
      };
      // 02:30 does not exist in Berlin on 31 March 2030: the clocks go from 02:00 to 03:00.
      expect((await post('half-past-two', '30 2 * * *')).nextFireTimes.slice(0, 3)).toEqual(['2030-03-31T01:00:00.000Z', '2030-04-01T00:30:00.000Z', '2030-04-02T00:30:00.000Z']);
      await c.passTo(Date.parse('2030-04-02T12:00:00.000Z'));
      const spring = (await z.api('GET', `${R}/half-past-two/firings`)).body.data.map((f: any) => f.scheduledAt).reverse();
      expect(spring).toEqual(['2030-03-31T01:00:00.000Z', '2030-04-01T00:30:00.000Z', '2030-04-02T00:30:00.000Z']);

      // 02:30 happens twice on 27 October 2030 (CEST, then CET): once, at the first.
      await c.passTo(Date.parse('2030-10-26T12:00:00.000Z'));
      await z.api('PATCH', `${R}/half-past-two`, { body: { enabled: false } });
      await z.api('PATCH', `${R}/half-past-two`, { body: { enabled: true } });
      await post('every-half-hour', '*/30 * * * *');
      await c.passTo(Date.parse('2030-10-27T03:59:00.000Z'));
      const fall = (await z.api('GET', `${R}/half-past-two/firings`)).body.data.filter((f: any) => f.scheduledAt >= '2030-10-26T12').map((f: any) => f.scheduledAt);
      expect(fall).toEqual(['2030-10-27T00:30:00.000Z']);
      // Every half hour of real time, through both passes of the repeated hour (00:00Z-02:00Z).
      const halves = (await z.api('GET', `${R}/every-half-hour/firings?limit=200`)).body.data.map((f: any) => f.scheduledAt).filter((t: string) => t >= '2030-10-27T00:00' && t < '2030-10-27T02:01');
      expect(halves.reverse()).toEqual(['2030-10-27T00:00:00.000Z', '2030-10-27T00:30:00.000Z', '2030-10-27T01:00:00.000Z', '2030-10-27T01:30:00.000Z', '2030-10-27T02:00:00.000Z']);
    } finally {
      await z.close();
    }
  });
});

describe('catch-up after downtime', () => {
  it('none records the missed firings skipped; one fires once for all of them', async () => {
    const c = new FakeClock(Date.parse('2030-05-01T09:30:00.000Z'));
    let z = await startTestDaemon({ clock: c, keepRoot: true });
    const root = z.root;
    const action = { task: { title: '{{routine.name}} at {{firing.time}}' } };
    for (const catchUp of ['none', 'one']) {
      const r = await z.api('POST', R, { body: { name: `hourly-${catchUp}`, schedule: { cron: '0 * * * *' }, catchUp, concurrency: 'allow', action } });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
    await z.close();
    // Down from 09:30 to 12:20: 10:00, 11:00 and 12:00 were missed.
    await c.passTo(Date.parse('2030-05-01T12:20:00.000Z'));
    z = await startTestDaemon({ clock: c, root });
    try {
      const none = (await z.api('GET', `${R}/hourly-none/firings`)).body.data;
      expect(none).toHaveLength(1);
      expect(none[0]).toMatchObject({ status: 'skipped', reason: 'catch_up', scheduledAt: '2030-05-01T10:00:00.000Z', missed: 2, created: { taskIds: [] } });
      expect(none[0].detail).toMatch(/missed 3 schedule time\(s\) from 2030-05-01T10:00:00.000Z while no daemon ran; catchUp is none/);
      const one = (await z.api('GET', `${R}/hourly-one/firings`)).body.data;
      expect(one).toHaveLength(1);
      expect(one[0]).toMatchObject({ status: 'fired', reason: 'catch_up', scheduledAt: '2030-05-01T12:00:00.000Z', missed: 2 });
      expect((await z.api('GET', `/api/v1/tasks/${one[0].created.taskIds[0]}`)).body.data.title).toBe('hourly-one at 2030-05-01T12:00:00.000Z');
      // And on from there, on time.
      expect((await z.api('GET', `${R}/hourly-one`)).body.data.nextFireAt).toBe('2030-05-01T13:00:00.000Z');
      await c.passTo(Date.parse('2030-05-01T13:00:00.000Z'));
      expect((await z.api('GET', `${R}/hourly-none/firings`)).body.data[0]).toMatchObject({ status: 'fired', reason: 'schedule', scheduledAt: '2030-05-01T13:00:00.000Z' });
      const events = (await z.daemon.app.events.since(0, 10_000)).filter((e) => e.name === 'routine:skipped');
      expect(events.map((e) => e.data)).toEqual([expect.objectContaining({ routine: 'hourly-none', why: 'missed' })]);
    } finally {
      await z.close();
    }
  });

  it('a firing a few seconds late (a busy daemon) is on time, not missed', async () => {
    const r = await create({ name: 'late-but-fine', schedule: { cron: '*/5 * * * *' }, concurrency: 'allow', catchUp: 'none', action: { task: { title: 'x' } } });
    const at = Date.parse(r.nextFireAt);
    clock.skip(at + 20_000 - clock.now()); // the timer runs 20 s late
    await clock.pass(0);
    const [f] = await firings('late-but-fine');
    expect(f).toMatchObject({ status: 'fired', reason: 'schedule', scheduledAt: r.nextFireAt, missed: 0 });
    expect(Date.parse(f.firedAt) - at).toBe(20_000);
  });
});

describe('concurrency', () => {
  it("skip does not fire while the previous firing's task is open, and fires once it is done", async () => {
    const r = await create({
      name: 'nightly-review',
      schedule: { cron: '0 2 * * *' },
      concurrency: 'skip',
      action: { task: { title: 'Review branches merged the day before {{firing.date}}', assignTo: 'dev' } },
    });
    await clock.passTo(Date.parse(r.nextFireAt));
    const [first] = await firings('nightly-review');
    expect(first.status).toBe('fired');
    await clock.pass(86_400_000);
    const [second] = await firings('nightly-review');
    expect(second).toMatchObject({ status: 'skipped', reason: 'schedule', created: { taskIds: [] } });
    expect(second.detail).toMatch(new RegExp(`previous firing's work is still open: task ${first.created.taskIds[0]} of firing ${first.id} is pending`));
    await transition(first.created.taskIds[0], 'assigned', 'in_progress', 'review', 'done');
    await clock.pass(86_400_000);
    expect((await firings('nightly-review'))[0].status).toBe('fired');
  });

  it('queue waits for the previous work to close, then fires with the values of its own time', async () => {
    const r = await create({ name: 'queued-one', schedule: { cron: '30 3 * * *' }, concurrency: 'queue', action: { task: { title: 'q {{firing.time}}' } } });
    await clock.passTo(Date.parse(r.nextFireAt));
    const [first] = await firings('queued-one');
    await clock.pass(86_400_000);
    const [second] = await firings('queued-one');
    expect(second).toMatchObject({ status: 'queued', created: { taskIds: [] } });
    await transition(first.created.taskIds[0], 'assigned', 'in_progress', 'failed');
    let released: any;
    await until('the queued firing released', async () => {
      released = (await firings('queued-one')).find((f) => f.id === second.id);
      return released.status === 'fired';
    });
    expect((await task(released.created.taskIds[0])).title).toBe(`q ${second.scheduledAt}`);
  });

  it('allow fires whatever is open; a firing by hand is answered as recorded', async () => {
    await create({ name: 'by-hand', schedule: { cron: '@yearly' }, concurrency: 'skip', action: { task: { title: 'manual {{firing.reason}}' } } });
    const a = await d.api('POST', `${R}/by-hand/fire`, { body: {} });
    expect(a.status).toBe(201);
    expect(a.body.data).toMatchObject({ status: 'fired', reason: 'manual', scheduledAt: null });
    expect((await task(a.body.data.created.taskIds[0])).title).toBe('manual manual');
    const b = await d.api('POST', `${R}/by-hand/fire`);
    expect(b.body.data.status).toBe('skipped');
    await d.api('PATCH', `${R}/by-hand`, { body: { concurrency: 'allow' } });
    expect((await d.api('POST', `${R}/by-hand/fire`)).body.data.status).toBe('fired');
    // The history in pages, newest first.
    const first = await d.api('GET', `${R}/by-hand/firings?limit=2`);
    expect(first.body.data.map((f: any) => f.status)).toEqual(['fired', 'skipped']);
    const next = await d.api('GET', `${R}/by-hand/firings?limit=2&cursor=${first.headers.get('x-next-cursor')}`);
    expect(next.body.data.map((f: any) => f.id)).toEqual([a.body.data.id]);
    expect(next.headers.get('x-next-cursor')).toBeNull();
  });
});

describe('event triggers', () => {
  it("when a task fails, opens a triage task for the lead with the failed task's id", async () => {
    await create({
      name: 'triage-failures',
      trigger: { event: 'task:transition', filter: { to: 'failed' } },
      concurrency: 'allow',
      action: { task: { title: 'Triage {{event.data.taskId}}', description: 'It failed: {{event.data.reason}}', assignTo: 'lead', labels: ['triage'] } },
    });
    const t = (await d.api('POST', '/api/v1/tasks', { body: { title: 'flaky' } })).body.data;
    await transition(t.id, 'assigned', 'in_progress');
    let fs: any[] = [];
    await transition(t.id, 'failed');
    await until('the triage firing', async () => (fs = await firings('triage-failures')).length === 1);
    expect(fs[0]).toMatchObject({ status: 'fired', reason: 'event', eventName: 'task:transition', chain: ['triage-failures'] });
    const triage = await task(fs[0].created.taskIds[0]);
    expect(triage).toMatchObject({ title: `Triage ${t.id}`, assignTo: 'lead', labels: ['triage'] });
    // The triage task failing is the routine's own work: it does not trigger it again.
    await transition(triage.id, 'assigned', 'in_progress', 'failed');
    const other = (await d.api('POST', '/api/v1/tasks', { body: { title: 'other' } })).body.data;
    await transition(other.id, 'assigned', 'in_progress', 'failed');
    await until('the second triage', async () => (fs = await firings('triage-failures')).length === 2);
    expect((await task(fs[0].created.taskIds[0])).title).toBe(`Triage ${other.id}`);
  });

  it('a chain of routines stops at the depth limit, recorded, with no event to carry it on', async () => {
    // r1 on a task labelled "chain"; each next one on the previous one's routine:fired.
    await create({ name: 'chain-1', trigger: { event: 'task:created', filter: { title: 'start chain' } }, concurrency: 'allow', action: { task: { title: 'c1' } } });
    for (let i = 2; i <= 7; i++) {
      await create({ name: `chain-${i}`, trigger: { event: 'routine:fired', filter: { routine: `chain-${i - 1}` } }, concurrency: 'allow', action: { task: { title: `c${i}` } } });
    }
    await d.api('POST', '/api/v1/tasks', { body: { title: 'start chain' } });
    await until('the chain to stop', async () => (await firings('chain-6')).length === 1);
    const six = (await firings('chain-6'))[0];
    expect(six).toMatchObject({ status: 'skipped', chain: ['chain-1', 'chain-2', 'chain-3', 'chain-4', 'chain-5', 'chain-6'] });
    expect(six.detail).toMatch(/depth limit: chain-1 → .* → chain-6 passes through more than 5 routines/);
    expect((await firings('chain-5'))[0].status).toBe('fired');
    await settled();
    expect(await firings('chain-7')).toEqual([]);
  });

  it('two routines that would set each other off stop when the chain comes back round', async () => {
    await create({ name: 'ping', trigger: { event: 'routine:fired', filter: { routine: ['pong', 'kick'] } }, concurrency: 'allow', action: { task: { title: 'ping' } } });
    await create({ name: 'pong', trigger: { event: 'routine:fired', filter: { routine: 'ping' } }, concurrency: 'allow', action: { task: { title: 'pong' } } });
    await create({ name: 'kick', schedule: { cron: '@yearly' }, concurrency: 'allow', action: { task: { title: 'kick' } } });
    await d.api('POST', `${R}/kick/fire`);
    await until('ping and pong', async () => (await firings('pong')).length === 1);
    // ping (kick → ping), pong (kick → ping → pong), then ping again would close the cycle: not fired.
    await settled();
    expect((await firings('ping')).map((f) => f.chain)).toEqual([['kick', 'ping']]);
    expect((await firings('pong')).map((f) => f.chain)).toEqual([['kick', 'ping', 'pong']]);
  });

  it('a trigger storm is bounded per minute, with one routine:skipped saying so', async () => {
    await create({
      name: 'stormy',
      trigger: { event: 'task:created', filter: { title: { prefix: 'storm ' } } },
      concurrency: 'allow',
      maxFiringsPerMinute: 3,
      action: { task: { title: 'answer to {{event.data.title}}' } },
    });
    for (let i = 0; i < 10; i++) await d.api('POST', '/api/v1/tasks', { body: { title: `storm ${i}` } });
    await until('the storm handled', async () => (await firings('stormy')).length === 4);
    const fs = (await firings('stormy')).reverse();
    expect(fs.map((f) => f.status)).toEqual(['fired', 'fired', 'fired', 'skipped']);
    expect(fs[3].detail).toMatch(/3 firings in the minute from .* \(maxFiringsPerMinute\); further events until .* are dropped without a record/);
    await clock.pass(60_000);
    await d.api('POST', '/api/v1/tasks', { body: { title: 'storm after' } });
    await until('a firing in the next minute', async () => (await firings('stormy'))[0].status === 'fired');
  });

  it('a playbook run with templated parameters, its mission started', async () => {
    const pb = await d.api('POST', '/api/v1/playbooks', {
      body: { name: 'fix-it', parameters: [{ name: 'ticket', type: 'string', required: true }], mission: { name: 'fix {{ticket}}', tasks: [{ title: 'look at {{ticket}}', assignTo: 'dev' }] } },
    });
    expect(pb.status).toBe(201);
    await create({ name: 'on-comment', trigger: { event: 'task:commented' }, concurrency: 'allow', action: { playbook: 'fix-it', params: { ticket: '{{event.data.taskId}}' } } });
    const t = (await d.api('POST', '/api/v1/tasks', { body: { title: 'reported' } })).body.data;
    await d.api('POST', `/api/v1/tasks/${t.id}/comments`, { body: { body: 'broken', author: 'ana' } });
    let f: any;
    await until('the playbook firing', async () => (f = (await firings('on-comment'))[0]) !== undefined);
    expect(f.status).toBe('fired');
    const m = (await d.api('GET', `/api/v1/missions/${f.created.missionId}`)).body.data;
    expect(m).toMatchObject({ name: `fix ${t.id}`, status: 'active' });
    expect(m.tasks[0]).toMatchObject({ title: `look at ${t.id}`, status: 'pending', assignTo: 'dev' });
  });

  it('an action refused when it fires is recorded failed with the reason, and routine:failed', async () => {
    await create({
      name: 'refused',
      trigger: { event: 'task:created', filter: { title: 'refuse me' } },
      concurrency: 'allow',
      action: { task: { title: 'for {{event.data.title}}', assignTo: '{{event.data.assignTo}}x' } },
    });
    await d.api('POST', '/api/v1/tasks', { body: { title: 'refuse me', assignTo: 'dev' } });
    let f: any;
    await until('the failed firing', async () => (f = (await firings('refused'))[0]) !== undefined);
    expect(f).toMatchObject({ status: 'failed', created: { taskIds: [], missionId: null } });
    expect(f.detail).toMatch(/agent "devx" does not exist/);
    expect((await d.daemon.app.events.since(0, 100_000)).some((e) => e.name === 'routine:failed' && e.data.firingId === f.id)).toBe(true);
  });
});

describe('agent tools', () => {
  it('routine_list and routine_fire over MCP', async () => {
    await create({ name: 'mcp-fired', schedule: { cron: '@yearly' }, concurrency: 'allow', action: { task: { title: 'from mcp' } } });
    const client = new Client({ name: 'svc-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${d.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${d.key}` } } }));
    try {
      const list = await client.callTool({ name: 'routine_list', arguments: {} });
      expect(list.isError).toBeFalsy();
      expect((list.structuredContent as any).routines.some((r: any) => r.name === 'mcp-fired')).toBe(true);
      const fired = await client.callTool({ name: 'routine_fire', arguments: { name: 'mcp-fired' } });
      expect(fired.isError, JSON.stringify(fired.content)).toBeFalsy();
      const f = (fired.structuredContent as any).firing;
      expect(f).toMatchObject({ routine: 'mcp-fired', status: 'fired', reason: 'manual' });
      expect((fired.content as any)[0].text).toContain(`mcp-fired: fired, task(s) ${f.created.taskIds[0]}`);
      const missing = await client.callTool({ name: 'routine_fire', arguments: { name: 'nope' } });
      expect(missing.isError).toBe(true);
    } finally {
      await client.close();
    }
  });
});

describe('on the real clock', () => {
  it('a minutely routine fires within a few seconds, on real timers', async () => {
    // The system clock shifted so that the next minute begins 2.5 s from now; time and timers are real.
    const offset = 60_000 - (Date.now() % 60_000) - 2_500;
    const real: Clock = { now: () => Date.now() + offset, setTimeout: systemClock.setTimeout, clearTimeout: systemClock.clearTimeout };
    const z = await startTestDaemon({ clock: real });
    try {
      const r = await z.api('POST', R, { body: { name: 'real-clock', schedule: { cron: '* * * * *' }, action: { task: { title: 'tick {{firing.time}}' } } } });
      expect(r.status).toBe(201);
      let f: any;
      await until('the real firing', async () => (f = (await z.api('GET', `${R}/real-clock/firings`)).body.data[0]) !== undefined, 6_000);
      expect(f.scheduledAt).toBe(r.body.data.nextFireAt);
      expect(Date.parse(f.firedAt) - Date.parse(f.scheduledAt)).toBeLessThan(1_000);
    } finally {
      await z.close();
    }
  });
});
