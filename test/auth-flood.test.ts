import { Agent, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from './harness.js';

let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon();
});
afterAll(async () => {
  await d.close();
});

/** GET /api/v1/agents from a chosen loopback address, over a keep-alive connection of that address. */
function get(agent: Agent, localAddress: string, key: string): Promise<{ status: number; retryAfter?: string }> {
  const u = new URL(d.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: '/api/v1/agents', agent, localAddress, headers: { authorization: `Bearer ${key}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string | undefined }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('a flood of bad keys from several loopback addresses', () => {
  it('is answered 429 after 20 failures in all, while a valid key still passes and the limiter keeps one record', async () => {
    const addresses = ['127.0.0.1', '127.0.0.2', '127.0.0.3', '127.0.1.1', '127.200.0.9'];
    const agents = addresses.map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
    const statuses: number[] = [];
    const valid: number[] = [];
    try {
      // 5 addresses × 400 bad keys, interleaved, with a valid request from one of them every 100.
      await Promise.all(
        addresses.map(async (addr, i) => {
          for (let n = 0; n < 400; n++) {
            const r = await get(agents[i]!, addr, `bad-key-${addr}-${n}`);
            statuses.push(r.status);
            if (r.status === 429) expect(Number(r.retryAfter)).toBeGreaterThan(0);
            if (n % 100 === 0) valid.push((await get(agents[i]!, addr, d.key)).status);
          }
        }),
      );
    } finally {
      for (const a of agents) a.destroy();
    }
    const unauthorized = statuses.filter((s) => s === 401).length;
    // 20, plus one more for each 3 s the flood took (the limiter refills at 20 a minute).
    expect(unauthorized).toBeGreaterThanOrEqual(20);
    expect(unauthorized).toBeLessThan(40);
    expect(statuses.filter((s) => s === 429).length).toBe(2000 - unauthorized);
    expect(valid.every((s) => s === 200)).toBe(true);
    expect(d.daemon.http.limiter.size).toBe(1);
  });
});
