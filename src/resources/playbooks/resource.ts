import type { AppResource } from '../../app.js';

export const playbooksResource: AppResource = {
  name: 'playbooks',
  commands: [{ name: 'playbooks', summary: 'Reusable mission templates with parameters', load: async () => (await import('./command.js')).playbooksCommand() }],
  // Made by db/migrations/004 with missions.
  tables: ['playbooks'],
  server: async () => (await import('./server.js')).server,
};
