import type { ResourceServer } from '../../app.js';
import { TEAM_MEMBERS } from '../teams/service.js';
import { IdentitySchema } from './schema.js';
import { agentRoutes } from './routes.js';
import { agentsInTeam } from './service.js';

export const server: ResourceServer = {
  routes: agentRoutes,
  schemaNames: { AgentIdentity: IdentitySchema },
  wire: (app) => {
    // A team's members are agents: the teams resource asks, agents answers.
    app.services.provide(TEAM_MEMBERS, agentsInTeam);
  },
};
