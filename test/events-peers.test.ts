import pg from 'pg';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { openPostgresState } from '../src/db/open.js';
import { listen } from '../src/db/pg/listen.js';
import type { PgState } from '../src/db/pg/state.js';
import { startFanOut } from '../src/events/fan-out.js';
import { EVENTS_CHANNEL, EventLog, type StoredEvent } from '../src/events/outbox.js';
import { createLogger } from '../src/kernel/log.js';
import { systemClock } from '../src/lib/clock.js';
import { STATE_MIGRATIONS } from '../src/state-schema.js';
import { until } from './harness.js';
import { freshStateDatabase } from './state-pg.js';

// Daemons on one PostgreSQL state notify their commits only while another daemon listens
// (src/events/fan-out.ts): a daemon alone would have the server wake its own listening session at
// every commit for nothing. Each "daemon" here is what the fan-out works with: a state, an event
// log and the fan-out itself, the backup poll off, so a notification is the only way an event
// crosses. A client of the test's own listens on the channel too (not as 'svc events', so no daemon
// counts it) and sees what is notified; a notification of its own, once heard, tells that whatever
// was notified before it has arrived (the server delivers them to a session in commit order, its
// channels together).

const noPg = inject('pgUrl') === '';
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

interface Daemon {
  db: PgState;
  log: EventLog;
  /** Looks in pg_stat_activity that were answered. */
  looks(): number;
  heard: StoredEvent[];
  errors: string[];
  close(): Promise<void>;
  write(name: string): Promise<void>;
}

/**
 * A daemon looking for others every `peersCheckMs` (and once as it starts listening): a long one
 * leaves a hello as the only thing that turns its notifications on. A write held on the counter by
 * the test waits under the statement timeout: 30 s, far above what a loaded machine takes.
 */
async function daemon(url: string, peersCheckMs = 100): Promise<Daemon> {
  const db = await openPostgresState({ url, statementTimeoutMs: 30_000 }, STATE_MIGRATIONS);
  const log = await EventLog.open(db, { clock: systemClock });
  const heard: StoredEvent[] = [];
  log.subscribe((e) => heard.push(e));
  const errors: string[] = [];
  const fanOut = startFanOut({ url, events: log, log: createLogger((l) => errors.push(l), 'error'), pollMs: 0, peersCheckMs });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await fanOut.close();
    await db.close();
  };
  cleanup.push(close);
  return { db, log, heard, errors, close, looks: fanOut.looks, write: (name) => log.write(async () => void log.emit('team:created', { name })) };
}

const MARKS = 'events_peers_test_marks';

/** The test's own listener: every payload on the channel, in order. */
async function watch(url: string) {
  const c = new pg.Client({ connectionString: url, application_name: 'events-peers test' });
  await c.connect();
  cleanup.push(() => c.end());
  const payloads: string[] = [];
  c.on('notification', (n) => payloads.push(n.payload ?? ''));
  await c.query(`LISTEN ${EVENTS_CHANNEL}`);
  // Its marks go on a channel of their own, which no daemon hears (it would take one for a commit and read the log).
  await c.query(`LISTEN ${MARKS}`);
  let n = 0;
  return {
    payloads,
    client: c,
    /** What was notified up to now (the server delivers in commit order: all of it is in once the mark is). */
    async upToNow(): Promise<string[]> {
      const mark = `mark:${++n}`;
      await c.query('SELECT pg_notify($1, $2)', [MARKS, mark]);
      await until(`the test's mark ${mark}`, async () => payloads.includes(mark));
      return payloads.slice(0, payloads.indexOf(mark));
    },
  };
}

const names = (d: Daemon) => d.heard.map((e) => (e.data as { name: string }).name);

/**
 * A alone and not notifying, writing "held" while the test holds the event counter: the write has
 * decided not to notify and waits on the counter until `release()`.
 */
async function heldSilentWrite(url: string, a: Daemon, w: Awaited<ReturnType<typeof watch>>) {
  await a.write('first'); // the counter row exists
  await until('A to find itself alone', async () => !a.log.notifies);
  const holder = new pg.Client(url);
  await holder.connect();
  cleanup.push(() => holder.end());
  await holder.query('BEGIN');
  await holder.query("SELECT value FROM meta WHERE key = 'lastEventId' FOR UPDATE");
  const writing = a.write('held');
  await until("A's write to wait on the counter", async () => {
    const r = await w.client.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'svc state' AND wait_event_type = 'Lock'");
    return r.rows[0].n > 0;
  });
  return { writing, release: async () => void (await holder.query('COMMIT')) };
}

describe.skipIf(noPg)("the listening connection's statements", () => {
  it('one whose connection the server ends meanwhile (as it does when stopping) answers null, not an error: the outage is reported once, elsewhere', async () => {
    const url = await freshStateDatabase();
    const admin = new pg.Client(url);
    await admin.connect();
    cleanup.push(() => admin.end());
    const lost: string[] = [];
    const feed = listen(url, EVENTS_CHANNEL, () => undefined, { onLost: () => lost.push('lost') });
    cleanup.push(() => feed.close());
    await until('the connection to listen', async () => (await feed.query('SELECT 1 AS one')) !== null);
    const sleeping = feed.query('SELECT pg_sleep(30)');
    await until('the statement to run', async () => {
      const r = await admin.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query = 'SELECT pg_sleep(30)' AND state = 'active'");
      return r.rows[0].n === 1;
    });
    await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'svc events'");
    expect(await sleeping).toBeNull();
    await until('the loss to be told', async () => lost.length > 0);
    expect(lost).toEqual(['lost']);
    // A statement the server refuses is an error, said as one.
    await until('the connection to listen again', async () => (await feed.query('SELECT 1 AS one')) !== null);
    await expect(feed.query('SELECT * FROM no_such_table')).rejects.toThrow(/no_such_table/);
  });
});

describe.skipIf(noPg)('which commits notify the other daemons', () => {
  it('a daemon alone stops notifying once it has looked for others: its commits wake no session, its own listeners still hear them', async () => {
    const url = await freshStateDatabase();
    const w = await watch(url);
    const a = await daemon(url);
    // On from the start: nobody is missed before the daemon knows.
    expect(a.log.notifies).toBe(true);
    await until('A to find itself alone', async () => !a.log.notifies);
    await a.write('alone');
    expect(names(a)).toEqual(['alone']);
    const seen = await w.upToNow();
    expect(seen).toContain(`hello:${a.log.writer}`);
    expect(seen).not.toContain(a.log.writer);
    expect(a.errors).toEqual([]);
  });

  it("a newcomer's hello turns the notifications back on: the newcomer hears each commit from then on", async () => {
    const url = await freshStateDatabase();
    const w = await watch(url);
    // A looks only as it starts: its next look would find B too.
    const a = await daemon(url, 600_000);
    await until('A to find itself alone', async () => !a.log.notifies);
    const b = await daemon(url);
    await until("A to hear B's hello", async () => a.log.notifies);
    await a.write('after hello');
    await until('B to hear the write', async () => names(b).includes('after hello'));
    // B found A when it looked, so B's commits notify too, and A hears them.
    await until('B to look', async () => b.looks() > 0);
    expect(b.log.notifies).toBe(true);
    await b.write('from b');
    await until('A to hear B', async () => names(a).includes('from b'));
    expect((await w.upToNow()).filter((p) => p === a.log.writer || p === b.log.writer)).toEqual([a.log.writer, b.log.writer]);
    expect([...a.errors, ...b.errors]).toEqual([]);
  });

  it("a commit that did not notify and is still under way when a hello comes is read by the newcomer once it ends: the 'here' waits for it", async () => {
    const url = await freshStateDatabase();
    const w = await watch(url);
    const a = await daemon(url, 600_000);
    const { release, writing } = await heldSilentWrite(url, a, w);
    const b = await daemon(url);
    await until("A to hear B's hello", async () => a.log.notifies);
    // A answers only once the write that did not notify has ended.
    const before = await w.upToNow();
    expect(before).toContain(`hello:${b.log.writer}`);
    expect(before).not.toContain(`here:${a.log.writer}`);
    expect(names(b)).toEqual([]);
    await release();
    await writing;
    // Nothing notifies that commit, and B's poll is off: only the 'here' that follows it makes B read it.
    await until('B to hear the held write', async () => names(b).includes('held'));
    const after = (await w.upToNow()).slice(before.length + 1);
    expect(after).toEqual([`here:${a.log.writer}`]);
    expect(names(b)).toEqual(['held']);
  });

  it('the one left turns its notifications off at its next look once the other has gone', async () => {
    const url = await freshStateDatabase();
    const a = await daemon(url);
    await until('A to find itself alone', async () => !a.log.notifies);
    const b = await daemon(url);
    await until("A to hear B's hello", async () => a.log.notifies);
    await b.close();
    await until('A to find itself alone again', async () => !a.log.notifies);
  });

  it("a hello makes those who hear it read the log: the newcomer's commits that did not notify are found", async () => {
    const url = await freshStateDatabase();
    const b = await daemon(url);
    const w = await watch(url);
    // A writer that does not notify (as a daemon whose connection came back, before its hello).
    const db = await openPostgresState({ url, statementTimeoutMs: 30_000 }, STATE_MIGRATIONS);
    cleanup.push(() => db.close());
    const silent = await EventLog.open(db, { clock: systemClock });
    await silent.notifyCommits(false);
    await silent.write(async () => void silent.emit('team:created', { name: 'unnotified' }));
    expect(await w.upToNow()).not.toContain(silent.writer);
    expect(names(b)).toEqual([]);
    await w.client.query('SELECT pg_notify($1, $2)', [EVENTS_CHANNEL, `hello:${silent.writer}`]);
    await until('B to read the log', async () => names(b).includes('unnotified'));
  });

  it("a closing daemon says 'here', so the others read what it wrote without notifying", async () => {
    const url = await freshStateDatabase();
    const w = await watch(url);
    const a = await daemon(url);
    await until('A to find itself alone', async () => !a.log.notifies);
    await a.close();
    expect(await w.upToNow()).toContain(`here:${a.log.writer}`);
  });

  it('a daemon that does not notify still looks, and finds a daemon that says no hello (an older version)', async () => {
    const url = await freshStateDatabase();
    const w = await watch(url);
    const a = await daemon(url);
    await until('A to find itself alone', async () => !a.log.notifies);
    const old = new pg.Client({ connectionString: url, application_name: 'svc events' });
    await old.connect();
    cleanup.push(() => old.end());
    await old.query(`LISTEN ${EVENTS_CHANNEL}`);
    await until('A to find the older daemon', async () => a.log.notifies);
    // And tells it to read what it wrote without notifying.
    await until("A's 'here'", async () => (await w.upToNow()).includes(`here:${a.log.writer}`));
  });

  it("a write inside a transaction of the caller's own notifies even when alone: its end is a savepoint, before the commit", async () => {
    const url = await freshStateDatabase();
    const w = await watch(url);
    const a = await daemon(url);
    await until('A to find itself alone', async () => !a.log.notifies);
    await a.db.transaction(async () => {
      await a.write('inside');
      await a.db.prepare('SELECT 1 AS one').get();
    });
    expect(await w.upToNow()).toContain(a.log.writer);
  });

  it('an application_name in the state URL does not hide a daemon from the others', async () => {
    const url = new URL(await freshStateDatabase());
    url.searchParams.set('application_name', 'mine');
    const w = await watch(url.toString());
    const a = await daemon(url.toString());
    await until('A to listen', async () => (await w.upToNow()).includes(`hello:${a.log.writer}`));
    const r = await w.client.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'svc events'");
    expect(r.rows[0].n).toBe(1);
  });

  it('a daemon whose listening connection comes back says hello only once its commits that did not notify have ended', async () => {
    const url = await freshStateDatabase();
    const w = await watch(url);
    const a = await daemon(url);
    const { release, writing } = await heldSilentWrite(url, a, w);
    const gone = (await w.client.query("SELECT pg_terminate_backend(pid), pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'svc events'")).rows[0].pid;
    await until('A to listen again', async () => {
      const r = await w.client.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'svc events' AND state = 'idle' AND pid <> $1", [gone]);
      return r.rows[0].n > 0;
    });
    // Listening again, but its hello waits for the held write: a reader told now would not find it.
    // (Without that wait the hello follows the LISTEN within milliseconds; this gives it 300.)
    await new Promise((r) => setTimeout(r, 300));
    const hellos = async () => (await w.upToNow()).filter((p) => p === `hello:${a.log.writer}`).length;
    expect(await hellos()).toBe(1);
    await release();
    await writing;
    await until('the second hello', async () => (await hellos()) === 2);
  });

  it('a daemon whose listening connection is lost notifies until it listens and looks again', async () => {
    const url = await freshStateDatabase();
    const w = await watch(url);
    const a = await daemon(url);
    await until('A to find itself alone', async () => !a.log.notifies);
    await w.client.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'svc events'");
    await until('A to notify while it cannot look', async () => a.log.notifies);
    // Its connection is made again after a second; it says hello again and looks.
    await until('A to listen again', async () => (await w.upToNow()).filter((p) => p === `hello:${a.log.writer}`).length === 2);
    await until('A to find itself alone again', async () => !a.log.notifies);
  });
});
