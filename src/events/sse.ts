import type { ServerResponse } from 'node:http';
import { AppError } from '../kernel/errors.js';
import type { EventMatcher } from './filter.js';
import type { EventLog, StoredEvent } from './outbox.js';

export interface SseLimits {
  /** A `: ping` comment this often keeps proxies and clients from timing out. */
  heartbeatMs: number;
  /** A client this many events behind (unflushed) is disconnected. */
  maxBacklogEvents: number;
  /** …or this many bytes behind. */
  maxBacklogBytes: number;
}

export const DEFAULT_SSE_LIMITS: SseLimits = { heartbeatMs: 15_000, maxBacklogEvents: 1000, maxBacklogBytes: 1024 * 1024 };

const REPLAY_PAGE = 500;

export const SSE_HEADERS = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-cache, no-transform',
  Connection: 'keep-alive',
  'X-Accel-Buffering': 'no',
} as const;

export function frame(e: StoredEvent): string {
  return `id: ${e.id}\nevent: ${e.name}\ndata: ${JSON.stringify(e.data)}\n\n`;
}

interface Stream {
  res: ServerResponse;
  keyId: string;
  matches: EventMatcher;
  /** Highest event id handled (sent or filtered out); replay and live delivery both advance it. */
  cursor: number;
  /** True while history is still being read from the log; live events wait in the log meanwhile. */
  replaying: boolean;
  /** Events written since the socket last drained. */
  backlog: number;
  heartbeat: NodeJS.Timeout;
}

/**
 * The live event streams. Events reach a stream from memory once it is live; while it replays
 * (Last-Event-ID) it reads the durable log page by page as the socket drains, so history is never
 * buffered whole. A stream that falls too far behind is cut rather than buffered without bound.
 */
export class SseHub {
  private readonly streams = new Set<Stream>();
  private readonly unsubscribe: () => void;
  private closed = false;

  constructor(
    private readonly log: EventLog,
    private readonly limits: SseLimits = DEFAULT_SSE_LIMITS,
  ) {
    this.unsubscribe = log.subscribe((e) => {
      for (const s of this.streams) if (!s.replaying) this.deliver(s, e);
    });
  }

  get size(): number {
    return this.streams.size;
  }

  open(res: ServerResponse, opts: { keyId: string; matches: EventMatcher; lastEventId?: number }): void {
    // Shutting down: a stream opened now would hear nothing and hold its connection until the grace period ends.
    if (this.closed) throw new AppError('unavailable', 'The daemon is shutting down; reconnect shortly.');
    res.writeHead(200, SSE_HEADERS);
    res.flushHeaders();
    const s: Stream = {
      res,
      keyId: opts.keyId,
      matches: opts.matches,
      cursor: this.log.lastId(),
      replaying: false,
      backlog: 0,
      heartbeat: setInterval(() => this.write(s, ': ping\n\n'), this.limits.heartbeatMs),
    };
    s.heartbeat.unref();
    this.streams.add(s);
    res.on('close', () => this.drop(s));
    res.on('drain', () => {
      s.backlog = 0;
      if (s.replaying) this.replay(s);
    });
    res.write('retry: 2000\n\n');
    if (opts.lastEventId !== undefined && opts.lastEventId < s.cursor) {
      const oldest = this.log.oldestId();
      if (oldest !== null && opts.lastEventId < oldest - 1) {
        res.write(`: events ${opts.lastEventId + 1}-${oldest - 1} are past the retention window; reconcile through the resource endpoints\n\n`);
      }
      s.cursor = opts.lastEventId;
      s.replaying = true;
      this.replay(s);
    }
  }

  /** Closes the streams opened with keys that no longer exist. */
  revoke(liveKeyIds: ReadonlySet<string>): number {
    let n = 0;
    for (const s of this.streams) {
      if (!liveKeyIds.has(s.keyId)) {
        s.res.end();
        this.drop(s);
        n++;
      }
    }
    return n;
  }

  closeAll(): void {
    this.closed = true;
    for (const s of this.streams) {
      s.res.end();
      this.drop(s);
    }
    this.unsubscribe();
  }

  private replay(s: Stream): void {
    // Synchronous reads: no event can be published between the last page and going live.
    // Stop whenever the socket is full and go on at 'drain', so history is never buffered whole.
    while (s.replaying) {
      const page = this.log.since(s.cursor, REPLAY_PAGE);
      for (const e of page) {
        if (s.res.writableNeedDrain) return;
        this.deliver(s, e);
      }
      if (page.length < REPLAY_PAGE) s.replaying = false;
    }
  }

  private deliver(s: Stream, e: StoredEvent): void {
    if (e.id <= s.cursor) return;
    s.cursor = e.id;
    if (!s.matches(e.name)) return;
    this.write(s, frame(e));
  }

  private write(s: Stream, text: string): void {
    if (s.res.destroyed || s.res.writableEnded) return;
    if (s.res.writableNeedDrain) s.backlog++;
    s.res.write(text);
    if (s.backlog > this.limits.maxBacklogEvents || s.res.writableLength > this.limits.maxBacklogBytes) {
      // Too far behind: cut the connection; the client reconnects with Last-Event-ID and catches up from the log.
      s.res.destroy();
      this.drop(s);
    }
  }

  private drop(s: Stream): void {
    clearInterval(s.heartbeat);
    this.streams.delete(s);
  }
}
