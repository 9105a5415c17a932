import { Webhook as StandardWebhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../src/index.js';
import { classify, decide, nextStep } from '../../src/resources/webhooks/outcome.js';
import { MAX_ATTEMPTS, parseRetryAfter, RETRY_AFTER_CAP_MS, retryDelayMs } from '../../src/resources/webhooks/retry.js';
import { claimWant, nextStart, nextWake, type SlotLimits } from '../../src/resources/webhooks/schedule.js';
import { patternProblem } from '../../src/resources/webhooks/schema.js';
import { deliveryHeaders, newSecret, serviceSignature } from '../../src/resources/webhooks/sign.js';
import { refusedAddress, urlProblem } from '../../src/resources/webhooks/target.js';

describe('retry schedule', () => {
  it('waits retryBaseMs × 4^(n−1) at most, with full jitter from 0', () => {
    const base = 5000;
    // random() = 1 - ε gives the ceiling, 0 gives zero: every wait lies in [0, base × 4^(n−1)).
    const top = () => 0.999999;
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, base, top))).toEqual([4999, 19999, 79999, 319999]);
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, base, () => 0))).toEqual([0, 0, 0, 0]);
    expect(retryDelayMs(3, base, () => 0.5)).toBe(40_000);
  });

  it('takes Retry-After as a floor, capped at one hour', () => {
    expect(retryDelayMs(1, 5000, () => 0, 30_000)).toBe(30_000);
    expect(retryDelayMs(1, 5000, () => 0.999999, 1000)).toBe(4999);
    expect(retryDelayMs(1, 5000, () => 0, 10 * RETRY_AFTER_CAP_MS)).toBe(RETRY_AFTER_CAP_MS);
    expect(retryDelayMs(1, 5000, () => 0, null)).toBe(0);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('7', now)).toBe(7000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:01:00 GMT', now)).toBe(60_000);
    expect(parseRetryAfter('999999', now)).toBe(RETRY_AFTER_CAP_MS);
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter(undefined, now)).toBeNull();
  });
});

describe('a delivery on a fake clock', () => {
  const start = Date.parse('2026-01-01T00:00:00.000Z');

  /** Plays attempts whose results are given, each made exactly when the previous one scheduled it. */
  function play(results: Parameters<typeof decide>[0]['result'][], random: () => number, retryAfterMs: (n: number) => number | null = () => null) {
    let now = start;
    const log = [];
    for (let n = 1; n <= results.length; n++) {
      const d = decide({ result: results[n - 1]!, attempts: n, now, retryBaseMs: 5000, random, retryAfterMs: retryAfterMs(n) });
      log.push({ at: now - start, ...d, nextAttemptAt: d.nextAttemptAt === null ? null : d.nextAttemptAt - start });
      if (d.nextAttemptAt === null) break;
      now = d.nextAttemptAt;
    }
    return log;
  }

  it('waits 5 s, 20 s, 80 s, 320 s at most between five attempts, then fails', () => {
    const log = play(Array(6).fill({ statusCode: 503 }), () => 0.999999);
    expect(log.map((l) => l.at)).toEqual([0, 4999, 4999 + 19999, 4999 + 19999 + 79999, 4999 + 19999 + 79999 + 319999]);
    expect(log.map((l) => l.status)).toEqual(['pending', 'pending', 'pending', 'pending', 'failed']);
    expect(log[4]).toMatchObject({ nextAttemptAt: null, error: 'HTTP 503', statusCode: 503 });
  });

  it('draws each wait uniformly below its ceiling (full jitter)', () => {
    const draws = [0.5, 0.25, 0.1, 0.9];
    let i = 0;
    const log = play(Array(5).fill({ error: 'ECONNREFUSED' }), () => draws[i++]!);
    const waits = log.slice(1).map((l, n) => l.at - log[n]!.at);
    expect(waits).toEqual([2500, 5000, 8000, 288000]);
  });

  it('honours Retry-After as a floor, capped at an hour', () => {
    const log = play(
      [{ statusCode: 429 }, { statusCode: 429 }, { statusCode: 200 }],
      () => 0,
      (n) => (n === 1 ? 30_000 : 10 * 3_600_000),
    );
    expect(log.map((l) => l.at)).toEqual([0, 30_000, 30_000 + 3_600_000]);
    expect(log[2]).toMatchObject({ status: 'succeeded', error: null, nextAttemptAt: null });
  });

  it('stops at once on 410 (disable), another 4xx, or a refused target; a 3xx is retried', () => {
    expect(play([{ statusCode: 410 }], () => 0)[0]).toMatchObject({ status: 'failed', disable: true, error: 'HTTP 410 Gone: the webhook was disabled' });
    expect(play([{ statusCode: 403 }], () => 0)[0]).toMatchObject({ status: 'failed', disable: false, error: 'HTTP 403' });
    expect(play([{ error: 'refused: x', refused: true }], () => 0)[0]).toMatchObject({ status: 'failed', error: 'refused: x' });
    expect(decide({ result: { statusCode: 302 }, attempts: 1, now: 0, retryBaseMs: 10, random: () => 0, location: '/x' })).toMatchObject({
      status: 'pending',
      error: 'redirect (302 to /x) not followed',
    });
  });
});

describe('outcome classification', () => {
  const cases: [Parameters<typeof classify>[0], ReturnType<typeof classify>][] = [
    [{ statusCode: 200 }, 'success'],
    [{ statusCode: 204 }, 'success'],
    [{ statusCode: 299 }, 'success'],
    [{ statusCode: 301 }, 'retry'],
    [{ statusCode: 302 }, 'retry'],
    [{ statusCode: 308 }, 'retry'],
    [{ statusCode: 400 }, 'fail'],
    [{ statusCode: 401 }, 'fail'],
    [{ statusCode: 404 }, 'fail'],
    [{ statusCode: 408 }, 'retry'],
    [{ statusCode: 410 }, 'disable'],
    [{ statusCode: 422 }, 'fail'],
    [{ statusCode: 429 }, 'retry'],
    [{ statusCode: 500 }, 'retry'],
    [{ statusCode: 503 }, 'retry'],
    [{ statusCode: 599 }, 'retry'],
    [{ error: 'ECONNREFUSED' }, 'retry'],
    [{ error: 'no complete answer within 10000 ms' }, 'retry'],
    [{ error: 'refused: x resolves to 169.254.169.254', refused: true }, 'fail'],
  ];
  it.each(cases)('%j → %s', (r, v) => expect(classify(r)).toBe(v));

  it('retries only while attempts remain (five in all)', () => {
    expect(MAX_ATTEMPTS).toBe(5);
    expect(nextStep('retry', 4, 5)).toBe('retry');
    expect(nextStep('retry', 5, 5)).toBe('failed');
    expect(nextStep('fail', 1, 5)).toBe('failed');
    expect(nextStep('disable', 1, 5)).toBe('disable');
    expect(nextStep('success', 5, 5)).toBe('succeeded');
  });
});

describe('targets', () => {
  it.each([
    ['169.254.169.254', 'link-local'],
    ['169.254.0.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['febf::1', 'link-local'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:a9fe:a9fe', 'link-local'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['ff02::1', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    // IPv6 forms that carry a forbidden IPv4 address: judged as the IPv4 they carry.
    ['::ffff:0:a9fe:a9fe', 'link-local'], // IPv4-translated (SIIT)
    ['::ffff:0:169.254.169.254', 'link-local'],
    ['::a9fe:a9fe', 'link-local'], // IPv4-compatible
    ['::169.254.169.254', 'link-local'],
    ['::e000:1', 'multicast'],
    ['64:ff9b::a9fe:a9fe', 'link-local'], // NAT64, well-known prefix
    ['64:ff9b::169.254.169.254', 'link-local'],
    ['64:ff9b::e000:1', 'multicast'],
    ['64:ff9b::ffff:ffff', 'broadcast'],
    ['64:ff9b:1::a9fe:a9fe', 'link-local'], // NAT64, local-use prefix split at /96
    ['64:ff9b:1:a9fe:a9:fe00::', 'link-local'], // … at /48
    ['64:ff9b:1:ffa9:fe:a9fe::', 'link-local'], // … at /56
    ['64:ff9b:1:ffff:a9:fea9:fe00:0', 'link-local'], // … at /64
    ['2001:0:4136:e378:8000:63bf:5601:5601', 'link-local'], // Teredo: client 169.254.169.254 (bits inverted)
    ['2001:0:a9fe:a9fe::1', 'link-local'], // Teredo: server 169.254.169.254
    ['2002:a9fe:a9fe::1', 'link-local'], // 6to4
    ['2002:e000:1::', 'multicast'],
    ['2002::1', 'unspecified'],
  ])('%s is refused (%s)', (a, why) => expect(refusedAddress(a)).toBe(why));

  it.each([
    '127.0.0.1',
    '::1',
    '10.0.0.5',
    '192.168.1.1',
    '172.16.0.1',
    'fd00::1',
    '8.8.8.8',
    '2001:db8::1',
    'fec0::1',
    '2606:4700::1111',
    // Loopback and private addresses stay allowed in every form that carries them.
    '::ffff:127.0.0.1',
    '::ffff:0:7f00:1',
    '::ffff:0:10.0.0.5',
    '::7f00:1',
    '64:ff9b::7f00:1',
    '64:ff9b::10.0.0.5',
    '64:ff9b::8.8.8.8',
    '64:ff9b:1::a00:5',
    '2001:0:4136:e378:8000:63bf:f5ff:fffa', // Teredo client 10.0.0.5
    '2002:c0a8:101::1', // 6to4 of 192.168.1.1
    '2002:808:808::1',
    // Outside the translation prefixes: nothing is carried.
    '64:ff9b:2::a9fe:a9fe',
    '2003::a9fe:a9fe',
  ])('%s is allowed', (a) => expect(refusedAddress(a)).toBeNull());

  it.each([
    ['http:///x', /must name a host/],
    ['http:/x', /must name a host/],
    ['http:x', /must name a host/],
    ['https:\\\\x/', /must name a host/],
    ['http://[::ffff:0:a9fe:a9fe]/', /link-local address \(IPv4-translated form of 169\.254\.169\.254\)/],
    ['http://[::ffff:169.254.169.254]/', /link-local address \(IPv4-mapped form of 169\.254\.169\.254\)/],
    ['http://[::a9fe:a9fe]/', /link-local address \(IPv4-compatible form/],
    ['http://[64:ff9b::169.254.169.254]/', /link-local address \(NAT64 form of 169\.254\.169\.254\)/],
    ['http://[64:ff9b:1::a9fe:a9fe]/', /link-local address \(NAT64 \(\/96\) form/],
    ['http://[2001:0:4136:e378:8000:63bf:5601:5601]/', /link-local address \(Teredo form of 169\.254\.169\.254\)/],
    ['http://[2002:a9fe:a9fe::1]:8080/', /link-local address \(6to4 form of 169\.254\.169\.254\)/],
  ])('the URL %s is refused', (url, why) => expect(urlProblem(url)).toMatch(why));

  it.each(['http://[::ffff:127.0.0.1]:4000/', 'http://[64:ff9b::7f00:1]/', 'http://[2002:c0a8:101::1]/', 'HTTP://Example.com/x', 'http://[::1]:9/'])('the URL %s is allowed', (url) =>
    expect(urlProblem(url)).toBeNull(),
  );

  it('accepts http and https URLs only, and refuses forbidden literal hosts', () => {
    expect(urlProblem('http://127.0.0.1:9/x')).toBeNull();
    expect(urlProblem('https://hooks.example.com/in')).toBeNull();
    expect(urlProblem('http://localhost:3000')).toBeNull();
    expect(urlProblem('ftp://example.com')).toMatch(/http or https/);
    expect(urlProblem('file:///etc/passwd')).toMatch(/http or https/);
    expect(urlProblem('not a url')).toMatch(/absolute/);
    expect(urlProblem('https://user:pw@hooks.example.com/')).toMatch(/user name or password/);
    expect(urlProblem('http://169.254.169.254/latest/meta-data')).toMatch(/link-local/);
    expect(urlProblem('http://[fe80::1]/')).toMatch(/link-local/);
    expect(urlProblem('http://[::ffff:169.254.169.254]/')).toMatch(/link-local/);
    expect(urlProblem('http://0.0.0.0:80/')).toMatch(/unspecified/);
    expect(urlProblem('http://224.0.0.1/')).toMatch(/multicast/);
  });
});

describe('event patterns', () => {
  it.each(['*', 'task:*', 'task:created', 'webhook:test'])('%s is valid', (p) => expect(patternProblem(p)).toBeNull());
  it.each([
    ['task:nope', /unknown event "task:nope"/],
    ['nope:*', /unknown event category "nope"/],
    ['task', /not a pattern/],
    ['task:', /not a pattern/],
    ['*:created', /not a pattern/],
    ['__proto__:*', /not a pattern|unknown/],
    ['constructor:*', /unknown event category/],
  ])('%s is refused', (p, re) => expect(patternProblem(p)).toMatch(re));
});

describe('signatures', () => {
  const secret = newSecret();
  const body = JSON.stringify({ event: 'task:created', data: { taskId: 'x' }, timestamp: '2026-01-01T00:00:00.000Z' });
  const t = 1_800_000_000;

  it('makes whsec_ secrets of 32 random bytes', () => {
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(newSecret()).not.toBe(secret);
  });

  it('signs the reference way (hex HMAC of "<t>.<body>" keyed with the secret string) and verifyWebhook accepts it', () => {
    const h = deliveryHeaders({ deliveryId: '0190a0b0-0000-7000-8000-000000000001', event: 'task:created', body, secrets: [secret], t });
    expect(h['x-service-signature']).toBe(`t=${t},v1=${serviceSignature(secret, t, body)}`);
    expect(verifyWebhook(body, h['x-service-signature'], secret, { nowSec: t })).toBe(true);
    expect(verifyWebhook(Buffer.from(body), h['x-service-signature'], secret, { nowSec: t + 300 })).toBe(true);
  });

  it('verifyWebhook refuses a stale or future timestamp, another secret, an altered body, and junk', () => {
    const h = deliveryHeaders({ deliveryId: 'd', event: 'e', body, secrets: [secret], t })['x-service-signature'];
    expect(verifyWebhook(body, h, secret, { nowSec: t + 301 })).toBe(false);
    expect(verifyWebhook(body, h, secret, { nowSec: t - 301 })).toBe(false);
    expect(verifyWebhook(body, h, secret, { nowSec: t + 1000, toleranceSec: 2000 })).toBe(true);
    expect(verifyWebhook(body, h, newSecret(), { nowSec: t })).toBe(false);
    expect(verifyWebhook(body + ' ', h, secret, { nowSec: t })).toBe(false);
    expect(verifyWebhook(body, 'v1=abc', secret, { nowSec: t })).toBe(false);
    expect(verifyWebhook(body, `t=${t}`, secret, { nowSec: t })).toBe(false);
    expect(verifyWebhook(body, undefined, secret)).toBe(false);
    expect(verifyWebhook(body, h, '', { nowSec: t })).toBe(false);
  });

  it('accepts any one of several v1= (a rotation signs with every live secret)', () => {
    const old = newSecret();
    const h = deliveryHeaders({ deliveryId: 'd', event: 'e', body, secrets: [secret, old], t });
    expect(h['x-service-signature'].split(',').filter((p) => p.startsWith('v1='))).toHaveLength(2);
    expect(verifyWebhook(body, h['x-service-signature'], secret, { nowSec: t })).toBe(true);
    expect(verifyWebhook(body, h['x-service-signature'], old, { nowSec: t })).toBe(true);
    expect(h['webhook-signature'].split(' ')).toHaveLength(2);
  });

  it('carries Standard Webhooks headers that the standardwebhooks package verifies, for each live secret', () => {
    const old = newSecret();
    const now = Math.floor(Date.now() / 1000);
    const h = deliveryHeaders({ deliveryId: 'msg_1', event: 'e', body, secrets: [secret, old], t: now });
    expect(h['webhook-id']).toBe('msg_1');
    expect(h['webhook-timestamp']).toBe(String(now));
    expect(new StandardWebhook(secret).verify(body, h)).toEqual(JSON.parse(body));
    expect(new StandardWebhook(old).verify(body, h)).toEqual(JSON.parse(body));
    expect(() => new StandardWebhook(newSecret()).verify(body, h)).toThrow();
  });
});

describe('delivery scheduling: one slow endpoint never holds up the others', () => {
  const limits: SlotLimits = { concurrency: 16, perEndpoint: 4 };
  const q = (...ids: string[]) => ids.map((webhookId) => ({ webhookId }));

  it("starts the webhook with the fewest deliveries on the wire, never one at its limit, never past the worker's", () => {
    expect(nextStart(q('a', 'a', 'b'), new Map([['a', 1]]), 1, limits)).toBe(2);
    expect(
      nextStart(
        q('a', 'b'),
        new Map([
          ['a', 1],
          ['b', 1],
        ]),
        2,
        limits,
      ),
    ).toBe(0);
    expect(nextStart(q('a', 'a'), new Map([['a', 4]]), 4, limits)).toBe(-1);
    expect(nextStart(q('b'), new Map([['a', 4]]), 16, limits)).toBe(-1);
    expect(nextStart([], new Map(), 0, limits)).toBe(-1);
    // A webhook's limit is never above the worker's.
    expect(nextStart(q('a'), new Map([['a', 2]]), 2, { concurrency: 2, perEndpoint: 8 })).toBe(-1);
  });

  it('a webhook claims at once when one of its slots would sit idle, else only a whole batch, never beyond twice its slots', () => {
    expect(claimWant({ active: 0, queued: 0 }, 16, limits)).toBe(8);
    expect(claimWant({ active: 3, queued: 0 }, 1, limits)).toBe(5);
    // Its slots are full and it has some queued: wait until a batch (4) fits.
    expect(claimWant({ active: 4, queued: 1 }, 12, limits)).toBe(0);
    expect(claimWant({ active: 4, queued: 0 }, 12, limits)).toBe(4);
    expect(claimWant({ active: 2, queued: 2 }, 12, limits)).toBe(4);
    expect(claimWant({ active: 4, queued: 4 }, 12, limits)).toBe(0);
    // No free slot anywhere: no hurry, batches only.
    expect(claimWant({ active: 1, queued: 0 }, 0, limits)).toBe(7);
    expect(claimWant({ active: 1, queued: 4 }, 0, limits)).toBe(0);
    // The limit is never above the worker's.
    expect(claimWant({ active: 0, queued: 0 }, 2, { concurrency: 2, perEndpoint: 8 })).toBe(4);
  });

  it('wakes for the earliest delivery not due yet', () => {
    const heads = [
      { webhookId: 'a', dueAt: 100 },
      { webhookId: 'b', dueAt: 5_000 },
      { webhookId: 'c', dueAt: 3_000 },
    ];
    expect(nextWake(heads, 1_000)).toBe(3_000);
    expect(nextWake(heads, 5_000)).toBeNull();
  });

  /**
   * The worker's loop on a fake clock: `slow` hangs 15 s per attempt with 40 deliveries waiting;
   * `fast` answers in 3 ms and gets a new delivery every 10 ms. Returns how long each of fast's
   * deliveries waited for a slot, and the most slots slow ever held.
   */
  function simulate(l: SlotLimits): { waits: number[]; slowMax: number; slowAt2s: number } {
    const due = new Map<string, { id: number; at: number }[]>([
      ['slow', Array.from({ length: 40 }, (_, id) => ({ id, at: 0 }))],
      ['fast', []],
    ]);
    const answerMs: Record<string, number> = { slow: 15_000, fast: 3 };
    const queue: { webhookId: string; id: number; at: number }[] = [];
    const active = new Map<string, number>();
    const wire: { webhookId: string; endsAt: number }[] = [];
    const waits: number[] = [];
    let slowMax = 0;
    let slowAt2s = 0;
    const pump = (now: number) => {
      const start = () => {
        for (let i; (i = nextStart(queue, active, wire.length, l)) >= 0; ) {
          const [c] = queue.splice(i, 1);
          active.set(c!.webhookId, (active.get(c!.webhookId) ?? 0) + 1);
          wire.push({ webhookId: c!.webhookId, endsAt: now + answerMs[c!.webhookId]! });
          if (c!.webhookId === 'fast') waits.push(now - c!.at);
        }
      };
      start();
      for (const [w, rows] of due) {
        const held = { active: active.get(w) ?? 0, queued: queue.filter((c) => c.webhookId === w).length };
        const n = claimWant(held, l.concurrency - wire.length, l);
        queue.push(...rows.splice(0, n).map((r) => ({ webhookId: w, ...r })));
      }
      start();
      slowMax = Math.max(slowMax, active.get('slow') ?? 0);
    };
    for (let now = 0; now <= 3_000; now++) {
      for (let i = wire.length - 1; i >= 0; i--) {
        if (wire[i]!.endsAt > now) continue;
        const [done] = wire.splice(i, 1);
        active.set(done!.webhookId, active.get(done!.webhookId)! - 1);
      }
      if (now >= 100 && now % 10 === 0) due.get('fast')!.push({ id: now, at: now });
      pump(now);
      if (now === 2_000) slowAt2s = active.get('slow') ?? 0;
    }
    return { waits, slowMax, slowAt2s };
  }

  it('on a fake clock, the deliveries of a healthy endpoint start the moment they are due while a hanging one holds its own slots', () => {
    const { waits, slowMax, slowAt2s } = simulate(limits);
    expect(waits).toHaveLength(291);
    expect(Math.max(...waits)).toBe(0);
    expect(slowMax).toBe(4);
    expect(slowAt2s).toBe(4);
  });

  it('without a per-endpoint limit the same load waits for the hanging endpoint (what the limit prevents)', () => {
    const { waits, slowMax } = simulate({ concurrency: 16, perEndpoint: 16 });
    expect(slowMax).toBe(16);
    expect(waits).toHaveLength(0);
  });
});
