import type { AppResource } from '../../app.js';
import { migration as m015 } from './migrations/015-daemons.js';

// The daemon itself: status, setup, shutdown; project.json reloads (config:*); the daemons present
// on a shared state. Its commands (serve, stop, status, doctor…) are the CLI's own (src/cli/system/).

export const systemResource: AppResource = {
  name: 'system',
  endpoints: [{ endpoint: 'GET /api/v1/status', command: 'svc status' }],
  events: ['config'],
  transientTables: ['daemons'],
  migrations: [m015],
  server: async () => (await import('./server.js')).server,
};
