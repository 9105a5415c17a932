import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sha256 } from '../../src/kernel/auth.js';
import { systemClock } from '../../src/lib/clock.js';
import { createLogger } from '../../src/kernel/log.js';
import { AppError } from '../../src/kernel/errors.js';
import { errorFormat, routeDefiner } from '../../src/kernel/route.js';
import { createHttpServer, type HttpServer } from '../../src/kernel/server.js';

const route = routeDefiner<object>();
// An error format of the test's own: what the kernel does with it, it does with any.
const teapot = errorFormat({ id: 'Teapot', schema: z.strictObject({ fault: z.string(), status: z.int() }), description: 'd', format: (e) => ({ fault: e.code, status: e.status }) });
// One that breaks its own schema (an `n` it does not declare).
const broken = errorFormat({ id: 'Broken', schema: z.strictObject({ fault: z.string() }), description: 'd', format: (e) => ({ fault: e.code, n: 1 }) });
const logs: string[] = [];
let http: HttpServer;
let url: string;

beforeAll(async () => {
  http = createHttpServer({
    app: {},
    routes: [
      route({ method: 'GET', path: '/declared', operationId: 'declared', summary: '', tag: 't', auth: 'public', response: z.object({ a: z.int() }), handler: () => ({ a: 1 }) }),
      // A handler that leaks a field its schema does not declare.
      route({ method: 'GET', path: '/stray', operationId: 'stray', summary: '', tag: 't', auth: 'public', response: z.object({ a: z.int() }), handler: () => ({ a: 1, secret: 's' }) as never }),
      route({ method: 'GET', path: '/wrong', operationId: 'wrong', summary: '', tag: 't', auth: 'public', response: z.object({ a: z.int() }), handler: () => ({ a: 'x' }) as never }),
      route({
        method: 'GET',
        path: '/conflict',
        operationId: 'declaresConflict',
        summary: '',
        tag: 't',
        auth: 'public',
        errors: ['conflict'],
        response: z.null(),
        handler: () => {
          throw new AppError('conflict');
        },
      }),
      route({
        method: 'GET',
        path: '/undeclared',
        operationId: 'undeclared',
        summary: '',
        tag: 't',
        auth: 'public',
        response: z.null(),
        handler: () => {
          throw new AppError('conflict');
        },
      }),
      route({ method: 'POST', path: '/brew', operationId: 'brew', summary: '', tag: 't', errorBody: teapot, body: z.strictObject({ tea: z.string() }), response: z.null(), handler: () => null }),
      route({
        method: 'GET',
        path: '/pots/{id}',
        operationId: 'getPot',
        summary: '',
        tag: 't',
        auth: 'public',
        errorBody: teapot,
        params: z.strictObject({ id: z.string() }),
        errors: ['not_found'],
        response: z.null(),
        handler: () => {
          throw new AppError('not_found');
        },
      }),
      route({
        method: 'DELETE',
        path: '/pots/{id}',
        operationId: 'dropPot',
        summary: '',
        tag: 't',
        auth: 'public',
        params: z.strictObject({ id: z.string() }),
        response: z.null(),
        handler: () => null,
      }),
      route({
        method: 'GET',
        path: '/broken',
        operationId: 'broken',
        summary: '',
        tag: 't',
        auth: 'public',
        errorBody: broken,
        errors: ['conflict'],
        response: z.null(),
        handler: () => {
          throw new AppError('conflict');
        },
      }),
    ],
    settings: () => ({ allowedHosts: [], allowedOrigins: [], maxBodyBytes: 1024 }),
    keys: () => [{ name: 'k', digest: sha256('k'), source: 'project.json' }],
    log: createLogger((l) => logs.push(l)),
    clock: systemClock,
    checkResponses: true,
  });
  await new Promise<void>((r) => http.server.listen(0, '127.0.0.1', r));
  const a = http.server.address() as { port: number };
  url = `http://127.0.0.1:${a.port}`;
});
afterAll(() => http.close(100));

describe('response checks (on in tests)', () => {
  it('passes a payload that matches its schema exactly', async () => {
    const res = await fetch(`${url}/declared`);
    expect(await res.json()).toEqual({ ok: true, data: { a: 1 } });
  });
  it.each(['/stray', '/wrong'])('turns %s into a 500 and logs why, without leaking the payload', async (path) => {
    const res = await fetch(url + path);
    expect(res.status).toBe(500);
    const body = await res.json();
    expect(body).toEqual({ ok: false, code: 'internal', error: 'Internal error.' });
    expect(logs.some((l) => l.includes('unhandled error') && l.includes(path.slice(1)))).toBe(true);
  });
});

describe('error checks (on in tests)', () => {
  it('answers an error code the route declares as it is', async () => {
    const res = await fetch(`${url}/conflict`);
    expect(res.status).toBe(409);
  });
  it('turns an error code the route does not declare into a 500 naming the route', async () => {
    const res = await fetch(`${url}/undeclared`);
    expect(res.status).toBe(500);
    expect(logs.some((l) => l.includes('undeclared answered 409 conflict'))).toBe(true);
  });
});

describe("error formats: every failure on a path answers in its routes' format", () => {
  /** Over node:http, which can send any Host. */
  const send = (method: string, path: string, headers: Record<string, string> = {}, body?: string) =>
    new Promise<{ status: number; body: unknown }>((resolve, reject) => {
      const u = new URL(url);
      const req = request({ host: u.hostname, port: u.port, method, path, headers, setHost: !headers.host }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      });
      req.on('error', reject);
      req.end(body);
    });
  const json = { authorization: 'Bearer k', 'content-type': 'application/json' };
  it.each([
    ['a refused Host, before routing', 'POST', '/brew', { ...json, host: 'evil.example.com' }, undefined, 403, { fault: 'forbidden', status: 403 }],
    ['a refused Origin, before routing', 'POST', '/brew', { ...json, origin: 'https://evil.example.com' }, undefined, 403, { fault: 'forbidden', status: 403 }],
    ['a refused preflight', 'OPTIONS', '/brew', { origin: 'https://evil.example.com', 'access-control-request-method': 'POST' }, undefined, 403, { fault: 'forbidden', status: 403 }],
    ['a method the path lacks', 'PATCH', '/brew', json, undefined, 405, { fault: 'method_not_allowed', status: 405 }],
    ['no key', 'POST', '/brew', { 'content-type': 'application/json' }, '{}', 401, { fault: 'unauthorized', status: 401 }],
    ['a body too large', 'POST', '/brew', json, JSON.stringify({ tea: 'x'.repeat(2000) }), 413, { fault: 'payload_too_large', status: 413 }],
    ['a body not JSON', 'POST', '/brew', { ...json, 'content-type': 'text/plain' }, 'tea', 415, { fault: 'unsupported_media_type', status: 415 }],
    ['a bad body', 'POST', '/brew', json, '{"tea":1}', 400, { fault: 'invalid_request', status: 400 }],
    ["the handler's own 404", 'GET', '/pots/x', {}, undefined, 404, { fault: 'not_found', status: 404 }],
    ['a refused Host on the route of a mixed path that has the format', 'GET', '/pots/x', { host: 'evil.example.com' }, undefined, 403, { fault: 'forbidden', status: 403 }],
  ] as const)('%s', async (_name, method, path, headers, body, status, expected) => {
    const res = await send(method, path, headers, body);
    expect(res.status).toBe(status);
    expect(res.body).toEqual(expected);
  });

  it.each([
    ['a path whose routes differ in format: a method it lacks', 'PUT', '/pots/x', {}, 405, 'method_not_allowed'],
    ['a path whose routes differ in format: a refused Host for a method it lacks', 'PUT', '/pots/x', { host: 'evil.example.com' }, 403, 'forbidden'],
    ['a path whose routes differ in format: the route without one', 'DELETE', '/pots/x', { host: 'evil.example.com' }, 403, 'forbidden'],
    ['a path no route matches, under one that has a format', 'GET', '/brew/more', {}, 404, 'not_found'],
    ['a request target that is no path', 'GET', 'http://[bad/x', {}, 400, 'invalid_request'],
  ] as const)('the envelope for %s', async (_name, method, path, headers, status, code) => {
    const res = await send(method, path, headers);
    expect(res.status).toBe(status);
    expect(res.body).toMatchObject({ ok: false, code });
  });

  it('turns a formatted body its schema refuses into a 500 (in tests), and logs why', async () => {
    const res = await send('GET', '/broken');
    expect(res.status).toBe(500);
    expect(logs.some((l) => l.includes('a Broken error body does not match its schema'))).toBe(true);
  });
});
