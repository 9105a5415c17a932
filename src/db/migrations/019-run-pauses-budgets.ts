import type { Migration } from '../../kernel/resource.js';

export const migration: Migration = {
  version: 19,
  name: 'pauses of runs and budgets',
  sql: `
      -- A run paused by a usage limit of its provider or by a budget (resources/runs, docs/runs.md):
      -- why, while it waits and afterwards, for the record (usage_limit | budget).
      ALTER TABLE runs ADD COLUMN pause_reason TEXT;
      -- Spend is summed per period over runs created in it (resources/budgets).
      CREATE INDEX runs_created ON runs (created_at);
      CREATE INDEX runs_agent_created ON runs (agent, created_at);
      -- An agent's runs holding a slot (maxConcurrency), counted at each start and for each waiting run shown.
      CREATE INDEX runs_agent_status ON runs (agent, status);
      -- A usage limit of an agent's CLI pauses its provider's runs until then (epoch ms), on the
      -- provider's own cooldown row; set back to null once the runners said the pause is over.
      ALTER TABLE provider_health ADD COLUMN paused_until INTEGER;

      -- Budgets set through the API (PUT /api/v1/budgets): they replace project.json's as long as
      -- project.json's budgets are the ones they replaced (file_digest), so an edit of the file wins.
      CREATE TABLE budget_settings (
        id TEXT PRIMARY KEY,
        budgets TEXT NOT NULL,
        file_digest TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      -- Which budget warnings (80 %) and exceedings (100 %) were said, once per scope and period.
      CREATE TABLE budget_alerts (
        scope TEXT NOT NULL,
        period TEXT NOT NULL,
        period_start TEXT NOT NULL,
        level TEXT NOT NULL,
        at TEXT NOT NULL,
        PRIMARY KEY (scope, period, period_start, level)
      );
    `,
};
