import { stmt, type DB } from '../../db/open.js';
import type { PauseReason, Run, RunReason, RunStatus, UsageFilter } from './schema.js';
import type { DiffStat, RunLogItem, RuntimeKind, Usage } from './types.js';

// Runs, their logs and the runners: SQL only (both providers; SQLite's spelling, db/open.ts).

interface Row {
  id: string;
  task_id: string;
  mission_id: string | null;
  agent: string;
  runtime: RuntimeKind;
  attempt: number;
  revision: number;
  reason: RunReason;
  prompt: string | null;
  status: RunStatus;
  priority_rank: number;
  not_before: string | null;
  runner: string | null;
  pid: number | null;
  pid_start: string | null;
  lease_id: string | null;
  workspace: string | null;
  branch: string | null;
  base_commit: string | null;
  head_commit: string | null;
  session_id: string | null;
  resume_session_id: string | null;
  started_at: string | null;
  finished_at: string | null;
  exit_code: number | null;
  error: string | null;
  turns: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  cost_micros: number | null;
  summary: string | null;
  diff_stat: string | null;
  log_count: number;
  log_dropped: number;
  cancel_requested: number;
  pause_reason: PauseReason | null;
  created_at: string;
  updated_at: string;
}

const COLUMNS =
  'id, task_id, mission_id, agent, runtime, attempt, revision, reason, prompt, status, priority_rank, not_before, runner, pid, pid_start, lease_id, workspace, branch, base_commit, head_commit, session_id, resume_session_id, started_at, finished_at, exit_code, error, turns, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_micros, summary, diff_stat, log_count, log_dropped, cancel_requested, pause_reason, created_at, updated_at';

/** What the runner needs beyond the public fields. */
export interface RunRecord extends Omit<Run, 'waitingFor'> {
  revision: number;
  prompt: string | null;
  pidStart: string | null;
  leaseId: string | null;
  resumeSessionId: string | null;
  cancelRequested: boolean;
  priorityRank: number;
}

const micros = (usd: number | null): number | null => (usd === null ? null : Math.round(usd * 1e6));
const usd = (m: number | null): number | null => (m === null ? null : Number(m) / 1e6);

function toRun(r: Row): RunRecord {
  return {
    id: r.id,
    taskId: r.task_id,
    missionId: r.mission_id,
    agent: r.agent,
    runtime: r.runtime,
    attempt: Number(r.attempt),
    reason: r.reason,
    status: r.status,
    notBefore: r.not_before,
    runner: r.runner,
    pid: r.pid === null ? null : Number(r.pid),
    workspace: r.workspace,
    branch: r.branch,
    baseCommit: r.base_commit,
    headCommit: r.head_commit,
    sessionId: r.session_id,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    exitCode: r.exit_code === null ? null : Number(r.exit_code),
    error: r.error,
    turns: Number(r.turns),
    usage: {
      inputTokens: Number(r.input_tokens),
      outputTokens: Number(r.output_tokens),
      cacheReadTokens: Number(r.cache_read_tokens),
      cacheWriteTokens: Number(r.cache_write_tokens),
      costUsd: usd(r.cost_micros),
    },
    summary: r.summary,
    diffStat: r.diff_stat === null ? null : (JSON.parse(r.diff_stat) as DiffStat),
    logItems: Number(r.log_count),
    pauseReason: r.pause_reason,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    revision: Number(r.revision),
    prompt: r.prompt,
    pidStart: r.pid_start,
    leaseId: r.lease_id,
    resumeSessionId: r.resume_session_id,
    cancelRequested: Number(r.cancel_requested) === 1,
    priorityRank: Number(r.priority_rank),
  };
}

/** The public fields of a run record (what the API answers); what it waits for is the caller's to say. */
export function publicRun(r: RunRecord, waitingFor: Run['waitingFor'] = null): Run {
  const { revision: _r, prompt: _p, pidStart: _s, leaseId: _l, resumeSessionId: _rs, cancelRequested: _c, priorityRank: _pr, ...run } = r;
  return { ...run, waitingFor };
}

export interface NewRun {
  id: string;
  taskId: string;
  missionId: string | null;
  agent: string;
  runtime: RuntimeKind;
  attempt: number;
  revision: number;
  reason: RunReason;
  prompt: string | null;
  priorityRank: number;
  notBefore: string | null;
  resumeSessionId: string | null;
  now: string;
}

/** Queues a run unless the task has a live one already (whoever queued it): false then. */
export async function insertRun(db: DB, r: NewRun): Promise<boolean> {
  return (
    (
      await stmt(
        db,
        `INSERT INTO runs (id, task_id, mission_id, agent, runtime, attempt, revision, reason, prompt, status, priority_rank, not_before, resume_session_id, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?)
       ON CONFLICT (task_id) WHERE status IN ('queued', 'starting', 'running', 'paused') DO NOTHING`,
      ).run(r.id, r.taskId, r.missionId, r.agent, r.runtime, r.attempt, r.revision, r.reason, r.prompt, r.priorityRank, r.notBefore, r.resumeSessionId, r.now, r.now)
    ).changes > 0
  );
}

export async function getRun(db: DB, id: string): Promise<RunRecord | null> {
  const r = (await stmt(db, `SELECT ${COLUMNS} FROM runs WHERE id = ?`).get(id)) as Row | undefined;
  return r ? toRun(r) : null;
}

export async function readRun(db: DB, id: string): Promise<RunRecord | null> {
  const [r] = (await stmt(db, `SELECT ${COLUMNS} FROM runs WHERE id = ?`).all(id)) as Row[];
  return r ? toRun(r) : null;
}

export interface ListFilter {
  taskId?: string;
  agent?: string;
  status?: RunStatus;
  before?: string;
  limit: number;
}

function listQuery(f: ListFilter): { sql: string; params: unknown[] } {
  const where: string[] = [];
  const params: unknown[] = [];
  if (f.taskId !== undefined) where.push('task_id = ?'), params.push(f.taskId);
  if (f.agent !== undefined) where.push('agent = ?'), params.push(f.agent);
  if (f.status !== undefined) where.push('status = ?'), params.push(f.status);
  if (f.before !== undefined) where.push('id < ?'), params.push(f.before);
  return { sql: `SELECT ${COLUMNS} FROM runs ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`, params: [...params, f.limit] };
}

/** Newest first; each filter uses its own index (task, agent, status). */
export async function readRuns(db: DB, f: ListFilter): Promise<RunRecord[]> {
  const q = listQuery(f);
  return ((await stmt(db, q.sql).all(...q.params)) as Row[]).map(toRun);
}

/** readRuns for callers inside a transaction (agent tools). */
export async function listRuns(db: DB, f: ListFilter): Promise<RunRecord[]> {
  const q = listQuery(f);
  return ((await stmt(db, q.sql).all(...q.params)) as Row[]).map(toRun);
}

export async function liveRunOfTask(db: DB, taskId: string): Promise<RunRecord | null> {
  const r = (await stmt(db, `SELECT ${COLUMNS} FROM runs WHERE task_id = ? AND status IN ('queued', 'starting', 'running', 'paused')`).get(taskId)) as Row | undefined;
  return r ? toRun(r) : null;
}

export async function latestRunOfTask(db: DB, taskId: string): Promise<RunRecord | null> {
  const r = (await stmt(db, `SELECT ${COLUMNS} FROM runs WHERE task_id = ? ORDER BY id DESC LIMIT 1`).get(taskId)) as Row | undefined;
  return r ? toRun(r) : null;
}

/** The latest session a task's runs of this agent and CLI left, to resume. */
export async function latestSession(db: DB, taskId: string, agent: string, runtime: RuntimeKind): Promise<string | null> {
  const r = (await stmt(db, 'SELECT session_id FROM runs WHERE task_id = ? AND agent = ? AND runtime = ? AND session_id IS NOT NULL ORDER BY id DESC LIMIT 1').get(taskId, agent, runtime)) as
    | { session_id: string }
    | undefined;
  return r?.session_id ?? null;
}

export async function countRunsOfTask(db: DB, taskId: string): Promise<number> {
  return Number(((await stmt(db, 'SELECT COUNT(*) AS n FROM runs WHERE task_id = ?').get(taskId)) as { n: number }).n);
}

/** Queued runs that may start at `now`, most urgent first, then oldest. */
export async function dueQueued(db: DB, now: string, limit: number): Promise<RunRecord[]> {
  return ((await stmt(db, `SELECT ${COLUMNS} FROM runs WHERE status = 'queued' AND (not_before IS NULL OR not_before <= ?) ORDER BY priority_rank DESC, id LIMIT ?`).all(now, limit)) as Row[]).map(
    toRun,
  );
}

/** The earliest time a queued run waits for (a retry's backoff), or null. */
export async function nextNotBefore(db: DB, now: string): Promise<string | null> {
  const r = (await stmt(db, "SELECT MIN(not_before) AS t FROM runs WHERE status = 'queued' AND not_before > ?").get(now)) as { t: string | null };
  return r.t;
}

/** Paused runs, most urgent first, then oldest. */
export async function pausedRuns(db: DB, limit: number): Promise<RunRecord[]> {
  return ((await stmt(db, `SELECT ${COLUMNS} FROM runs WHERE status = 'paused' ORDER BY priority_rank DESC, id LIMIT ?`).all(limit)) as Row[]).map(toRun);
}

/** The earliest reset a paused run waits for, or null. */
export async function nextPausedNotBefore(db: DB, now: string): Promise<string | null> {
  const r = (await stmt(db, "SELECT MIN(not_before) AS t FROM runs WHERE status = 'paused' AND not_before > ?").get(now)) as { t: string | null };
  return r.t;
}

/** Queued and paused runs per agent. */
export async function waitingByAgent(db: DB): Promise<{ agent: string; n: number }[]> {
  return ((await stmt(db, "SELECT agent, COUNT(*) AS n FROM runs WHERE status IN ('queued', 'paused') GROUP BY agent").all()) as { agent: string; n: number }[]).map((r) => ({
    agent: r.agent,
    n: Number(r.n),
  }));
}

/** Runs not finished (queued, starting, running, paused), most urgent first, for the queue's view. */
export async function liveRuns(db: DB, limit: number): Promise<RunRecord[]> {
  return ((await stmt(db, `SELECT ${COLUMNS} FROM runs WHERE status IN ('queued', 'starting', 'running', 'paused') ORDER BY priority_rank DESC, id LIMIT ?`).all(limit)) as Row[]).map(toRun);
}

/**
 * running|starting → paused: its process ended; it waits (until `notBefore` when its CLI gave a
 * reset) to resume its session. False when it was not live any more.
 */
export async function pauseRun(db: DB, id: string, p: { reason: PauseReason; notBefore: string | null; exitCode: number | null; now: string }): Promise<boolean> {
  return (
    (
      await stmt(
        db,
        "UPDATE runs SET status = 'paused', pause_reason = ?, not_before = ?, exit_code = ?, pid = NULL, pid_start = NULL, lease_id = NULL, updated_at = ? WHERE id = ? AND status IN ('starting', 'running')",
      ).run(p.reason, p.notBefore, p.exitCode, p.now, id)
    ).changes > 0
  );
}

/** paused → queued, to resume its CLI's session (the one it had, or was to resume). False when it was not paused. */
export async function unpauseRun(db: DB, id: string, now: string): Promise<boolean> {
  return (
    (
      await stmt(
        db,
        "UPDATE runs SET status = 'queued', not_before = NULL, runner = NULL, exit_code = NULL, cancel_requested = 0, resume_session_id = COALESCE(session_id, resume_session_id), updated_at = ? WHERE id = ? AND status = 'paused'",
      ).run(now, id)
    ).changes > 0
  );
}

/** The session a run was to resume cannot be: it starts a fresh one (a crash from now on does not try the lost one again). */
export async function forgetResume(db: DB, id: string, now: string): Promise<void> {
  await stmt(db, 'UPDATE runs SET resume_session_id = NULL, updated_at = ? WHERE id = ?').run(now, id);
}

/** Runs holding a slot (starting or running): of an agent, or of a runner. */
export async function activeCount(db: DB, by: { agent?: string; runner?: string }): Promise<number> {
  const sql =
    by.agent !== undefined
      ? "SELECT COUNT(*) AS n FROM runs WHERE agent = ? AND status IN ('starting', 'running')"
      : "SELECT COUNT(*) AS n FROM runs WHERE runner = ? AND status IN ('starting', 'running')";
  return Number(((await stmt(db, sql).get(by.agent ?? by.runner)) as { n: number }).n);
}

/** queued → starting on `runner`: false when another runner (or a cancel) came first. */
/**
 * Takes a queued run for `runner`. On PostgreSQL a run another daemon is taking right now is passed
 * over, not waited for (SKIP LOCKED): that daemon has it, or gives it back queued for the next pass.
 */
export async function claimRun(db: DB, id: string, runner: string, now: string): Promise<boolean> {
  return (await stmt(db, CLAIM_RUN).run(runner, now, id)).changes > 0;
}

const CLAIM_RUN = {
  sqlite: "UPDATE runs SET status = 'starting', runner = ?, updated_at = ? WHERE id = ? AND status = 'queued'",
  postgres: "UPDATE runs SET status = 'starting', runner = ?, updated_at = ? WHERE id = (SELECT id FROM runs WHERE id = ? AND status = 'queued' FOR UPDATE SKIP LOCKED)",
};

export async function setLease(db: DB, id: string, leaseId: string, now: string): Promise<void> {
  await stmt(db, 'UPDATE runs SET lease_id = ?, updated_at = ? WHERE id = ?').run(leaseId, now, id);
}

export async function setStarted(db: DB, id: string, s: { pid: number; pidStart: string | null; workspace: string; branch: string | null; baseCommit: string | null; now: string }): Promise<void> {
  await stmt(db, "UPDATE runs SET status = 'running', pid = ?, pid_start = ?, workspace = ?, branch = ?, base_commit = ?, started_at = ?, updated_at = ? WHERE id = ?").run(
    s.pid,
    s.pidStart,
    s.workspace,
    s.branch,
    s.baseCommit,
    s.now,
    s.now,
    id,
  );
}

export async function setProgress(db: DB, id: string, p: { turns: number; usage: Usage; sessionId: string | null; logCount: number; logDropped: number; now: string }): Promise<void> {
  await stmt(
    db,
    'UPDATE runs SET turns = ?, input_tokens = ?, output_tokens = ?, cache_read_tokens = ?, cache_write_tokens = ?, cost_micros = ?, session_id = COALESCE(?, session_id), log_count = ?, log_dropped = ?, updated_at = ? WHERE id = ?',
  ).run(p.turns, p.usage.inputTokens, p.usage.outputTokens, p.usage.cacheReadTokens, p.usage.cacheWriteTokens, micros(p.usage.costUsd), p.sessionId, p.logCount, p.logDropped, p.now, id);
}

export async function requestCancel(db: DB, id: string, now: string): Promise<void> {
  await stmt(db, 'UPDATE runs SET cancel_requested = 1, updated_at = ? WHERE id = ?').run(now, id);
}

export interface Finish {
  status: RunStatus;
  exitCode: number | null;
  error: string | null;
  summary: string | null;
  headCommit: string | null;
  diffStat: DiffStat | null;
  now: string;
}

/** Ends a run that is not finished yet (false when it already was). */
export async function finishRun(db: DB, id: string, f: Finish): Promise<boolean> {
  return (
    (
      await stmt(
        db,
        "UPDATE runs SET status = ?, exit_code = ?, error = ?, summary = ?, head_commit = ?, diff_stat = ?, finished_at = ?, pid = NULL, updated_at = ? WHERE id = ? AND status IN ('queued', 'starting', 'running', 'paused')",
      ).run(f.status, f.exitCode, f.error, f.summary, f.headCommit, f.diffStat === null ? null : JSON.stringify(f.diffStat), f.now, f.now, id)
    ).changes > 0
  );
}

/** Runs a runner had started and not finished (its process may still be alive if it crashed). */
export async function unfinishedOf(db: DB, runner: string): Promise<RunRecord[]> {
  return ((await stmt(db, `SELECT ${COLUMNS} FROM runs WHERE runner = ? AND status IN ('starting', 'running')`).all(runner)) as Row[]).map(toRun);
}

export async function insertLog(db: DB, runId: string, items: { seq: number; at: string; item: RunLogItem | { kind: 'truncated'; dropped: number } }[]): Promise<void> {
  const s = stmt(db, 'INSERT INTO run_log (run_id, seq, at, kind, data) VALUES (?, ?, ?, ?, ?)');
  for (const i of items) await s.run(runId, i.seq, i.at, i.item.kind, JSON.stringify(i.item));
}

export async function readLog(db: DB, runId: string, after: number, limit: number): Promise<{ seq: number; at: string; data: string }[]> {
  return (await stmt(db, 'SELECT seq, at, data FROM run_log WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?').all(runId, after, limit)) as { seq: number; at: string; data: string }[];
}

const GROUP_EXPR: Record<UsageFilter['groupBy'], string> = {
  agent: 'agent',
  task: 'task_id',
  mission: 'mission_id',
  day: 'SUBSTR(created_at, 1, 10)',
};

export interface UsageRow {
  key: string | null;
  runs: number;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  costMicros: number | null;
}

/** Usage summed per group over runs created in [since, until). */
export async function readUsage(db: DB, f: UsageFilter): Promise<UsageRow[]> {
  const key = GROUP_EXPR[f.groupBy];
  const where: string[] = [];
  const params: unknown[] = [];
  if (f.since) where.push('created_at >= ?'), params.push(f.since);
  if (f.until) where.push('created_at < ?'), params.push(f.until);
  const sql = `SELECT ${key} AS k, COUNT(*) AS runs, SUM(input_tokens) AS i, SUM(output_tokens) AS o, SUM(cache_read_tokens) AS cr, SUM(cache_write_tokens) AS cw, SUM(cost_micros) AS c
    FROM runs ${where.length ? `WHERE ${where.join(' AND ')}` : ''} GROUP BY ${key} ORDER BY ${key} LIMIT 10000`;
  const rows = (await stmt(db, sql).all(...params)) as { k: string | null; runs: number; i: number; o: number; cr: number; cw: number; c: number | null }[];
  return rows.map((r) => ({
    key: r.k,
    runs: Number(r.runs),
    input: Number(r.i),
    output: Number(r.o),
    cacheRead: Number(r.cr),
    cacheWrite: Number(r.cw),
    costMicros: r.c === null ? null : Number(r.c),
  }));
}

export const costOf = usd;

/** Finished runs whose worktree is still on disk, finished before `before` (the cleanup's candidates). */
export async function workspacesToClean(db: DB, before: string, limit: number): Promise<{ id: string; taskId: string; workspace: string }[]> {
  return (await stmt(
    db,
    "SELECT id, task_id AS taskId, workspace FROM runs WHERE workspace IS NOT NULL AND finished_at IS NOT NULL AND finished_at < ? AND status NOT IN ('queued', 'starting', 'running', 'paused') ORDER BY finished_at LIMIT ?",
  ).all(before, limit)) as { id: string; taskId: string; workspace: string }[];
}

/** Forgets a removed worktree on every run of the task that used it. */
export async function clearWorkspace(db: DB, workspace: string): Promise<void> {
  await stmt(db, 'UPDATE runs SET workspace = NULL WHERE workspace = ?').run(workspace);
}

// --- runners

export interface RunnerRow {
  id: string;
  host: string;
  pid: number;
  labels: string;
  runtimes: string;
  capacity: number;
  running: number;
  started_at: string;
  seen_at: number;
  stopped_at: string | null;
}

export async function upsertRunner(db: DB, r: Omit<RunnerRow, 'stopped_at'>): Promise<void> {
  await stmt(
    db,
    `INSERT INTO runners (id, host, pid, labels, runtimes, capacity, running, started_at, seen_at, stopped_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)
     ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, labels = excluded.labels, runtimes = excluded.runtimes, capacity = excluded.capacity,
       running = excluded.running, started_at = excluded.started_at, seen_at = excluded.seen_at, stopped_at = NULL`,
  ).run(r.id, r.host, r.pid, r.labels, r.runtimes, r.capacity, r.running, r.started_at, r.seen_at);
}

export async function touchRunner(db: DB, id: string, running: number, seenAt: number): Promise<boolean> {
  return (await stmt(db, 'UPDATE runners SET running = ?, seen_at = ? WHERE id = ? AND stopped_at IS NULL').run(running, seenAt, id)).changes > 0;
}

export async function stopRunner(db: DB, id: string, now: string): Promise<boolean> {
  return (await stmt(db, 'UPDATE runners SET stopped_at = ?, running = 0 WHERE id = ? AND stopped_at IS NULL').run(now, id)).changes > 0;
}

export async function readRunners(db: DB): Promise<RunnerRow[]> {
  return (await stmt(db, 'SELECT id, host, pid, labels, runtimes, capacity, running, started_at, seen_at, stopped_at FROM runners ORDER BY id').all()) as RunnerRow[];
}

export async function getRunner(db: DB, id: string): Promise<RunnerRow | null> {
  return ((await stmt(db, 'SELECT id, host, pid, labels, runtimes, capacity, running, started_at, seen_at, stopped_at FROM runners WHERE id = ?').get(id)) as RunnerRow | undefined) ?? null;
}

/**
 * Runners last seen at or before `seenBefore` (now less runner.offlineAfterSec: a runner's presence
 * ends at that instant, as GET /runners shows it offline) that were not stopped cleanly (their runs are lost).
 */
export async function silentRunners(db: DB, seenBefore: number, except: string): Promise<RunnerRow[]> {
  return (await stmt(db, 'SELECT id, host, pid, labels, runtimes, capacity, running, started_at, seen_at, stopped_at FROM runners WHERE stopped_at IS NULL AND seen_at <= ? AND id <> ?').all(
    seenBefore,
    except,
  )) as RunnerRow[];
}

/** Runners alive now that could run `kind` (labels checked by the caller). */
export async function liveRunners(db: DB, seenAfter: number): Promise<RunnerRow[]> {
  return (await stmt(db, 'SELECT id, host, pid, labels, runtimes, capacity, running, started_at, seen_at, stopped_at FROM runners WHERE stopped_at IS NULL AND seen_at >= ?').all(
    seenAfter,
  )) as RunnerRow[];
}

/** Every run started and not finished, whoever started it (a SQLite state has one runner). */
export async function unfinishedAnywhere(db: DB): Promise<RunRecord[]> {
  return ((await stmt(db, `SELECT ${COLUMNS} FROM runs WHERE status IN ('starting', 'running')`).all()) as Row[]).map(toRun);
}

/** Live runs of `runner` that someone asked to cancel (through another daemon). */
export async function cancelRequestedOf(db: DB, runner: string): Promise<string[]> {
  return ((await stmt(db, "SELECT id FROM runs WHERE runner = ? AND cancel_requested = 1 AND status IN ('starting', 'running')").all(runner)) as { id: string }[]).map((r) => r.id);
}

/** What the earlier runs of a CLI session counted, together (a resumed Codex session reports its totals). */
export async function sessionUsage(db: DB, sessionId: string): Promise<Usage> {
  const r = (await stmt(
    db,
    'SELECT SUM(input_tokens) AS i, SUM(output_tokens) AS o, SUM(cache_read_tokens) AS cr, SUM(cache_write_tokens) AS cw, SUM(cost_micros) AS c FROM runs WHERE session_id = ?',
  ).get(sessionId)) as { i: number | null; o: number | null; cr: number | null; cw: number | null; c: number | null };
  return { inputTokens: Number(r.i ?? 0), outputTokens: Number(r.o ?? 0), cacheReadTokens: Number(r.cr ?? 0), cacheWriteTokens: Number(r.cw ?? 0), costUsd: usd(r.c) };
}
