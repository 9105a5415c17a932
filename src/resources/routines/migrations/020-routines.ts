import type { Migration } from '../../../kernel/resource.js';

export const migration: Migration = {
  version: 20,
  name: 'routines: schedules and triggers that create work, and their firings',
  sql: `
      -- A routine fires on a cron schedule (next_fire_at, null when disabled or triggered) or on
      -- events (last_event_id: the newest event it has decided on). Both move forward, compare-and-set,
      -- in the transaction that records a firing, so each firing happens on one daemon however many
      -- share the state. The rate window bounds a trigger storm.
      CREATE TABLE routines (
        name TEXT PRIMARY KEY,
        description TEXT,
        enabled INTEGER NOT NULL,
        schedule TEXT,
        trigger_spec TEXT,
        action TEXT NOT NULL,
        concurrency TEXT NOT NULL CHECK (concurrency IN ('skip', 'queue', 'allow')),
        catch_up TEXT NOT NULL CHECK (catch_up IN ('none', 'one')),
        max_firings_per_minute INTEGER NOT NULL,
        next_fire_at TEXT,
        last_event_id INTEGER NOT NULL DEFAULT 0,
        rate_window_start TEXT,
        rate_count INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX routines_next_fire_at ON routines (next_fire_at) WHERE next_fire_at IS NOT NULL;

      -- Each firing, recorded before its action runs and in its transaction. fire_key is the schedule
      -- time, the event id or a manual firing's id: unique per routine, a second daemon's attempt at
      -- the same firing inserts nothing. created: JSON {taskIds, missionId}; chain: JSON routine names.
      CREATE TABLE routine_firings (
        id TEXT PRIMARY KEY,
        routine TEXT NOT NULL REFERENCES routines (name) ON DELETE CASCADE,
        fire_key TEXT NOT NULL,
        reason TEXT NOT NULL CHECK (reason IN ('schedule', 'catch_up', 'event', 'manual')),
        status TEXT NOT NULL CHECK (status IN ('fired', 'skipped', 'failed', 'queued')),
        scheduled_at TEXT,
        fired_at TEXT NOT NULL,
        event_id INTEGER,
        event_name TEXT,
        missed INTEGER NOT NULL DEFAULT 0,
        detail TEXT,
        created TEXT NOT NULL,
        chain TEXT NOT NULL,
        vars TEXT
      );
      CREATE UNIQUE INDEX routine_firings_key ON routine_firings (routine, fire_key);
      CREATE INDEX routine_firings_routine ON routine_firings (routine, id);
      CREATE INDEX routine_firings_queued ON routine_firings (routine, id) WHERE status = 'queued';

      -- The tasks and missions firings created, with the chain of routines that led to them: an
      -- event about one of them carries that chain, so a routine is not set off by its own work.
      CREATE TABLE routine_work (
        work_id TEXT PRIMARY KEY,
        routine TEXT NOT NULL REFERENCES routines (name) ON DELETE CASCADE,
        chain TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX routine_work_created_at ON routine_work (created_at);
    `,
};
