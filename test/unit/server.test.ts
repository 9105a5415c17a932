import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sha256 } from '../../src/kernel/auth.js';
import { createLogger } from '../../src/kernel/log.js';
import { AppError } from '../../src/kernel/errors.js';
import { routeDefiner } from '../../src/kernel/route.js';
import { createHttpServer, type HttpServer } from '../../src/kernel/server.js';

const route = routeDefiner<object>();
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
      route({ method: 'GET', path: '/conflict', operationId: 'declaresConflict', summary: '', tag: 't', auth: 'public', errors: ['conflict'], response: z.null(), handler: () => { throw new AppError('conflict'); } }),
      route({ method: 'GET', path: '/undeclared', operationId: 'undeclared', summary: '', tag: 't', auth: 'public', response: z.null(), handler: () => { throw new AppError('conflict'); } }),
    ],
    settings: () => ({ allowedHosts: [], allowedOrigins: [], maxBodyBytes: 1024 }),
    keys: () => [{ name: 'k', digest: sha256('k'), source: 'project.json' }],
    log: createLogger((l) => logs.push(l)),
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
