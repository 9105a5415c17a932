import { randomUUID } from 'node:crypto';
import { isPostgres, stmt, type DB, type Sql } from '../db/open.js';
import { PgStateError } from '../db/pg/errors.js';
import type { FinalStatement } from '../db/pg/state.js';
import { literal } from '../db/pg/translate.js';
import { lastEventId } from '../db/transfer.js';
import type { Clock } from '../lib/clock.js';
import { ScopedStorage } from '../lib/scoped-storage.js';
import { nowIso } from '../lib/time.js';
import { eventDef, type EventData, type EventName } from './registry.js';

export interface StoredEvent {
  /** The durable sequence number: the SSE id, never reset across restarts (0 until the event is written, see EventLog.flush). */
  id: number;
  name: EventName;
  data: Record<string, unknown>;
  timestamp: string;
}

export type Listener = (event: StoredEvent) => void;

/**
 * Called inside the emitting transaction, right after the event row is written: whatever it writes
 * (webhook delivery rows, an attention:needed event) commits or rolls back with the event, and if
 * it throws the whole write fails. It may emit: those events follow this one. the daemon gives it
 * to the log when it opens it; events/ knows nothing of who listens.
 */
export type EmitSink = (event: StoredEvent, ahead?: unknown) => void | Promise<void>;

export interface EventLogOptions {
  /** Where events take their timestamp from (the daemon's clock seam). */
  clock: Pick<Clock, 'now'>;
  /**
   * The log's sink, for its whole life: every event it ever writes, at start-up (an approval
   * timeout or a lease that ran out while the daemon was down) or later, passes through it. Given
   * when the log opens rather than registered afterwards, so no write can come before it.
   */
  sink?: EmitSink;
  /**
   * Runs once per write(), before its first event takes an id; what it answers reaches the sink
   * with that first event (later ones get nothing and read for themselves), and `quiet` with every
   * event kept for the COMMIT. On PostgreSQL the write holds the event-id counter from its first
   * written event to its commit, and every other writer waits for it: what the sink reads here
   * (the webhooks' subscriptions) is read outside that wait.
   */
  readAhead?: () => Promise<unknown>;
  /**
   * Whether the sink would do nothing at all for `event`, given what readAhead answered: no row to
   * write, nothing to emit. On PostgreSQL a write whose events are all such waits to write them
   * until its COMMIT and sends them with it, in one round trip.
   */
  quiet?: (event: StoredEvent, ahead: unknown) => boolean;
  /** The newest event id already written (lastEventId): listeners hear what comes after it. Default 0 (a new state). */
  lastId?: number;
}

/** The events of one write() in progress: emitted and not yet written, then written in order at its end. */
interface Pending {
  events: StoredEvent[];
  /** How many of `events` are written (have their ids). */
  written: number;
  /** Where an event the sink emits goes: right after the one the sink was called for. */
  insertAt: number | null;
  /** Its events are being written (a barrier of its transaction). */
  writing: boolean;
  /** False once the write is over: a callback scheduled inside it and run later is outside it. */
  open: boolean;
  /** What readAhead answered, until the first event is written with it. */
  ahead: { value: unknown } | null;
  /** Its events are written as they come (flush(), a write inside another transaction), never kept for the COMMIT. */
  force: boolean;
  /** How many of `events`, from the first, every sink is known to be quiet for (with `ahead`). */
  checked: number;
  /** The statement that sends the kept events with the COMMIT, once some were kept. */
  final: FinalStatement | null;
}

interface Row {
  id: number;
  name: string;
  data: string;
  created_at: string;
}

const toEvent = (r: Row): StoredEvent => ({ id: r.id, name: r.name as EventName, data: JSON.parse(r.data), timestamp: r.created_at });

/**
 * The event's id on PostgreSQL: a counter row bumped in the writing transaction, so a rolled-back
 * write leaves no gap and the ids never reset, however many daemons write. The row stays locked
 * until the transaction ends: transactions that write events take their ids, and commit, one
 * after another, in id order. Services emit after their changes, so only that tail of a
 * transaction (its events, the sink's rows, the commit) waits on other daemons' writes; everything
 * before it runs side by side (docs/deploy.md, "Events"). When no sink has work for the events,
 * the tail is one statement sent with the COMMIT (insertEventsAtCommit).
 */
const INSERT_EVENT: Sql = {
  sqlite: 'INSERT INTO events (name, data, created_at) VALUES (?, ?, ?)',
  postgres: `WITH n AS (
      INSERT INTO meta (key, value) VALUES ('lastEventId', '1')
      ON CONFLICT (key) DO UPDATE SET value = (CAST(meta.value AS BIGINT) + 1)::text RETURNING CAST(value AS BIGINT) AS id)
    INSERT INTO events (id, name, data, created_at) SELECT id, $1, $2, $3 FROM n RETURNING id`,
};

/**
 * `count` events written with the COMMIT (PostgreSQL): their ids taken from the counter at once,
 * in the order of the VALUES, whose literals follow.
 */
const insertEventsAtCommit = (count: number, values: string): string =>
  `WITH n AS (
      INSERT INTO meta (key, value) VALUES ('lastEventId', '${count}')
      ON CONFLICT (key) DO UPDATE SET value = (CAST(meta.value AS BIGINT) + ${count})::text RETURNING CAST(value AS BIGINT) AS last)
    INSERT INTO events (id, name, data, created_at) SELECT n.last - ${count} + v.ord, v.name, v.data, v.at FROM n, (VALUES ${values}) AS v(ord, name, data, at) RETURNING id`;

/** The PostgreSQL channel on which a daemon tells the others it committed events. */
export const EVENTS_CHANNEL = 'svc_events';

/** A write PostgreSQL ended to break a deadlock is run again, up to this many times in all. */
const WRITE_ATTEMPTS = 3;

/** Events other daemons on a shared PostgreSQL state wrote are read this many at a time. */
const CATCH_UP_BATCH = 1_000;

/**
 * The transactional outbox. A change and the events describing it are written by `write()` in one
 * transaction; listeners (the SSE streams) hear of the events only after that transaction has
 * committed, so nobody is told of a change that was rolled back. emit() writes the event at once,
 * as the service goes on; what the service does next in the transaction waits for that write
 * (a barrier, db/barrier.ts), so it sees the event and what the sink wrote for it. On PostgreSQL,
 * events for which every sink is quiet wait instead and go with the COMMIT, in one round trip.
 * flush() gives them their ids sooner.
 *
 * Listeners hear every event in id order, once: this log's own right after their commit when
 * nothing precedes them unheard, the rest (and any gap: another transaction of this daemon that
 * committed a moment later, or another daemon's on a shared PostgreSQL state) read from the table
 * by catchUp(), which the daemon calls when PostgreSQL notifies it of a commit elsewhere (and on a
 * timer, should a notification be lost).
 */
export class EventLog {
  private readonly als = new ScopedStorage<Pending>();
  private readonly listeners = new Set<Listener>();
  private readonly sink: EmitSink | undefined;
  private readonly readAhead: (() => Promise<unknown>) | undefined;
  /** Set on PostgreSQL only: SQLite has no round trip to save. */
  private readonly quiet: ((event: StoredEvent, ahead: unknown) => boolean) | undefined;
  private readonly clock: Pick<Clock, 'now'>;
  /** The newest id the listeners have heard. */
  private heard: number;
  private catching: Promise<void> | null = null;
  private again = false;
  /** Names this log's commits in their notifications, so the daemon does not re-read its own. */
  readonly writer = randomUUID();
  /**
   * Whether this log's commits notify the other daemons. On from the start, so that nobody is missed
   * before the fan-out knows; it turns it off while no other daemon listens (events/fan-out.ts):
   * each notification would wake the server's session of this daemon's own LISTEN, for nothing.
   */
  private notifying = true;
  /** Commits decided without a notification that have not ended yet, by number (no promise each: they are every write of a daemon alone). */
  private readonly unnotified = new Set<number>();
  private silentCount = 0;
  /** notifyCommits(true) calls waiting for the silent commits numbered up to `upTo` to end. */
  private drains: { upTo: number; done: () => void }[] = [];

  constructor(
    private readonly db: DB,
    opts: EventLogOptions,
  ) {
    this.clock = opts.clock;
    this.sink = opts.sink;
    this.readAhead = opts.readAhead;
    this.quiet = isPostgres(db) && opts.sink && opts.readAhead ? opts.quiet : undefined;
    this.heard = opts.lastId ?? 0;
  }

  /** Opens the log on `db`, its listeners hearing what is written from now on. */
  static async open(db: DB, opts: Omit<EventLogOptions, 'lastId'>): Promise<EventLog> {
    return new EventLog(db, { ...opts, lastId: await lastEventId(db) });
  }

  /**
   * Runs `fn` in a transaction and writes the events it emitted at its end, in the same
   * transaction. Inside another write(), a savepoint whose events go with the outer write (or
   * nowhere, if it rolls back).
   */
  async write<T>(fn: () => Promise<T>): Promise<T> {
    const outer = this.als.getStore();
    if (outer?.open && this.db.inTransaction) {
      const before = outer.events.length;
      // Where its events go: after the event a sink is called for (insertAt), else at the end.
      const at = outer.insertAt ?? before;
      try {
        // A savepoint, over once its events are written: a sink that fails on them fails this
        // write (which the caller may catch), not the outer one. So none waits for the COMMIT.
        return await this.db.transaction(
          this.quiet
            ? async () => {
                const r = await fn();
                await this.writeKept(outer);
                return r;
              }
            : fn,
        );
      } catch (err) {
        // Events of a rolled-back savepoint must not be published (those before it were written
        // before it began: PgState.savepoint), nor what it read ahead be trusted.
        outer.events.splice(at, outer.events.length - before);
        if (outer.insertAt !== null) outer.insertAt = at;
        outer.written = Math.min(outer.written, at);
        outer.checked = Math.min(outer.checked, at);
        outer.ahead = null;
        throw err;
      }
    }
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.writeOnce(fn);
      } catch (err) {
        // Two writers that each wait for a lock the other holds: PostgreSQL ends one of them
        // (a deadlock, 40P01). Nothing of it was kept or heard: it is run again.
        if (attempt >= WRITE_ATTEMPTS || !(err instanceof PgStateError) || err.code !== '40P01') throw err;
      }
    }
  }

  private async writeOnce<T>(fn: () => Promise<T>): Promise<T> {
    // Inside a transaction of the caller's own, this write is a savepoint: nothing of it waits for a COMMIT it does not own.
    const inOwn = this.db.inTransaction;
    const p: Pending = { events: [], written: 0, insertAt: null, open: true, writing: false, ahead: null, force: inOwn, checked: 0, final: null };
    let result: T;
    let silent = null as (() => void) | null;
    try {
      result = await this.db.transaction(async () =>
        this.als.run(p, async () => {
          const r = await fn();
          if (this.quiet && p.written < p.events.length) {
            // The writing under way first (it reads the subscriptions ahead). What is still
            // unwritten then goes with the COMMIT only if every sink is quiet for it; an event
            // emitted as the writing ended, a moment too late for it, is written now.
            await this.db.barrier(async () => undefined);
            while (p.written < p.events.length && !this.keptForCommit(p)) await this.writeKept(p);
            if (p.written < p.events.length) this.keep(p);
          }
          // The other daemons on the shared state hear of the commit (only if it commits).
          if (p.events.length && isPostgres(this.db)) {
            // Inside a transaction of the caller's own, this write ends at a savepoint, before the commit that shows it.
            if (this.notifying || inOwn) this.db.notifyAtCommit(EVENTS_CHANNEL, this.writer);
            else silent = this.silently();
          }
          // Right after the commit, before another can begin on SQLite: listeners hear in commit order.
          this.db.afterCommit(() => {
            p.open = false;
            this.committed(p.events);
          });
          return r;
        }),
      );
    } finally {
      p.open = false;
      silent?.();
    }
    return result;
  }

  /** Counts the current write among the commits without a notification until the returned function is called (when it ends). */
  private silently(): () => void {
    const n = ++this.silentCount;
    this.unnotified.add(n);
    return () => {
      this.unnotified.delete(n);
      if (this.drains.length) this.drained();
    };
  }

  /** Ends the waits whose silent commits have all ended. */
  private drained(): void {
    let oldest = Number.POSITIVE_INFINITY;
    for (const n of this.unnotified) oldest = Math.min(oldest, n);
    const still = this.drains.filter((d) => d.upTo >= oldest);
    for (const d of this.drains) if (d.upTo < oldest) d.done();
    this.drains = still;
  }

  /** Whether this log's commits notify the other daemons now. */
  get notifies(): boolean {
    return this.notifying;
  }

  /**
   * Turns the notifications of this log's commits on (another daemon listens) or off (none does).
   * Turning them on resolves once every commit decided without one has ended: whatever the other
   * daemons read after that sees those commits.
   */
  async notifyCommits(on: boolean): Promise<void> {
    this.notifying = on;
    if (!on || !this.unnotified.size) return;
    // The silent commits decided so far: those decided later (were it turned off again meanwhile) are not waited for.
    await new Promise<void>((done) => {
      this.drains.push({ upTo: this.silentCount, done });
    });
  }

  /**
   * Waits until the events emitted so far in the current write() are written (with the sink's
   * rows), for a service that needs an event's id (a routine hears events from its own creation
   * on); emit() starts the writing but does not wait for it.
   */
  async flush(): Promise<void> {
    const p = this.als.getStore();
    if (!p?.open) throw new Error('flush outside a write() transaction');
    if (this.db.inBarrier) throw new Error("flush from a sink: it would wait for the event log's writing it is part of");
    await this.writeKept(p);
  }

  /** Writes what `p` emitted so far, events kept for the COMMIT included; nothing of it is kept from now on. */
  private async writeKept(p: Pending): Promise<void> {
    p.force = true;
    // From inside the writing itself (a sink's savepoint or nested write): it writes what is queued before it
    // ends, and waiting for it here would wait for ourselves.
    if (this.db.inBarrier) return;
    do {
      // Events kept for the COMMIT by a writing that ended before this call are written now.
      if (!p.writing && p.written < p.events.length) {
        p.writing = true;
        void this.db.barrier(() => this.writePending(p));
      }
      // Queued after the writes under way: over when they are (sinks included).
      await this.db.barrier(async () => undefined);
    } while (p.written < p.events.length);
  }

  /** The unwritten events of `p` may wait for its COMMIT: none written yet, and every sink quiet for each. */
  private keptForCommit(p: Pending): boolean {
    const quiet = this.quiet;
    if (!quiet || p.force || p.written !== 0 || !p.ahead) return false;
    const ahead = p.ahead.value;
    for (; p.checked < p.events.length; p.checked++) if (!quiet(p.events[p.checked]!, ahead)) return false;
    return true;
  }

  /** `p` keeps its unwritten events for the COMMIT: its transaction sends them with it (PostgreSQL only). */
  private keep(p: Pending): void {
    if (p.final || !isPostgres(this.db)) return;
    p.final = this.atCommit(p);
    this.db.beforeCommit(p.final);
  }

  /** The events `p` kept for its COMMIT, as the statement that goes with it; their ids once it committed. */
  private atCommit(p: Pending): FinalStatement {
    let kept: StoredEvent[] = [];
    return {
      // A savepoint must not hold events emitted before it: were it rolled back, they would be gone.
      beforeSavepoint: () => this.writeKept(p),
      text: () => {
        kept = p.events.slice(p.written);
        if (!kept.length) return null;
        const values = kept.map((e, i) => `(${i + 1}, ${literal(e.name)}, ${literal(JSON.stringify(e.data))}, ${literal(e.timestamp)})`).join(', ');
        return insertEventsAtCommit(kept.length, values);
      },
      took: (rows) => {
        const ids = rows.map((r) => Number(r.id)).sort((a, b) => a - b);
        // Committed either way; without their ids the listeners catch up from the table (committed()).
        if (ids.length === kept.length) kept.forEach((e, i) => (e.id = ids[i]!));
        p.written += kept.length;
      },
    };
  }

  /** Writes the queue, in order, until it is empty (what is emitted meanwhile included). */
  private async writePending(p: Pending): Promise<void> {
    try {
      await this.writeQueue(p);
    } finally {
      p.writing = false;
    }
  }

  private async writeQueue(p: Pending): Promise<void> {
    while (p.written < p.events.length) {
      let ahead: unknown;
      if (p.written === 0 && this.sink && this.readAhead) {
        // Before the counter is taken: nothing of this write holds it yet.
        p.ahead ??= { value: await this.readAhead() };
        if (this.keptForCommit(p)) {
          this.keep(p);
          return;
        }
        ahead = p.ahead.value;
        // Read again for a first event that follows one a savepoint rolled back.
        p.ahead = null;
      }
      const e = p.events[p.written]!;
      const info = await stmt(this.db, INSERT_EVENT).run(e.name, JSON.stringify(e.data), e.timestamp);
      e.id = Number(info.lastInsertRowid);
      p.written++;
      if (!this.sink) continue;
      // An event the sink emits in turn (attention:needed after the one it follows) comes right
      // after this one, so listeners hear them in that order.
      p.insertAt = p.written;
      try {
        await this.sink(e, ahead);
      } finally {
        p.insertAt = null;
      }
    }
  }

  /** After a commit: its events to the listeners, in id order. */
  private committed(events: StoredEvent[]): void {
    if (!events.length) return;
    if (events[0]!.id !== this.heard + 1) {
      void this.catchUp();
      return;
    }
    // heard moves before each publish: a listener that writes sees where the stream is.
    for (const e of events) {
      this.heard = e.id;
      this.publish(e);
    }
  }

  /**
   * Tells the listeners, in id order, of every event committed since the last one they heard
   * (other daemons' on a shared state). One read at a time; a call while one runs makes it read again.
   */
  catchUp(): Promise<void> {
    if (this.catching) {
      this.again = true;
      return this.catching;
    }
    this.catching = (async () => {
      try {
        do {
          this.again = false;
          for (;;) {
            const batch = await this.since(this.heard, CATCH_UP_BATCH);
            for (const e of batch) {
              // Published meanwhile by a commit of this log's own.
              if (e.id <= this.heard) continue;
              this.heard = e.id;
              this.publish(e);
            }
            if (batch.length < CATCH_UP_BATCH) break;
          }
        } while (this.again);
      } finally {
        this.catching = null;
      }
    })();
    return this.catching;
  }

  /** Queues an event in the current write(); its data is checked against the registry. */
  emit<N extends EventName>(name: N, data: EventData<N>): StoredEvent {
    const p = this.als.getStore();
    if (!p?.open) throw new Error(`event ${name} emitted outside a write() transaction`);
    const def = eventDef(name);
    if (!def) throw new Error(`unknown event ${name}`);
    const parsed = def.data.parse(data) as Record<string, unknown>;
    const event: StoredEvent = { id: 0, name, data: parsed, timestamp: nowIso(this.clock) };
    if (p.insertAt === null) p.events.push(event);
    else p.events.splice(p.insertAt++, 0, event);
    if (!p.writing) {
      // Written now, as the service goes on; what it reads or writes next in the transaction waits for it.
      p.writing = true;
      void this.db.barrier(() => this.writePending(p));
    }
    return event;
  }

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The newest event id the listeners have heard: a stream opened now starts after it. */
  heardId(): number {
    return this.heard;
  }

  /** Events after `afterId`, oldest first, for Last-Event-ID replay. */
  async since(afterId: number, limit: number): Promise<StoredEvent[]> {
    return ((await stmt(this.db, 'SELECT id, name, data, created_at FROM events WHERE id > ? ORDER BY id LIMIT ?').all(afterId, limit)) as Row[]).map(toEvent);
  }

  /** The oldest event still kept, or null when the log is empty. */
  async oldestId(): Promise<number | null> {
    const r = (await stmt(this.db, 'SELECT MIN(id) AS id FROM events').get()) as { id: number | null };
    return r.id;
  }

  async lastId(): Promise<number> {
    return await lastEventId(this.db);
  }

  /**
   * Drops at most `limit` of the oldest events: those created before `olderThan`, then those
   * beyond the newest `keep`. Ids are never reused (AUTOINCREMENT) and only the oldest events are
   * ever dropped, so the kept ones are a range of ids and "beyond the newest `keep`" is a range
   * too. No delivery needs its event's row: a delivery carries its own body. Returns how many went.
   */
  async prune(o: { olderThan: string; keep: number }, limit: number): Promise<number> {
    let n = (await stmt(this.db, 'DELETE FROM events WHERE id IN (SELECT id FROM events WHERE created_at < ? ORDER BY created_at LIMIT ?)').run(o.olderThan, limit)).changes;
    if (n >= limit) return n;
    const below = (await this.lastId()) - o.keep;
    n += (await stmt(this.db, 'DELETE FROM events WHERE id IN (SELECT id FROM events WHERE id <= ? ORDER BY id LIMIT ?)').run(below, limit - n)).changes;
    return n;
  }

  private publish(e: StoredEvent): void {
    for (const l of this.listeners) {
      try {
        l(e);
      } catch {
        // One broken listener must not stop the others or the writer.
      }
    }
  }
}
