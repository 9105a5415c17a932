import { z } from 'zod';
import { route } from '../../app.js';
import { NameParam, Removed } from '../common.js';
import { AgentIn, AgentOut, AgentPatch } from './schema.js';
import * as agents from './service.js';

const tag = 'Agents';

export const agentRoutes = [
  route({
    method: 'GET',
    path: '/api/v1/agents',
    operationId: 'listAgents',
    summary: 'List agents, by name',
    tag,
    query: z.strictObject({ team: z.string().min(1).optional().describe('Only agents of this team.') }),
    response: z.array(AgentOut),
    handler: async ({ app, query }) => await agents.listAgents(app.db, query),
  }),
  route({
    method: 'POST',
    path: '/api/v1/agents',
    operationId: 'createAgent',
    errors: ['conflict', 'unprocessable'],
    summary: 'Create an agent',
    tag,
    status: 201,
    body: AgentIn,
    response: AgentOut,
    handler: ({ app, body }) => agents.createAgent(app, body),
  }),
  route({
    method: 'GET',
    path: '/api/v1/agents/{name}',
    operationId: 'getAgent',
    summary: 'Show an agent',
    tag,
    params: NameParam,
    response: AgentOut,
    handler: async ({ app, params }) => await agents.requireAgent(app, params.name),
  }),
  route({
    method: 'PATCH',
    path: '/api/v1/agents/{name}',
    operationId: 'updateAgent',
    errors: ['unprocessable'],
    summary: 'Update an agent (a missing field is kept, null clears it)',
    tag,
    params: NameParam,
    body: AgentPatch,
    response: z.null(),
    handler: async ({ app, params, body }) => {
      await agents.updateAgent(app, params.name, body);
      return null;
    },
  }),
  route({
    method: 'DELETE',
    path: '/api/v1/agents/{name}',
    operationId: 'deleteAgent',
    errors: ['conflict'],
    summary: 'Remove an agent',
    tag,
    params: NameParam,
    response: Removed,
    handler: async ({ app, params }) => {
      await agents.removeAgent(app, params.name);
      return { removed: true as const };
    },
  }),
];
