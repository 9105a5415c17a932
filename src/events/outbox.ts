import { randomUUID } from 'node:crypto';
import { isPostgres, stmt, type DB, type Sql } from '../db/open.js';
import { lastEventId } from '../db/transfer.js';
import type { Clock } from '../lib/clock.js';
import { nowIso } from '../lib/time.js';
import { eventDef, type EventData, type EventName } from './registry.js';

export interface StoredEvent {
  /** The durable sequence number: the SSE id, never reset across restarts. */
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
export type EmitSink = (event: StoredEvent) => void;

export interface EventLogOptions {
  /** Where events take their timestamp from (the daemon's clock seam). */
  clock: Pick<Clock, 'now'>;
  /**
   * The log's sink, for its whole life: every event it ever writes, at start-up (an approval
   * timeout or a lease that ran out while the daemon was down) or later, passes through it. Given
   * when the log opens rather than registered afterwards, so no write can come before it.
   */
  sink?: EmitSink;
}

interface Row {
  id: number;
  name: string;
  data: string;
  created_at: string;
}

const toEvent = (r: Row): StoredEvent => ({ id: r.id, name: r.name as EventName, data: JSON.parse(r.data), timestamp: r.created_at });

/**
 * The event's id on PostgreSQL: a counter row bumped in the writing transaction (under the write
 * lock every daemon takes first), so a rolled-back write leaves no gap, commits come in id order,
 * and the ids never reset, however many daemons write.
 */
const INSERT_EVENT: Sql = {
  sqlite: 'INSERT INTO events (name, data, created_at) VALUES (?, ?, ?)',
  postgres: `WITH n AS (
      INSERT INTO meta (key, value) VALUES ('lastEventId', '1')
      ON CONFLICT (key) DO UPDATE SET value = (CAST(meta.value AS BIGINT) + 1)::text RETURNING CAST(value AS BIGINT) AS id)
    INSERT INTO events (id, name, data, created_at) SELECT id, $1, $2, $3 FROM n RETURNING id`,
};

/** The PostgreSQL channel on which a daemon tells the others it committed events. */
export const EVENTS_CHANNEL = 'svc_events';

/** Events other daemons on a shared PostgreSQL state wrote are read this many at a time. */
const CATCH_UP_BATCH = 1_000;

/**
 * The transactional outbox. A change and the events describing it are written by `write()` in one
 * transaction; listeners (the SSE streams) hear of the events only after that transaction has
 * committed, so nobody is told of a change that was rolled back.
 *
 * On a PostgreSQL state shared by several daemons, listeners hear every daemon's events in id
 * order: this daemon's own right after its commit when nothing precedes them unheard, the rest
 * (and any gap) read from the table by catchUp(), which the daemon calls when PostgreSQL notifies
 * it of a commit elsewhere (and on a timer, should a notification be lost).
 */
export class EventLog {
  private pending: StoredEvent[] | null = null;
  private readonly listeners = new Set<Listener>();
  private readonly sink: EmitSink | undefined;
  private readonly clock: Pick<Clock, 'now'>;
  private readonly shared: boolean;
  /** With a shared state: the newest id the listeners have heard. */
  private heard: number;
  /** Names this log's commits in their notifications, so the daemon does not re-read its own. */
  readonly writer = randomUUID();

  constructor(
    private readonly db: DB,
    opts: EventLogOptions,
  ) {
    this.clock = opts.clock;
    this.sink = opts.sink;
    this.shared = isPostgres(db);
    this.heard = this.shared ? this.lastId() : 0;
  }

  write<T>(fn: () => T): T {
    if (this.pending) {
      // Nested: a savepoint. Events of a rolled-back savepoint must not be published.
      const mark = this.pending.length;
      try {
        return this.db.transaction(fn)();
      } catch (err) {
        this.pending.length = mark;
        throw err;
      }
    }
    this.pending = [];
    let committed: StoredEvent[];
    let result: T;
    try {
      result = this.db.transaction(this.shared ? () => this.notifying(fn) : fn)();
      committed = this.pending;
    } finally {
      this.pending = null;
    }
    if (!this.shared) {
      for (const e of committed) this.publish(e);
    } else if (committed.length) {
      if (committed[0]!.id === this.heard + 1) {
        // heard moves before each publish: a listener that writes sees where the stream is.
        for (const e of committed) {
          this.heard = e.id;
          this.publish(e);
        }
      } else {
        this.catchUp();
      }
    }
    return result;
  }

  /** Runs `fn`; if it emitted, the other daemons on the shared state hear of the commit (only if it commits). */
  private notifying<T>(fn: () => T): T {
    const r = fn();
    if (isPostgres(this.db) && this.pending!.length) this.db.notifyAtCommit(EVENTS_CHANNEL, this.writer);
    return r;
  }

  /** With a shared state: tells the listeners, in id order, of every event committed since the last one they heard. */
  catchUp(): void {
    if (!this.shared || this.pending) return;
    for (;;) {
      const batch = this.since(this.heard, CATCH_UP_BATCH);
      for (const e of batch) {
        this.heard = e.id;
        this.publish(e);
      }
      if (batch.length < CATCH_UP_BATCH) return;
    }
  }

  /** Appends an event inside the current write(); its data is checked against the registry. */
  emit<N extends EventName>(name: N, data: EventData<N>): StoredEvent {
    if (!this.pending) throw new Error(`event ${name} emitted outside a write() transaction`);
    const def = eventDef(name);
    if (!def) throw new Error(`unknown event ${name}`);
    const parsed = def.data.parse(data) as Record<string, unknown>;
    const timestamp = nowIso(this.clock);
    const info = stmt(this.db, INSERT_EVENT).run(name, JSON.stringify(parsed), timestamp);
    const event: StoredEvent = { id: Number(info.lastInsertRowid), name, data: parsed, timestamp };
    // Queued before the sink runs: an event the sink emits in turn (attention:needed after the one
    // it follows) comes after this one, so listeners hear them in id order.
    const mark = this.pending.length;
    this.pending.push(event);
    try {
      this.sink?.(event);
    } catch (err) {
      this.pending.length = mark;
      throw err;
    }
    return event;
  }

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Events after `afterId`, oldest first, for Last-Event-ID replay. */
  since(afterId: number, limit: number): StoredEvent[] {
    return (stmt(this.db, 'SELECT id, name, data, created_at FROM events WHERE id > ? ORDER BY id LIMIT ?').all(afterId, limit) as Row[]).map(toEvent);
  }

  /** The oldest event still kept, or null when the log is empty. */
  oldestId(): number | null {
    const r = stmt(this.db, 'SELECT MIN(id) AS id FROM events').get() as { id: number | null };
    return r.id;
  }

  lastId(): number {
    return lastEventId(this.db);
  }

  /**
   * Drops at most `limit` of the oldest events: those created before `olderThan`, then those
   * beyond the newest `keep`. Ids are never reused (AUTOINCREMENT) and only the oldest events are
   * ever dropped, so the kept ones are a range of ids and "beyond the newest `keep`" is a range
   * too. No delivery needs its event's row: a delivery carries its own body. Returns how many went.
   */
  prune(o: { olderThan: string; keep: number }, limit: number): number {
    let n = stmt(this.db, 'DELETE FROM events WHERE id IN (SELECT id FROM events WHERE created_at < ? ORDER BY created_at LIMIT ?)').run(o.olderThan, limit).changes;
    if (n >= limit) return n;
    const below = this.lastId() - o.keep;
    n += stmt(this.db, 'DELETE FROM events WHERE id IN (SELECT id FROM events WHERE id <= ? ORDER BY id LIMIT ?)').run(below, limit - n).changes;
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
