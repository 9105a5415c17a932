import { describe, expect, it } from 'vitest';
import { leaseLeft } from '../../src/resources/tasks/command.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();

describe('leaseLeft (fake clock)', () => {
  it.each([
    { name: 'no lease', expiresAt: null, out: null },
    { name: 'seconds', expiresAt: at(45_000), out: '45s left' },
    { name: 'a part second rounds up', expiresAt: at(200), out: '1s left' },
    { name: 'minutes, rounded up', expiresAt: at(14 * 60_000 + 1), out: '15m left' },
    { name: 'full default lease', expiresAt: at(900_000), out: '15m left' },
    { name: 'hours', expiresAt: at(2 * 3_600_000 + 5 * 60_000), out: '2h05m left' },
    { name: 'exactly now', expiresAt: at(0), out: 'expired' },
    { name: 'past', expiresAt: at(-5_000), out: 'expired' },
  ])('$name', ({ expiresAt, out }) => {
    expect(leaseLeft(expiresAt, T0)).toBe(out);
  });
});
