import { style } from './output.js';
import { systemClock } from '../lib/clock.js';

// The daemon's log records (one JSON object per line, as written to .svc/logs/daemon.log) made
// readable: the serve command's terminal output and `svc logs` go through here. The log file
// itself always keeps the JSON lines.

export type LogRecord = { time?: string; level?: string; msg?: string } & Record<string, unknown>;

const clock = (iso: unknown): string => {
  const d = new Date(typeof iso === 'string' ? iso : systemClock.now());
  return Number.isNaN(d.getTime()) ? '--:--:--' : d.toTimeString().slice(0, 8);
};

function statusColour(status: number): (s: string) => string {
  if (status >= 500) return style.red;
  if (status >= 400) return style.yellow;
  if (status >= 300) return style.cyan;
  return style.green;
}

const level = (l: unknown): string => {
  if (l === 'error') return style.red('error');
  if (l === 'warn') return style.yellow('warn ');
  if (l === 'debug') return style.dim('debug');
  return style.dim('info ');
};

const HIDDEN = new Set(['time', 'level', 'msg', 'stack']);

function fields(r: LogRecord): string {
  return Object.entries(r)
    .filter(([k, v]) => !HIDDEN.has(k) && v !== undefined && v !== null)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? (/\s/.test(v) ? JSON.stringify(v) : v) : JSON.stringify(v)}`)
    .join(' ');
}

/** The first line of a reason, cut short: a D-Bus error is not for the terminal. */
export function shortReason(text: string, max = 80): string {
  const first = text.split('\n')[0]!.trim();
  return first.length > max ? first.slice(0, max - 1) + '…' : first;
}

/** One record as one line; `vaultSource` completes the start line. */
export function formatRecord(r: LogRecord, vaultSource?: string): string {
  const t = style.dim(clock(r.time));
  if (r.msg === 'request' && typeof r.status === 'number') {
    const ms = typeof r.ms === 'number' ? `${r.ms < 10 ? r.ms : Math.round(r.ms)} ms` : '';
    return `${t} ${statusColour(r.status)(String(r.status))} ${r.method} ${r.path} ${style.dim(ms)}`.trimEnd();
  }
  if (r.msg === 'listening') {
    const vault = vaultSource ? `, vault key from ${vaultSource}` : '';
    return `${style.bold(`svc ${String(r.version ?? '')}`)} listening on ${style.cyan(String(r.url))} — project ${style.bold(String(r.project ?? '?'))}${vault}`;
  }
  if (r.msg === 'vault master key' && typeof r.keychainSkipped === 'string' && r.keychainSkipped !== 'SVC_KEYCHAIN=off') {
    return `${t} ${level('warn')} OS keychain unavailable (${shortReason(r.keychainSkipped.replace(/^the OS keychain is unavailable: /, ''))}); the vault key is in a file`;
  }
  const rest = fields(r);
  return `${t} ${level(r.level)} ${r.msg ?? ''}${rest ? ' ' + style.dim(rest) : ''}`;
}

/**
 * A sink for the daemon's JSON lines that writes them readable. Stateful only in what it has seen:
 * the vault's key source, logged before the start line that names it. With `quietStart` (the
 * serve command's terminal) the informational lines before the start line are left to the file.
 */
export function prettyLogSink(write: (text: string) => void, opts: { quietStart?: boolean } = {}): (lines: string) => void {
  let vaultSource: string | undefined;
  let started = !opts.quietStart;
  const one = (line: string) => {
    let r: LogRecord;
    try {
      r = JSON.parse(line) as LogRecord;
    } catch {
      write(line + '\n');
      return;
    }
    if (r.msg === 'vault master key') {
      vaultSource = typeof r.source === 'string' ? r.source : undefined;
      if (!(typeof r.keychainSkipped === 'string' && r.keychainSkipped !== 'SVC_KEYCHAIN=off')) return;
    } else if (!started && r.level !== 'warn' && r.level !== 'error' && r.msg !== 'listening' && r.msg !== 'request') {
      // Start-up details stay in the log file: the terminal gets one start line, and any warning.
      // A request is never a start-up detail (a client that knows the port may come early).
      return;
    }
    if (r.msg === 'listening') started = true;
    write(formatRecord(r, vaultSource) + '\n');
  };
  // The daemon hands on its lines in batches: one or more whole lines per call.
  return (lines) => {
    for (const line of lines.split('\n')) if (line) one(line);
  };
}
