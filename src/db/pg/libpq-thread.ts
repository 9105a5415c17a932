import { createRequire } from 'node:module';
import { deserialize } from 'node:v8';
import { receiveMessageOnPort, workerData, type MessagePort } from 'node:worker_threads';
import pg from 'pg';
import pgUtils from 'pg/lib/utils.js';
import { inExe, loadNative } from '../../lib/exe.js';
import { CONNECT_TIMEOUT_MS, SharedSlots, writeMessage, type SharedData } from './channel.js';
import type { Reply, Request, Statement } from './channel.js';

// The thread behind PgStateDb's shared channel (channel.ts): libpq, PostgreSQL's own C client,
// called through the koffi FFI (an optional dependency with prebuilt binaries: nothing to compile,
// only libpq itself needed), one blocking call per statement. The thread never returns to an event
// loop: it sleeps in Atomics.wait until the daemon's thread posts a request, runs it, writes the
// answer and wakes the daemon. No promise, no event loop turn and no structured clone through a
// MessagePort per statement is what makes this channel cheaper than thread.ts's
// (docs/performance.md has both measured). libpq is called directly rather than through the
// `libpq` npm addon, which registers its socket with the main thread's libuv loop and so crashes
// the process when used from a thread.

const { url, port, buffer, statementTimeoutMs } = workerData as SharedData & { port: MessagePort };
const slots = new SharedSlots(buffer);

type Ptr = object;
/** The libpq functions used here, declared for koffi. */
interface Libpq {
  PQconnectdb(conninfo: string): Ptr;
  PQstatus(conn: Ptr): number;
  PQerrorMessage(conn: Ptr): string;
  PQfinish(conn: Ptr): void;
  PQexec(conn: Ptr, sql: string): Ptr | null;
  PQprepare(conn: Ptr, name: string, sql: string, nParams: number, types: null): Ptr | null;
  PQexecPrepared(conn: Ptr, name: string, nParams: number, values: (string | null)[], lengths: null, formats: null, resultFormat: number): Ptr | null;
  PQresultStatus(res: Ptr): number;
  PQresultErrorField(res: Ptr, field: number): string | null;
  PQresultErrorMessage(res: Ptr): string;
  PQtransactionStatus(conn: Ptr): number;
  PQntuples(res: Ptr): number;
  PQnfields(res: Ptr): number;
  PQfname(res: Ptr, col: number): string;
  PQftype(res: Ptr, col: number): number;
  PQgetvalue(res: Ptr, row: number, col: number): string;
  PQgetisnull(res: Ptr, row: number, col: number): number;
  PQcmdTuples(res: Ptr): string;
  PQclear(res: Ptr): void;
  PQsetNoticeProcessor(conn: Ptr, proc: unknown, arg: null): unknown;
}

const SIGNATURES = [
  'PGconn *PQconnectdb(const char *conninfo)',
  'int PQstatus(PGconn *conn)',
  'const char *PQerrorMessage(PGconn *conn)',
  'void PQfinish(PGconn *conn)',
  'PGresult *PQexec(PGconn *conn, const char *sql)',
  'PGresult *PQprepare(PGconn *conn, const char *name, const char *sql, int nParams, const void *types)',
  'PGresult *PQexecPrepared(PGconn *conn, const char *name, int nParams, const char **values, const int *lengths, const int *formats, int resultFormat)',
  'int PQresultStatus(PGresult *res)',
  'const char *PQresultErrorField(PGresult *res, int field)',
  'const char *PQresultErrorMessage(PGresult *res)',
  'int PQtransactionStatus(PGconn *conn)',
  'int PQntuples(PGresult *res)',
  'int PQnfields(PGresult *res)',
  'const char *PQfname(PGresult *res, int col)',
  'uint32_t PQftype(PGresult *res, int col)',
  'const char *PQgetvalue(PGresult *res, int row, int col)',
  'int PQgetisnull(PGresult *res, int row, int col)',
  'const char *PQcmdTuples(PGresult *res)',
  'void PQclear(PGresult *res)',
  'void *PQsetNoticeProcessor(PGconn *conn, PQnoticeProcessor *proc, void *arg)',
];

/** Where libpq is on each system (Homebrew's is keg-only on macOS). */
const LIBRARIES: Record<string, string[]> = {
  darwin: ['libpq.5.dylib', '/opt/homebrew/opt/libpq/lib/libpq.5.dylib', '/usr/local/opt/libpq/lib/libpq.5.dylib'],
  win32: ['libpq.dll'],
};

interface Koffi {
  load(path: string): { func(signature: string): (...args: unknown[]) => unknown };
  opaque(name: string): unknown;
  proto(signature: string): unknown;
  pointer(type: unknown): unknown;
  register(fn: (arg: unknown, message: string) => void, type: unknown): unknown;
  unregister(registered: unknown): void;
}

/** The server's notices of the statement under way: they go to the daemon with its answer (libpq's own processor prints them on stderr). */
let notices: string[] = [];
let noticeProcessor: unknown = null;
/** Gives back the processor's callback slot (koffi has a few thousand) when the thread ends. */
let unregister = () => undefined as void;

function loadLibpq(koffi: Koffi): Libpq {
  koffi.opaque('PGconn');
  koffi.opaque('PGresult');
  const proto = koffi.proto('void PQnoticeProcessor(void *arg, const char *message)');
  // Called on this thread, inside the libpq call that received the notice.
  const processor = koffi.register((_arg, message) => void notices.push(message.trim()), koffi.pointer(proto));
  noticeProcessor = processor;
  unregister = () => koffi.unregister(processor);
  const names = LIBRARIES[process.platform] ?? ['libpq.so.5'];
  let lib: ReturnType<typeof koffi.load> | undefined;
  const errors: string[] = [];
  for (const name of names) {
    try {
      lib = koffi.load(name);
      break;
    } catch (err) {
      errors.push((err as Error).message);
    }
  }
  if (!lib) throw new Error(`libpq is not installed (${errors[0]})`);
  const fns: Record<string, unknown> = {};
  for (const sig of SIGNATURES) fns[/(PQ\w+)\(/.exec(sig)![1]!] = lib.func(sig);
  return fns as unknown as Libpq;
}

/**
 * koffi is optional: without it (or without libpq) every statement is answered with loadError,
 * and the daemon falls back to the pg thread. The single executable carries koffi's native
 * addon, which is the whole of what is used here.
 */
function loadKoffi(): Koffi {
  return (inExe() ? loadNative('koffi') : createRequire(import.meta.url)('koffi')) as Koffi;
}

let pq: Libpq | null = null;
let loadError = '';
try {
  pq = loadLibpq(loadKoffi());
} catch (err) {
  loadError = (err as Error).message.split('\n')[0]!;
}

const CONNECTION_OK = 0;
/** PQTRANS_UNKNOWN: the connection is bad. */
const TRANSACTION_UNKNOWN = 4;
/** ExecStatusType values that carry an error (BAD_RESPONSE, NONFATAL_ERROR, FATAL_ERROR, PIPELINE_ABORTED). */
const ERROR_STATUS = new Set([5, 6, 7, 11]);
/** PG_DIAG_* field codes: SQLSTATE, primary message, detail, constraint name. */
const DIAG = { code: 'C'.charCodeAt(0), message: 'M'.charCodeAt(0), detail: 'D'.charCodeAt(0), constraint: 'n'.charCodeAt(0) };

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
  const p = pgUtils.prepareValue(v) as string | Buffer | null;
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

let conn: Ptr | null = null;
const names = new Map<string, string>();

function connection(lib: Libpq): Ptr {
  if (conn) return conn;
  const c = lib.PQconnectdb(conninfo());
  if (lib.PQstatus(c) !== CONNECTION_OK) {
    const message = lib.PQerrorMessage(c).trim();
    lib.PQfinish(c);
    // A URL parameter only `pg` takes (ssl=true, sslmode=no-verify...): not this server's fault,
    // and with driver auto the `pg` channel connects instead.
    if (/invalid (URI query parameter|connection option|sslmode value)/i.test(message)) throw Object.assign(new Error(`libpq does not take this URL: ${message}`), { code: 'LIBPQ_UNAVAILABLE' });
    throw Object.assign(new Error(message), { code: connectCode(message) });
  }
  lib.PQsetNoticeProcessor(c, noticeProcessor, null);
  names.clear();
  return (conn = c);
}

function drop(): void {
  if (conn) pq!.PQfinish(conn);
  conn = null;
}

/** A result as rows, or the error it holds; freed either way. */
function result(lib: Libpq, c: Ptr, res: Ptr | null): Reply {
  if (!res) {
    const message = lib.PQerrorMessage(c).trim();
    drop();
    return { error: { message } };
  }
  try {
    if (ERROR_STATUS.has(lib.PQresultStatus(res))) {
      const field = (f: number) => lib.PQresultErrorField(res, f) ?? undefined;
      const message = field(DIAG.message) ?? (lib.PQresultErrorMessage(res) || lib.PQerrorMessage(c)).trim();
      // No SQLSTATE and a bad connection: the server went away; the next request reconnects.
      if (lib.PQtransactionStatus(c) === TRANSACTION_UNKNOWN) drop();
      return { error: { message, code: field(DIAG.code), detail: field(DIAG.detail), constraint: field(DIAG.constraint) } };
    }
    const nf = lib.PQnfields(res);
    const nt = lib.PQntuples(res);
    const cols: string[] = [];
    const parse: ((v: string) => unknown)[] = [];
    const binary: string[] = [];
    for (let f = 0; f < nf; f++) {
      cols.push(lib.PQfname(res, f));
      const oid = lib.PQftype(res, f);
      parse.push(parser(oid));
      if (oid === 17) binary.push(cols[f]!);
    }
    const rows: Record<string, unknown>[] = [];
    for (let r = 0; r < nt; r++) {
      const row: Record<string, unknown> = {};
      for (let f = 0; f < nf; f++) row[cols[f]!] = lib.PQgetisnull(res, r, f) ? null : parse[f]!(lib.PQgetvalue(res, r, f));
      rows.push(row);
    }
    const rowCount = Number(lib.PQcmdTuples(res)) || nt;
    return { rows, rowCount, ...(binary.length ? { binary } : {}) };
  } finally {
    lib.PQclear(res);
  }
}

function run(req: Statement): Reply {
  const lib = pq;
  if (!lib) return { error: { message: `libpq cannot be used: ${loadError}`, code: 'LIBPQ_UNAVAILABLE' } };
  let c: Ptr;
  try {
    c = connection(lib);
  } catch (err) {
    const e = err as Error & { code?: string };
    return { error: { message: e.message, code: e.code } };
  }
  if (req.kind === 'exec') return result(lib, c, lib.PQexec(c, req.sql));
  // Prepared once per connection, by its text, as thread.ts names them.
  let name = names.get(req.sql);
  if (!name) {
    name = `s${names.size + 1}`;
    const prepared = result(lib, c, lib.PQprepare(c, name, req.sql, req.params.length, null));
    if (prepared.error) return prepared;
    names.set(req.sql, name);
  }
  const values = req.params.map(param);
  // libpq takes C strings: a NUL would cut the value short without a word. PostgreSQL's text
  // cannot hold one either, and refuses it through `pg` with this error.
  if (values.some((v) => v?.includes('\0'))) return { error: { message: 'invalid byte sequence for encoding "UTF8": 0x00', code: '22021' } };
  return result(lib, c, lib.PQexecPrepared(c, name, values.length, values, null, null, 0));
}

/** run(), its own failures (a parameter it cannot convert, say) answered as errors: a thread that died would leave its transaction, and the write lock, held. */
function answer(req: Statement): Reply {
  try {
    return run(req);
  } catch (err) {
    // What the statement was part of cannot be trusted to go on: the connection goes, and the
    // server rolls back what it had open, as thread.ts does for an error without a code.
    drop();
    return { error: { message: (err as Error).message } };
  }
}

function read(): Request {
  const len = slots.length;
  if (len >= 0) return deserialize(slots.data.subarray(0, len)) as Request;
  // Too big for the shared buffer: it came through the port.
  return receiveMessageOnPort(port)!.message as Request;
}

let seen = 0;
try {
  for (;;) {
    Atomics.wait(slots.ctl, 0, seen);
    // The daemon gave up on an answer (it took past its wait bound) and moved to a new thread.
    if (slots.abandoned) break;
    seen = Atomics.load(slots.ctl, 0);
    const req = read();
    if (req.kind === 'close' || req.kind === 'reset') break;
    const reply = answer(req);
    if (notices.length) {
      reply.notices = notices;
      notices = [];
    }
    if (slots.abandoned) break;
    writeMessage(slots, port, reply);
    Atomics.store(slots.ctl, 1, seen);
    Atomics.notify(slots.ctl, 1);
  }
} finally {
  // However the thread ends, its connection ends with it (and any transaction open on it).
  drop();
  unregister();
  port.close();
}
