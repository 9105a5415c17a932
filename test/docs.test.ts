import { Validator } from '@seriousme/openapi-schema-validator';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERRORS } from '../src/kernel/errors.js';
import { openApiDocument, ROUTES } from '../src/routes.js';
import { startTestDaemon, type TestDaemon } from './harness.js';

const read = (p: string) => readFileSync(new URL(`../${p}`, import.meta.url), 'utf8');

describe('docs/errors.md', () => {
  it('lists exactly the codes and statuses of the error registry', () => {
    const rows = read('docs/errors.md')
      .split('\n')
      .map((l) => /^\| ([a-z_]+) \| (\d{3}) \|/.exec(l))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => [m[1], Number(m[2])]);
    const registry = Object.entries(ERRORS).map(([code, e]) => [code, e.status]);
    expect(rows).toEqual(registry);
  });
});

describe('OpenAPI', () => {
  let d: TestDaemon;
  beforeAll(async () => {
    d = await startTestDaemon();
  });
  afterAll(async () => {
    await d.close();
  });

  it('GET /openapi.json serves a valid OpenAPI 3.1.0 document without auth', async () => {
    const res = await fetch(`${d.url}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = await res.json();
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('1.0.0');
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('describes every route, with its parameters, body and responses', () => {
    const doc = openApiDocument() as { paths: Record<string, Record<string, any>> };
    for (const r of ROUTES) {
      const op = doc.paths[r.path]?.[r.method.toLowerCase()];
      expect(op, `${r.method} ${r.path}`).toBeDefined();
      expect(op.operationId).toBe(r.operationId);
      const pathParams = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      expect(op.parameters.filter((p: any) => p.in === 'path').map((p: any) => p.name)).toEqual(pathParams);
      if (r.body) {
        expect(op.requestBody.content['application/json'].schema).toBeDefined();
        expect(op.requestBody.required, `${r.operationId} body required`).toBe(!r.body.safeParse({}).success);
      }
      expect(op.responses[String(r.status ?? 200)]).toBeDefined();
    }
  });

  it('names each response schema once under components.schemas and refers to it everywhere else', () => {
    const doc = openApiDocument() as any;
    const schemas = doc.components.schemas as Record<string, unknown>;
    for (const name of ['Task', 'Agent', 'Team', 'Mission', 'MissionDetail', 'Approval', 'Playbook', 'Skill', 'VaultEntry', 'Removed', 'Error', 'EventCategory']) {
      expect(schemas[name], name).toBeDefined();
    }
    const paths = JSON.stringify(doc.paths);
    for (const [name, body] of Object.entries(schemas)) {
      // No copy of a named schema anywhere in the operations: only $refs to it.
      expect(paths.includes(JSON.stringify(body)), `${name} is inlined`).toBe(false);
    }
    const data = (op: any, status = '200') => op.responses[status].content['application/json'].schema.properties.data;
    expect(data(doc.paths['/api/v1/tasks/{taskId}'].get)).toEqual({ $ref: '#/components/schemas/Task' });
    expect(data(doc.paths['/api/v1/tasks'].get)).toEqual({ type: 'array', items: { $ref: '#/components/schemas/Task' } });
    expect(JSON.stringify(schemas.MissionDetail)).toContain('"$ref":"#/components/schemas/Task"');
    // Every $ref resolves.
    for (const m of JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/(\w+)\/(\w+)"/g)) {
      expect(doc.components[m[1]!]?.[m[2]!], m[0]).toBeDefined();
    }
  });

  it('declares every error status a route can answer, with the envelope and its headers', () => {
    const doc = openApiDocument() as any;
    const statuses = (path: string, method: string) => Object.keys(doc.paths[path][method].responses).sort();
    expect(statuses('/api/v1/tasks/{taskId}', 'get')).toEqual(['200', '400', '401', '403', '404', '429', '500']);
    expect(statuses('/api/v1/tasks', 'post')).toEqual(['201', '400', '401', '403', '409', '413', '415', '422', '429', '500']);
    expect(statuses('/api/v1/tasks/{taskId}/transition', 'post')).toEqual(['200', '400', '401', '403', '404', '409', '413', '415', '429', '500']);
    expect(statuses('/healthz', 'get')).toEqual(['200', '400', '403', '500']);
    expect(doc.paths['/api/v1/tasks/{taskId}/transition'].post.responses['409'].description).toMatch(/`conflict`.*`invalid_transition`/);
    for (const [path, ops] of Object.entries(doc.paths) as [string, Record<string, any>][]) {
      for (const [method, op] of Object.entries(ops)) {
        for (const [status, res] of Object.entries(op.responses) as [string, any][]) {
          const where = `${method} ${path} ${status}`;
          expect(res.headers?.['X-Request-Id'], where).toEqual({ $ref: '#/components/headers/RequestId' });
          if (Number(status) >= 400) expect(res.content['application/json'].schema, where).toEqual({ $ref: '#/components/schemas/Error' });
          if (status === '429') expect(res.headers['Retry-After'], where).toBeDefined();
        }
      }
    }
    expect(doc.paths['/api/v1/tasks'].get.responses['200'].headers['X-Next-Cursor']).toEqual({ $ref: '#/components/headers/NextCursor' });
    expect(doc.paths['/api/v1/tasks/{taskId}'].get.responses['200'].headers['X-Next-Cursor']).toBeUndefined();
    expect(doc.components.responses.MethodNotAllowed.headers.Allow).toEqual({ $ref: '#/components/headers/Allow' });
    const stream = doc.paths['/v1/events'].get;
    expect(stream.parameters).toContainEqual(expect.objectContaining({ name: 'Last-Event-ID', in: 'header' }));
    // Request parts keep their descriptions (only ids are left out of them).
    expect(stream.parameters.find((p: any) => p.name === 'filter').description).toMatch(/^Comma-separated/);
    expect(doc.paths['/api/v1/tasks'].post.requestBody.content['application/json'].schema.properties.priority.description).toMatch(/normal/);
    expect(Object.keys(stream.responses)).toContain('503');
  });

  it('docs/openapi.json is the committed copy of the generated document (run `npm run docs` after changing routes)', () => {
    expect(JSON.parse(read('docs/openapi.json'))).toEqual(JSON.parse(JSON.stringify(openApiDocument())));
  });
});
