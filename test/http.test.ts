import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadApi } from '../src/routes.js';
import { FakeClock } from './fake-clock.js';
import { eventually, rawRequest, startTestDaemon, type TestDaemon } from './harness.js';
import { ALLOWED_ORIGIN, FOREIGN_ORIGINS, SAME_ORIGINS } from './origin-cases.js';

const { routes: ROUTES } = await loadApi();

let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon({
    config: {
      apiKeys: [
        'plain-key-0123456789',
        { name: 'hashed', sha256: 'a'.repeat(64) },
        { name: 'ci', key: 'object-key-0123456789' },
        { name: 'reports', key: 'granted-key-0123456789', grants: [{ resource: 'reports', actions: ['read'] }] },
      ],
      server: { allowedHosts: ['svc.internal'], allowedOrigins: [ALLOWED_ORIGIN], maxBodyBytes: 2048 },
    },
    env: { SERVICE_API_KEY: 'env-key-0123456789abcdef' },
  });
});
afterAll(async () => {
  await d.close();
});

describe('authentication', () => {
  const cases: [string, Record<string, string>, string, number][] = [
    ['no key', {}, '/api/v1/agents', 401],
    ['wrong key', { authorization: 'Bearer wrong-key-0123456789' }, '/api/v1/agents', 401],
    ['key only in the query string', {}, '/api/v1/agents?apiKey=plain-key-0123456789', 401],
    ['other scheme', { authorization: 'Basic cGxhaW4ta2V5' }, '/api/v1/agents', 401],
    ['plain string key from project.json', { authorization: 'Bearer plain-key-0123456789' }, '/api/v1/agents', 200],
    ['object key from project.json', { authorization: 'Bearer object-key-0123456789' }, '/api/v1/agents', 200],
    ['SERVICE_API_KEY', { authorization: 'Bearer env-key-0123456789abcdef' }, '/api/v1/agents', 200],
    ['public health check', {}, '/healthz', 200],
    ['public openapi', {}, '/openapi.json', 200],
  ];
  it.each(cases)('%s', async (_n, headers, path, status) => {
    const res = await fetch(d.url + path, { headers });
    expect(res.status).toBe(status);
    if (status === 401) {
      expect(await res.json()).toMatchObject({ ok: false, code: 'unauthorized' });
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
    }
  });

  it('denies a key with grants everything but the application-database routes its grants name', async () => {
    for (const [method, path] of [
      ['GET', '/api/v1/agents'],
      ['POST', '/api/v1/shutdown'],
      ['GET', '/api/v1/vault/entries'],
      ['GET', '/v1/events'],
    ] as const) {
      const res = await d.api(method, path, { key: 'granted-key-0123456789' });
      expect(res.status, path).toBe(403);
      expect(res.body.code).toBe('forbidden');
    }
    expect((await d.api('GET', '/healthz', { key: 'granted-key-0123456789' })).status).toBe(200);
  });

  it('accepts the local key generated in .svc/local.key', async () => {
    expect(d.key).toMatch(/^svc_/);
    expect((await d.api('GET', '/api/v1/agents')).status).toBe(200);
  });

  it('accepts a key configured only by its sha256', async () => {
    const { createHash } = await import('node:crypto');
    const key = 'hashed-secret-0123456789';
    const sha = createHash('sha256').update(key).digest('hex');
    const other = await startTestDaemon({ config: { apiKeys: [{ name: 'h', sha256: sha }] } });
    try {
      expect((await other.api('GET', '/api/v1/agents', { key })).status).toBe(200);
      expect((await other.api('GET', '/api/v1/agents', { key: sha })).status).toBe(401);
    } finally {
      await other.close();
    }
  });

  it('answers 429 after 20 failed authentications a minute, and still admits a valid key', async () => {
    const other = await startTestDaemon();
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 22; i++) statuses.push((await other.api('GET', '/api/v1/agents', { key: `bad-${i}` })).status);
      expect(statuses.slice(0, 20).every((s) => s === 401)).toBe(true);
      expect(statuses.slice(20)).toEqual([429, 429]);
      const limited = await other.api('GET', '/api/v1/agents', { key: null });
      expect(limited.status).toBe(429);
      expect(limited.body.code).toBe('rate_limited');
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await other.api('GET', '/api/v1/agents')).status).toBe(200);
    } finally {
      await other.close();
    }
  });
});

describe("the daemon's clock", () => {
  const clock = new FakeClock();
  const t0 = clock.now();
  let c: TestDaemon;
  beforeAll(async () => {
    c = await startTestDaemon({ clock });
  });
  afterAll(async () => {
    await c?.close();
  });

  it('measures the failed-authentication window on it: 3 s of it let one more failure through', async () => {
    for (let i = 0; i < 20; i++) expect((await c.api('GET', '/api/v1/agents', { key: `bad-${i}` })).status).toBe(401);
    expect((await c.api('GET', '/api/v1/agents', { key: 'bad-20' })).status).toBe(429);
    clock.advance(3_000);
    expect((await c.api('GET', '/api/v1/agents', { key: 'bad-21' })).status).toBe(401);
    expect((await c.api('GET', '/api/v1/agents', { key: 'bad-22' })).status).toBe(429);
  });

  it('says when the daemon started, and its uptime, on it', async () => {
    clock.advance(90_000);
    expect((await c.api('GET', '/api/v1/status')).body.data).toMatchObject({ startedAt: new Date(t0).toISOString(), uptimeSeconds: (clock.now() - t0) / 1000 });
  });
});

describe('host and origin guards', () => {
  const auth = () => ({ authorization: `Bearer ${d.key}` });
  it.each([
    ['localhost', `localhost:${0}`, 200],
    ['127.0.0.1 any port', '127.0.0.1:9', 200],
    ['[::1]', '[::1]:7420', 200],
    ['allowed host', 'svc.internal', 200],
    ['rebinding name', 'evil.example.com', 403],
    ['rebinding name with port', 'evil.example.com:7420', 403],
    ['private address', '192.168.1.10', 403],
    ['user info hiding a foreign host', 'localhost:80@evil.com', 403],
    ['loopback name with a trailing dot', 'localhost.:80', 200],
    ['IPv6 loopback in long form', '[0:0:0:0:0:0:0:1]', 200],
    ['IPv4-mapped foreign address', '[::ffff:10.0.0.1]', 403],
    ['garbage', 'local host', 403],
  ] as const)('Host %s', async (_n, host, status) => {
    const res = await rawRequest(d.url, { path: '/api/v1/agents', headers: { ...auth(), host } });
    expect(res.status).toBe(status);
    if (status === 403) expect(JSON.parse(res.body)).toMatchObject({ ok: false, code: 'forbidden' });
  });

  it('refuses a foreign Origin even with a valid key', async () => {
    const res = await rawRequest(d.url, { path: '/api/v1/agents', headers: { ...auth(), origin: 'https://evil.example.com' } });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.body).code).toBe('forbidden');
  });

  it('serves an allowed Origin with CORS headers', async () => {
    const res = await rawRequest(d.url, { path: '/api/v1/agents', headers: { ...auth(), origin: 'http://localhost:5173' } });
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe('http://localhost:5173');
  });

  it.each(FOREIGN_ORIGINS)('refuses an Origin that only resembles the allowed one, request and preflight: %s (%s)', async (_n, origin) => {
    const res = await rawRequest(d.url, { path: '/api/v1/agents', headers: { ...auth(), origin } });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.body).code).toBe('forbidden');
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    const pre = await rawRequest(d.url, { method: 'OPTIONS', path: '/api/v1/agents', headers: { 'access-control-request-method': 'POST', origin } });
    expect(pre.status).toBe(403);
    expect(pre.headers['access-control-allow-origin']).toBeUndefined();
  });

  it.each(SAME_ORIGINS)('serves the allowed Origin spelled %s (%s)', async (_n, origin) => {
    const res = await rawRequest(d.url, { path: '/api/v1/agents', headers: { ...auth(), origin } });
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe(origin);
  });

  it('refuses Origin: null, and a project.json that lists it does not start', async () => {
    const res = await rawRequest(d.url, { path: '/api/v1/agents', headers: { ...auth(), origin: 'null' } });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.body).code).toBe('forbidden');
    await expect(startTestDaemon({ config: { server: { allowedOrigins: ['null', ALLOWED_ORIGIN] } } })).rejects.toThrow(/allowedOrigins/);
  });

  it('answers CORS preflight only for allowed origins', async () => {
    const pre = { 'access-control-request-method': 'POST' };
    const ok = await rawRequest(d.url, { method: 'OPTIONS', path: '/api/v1/agents', headers: { ...pre, origin: 'http://localhost:5173' } });
    expect(ok.status).toBe(204);
    expect(ok.headers['access-control-allow-headers']).toContain('Authorization');
    // MCP's Streamable HTTP clients send it on every request after initialize.
    expect(ok.headers['access-control-allow-headers']).toContain('Mcp-Protocol-Version');
    expect(ok.headers['access-control-allow-methods']).toBe('GET, HEAD, POST, PATCH, PUT, DELETE');
    const bad = await rawRequest(d.url, { method: 'OPTIONS', path: '/api/v1/agents', headers: { ...pre, origin: 'https://evil.example.com' } });
    expect(bad.status).toBe(403);
  });
});

describe('request handling', () => {
  it('puts X-Request-Id on every response, success or failure', async () => {
    for (const [path, key] of [
      ['/api/v1/agents', undefined],
      ['/nope', undefined],
      ['/api/v1/agents', null],
    ] as const) {
      const res = await d.api('GET', path, { key });
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('answers an unknown path 404 and a wrong method 405, in the envelope', async () => {
    const nf = await d.api('GET', '/api/v1/nothing-here');
    expect(nf.status).toBe(404);
    expect(nf.body).toMatchObject({ ok: false, code: 'not_found' });
    const na = await d.api('PUT', '/api/v1/agents');
    expect(na.status).toBe(405);
    expect(na.body).toMatchObject({ ok: false, code: 'method_not_allowed' });
    expect(na.headers.get('allow')).toBe('GET, HEAD, POST');
  });

  it('refuses malformed JSON with 400', async () => {
    const res = await d.api('POST', '/api/v1/agents', { body: '{"name": "x", "systemPrompt": "SECRET-IN-BODY" oops}' });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_request');
    expect(res.body.error).toMatch(/^Malformed JSON body: not valid JSON \(at position \d+\)\.$/);
    // The parser's own message quotes the body; none of it may be echoed.
    expect(JSON.stringify(res.body)).not.toContain('SECRET-IN-BODY');
  });

  it('refuses a non-JSON body with 415', async () => {
    const res = await d.api('POST', '/api/v1/agents', { body: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(res.status).toBe(415);
    expect(res.body.code).toBe('unsupported_media_type');
  });

  it('requires a body where the route takes one', async () => {
    const res = await d.api('POST', '/api/v1/agents');
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ path: 'body', message: 'A JSON body is required.' }]);
  });

  it('refuses a body over maxBodyBytes with 413 by Content-Length, before reading it', async () => {
    const big = JSON.stringify({ name: 'x', systemPrompt: 'y'.repeat(5000) });
    const res = await d.api('POST', '/api/v1/agents', { body: big });
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('payload_too_large');
  });

  it('refuses a chunked body as soon as it passes the limit', async () => {
    const { request } = await import('node:http');
    const u = new URL(d.url);
    const result = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        { host: u.hostname, port: u.port, method: 'POST', path: '/api/v1/agents', headers: { authorization: `Bearer ${d.key}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' } },
        (res) => {
          let b = '';
          res.on('data', (c) => (b += c));
          res.on('end', () => resolve({ status: res.statusCode!, body: b }));
        },
      );
      req.on('error', reject);
      // 4 KiB in small chunks; the server answers once 2 KiB have arrived.
      req.write('{"name":"x","systemPrompt":"');
      for (let i = 0; i < 8; i++) req.write('z'.repeat(512));
      req.end('"}');
    });
    expect(result.status).toBe(413);
    expect(JSON.parse(result.body).code).toBe('payload_too_large');
  });

  it('reads a missing body as {} where every field is optional', async () => {
    await d.api('POST', '/api/v1/agents', { body: { name: 'bare-patch' } });
    const res = await d.api('PATCH', '/api/v1/agents/bare-patch');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, data: null });
  });

  it('refuses a body sent to an endpoint that takes none, but lets an empty object through', async () => {
    const withBody = await d.api('POST', '/api/v1/shutdown', { body: { now: true } });
    expect(withBody.status).toBe(400);
    expect(withBody.body.details).toEqual([{ path: 'body', message: 'This endpoint takes no body.' }]);
    // Not JSON, or too large: the same mistake, and the same 400 (not 415 or 413, which would
    // suggest that another body would do).
    const form = await d.api('DELETE', '/api/v1/agents/nobody', { body: 'x=1', headers: { 'content-type': 'text/plain' } });
    expect(form.status).toBe(400);
    expect(form.body.details).toEqual([{ path: 'body', message: 'This endpoint takes no body.' }]);
    const big = await d.api('DELETE', '/api/v1/agents/nobody', { body: JSON.stringify({ x: 'y'.repeat(5000) }) });
    expect(big.status).toBe(400);
    // The empty object passes and the request reaches the handler (which answers 404 for the missing agent).
    const emptyDelete = await d.api('DELETE', '/api/v1/agents/nobody', { body: {} });
    expect(emptyDelete.status).toBe(404);
  });

  it('answers 400 for a request target that is not a valid path', async () => {
    const res = await rawRequest(d.url, { path: 'http://[bad/x', headers: { authorization: `Bearer ${d.key}` } });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body).code).toBe('invalid_request');
  });

  it('logs a request the client abandoned as 499, not as a server error', async () => {
    const { request } = await import('node:http');
    const u = new URL(d.url);
    d.logs.length = 0;
    await new Promise<void>((resolve) => {
      const req = request({
        host: u.hostname,
        port: u.port,
        method: 'POST',
        path: '/api/v1/agents',
        headers: { authorization: `Bearer ${d.key}`, 'content-type': 'application/json', 'content-length': '100', expect: '100-continue' },
      });
      req.on('error', () => undefined);
      req.on('close', resolve);
      // 100 Continue: the daemon is handling the request; it gets part of the body, then the client goes.
      req.once('continue', () => req.write('{"name":', () => req.destroy()));
    });
    await eventually(() => d.logs.some((l) => l.includes('"status":499')));
    expect(d.logs.some((l) => l.includes('unhandled error'))).toBe(false);
  });

  it('validates query strings strictly, naming the field', async () => {
    const res = await d.api('GET', '/api/v1/agents?tema=x');
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ path: 'query.tema', message: expect.any(String) }]);
  });

  it('refuses any query parameter where the route takes none, naming each', async () => {
    for (const path of ['/api/v1/status?verbose=1&x', '/healthz?verbose=1&x=2&x=3', '/openapi.json?verbose=1&x']) {
      const res = await d.api('GET', path);
      expect(res.status, path).toBe(400);
      expect(res.body.code).toBe('invalid_request');
      expect(res.body.details).toEqual([
        { path: 'query.verbose', message: 'Unknown query parameter; this endpoint takes none.' },
        { path: 'query.x', message: 'Unknown query parameter; this endpoint takes none.' },
      ]);
    }
    expect((await d.api('GET', '/api/v1/status?')).status).toBe(200);
  });

  it('answers HEAD on every GET route with the status and headers of the GET, and no body', async () => {
    const gets = ROUTES.filter((r) => r.method === 'GET');
    expect(gets.length).toBeGreaterThan(10);
    for (const r of gets) {
      const path = r.path.replace(/\{\w+\}/g, 'no-such-thing');
      const headers = { authorization: `Bearer ${d.key}` };
      const head = await rawRequest(d.url, { method: 'HEAD', path, headers });
      expect(head.body, path).toBe('');
      if (r.rawContentType === 'text/event-stream') {
        // The stream's headers, and the answer ends: no stream is opened for a HEAD.
        expect(head.status).toBe(200);
        expect(head.headers['content-type']).toBe('text/event-stream; charset=utf-8');
        continue;
      }
      const get = await rawRequest(d.url, { method: 'GET', path, headers });
      expect(head.status, path).toBe(get.status);
      expect(head.headers['content-type'], path).toBe(get.headers['content-type']);
      if (path === '/api/v1/status') {
        // uptimeSeconds moves between the two requests (9.9 then 10 is two bytes shorter).
        expect(Math.abs(Number(head.headers['content-length']) - Number(get.headers['content-length'])), path).toBeLessThanOrEqual(4);
      } else expect(head.headers['content-length'], path).toBe(get.headers['content-length']);
      expect(head.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    }
    // Auth and validation apply as for the GET.
    expect((await rawRequest(d.url, { method: 'HEAD', path: '/api/v1/tasks' })).status).toBe(401);
    expect((await rawRequest(d.url, { method: 'HEAD', path: '/v1/events?filter=nope', headers: { authorization: `Bearer ${d.key}` } })).status).toBe(400);
  });

  it('logs one line per request with id, method, path, status and ms — never the key or the body', async () => {
    d.logs.length = 0;
    const secretBody = { name: 'logged-agent', systemPrompt: 'BODY-MARKER-123' };
    const res = await d.api('POST', '/api/v1/agents?apiKey=QUERY-MARKER-456', { body: secretBody });
    const id = res.headers.get('x-request-id');
    const line = () => d.logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'request' && l.id === id);
    await eventually(() => line() !== undefined);
    expect(line()).toMatchObject({ method: 'POST', path: '/api/v1/agents', status: expect.any(Number), ms: expect.any(Number) });
    const all = d.logs.join('\n');
    expect(all).not.toContain('BODY-MARKER-123');
    expect(all).not.toContain('QUERY-MARKER-456');
    expect(all).not.toContain(d.key);
  });
});
