import { systemClock } from './clock.js';

// Values as people read them in tables: short ids, relative times, sizes and durations. --json
// output never goes through here; it keeps full ids and ISO times. The CLI's, the board's (web/)
// and the daemon's words (a notification names the `svc … show <id>` to run), so in lib/ and
// free of node: modules.

/**
 * The id as tables print it: its last 8 characters. UUID v7 ids begin with their creation time,
 * so ids made within a minute share their first characters; the end is random.
 */
export const shortId = (id: string | null | undefined): string | null => (id ? id.slice(-8) : null);

/** A short age for people: 45s, 3m, 2h, 5d. */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 48 * 3600) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

/**
 * Time left until a deadline, rounded up (599 s is "10m", not "9m": never promise less time than
 * is left); "now" once it has passed.
 */
export function formatRemaining(ms: number): string {
  const s = Math.ceil(ms / 1000);
  if (s <= 0) return 'now';
  if (s < 60) return `${s}s`;
  const m = Math.ceil(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.ceil(s / 3600);
  if (h < 48) return `${h}h`;
  return `${Math.ceil(s / 86400)}d`;
}

/** "3m ago" for a past instant, "in 2h" for a future one, null for none. Ages are for people: the wall clock unless the caller says. */
export function relativeTime(iso: string | null | undefined, now: number = systemClock.now()): string | null {
  if (!iso) return null;
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const d = t - now;
  if (Math.abs(d) < 1000) return 'just now';
  return d < 0 ? `${formatAge(-d)} ago` : `in ${formatRemaining(d)}`;
}

/** 1h 02m, 3m 05s, 12s: an uptime or a duration. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  const two = (n: number) => String(n).padStart(2, '0');
  if (d) return `${d}d ${h}h`;
  if (h) return `${h}h ${two(m)}m`;
  if (m) return `${m}m ${two(sec)}s`;
  return `${sec}s`;
}

/** 950, 12.3k, 4.5M: a count of tokens. */
export function formatTokens(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(n < 10_000_000 ? 1 : 0)}M`;
}

/** 512 B, 1.5 KiB, 23.4 MiB. */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}
