import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import pg from 'pg';
import { CONNECT_TIMEOUT_MS } from './channel.js';
import type { Reply, Request, Statement } from './channel.js';

// The thread behind PgStateDb's port channel (channel.ts), used where libpq cannot be (state.driver
// pg, or no koffi or libpq): one PostgreSQL connection through `pg`, one statement at a time, in the
// order the daemon sent them. Each answer is posted, then the shared counter is bumped and the
// daemon's thread, blocked in Atomics.wait, wakes to read it.

interface Data {
  url: string;
  port: MessagePort;
  counter: SharedArrayBuffer;
  statementTimeoutMs: number;
}

const { url, port, counter, statementTimeoutMs } = workerData as Data;
const wake = new Int32Array(counter);

// State ids and counters are BIGINT in PostgreSQL; every one fits in a double (ids < 2^53).
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === 20 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

let client: pg.Client | null = null;
const names = new Map<string, string>();
/** The server's notices of the statement under way, sent to the daemon with its answer. */
let notices: string[] = [];

async function connection(): Promise<pg.Client> {
  if (client) return client;
  const c = new pg.Client({ connectionString: url, application_name: 'svc state', statement_timeout: statementTimeoutMs, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, types, keepAlive: true });
  // For the whole life of the client: an error between statements (the server went away) must
  // never be an unhandled 'error' event; the next statement makes a new connection.
  c.on('error', () => {
    if (client === c) client = null;
  });
  c.on('notice', (n) => void notices.push(n.message ?? String(n)));
  await c.connect();
  names.clear();
  client = c;
  return c;
}

function answer(reply: Reply): void {
  port.postMessage(reply);
  Atomics.add(wake, 0, 1);
  Atomics.notify(wake, 0);
}

async function run(req: Statement): Promise<Reply> {
  try {
    const c = await connection();
    if (req.kind === 'exec') {
      await c.query(req.sql);
      return { rows: [], rowCount: 0 };
    }
    // Named, so each statement is parsed once per connection.
    let name = names.get(req.sql);
    if (!name) names.set(req.sql, (name = `s${names.size + 1}`));
    const r = await c.query({ name, text: req.sql, values: req.params as unknown[] });
    // BYTEA columns: posting a Buffer delivers a plain Uint8Array, so the daemon's side rewraps them.
    const binary = r.fields.filter((f) => f.dataTypeID === 17).map((f) => f.name);
    return { rows: r.rows as Record<string, unknown>[], rowCount: r.rowCount ?? 0, ...(binary.length ? { binary } : {}) };
  } catch (err) {
    const e = err as Error & { code?: string; detail?: string; constraint?: string };
    // A broken connection is replaced on the next request; a statement error leaves it usable.
    if (!e.code || /^(08|57P)/.test(e.code)) {
      const c = client;
      client = null;
      c?.end().catch(() => undefined);
    }
    return { error: { message: e.message, code: e.code, detail: e.detail, constraint: e.constraint } };
  }
}

let chain = Promise.resolve();
port.on('message', (req: Request) => {
  if (req.kind === 'reset') {
    // The daemon stopped waiting for an answer: the connection may hang (a dead peer answers
    // nothing), so it goes now, failing what runs on it; the next statement makes a new one.
    const c = client;
    client = null;
    (c as unknown as { connection?: { stream?: { destroy(): void } } } | null)?.connection?.stream?.destroy();
    c?.end().catch(() => undefined);
    return;
  }
  if (req.kind === 'close') {
    void chain.then(async () => {
      await client?.end().catch(() => undefined);
      port.close();
      parentPort?.close();
    });
    return;
  }
  chain = chain.then(async () => {
    const reply = await run(req);
    if (notices.length) {
      reply.notices = notices;
      notices = [];
    }
    answer(reply);
  });
});
