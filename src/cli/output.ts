import { io } from './io.js';

// How the CLI prints: tables and key/value blocks for people, JSON with --json. Colour only on a
// TTY and never when NO_COLOR is set. Tables fit the terminal: the widest text column gives way.

const paint = (open: string, close: string) => (s: string) => (io().color ? `\x1b[${open}m${s}\x1b[${close}m` : s);

export const style = {
  bold: paint('1', '22'),
  dim: paint('2', '22'),
  red: paint('31', '39'),
  yellow: paint('33', '39'),
  green: paint('32', '39'),
  cyan: paint('36', '39'),
};

export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
  /** This column shrinks (truncated with …) when the table is wider than the terminal. */
  flex?: boolean;
}

export function cell(v: unknown): string {
  if (v === null || v === undefined || v === '') return '-';
  if (Array.isArray(v)) return v.length ? v.map(cell).join(', ') : '-';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v).replace(/\s+/g, ' ');
}

/** The length a person sees (escape codes take no room). */
const visible = (s: string): number => [...s.replace(/\x1b\[[0-9;]*m/g, '')].length;

export function truncate(s: string, n: number): string {
  const chars = [...s];
  return chars.length > n ? chars.slice(0, Math.max(0, n - 1)).join('') + '…' : s;
}

const GAP = 2;
/** No column is squeezed below this, whatever the terminal: a few letters still identify a title. */
const MIN_FLEX = 12;

/**
 * Lays rows out in columns. When the table is wider than the terminal, the flex columns (titles,
 * descriptions; by default the last column) are cut to what is left, the widest first.
 */
export function table<T>(rows: T[], columns: Column<T>[], empty = 'nothing to show', width = io().columns): string {
  if (!rows.length) return style.dim(`(${empty})`) + '\n';
  const cells = rows.map((r) => columns.map((c) => cell(c.value(r))));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((r) => visible(r[i]!))));
  const flex = columns.some((c) => c.flex) ? columns.map((c) => Boolean(c.flex)) : columns.map((_, i) => i === columns.length - 1);
  let excess = widths.reduce((a, b) => a + b, 0) + GAP * (columns.length - 1) - width;
  while (excess > 0) {
    let widest = -1;
    for (let i = 0; i < widths.length; i++) if (flex[i] && widths[i]! > MIN_FLEX && (widest < 0 || widths[i]! > widths[widest]!)) widest = i;
    if (widest < 0) break;
    const cut = Math.min(excess, widths[widest]! - MIN_FLEX);
    widths[widest]! -= cut;
    excess -= cut;
  }
  const fit = (v: string, i: number) => (visible(v) > widths[i]! ? truncate(v, widths[i]!) : v);
  const line = (vals: string[]) =>
    vals
      .map((v, i) => {
        const f = fit(v, i);
        return i === vals.length - 1 ? f : f + ' '.repeat(Math.max(0, widths[i]! - visible(f)));
      })
      .join(' '.repeat(GAP));
  return [style.bold(line(columns.map((c) => c.header))), ...cells.map(line)].join('\n') + '\n';
}

export function keyValues(obj: Record<string, unknown>): string {
  const keys = Object.keys(obj);
  const width = Math.max(...keys.map((k) => k.length));
  return keys.map((k) => `${style.bold(k.padEnd(width))}  ${cell(obj[k])}`).join('\n') + '\n';
}

export function out(text: string): void {
  io().stdout.write(text);
}

export function err(text: string): void {
  io().stderr.write(text);
}

export function printJson(data: unknown): void {
  out(JSON.stringify(data, null, 2) + '\n');
}

/** Prints `data` as JSON with --json, else as the human rendering. */
export function emit(json: boolean, data: unknown, human: () => string): void {
  if (json) printJson(data);
  else out(human());
}

/** The next-page hint, on stderr so that --json output stays one JSON document. */
export function nextPageHint(command: string, next: unknown): void {
  if (typeof next === 'string' && next) err(style.dim(`more: ${command} --cursor ${next}\n`));
}
