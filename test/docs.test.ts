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

  it('docs/openapi.json is the committed copy of the generated document (run `npm run docs` after changing routes)', () => {
    expect(JSON.parse(read('docs/openapi.json'))).toEqual(JSON.parse(JSON.stringify(openApiDocument())));
  });
});
