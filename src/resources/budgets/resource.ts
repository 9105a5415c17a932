import type { AppResource } from '../../app.js';

export const budgetsResource: AppResource = {
  name: 'budgets',
  commands: [{ name: 'budgets', summary: "Budgets of the agents' runs: show them, or set them from a file", load: async () => (await import('./command.js')).budgetsCommand() }],
  endpoints: [{ endpoint: 'PUT /api/v1/budgets', command: 'svc budgets set <file>' }],
  events: ['budget'],
  // Made by db/migrations/019 with the pauses of runs.
  tables: ['budget_settings', 'budget_alerts'],
  server: async () => (await import('./server.js')).server,
};
