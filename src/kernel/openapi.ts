import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { ERRORS, type ErrorCode } from './errors.js';
import { routeErrors, type AnyRoute } from './route.js';
import { MAX_JSON_DEPTH } from '../lib/json.js';

type Json = Record<string, unknown>;

// Named schemas: a zod schema given `.meta({ id: 'Task' })` becomes components.schemas.Task and
// every use of it, in any route, is a $ref. Only response (output) schemas are named: a request
// body is described inline in its input form (defaults make fields optional there), so a component
// never has two shapes.

const COMPONENT_REF = '#/components/schemas/';

/**
 * Converts one response schema, moving every named schema it uses into `named` (checking that a
 * name always means the same schema) and pointing its refs at components.schemas.
 */
function outputSchema(schema: z.ZodType, named: Record<string, Json>, where: string): Json {
  const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'output', unrepresentable: 'any' }) as Json;
  delete out.$schema;
  const defs = (out.$defs ?? {}) as Record<string, Json>;
  delete out.$defs;
  for (const [id, def] of Object.entries(defs)) {
    // zod names a cycle's schema __schemaN; a recursive Out schema must be given an id of its own.
    if (id.startsWith('__schema')) throw new Error(`${where}: a recursive schema needs .meta({ id }) to be documented`);
    const body = rewriteRefs(def) as Json;
    const seen = named[id];
    if (seen && !isDeepStrictEqual(seen, body)) throw new Error(`${where}: two different schemas are named ${id}`);
    named[id] = body;
  }
  return rewriteRefs(out) as Json;
}

function rewriteRefs(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(rewriteRefs);
  if (v === null || typeof v !== 'object') return v;
  const out: Json = {};
  for (const [k, x] of Object.entries(v)) {
    out[k] = k === '$ref' && typeof x === 'string' && x.startsWith('#/$defs/') ? COMPONENT_REF + x.slice('#/$defs/'.length) : rewriteRefs(x);
  }
  return out;
}

// The global metadata (descriptions, examples) without the ids, so nothing is pulled into $defs.
const unnamed = {
  get(schema: z.core.$ZodType) {
    const meta = z.globalRegistry.get(schema);
    if (!meta || !('id' in meta)) return meta;
    const { id: _id, ...rest } = meta;
    return rest;
  },
} as unknown as typeof z.globalRegistry;

/** Request parts (params, query, body) inline, in their input form, with no named components. */
function inputSchema(schema: z.ZodType): Json {
  const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any', metadata: unnamed }) as Json;
  delete out.$schema;
  return out;
}

const errorSchema: Json = {
  type: 'object',
  required: ['ok', 'code', 'error'],
  properties: {
    ok: { type: 'boolean', const: false },
    code: { type: 'string', description: 'Stable error code; see docs/errors.md.' },
    error: { type: 'string', description: 'Human-readable message.' },
    details: {
      type: 'array',
      description: 'Present on validation failures: one entry per invalid field.',
      items: {
        type: 'object',
        required: ['path', 'message'],
        properties: { path: { type: 'string', description: 'Where: params.x, query.x, body.x.y.' }, message: { type: 'string' } },
      },
    },
  },
};

const headers: Record<string, Json> = {
  RequestId: { description: 'Identifies this request in the daemon log; on every response.', schema: { type: 'string', format: 'uuid' } },
  NextCursor: { description: 'The cursor of the next page; absent on the last page.', schema: { type: 'string' } },
  RetryAfter: { description: 'Seconds to wait before trying again.', schema: { type: 'integer', minimum: 1 } },
  Allow: { description: 'The methods this path answers.', schema: { type: 'string' } },
  WWWAuthenticate: { description: 'Always `Bearer`.', schema: { type: 'string' } },
};
const headerRef = (name: string): Json => ({ $ref: `#/components/headers/${name}` });

/** Why each status can come back, for the response descriptions. */
const WHY: Partial<Record<ErrorCode, string>> = {
  invalid_request: `a parameter, query or body field is invalid, an unknown query parameter or body property was sent, or the JSON is malformed or nested deeper than ${MAX_JSON_DEPTH} levels (details name each field)`,
  forbidden: 'the Host or Origin header is not allowed, or the key is limited by grants',
  unauthorized: 'the API key is missing or not valid',
  rate_limited: 'too many failed authentications from this client',
  payload_too_large: 'the body is over server.maxBodyBytes',
  unsupported_media_type: 'the body is not application/json',
  internal: 'an unexpected error (logged with the request id; nothing internal is shown)',
};

function errorResponse(codes: ErrorCode[]): Json {
  const reasons = codes.map((c) => `\`${c}\`${WHY[c] ? `: ${WHY[c]}` : ''}`).join('; ');
  const res: Json = {
    description: `Error envelope. ${reasons}.`,
    headers: { 'X-Request-Id': headerRef('RequestId') } as Json,
    content: { 'application/json': { schema: { $ref: `${COMPONENT_REF}Error` } } },
  };
  const h = res.headers as Json;
  if (codes.includes('rate_limited')) h['Retry-After'] = headerRef('RetryAfter');
  if (codes.includes('unauthorized')) h['WWW-Authenticate'] = headerRef('WWWAuthenticate');
  return res;
}

function parameters(schema: z.ZodType | undefined, where: 'path' | 'query'): Json[] {
  if (!schema) return [];
  const js = inputSchema(schema);
  const props = (js.properties ?? {}) as Record<string, Json>;
  const required = new Set((js.required as string[] | undefined) ?? []);
  return Object.entries(props).map(([name, s]) => {
    const { description, ...rest } = s;
    const p: Json = { name, in: where, required: where === 'path' || required.has(name), schema: rest };
    if (description) p.description = description;
    return p;
  });
}

/** Builds the OpenAPI 3.1.0 document from the route list; nothing about the API is written twice. */
export function buildOpenApi<App>(routes: readonly AnyRoute<App>[], info: { title: string; description: string }): Json {
  const paths: Record<string, Record<string, Json>> = {};
  const named: Record<string, Json> = {};
  for (const r of routes) {
    const responses: Record<string, Json> = {};
    const status = String(r.status ?? 200);
    const okHeaders: Json = { 'X-Request-Id': headerRef('RequestId') };
    const paged = r.query instanceof z.ZodObject && 'cursor' in r.query.shape;
    if (paged) okHeaders['X-Next-Cursor'] = headerRef('NextCursor');
    if (r.rawContentType) {
      responses[status] = { description: r.summary, headers: okHeaders, content: { [r.rawContentType]: { schema: { type: 'string' } } } };
    } else {
      const envelope = z.object({ ok: z.literal(true), data: r.response });
      responses[status] = { description: 'Success', headers: okHeaders, content: { 'application/json': { schema: outputSchema(envelope, named, r.operationId) } } };
    }
    const byStatus = new Map<number, ErrorCode[]>();
    for (const code of routeErrors(r as AnyRoute<unknown>)) {
      const s = ERRORS[code].status;
      byStatus.set(s, [...(byStatus.get(s) ?? []), code]);
    }
    for (const [s, codes] of byStatus) responses[String(s)] = errorResponse(codes);

    const params = [...parameters(r.params, 'path'), ...parameters(r.query, 'query')];
    for (const h of r.requestHeaders ?? []) params.push({ name: h.name, in: 'header', required: false, description: h.description, schema: inputSchema(h.schema) });
    const op: Json = { operationId: r.operationId, summary: r.summary, tags: [r.tag], parameters: params, responses };
    if (r.description) op.description = r.description;
    if (r.auth === 'public') op.security = [];
    if (r.body) {
      // A body whose every field is optional may be left out: the server reads no body as {}.
      op.requestBody = { required: !r.body.safeParse({}).success, content: { 'application/json': { schema: inputSchema(r.body) } } };
    }
    (paths[r.path] ??= {})[r.method.toLowerCase()] = op;
  }
  const schemas: Record<string, Json> = { Error: errorSchema };
  for (const id of Object.keys(named).sort()) {
    if (Object.hasOwn(schemas, id)) throw new Error(`schema name ${id} is reserved`);
    schemas[id] = named[id]!;
  }
  return {
    openapi: '3.1.0',
    info: { title: info.title, version: '1.0.0', description: info.description },
    servers: [{ url: 'http://127.0.0.1:7420' }],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API key from project.json, SERVICE_API_KEY or .svc/local.key.' } },
      schemas,
      headers,
      responses: {
        // No operation can declare it: it is what any path answers to a method it has no operation for.
        MethodNotAllowed: {
          description: 'Any path answers a method it does not define with 405 `method_not_allowed` and the methods it does define in Allow.',
          headers: { Allow: headerRef('Allow'), 'X-Request-Id': headerRef('RequestId') },
          content: { 'application/json': { schema: { $ref: `${COMPONENT_REF}Error` } } },
        },
      },
    },
  };
}
