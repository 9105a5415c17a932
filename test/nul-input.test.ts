import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dereference } from '../src/lib/json-ref.js';
import { loadApi } from '../src/routes.js';
import { rawRequest, startTestDaemon, type TestDaemon } from './harness.js';

const { routes: ROUTES, openApiDocument } = await loadApi();

// A NUL (U+0000) in any input of any route is a 400 naming the field, on every state provider
// (this file also runs in the state-pg project): PostgreSQL's text cannot hold one, and the
// answer there used to be a 500 where SQLite's was a 404 or a 201. The rule is the kernel's, so
// every route of ROUTES is tried: each path parameter, a query parameter, a body string and a
// body property name.

type Json = Record<string, any>;

let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon();
});
afterAll(async () => {
  await d.close();
});

/** Each route's OpenAPI operation (its query parameters and body properties), by operationId. */
const operations = (() => {
  const doc = dereference(openApiDocument()) as Json;
  const out = new Map<string, Json>();
  for (const ops of Object.values(doc.paths as Record<string, Json>)) for (const op of Object.values(ops)) out.set((op as Json).operationId, op as Json);
  return out;
})();

interface Form {
  what: string;
  method: string;
  path: string;
  body?: string;
  /** The detail paths the answer must name. */
  fields: string[];
}

function forms(): Form[] {
  const out: Form[] = [];
  for (const r of ROUTES) {
    const op = operations.get(r.operationId) ?? {};
    const names = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    const fill = (nul?: string) => r.path.replace(/\{(\w+)\}/g, (_, n: string) => (n === nul ? 'a%00b' : 'x'));
    for (const n of names) out.push({ what: `${r.operationId}: path parameter ${n}`, method: r.method, path: fill(n), fields: [`params.${n}`] });
    const q = ((op.parameters ?? []) as Json[]).find((p) => p.in === 'query')?.name ?? 'x';
    out.push({ what: `${r.operationId}: query parameter ${q}`, method: r.method, path: `${fill()}?${q}=a%00b`, fields: [`query.${q}`] });
    out.push({ what: `${r.operationId}: query parameter name`, method: r.method, path: `${fill()}?q%00=1`, fields: ['query.q\\u0000'] });
    if (r.body) {
      const schema = op.requestBody?.content?.['application/json']?.schema as Json | undefined;
      const prop = Object.keys(schema?.properties ?? {})[0] ?? 'x';
      out.push({ what: `${r.operationId}: body string ${prop}`, method: r.method, path: fill(), body: JSON.stringify({ [prop]: 'a\u0000b' }), fields: [`body.${prop}`] });
      out.push({ what: `${r.operationId}: body string in an array`, method: r.method, path: fill(), body: JSON.stringify({ [prop]: ['ok', { deep: 'a\u0000' }] }), fields: [`body.${prop}.1.deep`] });
      out.push({ what: `${r.operationId}: body property name`, method: r.method, path: fill(), body: JSON.stringify({ 'k\u0000': 1 }), fields: ['body.k\\u0000'] });
    }
  }
  return out;
}

describe('a NUL in any input of any route', () => {
  it('is a 400 naming the field, never a 5xx nor a success', async () => {
    const all = forms();
    expect(all.length).toBeGreaterThan(ROUTES.length * 2);
    const wrong: string[] = [];
    for (const f of all) {
      const headers: Record<string, string> = { authorization: `Bearer ${d.key}` };
      if (f.body !== undefined) headers['content-type'] = 'application/json';
      const res = await rawRequest(d.url, { method: f.method, path: f.path, headers, body: f.body, abortStream: true });
      const text = res.body;
      // The envelope's details, or (an OpenAI-shaped route) its message, which lists them.
      const named = f.fields.every((field) => text.includes(JSON.stringify(field).slice(1, -1)) && /NUL character/.test(text));
      if (res.status !== 400 || !named) wrong.push(`${f.what}: ${res.status} ${text.slice(0, 300)}`);
    }
    expect(wrong).toEqual([]);
    expect(d.logs.filter((l) => l.includes('unhandled error'))).toEqual([]);
  });

  it('says which field, in the envelope the route answers in', async () => {
    const res = await d.api('POST', '/api/v1/tasks', { body: { title: 'a\u0000b', labels: ['ok', 'b\u0000'] } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'invalid_request' });
    expect(res.body.details).toEqual(
      expect.arrayContaining([
        { path: 'body.title', message: 'Contains a NUL character (U+0000), which is not allowed.' },
        { path: 'body.labels.1', message: 'Contains a NUL character (U+0000), which is not allowed.' },
      ]),
    );
    // An application database's routes answer their own code, as for any invalid request.
    const data = await d.api('POST', '/api/v1/data/x%00/query', { body: { sql: 'SELECT 1' } });
    expect(data.status).toBe(400);
    expect(data.body).toMatchObject({ code: 'data_invalid', details: [{ path: 'params.resource' }] });
    // Text around a NUL is untouched elsewhere: the same title without it is taken.
    expect((await d.api('POST', '/api/v1/tasks', { body: { title: 'ab' } })).status).toBe(201);
  });
});
