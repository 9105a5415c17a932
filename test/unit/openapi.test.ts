import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildOpenApi, type SchemaNames } from '../../src/kernel/openapi.js';
import { errorFormat, routeDefiner, type AnyRoute } from '../../src/kernel/route.js';
import { formatJson } from '../../src/lib/format-json.js';
import { atPointer, dereference } from '../../src/lib/json-ref.js';
import { loadApi } from '../../src/routes.js';

const { routes: ROUTES, schemaNames: API_SCHEMA_NAMES } = await loadApi();
const route = routeDefiner<unknown>();
const info = { title: 't', description: 'd' };
type Doc = { paths: Record<string, Record<string, any>>; components: Record<string, Record<string, any>> };
const build = (routes: AnyRoute<unknown>[], names: SchemaNames = {}) => buildOpenApi(routes, info, names) as Doc;
const get = (path: string, operationId: string, response: z.ZodType, extra: Partial<AnyRoute<unknown>> = {}) =>
  route({ method: 'GET', path, operationId, summary: '', tag: 't', response, handler: () => null as never, ...extra });
const post = (path: string, operationId: string, body: z.ZodType, response: z.ZodType) =>
  route({ method: 'POST', path, operationId, summary: '', tag: 't', body, response, handler: () => null as never });

describe('OpenAPI generator: component names', () => {
  it('refuses two different schemas under one name, whether named by .meta({ id }) or by the table', () => {
    const a = z.object({ x: z.string() }).meta({ id: 'Thing' });
    const b = z.object({ y: z.string() }).meta({ id: 'Thing' });
    expect(() => build([get('/a', 'getA', a), get('/b', 'getB', b)])).toThrow(/two different components are named Thing/);

    const c = z.object({ x: z.string() });
    const d = z.object({ y: z.number() });
    expect(() => build([get('/c', 'getC', c), get('/d', 'getD', d)], { Thing: c, Thing2: d })).not.toThrow();
    expect(() => build([get('/c', 'getC', c), get('/d', 'getD', d)], { Thing: c, Other: c })).toThrow(/named both Thing and Other/);
    expect(() => build([get('/a', 'getA', a)], { Renamed: a })).toThrow(/schema Thing is also named Renamed/);
    // A table name that .meta({ id }) already uses for another schema.
    expect(() => build([get('/a', 'getA', a), get('/d', 'getD', d)], { Thing: d })).toThrow(/two different components are named Thing/);
    // The generator's own names cannot be taken.
    expect(() => build([get('/c', 'getC', c)], { Ok: c })).toThrow(/schema name Ok is reserved/);
  });

  it('names the same schema the same way wherever it is used, and writes it once', () => {
    const stamp = z.iso.datetime().describe('When.');
    const item = z.object({ id: z.string(), at: stamp, next: stamp.nullable().describe('Next time.') });
    const doc = build([get('/items', 'listItems', z.array(item)), get('/items/{id}', 'getItem', item, { params: z.strictObject({ id: z.string() }) })], { Item: item, Stamp: stamp });
    const data = (op: any) => op.responses['200'].content['application/json'].schema.allOf[1].properties.data;
    expect(data(doc.paths['/items']!.get)).toEqual({ type: 'array', items: { $ref: '#/components/schemas/Item' } });
    expect(data(doc.paths['/items/{id}']!.get)).toEqual({ $ref: '#/components/schemas/Item' });
    expect(doc.components.schemas.Item.properties).toEqual({
      id: { type: 'string' },
      at: { $ref: '#/components/schemas/Stamp' },
      next: { anyOf: [{ $ref: '#/components/schemas/Stamp' }, { type: 'null' }], description: 'Next time.' },
    });
    expect(doc.components.schemas.Stamp).toMatchObject({ type: 'string', format: 'date-time', description: 'When.' });
  });

  it('shares a named schema between requests and answers when both forms are the same, and names the input form <name>Input when they differ', () => {
    const plain = z.strictObject({ a: z.string(), b: z.int().optional() });
    const defaulted = z.strictObject({ a: z.string(), b: z.int().default(1) });
    const doc = build([post('/p', 'createP', z.strictObject({ p: plain }), plain), post('/d', 'createD', z.strictObject({ d: defaulted }), defaulted)], { Plain: plain, Defaulted: defaulted });
    const body = (path: string) => doc.paths[path]!.post.requestBody.content['application/json'].schema;
    expect(body('/p').properties.p).toEqual({ $ref: '#/components/schemas/Plain' });
    expect(body('/d').properties.d).toEqual({ $ref: '#/components/schemas/DefaultedInput' });
    expect(Object.keys(doc.components.schemas).sort()).toEqual(['Defaulted', 'DefaultedInput', 'Error', 'Ok', 'Plain']);
    // In a request `b` may be left out (it has a default); in an answer it is always there.
    expect(doc.components.schemas.DefaultedInput.required).toEqual(['a']);
    expect(doc.components.schemas.Defaulted.required).toEqual(['a', 'b']);
    // A schema whose input form differs only through a named part it holds differs too.
    const outer = z.strictObject({ inner: defaulted });
    const doc2 = build([post('/o', 'createO', outer, outer)], { Outer: outer, Defaulted: defaulted });
    expect(doc2.paths['/o']!.post.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/OuterInput' });
    expect(doc2.components.schemas.OuterInput.properties.inner).toEqual({ $ref: '#/components/schemas/DefaultedInput' });
    expect(doc2.components.schemas.Outer.properties.inner).toEqual({ $ref: '#/components/schemas/Defaulted' });
  });

  it('names error responses after their codes, one component for every route that can answer the same', () => {
    const doc = build([
      get('/x/{id}', 'getX', z.null(), { params: z.strictObject({ id: z.string() }), errors: ['data_not_found', 'conflict', 'invalid_transition'] }),
      get('/y/{id}', 'getY', z.null(), { params: z.strictObject({ id: z.string() }), errors: ['invalid_transition', 'conflict'] }),
    ]);
    for (const path of ['/x/{id}', '/y/{id}']) expect(doc.paths[path]!.get.responses['409']).toEqual({ $ref: '#/components/responses/ConflictOrInvalidTransition' });
    expect(doc.paths['/x/{id}']!.get.responses['404']).toEqual({ $ref: '#/components/responses/NotFoundOrDataNotFound' });
    expect(doc.paths['/y/{id}']!.get.responses['404']).toEqual({ $ref: '#/components/responses/NotFound' });
    expect(doc.components.responses.ConflictOrInvalidTransition.description).toBe('Error envelope. `conflict`; `invalid_transition`.');
  });

  it('is the same document whatever order the routes come in: names depend on the routes, not on which came first', () => {
    const names = (routes: AnyRoute<unknown>[]) => buildOpenApi(routes, info, API_SCHEMA_NAMES) as Doc;
    const forward = names(ROUTES as AnyRoute<unknown>[]);
    const backward = names([...ROUTES].reverse() as AnyRoute<unknown>[]);
    expect(JSON.stringify(backward.components)).toBe(JSON.stringify(forward.components));
  });
});

describe('OpenAPI generator: error formats and streamed answers', () => {
  const teapot = errorFormat({ id: 'Teapot', schema: z.strictObject({ fault: z.string(), status: z.int() }), description: 'A teapot error.', format: (e) => ({ fault: e.code, status: e.status }) });
  const chunk = z.object({ n: z.int() });
  const routes = [
    // A route with a format and a streamed answer beside its enveloped one.
    route({
      method: 'POST',
      path: '/brew',
      operationId: 'brew',
      summary: 's',
      tag: 't',
      body: z.strictObject({ tea: z.string() }),
      response: z.object({ cup: z.string() }),
      stream: { data: chunk, done: 'END', description: 'With `stream`.' },
      errorBody: teapot,
      errors: ['conflict'],
      handler: () => null as never,
    }),
    route({ method: 'GET', path: '/pots', operationId: 'listPots', summary: 's', tag: 't', response: z.array(z.string()), errorBody: teapot, handler: () => null as never }),
    // A path whose routes differ in format: its 405 is the envelope's.
    route({
      method: 'GET',
      path: '/pots/{id}',
      operationId: 'getPot',
      summary: 's',
      tag: 't',
      params: z.strictObject({ id: z.string() }),
      response: z.string(),
      errorBody: teapot,
      handler: () => null as never,
    }),
    route({ method: 'DELETE', path: '/pots/{id}', operationId: 'dropPot', summary: 's', tag: 't', params: z.strictObject({ id: z.string() }), response: z.null(), handler: () => null as never }),
  ];

  it('declares a streamed answer beside the JSON one, and each error of a route in its format, kernel errors included', async () => {
    const doc = build(routes);
    const brew = doc.paths['/brew']!.post;
    expect(Object.keys(brew.responses['200'].content)).toEqual(['application/json', 'text/event-stream']);
    expect(brew.responses['200'].content['application/json'].schema.allOf[0]).toEqual({ $ref: '#/components/schemas/Ok' });
    expect(brew.responses['200'].content['text/event-stream'].schema).toEqual({
      description: expect.stringMatching(/^With `stream`\. Server-Sent Events.*`END` ends the stream\.$/),
      anyOf: [
        { type: 'object', properties: { n: expect.objectContaining({ type: 'integer' }) }, required: ['n'], additionalProperties: false },
        { type: 'string', const: 'END', description: expect.any(String) },
      ],
    });
    expect(brew.responses).toEqual({
      '200': expect.anything(),
      '400': { $ref: '#/components/responses/TeapotInvalidRequest' },
      '401': { $ref: '#/components/responses/TeapotUnauthorized' },
      '403': { $ref: '#/components/responses/TeapotForbidden' },
      '409': { $ref: '#/components/responses/TeapotConflict' },
      '413': { $ref: '#/components/responses/TeapotPayloadTooLarge' },
      '415': { $ref: '#/components/responses/TeapotUnsupportedMediaType' },
      '429': { $ref: '#/components/responses/TeapotRateLimited' },
      '500': { $ref: '#/components/responses/TeapotInternal' },
    });
    expect(doc.components.schemas.TeapotError).toMatchObject({ required: ['fault', 'status'] });
    expect(doc.components.responses.TeapotForbidden).toMatchObject({
      description: expect.stringMatching(/^A teapot error\. `forbidden`: the Host or Origin header/),
      content: { 'application/json': { schema: { $ref: '#/components/schemas/TeapotError' } } },
    });
    // A route without a format keeps the envelope, even on a path shared with one.
    expect(doc.paths['/pots/{id}']!.delete.responses['404']).toEqual({ $ref: '#/components/responses/NotFound' });
    expect(doc.paths['/pots/{id}']!.get.responses['404']).toEqual({ $ref: '#/components/responses/TeapotNotFound' });
    // The 405 of the paths whose routes all share the format, in that format; the others', the envelope's.
    expect(doc.components.responses.TeapotMethodNotAllowed.description).toBe(
      'A teapot error. `/brew`, `/pots` answer a method they do not define with 405 `method_not_allowed` and the methods they do define in Allow.',
    );
    expect(doc.components.responses.TeapotMethodNotAllowed.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/TeapotError' });
    expect(doc.components.responses.MethodNotAllowed.description).toMatch(/^Any path answers .* in that format: TeapotMethodNotAllowed\.$/);
    // Whatever order the routes come in.
    expect(JSON.stringify(build([...routes].reverse()).components)).toBe(JSON.stringify(doc.components));
    const result = await new Validator().validate(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
  });

  it('documents the body a raw route writes by its response schema, unenveloped', () => {
    const raw = get('/raw', 'getRaw', z.object({ a: z.string() }), { rawContentType: 'application/json' });
    expect(build([raw]).paths['/raw']!.get.responses['200'].content).toEqual({
      'application/json': { schema: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false } },
    });
  });

  it('refuses two error formats under one id', () => {
    const other = errorFormat({ id: 'Teapot', schema: z.object({ x: z.string() }), description: 'd', format: () => ({ x: '' }) });
    expect(() => build([...routes, get('/other', 'getOther', z.null(), { errorBody: other })])).toThrow(/two error formats are named Teapot/);
    expect(() => errorFormat({ id: 'teapot', schema: z.null(), description: '', format: () => null })).toThrow(/PascalCase/);
  });
});

describe('formatJson', () => {
  it('is the same JSON, indented, with what fits on a line kept on it', () => {
    const value = { a: [1, 2, { b: 'c' }], long: { text: 'x'.repeat(200), n: null }, empty: {}, none: [] };
    const text = formatJson(value, 40);
    expect(JSON.parse(text)).toEqual(value);
    expect(text).toBe(['{', '  "a": [1,2,{"b":"c"}],', '  "long": {', `    "text": "${'x'.repeat(200)}",`, '    "n": null', '  },', '  "empty": {},', '  "none": []', '}', ''].join('\n'));
  });
});

describe('json-ref', () => {
  const doc = {
    defs: { 'a/b': { type: 'string', description: 'A.' }, 'c~d': [1, 2], loop: { items: { $ref: '#/defs/loop' } } },
    use: { x: { $ref: '#/defs/a~1b', description: 'Mine.' }, y: { $ref: '#/defs/a~1b' }, z: { $ref: '#/defs/c~0d/1' } },
    properties: { $ref: { type: 'string' } },
  };

  it('reads escaped pointers, own keys only', () => {
    expect(atPointer(doc, '#/defs/a~1b')).toEqual({ type: 'string', description: 'A.' });
    expect(atPointer(doc, '#/defs/c~0d/0')).toBe(1);
    expect(atPointer(doc, '#/defs/toString')).toBeUndefined();
    expect(atPointer(doc, 'other.json#/defs')).toBeUndefined();
  });

  it('writes every reference out, the keywords beside it winning, and refuses one that names nothing or itself', () => {
    const { defs: _defs, ...rest } = doc;
    const withoutLoop = { ...rest, defs: { 'a/b': doc.defs['a/b'], 'c~d': doc.defs['c~d'] } };
    expect(dereference(withoutLoop)).toEqual({
      ...withoutLoop,
      use: { x: { type: 'string', description: 'Mine.' }, y: { type: 'string', description: 'A.' }, z: 2 },
    });
    expect(() => dereference(doc)).toThrow(/#\/defs\/loop contains itself/);
    expect(() => dereference({ a: { $ref: '#/nope' } })).toThrow(/names nothing/);
  });
});
