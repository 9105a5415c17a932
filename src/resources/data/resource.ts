import type { AppResource } from '../../app.js';
import { migration as m007 } from './migrations/007-database-registry.js';

// Application databases. Their own migrations (POST /api/v1/data/{resource}/migrations) are
// migrations.ts; migrations/ holds this resource's part of the daemon's state schema.

export const dataResource: AppResource = {
  name: 'data',
  commands: [{ name: 'db', summary: 'Application databases: schemas, batches, scoped SQL, migrations', load: async () => (await import('./command.js')).dbCommand() }],
  endpoints: [{ endpoint: 'POST /api/v1/data/{resource}/migrations', command: 'svc db migrate {resource} <file>', names: { resource: 'name' } }],
  events: ['data'],
  tables: ['data_databases'],
  migrations: [m007],
  server: async () => (await import('./server.js')).server,
};
