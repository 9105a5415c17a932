import { stmt, type DB } from '../../db/open.js';

// Budgets: SQL only. Spend is read from the runs' own usage columns (resources/runs), summed over
// the runs created in a period; what this resource keeps itself is the budgets a PUT set and which
// alerts were said.

export interface Override {
  budgets: string;
  fileDigest: string;
  updatedAt: string;
}

export async function getOverride(db: DB): Promise<Override | null> {
  const r = (await stmt(db, "SELECT budgets, file_digest, updated_at FROM budget_settings WHERE id = 'project'").get()) as { budgets: string; file_digest: string; updated_at: string } | undefined;
  return r ? { budgets: r.budgets, fileDigest: r.file_digest, updatedAt: r.updated_at } : null;
}

export async function putOverride(db: DB, o: Override): Promise<void> {
  await stmt(
    db,
    `INSERT INTO budget_settings (id, budgets, file_digest, updated_at) VALUES ('project', ?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET budgets = excluded.budgets, file_digest = excluded.file_digest, updated_at = excluded.updated_at`,
  ).run(o.budgets, o.fileDigest, o.updatedAt);
}

export interface Spend {
  tokens: number;
  /** null: no run reported a cost. */
  costMicros: number | null;
  runs: number;
}

const TOKENS = 'input_tokens + output_tokens + cache_read_tokens + cache_write_tokens';

/** What runs created in [since, until) spent: of one agent, or of all. */
export async function spend(db: DB, since: string, until: string, agent: string | null): Promise<Spend> {
  const sql = `SELECT COUNT(*) AS n, SUM(${TOKENS}) AS t, SUM(cost_micros) AS c FROM runs WHERE ${agent === null ? '' : 'agent = ? AND '}created_at >= ? AND created_at < ?`;
  const params = agent === null ? [since, until] : [agent, since, until];
  const r = (await stmt(db, sql).get(...params)) as { n: number; t: number | null; c: number | null };
  return { tokens: Number(r.t ?? 0), costMicros: r.c === null ? null : Number(r.c), runs: Number(r.n) };
}

/** spend() per agent, for the agents with runs in [since, until). */
export async function spendByAgent(db: DB, since: string, until: string): Promise<Map<string, Spend>> {
  const rows = (await stmt(
    db,
    `SELECT agent, COUNT(*) AS n, SUM(${TOKENS}) AS t, SUM(cost_micros) AS c FROM runs WHERE created_at >= ? AND created_at < ? GROUP BY agent ORDER BY agent LIMIT 10000`,
  ).all(since, until)) as {
    agent: string;
    n: number;
    t: number | null;
    c: number | null;
  }[];
  return new Map(rows.map((r) => [r.agent, { tokens: Number(r.t ?? 0), costMicros: r.c === null ? null : Number(r.c), runs: Number(r.n) }]));
}

/** Records that `level` was said for this budget's period: false when it already was. */
export async function markAlert(db: DB, a: { scope: string; period: string; periodStart: string; level: 'warning' | 'exceeded'; at: string }): Promise<boolean> {
  return (
    (
      await stmt(db, 'INSERT INTO budget_alerts (scope, period, period_start, level, at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (scope, period, period_start, level) DO NOTHING').run(
        a.scope,
        a.period,
        a.periodStart,
        a.level,
        a.at,
      )
    ).changes > 0
  );
}

/** Forgets the alerts of periods that began before `before` (they can never be said again). */
export async function pruneAlerts(db: DB, before: string): Promise<void> {
  await stmt(db, 'DELETE FROM budget_alerts WHERE period_start < ?').run(before);
}
