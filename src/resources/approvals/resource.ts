import type { AppResource } from '../../app.js';
import { migration as m005 } from './migrations/005-approvals.js';
import { migration as m018 } from './migrations/018-permission-approvals.js';

export const approvalsResource: AppResource = {
  name: 'approvals',
  commands: [{ name: 'approvals', summary: 'Human decisions that gate work', load: async () => (await import('./command.js')).approvalsCommand() }],
  endpoints: [{ endpoint: 'POST /api/v1/approvals', command: 'svc approvals request {taskId} --title …' }],
  events: ['approval'],
  tables: ['approvals'],
  migrations: [m005, m018],
  server: async () => (await import('./server.js')).server,
};
