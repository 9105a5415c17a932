import type { ServerResponse } from 'node:http';
import { AppError } from '../kernel/errors.js';
import { monotonic, type Clock } from '../lib/clock.js';
import type { EventMatcher } from './filter.js';
import type { EventLog, StoredEvent } from './outbox.js';

export interface SseLimits {
  /** A `: ping` comment this often keeps proxies and clients from timing out. */
  heartbeatMs: number;
  /** A client this many matching events behind is disconnected. */
  maxBacklogEvents: number;
  /** …or this many bytes behind (what its socket still holds plus what it has not been sent). */
  maxBacklogBytes: number;
  /** …or whose socket has stayed full (the kernel's buffer and ours) this long: it stopped reading. */
  maxStallMs: number;
  /** Open streams at most, in all… */
  maxStreams: number;
  /** …and per API key. */
  maxStreamsPerKey: number;
}

export const DEFAULT_SSE_LIMITS: SseLimits = {
  heartbeatMs: 15_000,
  maxBacklogEvents: 1000,
  maxBacklogBytes: 1024 * 1024,
  maxStallMs: 30_000,
  maxStreams: 256,
  maxStreamsPerKey: 32,
};

const REPLAY_PAGE = 500;
/** Live frames are written at most this often per stream (see SseHub.queue). */
const FLUSH_MS = 2;
/** How long a client refused for the stream caps is asked to wait. */
const CAP_RETRY_AFTER_S = '5';

function sameFrames(a: string[], b: string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

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
  /** Opened by a board session (closed when the sessions are revoked). */
  session: boolean;
  /** When the session that opened it ends (epoch ms, the hub's clock): the stream is closed at its next heartbeat after. */
  endsAt: number | null;
  matches: EventMatcher;
  /** Highest event id handled (sent or filtered out). */
  cursor: number;
  /** The last event id when the stream opened: later events are counted in the lag while not live. */
  openedAt: number;
  /**
   * Live: events are written as they are published. Not live: the stream reads the durable log
   * from `cursor` as its socket drains (a Last-Event-ID replay, or a reader whose socket is full).
   */
  live: boolean;
  /** Matching events published while not live and not yet written, and their bytes. */
  lagEvents: number;
  lagBytes: number;
  /** When the socket was last found full (write() asked to wait for 'drain'); null once it drains. */
  fullSince: number | null;
  /** Live frames waiting for the end of this turn of the event loop (see queue()). */
  queued: string[];
  /** A next replay page is scheduled (pages are read one per turn of the event loop). */
  paging: boolean;
  dropped: boolean;
  heartbeat: NodeJS.Timeout;
}

/**
 * The live event streams.
 *
 * Nothing is buffered for a slow reader: once its socket reports that it is full
 * (`writableNeedDrain`: the kernel's send buffer is full and node's own buffer is past its
 * high-water mark), the stream stops writing and, at 'drain', reads what it missed from the durable
 * log page by page, exactly as a Last-Event-ID replay does. What the daemon holds for a stream is
 * then at most the socket's high-water mark plus a live batch (see queue()), whatever the client does.
 *
 * A client is still cut when it falls too far behind, rather than served from the log forever:
 * `maxBacklogEvents` matching events or `maxBacklogBytes` (its socket's buffer plus the frames it
 * has not been sent) behind, or a socket that stays full for `maxStallMs`. What the kernel holds
 * for a socket (about 4 MiB on Linux loopback) is invisible to node: a full socket is the sign it
 * is full, the stall bound and the reset on cutting release it, and the stream caps bound how many
 * such sockets there can be.
 */
export class SseHub {
  private readonly streams = new Set<Stream>();
  private readonly perKey = new Map<string, number>();
  private readonly unsubscribe: () => void;
  private readonly dirty: Stream[] = [];
  private flushTimer: { kind: 'immediate'; handle: NodeJS.Immediate } | { kind: 'timeout'; handle: NodeJS.Timeout } | null = null;
  private lastFlush = -Infinity;
  private closed = false;

  constructor(
    private readonly log: EventLog,
    /** The daemon's clock: when a board session's streams end, and how long a full socket has stalled. */
    private readonly clock: Pick<Clock, 'now'>,
    private readonly limits: SseLimits = DEFAULT_SSE_LIMITS,
  ) {
    this.unsubscribe = log.subscribe((e) => this.publish(e));
  }

  get size(): number {
    return this.streams.size;
  }

  /** Bytes the open streams' sockets hold in the daemon's memory, for tests and diagnostics (O(streams)). */
  bufferedBytes(): number {
    let n = 0;
    for (const s of this.streams) n += s.res.writableLength;
    return n;
  }

  async open(res: ServerResponse, opts: { keyId: string; session?: boolean; endsAt?: number; matches: EventMatcher; lastEventId?: number }): Promise<void> {
    // Shutting down: a stream opened now would hear nothing and hold its connection until the grace period ends.
    if (this.closed) throw new AppError('unavailable', 'The daemon is shutting down; reconnect shortly.');
    const { maxStreams, maxStreamsPerKey } = this.limits;
    if (this.streams.size >= maxStreams) {
      throw new AppError('unavailable', `The daemon already serves ${maxStreams} event streams, its limit; retry later.`, {
        headers: { 'Retry-After': CAP_RETRY_AFTER_S },
      });
    }
    const held = this.perKey.get(opts.keyId) ?? 0;
    if (held >= maxStreamsPerKey) {
      throw new AppError(
        'rate_limited',
        `This API key already holds ${maxStreamsPerKey} open event streams, the most one key may; close one, or use one stream with a filter listing every kind you need.`,
        { headers: { 'Retry-After': CAP_RETRY_AFTER_S } },
      );
    }
    // Where the stream starts, taken before its headers go out: every event heard after this one
    // reaches the stream, so a client that writes once it has them (through another daemon on a
    // shared state, whose events this daemon hears later) finds each of those events after it.
    const last = this.log.heardId();
    res.writeHead(200, SSE_HEADERS);
    res.flushHeaders();
    const s: Stream = {
      res,
      keyId: opts.keyId,
      session: opts.session === true,
      endsAt: opts.endsAt ?? null,
      matches: opts.matches,
      cursor: last,
      openedAt: last,
      live: true,
      lagEvents: 0,
      lagBytes: 0,
      fullSince: null,
      queued: [],
      paging: false,
      dropped: false,
      heartbeat: setInterval(() => this.tick(s), this.limits.heartbeatMs),
    };
    s.heartbeat.unref();
    this.streams.add(s);
    this.perKey.set(opts.keyId, held + 1);
    res.on('close', () => this.drop(s));
    res.on('drain', () => {
      s.fullSince = null;
      if (!s.live) this.catchUp(s);
    });
    res.write('retry: 2000\n\n');
    if (opts.lastEventId !== undefined && opts.lastEventId < s.cursor) {
      // Not live from here on: what is published meanwhile waits in the log for the replay.
      s.cursor = opts.lastEventId;
      s.live = false;
      s.paging = true;
      try {
        const oldest = await this.log.oldestId();
        if (oldest !== null && opts.lastEventId < oldest - 1 && !s.dropped) {
          res.write(`: events ${opts.lastEventId + 1}-${oldest - 1} are past the retention window; reconcile through the resource endpoints\n\n`);
        }
      } finally {
        s.paging = false;
      }
      this.catchUp(s);
    }
  }

  /** Closes the streams opened with keys that no longer exist. */
  revoke(liveKeyIds: ReadonlySet<string>): number {
    return this.closeWhere((s) => !liveKeyIds.has(s.keyId));
  }

  /** Closes the streams opened by board sessions (they were all signed out). */
  closeSessions(): number {
    return this.closeWhere((s) => s.session);
  }

  private closeWhere(which: (s: Stream) => boolean): number {
    let n = 0;
    for (const s of this.streams) {
      if (which(s)) {
        s.res.end();
        this.drop(s);
        n++;
      }
    }
    return n;
  }

  closeAll(): void {
    this.closed = true;
    this.flush();
    for (const s of this.streams) {
      s.res.end();
      this.drop(s);
    }
    this.unsubscribe();
  }

  private publish(e: StoredEvent): void {
    // Framed at most once, however many streams want it.
    let text: string | undefined;
    let bytes: number | undefined;
    for (const s of this.streams) {
      if (e.id <= s.cursor) continue;
      if (!s.matches(e.name)) {
        if (s.live) s.cursor = e.id;
        continue;
      }
      text ??= frame(e);
      if (s.live && !s.res.writableNeedDrain) {
        s.cursor = e.id;
        this.queue(s, text);
        continue;
      }
      // Not written: the log keeps it, and the stream catches up from there when its socket drains.
      if (s.live) {
        s.live = false;
        s.fullSince ??= this.clock.now();
      }
      s.lagEvents++;
      s.lagBytes += bytes ??= Buffer.byteLength(text);
      this.enforce(s);
    }
  }

  /**
   * Live frames are written in batches, at the end of the current turn of the event loop, and at
   * most once every FLUSH_MS: a socket write is a system call, and one per subscriber per event
   * made fan-out to 200 streams cost far more than the frames themselves. A quiet daemon writes at
   * once; a busy one gathers a few milliseconds of events into each write. Replay writes directly,
   * since it paces itself on the socket's drain.
   */
  private queue(s: Stream, text: string): void {
    if (s.queued.push(text) === 1) this.dirty.push(s);
    if (this.flushTimer) return;
    const wait = this.lastFlush + FLUSH_MS - monotonic();
    this.flushTimer = wait > 0 ? { kind: 'timeout', handle: setTimeout(() => this.flush(), wait) } : { kind: 'immediate', handle: setImmediate(() => this.flush()) };
  }

  private flush(): void {
    if (this.flushTimer?.kind === 'timeout') clearTimeout(this.flushTimer.handle);
    else if (this.flushTimer) clearImmediate(this.flushTimer.handle);
    this.flushTimer = null;
    this.lastFlush = monotonic();
    // Streams that heard the same events share one buffer (frames are the same strings).
    let shared: { frames: string[]; buf: Buffer } | null = null;
    for (const s of this.dirty.splice(0)) {
      const frames = s.queued;
      s.queued = [];
      if (!frames.length || s.dropped) continue;
      if (!shared || !sameFrames(shared.frames, frames)) shared = { frames, buf: Buffer.from(frames.join(''), 'utf8') };
      this.write(s, shared.buf);
    }
  }

  /** Reads the log from the stream's cursor and writes until the socket is full or the stream is live again. */
  private catchUp(s: Stream): void {
    if (s.paging || s.dropped) return;
    s.paging = true;
    this.page(s).then(
      (more) => {
        s.paging = false;
        if (!more) return;
        // A full page: the next one on a later turn, so a long replay never holds up other requests.
        s.paging = true;
        setImmediate(() => {
          s.paging = false;
          if (!s.dropped && !s.res.writableNeedDrain) this.catchUp(s);
        });
      },
      () => {
        // The state could not be read (an outage): the client reconnects with Last-Event-ID.
        s.paging = false;
        s.res.destroy();
        this.drop(s);
      },
    );
  }

  /** One page of a catch-up; true when a full page was written and more may follow. */
  private async page(s: Stream): Promise<boolean> {
    // Frames queued while it was live come first: they precede the cursor.
    if (s.queued.length) {
      const frames = s.queued;
      s.queued = [];
      this.write(s, frames.join(''));
      if (s.dropped) return false;
    }
    const page = await this.log.since(s.cursor, REPLAY_PAGE);
    if (s.dropped) return false;
    for (const e of page) {
      if (s.res.writableNeedDrain) {
        s.fullSince ??= this.clock.now();
        return false; // goes on at 'drain'
      }
      s.cursor = e.id;
      if (!s.matches(e.name)) continue;
      const text = frame(e);
      if (e.id > s.openedAt) {
        s.lagEvents = Math.max(0, s.lagEvents - 1);
        s.lagBytes = Math.max(0, s.lagBytes - Buffer.byteLength(text));
      }
      this.write(s, text);
      if (s.dropped) return false;
    }
    if (page.length < REPLAY_PAGE) {
      // Events heard while the page was read are in the log after it: read them too, then go
      // live (from here to going live nothing runs in between, so nothing is missed).
      if (this.log.heardId() > s.cursor) return this.page(s);
      s.live = true;
      s.lagEvents = 0;
      s.lagBytes = 0;
      return false;
    }
    return true;
  }

  private tick(s: Stream): void {
    if (s.endsAt !== null && this.clock.now() >= s.endsAt) {
      // Its session is over: the stream goes with it (the board then shows it is signed out).
      s.res.end();
      this.drop(s);
      return;
    }
    if (s.res.writableNeedDrain) {
      s.fullSince ??= this.clock.now();
      this.enforce(s);
    } else if (s.live) {
      this.write(s, ': ping\n\n');
    }
  }

  private write(s: Stream, text: string | Buffer): void {
    if (s.res.destroyed || s.res.writableEnded) return;
    s.res.write(text);
    if (s.res.writableNeedDrain) s.fullSince ??= this.clock.now();
    this.enforce(s);
  }

  /** Cuts a stream that is too far behind; the client reconnects with Last-Event-ID and catches up from the log. */
  private enforce(s: Stream): void {
    const { maxBacklogEvents, maxBacklogBytes, maxStallMs } = this.limits;
    const tooFar = s.lagEvents > maxBacklogEvents || s.res.writableLength + s.lagBytes > maxBacklogBytes || (s.fullSince !== null && this.clock.now() - s.fullSince > maxStallMs);
    if (!tooFar) return;
    // A reset, not a close: a close would leave what the kernel holds for the socket queued behind
    // a FIN the client never reads (an orphan socket, kept for minutes); a reset discards it now.
    const socket = s.res.socket;
    if (socket && !socket.destroyed) socket.resetAndDestroy();
    else s.res.destroy();
    this.drop(s);
  }

  private drop(s: Stream): void {
    if (s.dropped) return;
    s.dropped = true;
    s.queued = [];
    clearInterval(s.heartbeat);
    this.streams.delete(s);
    const held = (this.perKey.get(s.keyId) ?? 1) - 1;
    if (held > 0) this.perKey.set(s.keyId, held);
    else this.perKey.delete(s.keyId);
  }
}
