import pg from 'pg';

// LISTEN on one channel of a shared PostgreSQL state, on a connection of its own (the bridge's is
// busy with statements). A lost connection is made again after a second; whatever was notified
// meanwhile is not lost, because the caller re-reads from where it was (onNotify runs after each
// reconnect too).

const RETRY_MS = 1_000;

export interface Listening {
  close(): Promise<void>;
}

export function listen(url: string, channel: string, onNotify: (payload?: string) => void, onLost: (err: Error) => void): Listening {
  let client: pg.Client | null = null;
  let timer: NodeJS.Timeout | null = null;
  let closed = false;

  const retry = (err: Error) => {
    if (closed || timer) return;
    onLost(err);
    const c = client;
    client = null;
    c?.end().catch(() => undefined);
    timer = setTimeout(() => {
      timer = null;
      void connect();
    }, RETRY_MS);
    timer.unref();
  };

  async function connect(): Promise<void> {
    const c = new pg.Client({ connectionString: url, application_name: 'svc events', keepAlive: true });
    client = c;
    c.on('error', retry);
    c.on('end', () => retry(new Error('the connection ended')));
    c.on('notification', (n) => onNotify(n.payload));
    try {
      await c.connect();
      await c.query(`LISTEN ${channel}`);
      if (closed) await c.end();
      else onNotify();
    } catch (err) {
      retry(err as Error);
    }
  }

  void connect();
  return {
    async close() {
      closed = true;
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
