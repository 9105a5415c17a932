import type { AppResource } from '../../app.js';
import { migration as m017 } from './migrations/017-runs.js';

export const runsResource: AppResource = {
  name: 'runs',
  commands: [
    { name: 'runs', summary: "Runs of agents' CLIs on tasks: list, follow logs, diffs, cancel", load: async () => (await import('./command.js')).runsCommand() },
    {
      name: 'usage',
      summary: "Tokens and cost of agents' runs: today, this week, this month (with budgets), or per agent, task, mission or day",
      load: async () => (await import('./command.js')).usageCommand(),
    },
  ],
  endpoints: [
    { endpoint: 'POST /api/v1/runs/{runId}/cancel', command: 'svc runs cancel {runId}', names: { runId: 'id' } },
    { endpoint: 'GET /api/v1/runs/{runId}/log', command: 'svc runs logs {runId}', names: { runId: 'id' } },
    { endpoint: 'POST /api/v1/runs/{runId}/resume', command: 'svc runs resume {runId}', names: { runId: 'id' } },
  ],
  events: ['run', 'runner'],
  tables: ['runs', 'run_log'],
  transientTables: ['runners'],
  migrations: [m017],
  server: async () => (await import('./server.js')).server,
};
