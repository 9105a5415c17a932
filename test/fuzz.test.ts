import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../src/lib/json.js';
import { dereference } from '../src/lib/json-ref.js';
import { loadApi } from '../src/routes.js';
import { rawRequest, startTestDaemon, type TestDaemon } from './harness.js';

const { openApiDocument } = await loadApi();

// Hostile input is normal: every route of the OpenAPI document gets random and malicious
// requests (bad JSON, deep JSON, huge strings, wrong types, prototype names, odd methods, bad
// paths, parameters and queries) and must answer each with a status below 500, without resetting
// the connection or hanging. The generator is seeded (SVC_FUZZ_SEED to try another sequence) so a
// failure names the seed and the request that reproduces it.

type Json = Record<string, any>;
const SEED = Number(process.env.SVC_FUZZ_SEED ?? 20261123);
const REQUESTS = 3000;
const CONCURRENCY = 8;
const MAX_BODY = 64 * 1024;

function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const deep = (n: number, leaf: unknown = 1): unknown => {
  let v = leaf;
  for (let i = 0; i < n; i++) v = i % 2 ? { a: v } : [v];
  return v;
};
const deepText = (n: number) => '['.repeat(n) + ']'.repeat(n);
// JSON.stringify itself overflows the stack on 5,000 levels: such values travel as a marker that
// is replaced by the nested text after serialising.
const DEEP = '\u0001deep5000\u0001';
const serialise = (v: unknown): string => JSON.stringify(v).replaceAll(JSON.stringify(DEEP), deepText(5000));

const PROTO_NAMES = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__', 'isPrototypeOf'];
const HOSTILE_STRINGS = [
  '',
  ' ',
  ...PROTO_NAMES,
  ...PROTO_NAMES.map((p) => `${p}:`),
  ...PROTO_NAMES.map((p) => `task:${p}`),
  'constructor:created',
  'toString:y',
  '../../etc/passwd',
  '%00',
  '\u0000',
  '\ud800',
  '😀'.repeat(50),
  "' OR 1=1 --",
  '{{constructor}}',
  '{{__proto__}}',
  '1e309',
  '-1',
  'NaN',
  'x'.repeat(10_000),
  '0000-00-00T00:00:00.000Z',
  '00000000-0000-0000-0000-000000000000',
];

function hostileValue(rnd: () => number): unknown {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  switch (Math.floor(rnd() * 12)) {
    case 0:
      return pick(HOSTILE_STRINGS);
    case 1:
      return pick([null, true, false, 0, -1, 1.5, 2 ** 53 + 1, -(2 ** 63), 1e308, -0]);
    case 2:
      return DEEP;
    case 3:
      return deep(MAX_JSON_DEPTH - 2);
    case 4:
      return JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}}');
    case 5:
      return [];
    case 6:
      return {};
    case 7:
      return 'y'.repeat(Math.floor(rnd() * (MAX_BODY / 2)));
    case 8:
      return Array.from({ length: Math.floor(rnd() * 300) }, () => pick(HOSTILE_STRINGS));
    case 9:
      return Object.fromEntries(PROTO_NAMES.map((p) => [p, pick(HOSTILE_STRINGS)]));
    case 10:
      return { a: { b: { c: pick(HOSTILE_STRINGS) } } };
    default:
      return pick(HOSTILE_STRINGS);
  }
}

/** An own property even for "__proto__", as JSON.parse would make it. */
const put = (o: Json, k: string, value: unknown) => Object.defineProperty(o, k, { value, enumerable: true, configurable: true, writable: true });

/** A value shaped by a JSON Schema (an input schema of the document), mutated now and then. */
function fromSchema(schema: Json | undefined, rnd: () => number, depth = 0): unknown {
  if (!schema || depth > 6 || rnd() < 0.15) return hostileValue(rnd);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return pick(schema.enum);
  if (schema.anyOf || schema.oneOf) return fromSchema(pick(schema.anyOf ?? schema.oneOf), rnd, depth + 1);
  const type = Array.isArray(schema.type) ? pick(schema.type) : schema.type;
  switch (type) {
    case 'string':
      return schema.format === 'date-time' ? new Date(Math.floor(rnd() * 4e12)).toISOString() : pick(['fuzz', 'fuzz-agent', 'a'.repeat(Math.floor(rnd() * 300)), ...HOSTILE_STRINGS]);
    case 'integer':
      return pick([0, 1, 3, -1, schema.maximum ?? 10, (schema.maximum ?? 10) + 1, 2 ** 31]);
    case 'number':
      return rnd() * 1000 - 500;
    case 'boolean':
      return rnd() < 0.5;
    case 'null':
      return null;
    case 'array':
      return Array.from({ length: Math.floor(rnd() * 4) }, () => fromSchema(schema.items, rnd, depth + 1));
    case 'object': {
      const out: Json = {};
      for (const [k, s] of Object.entries((schema.properties ?? {}) as Record<string, Json>)) {
        if ((schema.required ?? []).includes(k) || rnd() < 0.5) put(out, k, fromSchema(s, rnd, depth + 1));
      }
      if (schema.additionalProperties && typeof schema.additionalProperties === 'object' && rnd() < 0.5) {
        put(out, pick(PROTO_NAMES), fromSchema(schema.additionalProperties, rnd, depth + 1));
      }
      if (rnd() < 0.1) put(out, pick(PROTO_NAMES), hostileValue(rnd));
      return out;
    }
    default:
      return hostileValue(rnd);
  }
}

interface Req {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

interface Operation {
  method: string;
  path: string;
  op: Json;
}

function operations(): Operation[] {
  // With every $ref written out, so that shared schemas shape the requests too.
  const doc = dereference(openApiDocument()) as Json;
  return Object.entries(doc.paths as Record<string, Json>).flatMap(([path, ops]) => Object.entries(ops as Json).map(([method, op]) => ({ method: method.toUpperCase(), path, op })));
}

let d: TestDaemon;
const known: Record<string, string[]> = {};

beforeAll(async () => {
  d = await startTestDaemon({ config: { server: { maxBodyBytes: MAX_BODY } } });
  // Real resources, so that generated requests reach past the lookups into the handlers.
  await d.api('POST', '/api/v1/agents/teams', { body: { name: 'fuzz-team' } });
  await d.api('POST', '/api/v1/agents', { body: { name: 'fuzz-agent', team: 'fuzz-team' } });
  const task = (await d.api('POST', '/api/v1/tasks', { body: { title: 'fuzz task', assignTo: 'fuzz-agent' } })).body.data;
  const mission = (await d.api('POST', '/api/v1/missions', { body: { name: 'fuzz mission', tasks: [{ title: 'one' }] } })).body.data;
  const approval = (await d.api('POST', '/api/v1/approvals', { body: { requestedBy: 'fuzz', title: 'fuzz approval' } })).body.data;
  await d.api('POST', '/api/v1/playbooks', { body: { name: 'fuzz-playbook', parameters: [{ name: 'who', type: 'string' }], mission: { name: 'pb {{who}}', tasks: [{ title: 'x {{who}}' }] } } });
  await d.api('POST', '/api/v1/skills', { body: { name: 'fuzz-skill', description: 'd', content: 'c' } });
  await d.api('POST', '/api/v1/vault/entries', { body: { agent: 'fuzz-agent', service: 'svc', type: 'api_key', credentials: { key: 'k' } } });
  Object.assign(known, {
    taskId: [task.id],
    missionId: [mission.id],
    approvalId: [approval.id],
    name: ['fuzz-agent', 'fuzz-team', 'fuzz-playbook', 'fuzz-skill'],
    agent: ['fuzz-agent'],
    service: ['svc'],
  });
});
afterAll(async () => {
  await d.close();
});

/** encodeURIComponent, except that a lone surrogate goes out as the invalid UTF-8 it would be. */
function enc(v: string): string {
  try {
    return encodeURIComponent(v);
  } catch {
    return '%ED%A0%80';
  }
}

function pathParam(name: string, rnd: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const r = rnd();
  if (r < 0.4 && known[name]?.length) return enc(pick(known[name]!));
  if (r < 0.8) return enc(pick(HOSTILE_STRINGS).slice(0, 2000));
  return pick(['%', '%E0%A4%A', '..', '.', '%2F', 'a%2Fb', '%00', '%FF%FE', encodeURIComponent('x'.repeat(3000))]);
}

function generate(ops: Operation[], rnd: () => number): Req {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const o = pick(ops);
  let method = o.method;
  if (rnd() < 0.08) method = pick(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'PROPFIND', 'TRACE', 'SEARCH']);
  // The one request a fuzzer must not send with a valid key: a real shutdown.
  const harmful = o.op.operationId === 'shutdown';
  let path = o.path.replace(/\{(\w+)\}/g, (_, n: string) => pathParam(n, rnd));
  if (rnd() < 0.05) path = pick(['/', '//api/v1/tasks', '/api/v1/tasks/', '/api/v1/../../etc/passwd', '/api/v1/tasks/%', '/api/v1/' + 'x'.repeat(4000), '/%', '/api/v1/tasks?', '*']);

  const params = (o.op.parameters ?? []) as Json[];
  const query: [string, string][] = [];
  for (const p of params.filter((x) => x.in === 'query')) {
    if (rnd() < 0.4) {
      const v = fromSchema(p.schema, rnd);
      query.push([p.name, typeof v === 'string' ? v : (serialise(v) ?? '')]);
    }
  }
  if (rnd() < 0.2) query.push([pick([...PROTO_NAMES, 'apiKey', 'x', 'filter', 'limit', 'cursor']), pick(HOSTILE_STRINGS).slice(0, 1000)]);
  if (rnd() < 0.05) for (const p of params.filter((x) => x.in === 'query')) query.push([p.name, 'a'], [p.name, 'b']);
  if (harmful) query.push(['x', '1']);
  const qs = query.map(([k, v]) => `${enc(k)}=${enc(v)}`).join('&');
  if (qs && path !== '*') path += (path.includes('?') ? '&' : '?') + qs;

  const headers: Record<string, string> = {};
  const auth = rnd();
  if (auth < 0.8 && !harmful) headers.authorization = `Bearer ${d.key}`;
  else if (auth < 0.9) headers.authorization = pick(['Bearer ', 'Bearer wrong-key-0123456789', 'Basic abc', 'Bearer ' + 'k'.repeat(5000), `Bearer ${d.key} extra`]);
  if (rnd() < 0.05) headers['last-event-id'] = pick(['-1', '99999999999999999999', 'abc', '1e3', '0', ' 5 ']);
  if (rnd() < 0.03) headers.origin = pick(['http://evil.com', 'null', '']);

  let body: string | undefined;
  const schema = o.op.requestBody?.content?.['application/json']?.schema as Json | undefined;
  const b = rnd();
  if (b < 0.55 && schema) body = serialise(fromSchema(schema, rnd));
  else if (b < 0.65) body = serialise(hostileValue(rnd));
  else if (b < 0.72)
    body = pick([
      '{',
      '{"a":',
      'nul',
      '[1,]',
      '{"a":1}{"b":2}',
      '\u0000',
      '"unterminated',
      deepText(5000),
      deepText(MAX_JSON_DEPTH + 1),
      '{"__proto__":{"polluted":true}}',
      '{"a":1,"a":2}',
      '\ufeff{}',
    ]);
  else if (b < 0.75) body = serialise({ [pick(PROTO_NAMES)]: hostileValue(rnd) });
  if (body !== undefined) {
    if (Buffer.byteLength(body) > MAX_BODY) body = body.slice(0, MAX_BODY / 2);
    headers['content-type'] =
      rnd() < 0.9
        ? 'application/json'
        : pick(['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1', 'application/vnd.api+json', 'multipart/form-data; boundary=x', '']);
  }
  if (method === 'TRACE' || method === 'HEAD' || method === 'GET') body = method === 'GET' && rnd() < 0.1 ? body : undefined;
  if (body === undefined) delete headers['content-type'];
  return { method, path, headers, body };
}

describe('fuzz: every route of the OpenAPI document', () => {
  it(`answers ${REQUESTS} random and hostile requests (seed ${SEED}) below 500, without resets or hangs`, async () => {
    const ops = operations();
    expect(ops.length).toBeGreaterThan(40);
    const rnd = prng(SEED);
    const queue = Array.from({ length: REQUESTS }, () => generate(ops, rnd));
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    let next = 0;
    const worker = async () => {
      while (next < queue.length) {
        const i = next++;
        const r = queue[i]!;
        const what = `#${i} ${r.method} ${r.path.slice(0, 200)} ${r.body ? `body ${r.body.slice(0, 120)}` : ''}`;
        try {
          const res = await Promise.race([
            rawRequest(d.url, { method: r.method, path: r.path, headers: r.headers, body: r.body, abortStream: true }),
            new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no answer in 5 s (hang)')), 5000).unref()),
          ]);
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (res.status >= 500 || res.status < 100) failures.push(`${res.status} ${what}: ${res.body.slice(0, 200)}`);
        } catch (err) {
          failures.push(`${(err as Error).message} ${what}`);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    expect(failures.slice(0, 20), `seed ${SEED}`).toEqual([]);
    // The run reached past the guards: successes and each kind of refusal occurred.
    for (const s of [200, 400, 401, 404]) expect(statuses.get(s), `status ${s} among ${JSON.stringify([...statuses])}`).toBeGreaterThan(0);
    expect(d.logs.filter((l) => l.includes('unhandled error'))).toEqual([]);
    expect(({} as Json).polluted).toBeUndefined();
    expect((await d.api('GET', '/healthz')).status).toBe(200);
  });
});

describe('hostile input the fuzzer found before', () => {
  it.each(['__proto__', 'constructor:created', 'toString:y', 'constructor:', 'task:constructor', '__proto__:*', 'hasOwnProperty:', 'task:__proto__', 'task:created:extra'])(
    'SSE filter=%s is a 400 naming it',
    async (filter) => {
      const res = await rawRequest(d.url, { path: `/v1/events?filter=${encodeURIComponent(filter)}`, headers: { authorization: `Bearer ${d.key}` }, abortStream: true });
      expect(res.status).toBe(400);
      const body = JSON.parse(res.body);
      expect(body.code).toBe('invalid_request');
      expect(body.details[0]).toEqual({ path: 'query.filter', message: expect.stringContaining(filter) });
    },
  );

  it.each([
    ['a transition result', () => `/api/v1/tasks/${known.taskId![0]}/transition`, (v: unknown) => ({ to: 'failed', result: v })],
    ['an approval payload', () => '/api/v1/approvals', (v: unknown) => ({ requestedBy: 'x', title: 'deep', payload: v })],
    ["an agent's identity.socials", () => '/api/v1/agents', (v: unknown) => ({ name: 'deep-agent', identity: { socials: { x: v } } })],
    ['a playbook mission', () => '/api/v1/playbooks', (v: unknown) => ({ name: 'deep-playbook', mission: { name: 'm', goal: v } })],
  ])(`JSON nested 5,000 deep in %s is a 400 (limit ${MAX_JSON_DEPTH}), not a stack overflow`, async (_what, path, body) => {
    const res = await d.api('POST', path(), { body: serialise(body(DEEP)), headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_request');
    expect(res.body.details).toEqual([{ path: 'body', message: `nested deeper than ${MAX_JSON_DEPTH} levels of arrays and objects` }]);
  });

  it(`accepts nesting up to ${MAX_JSON_DEPTH} levels and refuses one more`, async () => {
    const task = (await d.api('POST', '/api/v1/tasks', { body: { title: 'depth' } })).body.data;
    const at = `/api/v1/tasks/${task.id}/transition`;
    // The body object is level 1, so the result may nest MAX_JSON_DEPTH - 1 more.
    const tooDeep = await d.api('POST', at, { body: { to: 'failed', result: deep(MAX_JSON_DEPTH) } });
    expect(tooDeep.status).toBe(400);
    for (const to of ['assigned', 'in_progress']) expect((await d.api('POST', at, { body: { to } })).status).toBe(200);
    const ok = await d.api('POST', at, { body: { to: 'failed', result: deep(MAX_JSON_DEPTH - 1) } });
    expect(ok.status).toBe(200);
    expect(JSON.stringify(ok.body.data.result)).toBe(JSON.stringify(deep(MAX_JSON_DEPTH - 1)));
  });

  it('keeps prototype names as plain keys or refuses them, never as prototypes', async () => {
    const res = await d.api('POST', '/api/v1/playbooks', {
      body: { name: 'proto-names', parameters: [{ name: 'constructor', type: 'string', required: false }], mission: { name: 'p {{constructor}}', tasks: [{ title: 't' }] } },
    });
    expect(res.status).toBe(201);
    const run = await d.api('POST', '/api/v1/playbooks/proto-names/run', { body: { params: {} } });
    expect(run.status).toBe(201);
    // An absent parameter is empty text, not Object's constructor function.
    expect(run.body.data.mission.name.trim()).toBe('p');
    for (const q of ['__proto__=1', 'constructor=1', 'toString=x&toString=y']) {
      const r = await d.api('GET', `/api/v1/tasks?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.details[0].path).toBe(`query.${q.split('=')[0]}`);
    }
  });
});
