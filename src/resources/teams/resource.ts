import type { AppResource } from '../../app.js';

export const teamsResource: AppResource = {
  name: 'teams',
  commands: [{ name: 'teams', summary: 'Manage teams of agents', load: async () => (await import('./command.js')).teamsCommand() }],
  endpoints: [{ endpoint: 'POST /api/v1/agents/teams', command: 'svc teams add {name}' }],
  events: ['team'],
  // Made by db/migrations/001 with agents and the event log.
  tables: ['teams'],
  server: async () => (await import('./server.js')).server,
};
