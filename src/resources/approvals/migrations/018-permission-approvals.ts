import type { Migration } from '../../../kernel/resource.js';

export const migration: Migration = {
  version: 18,
  name: 'permission approvals of runs',
  sql: `
      -- kind 'task' is the gate that holds a task in awaiting_approval; 'permission' is a tool use an
      -- agent's CLI asks about during a run (run_id, agent, tool), which leaves the task as it is.
      -- ask_key is a digest of (agent, tool, input): the same ask again in the same task (the CLI
      -- resumed after a restart) finds the request instead of making a second one. answered_at is
      -- when a CLI was given the decision: a decision no CLI heard yet answers the next such ask.
      -- allowed_tool is what an "always allow" approval added to the agent's allowedTools.
      ALTER TABLE approvals ADD COLUMN kind TEXT NOT NULL DEFAULT 'task' CHECK (kind IN ('task', 'permission'));
      ALTER TABLE approvals ADD COLUMN run_id TEXT;
      ALTER TABLE approvals ADD COLUMN agent TEXT;
      ALTER TABLE approvals ADD COLUMN tool TEXT;
      ALTER TABLE approvals ADD COLUMN ask_key TEXT;
      ALTER TABLE approvals ADD COLUMN answered_at TEXT;
      ALTER TABLE approvals ADD COLUMN allowed_tool TEXT;
      CREATE INDEX approvals_run ON approvals (run_id, id) WHERE run_id IS NOT NULL;
      CREATE INDEX approvals_ask ON approvals (task_id, ask_key, id) WHERE ask_key IS NOT NULL;
    `,
};
