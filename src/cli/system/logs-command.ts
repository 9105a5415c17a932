import { Command } from 'commander';
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { localAction, parseIntOption } from '../action.js';
import { projectRoot, UsageError } from '../context.js';
import { prettyLogSink } from '../log-format.js';
import { out } from '../output.js';
import { CONFIG_FILE } from '../../config/find.js';
import { statePaths } from '../../state-dir.js';

// `svc logs`: the daemon's log file (JSON lines, for machines) printed for people, and followed.

const FOLLOW_POLL_MS = 200;
/** Reading backwards this much at a time to find the last N lines of a large file. */
const CHUNK = 64 * 1024;

/** The last `n` lines of the file, reading only its end, and the size they end at. */
export function tailLines(file: string, n: number): { lines: string[]; size: number } {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return { lines: [], size: 0 };
  }
  try {
    const size = statSync(file).size;
    let pos = size;
    let text = '';
    while (pos > 0 && text.split('\n').length <= n + 1) {
      const len = Math.min(CHUNK, pos);
      pos -= len;
      const buf = Buffer.alloc(len);
      readSync(fd, buf, 0, len, pos);
      text = buf.toString('utf8') + text;
    }
    const lines = text.split('\n').filter((l) => l !== '');
    // slice(-0) is the whole list: -n 0 means none.
    return { lines: n > 0 ? lines.slice(-n) : [], size };
  } finally {
    closeSync(fd);
  }
}

/** Calls onLine for each line appended after `from`; starts over when the file is rotated or truncated. */
export async function follow(file: string, from: number, onLine: (line: string) => void, signal: AbortSignal): Promise<void> {
  let pos = from;
  let partial = '';
  while (!signal.aborted) {
    let size = 0;
    try {
      size = statSync(file).size;
    } catch {
      size = 0;
    }
    if (size < pos) {
      pos = 0;
      partial = '';
    }
    if (size > pos) {
      const fd = openSync(file, 'r');
      try {
        const buf = Buffer.alloc(size - pos);
        readSync(fd, buf, 0, buf.length, pos);
        pos = size;
        const text = partial + buf.toString('utf8');
        const lines = text.split('\n');
        partial = lines.pop()!;
        for (const l of lines) if (l) onLine(l);
      } finally {
        closeSync(fd);
      }
    }
    // The timer's abort listener goes with it (one added per poll and never removed piled up:
    // MaxListenersExceededWarning after 3 s).
    await sleep(FOLLOW_POLL_MS, undefined, { signal }).catch(() => undefined);
  }
}

export function logsCommand(): Command {
  return new Command('logs')
    .description("Print the daemon's log (.svc/logs/daemon.log), readable; --json prints its JSON lines as they are")
    .option('-n, --lines <n>', 'how many of the last lines to print (default 50)', parseIntOption('--lines'))
    .option('-f, --follow', 'keep printing new lines as they come (Ctrl-C to stop)')
    .action(
      localAction(async (globals, o: { lines?: number; follow?: boolean }) => {
        const root = projectRoot(globals);
        if (!root) throw new UsageError(`no ${CONFIG_FILE} here or in any parent directory`, 'pass --project DIR');
        const n = o.lines ?? 50;
        if (n < 0) throw new UsageError('--lines must be 0 or more');
        const file = join(statePaths(root).logs, 'daemon.log');
        const write = globals.json ? (line: string) => out(line + '\n') : prettyLogSink(out);
        const { lines, size } = tailLines(file, n);
        if (!size && !o.follow) throw new UsageError(`no log yet at ${file}`, 'the daemon writes it once `svc serve` has started');
        if (!o.follow) {
          for (const l of lines) write(l);
          return;
        }
        // Ctrl-C is ours before the first line shows: one pressed as soon as output appears ends
        // the command cleanly (exit 0) instead of killing it by the signal's default action.
        const abort = new AbortController();
        const stop = () => abort.abort();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
        try {
          for (const l of lines) write(l);
          await follow(file, size, write, abort.signal);
        } finally {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
        }
      }),
    );
}
