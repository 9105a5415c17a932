import { z } from 'zod';
import { route } from '../../app.js';
import { NameParam, Removed } from '../common.js';
import { TeamIn, TeamOut, TeamRename } from './schema.js';
import * as teams from './service.js';

const tag = 'Teams';

export const teamRoutes = [
  route({
    method: 'GET',
    path: '/api/v1/agents/teams',
    operationId: 'listTeams',
    summary: 'List teams with their agents',
    tag,
    response: z.array(TeamOut),
    handler: async ({ app }) => await teams.listTeams(app),
  }),
  route({
    method: 'POST',
    path: '/api/v1/agents/teams',
    operationId: 'addTeam',
    errors: ['conflict'],
    summary: 'Add a team',
    tag,
    status: 201,
    body: TeamIn,
    response: z.object({ added: z.literal(true) }),
    handler: async ({ app, body }) => {
      await teams.addTeam(app, body.name, body.description ?? '');
      return { added: true as const };
    },
  }),
  route({
    method: 'PATCH',
    path: '/api/v1/agents/team',
    operationId: 'renameTeam',
    errors: ['not_found', 'conflict'],
    summary: 'Rename a team; its agents follow in the same transaction',
    tag,
    body: TeamRename,
    response: z.null(),
    handler: async ({ app, body }) => {
      await teams.renameTeam(app, body.oldName, body.name);
      return null;
    },
  }),
  route({
    method: 'DELETE',
    path: '/api/v1/agents/teams/{name}',
    operationId: 'removeTeam',
    errors: ['conflict'],
    summary: 'Remove a team (409 while agents belong to it)',
    tag,
    params: NameParam,
    response: Removed,
    handler: async ({ app, params }) => {
      await teams.removeTeam(app, params.name);
      return { removed: true as const };
    },
  }),
];
