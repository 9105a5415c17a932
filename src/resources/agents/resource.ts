import type { AppResource } from '../../app.js';

export const agentsResource: AppResource = {
  name: 'agents',
  commands: [{ name: 'agents', summary: 'Manage agents', load: async () => (await import('./command.js')).agentsCommand() }],
  events: ['agent'],
  // Made by db/migrations/001 with teams and the event log.
  tables: ['agents'],
  server: async () => (await import('./server.js')).server,
};
