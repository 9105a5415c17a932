import { z } from 'zod';
import { API_SCHEMA_NAMES } from './api-names.js';
import { route, type App } from './app.js';
import { eventRoutes } from './events/routes.js';
import { buildOpenApi } from './kernel/openapi.js';
import { RAW_RESPONSE as RAW, type AnyRoute } from './kernel/route.js';
import { agentRoutes } from './resources/agents/routes.js';
import { approvalRoutes } from './resources/approvals/routes.js';
import { boardRoutes } from './resources/board/routes.js';
import { budgetRoutes } from './resources/budgets/routes.js';
import { chatRoutes } from './resources/chat/routes.js';
import { dataRoutes } from './resources/data/routes.js';
import { missionRoutes } from './resources/missions/routes.js';
import { playbookRoutes } from './resources/playbooks/routes.js';
import { providerRoutes } from './resources/providers/routes.js';
import { routineRoutes } from './resources/routines/routes.js';
import { runRoutes } from './resources/runs/routes.js';
import { skillRoutes } from './resources/skills/routes.js';
import { systemRoutes } from './resources/system/routes.js';
import { taskRoutes } from './resources/tasks/routes.js';
import { teamRoutes } from './resources/teams/routes.js';
import { vaultRoutes } from './resources/vault/routes.js';
import { webhookRoutes } from './resources/webhooks/routes.js';
import { toolRoutes } from './tools/routes.js';

// The whole API, top to bottom. A route group not listed here does not exist.

const apiRoutes: AnyRoute<App>[] = [...systemRoutes, ...eventRoutes, ...teamRoutes, ...agentRoutes, ...taskRoutes, ...runRoutes, ...budgetRoutes, ...missionRoutes, ...playbookRoutes, ...routineRoutes, ...skillRoutes, ...vaultRoutes, ...approvalRoutes, ...webhookRoutes, ...toolRoutes, ...dataRoutes, ...providerRoutes, ...chatRoutes, ...boardRoutes];

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

export const ROUTES: AnyRoute<App>[] = [...apiRoutes, openApiRoute];

let cached: Record<string, unknown> | undefined;

export function openApiDocument(): Record<string, unknown> {
  cached ??= buildOpenApi(ROUTES, {
    title: 'svc',
    description:
      'Local control plane for teams of AI coding agents: tasks, missions and playbooks, agents and teams, skills, approvals, the vault and live events. ' +
      'Every response carries X-Request-Id; every GET also answers HEAD; a method a path does not define is answered 405 with Allow (components.responses.MethodNotAllowed).',
  }, API_SCHEMA_NAMES);
  return cached;
}
