import type { AppResource } from '../../app.js';

export const missionsResource: AppResource = {
  name: 'missions',
  commands: [{ name: 'missions', summary: 'Plans of tasks: create, follow and steer missions', load: async () => (await import('./command.js')).missionsCommand() }],
  endpoints: [{ endpoint: 'POST /api/v1/missions', command: 'svc missions add <file>' }],
  events: ['mission'],
  // Made by db/migrations/004 with playbooks.
  tables: ['missions'],
  server: async () => (await import('./server.js')).server,
};
