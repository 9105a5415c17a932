import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ProjectConfigSchema } from '../src/config/schema.js';
import { checkState } from '../src/resources/system/doctor-state.js';
import { latestSchemaVersion } from '../src/state-schema.js';
import { openEntry } from '../src/resources/vault/service.js';
import { FakeClock } from './fake-clock.js';
import { startTestDaemon, type TestDaemon } from './harness.js';
import { collect } from './sse-collector.js';
import { freshStateDatabase } from './state-pg.js';

// Three daemons on one PostgreSQL state act as one service: what one writes the others read at
// once, every stream carries every daemon's events in one order, claims are atomic across them,
// and the timers (lease expiry, approval timeouts) act once, not once per daemon.

const noPg = inject('pgUrl') === '';
if (noPg) console.warn(`state-shared: skipped, ${inject('pgSkip')}`);

describe.skipIf(noPg)('three daemons, one PostgreSQL state', () => {
  // One fake clock for the three: a lease or a timeout runs out for all of them at the same moment.
  const clock = new FakeClock(Date.parse('2032-01-02T03:04:05.000Z'));
  const key = randomBytes(32).toString('base64');
  let url: string;
  let ds: TestDaemon[] = [];
  const [A, B, C] = [0, 1, 2];

  // The newest event each daemon has published to its listeners (its reaper, its timers, its
  // streams), and the waits for it to reach an id.
  const heardUpTo = [0, 0, 0];
  let looks: (() => void)[] = [];

  beforeAll(async () => {
    url = await freshStateDatabase();
    const env = { SVC_STATE_URL: url, SVC_VAULT_KEY: key };
    // Started one after the other on purpose: the second and third find the schema made.
    for (let i = 0; i < 3; i++) ds.push(await startTestDaemon({ env, clock, config: { tasks: { leaseSeconds: 30 } } }));
    ds.forEach((d, i) =>
      d.daemon.app.events.subscribe((e) => {
        heardUpTo[i] = e.id;
        for (const look of looks) look();
      }),
    );
    for (const name of ['ana', 'bob']) expect((await ds[A]!.api('POST', '/api/v1/agents', { body: { name } })).status).toBe(201);
  });

  /**
   * Resolves once every daemon has heard every event written so far: each has then run its own
   * listeners for them (registered at its start, before this file's), so its reaper and its
   * approval timer are armed for what they carried. Within 5 s (a notification, or the 1 s poll).
   */
  const everyoneHeard = async (): Promise<void> => {
    const last = await ds[A]!.daemon.app.events.lastId();
    return new Promise((resolve, reject) => {
      const look = () => {
        if (heardUpTo.some((id) => id < last)) return;
        looks = looks.filter((l) => l !== look);
        clearTimeout(bound);
        resolve();
      };
      const bound = setTimeout(() => {
        looks = looks.filter((l) => l !== look);
        reject(new Error(`not every daemon heard event ${last} within 5 s: ${heardUpTo.join(', ')}`));
      }, 5_000);
      looks.push(look);
      look();
    });
  };
  /** The events written since `mark` named `name` about `key: value`, from the shared table. */
  const written = async (mark: number, name: string, key: string, value: string) => (await ds[A]!.daemon.app.events.since(mark, 10_000)).filter((e) => e.name === name && e.data[key] === value);
  afterAll(async () => {
    await Promise.all(ds.map((d) => d.close()));
    ds = [];
  });

  const post = async (d: TestDaemon, path: string, body: unknown) => {
    const r = await d.api('POST', path, { body });
    expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
    return r.body.data;
  };

  it('a change made through any daemon is read back through every other at once', async () => {
    const t = await post(ds[B]!, '/api/v1/tasks', { title: 'made on B', assignTo: 'ana' });
    for (const d of ds) expect((await d.api('GET', `/api/v1/tasks/${t.id}`)).body.data).toMatchObject({ title: 'made on B', assignTo: 'ana' });
    await ds[C]!.api('PATCH', `/api/v1/tasks/${t.id}`, { body: { title: 'renamed on C' } });
    expect((await ds[A]!.api('GET', `/api/v1/tasks/${t.id}`)).body.data.title).toBe('renamed on C');
    expect((await ds[B]!.api('GET', '/api/v1/agents/bob')).status).toBe(200);
  });

  it("every daemon's stream carries every daemon's events in one order, and replay works against any daemon", async () => {
    // A stream starts after what its daemon has heard: the streams start together once every daemon
    // has heard the events before them (a daemon whose own commit followed one it had not heard yet
    // hears both a moment after its answer; CI once opened its stream in between).
    await everyoneHeard();
    const streams = await Promise.all(ds.map((d) => collect(d.url, { key: d.key, filter: 'task:created' })));
    try {
      const made = await Promise.all(Array.from({ length: 30 }, (_, i) => post(ds[i % 3]!, '/api/v1/tasks', { title: `t${i}` })));
      const ids = new Set(made.map((t: { id: string }) => t.id));
      for (const s of streams) await s.until((c) => c.messages.filter((m) => ids.has(JSON.parse(m.data).taskId)).length === 30, 5_000);
      const seqs = streams.map((s) => s.messages.map((m) => Number(m.id)));
      // The same events, in the same order, on all three streams; ids only ever grow.
      expect(seqs[1]).toEqual(seqs[0]);
      expect(seqs[2]).toEqual(seqs[0]);
      for (let i = 1; i < seqs[0]!.length; i++) expect(seqs[0]![i]).toBeGreaterThan(seqs[0]![i - 1]!);
      // A client reconnecting to another daemon with Last-Event-ID gets exactly what followed.
      const mid = seqs[0]![10]!;
      const replay = await collect(ds[C]!.url, { key: ds[C]!.key, filter: 'task:created', lastEventId: mid });
      try {
        await replay.until((c) => c.messages.length >= seqs[0]!.length - 11, 5_000);
        expect(replay.messages.map((m) => Number(m.id)).slice(0, seqs[0]!.length - 11)).toEqual(seqs[0]!.slice(11));
      } finally {
        replay.close();
      }
    } finally {
      for (const s of streams) s.close();
    }
  });

  it('event ids have no gaps across daemons: every id between the first and the last is on every stream', async () => {
    const streams = await Promise.all(ds.map((d) => collect(d.url, { key: d.key })));
    try {
      const made = await Promise.all(Array.from({ length: 12 }, (_, i) => post(ds[i % 3]!, '/api/v1/tasks', { title: `g${i}` })));
      const last = made.at(-1)!.id as string;
      for (const s of streams) await s.until((c) => c.messages.some((m) => m.event === 'task:created' && JSON.parse(m.data).taskId === last), 5_000);
      for (const s of streams) {
        const seq = s.messages.filter((m) => m.id).map((m) => Number(m.id));
        expect(seq).toEqual(Array.from({ length: seq.length }, (_, i) => seq[0]! + i));
      }
    } finally {
      for (const s of streams) s.close();
    }
  });

  it('two agents claiming one task through two daemons: exactly one wins, every time', async () => {
    for (let round = 0; round < 10; round++) {
      const t = await post(ds[A]!, '/api/v1/tasks', { title: `race ${round}` });
      const [x, y] = await Promise.all([ds[A]!.api('POST', `/api/v1/tasks/${t.id}/claim`, { body: { agent: 'ana' } }), ds[B]!.api('POST', `/api/v1/tasks/${t.id}/claim`, { body: { agent: 'bob' } })]);
      expect([x.status, y.status].sort()).toEqual([200, 409]);
      const winner = x.status === 200 ? 'ana' : 'bob';
      expect((await ds[C]!.api('GET', `/api/v1/tasks/${t.id}`)).body.data).toMatchObject({ status: 'in_progress', assignTo: winner });
    }
  });

  it('a lease runs out once, not once per daemon', async () => {
    const t = await post(ds[C]!, '/api/v1/tasks', { title: 'abandoned' });
    await post(ds[C]!, `/api/v1/tasks/${t.id}/claim`, { agent: 'ana' });
    const sse = await collect(ds[A]!.url, { key: ds[A]!.key, filter: 'task:lease_expired' });
    try {
      // Every daemon has heard of the claim (their reapers are armed) before the clock moves.
      await everyoneHeard();
      const mark = await ds[A]!.daemon.app.events.lastId();
      // Each daemon's reaper runs inside the advance (its timer is on this clock): whatever any of
      // them wrote is in the table when it returns.
      await clock.pass(31_000);
      expect(await written(mark, 'task:lease_expired', 'taskId', t.id)).toHaveLength(1);
      await sse.until((c) => c.messages.length >= 1, 5_000);
      expect(sse.messages.filter((m) => JSON.parse(m.data).taskId === t.id)).toHaveLength(1);
      expect((await ds[B]!.api('GET', `/api/v1/tasks/${t.id}`)).body.data.status).toBe('pending');
    } finally {
      sse.close();
    }
  });

  it('an approval timeout is decided once, not once per daemon', async () => {
    const t = await post(ds[A]!, '/api/v1/tasks', { title: 'gated' });
    const a = await post(ds[B]!, '/api/v1/approvals', { taskId: t.id, requestedBy: 'ana', title: 'ok?', timeoutSeconds: 60 });
    const sse = await collect(ds[C]!.url, { key: ds[C]!.key, filter: 'approval:resolved' });
    try {
      // Every daemon has heard of the request (a notification or the 1 s poll) and armed its timer.
      await everyoneHeard();
      const mark = await ds[A]!.daemon.app.events.lastId();
      // Each daemon's timer fires inside the advance: what any of them decided is in the table then.
      await clock.pass(61_000);
      expect(await written(mark, 'approval:resolved', 'approvalId', a.id)).toHaveLength(1);
      await sse.until((c) => c.messages.some((m) => JSON.parse(m.data).approvalId === a.id), 5_000);
      expect(sse.messages.filter((m) => JSON.parse(m.data).approvalId === a.id)).toHaveLength(1);
      expect((await ds[A]!.api('GET', `/api/v1/approvals/${a.id}`)).body.data).toMatchObject({ status: 'rejected', timedOut: true });
    } finally {
      sse.close();
    }
  });

  it('a call for a person (attention:needed) is written once, by the daemon that made the change, and every stream carries it', async () => {
    const streams = await Promise.all(ds.map((d) => collect(d.url, { key: d.key, filter: 'attention:,approval:requested' })));
    try {
      const mark = await ds[A]!.daemon.app.events.lastId();
      const a = await post(ds[B]!, '/api/v1/approvals', { requestedBy: 'ana', title: 'who tells me?' });
      const mine = (s: (typeof streams)[number]) => s.messages.filter((m) => JSON.parse(m.data).approvalId === a.id);
      for (const s of streams) await s.until(() => mine(s).length >= 2, 5_000);
      // Every daemon has heard the request and run its listeners: one that raised its own call for
      // a person would have written it by then.
      await everyoneHeard();
      expect(await written(mark, 'attention:needed', 'approvalId', a.id)).toHaveLength(1);
      for (const s of streams) {
        expect(mine(s).map((m) => m.event)).toEqual(['approval:requested', 'attention:needed']);
        expect(Number(mine(s)[1]!.id)).toBe(Number(mine(s)[0]!.id) + 1);
      }
    } finally {
      for (const s of streams) s.close();
    }
  });

  it('the vault is one: an entry sealed through one daemon opens through another', async () => {
    expect((await ds[A]!.api('POST', '/api/v1/vault/entries', { body: { agent: 'ana', service: 'gh', type: 'api_key', credentials: { token: 's3cret-token' } } })).status).toBeLessThan(300);
    expect(await openEntry(ds[C]!.daemon.app, 'ana', 'gh')).toEqual({ token: 's3cret-token' });
  });

  it('rotating the vault key from one daemon is refused: the others would go on sealing with the old one', async () => {
    const r = await ds[B]!.api('POST', '/api/v1/vault/rotate-key', { body: {} });
    expect(r.status).toBe(409);
    expect(r.body.error).toMatch(/shared by several daemons/);
    expect(await openEntry(ds[A]!.daemon.app, 'ana', 'gh')).toEqual({ token: 's3cret-token' });
  });

  it('a daemon with another vault key refuses to start rather than seal what the others cannot open', async () => {
    const other = randomBytes(32).toString('base64');
    const err = await startTestDaemon({ env: { SVC_STATE_URL: url, SVC_VAULT_KEY: other } }).then(
      (d) => (void d.close(), null),
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/is not the one the other daemons on this state use/);
    expect(err?.message).not.toContain(other);
  });

  it('svc doctor sees the daemons on the state and warns when their API keys differ from its project', async () => {
    const env = { SVC_STATE_URL: url, SVC_VAULT_KEY: key };
    const same = await checkState(ds[A]!.root, ProjectConfigSchema.parse({ name: 'x' }), env, { knownVersion: latestSchemaVersion() });
    expect(same.find((r) => r.check === 'api keys')).toMatchObject({ status: 'ok', detail: expect.stringMatching(/the 3 daemons on this state accept the same keys/) });
    expect(same.find((r) => r.check === 'vault key')?.status).toBe('ok');
    const other = await checkState(ds[A]!.root, ProjectConfigSchema.parse({ name: 'x', apiKeys: ['another-key-0123456789'] }), env, { knownVersion: latestSchemaVersion() });
    expect(other.find((r) => r.check === 'api keys')).toMatchObject({ status: 'warn', detail: expect.stringMatching(/3 of the 3 daemons/) });
    const wrongKey = await checkState(ds[A]!.root, ProjectConfigSchema.parse({ name: 'x' }), { ...env, SVC_VAULT_KEY: randomBytes(32).toString('base64') }, { knownVersion: latestSchemaVersion() });
    expect(wrongKey.find((r) => r.check === 'vault key')?.status).toBe('fail');
  });

  it('a daemon refuses a state whose schema is newer than it knows', async () => {
    const db = ds[A]!.daemon.app.db;
    await db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'from a newer svc', '2032-01-01T00:00:00.000Z')").run();
    try {
      const err = await startTestDaemon({ env: { SVC_STATE_URL: url, SVC_VAULT_KEY: key } }).then(
        (d) => (void d.close(), null),
        (e: Error) => e,
      );
      expect(err?.message).toMatch(/schema version 999, which this svc does not know; upgrade svc/);
    } finally {
      await db.prepare('DELETE FROM schema_migrations WHERE version = 999').run();
    }
  });

  it('a daemon with no shared vault key refuses to start and says what to set', async () => {
    const err = await startTestDaemon({ env: { SVC_STATE_URL: url, SVC_VAULT_KEY: '' } }).then(
      (d) => (void d.close(), null),
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/set SVC_VAULT_KEY .* or name a key file in state.vaultKeyFile/);
  });
});
