import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, textChunks, type FakeUpstream, type Recorded, type Scripted } from './fake-upstream.js';
import { startTestDaemon, type TestDaemon } from './harness.js';
import { collect, type Collector } from './sse-collector.js';

// Issue 18 item 4: an upstream's error echoed the provider key it was sent, and the daemon passed
// it on to the client. Here the fake upstream echoes every secret the daemon holds, and every place
// the daemon writes to is searched, byte for byte, for any of them.

const tag = randomUUID().slice(0, 8);
const S = {
  providerConfig: `sk-cfg-${tag}-0123456789`, // providers.fake.apiKey, the key in use
  providerShadowed: `sk-shadow-${tag}-0123456789`, // FAKE_KEY: what providers.fake.apiKey overrides
  providerEnv: `sk-env-${tag}-0123456789`, // FAKE2_KEY, providers.fake2's key
  providerHeader: `hdr-${tag}-0123456789`, // providers.fake.headers.api-key
  providerCookie: `sid-${tag}-0123456789`, // providers.fake.headers.cookie: any header may carry one
  providerToken: `tok-${tag}-0123456789`, // providers.fake.headers.x-auth = "Token <it>", echoed alone
  apiKeyString: `svc-proj-${tag}-0123456789`,
  apiKeyObject: `svc-named-${tag}-0123456789`,
  serviceApiKey: `svc-env-${tag}-0123456789`,
  vaultAlice: `ghp_alice${tag}`,
  // A quote, a backslash and a newline: JSON text holds it escaped.
  vaultBob: `bob "${tag}" \\ x\nline2`,
};

let up: FakeUpstream;
let d: TestDaemon;
let sse: Collector;
/** Every secret of the daemon: S, the local key, and both secrets of the rotated webhook (each with and without whsec_). */
let secrets: string[];
/** Every response body the chat calls got back, as sent. */
const responses: string[] = [];

const received = (r: Recorded) => String(r.headers.authorization).replace(/^Bearer /, '');
/** What a careless upstream says: the key it was sent (as OpenAI's 401 does), and everything else. */
const echo = (r: Recorded) => `Incorrect API key provided: ${received(r)}. Also seen: ${[r.headers['api-key'], ...secrets].filter(Boolean).join(' | ')}`;
const unauthorized: Scripted = { status: 401, json: (r: Recorded) => ({ error: { message: echo(r), type: 'invalid_request_error', code: 'invalid_api_key' } }) };
/** A stream that fails after its first chunk, its error's type quoting the key too. */
const failingStream: Scripted = {
  stream: (r: Recorded) => [...textChunks(['Hel'], false).slice(0, 2), { error: { message: echo(r), type: `bad key ${received(r)}`, code: 401 } }],
};

async function chat(body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await fetch(`${d.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${d.key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

beforeAll(async () => {
  up = await startFakeUpstream();
  d = await startTestDaemon({
    logFile: true,
    keepRoot: true,
    env: { FAKE_KEY: S.providerShadowed, FAKE2_KEY: S.providerEnv, SERVICE_API_KEY: S.serviceApiKey },
    config: {
      apiKeys: [S.apiKeyString, { name: 'named', key: S.apiKeyObject }],
      providers: {
        fake: {
          baseUrl: up.url,
          apiKey: S.providerConfig,
          apiKeyEnv: 'FAKE_KEY',
          headers: { 'api-key': S.providerHeader, cookie: S.providerCookie, 'x-auth': `Token ${S.providerToken}` },
          models: ['m1'],
        },
        fake2: { baseUrl: up.url, apiKeyEnv: 'FAKE2_KEY', models: ['m1'] },
      },
    },
  });
  sse = await collect(d.url, { key: d.key });
  for (const name of ['alice', 'bob']) expect((await d.api('POST', '/api/v1/agents', { body: { name, model: 'fake/m1' } })).status).toBe(201);
  expect((await d.api('POST', '/api/v1/vault/entries', { body: { agent: 'alice', service: 'github', type: 'api_key', credentials: { token: S.vaultAlice } } })).status).toBe(200);
  expect((await d.api('POST', '/api/v1/vault/entries', { body: { agent: 'bob', service: 'mail', type: 'login', credentials: { password: S.vaultBob } } })).status).toBe(200);
  // These two answers are the only ones that show a webhook secret, by design: they are not scanned.
  const hook = (await d.api('POST', '/v1/webhooks', { body: { url: 'http://127.0.0.1:9/hook', events: ['task:created'] } })).body.data;
  const rotated = (await d.api('POST', `/v1/webhooks/${hook.id}/rotate-secret`, { body: { graceSeconds: 3600 } })).body.data;
  // A webhook secret without its whsec_ prefix is the Standard Webhooks key: a secret too.
  secrets = [...Object.values(S), d.key, ...[hook.secret, rotated.secret].flatMap((w: string) => [w, w.slice('whsec_'.length)])];
});
afterAll(async () => {
  sse?.close();
  await d?.close();
  await up?.close();
});

/** Every secret as written and as JSON text holds it. */
const forms = () => secrets.flatMap((s) => [s, JSON.stringify(s).slice(1, -1)]);

describe('secrets in upstream text', () => {
  it('an upstream 401 echoing the key is answered 502 with every secret redacted, plain and streamed, agent and orchestrator', async () => {
    const failures: { name: string; body: Record<string, unknown>; script: Scripted }[] = [
      { name: 'agent, plain', body: { agent: 'alice' }, script: unauthorized },
      { name: 'agent, streamed', body: { agent: 'alice', stream: true }, script: unauthorized },
      { name: 'agent, an error in a 200 body', body: { agent: 'alice' }, script: { json: (r: Recorded) => ({ error: { message: echo(r), code: 401 } }) } },
      { name: 'orchestrator, plain', body: { model: 'fake2/m1' }, script: unauthorized },
      { name: 'orchestrator, streamed', body: { model: 'fake2/m1', stream: true }, script: unauthorized },
    ];
    for (const f of failures) {
      up.script(f.script);
      const r = await chat(f.body);
      responses.push(r.text);
      expect(r.status, f.name).toBe(502);
      const error = JSON.parse(r.text).error;
      expect(error, f.name).toMatchObject({ code: 'upstream_error', upstream_status: 401 });
      expect(error.message, f.name).toMatch(/ answered 401: Incorrect API key provided: \[REDACTED\]\. Also seen: \[REDACTED\] \| \[REDACTED\]/);
    }
    // The scan below must not pass for want of data: the upstream really was sent the keys.
    const sent = up.requests.slice(-failures.length);
    expect(sent.map(received)).toEqual([S.providerConfig, S.providerConfig, S.providerConfig, S.providerEnv, S.providerEnv]);
    expect(sent[0]!.headers['api-key']).toBe(S.providerHeader);
  });

  it('an error event inside a stream ends it with a last frame that carries no secret, agent and orchestrator', async () => {
    for (const body of [{ agent: 'alice' }, { model: 'fake2/m1' }]) {
      up.script(failingStream);
      const r = await chat({ ...body, stream: true });
      responses.push(r.text);
      expect(r.status).toBe(200);
      const frames = r.text.split('\n\n').filter(Boolean);
      // The upstream's error is never forwarded as a chunk: it ends the stream as svc's own error.
      const last = JSON.parse(frames.at(-1)!.slice('data: '.length));
      expect(last.error).toMatchObject({ code: 'upstream_error', upstream_status: 401 });
      expect(last.error.message).toMatch(/answered 401: Incorrect API key provided: \[REDACTED\]/);
      expect(r.text).not.toContain('[DONE]');
    }
    // The upstream's own code (its type here) is kept as the provider's last error, scrubbed too.
    const status = await d.api('GET', '/api/v1/auth/status');
    responses.push(JSON.stringify(status.body));
    expect(status.body.data.providers.fake2).toMatchObject({ status: 'expired', lastErrorReason: 'HTTP 401 (bad key [REDACTED])' });
  });

  it("a session keeps neither the caller's secrets nor the upstream's echo of them", async () => {
    const said = `here: ${secrets.join(' ; ')}`;
    up.script({
      json: (r: Recorded) => ({ id: 'x', object: 'chat.completion', created: 1, model: 'm1', choices: [{ index: 0, message: { role: 'assistant', content: echo(r) }, finish_reason: 'stop' }] }),
    });
    // The answer itself goes back as the upstream gave it (the caller's own conversation): not scanned.
    const first = await chat({ agent: 'alice', messages: [{ role: 'user', content: said }] });
    expect(first.status).toBe(200);
    const sessionId = first.headers.get('x-session-id')!;
    up.script({ json: { id: 'y', object: 'chat.completion', created: 1, model: 'm1', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }] } });
    const second = await chat({ agent: 'alice', messages: [{ role: 'user', content: 'and?' }] }, { 'x-session-id': sessionId });
    responses.push(second.text);
    expect(second.status).toBe(200);
    // What continues the session is the redacted text.
    const history = up.requests.at(-1)!.body.messages.slice(1, 3);
    expect(history[0].content).toBe(`here: ${secrets.map(() => '[REDACTED]').join(' ; ')}`);
    expect(history[1].content).toMatch(/^Incorrect API key provided: \[REDACTED\]\. Also seen: \[REDACTED\]/);
    const stored = (await d.daemon.app.db.prepare('SELECT messages FROM chat_sessions WHERE id = ?').get(sessionId)) as { messages: string };
    for (const f of forms()) expect(stored.messages.includes(f), `stored session holds ${JSON.stringify(f)}`).toBe(false);
  });

  it('no secret in any answer, event frame, log line, the state database or its WAL', async () => {
    // Whatever the tests above managed to do (a failed one stops early): the stream has heard it all.
    const finished = (await d.daemon.app.events.since(0, 10_000)).filter((e) => e.name === 'completion:finished').length;
    expect(finished).toBeGreaterThan(0);
    await sse.until((c) => c.messages.filter((m) => m.event === 'completion:finished').length === finished);
    const state = join(d.root, '.svc', 'state.sqlite');
    expect(existsSync(`${state}-wal`)).toBe(true);
    const haystacks: [string, Buffer][] = [
      ['responses', Buffer.from(responses.join('\n'))],
      ['SSE frames', Buffer.from(sse.messages.map((m) => m.data).join('\n'))],
      ['events table', Buffer.from(JSON.stringify(await d.daemon.app.events.since(0, 10_000)))],
      ['state.sqlite (open)', readFileSync(state)],
      ['state.sqlite-wal (open)', readFileSync(`${state}-wal`)],
    ];
    await d.close();
    const log = readFileSync(join(d.root, '.svc', 'logs', 'daemon.log'));
    expect(log.toString()).toContain('"msg":"request"');
    haystacks.push(['daemon.log', log], ['log lines', Buffer.from(d.logs.join(''))], ['state.sqlite (closed)', readFileSync(state)]);
    if (existsSync(`${state}-wal`)) haystacks.push(['state.sqlite-wal (closed)', readFileSync(`${state}-wal`)]);
    for (const [where, hay] of haystacks) {
      for (const f of forms()) expect(hay.includes(f), `${JSON.stringify(f)} found in ${where}`).toBe(false);
    }
  });
});
