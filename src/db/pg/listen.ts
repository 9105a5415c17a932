import pg from 'pg';
import type { OutageReporter } from './outage.js';

// LISTEN on one channel of a shared PostgreSQL state, on a connection of its own (the bridge's is
// busy with statements). A lost connection is made again after a second; whatever was notified
// meanwhile is not lost, because the caller re-reads from where it was (onNotify runs after each
// reconnect too). A server that is down is the outage log's to report (db/pg/outage.ts), once.

const RETRY_MS = 1_000;

/** The listening connections' application_name: how a daemon finds the others' in pg_stat_activity. */
export const LISTEN_APPLICATION = 'svc events';

export interface Listening {
  /** A statement on the listening connection (its session is the one listening); null while there is none. */
  query(text: string, values?: unknown[]): Promise<Record<string, unknown>[] | null>;
  close(): Promise<void>;
}

export interface ListenOptions {
  /** Told when the connection cannot be made or is lost, and when LISTEN holds again. */
  outage?: OutageReporter;
  /** The server's notices on this connection (logged at debug). */
  onNotice?: (message: string) => void;
  /** Told when the connection is lost or cannot be made (then onNotify once LISTEN holds again). */
  onLost?: () => void;
}

export function listen(url: string, channel: string, onNotify: (payload?: string) => void, opts: ListenOptions = {}): Listening {
  let client: pg.Client | null = null;
  /** `client` once LISTEN holds on it. */
  let listening: pg.Client | null = null;
  let timer: NodeJS.Timeout | null = null;
  let closed = false;

  const retry = (err: Error, startedAt?: number) => {
    if (closed || timer) return;
    opts.outage?.failed(err, startedAt);
    const c = client;
    client = null;
    listening = null;
    opts.onLost?.();
    c?.end().catch(() => undefined);
    timer = setTimeout(() => {
      timer = null;
      void connect();
    }, RETRY_MS);
    timer.unref();
  };

  async function connect(): Promise<void> {
    const startedAt = opts.outage?.now();
    const c = new pg.Client({ connectionString: url, application_name: LISTEN_APPLICATION, keepAlive: true });
    client = c;
    // For the client's whole life: a connection lost between notifications is an outage, never an
    // unhandled 'error'. A client already given up on (its end comes late) retries nothing.
    const lost = (err: Error) => client === c && retry(err);
    c.on('error', lost);
    c.on('end', () => lost(new Error('the connection ended')));
    c.on('notification', (n) => onNotify(n.payload));
    c.on('notice', (n) => opts.onNotice?.(n.message ?? String(n)));
    try {
      await c.connect();
      await c.query(`LISTEN ${channel}`);
      if (closed) await c.end();
      else {
        listening = c;
        opts.outage?.succeeded(startedAt);
        onNotify();
      }
    } catch (err) {
      retry(err as Error, startedAt);
    }
  }

  void connect();
  return {
    async query(text, values) {
      const c = listening;
      if (!c) return null;
      // A lost connection is retried by its own 'error' and 'end' handlers; here it is only no answer.
      return await c.query(text, values).then(
        (r) => r.rows as Record<string, unknown>[],
        () => null,
      );
    },
    async close() {
      closed = true;
      listening = null;
      if (timer) clearTimeout(timer);
      const c = client;
      client = null;
      if (!c) return;
      // A connection gone silent never answers the goodbye: a second at most, then cut.
      const cut = setTimeout(() => (c as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy(), 1_000);
      await c.end().catch(() => undefined);
      clearTimeout(cut);
    },
  };
}
