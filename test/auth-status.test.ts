import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from './fake-clock.js';
import { completion, startFakeUpstream, type FakeUpstream } from './fake-upstream.js';
import { startTestDaemon, type TestDaemon } from './harness.js';
import { FAILURES_BEFORE_COOLDOWN } from '../src/resources/providers/health.js';

const KEY = 'sk-config-key-abcdefghijkl';
const ENV_KEY = 'sk-env-key-zyxwvutsrqpo';

let up: FakeUpstream;
beforeAll(async () => {
  up = await startFakeUpstream();
});
afterAll(() => up.close());

/** Talks to agent bob, whose model is `model` (created on first use); the same `say` is the same request. */
async function chat(d: TestDaemon, model: string, say = 'hi') {
  await d.api('POST', '/api/v1/agents', { body: { name: 'bob', model } });
  return d.api('POST', '/v1/chat/completions', { body: { messages: [{ role: 'user', content: say }], agent: 'bob' } });
}

const failure = (status: number, headers?: Record<string, string>) => ({ status, json: { error: { message: `upstream ${status}` } }, ...(headers ? { headers } : {}) });
const statusOf = async (d: TestDaemon) => (await d.api('GET', '/api/v1/auth/status')).body.data.providers;

/** Fails `n` different requests on the provider `model` goes to (each a new conversation). */
async function failDifferent(d: TestDaemon, model: string, n: number, tag: string) {
  for (let i = 0; i < n; i++) {
    up.script(failure(500));
    expect((await chat(d, model, `${tag} ${i}`)).status).toBe(502);
  }
}

describe('GET /api/v1/auth/status', () => {
  it('lists the built-in providers and configured ones, never a key', async () => {
    const d = await startTestDaemon({ config: { providers: { fake: { baseUrl: up.url, apiKey: KEY } } }, env: { OPENAI_API_KEY: ENV_KEY } });
    try {
      const r = await d.api('GET', '/api/v1/auth/status');
      expect(r.status).toBe(200);
      const p = r.body.data.providers;
      expect(Object.keys(p)).toEqual(['openai', 'anthropic', 'google', 'xai', 'openrouter', 'mistral', 'groq', 'ollama', 'fake']);
      expect(p.openai).toEqual({ configKey: 'providers.openai.apiKey', envVar: 'OPENAI_API_KEY', hasEnvKey: true, hasConfigKey: false, profiles: [], status: 'active', errorCount: 0, runsWaiting: 0 });
      expect(p.anthropic).toMatchObject({ envVar: 'ANTHROPIC_API_KEY', hasEnvKey: false, status: 'unconfigured' });
      expect(p.ollama.status).toBe('active'); // served without a key
      expect(p.fake).toMatchObject({ hasConfigKey: true, hasEnvKey: false, envVar: 'FAKE_API_KEY', status: 'active' });
      expect(JSON.stringify(r.body)).not.toContain(KEY);
      expect(JSON.stringify(r.body)).not.toContain(ENV_KEY);
    } finally {
      await d.close();
    }
  });

  it('moves a provider through cooldown and billing, refuses calls meanwhile, and keeps the state across a restart', async () => {
    let d = await startTestDaemon({ config: { providers: { fake: { baseUrl: up.url, apiKey: KEY } } }, keepRoot: true });
    const root = d.root;
    try {
      await failDifferent(d, 'fake/m1', FAILURES_BEFORE_COOLDOWN - 1, 'before');
      expect((await statusOf(d)).fake).toMatchObject({ status: 'active', errorCount: FAILURES_BEFORE_COOLDOWN - 1 });
      up.script({ status: 429, json: { error: { message: 'slow down', type: 'rate_limit' } } });
      expect((await chat(d, 'fake/m1')).status).toBe(502);
      let s = (await d.api('GET', '/api/v1/auth/status')).body.data.providers.fake;
      expect(s).toMatchObject({ status: 'cooldown', errorCount: FAILURES_BEFORE_COOLDOWN, lastErrorReason: 'HTTP 429 (rate_limit)' });
      const until = Date.parse(s.cooldownUntil);
      expect(until - Date.now()).toBeGreaterThan(50_000);
      expect(until - Date.now()).toBeLessThanOrEqual(60_000);

      // In cooldown the provider is not called: 503 with the time it ends.
      const calls = up.requests.length;
      const refused = await chat(d, 'fake/m1');
      expect(refused.status).toBe(503);
      expect(refused.body.error).toMatchObject({ code: 'unavailable' });
      expect(refused.body.error.message).toContain(s.cooldownUntil);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(up.requests.length).toBe(calls);

      await d.close();
      d = await startTestDaemon({ root, keepRoot: true });
      s = (await d.api('GET', '/api/v1/auth/status')).body.data.providers.fake;
      expect(s).toMatchObject({ status: 'cooldown', errorCount: FAILURES_BEFORE_COOLDOWN });

      // The cooldown ends (its time is moved to the past), a success clears the counters.
      await d.daemon.app.db.prepare('UPDATE provider_health SET cooldown_until = 0').run();
      up.script({ json: completion('ok') });
      expect((await chat(d, 'fake/m1')).status).toBe(200);
      s = (await d.api('GET', '/api/v1/auth/status')).body.data.providers.fake;
      expect(s).toEqual({ configKey: 'providers.fake.apiKey', envVar: 'FAKE_API_KEY', hasEnvKey: false, hasConfigKey: true, profiles: [], status: 'active', errorCount: 0, runsWaiting: 0 });

      up.script({ status: 402, json: { error: { message: 'pay up', code: 'insufficient_quota' } } });
      expect((await chat(d, 'fake/m1')).status).toBe(502);
      s = (await d.api('GET', '/api/v1/auth/status')).body.data.providers.fake;
      expect(s.status).toBe('billing_disabled');
      expect(Date.parse(s.disabledUntil) - Date.now()).toBeGreaterThan(4.9 * 3600_000);
    } finally {
      await d.close();
    }
  });

  it('serves a model from another configured provider while the first cools down', async () => {
    const d = await startTestDaemon({
      config: {
        providers: { fake: { baseUrl: up.url, apiKey: KEY }, backup: { baseUrl: up.url, apiKey: 'sk-backup-key-0123456', models: ['m1'] } },
      },
    });
    try {
      await failDifferent(d, 'fake/m1', FAILURES_BEFORE_COOLDOWN, 'down');
      up.script({ json: completion('from backup') });
      const r = await chat(d, 'fake/m1');
      expect(r.status).toBe(200);
      expect(r.body.choices[0].message.content).toBe('from backup');
      expect(up.requests.at(-1)!.headers.authorization).toBe('Bearer sk-backup-key-0123456');
    } finally {
      await d.close();
    }
  });
});

describe('one failing upstream call does not stall a client (issue 30, item 4)', () => {
  const config = () => ({ providers: { fake: { baseUrl: up.url, apiKey: KEY }, backup: { baseUrl: up.url, apiKey: 'sk-backup-key-0123456', models: ['m1'] } } });
  const usedKey = () => up.requests.at(-1)!.headers.authorization;

  it('lets a client retry the request that failed: it goes upstream again at once, and counts once', async () => {
    const d = await startTestDaemon({ config: config() });
    try {
      for (let attempt = 0; attempt < 5; attempt++) {
        up.script(failure(500));
        const r = await chat(d, 'fake/m1', 'the same request');
        expect(r.status).toBe(502); // the upstream's failure, not a 503 to wait out
        expect(r.headers.get('retry-after')).toBeNull(); // the upstream asked for no wait, so neither does svc
        expect(usedKey()).toBe(`Bearer ${KEY}`);
      }
      expect((await statusOf(d)).fake).toMatchObject({ status: 'active', errorCount: 1, lastErrorReason: 'HTTP 500' });
      expect((await statusOf(d)).backup).toMatchObject({ status: 'active', errorCount: 0 });
      up.script({ json: completion('served') });
      expect((await chat(d, 'fake/m1', 'the same request')).body.choices[0].message.content).toBe('served');
      expect((await statusOf(d)).fake).toMatchObject({ status: 'active', errorCount: 0 });
    } finally {
      await d.close();
    }
  });

  it('does not let a request that fails everywhere take out the other provider serving its model', async () => {
    const d = await startTestDaemon({ config: config() });
    try {
      await failDifferent(d, 'fake/m1', FAILURES_BEFORE_COOLDOWN - 1, 'earlier');
      up.script(failure(500));
      expect((await chat(d, 'fake/m1', 'poison')).status).toBe(502); // the last straw: fake cools down
      expect((await statusOf(d)).fake.status).toBe('cooldown');
      // The client retries: svc steps around fake to backup, where the same request fails too.
      up.script(failure(500));
      expect((await chat(d, 'fake/m1', 'poison')).status).toBe(502);
      expect(usedKey()).toBe('Bearer sk-backup-key-0123456');
      expect((await statusOf(d)).backup).toMatchObject({ status: 'active', errorCount: 0, lastErrorReason: 'HTTP 500' });
      up.script({ json: completion('backup serves') });
      expect((await chat(d, 'fake/m1', 'another request')).body.choices[0].message.content).toBe('backup serves');
    } finally {
      await d.close();
    }
  });

  it("says in Retry-After when the first provider serving the model can be called, on the daemon's clock", async () => {
    const clock = new FakeClock();
    const d = await startTestDaemon({ config: config(), clock });
    try {
      await failDifferent(d, 'fake/m1', FAILURES_BEFORE_COOLDOWN, 'fake down'); // fake: out for 60 s from now
      await clock.pass(20_000);
      await failDifferent(d, 'fake/m1', FAILURES_BEFORE_COOLDOWN, 'backup down'); // backup: out for 60 s from 20 s on
      const s = await statusOf(d);
      expect(s.fake.cooldownUntil).toBe(new Date(clock.now() - 20_000 + 60_000).toISOString());
      expect(s.backup.cooldownUntil).toBe(new Date(clock.now() + 60_000).toISOString());
      const calls = up.requests.length;
      const refused = await chat(d, 'fake/m1', 'now?');
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('40'); // fake is back first, in 40 s
      expect(refused.body.error.message).toContain(s.fake.cooldownUntil);
      expect(refused.body.error.message).toContain(s.backup.cooldownUntil);
      expect(up.requests.length).toBe(calls);
      await clock.pass(39_000);
      expect((await chat(d, 'fake/m1', 'now?')).headers.get('retry-after')).toBe('1');
      await clock.pass(1000);
      up.script({ json: completion('fake is back') });
      const served = await chat(d, 'fake/m1', 'now?');
      expect(served.status).toBe(200);
      expect(usedKey()).toBe(`Bearer ${KEY}`);
    } finally {
      await d.close();
    }
  });

  it("passes an upstream's own Retry-After on, and keeps the provider out exactly that long", async () => {
    const clock = new FakeClock();
    const d = await startTestDaemon({ config: { providers: { fake: { baseUrl: up.url, apiKey: KEY } } }, clock });
    try {
      up.script(failure(429, { 'retry-after': '7' }));
      const r = await chat(d, 'fake/m1', 'busy?');
      expect(r.status).toBe(502);
      expect(r.headers.get('retry-after')).toBe('7');
      expect((await statusOf(d)).fake).toMatchObject({ status: 'cooldown', errorCount: 1, cooldownUntil: new Date(clock.now() + 7000).toISOString() });
      const refused = await chat(d, 'fake/m1', 'busy?');
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('7');
      await clock.pass(7000);
      up.script({ json: completion('free now') });
      expect((await chat(d, 'fake/m1', 'busy?')).status).toBe(200);
    } finally {
      await d.close();
    }
  });
});
