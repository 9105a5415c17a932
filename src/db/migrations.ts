import type { Migration } from './migrate.js';

// The state database's schema, forward only. Never edit a migration that has shipped: add the next.

export const STATE_MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'meta, events, agents and teams',
    sql: `
      CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

      -- The outbox: AUTOINCREMENT so an id is never reused, even after old rows are pruned;
      -- these ids are the SSE event ids and must not reset across restarts.
      CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        data TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX events_created_at ON events (created_at);

      CREATE TABLE teams (
        name TEXT PRIMARY KEY,
        description TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );

      CREATE TABLE agents (
        name TEXT PRIMARY KEY,
        team TEXT REFERENCES teams (name) ON UPDATE CASCADE ON DELETE RESTRICT,
        reports_to TEXT REFERENCES agents (name) ON UPDATE CASCADE ON DELETE RESTRICT,
        fields TEXT NOT NULL DEFAULT '{}',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX agents_team ON agents (team);
      CREATE INDEX agents_reports_to ON agents (reports_to);
    `,
  },
  {
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
  },
  {
    version: 3,
    name: 'vault entries',
    sql: `
      -- sealed = AES-256-GCM ciphertext + tag of the credentials JSON; keys = their names only.
      -- Removing an agent removes its entries: a later agent of the same name must not inherit them.
      CREATE TABLE vault_entries (
        agent TEXT NOT NULL REFERENCES agents (name) ON DELETE CASCADE,
        service TEXT NOT NULL,
        type TEXT NOT NULL CHECK (type IN ('smtp', 'imap', 'oauth', 'api_key', 'login', 'custom')),
        label TEXT,
        keys TEXT NOT NULL,
        sealed BLOB NOT NULL,
        nonce BLOB NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (agent, service)
      );
    `,
  },
  {
    version: 4,
    name: 'missions and playbooks',
    sql: `
      -- A mission's tasks are the tasks whose mission_id names it; the list is not stored twice.
      CREATE TABLE missions (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        goal TEXT,
        status TEXT NOT NULL CHECK (status IN ('draft', 'active', 'paused', 'completed', 'failed', 'cancelled')),
        deadline TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX missions_status ON missions (status, id);

      -- parameters and mission are JSON: a template is read and written whole.
      CREATE TABLE playbooks (
        name TEXT PRIMARY KEY,
        description TEXT,
        parameters TEXT NOT NULL DEFAULT '[]',
        mission TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
    `,
  },
  {
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
  },
  {
    version: 6,
    name: 'webhooks, their secrets, deliveries and attempts',
    sql: `
      -- events = JSON array of patterns. disabled_reason says why enabled = 0 (410 Gone, or by hand).
      CREATE TABLE webhooks (
        id TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        events TEXT NOT NULL,
        description TEXT,
        enabled INTEGER NOT NULL DEFAULT 1,
        disabled_reason TEXT,
        secret_rotated_at TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );

      -- Signing secrets, sealed (AES-256-GCM under .svc/webhooks.key). expires_at is null for the
      -- current secret; a rotated-out secret lives until its grace window ends.
      CREATE TABLE webhook_secrets (
        id TEXT PRIMARY KEY,
        webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
        sealed BLOB NOT NULL,
        nonce BLOB NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT
      );
      CREATE INDEX webhook_secrets_webhook ON webhook_secrets (webhook_id);

      -- One row per (event, webhook), written in the event's own transaction. body holds the exact
      -- envelope bytes that are signed and sent, so a redelivery 29 days later sends the same thing.
      -- next_attempt_at is epoch ms; in_flight marks a claimed delivery (reset to due on start).
      -- Deleting a webhook deletes its deliveries: pending ones are thereby cancelled.
      CREATE TABLE webhook_deliveries (
        id TEXT PRIMARY KEY,
        webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
        event_id INTEGER NOT NULL,
        event TEXT NOT NULL,
        body TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        last_status_code INTEGER,
        last_error TEXT,
        next_attempt_at INTEGER,
        in_flight INTEGER NOT NULL DEFAULT 0,
        redelivery_of TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX webhook_deliveries_list ON webhook_deliveries (webhook_id, id);
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending' AND in_flight = 0;
      CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);
      CREATE INDEX webhook_deliveries_redelivery ON webhook_deliveries (redelivery_of) WHERE redelivery_of IS NOT NULL;

      CREATE TABLE webhook_attempts (
        delivery_id TEXT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
        n INTEGER NOT NULL,
        at TEXT NOT NULL,
        status_code INTEGER,
        error TEXT,
        duration_ms INTEGER NOT NULL,
        response_body TEXT,
        PRIMARY KEY (delivery_id, n)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 7,
    name: 'application databases registry',
    sql: `
      -- One row per application database; its records live in .svc/data/<id>.sqlite. schema and
      -- schema_version copy what the file holds (the file is the authority; see data/store.ts).
      CREATE TABLE data_databases (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        schema TEXT NOT NULL,
        schema_version INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
    `,
  },
  {
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
  },
  {
    version: 9,
    name: 'providers and chat sessions',
    sql: `
      -- One row per provider that has failed since its last success; no row = healthy. Times are
      -- epoch milliseconds: they are only compared with the clock.
      CREATE TABLE provider_health (
        provider TEXT PRIMARY KEY,
        error_count INTEGER NOT NULL,
        billing_count INTEGER NOT NULL,
        cooldown_until INTEGER,
        disabled_until INTEGER,
        auth_failed INTEGER NOT NULL,
        last_error_reason TEXT,
        updated_at TEXT NOT NULL
      );
      -- A chat session keeps its messages (vault values redacted) so x-session-id can continue it.
      CREATE TABLE chat_sessions (
        id TEXT PRIMARY KEY,
        agent TEXT,
        model TEXT NOT NULL,
        messages TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
    `,
  },
  {
    version: 12,
    name: 'webhook deliveries claimed per webhook',
    sql: `
      -- The worker claims each webhook's due deliveries on their own (so that one slow endpoint
      -- never fills every slot): a webhook's oldest due delivery is one seek in this index, which
      -- replaces the one ordered by due time alone.
      CREATE INDEX webhook_deliveries_due_by_webhook ON webhook_deliveries (webhook_id, next_attempt_at) WHERE status = 'pending' AND in_flight = 0;
      DROP INDEX webhook_deliveries_due;
    `,
  },
  {
    version: 13,
    name: 'stored responses',
    sql: `
      -- A stored answer of the Responses API: the whole conversation through it (secrets redacted),
      -- so previous_response_id continues from exactly that point, even after the session moved on.
      -- seq orders them for the cap on how many are kept.
      CREATE TABLE chat_responses (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        session_id TEXT NOT NULL,
        agent TEXT,
        model TEXT NOT NULL,
        messages TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
    `,
  },
  {
    version: 14,
    name: 'webhook delivery claims with a lease',
    sql: `
      -- Several daemons may share a PostgreSQL state: a claim (in_flight = 1) holds until
      -- claimed_until (epoch ms), after which any daemon may release it and send the delivery, so
      -- one that died mid-delivery does not keep it forever. SQLite has one daemon and ignores it.
      ALTER TABLE webhook_deliveries ADD COLUMN claimed_until INTEGER;
    `,
    postgres: `
      ALTER TABLE webhook_deliveries ADD COLUMN claimed_until BIGINT;
      -- Insertion order, as SQLite's rowid gives it: retention keeps the newest N deliveries as
      -- a range of this number (webhooks/store.ts pruneDeliveries). Existing rows are numbered too.
      ALTER TABLE webhook_deliveries ADD COLUMN seq BIGINT GENERATED ALWAYS AS IDENTITY;
      CREATE INDEX webhook_deliveries_seq ON webhook_deliveries (seq);
      -- Expired claims are looked for every few hundred milliseconds by every daemon.
      CREATE INDEX webhook_deliveries_claimed ON webhook_deliveries (claimed_until) WHERE in_flight = 1;
    `,
  },
  {
    version: 15,
    name: 'daemons present on the state',
    sql: `
      -- Each daemon on the state says it is there (every 15 s, and gone at a clean stop): several
      -- daemons may share a PostgreSQL state. keys = the fingerprint of the API keys it accepts
      -- (config/keys.ts), compared by svc doctor. seen_at is epoch ms.
      CREATE TABLE daemons (
        id TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        hostname TEXT NOT NULL,
        pid INTEGER NOT NULL,
        version TEXT NOT NULL,
        keys TEXT NOT NULL,
        started_at TEXT NOT NULL,
        seen_at INTEGER NOT NULL
      );
    `,
  },
  {
    version: 16,
    name: 'board logins and sessions',
    sql: `
      -- The board's one-time login links and the sessions they were exchanged for (resources/board).
      -- Only SHA-256 digests of the tokens are kept; key_id is the digest of the API key that minted
      -- the link, so a session ends with its key. Times are ISO timestamps.
      CREATE TABLE board_logins (
        token_hash TEXT PRIMARY KEY,
        key_id TEXT NOT NULL,
        read_only INTEGER NOT NULL DEFAULT 0,
        expires_at TEXT NOT NULL,
        used_at TEXT
      );
      CREATE TABLE board_sessions (
        id_hash TEXT PRIMARY KEY,
        key_id TEXT NOT NULL,
        read_only INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL
      );
      CREATE INDEX board_sessions_expires_at ON board_sessions (expires_at);
    `,
  },
  {
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
  },
  {
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
  },
  {
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
  },
  {
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
  },
];
