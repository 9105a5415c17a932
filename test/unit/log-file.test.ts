import { execFileSync } from 'node:child_process';
import { closeSync, constants, fstatSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LogFile } from '../../src/kernel/log-file.js';
import { lineBuffer } from '../../src/kernel/log.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  vi.useRealTimers();
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'svc-logfile-'));
  dirs.push(d);
  return join(d, 'logs');
}
const line = (i: number) => JSON.stringify({ msg: 'request', i, pad: 'x'.repeat(80) }) + '\n';
/** Every line of daemon.log and its rotated files, oldest file first. */
function readAll(dir: string): string[] {
  const files = readdirSync(dir).sort((a, b) => b.length - a.length || b.localeCompare(a));
  return files.flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter(Boolean));
}

describe('LogFile', () => {
  it('rotates while open, keeps `keep` rotated files, and never splits a line across files', async () => {
    const dir = tempDir();
    const log = new LogFile({ dir }, { maxBytes: 2_000, keep: 3, maxQueuedBytes: 1 << 20 });
    for (let i = 0; i < 400; i++) {
      log.write(line(i));
      // Writes land between turns of the event loop, as requests would arrive.
      if (i % 10 === 9) await log.flushed();
    }
    await log.flushed();
    expect(readdirSync(dir).sort()).toEqual(['daemon.log', 'daemon.log.1', 'daemon.log.2', 'daemon.log.3']);
    for (const f of readdirSync(dir)) {
      expect(statSync(join(dir, f)).size, f).toBeLessThanOrEqual(2_000);
      expect(statSync(join(dir, f)).mode & 0o777, f).toBe(0o600);
    }
    const kept = readAll(dir).map((l) => JSON.parse(l).i as number);
    // The newest lines survive, consecutive and in order up to the last one written.
    expect(kept.at(-1)).toBe(399);
    expect(kept).toEqual(Array.from({ length: kept.length }, (_, k) => 400 - kept.length + k));
    await log.close();
  });

  it('loses nothing at a clean close, even with writes still queued', async () => {
    const dir = tempDir();
    const log = new LogFile({ dir }, { maxBytes: 1 << 20, keep: 3, maxQueuedBytes: 1 << 20 });
    for (let i = 0; i < 1000; i++) log.write(line(i));
    await log.close();
    expect(readAll(dir).map((l) => JSON.parse(l).i)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    log.write(line(1000)); // after close: ignored, not thrown
  });

  it('appends to the file a previous run left', async () => {
    const dir = tempDir();
    const first = new LogFile({ dir }, { maxBytes: 1 << 20, keep: 3, maxQueuedBytes: 1 << 20 });
    first.write(line(1));
    await first.close();
    const second = new LogFile({ dir }, { maxBytes: 1 << 20, keep: 3, maxQueuedBytes: 1 << 20 });
    second.write(line(2));
    await second.close();
    expect(readAll(dir).map((l) => JSON.parse(l).i)).toEqual([1, 2]);
  });

  it('bounds what waits for a slow disk, and says how many lines it dropped', async () => {
    const dir = tempDir();
    const log = new LogFile({ dir }, { maxBytes: 1 << 20, keep: 3, maxQueuedBytes: 1_000 });
    // The first write is in flight at once; the queue behind it holds at most 1,000 bytes.
    for (let i = 0; i < 50; i++) log.write(line(i));
    await log.close();
    const lines = readAll(dir).map((l) => JSON.parse(l));
    const dropped = lines.find((l) => l.msg === 'log lines dropped: the disk did not keep up');
    expect(dropped).toBeDefined();
    expect(lines.filter((l) => l.msg === 'request').length + dropped.count).toBe(50);
  });
});

describe('LogFile on an inherited descriptor (stdout)', () => {
  it('writes in order and leaves the descriptor open', async () => {
    const dir = tempDir();
    execFileSync('mkdir', ['-p', dir]);
    const fd = openSync(join(dir, 'out'), 'a');
    const out = new LogFile({ fd }, { maxBytes: 100, keep: 3, maxQueuedBytes: 1 << 20 });
    for (let i = 0; i < 50; i++) out.write(line(i));
    await out.close();
    expect(fstatSync(fd).size).toBeGreaterThan(100); // never rotated, still open
    closeSync(fd);
    expect(
      readFileSync(join(dir, 'out'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l).i),
    ).toEqual(Array.from({ length: 50 }, (_, i) => i));
  });

  it('does not hold the shutdown when the reader stopped reading (a full pipe)', async () => {
    const dir = tempDir();
    execFileSync('mkdir', ['-p', dir]);
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    // Opened read-write so the open does not wait for a reader; nobody reads until the end.
    const fd = openSync(fifo, constants.O_RDWR);
    const out = new LogFile({ fd }, { maxBytes: 1 << 20, keep: 3, maxQueuedBytes: 1 << 20 });
    for (let i = 0; i < 2000; i++) out.write(line(i)); // ~200 KB: more than a pipe holds
    // Without the bounded wait this never resolves, and the test fails on its timeout.
    await out.close();
    out.write(line(0)); // closed: ignored
    // Drain the pipe so the worker thread blocked on it can finish.
    const buf = Buffer.alloc(1 << 16);
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    for (let i = 0; i < 100; i++) {
      try {
        if (readSync(reader, buf) === 0) break;
      } catch {
        await new Promise((r) => setTimeout(r, 10));
      }
    }
    closeSync(reader);
    closeSync(fd);
  });
});

describe('lineBuffer', () => {
  it('hands lines on joined after the delay, whole and in order; flush() at once and leaves no timer', () => {
    vi.useFakeTimers();
    const chunks: string[] = [];
    const buf = lineBuffer((c) => chunks.push(c.toString('utf8')), { delayMs: 25 });
    buf.push('a\n');
    buf.push('b\n');
    vi.advanceTimersByTime(24);
    expect(chunks).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(chunks).toEqual(['a\nb\n']);
    buf.push('c\n');
    buf.flush();
    expect(chunks).toEqual(['a\nb\n', 'c\n']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('hands lines on early once maxBytes wait', () => {
    vi.useFakeTimers();
    const chunks: string[] = [];
    const buf = lineBuffer((c) => chunks.push(c.toString('utf8')), { delayMs: 1000, maxBytes: 10 });
    buf.push('12345\n');
    expect(chunks).toEqual([]);
    buf.push('67890\n');
    expect(chunks).toEqual(['12345\n67890\n']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('hands on UTF-8, whole lines in order, a line longer than a batch too, and never changes a chunk it handed on', () => {
    vi.useFakeTimers();
    const chunks: Buffer[] = [];
    const buf = lineBuffer((c) => chunks.push(c), { delayMs: 1000, maxBytes: 64 });
    const lines = ['é日本\n', 'a'.repeat(40) + '\n', '\u{1F600}\n', 'x'.repeat(20_000) + '\n', 'tail\n'];
    for (const l of lines) buf.push(l);
    buf.flush();
    const copies = chunks.map((c) => Buffer.from(c));
    // More lines after: the chunks handed on stay as they were.
    for (let i = 0; i < 100; i++) buf.push(`later ${i}\n`);
    buf.flush();
    expect(chunks.slice(0, copies.length)).toEqual(copies);
    expect(Buffer.concat(chunks).toString('utf8')).toBe(lines.join('') + Array.from({ length: 100 }, (_, i) => `later ${i}\n`).join(''));
    // Each chunk ends at a line's end.
    for (const c of chunks) expect(c.at(-1)).toBe(0x0a);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('makes room for a line by its UTF-8 size, not its length: a wide line after a nearly full batch is whole', () => {
    const chunks: Buffer[] = [];
    const buf = lineBuffer((c) => chunks.push(c), { delayMs: 1000, maxBytes: 4096 });
    const lines = [`${'a'.repeat(4094)}\n`, `${'日'.repeat(2000)}\n`, 'b\n'];
    for (const l of lines) buf.push(l);
    buf.flush();
    expect(Buffer.concat(chunks).toString('utf8')).toBe(lines.join(''));
  });

  it("a quiet daemon's one-line batches share one buffer (what a stalled target holds stays near what it queued)", () => {
    vi.useFakeTimers();
    const chunks: Buffer[] = [];
    const buf = lineBuffer((c) => chunks.push(c), { delayMs: 25 });
    for (let i = 0; i < 50; i++) {
      buf.push(`line ${i}\n`);
      vi.advanceTimersByTime(25);
    }
    expect(chunks).toHaveLength(50);
    expect(new Set(chunks.map((c) => c.buffer)).size).toBe(1);
    expect(chunks.map((c) => c.toString('utf8'))).toEqual(Array.from({ length: 50 }, (_, i) => `line ${i}\n`));
  });
});
