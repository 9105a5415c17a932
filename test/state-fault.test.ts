import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { exited, serve } from './cli-helpers.js';
import { eventually, makeProject } from './harness.js';
import { startTestPostgres, type TestPostgres } from './pg-server.js';
import { collect, type Collector } from './sse-collector.js';
import { freshStateDatabase } from './state-pg.js';
import { startReceiver, type Receiver } from './webhook-receiver.js';

// Losing one daemon loses nothing. Three `svc serve` processes share one PostgreSQL state; writers
// create tasks through all three while one of them, picked at random, is SIGKILLed at a random
// moment; then it is started again for the next trial. Afterwards: every write that was answered
// 201 is there, the survivors' live streams carried every event id with no gap, and every
// delivery was made (some twice: at-least-once allows it). `npm run soak` runs 20 trials.

const TRIALS = Number(process.env.SVC_FAULT_TRIALS ?? 3);
const WRITERS = 6;
const WRITE_MS = 1_500;

const noPg = inject('pgUrl') === '';
if (noPg) console.warn(`state-fault: skipped, ${inject('pgSkip')}`);

interface Node {
  root: string;
  child: ChildProcess;
  url: string;
}

const children = new Set<ChildProcess>();
let rx: Receiver | undefined;
let ownServer: TestPostgres | undefined;
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await rx?.close();
  ownServer?.stop();
});

describe.skipIf(noPg)('SIGKILL one of three daemons on one PostgreSQL state, at random moments', () => {
  it(
    `${TRIALS} trials: no acknowledged write lost, no event id gap on the survivors' streams, every delivery made`,
    async () => {
      const env = {
        SVC_STATE_URL: await freshStateDatabase(),
        SVC_VAULT_KEY: randomBytes(32).toString('base64'),
        SERVICE_API_KEY: `shared-${randomBytes(12).toString('hex')}`,
        SVC_KEYCHAIN: 'off',
      };
      const start = async (root: string): Promise<Node> => {
        const s = await serve(root, ['--port', '0'], env);
        children.add(s.child);
        return { root, child: s.child, url: s.url };
      };
      const nodes: Node[] = [];
      for (let i = 0; i < 3; i++) nodes.push(await start(makeProject({ webhooks: { timeoutMs: 2_000, retryBaseMs: 10 } })));
      const call = (n: Node, method: string, path: string, body?: unknown) =>
        fetch(n.url + path, {
          method,
          headers: { authorization: `Bearer ${env.SERVICE_API_KEY}`, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        });

      rx = await startReceiver();
      const hook = (await (await call(nodes[0]!, 'POST', '/v1/webhooks', { url: `${rx.url}/in`, events: ['task:created'] })).json()).data;
      const acked = new Map<string, string>(); // task id → title

      for (let trial = 0; trial < TRIALS; trial++) {
        const streams: Collector[] = await Promise.all(nodes.map((n) => collect(n.url, { key: env.SERVICE_API_KEY })));
        const victim = Math.floor(Math.random() * 3);
        const killAt = 200 + Math.random() * (WRITE_MS - 400);
        const until = Date.now() + WRITE_MS;
        const killer = new Promise<void>((resolve) =>
          setTimeout(() => {
            nodes[victim]!.child.kill('SIGKILL');
            resolve();
          }, killAt),
        );
        let n = 0;
        await Promise.all(
          Array.from({ length: WRITERS }, async () => {
            while (Date.now() < until) {
              const title = `trial ${trial} write ${n++}`;
              try {
                const res = await call(nodes[Math.floor(Math.random() * 3)]!, 'POST', '/api/v1/tasks', { title });
                if (res.status === 201) acked.set((await res.json()).data.id, title);
              } catch {
                // the daemon died under this request: not acknowledged, so not promised
              }
            }
          }),
        );
        await killer;
        await exited(nodes[victim]!.child);
        children.delete(nodes[victim]!.child);
        // Each survivor's live stream: every acknowledged task of this trial, and ids with no gap.
        const mine = [...acked].filter(([, title]) => title.startsWith(`trial ${trial} `)).map(([id]) => id);
        for (const [i, s] of streams.entries()) {
          if (i === victim) continue;
          await s.until((c) => {
            const seen = new Set(c.messages.filter((m) => m.event === 'task:created').map((m) => JSON.parse(m.data).taskId));
            return mine.every((id) => seen.has(id));
          }, 10_000);
          const ids = s.messages.filter((m) => m.id).map((m) => Number(m.id));
          expect(ids, `trial ${trial}, daemon ${i}`).toEqual(Array.from({ length: ids.length }, (_, k) => ids[0]! + k));
        }
        for (const s of streams) s.close();
        nodes[victim] = await start(nodes[victim]!.root);
      }

      // Nothing acknowledged was lost.
      expect(acked.size).toBeGreaterThan(TRIALS * 10);
      for (const [id, title] of acked) {
        const res = await call(nodes[id.charCodeAt(id.length - 1) % 3]!, 'GET', `/api/v1/tasks/${id}`);
        expect(res.status, id).toBe(200);
        expect((await res.json()).data.title).toBe(title);
      }
      // Every delivery made: none left pending, every acknowledged task's event received.
      await eventually(async () => {
        const res = await call(nodes[0]!, 'GET', `/v1/webhooks/${hook.id}/deliveries?limit=200`);
        const page = (await res.json()).data as { status: string }[];
        const titles = new Set(rx!.received.filter((r) => r.answer === 200).map((r) => JSON.parse(r.body).data.title));
        return page.every((d) => d.status === 'succeeded') && [...acked.values()].every((t) => titles.has(t));
      }, 30_000);
      const sent = rx.received.filter((r) => r.answer === 200).map((r) => r.headers['x-service-delivery-id'] as string);
      console.log(
        `state-fault: ${TRIALS} trials, ${acked.size} writes acknowledged and found, ${new Set(sent).size} deliveries received, ${sent.length - new Set(sent).size} of them twice or more (at-least-once)`,
      );
      for (const nd of nodes) {
        nd.child.kill('SIGTERM');
        await exited(nd.child);
        children.delete(nd.child);
      }
    },
    60_000 + TRIALS * 15_000,
  );
});

/**
 * PostgreSQL going away is an outage, never a crash. One server of its own (synchronous_commit on,
 * so a crash keeps what was acknowledged) under three `svc serve` processes, one per way of using
 * it: the state on SQLite with the application databases on PostgreSQL, and the state and the
 * databases on PostgreSQL through each state driver (libpq, pg). Writers keep creating tasks and
 * inserting rows through all three while the server is stopped (pg_ctl fast) or killed (pg_ctl
 * immediate: a crash) and started again, OUTAGES times. Meanwhile every answer is a success or a
 * 503; no daemon exits; each serves again by itself once the server is back; every acknowledged
 * write is there at the end; and an outage costs each daemon two log lines, one when it starts and
 * one when it ends (besides its request lines).
 */
const OUTAGES = Math.max(5, TRIALS);
const UP_MS = 500;
const DOWN_MS = 800;

describe.skipIf(noPg)('PostgreSQL stopped and killed under load', () => {
  it(`${OUTAGES} outages on every provider and state driver: 503 meanwhile, no exit, nothing acknowledged lost, two log lines an outage`, async () => {
    const started = await startTestPostgres({ settings: ['synchronous_commit=on'] });
    if ('skip' in started) throw new Error(started.skip);
    const server = (ownServer = started);
    const database = async (name: string) => {
      const c = new pg.Client(server.url);
      await c.connect();
      await c.query(`CREATE DATABASE ${name}`);
      await c.end();
      const u = new URL(server.url);
      u.pathname = `/${name}`;
      return u.toString();
    };
    const key = `outage-${randomBytes(12).toString('hex')}`;
    const setups = [
      { name: 'state sqlite, data postgres', driver: null },
      { name: 'state postgres (libpq), data postgres', driver: 'libpq' },
      { name: 'state postgres (pg), data postgres', driver: 'pg' },
    ] as const;
    let exits = 0;
    const died: string[] = [];
    const nodes = await Promise.all(
      setups.map(async (setup, i) => {
        const state = setup.driver ? { SVC_STATE_URL: await database(`outage_state_${i}`), SVC_VAULT_KEY: randomBytes(32).toString('base64') } : {};
        const root = makeProject({ data: { provider: 'postgres', url: await database(`outage_data_${i}`) }, ...(setup.driver ? { state: { driver: setup.driver } } : {}) });
        const s = await serve(root, ['--port', '0'], { SERVICE_API_KEY: key, SVC_KEYCHAIN: 'off', ...state });
        children.add(s.child);
        s.child.on('exit', (code, signal) => {
          exits++;
          died.push(`${setup.name} exited (${code ?? signal}): ${s.output().slice(-1500)}`);
        });
        return {
          ...setup,
          child: s.child,
          url: s.url,
          output: s.output,
          tasks: new Map<string, string>(),
          rows: new Map<string, string>(),
          statuses: new Map<number, number>(),
          slowest503: 0,
          wrong: [] as string[],
        };
      }),
    );
    type Node = (typeof nodes)[number];
    const call = (n: Node, method: string, path: string, body?: unknown) =>
      fetch(n.url + path, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    for (const n of nodes) {
      const res = await call(n, 'POST', '/api/v1/data', { name: 'ledger', schema: { tables: { entries: { columns: { note: { type: 'text' } } } } } });
      expect(res.status, await res.clone().text()).toBe(201);
    }

    // Writers: a task, then a row, over and over; a 503 is waited out briefly, as a client would.
    let running = true;
    let seq = 0;
    const write = async (n: Node, kind: 'task' | 'row') => {
      const note = `${kind} ${seq++}`;
      const t0 = Date.now();
      let res: Response;
      try {
        res =
          kind === 'task'
            ? await call(n, 'POST', '/api/v1/tasks', { title: note })
            : await call(n, 'POST', '/api/v1/data/ledger/transactions', { operations: [{ op: 'insert', table: 'entries', values: { note } }] });
      } catch (err) {
        n.wrong.push(`${kind}: no answer (${(err as Error).message})`);
        return;
      }
      n.statuses.set(res.status, (n.statuses.get(res.status) ?? 0) + 1);
      if (res.status === 503) n.slowest503 = Math.max(n.slowest503, Date.now() - t0);
      const body = await res.json().catch(() => null);
      if (res.status === 201 && kind === 'task') n.tasks.set(body.data.id, note);
      else if (res.status === 200 && kind === 'row') n.rows.set(body.data[0].rows[0]._id, note);
      else {
        if (res.status !== 503) n.wrong.push(`${kind}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const writers = nodes.flatMap((n) =>
      (['task', 'row'] as const).map(async (kind) => {
        while (running) await write(n, kind);
      }),
    );
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const serving = async (n: Node) => {
      if (n.child.exitCode !== null || n.child.signalCode !== null) return true; // dead: counted in exits
      try {
        return (
          (await call(n, 'GET', '/api/v1/tasks?limit=1')).status === 200 &&
          (await call(n, 'POST', '/api/v1/data/ledger/transactions', { operations: [{ op: 'list', table: 'entries', limit: 1 }] })).status === 200
        );
      } catch {
        return false;
      }
    };

    const outages: { how: string; unavailable: number[]; recoveryMs: number; lines: number[] }[] = [];
    for (let i = 0; i < OUTAGES; i++) {
      await sleep(UP_MS);
      const how = i % 2 ? 'killed' : 'stopped';
      const mark = nodes.map((n) => ({ out: n.output().length, unavailable: n.statuses.get(503) ?? 0 }));
      if (how === 'killed') server.kill();
      else server.halt();
      await sleep(DOWN_MS);
      server.start();
      const t0 = Date.now();
      await Promise.all(nodes.map((n) => eventually(() => serving(n), 20_000, 50)));
      const recoveryMs = Date.now() - t0;
      // What each daemon logged from the outage's start until it served again, request lines aside.
      await sleep(100);
      const lines = nodes.map((n, k) =>
        n
          .output()
          .slice(mark[k]!.out)
          .split('\n')
          .filter((l) => l && !l.includes('"msg":"request"')),
      );
      outages.push({ how, unavailable: nodes.map((n, k) => (n.statuses.get(503) ?? 0) - mark[k]!.unavailable), recoveryMs, lines });
    }
    running = false;
    await Promise.all(writers);
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    const figures = () =>
      `pg-outage: ${OUTAGES} outages (${outages.map((o) => o.how).join(', ')}), ${exits} exits; ` +
      nodes
        .map(
          (n, k) =>
            `${n.name}: ${n.tasks.size} tasks and ${n.rows.size} rows acknowledged, ${sum(outages.map((o) => o.unavailable[k]!))} answered 503 (the slowest in ${n.slowest503} ms), ${n.wrong.length} otherwise, log lines an outage ${outages.map((o) => o.lines[k]!.length).join('/')}`,
        )
        .join('; ') +
      `; all serving again ${outages.map((o) => o.recoveryMs).join('/')} ms after the server started`;
    console.log(figures());

    expect(died).toEqual([]);
    expect(exits).toBe(0);
    for (const n of nodes) expect(n.wrong.slice(0, 10), n.name).toEqual([]);
    // Requests answered 503 during every outage, on every daemon.
    for (const o of outages) for (const [k, u] of o.unavailable.entries()) expect(u, `${o.how}: ${nodes[k]!.name}`).toBeGreaterThan(0);

    // Nothing acknowledged was lost: every task by its list, every row by its database.
    for (const n of nodes) {
      const seen = new Map<string, string>();
      let cursor = '';
      for (;;) {
        const res = await call(n, 'GET', `/api/v1/tasks?limit=200${cursor ? `&cursor=${cursor}` : ''}`);
        for (const t of (await res.json()).data as { id: string; title: string }[]) seen.set(t.id, t.title);
        cursor = res.headers.get('x-next-cursor') ?? '';
        if (!cursor) break;
      }
      const lostTasks = [...n.tasks].filter(([id, title]) => seen.get(id) !== title);
      const rows = new Map<string, string>();
      for (let offset = 0; ; offset += 200) {
        const res = await call(n, 'POST', '/api/v1/data/ledger/query', { sql: `SELECT _id, note FROM entries ORDER BY _id LIMIT 200 OFFSET ${offset}` });
        const page = (await res.json()).data.rows as { _id: string; note: string }[];
        for (const r of page) rows.set(r._id, r.note);
        if (page.length < 200) break;
      }
      const lostRows = [...n.rows].filter(([id, note]) => rows.get(id) !== note);
      expect({ lostTasks: lostTasks.length, lostRows: lostRows.length }, n.name).toEqual({ lostTasks: 0, lostRows: 0 });
      expect(n.tasks.size, n.name).toBeGreaterThan(OUTAGES * 5);
      expect(n.rows.size, n.name).toBeGreaterThan(OUTAGES * 5);
    }
    // No failure of the daemon's own (an unhandled error, a TypeError) and nothing on stderr (a NOTICE printed by libpq).
    for (const n of nodes)
      expect(
        n
          .output()
          .split('\n')
          .filter((l) => (l && !l.startsWith('{')) || /"level":"error"/.test(l))
          .slice(0, 5),
        n.name,
      ).toEqual([]);
    // One warning when an outage starts, one line when it ends.
    for (const [i, o] of outages.entries()) for (const [k, l] of o.lines.entries()) expect(l.length, `outage ${i} (${o.how}), ${nodes[k]!.name}: ${l.slice(0, 20).join('\n')}`).toBeLessThanOrEqual(2);
    for (const c of children) {
      c.kill('SIGTERM');
      await exited(c);
    }
    children.clear();
  }, 120_000);
});

/**
 * Events written at start-up are delivered. An approval whose timeout passes and a lease that runs
 * out while the daemon is down (SIGKILL, or SIGTERM) are decided by the next start's start-up
 * passes, before it listens; their approval:resolved and task:lease_expired must each reach the
 * webhook. On both state providers, with both signals, in parallel (the lease is 5 s at least).
 */
const STARTUP_ROUNDS = Math.ceil(TRIALS / 3);

describe('approvals and leases that run out while the daemon is down', () => {
  it(
    `${STARTUP_ROUNDS} round(s) on each state provider, after SIGKILL and SIGTERM: every start-up event delivered`,
    async () => {
      const receiver = await startReceiver();
      try {
        const cases = [
          ...(['SIGKILL', 'SIGTERM'] as const).map((signal) => ({ state: 'sqlite', signal })),
          ...(noPg ? [] : (['SIGKILL', 'SIGTERM'] as const).map((signal) => ({ state: 'postgres', signal }))),
        ];
        const results = await Promise.all(
          cases.map(async (c, i) => {
            const key = `startup-${randomBytes(12).toString('hex')}`;
            const env = {
              SERVICE_API_KEY: key,
              SVC_KEYCHAIN: 'off',
              ...(c.state === 'postgres' ? { SVC_STATE_URL: await freshStateDatabase(), SVC_VAULT_KEY: randomBytes(32).toString('base64') } : {}),
            };
            // A short delivery timeout: on a shared state a delivery on the wire when its daemon was killed is
            // sent again once its claim runs out (twice the timeout and a second).
            const root = makeProject({ tasks: { leaseSeconds: 5 }, webhooks: { timeoutMs: 2_000, retryBaseMs: 10 } });
            let s = await serve(root, ['--port', '0'], env);
            children.add(s.child);
            const call = async (method: string, path: string, body?: unknown) => {
              const res = await fetch(s.url + path, {
                method,
                headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
                body: body === undefined ? undefined : JSON.stringify(body),
              });
              return (await res.json()).data;
            };
            await call('POST', '/v1/webhooks', { url: `${receiver.url}/case/${i}`, events: ['approval:resolved', 'task:lease_expired'] });
            await call('POST', '/api/v1/agents', { name: 'ana' });
            const expected: string[] = [];
            for (let round = 0; round < STARTUP_ROUNDS; round++) {
              const task = await call('POST', '/api/v1/tasks', { title: `round ${round}` });
              const lease = await call('POST', `/api/v1/tasks/${task.id}/claim`, { agent: 'ana' });
              const approval = await call('POST', '/api/v1/approvals', { requestedBy: 'ana', title: `round ${round}`, timeoutSeconds: 3 });
              expected.push(`approval:resolved ${approval.id}`, `task:lease_expired ${task.id}`);
              s.child.kill(c.signal);
              await exited(s.child);
              children.delete(s.child);
              // Down until both have run out.
              await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(lease.leaseExpiresAt) - Date.now()) + 300));
              s = await serve(root, ['--port', '0'], env);
              children.add(s.child);
              // Decided by this start's own passes, before it listened.
              const started = s.output();
              expect(started, `${c.state} ${c.signal} round ${round}`).toContain('"msg":"approval timed out"');
              expect(started, `${c.state} ${c.signal} round ${round}`).toContain('"msg":"task lease expired; task back to pending"');
            }
            const missing = () => {
              const mine = receiver.received.filter((r) => r.path === `/case/${i}`).map((r) => JSON.parse(r.body) as { event: string; data: { approvalId?: string; taskId?: string } });
              const got = new Set(mine.map((m) => `${m.event} ${m.data.approvalId ?? m.data.taskId}`));
              return expected.filter((e) => !got.has(e));
            };
            await eventually(() => missing().length === 0, 15_000).catch(() => undefined);
            expect(missing(), `${c.state} after ${c.signal}`).toEqual([]);
            s.child.kill('SIGTERM');
            await exited(s.child);
            children.delete(s.child);
            return `${c.state} after ${c.signal}: ${expected.length} of ${expected.length} delivered`;
          }),
        );
        console.log(`start-up events: ${results.join('; ')}`);
      } finally {
        await receiver.close();
      }
    },
    60_000 + STARTUP_ROUNDS * 10_000,
  );
});
