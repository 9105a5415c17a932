// What holds a run, in the CLI's words, with wall-clock times in the viewer's own time zone:
// "anthropic's usage limit, resets at 15:00" (the CLI says "in 2h").

import { holdWords } from '../../src/resources/runs/hold-words.js';
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

/** Why a run waits, in a few words (the CLI's words, src/resources/runs/hold-words.ts); null when nothing holds it. */
export const waitText = (hold: Hold | null | undefined, now = new Date()): string | null => holdWords(hold, (iso) => `at ${clockTime(iso, now)}`);
