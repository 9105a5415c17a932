import type { AppResource } from '../../app.js';

export const providersResource: AppResource = {
  name: 'providers',
  commands: [{ name: 'auth', summary: 'Model providers: keys, cooldowns and billing status', load: async () => (await import('./command.js')).authCommand() }],
  endpoints: [{ endpoint: 'GET /api/v1/auth/status', command: 'svc auth status' }],
  // Made by db/migrations/009 with chat sessions.
  tables: ['provider_health'],
  server: async () => (await import('./server.js')).server,
};
