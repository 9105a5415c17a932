import type { Migration } from '../../../kernel/resource.js';

export const migration: Migration = {
  version: 17,
  name: 'runs of agent CLIs, their logs and the runners',
  sql: `
      -- A run is one process of an agent's CLI working on one task (resources/runs). agent and
      -- task_id are plain text, not foreign keys: a run outlives its task's or agent's removal as
      -- history. mission_id is copied at queue time so usage can be summed per mission after the
      -- task is gone. Usage columns are running totals reported by the CLI; cost in micro-USD
      -- (integer sums are exact on both providers), null where the CLI reports none.
      CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        task_id TEXT NOT NULL,
        mission_id TEXT,
        agent TEXT NOT NULL,
        runtime TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        revision INTEGER NOT NULL DEFAULT 0,
        reason TEXT NOT NULL,
        prompt TEXT,
        status TEXT NOT NULL CHECK (status IN ('queued', 'starting', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out', 'lost', 'paused')),
        priority_rank INTEGER NOT NULL,
        not_before TEXT,
        runner TEXT,
        pid INTEGER,
        pid_start TEXT,
        lease_id TEXT,
        workspace TEXT,
        branch TEXT,
        base_commit TEXT,
        head_commit TEXT,
        session_id TEXT,
        resume_session_id TEXT,
        started_at TEXT,
        finished_at TEXT,
        exit_code INTEGER,
        error TEXT,
        turns INTEGER NOT NULL DEFAULT 0,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        cache_read_tokens INTEGER NOT NULL DEFAULT 0,
        cache_write_tokens INTEGER NOT NULL DEFAULT 0,
        cost_micros INTEGER,
        summary TEXT,
        diff_stat TEXT,
        log_count INTEGER NOT NULL DEFAULT 0,
        log_dropped INTEGER NOT NULL DEFAULT 0,
        cancel_requested INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      -- At most one live run per task, whichever daemon queues it (the queue's ON CONFLICT DO NOTHING).
      CREATE UNIQUE INDEX runs_live_task ON runs (task_id) WHERE status IN ('queued', 'starting', 'running', 'paused');
      CREATE INDEX runs_task ON runs (task_id, id);
      CREATE INDEX runs_agent ON runs (agent, id);
      CREATE INDEX runs_status ON runs (status, priority_rank, id);
      CREATE INDEX runs_finished ON runs (finished_at);

      -- A run's log: readable items in order (resources/runs/types.ts RunLogItem), bounded per run.
      CREATE TABLE run_log (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        at TEXT NOT NULL,
        kind TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
      );

      -- Each daemon that runs agents is a runner (several may share a PostgreSQL state). seen_at is
      -- epoch ms, written every few seconds; a runner not seen for long loses its runs to the others.
      CREATE TABLE runners (
        id TEXT PRIMARY KEY,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        labels TEXT NOT NULL,
        runtimes TEXT NOT NULL,
        capacity INTEGER NOT NULL,
        running INTEGER NOT NULL,
        started_at TEXT NOT NULL,
        seen_at INTEGER NOT NULL,
        stopped_at TEXT
      );
    `,
};
