import { describe, expect, it } from 'vitest';
import { isTimeZone, periodBounds, zonedMidnight } from '../../src/lib/periods.js';

// Budget periods in a time zone, at fixed instants: days, ISO weeks and months, across DST changes.

const at = (iso: string) => Date.parse(iso);
const bounds = (period: 'day' | 'week' | 'month', iso: string, zone: string) => {
  const b = periodBounds(period, at(iso), zone);
  return [new Date(b.start).toISOString(), new Date(b.end).toISOString()];
};

describe('budget periods', () => {
  it('in UTC: the day, the week from Monday, the month', () => {
    expect(bounds('day', '2030-01-15T22:00:00.000Z', 'UTC')).toEqual(['2030-01-15T00:00:00.000Z', '2030-01-16T00:00:00.000Z']);
    // 2030-01-15 is a Tuesday; a Sunday belongs to the week that began the Monday before.
    expect(bounds('week', '2030-01-15T22:00:00.000Z', 'UTC')).toEqual(['2030-01-14T00:00:00.000Z', '2030-01-21T00:00:00.000Z']);
    expect(bounds('week', '2030-01-20T23:59:59.999Z', 'UTC')).toEqual(['2030-01-14T00:00:00.000Z', '2030-01-21T00:00:00.000Z']);
    expect(bounds('month', '2030-12-31T23:59:59.000Z', 'UTC')).toEqual(['2030-12-01T00:00:00.000Z', '2031-01-01T00:00:00.000Z']);
  });

  it('in a zone ahead of UTC, the local day: 23:30 UTC is already tomorrow in Tokyo', () => {
    expect(bounds('day', '2030-01-15T23:30:00.000Z', 'Asia/Tokyo')).toEqual(['2030-01-15T15:00:00.000Z', '2030-01-16T15:00:00.000Z']);
    expect(bounds('day', '2030-01-15T03:00:00.000Z', 'America/New_York')).toEqual(['2030-01-14T05:00:00.000Z', '2030-01-15T05:00:00.000Z']);
  });

  it('across a DST change the day is 23 or 25 hours long, and the month ends at local midnight', () => {
    // Europe/Paris springs forward on 31 March 2030 and falls back on 27 October 2030.
    expect(bounds('day', '2030-03-31T12:00:00.000Z', 'Europe/Paris')).toEqual(['2030-03-30T23:00:00.000Z', '2030-03-31T22:00:00.000Z']);
    expect(bounds('day', '2030-10-27T12:00:00.000Z', 'Europe/Paris')).toEqual(['2030-10-26T22:00:00.000Z', '2030-10-27T23:00:00.000Z']);
    expect(bounds('month', '2030-03-10T09:00:00.000Z', 'Europe/Paris')).toEqual(['2030-02-28T23:00:00.000Z', '2030-03-31T22:00:00.000Z']);
    expect(bounds('week', '2030-03-31T12:00:00.000Z', 'Europe/Paris')).toEqual(['2030-03-24T23:00:00.000Z', '2030-03-31T22:00:00.000Z']);
  });

  it('where midnight does not exist (a DST change at 00:00), the day begins at the first instant of its date', () => {
    // America/Havana springs forward at 00:00 on 10 March 2030: the day begins at 01:00 (UTC-4).
    const start = zonedMidnight(2030, 3, 10, 'America/Havana');
    expect(new Date(start).toISOString()).toBe('2030-03-10T05:00:00.000Z');
    expect(bounds('day', '2030-03-10T12:00:00.000Z', 'America/Havana')).toEqual(['2030-03-10T05:00:00.000Z', '2030-03-11T04:00:00.000Z']);
  });

  it('knows a time zone from a name that is not one', () => {
    expect(isTimeZone('Europe/Paris')).toBe(true);
    expect(isTimeZone('UTC')).toBe(true);
    expect(isTimeZone('Mars/Olympus')).toBe(false);
  });
});
