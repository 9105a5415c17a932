import { stmt, type DB } from '../db/open.js';
import { systemClock, type Clock } from '../lib/clock.js';
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
 * (webhook delivery rows) commits or rolls back with the event, and if it throws the whole write
 * fails. daemon.ts wires it; events/ knows nothing of who listens.
 */
export type EmitSink = (event: StoredEvent) => void;

interface Row {
  id: number;
  name: string;
  data: string;
  created_at: string;
}

const toEvent = (r: Row): StoredEvent => ({ id: r.id, name: r.name as EventName, data: JSON.parse(r.data), timestamp: r.created_at });

/**
 * The transactional outbox. A change and the events describing it are written by `write()` in one
 * SQLite transaction; listeners (the SSE streams) hear of the events only after that transaction
 * has committed, so nobody is told of a change that was rolled back.
 */
export class EventLog {
  private pending: StoredEvent[] | null = null;
  private readonly listeners = new Set<Listener>();
  private readonly sinks = new Set<EmitSink>();

  constructor(
    private readonly db: DB,
    /** Where events take their timestamp from (the daemon's clock seam). */
    private readonly clock: Pick<Clock, 'now'> = systemClock,
  ) {}

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
      result = this.db.transaction(fn)();
      committed = this.pending;
    } finally {
      this.pending = null;
    }
    for (const e of committed) this.publish(e);
    return result;
  }

  /** Appends an event inside the current write(); its data is checked against the registry. */
  emit<N extends EventName>(name: N, data: EventData<N>): void {
    if (!this.pending) throw new Error(`event ${name} emitted outside a write() transaction`);
    const def = eventDef(name);
    if (!def) throw new Error(`unknown event ${name}`);
    const parsed = def.data.parse(data) as Record<string, unknown>;
    const timestamp = nowIso(this.clock);
    const info = stmt(this.db, 'INSERT INTO events (name, data, created_at) VALUES (?, ?, ?)').run(name, JSON.stringify(parsed), timestamp);
    const event: StoredEvent = { id: Number(info.lastInsertRowid), name, data: parsed, timestamp };
    for (const sink of this.sinks) sink(event);
    this.pending.push(event);
  }

  /** Adds a sink that runs in the emitting transaction (see EmitSink); returns its removal. */
  onEmit(sink: EmitSink): () => void {
    this.sinks.add(sink);
    return () => this.sinks.delete(sink);
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
    const r = stmt(this.db, "SELECT seq FROM sqlite_sequence WHERE name = 'events'").get() as { seq: number } | undefined;
    return r?.seq ?? 0;
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
