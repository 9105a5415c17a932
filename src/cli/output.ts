// How the CLI prints: tables and key/value blocks for people, JSON with --json. Colour only on a
// TTY and never when NO_COLOR is set.

const useColor = (): boolean => Boolean(process.stdout.isTTY) && !process.env.NO_COLOR;

export const style = {
  bold: (s: string) => (useColor() ? `\x1b[1m${s}\x1b[22m` : s),
  dim: (s: string) => (useColor() ? `\x1b[2m${s}\x1b[22m` : s),
  red: (s: string) => (useColor() ? `\x1b[31m${s}\x1b[39m` : s),
  yellow: (s: string) => (useColor() ? `\x1b[33m${s}\x1b[39m` : s),
  green: (s: string) => (useColor() ? `\x1b[32m${s}\x1b[39m` : s),
};

export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
}

export function cell(v: unknown): string {
  if (v === null || v === undefined || v === '') return '-';
  if (Array.isArray(v)) return v.length ? v.map(cell).join(', ') : '-';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v).replace(/\s+/g, ' ');
}

export function table<T>(rows: T[], columns: Column<T>[], empty = 'nothing to show'): string {
  if (!rows.length) return style.dim(`(${empty})`) + '\n';
  const cells = rows.map((r) => columns.map((c) => truncate(cell(c.value(r)), 60)));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((r) => r[i]!.length)));
  const line = (vals: string[]) => vals.map((v, i) => (i === vals.length - 1 ? v : v.padEnd(widths[i]!))).join('  ');
  return [style.bold(line(columns.map((c) => c.header))), ...cells.map(line)].join('\n') + '\n';
}

export function keyValues(obj: Record<string, unknown>): string {
  const keys = Object.keys(obj);
  const width = Math.max(...keys.map((k) => k.length));
  return keys.map((k) => `${style.bold(k.padEnd(width))}  ${cell(obj[k])}`).join('\n') + '\n';
}

function truncate(s: string, n: number): string {
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

export function printJson(data: unknown): void {
  process.stdout.write(JSON.stringify(data, null, 2) + '\n');
}

/** Prints `data` as JSON with --json, else as the human rendering. */
export function emit(json: boolean, data: unknown, human: () => string): void {
  if (json) printJson(data);
  else process.stdout.write(human());
}
