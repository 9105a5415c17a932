import pg from 'pg';
import { isOutageCode } from './errors.js';
import type { OutageReporter } from './outage.js';

// LISTEN on one channel of a shared PostgreSQL state, on a connection of its own (the bridge's is
// busy with statements). A lost connection is made again after a second; whatever was notified
// meanwhile is not lost, because the caller re-reads from where it was (onNotify runs after each
// reconnect too). A server that is down is the outage log's to report (db/pg/outage.ts), once.

const RETRY_MS = 1_000;

/** The listening connections' application_name: how a daemon finds the others' in pg_stat_activity. */
export const LISTEN_APPLICATION = 'svc events';

/** A statement on the listening connection unanswered this long means the connection is gone (half-open): it is made again. */
export const QUERY_WAIT_MS = 5_000;

export interface Listening {
  /**
   * A statement on the listening connection (its session is the one listening): its rows, or null
   * when there is no connection or it was lost meanwhile (then made again: onLost, onNotify). A
   * statement the server refuses throws.
   */
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
  // pg lets the URL's application_name win over the option, and the daemons find each other by it.
  const named = withoutApplicationName(url);
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
    // A server that stops answering mid-connect must not leave the daemon never listening again.
    const c = new pg.Client({ connectionString: named, application_name: LISTEN_APPLICATION, keepAlive: true, connectionTimeoutMillis: QUERY_WAIT_MS });
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
      let late = false;
      const wait = setTimeout(() => {
        late = true;
        cut(c);
      }, QUERY_WAIT_MS);
      try {
        return (await c.query(text, values)).rows as Record<string, unknown>[];
      } catch (err) {
        // A lost connection (the server stopping ends it first with 57P01) is retried by its own
        // 'error' and 'end' handlers, and reported as an outage: here it is only no answer.
        if (late || listening !== c || isOutageCode((err as { code?: string }).code)) return null;
        throw err;
      } finally {
        clearTimeout(wait);
      }
    },
    async close() {
      closed = true;
      listening = null;
      if (timer) clearTimeout(timer);
      const c = client;
      client = null;
      if (!c) return;
      // A connection gone silent never answers the goodbye: a second at most, then cut.
      const goodbye = setTimeout(() => cut(c), 1_000);
      await c.end().catch(() => undefined);
      clearTimeout(goodbye);
    },
  };
}

/** Ends a connection that will not answer: its 'error' or 'end' follows (and, while listening, a retry). */
function cut(c: pg.Client): void {
  (c as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}

/** `url` without an application_name parameter (an unparseable one as it is: pg will say what is wrong with it). */
function withoutApplicationName(url: string): string {
  try {
    const u = new URL(url);
    if (!u.searchParams.has('application_name')) return url;
    u.searchParams.delete('application_name');
    return u.toString();
  } catch {
    return url;
  }
}
