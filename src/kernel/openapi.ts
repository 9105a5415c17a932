import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { ERRORS, type ErrorCode } from './errors.js';
import { routeErrors, sharedErrorFormat, type AnyRoute, type ErrorFormat } from './route.js';
import { MAX_JSON_DEPTH } from '../lib/json.js';

type Json = Record<string, unknown>;

// Everything shared is written once under components and $ref'd from the operations, so the
// document stays small however many routes there are. Every name comes from the route data, never
// from the schema text: a zod schema given `.meta({ id: 'Task' })`, or named in the table passed to
// buildOpenApi, is components.schemas.Task; an error response is named after the codes it can carry
// (components.responses.NotFoundOrDataNotFound); Error, Ok (the success envelope) and
// MethodNotAllowed are the generator's own. `.meta({ id })` names a schema in every JSON Schema the
// daemon writes (MCP tool schemas and the event catalog too, which read best inline); the table
// names it in this document alone. A name given to two different bodies is an error, never a
// silent overwrite.
//
// Request parts are described in their input form, where defaults make fields optional. A named
// schema used in a request is its own component when both forms are the same (a strict object
// with no defaults), and `<name>Input` when they differ, so a component never has two shapes.

/** Component names for schemas the document shares that carry no `.meta({ id })`: name → schema. */
export type SchemaNames = Readonly<Record<string, z.ZodType>>;

type Registry = typeof z.globalRegistry;
type Io = 'input' | 'output';

const SCHEMA_REF = '#/components/schemas/';
const RESPONSE_REF = '#/components/responses/';
const DEFS_REF = '#/$defs/';

/** Adds `body` under `name`, or checks that what is already there is the same. */
function addComponent(into: Record<string, Json>, name: string, body: Json, where: string): void {
  const seen = Object.hasOwn(into, name) ? into[name] : undefined;
  if (seen && !isDeepStrictEqual(seen, body)) throw new Error(`${where}: two different components are named ${name}`);
  into[name] = body;
}

/** Points every `#/$defs/<id>` ref at components.schemas, under the id's component name. */
function rewriteRefs(v: unknown, nameOf: (id: string) => string): unknown {
  if (Array.isArray(v)) return v.map((x) => rewriteRefs(x, nameOf));
  if (v === null || typeof v !== 'object') return v;
  const out: Json = {};
  for (const [k, x] of Object.entries(v)) {
    out[k] = k === '$ref' && typeof x === 'string' && x.startsWith(DEFS_REF) ? SCHEMA_REF + nameOf(x.slice(DEFS_REF.length)) : rewriteRefs(x, nameOf);
  }
  return out;
}

function refsIn(v: unknown, into: Set<string> = new Set()): Set<string> {
  if (Array.isArray(v)) for (const x of v) refsIn(x, into);
  else if (v !== null && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      if (k === '$ref' && typeof x === 'string' && x.startsWith(DEFS_REF)) into.add(x.slice(DEFS_REF.length));
      else refsIn(x, into);
    }
  }
  return into;
}

const sameName = (id: string): string => id;

/** The zod schemas of one document, converted, with every named one moved to components.schemas. */
class SchemaComponents {
  readonly named: Record<string, Json> = {};
  private readonly metadata: Registry;
  /** Which zod schema each id seen so far names (to convert it in the other form). */
  private readonly schemaOf = new Map<string, z.core.$ZodType>();
  private readonly bothFormsSame = new Map<string, boolean>();

  constructor(names: SchemaNames) {
    const ids = new Map<z.core.$ZodType, string>();
    for (const [id, schema] of Object.entries(names)) {
      const own = z.globalRegistry.get(schema)?.id;
      if (own !== undefined && own !== id) throw new Error(`schema ${own} is also named ${id}`);
      const other = ids.get(schema);
      if (other !== undefined) throw new Error(`one schema is named both ${other} and ${id}`);
      ids.set(schema, id);
    }
    // The global metadata (descriptions, examples) with the table's ids added.
    this.metadata = {
      get: (schema: z.core.$ZodType) => {
        const meta = z.globalRegistry.get(schema);
        const id = ids.get(schema) ?? meta?.id;
        if (id === undefined) return meta;
        if (!this.schemaOf.has(id)) this.schemaOf.set(id, schema);
        return { ...meta, id };
      },
    } as unknown as Registry;
  }

  /** zod's JSON Schema of `schema`, and of each named schema it uses (`defs`, by id). */
  private convert(schema: z.ZodType, io: Io, where: string): { root: Json; defs: Record<string, Json> } {
    // Wrapped, so that a named schema at the top is a $ref too, like everywhere else.
    const out = z.toJSONSchema(z.object({ x: schema }), { target: 'draft-2020-12', io, unrepresentable: 'any', metadata: this.metadata }) as Json;
    const defs = (out.$defs ?? {}) as Record<string, Json>;
    // zod names a cycle's schema __schemaN; a recursive schema must be given a name of its own.
    for (const id of Object.keys(defs)) if (id.startsWith('__schema')) throw new Error(`${where}: a recursive schema needs a name to be documented`);
    return { root: (out.properties as Record<string, Json>).x!, defs };
  }

  /** A response schema. */
  output(schema: z.ZodType, where: string): Json {
    const { root, defs } = this.convert(schema, 'output', where);
    for (const [id, def] of Object.entries(defs)) addComponent(this.named, id, rewriteRefs(def, sameName) as Json, where);
    return rewriteRefs(root, sameName) as Json;
  }

  /** A request part (path parameters, query, body, a header). */
  input(schema: z.ZodType, where: string): Json {
    const { root, defs } = this.convert(schema, 'input', where);
    const nameOf = (id: string): string => (this.sameInBothForms(id, defs, where) ? id : `${id}Input`);
    for (const [id, def] of Object.entries(defs)) addComponent(this.named, nameOf(id), rewriteRefs(def, nameOf) as Json, where);
    return rewriteRefs(root, nameOf) as Json;
  }

  /** Whether the input form of named schema `id` (in `inputDefs`) is its output form, refs included. */
  private sameInBothForms(id: string, inputDefs: Record<string, Json>, where: string, visiting = new Set<string>()): boolean {
    const known = this.bothFormsSame.get(id);
    if (known !== undefined) return known;
    // A cycle back to a schema being decided: the answer is the rest of that schema's.
    if (visiting.has(id)) return true;
    visiting.add(id);
    const schema = this.schemaOf.get(id);
    if (!schema) throw new Error(`${where}: named schema ${id} was not seen`);
    const inForm = inputDefs[id];
    const outForm = this.convert(schema as z.ZodType, 'output', where).defs[id];
    const same = isDeepStrictEqual(inForm, outForm) && [...refsIn(inForm)].every((ref) => this.sameInBothForms(ref, inputDefs, where, visiting));
    visiting.delete(id);
    if (visiting.size === 0) this.bothFormsSame.set(id, same);
    return same;
  }
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

/**
 * The success envelope. An operation's answer is `allOf: [Ok, {properties: {data: <its schema>}}]`:
 * `data` is declared here so that additionalProperties allows it, and typed by each operation.
 */
const okSchema: Json = {
  type: 'object',
  required: ['ok', 'data'],
  properties: { ok: { type: 'boolean', const: true }, data: { description: "The answer; its schema is the operation's." } },
  additionalProperties: false,
};

const okEnvelope = (data: Json): Json => ({ allOf: [{ $ref: `${SCHEMA_REF}Ok` }, { properties: { data }, required: ['data'] }] });

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

/** How a route's failures are written: the envelope, or its own error format. */
interface ErrorStyle {
  /** Prefix of the response components' names ('' for the envelope). */
  prefix: string;
  description: string;
  schema: Json;
}

const ENVELOPE: ErrorStyle = { prefix: '', description: 'Error envelope.', schema: { $ref: `${SCHEMA_REF}Error` } };

function errorResponse(codes: ErrorCode[], style: ErrorStyle): Json {
  const reasons = codes.map((c) => `\`${c}\`${WHY[c] ? `: ${WHY[c]}` : ''}`).join('; ');
  const res: Json = {
    description: `${style.description} ${reasons}.`,
    headers: { 'X-Request-Id': headerRef('RequestId') } as Json,
    content: { 'application/json': { schema: style.schema } },
  };
  const h = res.headers as Json;
  if (codes.includes('rate_limited')) h['Retry-After'] = headerRef('RetryAfter');
  if (codes.includes('unauthorized')) h['WWW-Authenticate'] = headerRef('WWWAuthenticate');
  return res;
}

const ERROR_ORDER = Object.keys(ERRORS) as ErrorCode[];
const pascal = (code: string): string => code.replace(/(?:^|_)([a-z])/g, (_m, ch: string) => ch.toUpperCase());

/**
 * A route's error responses by status, each a $ref to components.responses named after its codes
 * in registry order (NotFoundOrDataNotFound), so routes that can answer the same share one.
 */
function errorResponses(route: AnyRoute<unknown>, style: ErrorStyle, shared: Record<string, Json>): Record<string, Json> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of routeErrors(route)) {
    const s = ERRORS[code].status;
    byStatus.set(s, [...(byStatus.get(s) ?? []), code]);
  }
  const out: Record<string, Json> = {};
  for (const [s, codes] of byStatus) {
    codes.sort((a, b) => ERROR_ORDER.indexOf(a) - ERROR_ORDER.indexOf(b));
    const name = style.prefix + codes.map(pascal).join('Or');
    addComponent(shared, name, errorResponse(codes, style), route.operationId);
    out[String(s)] = { $ref: RESPONSE_REF + name };
  }
  return out;
}

function parameters(schemas: SchemaComponents, schema: z.ZodType | undefined, where: 'path' | 'query', operationId: string): Json[] {
  if (!schema) return [];
  const js = schemas.input(schema, operationId);
  const props = (js.properties ?? {}) as Record<string, Json>;
  const required = new Set((js.required as string[] | undefined) ?? []);
  return Object.entries(props).map(([name, s]) => {
    const { description, ...rest } = s;
    const p: Json = { name, in: where, required: where === 'path' || required.has(name), schema: rest };
    if (description) p.description = description;
    return p;
  });
}

// Any path answers a method it has no operation for with this; no operation can declare it. A path
// whose operations share an error format answers it in that format (<id>MethodNotAllowed).
function methodNotAllowed(style: ErrorStyle, paths: string[], others: string[]): Json {
  const [who, it] =
    paths.length === 0 ? ['Any path answers', 'it does'] : paths.length === 1 ? [`\`${paths[0]}\` answers`, 'it does'] : [`${paths.map((p) => `\`${p}\``).join(', ')} answer`, 'they do'];
  const format = style === ENVELOPE ? '' : `${style.description} `;
  const elsewhere = others.length ? ` A path whose operations answer in another error format answers it in that format: ${others.join(', ')}.` : '';
  return {
    description: `${format}${who} a method ${it} not define with 405 \`method_not_allowed\` and the methods ${it} define in Allow.${elsewhere}`,
    headers: { Allow: headerRef('Allow'), 'X-Request-Id': headerRef('RequestId') },
    content: { 'application/json': { schema: style.schema } },
  };
}

/** The alternatives of a schema that is nothing but `anyOf` (a union), to list beside another. */
const onlyAnyOf = (schema: Json): Json[] | undefined => (Object.keys(schema).length === 1 && Array.isArray(schema.anyOf) ? (schema.anyOf as Json[]) : undefined);

/** The success status's content: the enveloped `data`, or the body the handler writes, and the event stream. */
function successContent(r: AnyRoute<unknown>, schemas: SchemaComponents): Json {
  const content: Json = r.rawContentType
    ? { [r.rawContentType]: { schema: schemas.output(r.response, r.operationId) } }
    : { 'application/json': { schema: okEnvelope(schemas.output(r.response, r.operationId)) } };
  if (r.stream) {
    if (Object.hasOwn(content, 'text/event-stream')) throw new Error(`${r.operationId}: a stream declared twice`);
    const data = schemas.output(r.stream.data, r.operationId);
    const done: Json = { type: 'string', const: r.stream.done, description: "The last event's data: the stream is over." };
    content['text/event-stream'] = {
      schema: {
        description: `${r.stream.description} Server-Sent Events: this is the schema of each event's \`data:\`${r.stream.done === undefined ? '' : `; \`${r.stream.done}\` ends the stream`}.`,
        ...(r.stream.done === undefined ? data : { anyOf: [...(onlyAnyOf(data) ?? [data]), done] }),
      },
    };
  }
  return content;
}

/** Builds the OpenAPI 3.1.0 document from the route list; nothing about the API is written twice. */
export function buildOpenApi<App>(routes: readonly AnyRoute<App>[], info: { title: string; description: string }, names: SchemaNames = {}): Json {
  // Each error format's schema is a component named after it (OpenAiError), like the envelope's Error.
  const formats = new Map<string, ErrorFormat>();
  for (const r of routes) {
    const f = r.errorBody;
    if (!f) continue;
    if ((formats.get(f.id) ?? f) !== f) throw new Error(`two error formats are named ${f.id}`);
    formats.set(f.id, f);
  }
  const formatNames: Record<string, z.ZodType> = {};
  for (const [id, f] of formats) formatNames[`${id}Error`] = f.schema;
  const schemas = new SchemaComponents({ ...names, ...formatNames });
  const styles = new Map<ErrorFormat | undefined, ErrorStyle>([[undefined, ENVELOPE]]);
  for (const [id, f] of formats) styles.set(f, { prefix: id, description: f.description, schema: schemas.output(f.schema, `error format ${id}`) });

  const paths: Record<string, Record<string, Json>> = {};
  const responseComponents: Record<string, Json> = {};
  const headerUses = new Map<object, number>();
  for (const r of routes) for (const h of r.requestHeaders ?? []) headerUses.set(h, (headerUses.get(h) ?? 0) + 1);
  const parameterComponents: Record<string, Json> = {};
  for (const r of routes) {
    const status = String(r.status ?? 200);
    const okHeaders: Json = { 'X-Request-Id': headerRef('RequestId') };
    const paged = r.query instanceof z.ZodObject && 'cursor' in r.query.shape;
    if (paged) okHeaders['X-Next-Cursor'] = headerRef('NextCursor');
    const ok: Json = { description: r.rawContentType || r.stream ? r.summary : 'Success', headers: okHeaders, content: successContent(r as AnyRoute<unknown>, schemas) };
    const responses: Record<string, Json> = { [status]: ok, ...errorResponses(r as AnyRoute<unknown>, styles.get(r.errorBody)!, responseComponents) };

    const params = [...parameters(schemas, r.params, 'path', r.operationId), ...parameters(schemas, r.query, 'query', r.operationId)];
    for (const h of r.requestHeaders ?? []) {
      const param = { name: h.name, in: 'header', required: false, description: h.description, schema: schemas.input(h.schema, r.operationId) };
      if ((headerUses.get(h) ?? 0) < 2) {
        params.push(param);
        continue;
      }
      // A header several operations read is written once, as a parameter component.
      const id = `${h.name
        .split('-')
        .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
        .join('')}Header`;
      parameterComponents[id] = param;
      params.push({ $ref: `#/components/parameters/${id}` });
    }
    const op: Json = { operationId: r.operationId, summary: r.summary, tags: [r.tag], parameters: params, responses };
    if (r.description) op.description = r.description;
    if (r.auth === 'public') op.security = [];
    if (r.body) {
      // A body whose every field is optional may be left out: the server reads no body as {}.
      op.requestBody = { required: !r.body.safeParse({}).success, content: { 'application/json': { schema: schemas.input(r.body, r.operationId) } } };
    }
    (paths[r.path] ??= {})[r.method.toLowerCase()] = op;
  }
  // The 405 of each path is in the error format its routes share, as the server answers it.
  const pathsIn = new Map<ErrorFormat | undefined, string[]>([[undefined, []]]);
  for (const path of Object.keys(paths).sort()) {
    const format = sharedErrorFormat(routes.filter((r) => r.path === path));
    if (format) pathsIn.set(format, [...(pathsIn.get(format) ?? []), path]);
  }
  const formatted = [...formats.values()].filter((f) => pathsIn.has(f)).sort((a, b) => (a.id < b.id ? -1 : 1));
  for (const [format, inFormat] of pathsIn) {
    const name = `${format?.id ?? ''}MethodNotAllowed`;
    responseComponents[name] = methodNotAllowed(styles.get(format)!, inFormat, format ? [] : formatted.map((f) => `${f.id}MethodNotAllowed`));
  }
  const schemaComponents: Record<string, Json> = { Error: errorSchema, Ok: okSchema };
  for (const id of Object.keys(schemas.named).sort()) {
    if (Object.hasOwn(schemaComponents, id)) throw new Error(`schema name ${id} is reserved`);
    schemaComponents[id] = schemas.named[id]!;
  }
  const responses: Record<string, Json> = {};
  for (const name of Object.keys(responseComponents).sort()) responses[name] = responseComponents[name]!;
  return {
    openapi: '3.1.0',
    info: { title: info.title, version: '1.0.0', description: info.description },
    servers: [{ url: 'http://127.0.0.1:7420' }],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API key from project.json, SERVICE_API_KEY or .svc/local.key.' } },
      schemas: schemaComponents,
      headers,
      responses,
      ...(Object.keys(parameterComponents).length
        ? {
            parameters: Object.fromEntries(
              Object.keys(parameterComponents)
                .sort()
                .map((k) => [k, parameterComponents[k]!]),
            ),
          }
        : {}),
    },
  };
}
