import { z } from 'zod';
import type { AnyRoute } from './route.js';

type Json = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Json {
  const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Json;
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
        properties: { path: { type: 'string' }, message: { type: 'string' } },
      },
    },
  },
};

function errorResponse(description: string): Json {
  return { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
}

function parameters(schema: z.ZodType | undefined, where: 'path' | 'query'): Json[] {
  if (!schema) return [];
  const js = jsonSchema(schema, 'input');
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
  for (const r of routes) {
    const responses: Record<string, Json> = {};
    const status = String(r.status ?? 200);
    if (r.rawContentType) {
      responses[status] = { description: r.summary, content: { [r.rawContentType]: { schema: { type: 'string' } } } };
    } else {
      responses[status] = {
        description: 'Success',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['ok', 'data'],
              properties: { ok: { type: 'boolean', const: true }, data: jsonSchema(r.response, 'output') },
            },
          },
        },
      };
    }
    if (r.params || r.query || r.body) responses['400'] = errorResponse('Invalid request (details name each invalid field).');
    if (r.auth !== 'public') responses['401'] = errorResponse('Missing or invalid API key.');
    responses.default = errorResponse('Error envelope; see docs/errors.md for codes and statuses.');

    const op: Json = {
      operationId: r.operationId,
      summary: r.summary,
      tags: [r.tag],
      parameters: [...parameters(r.params, 'path'), ...parameters(r.query, 'query')],
      responses,
    };
    if (r.description) op.description = r.description;
    if (r.auth === 'public') op.security = [];
    if (r.body) {
      // A body whose every field is optional may be left out: the server reads no body as {}.
      op.requestBody = { required: !r.body.safeParse({}).success, content: { 'application/json': { schema: jsonSchema(r.body, 'input') } } };
    }
    (paths[r.path] ??= {})[r.method.toLowerCase()] = op;
  }
  return {
    openapi: '3.1.0',
    info: { title: info.title, version: '1.0.0', description: info.description },
    servers: [{ url: 'http://127.0.0.1:7420' }],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API key from project.json, SERVICE_API_KEY or .svc/local.key.' } },
      schemas: { Error: errorSchema },
    },
  };
}
