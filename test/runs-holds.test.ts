import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { svcAgainst } from './cli-helpers.js';
import { FakeClock } from './fake-clock.js';
import { gitProject, startTestDaemon, until, type TestDaemon } from './harness.js';
import { collect } from './sse-collector.js';

// What holds a run (docs/runs.md, Pauses and budgets), with the `command` runtime
// (test/fixtures/runs/fake-agent.mjs): a usage limit pauses the run and its provider's runs until
// the reset and resumes the same run with its session; budgets warn, hold new runs and stop live
// ones after their turn until the period rolls over or the limit is raised; a session the CLI
// lost is replaced by a fresh one told the task's history. Time is the daemon's fake clock.

const FAKE_AGENT = fileURLToPath(new URL('./fixtures/runs/fake-agent.mjs', import.meta.url));

const daemons: TestDaemon[] = [];
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.close();
});

async function start(o: { clock: FakeClock; config?: Record<string, unknown>; root?: string }): Promise<TestDaemon> {
  const d = await startTestDaemon({ root: o.root ?? gitProject(o.config ?? {}), clock: o.clock, keepRoot: true, env: { PATH: process.env.PATH! } });
  daemons.push(d);
  return d;
}

async function addAgent(d: TestDaemon, name: string, model: string, fields: Record<string, unknown> = {}) {
  const r = await d.api('POST', '/api/v1/agents', { body: { name, model, runtime: { kind: 'command', command: FAKE_AGENT }, ...fields } });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
}

async function addTask(d: TestDaemon, agent: string, description: string): Promise<string> {
  const r = await d.api('POST', '/api/v1/tasks', { body: { title: `Work of ${agent}`, description, assignTo: agent, maxRetries: 0 } });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data.id;
}

const runsOf = async (d: TestDaemon, taskId: string) => (await d.api('GET', `/api/v1/runs?taskId=${taskId}`)).body.data as any[];
const task = async (d: TestDaemon, id: string) => (await d.api('GET', `/api/v1/tasks/${id}`)).body.data;
const anthropic = async (d: TestDaemon) => (await d.api('GET', '/api/v1/auth/status')).body.data.providers.anthropic;

/** The task's first run, once it is in one of `statuses`. */
async function runIn(d: TestDaemon, taskId: string, statuses: string[], timeoutMs = 15_000): Promise<any> {
  let run: any;
  await until(`the run of ${taskId} to be ${statuses.join('|')}`, async () => statuses.includes((run = (await runsOf(d, taskId))[0])?.status), timeoutMs);
  return run;
}

const logText = async (d: TestDaemon, runId: string) => JSON.stringify((await d.api('GET', `/api/v1/runs/${runId}/log?limit=1000`)).body.data);

describe('a usage limit', () => {
  it("pauses the run and its provider's runs until the reset, then resumes the same run with its session", async () => {
    const clock = new FakeClock(Date.now());
    const d = await start({ clock });
    await addAgent(d, 'alice', 'anthropic/claude-opus-4-8');
    await addAgent(d, 'bob', 'anthropic/claude-sonnet-4-5');
    await addAgent(d, 'carol', 'openai/gpt-5.5');
    const events = await collect(d.url, { key: d.key, filter: 'run:queued,run:started,run:paused,run:resumed,run:finished,runner:' });
    const resetEpoch = Math.floor(clock.now() / 1000) + 2 * 3600;
    const reset = new Date(resetEpoch * 1000).toISOString();

    const a = await addTask(d, 'alice', `@ratelimit ${resetEpoch}\n@write a.txt a`);
    const paused = await runIn(d, a, ['paused']);
    expect(paused).toMatchObject({ attempt: 1, pauseReason: 'usage_limit', notBefore: reset, pid: null, waitingFor: { kind: 'provider', provider: 'anthropic', until: reset } });
    // The task is released, and no retry is counted.
    expect(await task(d, a)).toMatchObject({ status: 'assigned', retries: 0 });
    await events.until(() => events.messages.some((m) => m.event === 'runner:paused'));
    expect(JSON.parse(events.messages.find((m) => m.event === 'runner:paused')!.data)).toEqual({ provider: 'anthropic', until: reset, runs: 1 });
    expect(JSON.parse(events.messages.find((m) => m.event === 'run:paused')!.data)).toEqual({
      runId: paused.id,
      taskId: a,
      agent: 'alice',
      reason: 'usage_limit',
      provider: 'anthropic',
      until: reset,
    });

    // Another agent on the provider waits; one on another provider runs.
    const b = await addTask(d, 'bob', '@write b.txt b');
    const c = await addTask(d, 'carol', '@write c.txt c');
    expect((await runIn(d, c, ['succeeded'])).agent).toBe('carol');
    const held = (await runsOf(d, b))[0];
    expect(held).toMatchObject({ status: 'queued', waitingFor: { kind: 'provider', provider: 'anthropic', until: reset } });
    expect(await anthropic(d)).toMatchObject({ status: 'cooldown', cooldownUntil: reset, pausedUntil: reset, runsWaiting: 2 });
    const queue = (await d.api('GET', '/api/v1/runs/queue')).body.data;
    expect(queue.providers).toEqual([{ provider: 'anthropic', pausedUntil: reset, runsWaiting: 2 }]);
    expect(queue.agents.map((x: any) => [x.agent, x.provider, x.state, x.heldBy?.kind ?? null, x.waiting.map((w: any) => w.status)])).toEqual([
      ['alice', 'anthropic', 'waiting', 'provider', ['paused']],
      ['bob', 'anthropic', 'waiting', 'provider', ['queued']],
      ['carol', 'openai', 'idle', null, []],
    ]);
    // The CLI says the same in words.
    const cliQueue = (await svcAgainst(d, ['runs', 'queue'])).stdout;
    expect(cliQueue).toContain(`anthropic is paused by a usage limit until ${reset} (in 2h): 2 run(s) wait`);
    expect(cliQueue).toMatch(/bob\s+anthropic\s+waiting\s+-\s+1\s+anthropic's usage limit, resets in 2h/);
    expect((await svcAgainst(d, ['runs', 'ls', '--agent', 'bob'])).stdout).toMatch(/queued .*waits: anthropic's usage limit, resets in 2h/);
    expect((await svcAgainst(d, ['auth', 'status'])).stdout).toMatch(/anthropic\s+cooldown\s+set ANTHROPIC_API_KEY\s+in 2h\s+2\s+1\s+usage limit met by run/);

    // The reset comes: the provider's runs go on; the paused run resumes its session.
    await clock.passTo(resetEpoch * 1000 + 1_000);
    const resumed = await runIn(d, a, ['succeeded']);
    expect(resumed).toMatchObject({ id: paused.id, attempt: 1, status: 'succeeded', pauseReason: 'usage_limit', waitingFor: null });
    expect(await logText(d, paused.id)).toContain(`resumed sess-${paused.id}`);
    expect(await task(d, a)).toMatchObject({ status: 'review', retries: 0 });
    expect((await runIn(d, b, ['succeeded'])).agent).toBe('bob');
    expect(await anthropic(d)).toMatchObject({ runsWaiting: 0 });
    expect((await anthropic(d)).pausedUntil).toBeUndefined();

    await events.until(() => events.messages.filter((m) => m.event === 'run:finished').length === 3);
    const ofA = events.messages.filter((m) => JSON.parse(m.data).runId === paused.id).map((m) => m.event);
    expect(ofA).toEqual(['run:queued', 'run:started', 'run:paused', 'run:resumed', 'run:started', 'run:finished']);
    const over = events.messages.filter((m) => m.event === 'runner:resumed').map((m) => JSON.parse(m.data));
    expect(over).toEqual([{ provider: 'anthropic', runs: 2, by: 'runner' }]);
    events.close();
  });

  it('with runner.autoResume false waits for a person after the reset, and survives a restart while paused', async () => {
    const clock = new FakeClock(Date.now());
    let d = await start({ clock, config: { runner: { autoResume: false } } });
    await addAgent(d, 'alice', 'anthropic/claude-opus-4-8');
    await addAgent(d, 'bob', 'anthropic/claude-opus-4-8');
    const resetEpoch = Math.floor(clock.now() / 1000) + 3600;
    const reset = new Date(resetEpoch * 1000).toISOString();
    const a = await addTask(d, 'alice', `@ratelimit ${resetEpoch}`);
    const paused = await runIn(d, a, ['paused']);
    const b = await addTask(d, 'bob', '@write b.txt b');
    expect((await runsOf(d, b))[0].waitingFor).toMatchObject({ kind: 'provider' });

    // The pause and its reset are state: a new daemon finds them.
    const root = d.root;
    await d.close();
    daemons.splice(daemons.indexOf(d), 1);
    d = await start({ clock, root });
    expect((await runsOf(d, a))[0]).toMatchObject({ id: paused.id, status: 'paused', waitingFor: { kind: 'provider', until: reset } });
    expect(await anthropic(d)).toMatchObject({ pausedUntil: reset, runsWaiting: 2 });
    expect((await runsOf(d, b))[0].status).toBe('queued');

    // A run by hand of a task whose run is paused: resume that one instead.
    const byHand = await svcAgainst(d, ['tasks', 'run', a]);
    expect(byHand.code).toBe(1);
    expect(byHand.stderr).toContain(`has a paused run (${paused.id}); resume it (\`svc runs resume ${paused.id}\`) or cancel it first`);

    await clock.passTo(resetEpoch * 1000 + 1_000);
    // The provider's queued runs go on; the paused one waits for a person.
    await runIn(d, b, ['succeeded']);
    expect((await runsOf(d, a))[0]).toMatchObject({ status: 'paused', waitingFor: { kind: 'resume' } });
    const res = await d.api('POST', `/api/v1/runs/${paused.id}/resume`);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: paused.id, status: 'queued' });
    expect((await runIn(d, a, ['succeeded'])).id).toBe(paused.id);
    const again = await d.api('POST', `/api/v1/runs/${paused.id}/resume`);
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('conflict');
    expect(JSON.stringify(again.body)).toMatch(/is succeeded, not paused/);
    expect((await d.api('POST', '/api/v1/runs/nope/resume')).status).toBe(404);
  });

  it("resumed by hand before its reset lifts the provider's pause; a waiting run whose task is removed ends at once", async () => {
    const clock = new FakeClock(Date.now());
    const d = await start({ clock });
    await addAgent(d, 'alice', 'anthropic/claude-opus-4-8');
    const events = await collect(d.url, { key: d.key, filter: 'runner:resumed' });
    const resetEpoch = Math.floor(clock.now() / 1000) + 5 * 3600;
    const a = await addTask(d, 'alice', `@ratelimit ${resetEpoch}`);
    const x = await addTask(d, 'alice', `@ratelimit ${resetEpoch}`);
    const paused = await runIn(d, a, ['paused']);
    // x waits for the provider; a person gives the task up: its run ends at once.
    const waiting = (await runsOf(d, x))[0];
    expect(waiting.status).toBe('queued');
    expect((await d.api('DELETE', `/api/v1/tasks/${x}`)).status).toBe(200);
    await until('the waiting run to end', async () => (await d.api('GET', `/api/v1/runs/${waiting.id}`)).body.data.status === 'cancelled');
    expect((await d.api('GET', `/api/v1/runs/${waiting.id}`)).body.data.error).toBe('the task was removed while the run waited');
    const res = await d.api('POST', `/api/v1/runs/${paused.id}/resume`);
    expect(res.status).toBe(200);
    expect((await runIn(d, a, ['succeeded'])).id).toBe(paused.id);
    await events.until(() => events.messages.length === 1);
    expect(JSON.parse(events.messages[0]!.data)).toEqual({ provider: 'anthropic', runs: 1, by: 'person' });
    expect((await anthropic(d)).cooldownUntil).toBeUndefined();
    events.close();
  });
});

describe('budgets', () => {
  it('refuses a budget with no limit, an unknown period, a negative amount, a twin or an unknown time zone, naming the field', async () => {
    const d = await start({ clock: new FakeClock(Date.now()) });
    const put = (body: unknown) => d.api('PUT', '/api/v1/budgets', { body });
    const cases: [unknown, string, RegExp][] = [
      [{ limits: [{ agent: 'alice', period: 'day' }] }, 'body.limits.0', /needs a limit: give tokens, costUsd or both/],
      [{ limits: [{ period: 'fortnight', tokens: 10 }] }, 'body.limits.0.period', /day|week|month/],
      [{ limits: [{ period: 'day', costUsd: -1 }] }, 'body.limits.0.costUsd', /cannot be negative/],
      [
        {
          limits: [
            { period: 'day', tokens: 5 },
            { period: 'day', costUsd: 1 },
          ],
        },
        'body.limits.1',
        /a second day budget for the project/,
      ],
      [{ timeZone: 'Mars/Olympus', limits: [] }, 'body.timeZone', /not a time zone/],
      [{ limits: [{ period: 'day', tokens: 5, dollars: 3 }] }, 'body.limits.0.dollars', /not allowed/],
    ];
    for (const [body, path, message] of cases) {
      const r = await put(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      const detail = r.body.details.find((x: any) => x.path === path);
      expect(detail, `${path} in ${JSON.stringify(r.body.details)}`).toBeDefined();
      expect(detail.message).toMatch(message);
    }
    // Nothing was stored: project.json's (none) are in force.
    expect((await d.api('GET', '/api/v1/budgets')).body.data).toMatchObject({ source: 'project.json', budgets: { timeZone: 'UTC', limits: [] }, states: [] });
  });

  it("warns at 80 %, stops a live run after its turn at 100 % (paused), holds the agent's new runs, and lets them go when the day rolls over", async () => {
    // 22:00 UTC: the day ends in two hours.
    const clock = new FakeClock(Date.parse('2030-01-15T22:00:00.000Z'));
    const d = await start({ clock, config: { budgets: { limits: [{ agent: 'alice', period: 'day', tokens: 250 }] } } });
    await addAgent(d, 'alice', 'anthropic/claude-opus-4-8');
    const events = await collect(d.url, { key: d.key, filter: 'budget:,run:paused,run:resumed' });
    // 100 tokens a turn, a turn every 100 ms: 80 % at the second, 100 % at the third.
    const a = await addTask(d, 'alice', '@turns 30 100 100');
    const paused = await runIn(d, a, ['paused']);
    expect(paused.pauseReason).toBe('budget');
    expect(paused.usage.inputTokens).toBeGreaterThanOrEqual(300);
    // It stopped at a turn's end, long before its 30 turns (a loaded machine reads the agent's
    // lines late, so a few more turns may have gone by than the third).
    expect(paused.usage.inputTokens).toBeLessThan(2000);
    expect(paused.usage.inputTokens % 100).toBe(0);
    expect(await task(d, a)).toMatchObject({ status: 'assigned', retries: 0 });
    const b = await addTask(d, 'alice', '@write b.txt b');
    const midnight = '2030-01-16T00:00:00.000Z';
    await until('the next run to be held', async () => (await runsOf(d, b))[0]?.waitingFor?.kind === 'budget');
    expect((await runsOf(d, b))[0]).toMatchObject({ status: 'queued', waitingFor: { kind: 'budget', scope: 'agent', agent: 'alice', period: 'day', until: midnight } });
    expect((await runsOf(d, a))[0].waitingFor).toEqual({ kind: 'budget', scope: 'agent', agent: 'alice', period: 'day', until: midnight });

    const budgets = (await d.api('GET', '/api/v1/budgets')).body.data;
    expect(budgets.source).toBe('project.json');
    expect(budgets.states).toEqual([
      expect.objectContaining({
        scope: 'agent',
        agent: 'alice',
        period: 'day',
        periodStart: '2030-01-15T00:00:00.000Z',
        periodEnd: midnight,
        limit: { tokens: 250, costUsd: null },
        state: 'exceeded',
      }),
    ]);
    const usage = (await d.api('GET', '/api/v1/usage/periods')).body.data;
    expect(usage.periods.week).toEqual({ start: '2030-01-14T00:00:00.000Z', end: '2030-01-21T00:00:00.000Z' });
    const alice = usage.rows.find((r: any) => r.agent === 'alice');
    expect(alice.day).toMatchObject({ tokens: paused.usage.inputTokens, limit: { tokens: 250, costUsd: null }, runs: 2 });
    expect(alice.day.percent).toBeGreaterThanOrEqual(100);
    expect(alice.month.limit).toBe(null);
    expect(usage.rows.at(-1)).toMatchObject({ agent: null, day: { tokens: paused.usage.inputTokens } });

    const said = () => events.messages.map((m) => [m.event, JSON.parse(m.data)] as const);
    await events.until(() => said().some(([e]) => e === 'run:paused'));
    const alerts = said().filter(([e]) => e.startsWith('budget:'));
    expect(alerts.map(([e]) => e)).toEqual(['budget:warning', 'budget:exceeded']);
    expect(alerts[1]![1]).toMatchObject({ scope: 'agent', agent: 'alice', period: 'day', periodEnd: midnight, limit: { tokens: 250, costUsd: null } });

    // The day rolls over: the paused run resumes its session, then the held one runs.
    await clock.passTo(Date.parse(midnight) + 1_000);
    const resumed = await runIn(d, a, ['succeeded']);
    expect(resumed).toMatchObject({ id: paused.id, attempt: 1 });
    // Its second process's usage is added to the first's.
    expect(resumed.usage.inputTokens).toBe(paused.usage.inputTokens + 3000);
    expect((await runIn(d, b, ['succeeded'])).status).toBe('succeeded');
    // Warning and exceeded were said once in that day (the resumed run counts in the day it was queued).
    expect(said().filter(([e]) => e.startsWith('budget:')).length).toBe(2);
    expect(
      said()
        .filter(([e]) => e === 'run:resumed')
        .map(([, d]) => d),
    ).toEqual([{ runId: paused.id, taskId: a, agent: 'alice', by: 'runner' }]);
    events.close();
  });

  it('a raised limit lets held runs go at once; budgets PUT through the API outlive a restart until project.json changes', async () => {
    const clock = new FakeClock(Date.parse('2030-03-10T09:00:00.000Z'));
    let d = await start({ clock, config: { budgets: { timeZone: 'Europe/Paris', limits: [{ period: 'month', costUsd: 0.5 }] } } });
    await addAgent(d, 'alice', 'anthropic/claude-opus-4-8');
    const events = await collect(d.url, { key: d.key, filter: 'budget:' });
    // A run that reports its cost only at its end runs to its end; the budget is spent after it.
    const a = await addTask(d, 'alice', '@usage 10 5 0.6');
    await runIn(d, a, ['succeeded']);
    const b = await addTask(d, 'alice', '@write b.txt b');
    await until('the next run to be held', async () => (await runsOf(d, b))[0]?.waitingFor?.kind === 'budget');
    // March in Paris: from 1 March 00:00 (UTC+1) to 1 April 00:00 (UTC+2).
    expect((await runsOf(d, b))[0].waitingFor).toEqual({ kind: 'budget', scope: 'project', agent: null, period: 'month', until: '2030-03-31T22:00:00.000Z' });

    const raised = await d.api('PUT', '/api/v1/budgets', { body: { timeZone: 'Europe/Paris', limits: [{ period: 'month', costUsd: 5 }] } });
    expect(raised.status).toBe(200);
    expect(raised.body.data).toMatchObject({ source: 'api', states: [expect.objectContaining({ scope: 'project', state: 'ok', periodStart: '2030-02-28T23:00:00.000Z' })] });
    expect((await runIn(d, b, ['succeeded'])).status).toBe('succeeded');
    await events.until(() => events.messages.some((m) => m.event === 'budget:updated'));
    expect(events.messages.map((m) => m.event)).toEqual(['budget:warning', 'budget:exceeded', 'budget:updated']);
    events.close();

    // Kept in the state across a restart...
    const root = d.root;
    await d.close();
    daemons.splice(daemons.indexOf(d), 1);
    d = await start({ clock, root });
    expect((await d.api('GET', '/api/v1/budgets')).body.data).toMatchObject({ source: 'api', budgets: { limits: [{ period: 'month', costUsd: 5 }] } });
    // ...until project.json's budgets change: the file wins again.
    const reloaded = await collect(d.url, { key: d.key, filter: 'config:reloaded' });
    d.writeConfig({ name: 'test-project', budgets: { limits: [{ period: 'week', tokens: 1000 }] } });
    await reloaded.until(() => reloaded.messages.length > 0, 10_000);
    reloaded.close();
    expect((await d.api('GET', '/api/v1/budgets')).body.data).toMatchObject({ source: 'project.json', budgets: { timeZone: 'UTC', limits: [{ period: 'week', tokens: 1000 }] } });
    // A bad budget in project.json is refused naming it; the last good budgets stay.
    const invalid = await collect(d.url, { key: d.key, filter: 'config:invalid' });
    d.writeConfig({ name: 'test-project', budgets: { limits: [{ period: 'week', tokens: -5 }] } });
    await invalid.until(() => invalid.messages.length > 0, 10_000);
    invalid.close();
    expect(JSON.parse(invalid.messages[0]!.data).issues).toEqual([expect.objectContaining({ path: 'budgets.limits.0.tokens', message: expect.stringMatching(/cannot be negative/) })]);
    expect((await d.api('GET', '/api/v1/budgets')).body.data.budgets.limits).toEqual([{ period: 'week', tokens: 1000 }]);
  });
});

describe('a session the CLI cannot resume', () => {
  it("is replaced by a fresh session whose prompt holds the task's history", async () => {
    const d = await start({ clock: new FakeClock(Date.now()) });
    await addAgent(d, 'alice', 'anthropic/claude-opus-4-8');
    const t = await addTask(d, 'alice', '@no-session\n@comment the first draft is in draft.txt\n@write draft.txt draft\n@has What happened so far\n@has the first draft is in draft.txt');
    const first = await runIn(d, t, ['succeeded']);
    expect(await logText(d, first.id)).toContain('has What happened so far: no');
    // Sent back from review: the revision run resumes the session, which the CLI says it has not.
    const approval = await d.api('POST', '/api/v1/approvals', { body: { taskId: t, requestedBy: 'reviewer', title: 'Good?' } });
    expect((await d.api('POST', `/api/v1/approvals/${approval.body.data.id}/reject`, { body: { feedback: 'Say more.' } })).status).toBe(200);
    let second: any;
    await until('the revision run to end', async () => (second = (await runsOf(d, t)).find((r) => r.attempt === 2))?.status === 'succeeded', 15_000);
    expect(second.reason).toBe('revision');
    const log = await logText(d, second.id);
    expect(log).toContain(`No conversation found with session ID: ${first.sessionId}`);
    expect(log).toContain(`the CLI could not resume session ${first.sessionId}; starting a fresh session`);
    expect(log).toContain('has What happened so far: yes');
    // The notes of the earlier run are in the history.
    expect(log).toContain('has the first draft is in draft.txt: yes');
    expect(second.sessionId).toBe(`sess-${second.id}`);
  });
});
