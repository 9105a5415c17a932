import { AppError, type ErrorDetail } from '../../kernel/errors.js';
import { monotonic } from '../../lib/clock.js';
import { DataFile, type Answer } from './engine.js';
import type { IdempotencyRef } from './idempotency.js';
import type { MigrationInT, OperationT, SchemaDefT } from './schema.js';
import { sqlError } from './sqlite-errors.js';
import type { EncodedAnswer, QueryRequest } from './backend.js';
import { watchParent } from './worker-watchdog.js';

// The child process that serves one application database (see sql-runner.ts, and worker-process.ts
// for how it is started). It handles one message at a time; the parent kills it when a statement
// runs past the time limit, which is the only way to stop SQLite mid-statement from outside.

export type WorkerRequest =
  | { type: 'open'; file: string; create?: SchemaDefT }
  | { type: 'batch'; ops: OperationT[]; now: number; ref?: IdempotencyRef }
  | { type: 'query'; req: QueryRequest; now: number; ref?: IdempotencyRef }
  | { type: 'migrate'; migration: MigrationInT; checksum: string; now: number }
  | { type: 'migrations' }
  | { type: 'close' };

export type WorkerReply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: { code: AppError['code']; message: string; details?: ErrorDetail[] }; internal?: string };

// First of all: this process must not outlive the daemon (the runner names it in SVC_DAEMON_PID;
// if it is already gone, the process was reparented before it got here).
const daemonPid = Number(process.env.SVC_DAEMON_PID) || process.ppid;
watchParent(daemonPid);

let file: DataFile | null = null;
/** The daemon's clock, as of the request being served (each request that needs the time carries it). */
let sentAt = 0;
const daemonClock = { now: () => sentAt };

function handle(msg: WorkerRequest): unknown {
  if (msg.type === 'open') {
    file?.close();
    file = new DataFile(msg.file, daemonClock, msg.create);
    file.encode = encode;
    return file.info();
  }
  if (msg.type === 'close') {
    file?.close();
    file = null;
    return null;
  }
  if (!file) throw new AppError('data_unavailable', 'The database is not open.');
  if ('now' in msg) sentAt = msg.now;
  switch (msg.type) {
    case 'batch':
      return serialised(file.batch(msg.ops, msg.ref));
    case 'query':
      return serialised(file.query(msg.req, msg.ref));
    case 'migrate':
      return file.migrate(msg.migration, msg.checksum);
    case 'migrations':
      return file.migrations();
  }
}

/** An answer serialised here, so the daemon's event loop never parses or re-serialises it. */
function serialised(a: Answer<unknown>): EncodedAnswer {
  return { replayed: a.replayed, json: a.json ?? encode(a.answer) };
}

const encode = (answer: unknown): Uint8Array => Buffer.from(JSON.stringify(answer));

/** What the daemon sends: requests in the order they are to run, several at once when reads queue up. */
export type WorkerEnvelope = { id: number; timeoutMs?: number } & WorkerRequest;

function run(raw: WorkerEnvelope): WorkerReply {
  try {
    if (file) file.deadline = raw.timeoutMs ? monotonic() + raw.timeoutMs : Infinity;
    return { id: raw.id, ok: true, value: handle(raw) };
  } catch (err) {
    const known = err instanceof AppError;
    // SQLite's own errors (busy, full, out of memory, a constraint) keep their meaning; anything
    // else is answered as the generic error sqlError() gives, and logged in full by the daemon.
    const e = known ? err : sqlError(err);
    const reply: WorkerReply = { id: raw.id, ok: false, error: { code: e.code, message: e.message, details: e.details } };
    if (!known && !(err as { code?: unknown })?.code) reply.internal = (err as Error)?.stack ?? String(err);
    return reply;
  }
}

const waiting: WorkerEnvelope[] = [];
let busy = false;

/**
 * Runs the next waiting request once the previous answer has been written. A small answer is
 * written at once (its callback comes on the next tick); one larger than the socket's buffer
 * (results go up to 1 MiB) is written as the loop turns, and the next request must not start
 * before it is out: if that one runs away and this process is killed, the daemon already holds
 * every answer finished before it, and blames only the runaway.
 */
function next(): void {
  const raw = waiting.shift();
  if (!raw) {
    busy = false;
    return;
  }
  busy = true;
  process.send!(run(raw), undefined, {}, () => {
    if (raw.type === 'close') process.disconnect();
    else next();
  });
}

process.on('message', (batch: WorkerEnvelope[]) => {
  waiting.push(...batch);
  if (!busy) next();
});

// The daemon went away (even by kill -9): nothing is left to serve, so the file is closed and the
// process ends instead of lingering.
process.on('disconnect', () => {
  try {
    file?.close();
  } finally {
    process.exit(0);
  }
});
