import { systemClock } from '../lib/clock.js';
import { nowIso } from '../lib/time.js';
import { isStateOutage } from './errors.js';

// One JSON object per line. Callers pass fields, never request bodies or headers; the request
// logger in server.ts records only id, method, path (without the query string), status and ms.

export type Level = 'debug' | 'info' | 'warn' | 'error';

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /**
   * The line each request ends with, the same text as `info('request', { id, method, path, status, ms })`
   * written without the fields object and its serialisation (it is the line the daemon writes most).
   * A logger without it is given that info() call instead.
   */
  request?(id: string, method: string, path: string, status: number, ms: number): void;
}

const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** The time of a log line: made once per millisecond (a busy daemon logs many lines in each). */
let lastMs = NaN;
let lastIso = '';
function lineTime(): string {
  const ms = systemClock.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = nowIso({ now: () => ms });
  }
  return lastIso;
}

/**
 * One line, exactly as JSON.stringify({ time, level, msg, ...fields }) writes it, without the
 * spread copy of the fields (a request's line is the most frequent thing the daemon writes). Fields
 * that would not simply follow the line's own members (one of their names, an array, a toJSON, an
 * integer-like name, which JSON puts first) are spread as they always were.
 */
function formatLine(time: string, level: Level, msg: string, fields?: Record<string, unknown> | null): string {
  if (typeof msg !== 'string') return spreadLine(time, level, msg, fields);
  const head = `{"time":"${time}","level":"${level}","msg":${JSON.stringify(msg)}`;
  if (fields === undefined || fields === null) return `${head}}`;
  if (Array.isArray(fields) || typeof fields.toJSON === 'function' || Object.hasOwn(fields, 'time') || Object.hasOwn(fields, 'level') || Object.hasOwn(fields, 'msg')) {
    return spreadLine(time, level, msg, fields);
  }
  const rest = JSON.stringify(fields);
  if (rest === '{}') return `${head}}`;
  // An integer-like name comes first in JSON: a digit after `{"`.
  const c = rest.charCodeAt(2);
  return c >= 48 && c <= 57 ? spreadLine(time, level, msg, fields) : `${head},${rest.slice(1)}`;
}

/** Text JSON writes as it is between quotes: printable ASCII without `"` and `\\`. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
const jsonString = (s: string): string => (PLAIN.test(s) ? `"${s}"` : JSON.stringify(s));

/** A number as JSON writes it (one that is not finite as null). */
const jsonNumber = (v: number): string => (Number.isFinite(v) ? String(v) : 'null');

/** A request's line: formatLine's text for info('request', { id, method, path, status, ms }). */
function requestLine(time: string, id: string, method: string, path: string, status: number, ms: number): string {
  return `{"time":"${time}","level":"info","msg":"request","id":${jsonString(id)},"method":${jsonString(method)},"path":${jsonString(path)},"status":${jsonNumber(status)},"ms":${jsonNumber(ms)}}`;
}

/** A line as it always was written. */
const spreadLine = (time: string, level: Level, msg: string, fields?: Record<string, unknown> | null): string => JSON.stringify({ time, level, msg, ...fields });

export function createLogger(write: (line: string) => void, min: Level = 'info'): Logger {
  const emit = (level: Level, msg: string, fields?: Record<string, unknown>) => {
    // A failure that is the state server's outage (errorFields marks it) is the outage log's to
    // report, once when it starts and once when it ends (db/pg/outage.ts): each timer, worker and
    // request that met it says so at debug only, instead of a line and a stack a second each.
    if (fields?.outage === true && ORDER[level] > ORDER.debug) level = 'debug';
    if (ORDER[level] < ORDER[min]) return;
    write(formatLine(lineTime(), level, msg, fields) + '\n');
  };
  // emit()'s test for an info line, made once.
  const info = ORDER.info >= ORDER[min];
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    request: (id, method, path, status, ms) => {
      if (info) write(requestLine(lineTime(), id, method, path, status, ms) + '\n');
    },
  };
}

/**
 * Collects log lines and hands them on together, every `delayMs` (or sooner once `maxBytes` wait):
 * under load a request's line costs a copy into a buffer, not a write of its own, and each line
 * stays whole and in order. The line is copied (as UTF-8) when it is pushed, while it is still in
 * the processor's cache; joining them at the hand-on cost more than twice as much, and every target
 * then encoded the joined text again. `flush()` hands on what is waiting at once (shutdown), and
 * leaves no timer.
 */
export function lineBuffer(write: (chunk: Buffer) => void, { delayMs = 25, maxBytes = 64 * 1024 }: { delayMs?: number; maxBytes?: number } = {}): { push(line: string): void; flush(): void } {
  // One buffer takes batch after batch until the next line may not fit: a chunk handed on is a view
  // of it, never written again, and the chunks a stalled target still holds share their buffers
  // (a buffer per batch would have held its whole size for each one-line batch of a quiet daemon).
  const room = Math.max(2 * maxBytes, 4096);
  let buf: Buffer | null = null;
  /** The waiting lines are buf[start, used). */
  let start = 0;
  let used = 0;
  let timer: NodeJS.Timeout | null = null;
  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (!buf || used === start) return;
    const chunk = buf.subarray(start, used);
    start = used;
    write(chunk);
  };
  return {
    push(line) {
      // At most three bytes of UTF-8 for each UTF-16 unit.
      const most = line.length * 3;
      if (buf && used + most > buf.length) {
        flush();
        buf = null;
      }
      if (!buf) {
        // A line longer than the room gets a buffer of its own size.
        buf = Buffer.allocUnsafe(Math.max(room, most));
        start = used = 0;
      }
      used += buf.write(line, used);
      if (used - start >= maxBytes) flush();
      else timer ??= setTimeout(flush, delayMs);
    },
    flush,
  };
}

/** An error's fields for a log line; `outage: true` when it is the state server's outage (see createLogger). */
export function errorFields(err: unknown): Record<string, unknown> {
  if (err instanceof Error) {
    const fields: Record<string, unknown> = { error: err.message, stack: err.stack };
    if (isStateOutage(err)) fields.outage = true;
    if (err.cause !== undefined) fields.cause = err.cause instanceof Error ? err.cause.message : String(err.cause);
    return fields;
  }
  return { error: String(err) };
}

/** Wraps a timer or watcher callback: a failure there is logged, it must never take the daemon down. */
export function guarded<A extends unknown[]>(log: Logger, what: string, fn: (...args: A) => void | Promise<void>): (...args: A) => void {
  const failed = (err: unknown) => log.error(`${what} failed`, errorFields(err));
  return (...args) => {
    try {
      const r = fn(...args);
      // A failure of its promise is logged too.
      if (r instanceof Promise) r.catch(failed);
    } catch (err) {
      failed(err);
    }
  };
}
