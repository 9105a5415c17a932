import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { deserialize } from 'node:v8';
import { receiveMessageOnPort, workerData, type MessagePort } from 'node:worker_threads';
import pg from 'pg';
import { CONNECT_TIMEOUT_MS, SharedSlots, writeMessage, type SharedData } from './channel.js';
import type { Reply, Request } from './sync.js';

// The thread behind PgStateDb's shared channel (shared-channel.ts): libpq's blocking calls, one
// statement at a time. It never returns to an event loop: it sleeps in Atomics.wait until the
// daemon's thread posts a request, runs it on libpq, writes the answer and wakes the daemon. No
// promise, no event loop turn and no structured clone through a MessagePort per statement is what
// makes this channel cheaper than thread.ts's (docs/performance.md has both measured).

/** The native methods of the `libpq` addon used here (its index.js wraps these same calls). */
interface Libpq {
  $connectSync(conninfo: string): boolean;
  $getLastErrorMessage(): string;
  $finish(): void;
  $exec(sql: string): void;
  $prepare(name: string, sql: string, nParams: number): void;
  $execPrepared(name: string, params: (string | null)[]): void;
  $resultStatus(): string;
  $resultErrorMessage(): string;
  $resultErrorFields(): { sqlState?: string; messagePrimary?: string; messageDetail?: string; constraintName?: string } | null;
  $transactionStatus(): number;
  $ntuples(): number;
  $nfields(): number;
  $fname(col: number): string;
  $ftype(col: number): number;
  $getvalue(row: number, col: number): string;
  $getisnull(row: number, col: number): boolean;
  $cmdTuples(): string;
}

const { url, port, buffer, statementTimeoutMs } = workerData as SharedData & { port: MessagePort };
const slots = new SharedSlots(buffer);
const require = createRequire(import.meta.url);
// pg's own conversion of a parameter to text (its package exports "./lib/*"), so both channels send the same values.
const { prepareValue } = require('pg/lib/utils.js') as { prepareValue(v: unknown): unknown };

/**
 * The addon, loaded from a copy of its own. It is not context-aware: a process loads it once per
 * file, and a second thread loading the same file while the first lives fails ("Module did not
 * self-register"). A daemon has two such threads when it gave up on a stuck one, and a process
 * may hold several daemons (tests). A copy in a fresh private directory (0700, removed once loaded)
 * is a file of its own to the dynamic loader, so each thread gets its own instance.
 */
function loadAddon(): new () => Libpq {
  const file = join(dirname(require.resolve('libpq/package.json')), 'build', 'Release', 'addon.node');
  const dir = mkdtempSync(join(tmpdir(), 'svc-libpq-'));
  try {
    const copy = join(dir, 'addon.node');
    copyFileSync(file, copy);
    const m = { exports: {} as { PQ: new () => Libpq } };
    process.dlopen(m, copy);
    return m.exports.PQ;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

let Addon: (new () => Libpq) | null = null;
let loadError = '';
try {
  Addon = loadAddon();
} catch (err) {
  loadError = (err as Error).message.split('\n')[0]!;
}

/** TRANSACTION_UNKNOWN: the connection is bad. */
const CONNECTION_BAD = 4;

// Text values as `pg` parses them (pg-types), so both channels give the stores the same values;
// BIGINT as a number, as thread.ts does (every state id and counter is below 2^53).
const parsers = new Map<number, (v: string) => unknown>();
function parser(oid: number): (v: string) => unknown {
  let p = parsers.get(oid);
  if (!p) parsers.set(oid, (p = oid === 20 ? Number : (pg.types.getTypeParser(oid, 'text') as (v: string) => unknown)));
  return p;
}

/** A parameter as libpq takes it, text or null: as `pg` converts it (arrays, dates, objects), bytes as bytea's hex. */
function param(v: unknown): string | null {
  const p = prepareValue(v) as string | Buffer | null;
  return Buffer.isBuffer(p) ? `\\x${p.toString('hex')}` : p;
}

/** libpq says why a connection failed in words only: the codes connectFailure (url.ts) explains. */
function connectCode(message: string): string | undefined {
  if (/Connection refused/i.test(message)) return 'ECONNREFUSED';
  if (/could not translate host name/i.test(message)) return 'ENOTFOUND';
  if (/password authentication failed|no pg_hba\.conf entry/i.test(message)) return '28P01';
  const db = /database "[^"]*" does not exist/i.exec(message);
  return db ? '3D000' : undefined;
}

/** The URL with libpq's own settings added: a bounded connect, the statement timeout, keepalives that notice a dead peer. */
function conninfo(): string {
  const u = new URL(url);
  const params = new Map(u.searchParams);
  const set = (k: string, v: string) => {
    if (!params.has(k)) params.set(k, v);
  };
  set('connect_timeout', String(Math.ceil(CONNECT_TIMEOUT_MS / 1000)));
  set('application_name', 'svc state');
  params.set('options', `${params.get('options') ?? ''} -c statement_timeout=${statementTimeoutMs}`.trim());
  set('keepalives_idle', '30');
  set('keepalives_interval', '10');
  set('keepalives_count', '3');
  // Spelled out: libpq decodes %XX in a URI but not URLSearchParams' "+" for a space.
  u.search = [...params].map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
  return u.toString();
}

let conn: Libpq | null = null;
const names = new Map<string, string>();

function connection(): Libpq {
  if (conn) return conn;
  const c = new Addon!();
  if (!c.$connectSync(conninfo())) {
    const message = c.$getLastErrorMessage().trim();
    c.$finish();
    throw Object.assign(new Error(message), { code: connectCode(message) });
  }
  names.clear();
  return (conn = c);
}

function drop(): void {
  conn?.$finish();
  conn = null;
}

/** The current result: rows, or the error it holds. */
function result(c: Libpq, id: number): Reply {
  const status = c.$resultStatus();
  if (status === 'PGRES_FATAL_ERROR' || status === 'PGRES_BAD_RESPONSE' || status === 'PGRES_NONFATAL_ERROR') {
    const f = c.$resultErrorFields();
    const message = f?.messagePrimary ?? (c.$resultErrorMessage() || c.$getLastErrorMessage()).trim();
    // No SQLSTATE and a bad connection: the server went away; the next request reconnects.
    if (c.$transactionStatus() === CONNECTION_BAD) drop();
    return { id, error: { message, code: f?.sqlState, detail: f?.messageDetail, constraint: f?.constraintName } };
  }
  const nf = c.$nfields();
  const nt = c.$ntuples();
  const cols: string[] = [];
  const parse: ((v: string) => unknown)[] = [];
  const binary: string[] = [];
  for (let f = 0; f < nf; f++) {
    cols.push(c.$fname(f));
    const oid = c.$ftype(f);
    parse.push(parser(oid));
    if (oid === 17) binary.push(c.$fname(f));
  }
  const rows: Record<string, unknown>[] = [];
  for (let r = 0; r < nt; r++) {
    const row: Record<string, unknown> = {};
    for (let f = 0; f < nf; f++) row[cols[f]!] = c.$getisnull(r, f) ? null : parse[f]!(c.$getvalue(r, f));
    rows.push(row);
  }
  const rowCount = Number(c.$cmdTuples()) || nt;
  return { id, rows, rowCount, ...(binary.length ? { binary } : {}) };
}

function run(req: Extract<Request, { id: number }>): Reply {
  if (!Addon) return { id: req.id, error: { message: `the libpq addon cannot be loaded: ${loadError}`, code: 'LIBPQ_UNAVAILABLE' } };
  let c: Libpq;
  try {
    c = connection();
  } catch (err) {
    const e = err as Error & { code?: string };
    return { id: req.id, error: { message: e.message, code: e.code } };
  }
  if (req.kind === 'exec') {
    c.$exec(req.sql);
    return result(c, req.id);
  }
  // Prepared once per connection, by its text, as thread.ts names them.
  let name = names.get(req.sql);
  if (!name) {
    name = `s${names.size + 1}`;
    c.$prepare(name, req.sql, req.params.length);
    const prepared = result(c, req.id);
    if (prepared.error) return prepared;
    names.set(req.sql, name);
  }
  c.$execPrepared(name, req.params.map(param));
  return result(c, req.id);
}

function read(): Request {
  const len = slots.length;
  if (len >= 0) return deserialize(slots.data.subarray(0, len)) as Request;
  // Too big for the shared buffer: it came through the port.
  return receiveMessageOnPort(port)!.message as Request;
}

let seen = 0;
for (;;) {
  Atomics.wait(slots.ctl, 0, seen);
  // The daemon gave up on an answer (it took past its wait bound) and moved to a new thread.
  if (slots.abandoned) break;
  seen = Atomics.load(slots.ctl, 0);
  const req = read();
  if (req.kind === 'close' || req.kind === 'reset') break;
  const reply = run(req);
  if (slots.abandoned) break;
  writeMessage(slots, port, reply);
  Atomics.store(slots.ctl, 1, seen);
  Atomics.notify(slots.ctl, 1);
}
drop();
port.close();
