import pg from 'pg';
import type { OutageReporter } from './outage.js';

// Which daemon on a shared PostgreSQL state runs the periodic jobs (lease reaping, approval
// timeouts, routine schedules, retention, the runners' presence sweep): the one holding a
// session advisory lock on a connection of its own. The others try for it every TRY_MS. The lock
// goes with its session: a leader that dies (its process killed, its connection closed) frees it
// at once, and another daemon leads within TRY_MS; a leader whose connection breaks stops leading
// at once, and one whose server stops answering stops within CHECK_TIMEOUT_MS of its next check.
// What must happen once whichever daemon does it (a claim, a delivery, a run) is not the
// leader's: each such write is made safe under concurrency by its own row lock.

/** Held by the leading daemon's session (the state's other advisory locks: 0x73766301..02). */
export const LEADER_LOCK = 0x73766303;
/** A follower tries for the lock, and the leader checks its connection, this often. */
export const TRY_MS = 1_000;
/** A check the server does not answer in this time ends the leadership (and the connection). */
const CHECK_TIMEOUT_MS = 3_000;

export interface Leadership {
  /** Settles once the first try is over (a daemon starting knows whether it leads before it runs its jobs). */
  ready: Promise<void>;
  /** Whether this daemon runs the periodic jobs now. */
  isLeader(): boolean;
  /** Called on each change (true: it leads from now on); returns the unsubscribe. */
  onChange(listener: (leader: boolean) => void): () => void;
  close(): Promise<void>;
}

/** A state no other daemon shares (SQLite): this daemon always leads. */
export const soleLeader = (): Leadership => ({ ready: Promise.resolve(), isLeader: () => true, onChange: () => () => undefined, close: async () => undefined });

export interface LeaderOptions {
  outage?: OutageReporter;
  onError?: (err: unknown) => void;
  /** How often to try (tests shorten it). */
  tryMs?: number;
}

export function electLeader(url: string, opts: LeaderOptions = {}): Leadership {
  const tryMs = opts.tryMs ?? TRY_MS;
  const listeners = new Set<(leader: boolean) => void>();
  let client: pg.Client | null = null;
  let leader = false;
  let closed = false;
  let timer: NodeJS.Timeout | null = null;
  let busy = false;

  const set = (next: boolean) => {
    if (leader === next) return;
    leader = next;
    for (const l of listeners) {
      try {
        l(next);
      } catch (err) {
        opts.onError?.(err);
      }
    }
  };

  const drop = (c: pg.Client | null) => {
    if (client === c) client = null;
    set(false);
    c?.end().catch(() => undefined);
  };

  const connect = async (): Promise<pg.Client> => {
    const c = new pg.Client({ connectionString: url, application_name: 'svc leader', keepAlive: true, connectionTimeoutMillis: CHECK_TIMEOUT_MS });
    // For the client's whole life: a lost connection ends the leadership, never an unhandled 'error'.
    c.on('error', () => drop(c));
    c.on('end', () => drop(c));
    await c.connect();
    client = c;
    return c;
  };

  /** One try (a follower) or check (the leader), bounded by CHECK_TIMEOUT_MS. */
  const step = async () => {
    const startedAt = opts.outage?.now();
    let c = client;
    try {
      c ??= await connect();
      const q = leader ? c.query('SELECT 1') : c.query<{ got: boolean }>(`SELECT pg_try_advisory_lock(${LEADER_LOCK}) AS got`);
      let t: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => (t = setTimeout(() => reject(new Error('the state database did not answer the leader check in time')), CHECK_TIMEOUT_MS)));
      const r = await Promise.race([q, late]).finally(() => clearTimeout(t));
      opts.outage?.succeeded(startedAt);
      if (closed) return;
      if (!leader && (r.rows[0] as { got?: boolean } | undefined)?.got) set(true);
    } catch (err) {
      opts.outage?.failed(err, startedAt);
      // A session that may still hold the lock is ended, so that another daemon can have it.
      const s = c as unknown as { connection?: { stream?: { destroy(): void } } } | null;
      s?.connection?.stream?.destroy();
      drop(c);
    }
  };

  const loop = () => {
    if (closed) return;
    timer = setTimeout(() => {
      timer = null;
      if (busy) return loop();
      busy = true;
      void step().finally(() => {
        busy = false;
        loop();
      });
    }, tryMs);
    timer.unref();
  };

  busy = true;
  const ready = step().finally(() => {
    busy = false;
    loop();
  });

  return {
    ready,
    isLeader: () => leader,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      listeners.clear();
      const c = client;
      client = null;
      leader = false;
      if (!c) return;
      // Ending the session lets the lock go; a connection gone silent is cut after a second.
      const cut = setTimeout(() => (c as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy(), 1_000);
      await c.end().catch(() => undefined);
      clearTimeout(cut);
    },
  };
}
