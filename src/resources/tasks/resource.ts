import type { AppResource } from '../../app.js';
import { migration as m002 } from './migrations/002-tasks.js';
import { migration as m008 } from './migrations/008-task-leases-comments.js';

export const tasksResource: AppResource = {
  name: 'tasks',
  commands: [{ name: 'tasks', summary: 'Manage the task board', load: async () => (await import('./command.js')).tasksCommand() }],
  endpoints: [{ endpoint: 'POST /api/v1/tasks/{taskId}/transition', command: 'svc tasks mv {taskId} <state>', names: { taskId: 'id' } }],
  events: ['task'],
  tables: ['tasks', 'task_dependencies', 'task_comments'],
  migrations: [m002, m008],
  server: async () => (await import('./server.js')).server,
};
