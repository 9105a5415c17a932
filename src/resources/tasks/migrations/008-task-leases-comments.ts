import type { Migration } from '../../../kernel/resource.js';

export const migration: Migration = {
  version: 8,
  name: 'task leases and comments',
  sql: `
      -- A claim is a lease: lease_id names it (the holder proves itself with it), lease_expires_at
      -- is when it runs out without a heartbeat. Both are null unless the task is in_progress
      -- after a claim. The partial index serves the reaper's "what expires next" read.
      ALTER TABLE tasks ADD COLUMN lease_id TEXT;
      ALTER TABLE tasks ADD COLUMN lease_expires_at TEXT;
      CREATE INDEX tasks_lease_expires ON tasks (lease_expires_at) WHERE lease_expires_at IS NOT NULL;
      -- task_next reads the oldest claimable task of one state and priority through this index.
      CREATE INDEX tasks_status_priority ON tasks (status, priority, id);

      -- A task's activity: notes appended by agents and people, removed with the task.
      CREATE TABLE task_comments (
        id TEXT PRIMARY KEY,
        task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        author TEXT NOT NULL,
        body TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX task_comments_task ON task_comments (task_id, id);
    `,
};
