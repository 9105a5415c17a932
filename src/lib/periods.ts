// Calendar periods, as budgets count them: a day, an ISO week (from Monday) or a calendar month, in
// a time zone. Pure functions of an instant and an IANA zone name, so every boundary (DST changes
// included) is unit-tested with fixed instants. In lib/ because project.json's schema (config/)
// checks budgets' periods and zones too.

export const BUDGET_PERIODS = ['day', 'week', 'month'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

/** [start, end) of a period, as epoch milliseconds. */
export interface PeriodBounds {
  start: number;
  end: number;
}

/** Whether Intl knows the zone (an IANA name such as Europe/Paris, or UTC). */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

// Formatters are costly to build: one per zone, and zones are few (project.json names one).
const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    if (formatters.size > 64) formatters.clear();
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    formatters.set(zone, f);
  }
  return f;
}

/** The wall-clock date and time of instant `t` in `zone`. */
function wallClock(t: number, zone: string): { y: number; m: number; d: number; h: number; mi: number; s: number } {
  const p = new Map(
    formatter(zone)
      .formatToParts(new Date(t))
      .map((x) => [x.type, Number(x.value)]),
  );
  return { y: p.get('year')!, m: p.get('month')!, d: p.get('day')!, h: p.get('hour')!, mi: p.get('minute')!, s: p.get('second')! };
}

/** How far `zone`'s wall clock is ahead of UTC at instant `t`, in ms. */
function offsetAt(t: number, zone: string): number {
  const w = wallClock(t, zone);
  return Date.UTC(w.y, w.m - 1, w.d, w.h, w.mi, w.s) - Math.floor(t / 1000) * 1000;
}

/**
 * The instant the wall clock of `zone` reads 00:00 on the date y-m-d (month from 1; days past the
 * month's end roll over, as Date.UTC's do). Where midnight does not exist (a DST change at 00:00),
 * the first instant of that date.
 */
export function zonedMidnight(y: number, m: number, d: number, zone: string): number {
  const wall = Date.UTC(y, m - 1, d);
  let t = wall - offsetAt(wall, zone);
  t = wall - offsetAt(t, zone);
  // In a gap the guess lands on the day before: step to where the date begins.
  const w = wallClock(t, zone);
  if (Date.UTC(w.y, w.m - 1, w.d) < wall) t += 3_600_000 - (w.mi * 60_000 + w.s * 1000);
  return t;
}

/** The period holding instant `now` in `zone`. */
export function periodBounds(period: BudgetPeriod, now: number, zone: string): PeriodBounds {
  const w = wallClock(now, zone);
  switch (period) {
    case 'day':
      return { start: zonedMidnight(w.y, w.m, w.d, zone), end: zonedMidnight(w.y, w.m, w.d + 1, zone) };
    case 'week': {
      // 0 = Monday … 6 = Sunday, from the wall-clock date.
      const weekday = (new Date(Date.UTC(w.y, w.m - 1, w.d)).getUTCDay() + 6) % 7;
      return { start: zonedMidnight(w.y, w.m, w.d - weekday, zone), end: zonedMidnight(w.y, w.m, w.d - weekday + 7, zone) };
    }
    case 'month':
      return { start: zonedMidnight(w.y, w.m, 1, zone), end: zonedMidnight(w.y, w.m + 1, 1, zone) };
  }
}
