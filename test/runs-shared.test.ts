import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readLocalKey } from '../src/state-dir.js';
import { exited, serve } from './cli-helpers.js';
import { FakeClock } from './fake-clock.js';
import { gitProject as repoProject, startTestDaemon, until, type TestDaemon } from './harness.js';
import { alive } from './procs.js';
import { collect } from './sse-collector.js';
import { freshStateDatabase } from './state-pg.js';

// Several daemons on one PostgreSQL state are several runners: each queued run is started by
// exactly one runner that has the agent's runtime (and its label, when the agent is pinned), and a
// runner that stops answering loses its runs to the others.

const noPg = inject('pgUrl') === '';
if (noPg) console.warn(`runs-shared: skipped, ${inject('pgSkip')}`);

const FAKE_AGENT = fileURLToPath(new URL('./fixtures/runs/fake-agent.mjs', import.meta.url));

/** Runners say they are alive every 250 ms and one silent for 4 s is gone (5 s and 30 s by default). */
const PRESENCE = { heartbeatSec: 0.25, offlineAfterSec: 4 };

const gitProject = (config: { runner?: Record<string, unknown>; state?: Record<string, unknown> } = {}): string => repoProject({ ...config, runner: { ...PRESENCE, ...config.runner } });

describe.skipIf(noPg)('runners on one PostgreSQL state', () => {
  const clock = new FakeClock(Date.now());
  let env: Record<string, string>;
  const ds: TestDaemon[] = [];

  beforeAll(async () => {
    env = { SVC_STATE_URL: await freshStateDatabase(), SVC_VAULT_KEY: randomBytes(32).toString('base64'), PATH: process.env.PATH! };
    ds.push(await startTestDaemon({ root: gitProject(), env, clock }));
    ds.push(await startTestDaemon({ root: gitProject(), env, clock }));
    ds.push(await startTestDaemon({ root: gitProject({ runner: { labels: ['gpu'] } }), env, clock }));
    for (const [name, runners] of [
      ['alice', undefined],
      ['gpu-agent', ['gpu']],
    ] as const) {
      const r = await ds[0]!.api('POST', '/api/v1/agents', { body: { name, maxConcurrency: 20, runtime: { kind: 'command', command: FAKE_AGENT, ...(runners ? { runners } : {}) } } });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
  });
  afterAll(async () => {
    await Promise.all(ds.map((d) => d.close()));
  });

  it('lists every runner, and each queued run is started by exactly one of them', async () => {
    const runners = (await ds[1]!.api('GET', '/api/v1/runners')).body.data as any[];
    expect(runners.filter((r) => r.online)).toHaveLength(3);
    expect(runners.find((r) => r.labels.includes('gpu'))).toBeTruthy();
    const made = await Promise.all(
      Array.from({ length: 12 }, (_, i) => ds[i % 3]!.api('POST', '/api/v1/tasks', { body: { title: `t${i}`, description: `@write out-${i}.txt ${i}`, assignTo: 'alice' } })),
    );
    const ids = made.map((m) => m.body.data.id as string);
    let all: any[] = [];
    await until(
      'every task run once',
      async () => {
        all = (await ds[2]!.api('GET', '/api/v1/runs?limit=200')).body.data;
        return ids.every((id) => all.some((r) => r.taskId === id && r.status === 'succeeded'));
      },
      30_000,
    );
    for (const id of ids) expect(all.filter((r) => r.taskId === id)).toHaveLength(1);
    // Each daemon ran in its own project folder: the run's workspace is under the runner's root.
    for (const r of all) {
      const d = ds.find((x) => r.workspace.startsWith(x.root))!;
      expect(d, r.workspace).toBeTruthy();
    }
  });

  it('runs an agent pinned to a label only on a runner with that label', async () => {
    const gpuRunner = ((await ds[0]!.api('GET', '/api/v1/runners')).body.data as any[]).find((r) => r.labels.includes('gpu')).id;
    const made = await Promise.all(Array.from({ length: 4 }, (_, i) => ds[i % 2]!.api('POST', '/api/v1/tasks', { body: { title: `g${i}`, description: '@write g.txt g', assignTo: 'gpu-agent' } })));
    const ids = made.map((m) => m.body.data.id as string);
    let all: any[] = [];
    await until(
      'the pinned runs',
      async () => {
        all = ((await ds[0]!.api('GET', '/api/v1/runs?agent=gpu-agent')).body.data as any[]).filter((r) => r.status === 'succeeded');
        return all.length === 4;
      },
      30_000,
    );
    expect(new Set(all.map((r) => r.runner))).toEqual(new Set([gpuRunner]));
    void ids;
  });

  it("a usage limit met on one runner holds the provider's runs on every runner, and its end is said once", async () => {
    const r = await ds[0]!.api('POST', '/api/v1/agents', { body: { name: 'lim', model: 'anthropic/claude-opus-4-8', runtime: { kind: 'command', command: FAKE_AGENT } } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const events = await collect(ds[2]!.url, { key: ds[2]!.key, filter: 'runner:paused,runner:resumed,run:resumed' });
    const resetEpoch = Math.floor(clock.now() / 1000) + 3600;
    const task = async (d: TestDaemon, description: string) => (await d.api('POST', '/api/v1/tasks', { body: { title: 'limited', description, assignTo: 'lim' } })).body.data.id as string;
    const a = await task(ds[0]!, `@ratelimit ${resetEpoch}`);
    let paused: any;
    await until('the run to pause', async () => (paused = (await ds[1]!.api('GET', `/api/v1/runs?taskId=${a}`)).body.data[0])?.status === 'paused', 15_000);
    const b = await task(ds[1]!, '@write b.txt b');
    // Its run is made once a runner has heard of the task (a few round trips to the state).
    await until('the run of b to be made', async () => (await ds[1]!.api('GET', `/api/v1/runs?taskId=${b}`)).body.data[0] !== undefined, 15_000);
    // Whichever runner looks, the provider holds it.
    for (const d of ds) expect((await d.api('GET', `/api/v1/runs?taskId=${b}`)).body.data[0]).toMatchObject({ status: 'queued', waitingFor: { kind: 'provider', provider: 'anthropic' } });
    await clock.passTo(resetEpoch * 1000 + 1_000);
    for (const id of [a, b]) await until(`run of ${id} to succeed`, async () => (await ds[0]!.api('GET', `/api/v1/runs?taskId=${id}`)).body.data[0]?.status === 'succeeded', 15_000);
    expect((await ds[0]!.api('GET', `/api/v1/runs?taskId=${a}`)).body.data.map((x: any) => x.id)).toEqual([paused.id]);
    await events.until(() => events.messages.filter((m) => m.event === 'run:resumed').length === 1);
    // Three runners woke at the reset: one said the pause is over, one resumed the run.
    expect(events.messages.map((m) => m.event)).toEqual(['runner:paused', 'runner:resumed', 'run:resumed']);
    events.close();
  });

  it('takes over the runs of a runner that stops answering, and the runner ends its copies when it comes back', async () => {
    // A fourth daemon in a process of its own: frozen with SIGSTOP, its presence stops. Its label is the only one the agent `edge` may run on, so its run starts there.
    // Frozen inside a transaction, it holds its runner's row until the server ends its session: 5.5 s (its wait bound) with this statement timeout.
    const root = gitProject({ runner: { labels: ['edge'] }, state: { statementTimeoutMs: 3_000 } });
    const other = await serve(root, ['--port', '0'], env);
    const key = readLocalKey(root)!;
    const call = async (method: string, path: string, body?: unknown) =>
      (
        await fetch(other.url + path, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
      ).json() as Promise<any>;
    try {
      expect((await ds[0]!.api('POST', '/api/v1/agents', { body: { name: 'edge', runtime: { kind: 'command', command: FAKE_AGENT, runners: ['edge'] } } })).status).toBe(201);
      // Its runner says it is there just after the daemon's start line.
      let otherId = '';
      await until('the fourth runner', async () => (otherId = ((await call('GET', '/api/v1/runners')).data as any[]).find((r: any) => r.pid === other.child.pid)?.id ?? '') !== '');
      const t = await ds[1]!.api('POST', '/api/v1/tasks', { body: { title: 'on the edge', description: '@tick 200', assignTo: 'edge' } });
      const taskId = t.body.data.id;
      let run: any;
      await until('its run on the fourth daemon', async () => (run = (await ds[1]!.api('GET', `/api/v1/runs?taskId=${taskId}`)).body.data[0])?.status === 'running', 20_000);
      expect(run.runner).toBe(otherId);
      other.child.kill('SIGSTOP');
      // A second runner with the label; 4 s of silence later, the run moves.
      ds[0]!.writeConfig({ name: 'test-project', runner: { ...PRESENCE, labels: ['edge'] } });
      await until('the label to apply', async () => ds[0]!.daemon.app.config().runner.labels.includes('edge'));
      let runs: any[] = [];
      await until(
        'the run lost and started again elsewhere',
        async () => {
          runs = (await ds[0]!.api('GET', `/api/v1/runs?taskId=${taskId}`)).body.data;
          if (runs.length === 2 && runs[0].status === 'running') return true;
          // What the wait saw last goes into its failure.
          throw new Error(`runs: ${runs.map((r) => `${r.status} on ${r.runner === otherId ? 'the fourth' : r.runner}`).join(', ')}`);
        },
        20_000,
      );
      expect(runs[1]).toMatchObject({ status: 'lost', runner: otherId });
      expect(runs[1].error).toMatch(/stopped answering/);
      expect(runs[0].runner).not.toBe(otherId);
      const offline = ((await ds[0]!.api('GET', '/api/v1/runners')).body.data as any[]).find((r) => r.id === otherId);
      expect(offline.online).toBe(false);
      // Back again, the fourth daemon ends its copy of the run (the lost one's process).
      other.child.kill('SIGCONT');
      await until("the fourth daemon's copy to end", async () => !alive(run.pid), 20_000);
      expect((await ds[1]!.api('GET', `/api/v1/runs/${runs[1].id}`)).body.data.status).toBe('lost');
      await ds[0]!.api('POST', `/api/v1/runs/${runs[0].id}/cancel`);
    } finally {
      other.child.kill('SIGCONT');
      other.child.kill('SIGTERM');
      await exited(other.child);
    }
  }, 90_000);
});
