import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { svcAgainst } from './cli-helpers.js';
import { startFakeUpstream, textChunks, type FakeUpstream } from './fake-upstream.js';
import { startTestDaemon, type TestDaemon } from './harness.js';

let up: FakeUpstream;
let d: TestDaemon;

beforeAll(async () => {
  up = await startFakeUpstream();
  d = await startTestDaemon({ config: { providers: { fake: { baseUrl: up.url, apiKey: 'sk-cli-upstream-key-0123' } } } });
  await d.api('POST', '/api/v1/agents', { body: { name: 'alice', model: 'fake/m1' } });
});
afterAll(async () => {
  await d.close();
  await up.close();
});

describe('svc chat', () => {
  it("streams an agent's answer and names the session to continue", async () => {
    up.script({ stream: textChunks(['Hello', ', ', 'world']) });
    const r = await svcAgainst(d, ['chat', '--agent', 'alice', 'say', 'hello']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('Hello, world\n');
    const session = /session (\S+):/.exec(r.stderr)![1]!;
    expect(up.requests[0]!.body.messages.at(-1)).toEqual({ role: 'user', content: 'say hello' });

    up.script({ stream: textChunks(['again']) });
    const next = await svcAgainst(d, ['chat', '--agent', 'alice', '--session', session, 'more', '--json']);
    expect(next.code, next.stderr).toBe(0);
    expect(JSON.parse(next.stdout)).toEqual({ sessionId: session, content: 'again' });
    // The session's earlier turns went upstream before the new one.
    expect(up.requests[1]!.body.messages.slice(-3).map((m: { content: string }) => m.content)).toEqual(['say hello', 'Hello, world', 'more']);
  });

  it('prints an API error and exits 1; without a message and a terminal it is a usage error', async () => {
    const r = await svcAgainst(d, ['chat', '--agent', 'nobody', 'hi']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('not_found (404)');
    const bare = await svcAgainst(d, ['chat']);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('needs a message');
  });
});

describe('svc auth status', () => {
  it('prints one row per provider, and its cooldown after upstream errors', async () => {
    // Three different requests failing in a row cool the provider down (FAILURES_BEFORE_COOLDOWN).
    for (const say of ['x', 'y', 'z']) {
      up.script({ status: 500, json: { error: { message: 'boom' } } });
      expect((await d.api('POST', '/v1/chat/completions', { body: { agent: 'alice', messages: [{ role: 'user', content: say }] } })).status).toBe(502);
    }
    const r = await svcAgainst(d, ['auth', 'status']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^PROVIDER\s+STATUS\s+KEY\s+UNTIL\s+RUNS WAITING\s+ERRORS\s+LAST ERROR/);
    expect(r.stdout).toMatch(/openai\s+unconfigured\s+set OPENAI_API_KEY/);
    expect(r.stdout).toMatch(/ollama\s+active\s+not needed/);
    expect(r.stdout.split('\n').find((l) => l.startsWith('fake'))).toMatch(/fake\s+cooldown\s+project\.json\s+in 1m\s+-\s+3\s+HTTP 500/);
    const json = await svcAgainst(d, ['auth', 'status', '--json']);
    expect(JSON.parse(json.stdout).providers.fake.status).toBe('cooldown');
    expect(json.stdout).not.toContain('sk-cli-upstream-key-0123');
  });
});
