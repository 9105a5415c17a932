import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';
import { monotonic } from '../lib/clock.js';
import type { Logger } from './log.js';

export interface ConnectionLimits {
  /** Open connections at most; past it the oldest idle one makes room, or the new one is closed. */
  maxConnections: number;
  /** A connection must send a complete request head within this long, or it is closed. */
  headersTimeoutMs: number;
  /** …and a complete request (head and body) within this long. */
  requestTimeoutMs: number;
  /** A keep-alive connection with no request in flight is closed after this long. */
  keepAliveTimeoutMs: number;
}

/** Descriptors kept free for everything that is not a client connection: SQLite files, logs, watchers, webhook and provider sockets. */
const FD_RESERVE_MIN = 128;
/** Beyond a few thousand, idle connections cost more memory than any local use needs. */
const MAX_CONNECTIONS_CEILING = 4096;
/** What the limit is taken to be where it cannot be read (not Linux): the lowest common soft limit. */
const ASSUMED_FILE_LIMIT = 1024;

/**
 * The process's soft limit on open files, as the kernel enforces it right now (Node raises the soft
 * limit to the hard one at start, so this is read, not assumed). Linux exposes it in /proc; elsewhere
 * there is no Node API for it, and undefined is returned.
 */
export function readFileLimit(procLimits = '/proc/self/limits'): number | undefined {
  let text: string;
  try {
    text = readFileSync(procLimits, 'utf8');
  } catch {
    return undefined;
  }
  const m = /^Max open files\s+(\d+|unlimited)\s/m.exec(text);
  if (!m) return undefined;
  return m[1] === 'unlimited' ? Number.POSITIVE_INFINITY : Number(m[1]);
}

/** The connection cap for a file limit: the limit less a reserve of an eighth (at least 128), within 16..4096. */
export function connectionCapFor(fileLimit: number | undefined): number {
  const limit = fileLimit ?? ASSUMED_FILE_LIMIT;
  const reserve = Math.max(FD_RESERVE_MIN, Math.floor(limit / 8));
  return Math.max(16, Math.min(MAX_CONNECTIONS_CEILING, limit - reserve));
}

export const DEFAULT_CONNECTION_LIMITS: Omit<ConnectionLimits, 'maxConnections'> = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
  keepAliveTimeoutMs: 5_000,
};

export interface ConnectionStats {
  /** Connections open now. */
  open: number;
  max: number;
  /** Idle connections closed to make room for new ones, since start. */
  evicted: number;
  /** New connections closed at once because every open one was busy, since start. */
  refused: number;
}

export interface Conn {
  socket: Socket;
  /** Requests on this connection whose response has not finished. */
  active: number;
  /** Set until the first request head arrives. */
  headTimer?: NodeJS.Timeout;
}

const CAP_LOG_INTERVAL_MS = 60_000;

/**
 * Keeps the connections of one HTTP server within bounds, so that no local process can take the
 * daemon down by opening connections and sending nothing:
 * - a connection that sends no request head within `headersTimeoutMs` is closed (node:http's own
 *   headersTimeout covers a head that started; this timer covers a connection that sends nothing);
 * - at most `maxConnections` are open, below the file limit, so accept() never fails for want of a
 *   descriptor. At the cap, a new connection makes room by closing the oldest connection that has no
 *   request in flight (one that sent nothing yet, or an idle keep-alive one): a client that is
 *   really talking gets in at once, and the idle ones were going to be closed anyway. When every
 *   open connection is busy, the new one is closed at once. Either way one log line a minute says so.
 * Every operation here is O(1); the idle connections are kept in a Set whose order is their age.
 */
/** What the server tells the guard of each request, and asks of it. */
export interface ConnectionGuard {
  /** A request has started: its connection is busy until the request ends (what this returns is handed back then). */
  started(req: IncomingMessage): Conn | undefined;
  /** The request's response has closed. */
  ended(c: Conn | undefined): void;
  stats(): ConnectionStats;
}

export function guardConnections(server: Server, limits: Omit<ConnectionLimits, 'maxConnections'> & { maxConnections: () => number }, log: Logger): ConnectionGuard {
  const conns = new Map<Socket, Conn>();
  const idle = new Set<Conn>();
  let evicted = 0;
  let refused = 0;
  let lastLog = -Infinity;
  let unlogged = { evicted: 0, refused: 0 };

  function capHit(kind: 'evicted' | 'refused', max: number): void {
    if (kind === 'evicted') evicted++;
    else refused++;
    unlogged[kind]++;
    const now = monotonic();
    if (now - lastLog < CAP_LOG_INTERVAL_MS) return;
    lastLog = now;
    log.warn('connection limit reached: closing idle connections to make room, refusing new ones when all are busy', {
      max,
      ...unlogged,
    });
    unlogged = { evicted: 0, refused: 0 };
  }

  function forget(c: Conn): void {
    if (c.headTimer) clearTimeout(c.headTimer);
    c.headTimer = undefined;
    idle.delete(c);
    conns.delete(c.socket);
  }

  server.on('connection', (socket: Socket) => {
    const max = limits.maxConnections();
    if (conns.size >= max) {
      const oldest = idle.values().next();
      if (oldest.done) {
        capHit('refused', max);
        socket.destroy();
        return;
      }
      forget(oldest.value);
      oldest.value.socket.destroy();
      capHit('evicted', max);
    }
    const c: Conn = { socket, active: 0 };
    c.headTimer = setTimeout(() => {
      c.headTimer = undefined;
      socket.destroy();
    }, limits.headersTimeoutMs);
    c.headTimer.unref();
    conns.set(socket, c);
    idle.add(c);
    socket.once('close', () => forget(c));
  });

  // Told by the server's own request handler and its response's close listener, rather than by
  // listeners of its own: a second 'request' listener and a second 'close' one on every response
  // cost more than what they do.
  return {
    started(req) {
      // Over TLS the request's socket wraps the raw one counted at 'connection' (its _parent).
      const c = conns.get(req.socket as Socket) ?? conns.get((req.socket as Socket & { _parent?: Socket })._parent as Socket);
      if (!c) return undefined;
      if (c.headTimer) {
        clearTimeout(c.headTimer);
        c.headTimer = undefined;
      }
      c.active++;
      idle.delete(c);
      return c;
    },
    ended(c) {
      if (!c) return;
      c.active--;
      // Re-added at the end: the order of the Set stays the order in which connections went idle.
      if (c.active === 0 && conns.has(c.socket) && !c.socket.destroyed) idle.add(c);
    },
    stats: () => ({ open: conns.size, max: limits.maxConnections(), evicted, refused }),
  };
}
