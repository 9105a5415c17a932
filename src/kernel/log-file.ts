import { closeSync, fstatSync, openSync, renameSync, rmSync, write, writeSync } from 'node:fs';
import { join } from 'node:path';
import { systemClock } from '../lib/clock.js';
import { ensurePrivateDir } from '../lib/files.js';
import { nowIso } from '../lib/time.js';

// .svc/logs/daemon.log: appended without blocking the event loop, rotated by size while the
// daemon runs (daemon.log → daemon.log.1 → … → daemon.log.<keep>, the oldest dropped), so a busy
// daemon's log stays bounded at about (keep + 1) × maxBytes.

export interface LogFileOptions {
  /** Rotate before a write would take the file past this size. */
  maxBytes: number;
  /** Rotated files kept beside the live one. */
  keep: number;
  /**
   * Text waiting for the disk beyond this is dropped (and counted in a line once the disk catches
   * up): a stalled disk must cost bounded memory, never the daemon.
   */
  maxQueuedBytes: number;
}

export const DEFAULT_LOG_FILE: LogFileOptions = { maxBytes: 10 * 1024 * 1024, keep: 3, maxQueuedBytes: 8 * 1024 * 1024 };

/** How long a clean close waits for a stream target (stdout) whose reader may have stopped reading. */
const STREAM_CLOSE_WAIT_MS = 1_000;

export class LogFile {
  /** The file, or '' when writing to an inherited descriptor (stdout). */
  readonly file: string;
  private fd: number;
  private size: number;
  private readonly ownsFd: boolean;
  private queue: Buffer[] = [];
  private queuedBytes = 0;
  private dropped = 0;
  private writing = false;
  private closed = false;
  private idle: (() => void)[] = [];

  /**
   * `{ dir }`: the file `name` there, rotated. `{ fd }`: an inherited descriptor such as stdout,
   * written off the event loop (a pipe or terminal that reads slowly then stalls a worker thread,
   * not the daemon), never rotated or closed.
   */
  constructor(
    target: { dir: string; name?: string } | { fd: number },
    private readonly opts: LogFileOptions = DEFAULT_LOG_FILE,
  ) {
    if ('fd' in target) {
      this.file = '';
      this.fd = target.fd;
      this.size = 0;
      this.ownsFd = false;
    } else {
      ensurePrivateDir(target.dir);
      this.file = join(target.dir, target.name ?? 'daemon.log');
      this.fd = openSync(this.file, 'a', 0o600);
      this.size = fstatSync(this.fd).size;
      this.ownsFd = true;
    }
  }

  /** Queues whole lines (text, or its UTF-8, which is kept as it is: never change it after); they reach the file in order, in the background. */
  write(lines: string | Buffer): void {
    if (this.closed) return;
    const bytes = typeof lines === 'string' ? Buffer.from(lines, 'utf8') : lines;
    if (this.queuedBytes + bytes.length > this.opts.maxQueuedBytes) {
      this.dropped++;
      return;
    }
    this.queue.push(bytes);
    this.queuedBytes += bytes.length;
    if (!this.writing) this.next();
  }

  /** Resolves once everything queued so far is in the file. */
  flushed(): Promise<void> {
    if (!this.writing) return Promise.resolve();
    return new Promise((r) => this.idle.push(r));
  }

  /** Writes what is still queued and closes the file (a clean shutdown loses no line). */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.ownsFd) {
      await this.flushed();
    } else {
      // A reader that stopped reading must not hold the shutdown: wait a while, then give up.
      let timer: NodeJS.Timeout | undefined;
      const gaveUp = await Promise.race([this.flushed().then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), STREAM_CLOSE_WAIT_MS)))]);
      clearTimeout(timer);
      this.closed = true;
      if (gaveUp) return;
    }
    this.closed = true;
    const rest = this.take();
    try {
      if (rest.length) {
        if (this.ownsFd) this.rotateIfFull(rest.length);
        writeSync(this.fd, rest);
      }
    } catch {
      // A full disk must not stop the shutdown.
    }
    if (this.ownsFd) closeSync(this.fd);
  }

  private take(): Buffer {
    const parts = this.queue;
    this.queue = [];
    this.queuedBytes = 0;
    if (this.dropped) {
      parts.push(Buffer.from(JSON.stringify({ time: nowIso(systemClock), level: 'warn', msg: 'log lines dropped: the disk did not keep up', count: this.dropped }) + '\n', 'utf8'));
      this.dropped = 0;
    }
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }

  private next(): void {
    if (!this.queue.length && !this.dropped) {
      this.writing = false;
      for (const r of this.idle.splice(0)) r();
      return;
    }
    this.writing = true;
    const buf = this.take();
    try {
      if (this.ownsFd) this.rotateIfFull(buf.length);
    } catch {
      // Rotation failed (permissions, disk): keep appending to the current file.
    }
    this.append(buf, 0);
  }

  private append(buf: Buffer, offset: number): void {
    write(this.fd, buf, offset, buf.length - offset, null, (err, n) => {
      if (err?.code === 'EAGAIN') {
        // A non-blocking pipe that is full: try again shortly rather than lose the lines.
        setTimeout(() => this.append(buf, offset), 10);
        return;
      }
      if (err) {
        // A full disk must not take the daemon down with it: this chunk is lost, later ones may land.
        this.next();
        return;
      }
      this.size += n;
      if (offset + n < buf.length) this.append(buf, offset + n);
      else this.next();
    });
  }

  /**
   * Runs only between writes, never while one is in flight (it swaps the descriptor). The old file
   * is renamed while still open, so a failed rename leaves the current file in use.
   */
  private rotateIfFull(incoming: number): void {
    if (this.size === 0 || this.size + incoming <= this.opts.maxBytes) return;
    rmSync(`${this.file}.${this.opts.keep}`, { force: true });
    for (let i = this.opts.keep - 1; i >= 1; i--) {
      try {
        renameSync(`${this.file}.${i}`, `${this.file}.${i + 1}`);
      } catch {
        // that generation does not exist yet
      }
    }
    if (this.opts.keep > 0) renameSync(this.file, `${this.file}.1`);
    else rmSync(this.file, { force: true });
    const fd = openSync(this.file, 'a', 0o600);
    closeSync(this.fd);
    this.fd = fd;
    this.size = 0;
  }
}
