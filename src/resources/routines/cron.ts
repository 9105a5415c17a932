import { Cron } from 'croner';
import type { ErrorDetail } from '../../kernel/errors.js';

// Cron schedules, by croner (docs/routines.md says why that library): standard five fields with
// ranges, steps, lists and names, @daily-style aliases, IANA time zones. Daylight saving as Vixie
// cron does it: a job at a fixed time (no wildcard or step in minute and hour) that falls in a
// skipped hour fires once right after it, and once in a repeated hour; a job with a wildcard or a
// step keeps its pace in real time through both.

export interface Schedule {
  cron: string;
  timezone: string;
}

const FIELDS = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12 },
  { name: 'day of week', min: 0, max: 7 },
] as const;
const ALIASES = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly']);

const UTC = new Set(['UTC', 'Etc/UTC', 'Etc/GMT', 'GMT']);

/** UTC as a fixed offset: croner then computes without the platform's time zone data (a fifth of a firing's cost). */
const options = (timezone: string) => ({ ...(UTC.has(timezone) ? { utcOffset: 0 } : { timezone }), mode: '5-part' as const, fixedTimeRule: 'no-wildcard' as const, paused: true });

/** A time zone by IANA name (Europe/Berlin, UTC) that this Node knows; null if it does not. */
export function zoneProblem(timezone: string): string | null {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return null;
  } catch {
    return `unknown time zone "${timezone}"; use an IANA name such as "Europe/Berlin", "America/New_York" or "UTC"`;
  }
}

/** Croner's own words, without its class prefix. */
const words = (err: unknown) => String((err as Error).message ?? err).replace(/^Cron\w*:\s*/, '');

/**
 * What is wrong with a cron expression, naming the field and its position (1-based column in the
 * expression), or [] when it is valid. Paths start at `at` (body.schedule).
 */
export function cronProblems(expr: string, at: string): ErrorDetail[] {
  const path = `${at}.cron`;
  const text = expr.trim();
  if (text.startsWith('@')) {
    if (ALIASES.has(text.toLowerCase())) return [];
    return [{ path, message: `unknown alias "${text}" at position ${expr.indexOf('@') + 1}; use one of ${[...ALIASES].join(', ')}` }];
  }
  const parts = [...expr.matchAll(/\S+/g)];
  if (parts.length !== 5) {
    return [{ path, message: `has ${parts.length} field${parts.length === 1 ? '' : 's'}; a cron expression has 5: minute hour day-of-month month day-of-week (e.g. "0 9 * * MON")` }];
  }
  const problems: ErrorDetail[] = [];
  parts.forEach((m, i) => {
    const field = FIELDS[i]!;
    const token = m[0];
    const at1 = m.index! + 1;
    // Numbers out of the field's range, with their own position (croner counts some from 0).
    for (const n of token.matchAll(/\d+/g)) {
      const before = token[n.index! - 1];
      if (before === '/' || before === '#') continue;
      const v = Number(n[0]);
      if (v < field.min || v > field.max) {
        problems.push({ path, message: `${field.name} field "${token}" at position ${at1}: ${v} (at position ${at1 + n.index!}) is out of range ${field.min}-${field.max}` });
        return;
      }
    }
    // Everything else: the field alone in an otherwise match-all expression, as croner reads it.
    const probe = FIELDS.map((_, j) => (j === i ? token : '*')).join(' ');
    try {
      new Cron(probe, options('UTC'));
    } catch (err) {
      problems.push({ path, message: `${field.name} field "${token}" at position ${at1}: ${words(err)}` });
    }
  });
  if (problems.length) return problems;
  try {
    new Cron(expr, options('UTC'));
  } catch (err) {
    return [{ path, message: words(err) }];
  }
  return [];
}

/** Every problem of a schedule: its expression and its zone. */
export function scheduleProblems(s: Schedule, at: string): ErrorDetail[] {
  const zone = zoneProblem(s.timezone);
  return [...cronProblems(s.cron, at), ...(zone ? [{ path: `${at}.timezone`, message: zone }] : [])];
}

// Parsed schedules are kept, a few thousand at most: every routine's next time is computed from one.
const parsed = new Map<string, Cron>();
const MAX_PARSED = 5_000;

function cronOf(s: Schedule): Cron {
  const key = `${s.timezone}\n${s.cron}`;
  let c = parsed.get(key);
  if (!c) {
    if (parsed.size >= MAX_PARSED) parsed.delete(parsed.keys().next().value!);
    parsed.set(key, (c = new Cron(s.cron, options(s.timezone))));
  }
  return c;
}

/** The first firing time strictly after `t` (ms), or null when the expression has no more (Feb 30). */
export function nextAfter(s: Schedule, t: number): number | null {
  return cronOf(s).nextRun(new Date(t))?.getTime() ?? null;
}

/** The next `n` firing times after `t`. */
export function nextTimes(s: Schedule, t: number, n: number): number[] {
  const out: number[] = [];
  for (let at = nextAfter(s, t); at !== null && out.length < n; at = nextAfter(s, at)) out.push(at);
  return out;
}

/**
 * The firing times from `first` (itself a firing time) up to `now`: how many there are (counting at
 * most `cap`), the latest, and the next one after `now` (null when there is none). A daemon back
 * after a month of downtime on a minute schedule does not list 43,200 of them.
 */
export function dueSince(s: Schedule, first: number, now: number, cap = 1_000): { count: number; capped: boolean; last: number; next: number | null } {
  let count = 1;
  let last = first;
  let at = nextAfter(s, first);
  for (; at !== null && at <= now; at = nextAfter(s, at)) {
    if (count >= cap) {
      const prev = cronOf(s)
        .previousRuns(1, new Date(now + 1))[0]
        ?.getTime();
      return { count, capped: true, last: prev !== undefined && prev > last ? prev : last, next: nextAfter(s, now) };
    }
    count++;
    last = at;
  }
  return { count, capped: false, last, next: at };
}

const dateFormats = new Map<string, Intl.DateTimeFormat>();

/** The local calendar date (YYYY-MM-DD) of `t` in `timezone`. */
export function localDate(t: number, timezone: string): string {
  let f = dateFormats.get(timezone);
  if (!f) {
    if (dateFormats.size >= MAX_PARSED) dateFormats.clear();
    dateFormats.set(timezone, (f = new Intl.DateTimeFormat('en-CA', { timeZone: timezone, year: 'numeric', month: '2-digit', day: '2-digit' })));
  }
  return f.format(new Date(t));
}
