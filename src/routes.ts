import { z } from 'zod';
import { route, type App } from './app.js';
import { buildOpenApi, type SchemaNames } from './kernel/openapi.js';
import { RAW_RESPONSE as RAW, type AnyRoute } from './kernel/route.js';
import { Timestamp } from './resources/common.js';
import { loadResources } from './resources/index.js';

// The whole API, top to bottom: every resource's routes in the order of src/resources/index.ts,
// then this document. A route no descriptor reaches does not exist.

export interface Api {
  routes: AnyRoute<App>[];
  /** OpenAPI component names for the schemas that carry no `.meta({ id })`: the resources', and the ones they share. */
  schemaNames: SchemaNames;
  /** The OpenAPI 3.1.0 document of `routes` (built once, at its first use). */
  openApiDocument(): Record<string, unknown>;
}

/** Names shared by every resource. A schema that more than one operation uses needs a name (its resource's server schemaNames) or a `.meta({ id })`. */
const SHARED_NAMES: SchemaNames = { Timestamp };

async function buildApi(): Promise<Api> {
  const resources = await loadResources();
  const schemaNames: SchemaNames = Object.assign({}, SHARED_NAMES, ...resources.map((r) => r.server.schemaNames ?? {}));
  let cached: Record<string, unknown> | undefined;
  const openApiDocument = () =>
    (cached ??= buildOpenApi(
      routes,
      {
        title: 'svc',
        description:
          'Local control plane for teams of AI coding agents: tasks, missions and playbooks, agents and teams, skills, approvals, the vault and live events. ' +
          'Every response carries X-Request-Id; every GET also answers HEAD; a method a path does not define is answered 405 with Allow (components.responses.MethodNotAllowed).',
      },
      schemaNames,
    ));
  const openApiRoute = route({
    method: 'GET',
    path: '/openapi.json',
    operationId: 'getOpenApi',
    summary: 'This OpenAPI 3.1.0 document (no auth)',
    tag: 'System',
    auth: 'public',
    rawContentType: 'application/json',
    response: z.unknown(),
    handler: ({ res }) => {
      const text = JSON.stringify(openApiDocument());
      res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
      res.end(text);
      return RAW;
    },
  });
  const routes: AnyRoute<App>[] = [...resources.flatMap((r) => r.server.routes ?? []), openApiRoute];
  return { routes, schemaNames, openApiDocument };
}

let api: Promise<Api> | undefined;

/** The API (once per process: routes are plain data, the same for every daemon). */
export function loadApi(): Promise<Api> {
  api ??= buildApi();
  return api;
}
