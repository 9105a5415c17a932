// What holds a run, in the board's words, with wall-clock times in the viewer's own time zone:
// "anthropic paused until 15:00". (`svc runs queue` says the same with relative times, "resets in
// 2h": holdText in src/resources/runs/command.ts, a CLI module the board cannot bundle.)

import type { Hold } from './types.js';

const pad = (n: number): string => String(n).padStart(2, '0');

/**
 * "15:00" today, "Tue, Dec 2 00:00" another day, in the viewer's time zone; rounded up to the
 * minute, so a pause never reads as over before it is.
 */
export function clockTime(iso: string, now = new Date()): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  const t = new Date(Math.ceil(ms / 60_000) * 60_000);
  const hm = `${pad(t.getHours())}:${pad(t.getMinutes())}`;
  return t.toDateString() === now.toDateString() ? hm : `${t.toLocaleDateString(undefined, { weekday: 'short', day: 'numeric', month: 'short' })} ${hm}`;
}

/** Why a run waits, in a few words; null when nothing holds it. */
export function waitText(hold: Hold | null | undefined, now = new Date()): string | null {
  if (!hold) return null;
  switch (hold.kind) {
    case 'provider':
      return `${hold.provider} paused until ${clockTime(hold.until, now)}`;
    case 'backoff':
      return `retry backoff until ${clockTime(hold.until, now)}`;
    case 'budget':
      return `${hold.scope === 'agent' ? `${hold.agent}'s` : "the project's"} ${hold.period} budget is spent, until ${clockTime(hold.until, now)}`;
    case 'resume':
      return 'paused: waits for someone to resume it';
    case 'concurrency':
      return `concurrency: ${hold.running} of ${hold.limit} running`;
    case 'slots':
      return `the runner is full: ${hold.running} of ${hold.capacity} slots`;
  }
}
