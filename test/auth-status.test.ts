import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completion, startFakeUpstream, type FakeUpstream } from './fake-upstream.js';
import { startTestDaemon, type TestDaemon } from './harness.js';

const KEY = 'sk-config-key-abcdefghijkl';
const ENV_KEY = 'sk-env-key-zyxwvutsrqpo';

let up: FakeUpstream;
beforeAll(async () => {
  up = await startFakeUpstream();
});
afterAll(() => up.close());

/** Talks to agent bob, whose model is `model` (created on first use). */
async function chat(d: TestDaemon, model: string) {
  await d.api('POST', '/api/v1/agents', { body: { name: 'bob', model } });
  return d.api('POST', '/v1/chat/completions', { body: { messages: [{ role: 'user', content: 'hi' }], agent: 'bob' } });
}

describe('GET /api/v1/auth/status', () => {
  it('lists the built-in providers and configured ones, never a key', async () => {
    const d = await startTestDaemon({ config: { providers: { fake: { baseUrl: up.url, apiKey: KEY } } }, env: { OPENAI_API_KEY: ENV_KEY } });
    try {
      const r = await d.api('GET', '/api/v1/auth/status');
      expect(r.status).toBe(200);
      const p = r.body.data.providers;
      expect(Object.keys(p)).toEqual(['openai', 'anthropic', 'google', 'xai', 'openrouter', 'mistral', 'groq', 'ollama', 'fake']);
      expect(p.openai).toEqual({ configKey: 'providers.openai.apiKey', envVar: 'OPENAI_API_KEY', hasEnvKey: true, hasConfigKey: false, profiles: [], status: 'active', errorCount: 0 });
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
      up.script({ status: 429, json: { error: { message: 'slow down', type: 'rate_limit' } } });
      expect((await chat(d, 'fake/m1')).status).toBe(502);
      let s = (await d.api('GET', '/api/v1/auth/status')).body.data.providers.fake;
      expect(s).toMatchObject({ status: 'cooldown', errorCount: 1, lastErrorReason: 'HTTP 429 (rate_limit)' });
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
      expect(s).toMatchObject({ status: 'cooldown', errorCount: 1 });

      // The cooldown ends (its time is moved to the past), a success clears the counters.
      d.daemon.app.db.prepare('UPDATE provider_health SET cooldown_until = 0').run();
      up.script({ json: completion('ok') });
      expect((await chat(d, 'fake/m1')).status).toBe(200);
      s = (await d.api('GET', '/api/v1/auth/status')).body.data.providers.fake;
      expect(s).toEqual({ configKey: 'providers.fake.apiKey', envVar: 'FAKE_API_KEY', hasEnvKey: false, hasConfigKey: true, profiles: [], status: 'active', errorCount: 0 });

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
      up.script({ status: 503, json: { error: { message: 'down' } } }, { json: completion('from backup') });
      expect((await chat(d, 'fake/m1')).status).toBe(502);
      const r = await chat(d, 'fake/m1');
      expect(r.status).toBe(200);
      expect(r.body.choices[0].message.content).toBe('from backup');
      expect(up.requests.at(-1)!.headers.authorization).toBe('Bearer sk-backup-key-0123456');
    } finally {
      await d.close();
    }
  });
});
