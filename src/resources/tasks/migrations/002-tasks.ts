import type { Migration } from '../../../kernel/resource.js';

export const migration: Migration = {
  version: 2,
  name: 'tasks and task dependencies',
  sql: `
      -- assign_to and mission_id are plain text, not foreign keys: removing an agent or a mission
      -- must not rewrite tasks behind the events' back; the services check references on write.
      CREATE TABLE tasks (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        description TEXT,
        assign_to TEXT,
        mission_id TEXT,
        status TEXT NOT NULL CHECK (status IN ('draft', 'pending', 'assigned', 'in_progress', 'review', 'awaiting_approval', 'done', 'failed')),
        priority TEXT NOT NULL DEFAULT 'normal' CHECK (priority IN ('low', 'normal', 'high', 'urgent')),
        labels TEXT NOT NULL DEFAULT '[]',
        retries INTEGER NOT NULL DEFAULT 0,
        max_retries INTEGER NOT NULL DEFAULT 3,
        side_effects INTEGER NOT NULL DEFAULT 0,
        result TEXT,
        revision_count INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      -- Lists are newest first by id (uuidv7) with an id cursor: (filter, id) serves each filter
      -- in index order, with no sort, whatever the table size.
      CREATE INDEX tasks_status ON tasks (status, id);
      CREATE INDEX tasks_assign_to ON tasks (assign_to, id);
      CREATE INDEX tasks_mission ON tasks (mission_id, id);

      CREATE TABLE task_dependencies (
        task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        depends_on TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        PRIMARY KEY (task_id, depends_on)
      ) WITHOUT ROWID;
      CREATE INDEX task_dependencies_depends_on ON task_dependencies (depends_on);
    `,
};
