import { describe, expect, it } from 'vitest';
import { clientOf, FailureLimiter } from '../../src/kernel/auth.js';

describe('clientOf', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.0.0.2', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::FFFF:127.9.9.9', 'loopback'],
    ['192.168.1.20', '192.168.1.20'],
    ['::ffff:192.168.1.20', '192.168.1.20'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['2001:db8:0:0:ffff::2', '2001:db8:0:0::/64'],
    ['2001:0db8:0000:0001::1', '2001:db8:0:1::/64'],
    ['fe80::1', 'fe80:0:0:0::/64'],
    [undefined, 'unknown'],
  ])('%s is client %s', (address, client) => {
    expect(clientOf(address)).toBe(client);
  });
});

describe('FailureLimiter (fake clock)', () => {
  it('allows a burst of 20 failures, then one every 3 s (20 a minute), answering the rest with the seconds to wait', () => {
    let now = 1_000_000;
    const l = new FailureLimiter(() => now, 20, 60_000);
    for (let i = 0; i < 20; i++) expect(l.fail('127.0.0.1')).toBe(0);
    expect(l.fail('127.0.0.1')).toBe(3);
    now += 1_000;
    expect(l.fail('127.0.0.1')).toBe(2);
    now += 2_000;
    expect(l.fail('127.0.0.1')).toBe(0);
    expect(l.fail('127.0.0.1')).toBe(3);
  });

  it('answers 429s without draining further: a client that waits Retry-After is let through', () => {
    let now = 0;
    const l = new FailureLimiter(() => now, 20, 60_000);
    for (let i = 0; i < 20; i++) l.fail('a');
    for (let i = 0; i < 10_000; i++) expect(l.fail('a')).toBeGreaterThan(0);
    now += 3_000;
    expect(l.fail('a')).toBe(0);
  });

  it('holds a flood to 20 failures a minute over ten minutes', () => {
    let now = 0;
    const l = new FailureLimiter(() => now, 20, 60_000);
    let allowed = 0;
    for (let ms = 0; ms < 600_000; ms += 10) {
      now = ms;
      if (l.fail('127.0.0.1') === 0) allowed++;
    }
    expect(allowed).toBe(20 + 200 - 1); // the burst, then one per 3 s (the last refill lands at 600 s, past the end)
  });

  it('counts every loopback address as one client, so moving to another 127.x does not reset the allowance', () => {
    const now = 0;
    const l = new FailureLimiter(() => now, 20, 60_000);
    const addresses = ['127.0.0.1', '127.0.0.2', '127.1.2.3', '::1', '::ffff:127.0.0.1'];
    for (let i = 0; i < 20; i++) expect(l.fail(addresses[i % addresses.length])).toBe(0);
    for (const a of addresses) expect(l.fail(a)).toBeGreaterThan(0);
    expect(l.size).toBe(1);
    expect(l.fail('192.168.1.2')).toBe(0);
  });

  it('keeps one small record per client whatever the number of failures, and at most maxClients of them', () => {
    let now = 0;
    const l = new FailureLimiter(() => now, 20, 60_000, 100);
    for (let i = 0; i < 100_000; i++) l.fail('127.0.0.1');
    expect(l.size).toBe(1);
    for (let i = 0; i < 10_000; i++) {
      now++;
      l.fail(`10.0.${i >> 8}.${i & 255}`);
    }
    expect(l.size).toBe(100);
    // The least recently failing were forgotten first: the latest client still has its count.
    const last = `10.0.${9_999 >> 8}.${9_999 & 255}`;
    for (let i = 0; i < 19; i++) expect(l.fail(last)).toBe(0);
    expect(l.fail(last)).toBeGreaterThan(0);
  });
});
