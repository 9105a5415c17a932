import type { Migration } from '../../../kernel/resource.js';

export const migration: Migration = {
  version: 5,
  name: 'approvals',
  sql: `
      -- task_id and mission_id are plain text like tasks.mission_id: a removed task leaves its
      -- approvals readable as history. task_from is the task's state when the approval was
      -- requested (approve returns a task requested from review to done). timeout_action and
      -- expires_at are null when the request has no timeout.
      CREATE TABLE approvals (
        id TEXT PRIMARY KEY,
        task_id TEXT,
        mission_id TEXT,
        requested_by TEXT NOT NULL,
        title TEXT NOT NULL,
        reason TEXT,
        payload TEXT,
        status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected')),
        timeout_action TEXT CHECK (timeout_action IN ('approve', 'reject')),
        expires_at TEXT,
        task_from TEXT,
        note TEXT,
        feedback TEXT,
        resolved_by TEXT,
        resolved_at TEXT,
        timed_out INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      -- The timeout scheduler reads pending approvals by expiry; lists read newest first by id.
      CREATE INDEX approvals_status_expires ON approvals (status, expires_at);
      CREATE INDEX approvals_status ON approvals (status, id);
      CREATE INDEX approvals_task ON approvals (task_id, id);
    `,
};
