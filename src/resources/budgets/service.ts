import { createHash } from 'node:crypto';
import type { App } from '../../app.js';
import { nowIso } from '../../lib/time.js';
import { BUDGET_PERIODS, periodBounds, type BudgetPeriod } from '../../lib/periods.js';
import type { BudgetLimit } from '../../config/budgets.js';
import type { Budgets, BudgetStateOut } from './schema.js';
import * as store from './store.js';

// Budgets as a resource: which are in force (project.json's, or the API's), what each scope spent
// in its period, the warning and exceeded events (once per budget and period), and the hold a
// spent budget puts on new runs. The runner (resources/runs) asks; spend is summed from runs.

/** The share of a budget that warns. */
const WARN_AT = 0.8;
/** Alerts of periods that began this long ago are forgotten (the longest period is a month). */
const KEEP_ALERTS_MS = 62 * 24 * 3_600_000;

const digestOf = (b: Budgets): string => createHash('sha256').update(JSON.stringify(b)).digest('hex');

export interface InForce {
  budgets: Budgets;
  source: 'project.json' | 'api';
  updatedAt: string | null;
}

/**
 * The budgets in force: the last PUT /api/v1/budgets while project.json's budgets are still the
 * ones it replaced (an edit of the file wins from then on), else project.json's.
 */
export async function budgetsInForce(app: App): Promise<InForce> {
  const file = app.config().budgets;
  const put = await store.getOverride(app.db);
  if (put && put.fileDigest === digestOf(file)) return { budgets: JSON.parse(put.budgets) as Budgets, source: 'api', updatedAt: put.updatedAt };
  return { budgets: file, source: 'project.json', updatedAt: null };
}

/** PUT /api/v1/budgets: replaces the budgets in force (until project.json's change), with budget:updated. */
export async function putBudgets(app: App, budgets: Budgets): Promise<InForce> {
  return await app.events.write(async () => {
    await store.putOverride(app.db, { budgets: JSON.stringify(budgets), fileDigest: digestOf(app.config().budgets), updatedAt: nowIso(app.clock) });
    app.events.emit('budget:updated', { limits: budgets.limits.length });
    // A limit lowered below what was spent is exceeded now: said now, not at the next run's usage.
    await noteSpend(app, null);
    return await budgetsInForce(app);
  });
}

/** One budget in its current period. */
export interface BudgetState extends BudgetStateOut {
  /** 'project' or 'agent:<name>': the alerts' key. */
  key: string;
  end: number;
}

const ratio = (spent: number, limit: number): number => (limit === 0 ? 1 : spent / limit);

async function stateOf(app: App, b: BudgetLimit, zone: string, now: number): Promise<BudgetState> {
  const { start, end } = periodBounds(b.period, now, zone);
  const periodStart = new Date(start).toISOString();
  const periodEnd = new Date(end).toISOString();
  const s = await store.spend(app.db, periodStart, periodEnd, b.agent ?? null);
  const costUsd = (s.costMicros ?? 0) / 1e6;
  const share = Math.max(b.tokens === undefined ? 0 : ratio(s.tokens, b.tokens), b.costUsd === undefined ? 0 : ratio(costUsd, b.costUsd));
  return {
    key: b.agent === undefined ? 'project' : `agent:${b.agent}`,
    scope: b.agent === undefined ? 'project' : 'agent',
    agent: b.agent ?? null,
    period: b.period,
    periodStart,
    periodEnd,
    end,
    limit: { tokens: b.tokens ?? null, costUsd: b.costUsd ?? null },
    spent: { tokens: s.tokens, costUsd },
    percent: Math.round(share * 1000) / 10,
    state: share >= 1 ? 'exceeded' : share >= WARN_AT ? 'warning' : 'ok',
  };
}

/** Every budget in force (or those that limit `agent`: its own and the project's), in its current period. */
export async function budgetStates(app: App, agent?: string, now = app.clock.now()): Promise<BudgetState[]> {
  const { budgets } = await budgetsInForce(app);
  const out: BudgetState[] = [];
  for (const b of budgets.limits) if (agent === undefined || b.agent === undefined || b.agent === agent) out.push(await stateOf(app, b, budgets.timeZone, now));
  return out;
}

/**
 * The spent budget that holds new runs of `agent`, or null: of those exceeded (its own and the
 * project's), the one whose period ends last (the runs wait for every one of them). `states` are
 * budgetStates() read once for many agents.
 */
export async function budgetHold(app: App, agent: string, now = app.clock.now(), given?: BudgetState[]): Promise<BudgetState | null> {
  const states = given ?? (await budgetStates(app, agent, now));
  let hold: BudgetState | null = null;
  for (const s of states) if (s.state === 'exceeded' && (s.agent === null || s.agent === agent) && (!hold || s.end > hold.end)) hold = s;
  return hold;
}

/**
 * Says budget:warning and budget:exceeded for the budgets of `agent` (null: every budget) that
 * reached 80 % or 100 % in their period, once per budget and period (inside the caller's write).
 * Returns the exceeded ones.
 */
export async function noteSpend(app: App, agent: string | null, now = app.clock.now()): Promise<BudgetState[]> {
  const states = await budgetStates(app, agent ?? undefined, now);
  if (!states.length) return [];
  return await app.events.write(async () => {
    const at = nowIso(app.clock);
    let marked = false;
    for (const s of states) {
      for (const level of ['warning', 'exceeded'] as const) {
        if (level === 'warning' ? s.state === 'ok' : s.state !== 'exceeded') continue;
        if (!(await store.markAlert(app.db, { scope: s.key, period: s.period, periodStart: s.periodStart, level, at }))) continue;
        marked = true;
        const { key: _k, end: _e, state: _s, ...data } = s;
        app.events.emit(level === 'warning' ? 'budget:warning' : 'budget:exceeded', data);
      }
    }
    if (marked) await store.pruneAlerts(app.db, new Date(now - KEEP_ALERTS_MS).toISOString());
    return states.filter((s) => s.state === 'exceeded');
  });
}

const usd = (micros: number | null): number | null => (micros === null ? null : micros / 1e6);

/**
 * GET /api/v1/usage/periods: what each agent (and the project) spent today, this week and this
 * month in the budgets' time zone, with the budget of each where one is set.
 */
export async function usagePeriods(app: App, now = app.clock.now()) {
  const { budgets } = await budgetsInForce(app);
  const zone = budgets.timeZone;
  const bounds = Object.fromEntries(BUDGET_PERIODS.map((p) => [p, periodBounds(p, now, zone)])) as Record<BudgetPeriod, { start: number; end: number }>;
  const iso = (t: number) => new Date(t).toISOString();
  const byPeriod = {} as Record<BudgetPeriod, Map<string, store.Spend>>;
  for (const p of BUDGET_PERIODS) byPeriod[p] = await store.spendByAgent(app.db, iso(bounds[p].start), iso(bounds[p].end));
  const limitOf = (agent: string | null, period: BudgetPeriod) => budgets.limits.find((b) => (b.agent ?? null) === agent && b.period === period) ?? null;
  const agents = new Set<string>([...BUDGET_PERIODS.flatMap((p) => [...byPeriod[p].keys()]), ...budgets.limits.flatMap((b) => (b.agent === undefined ? [] : [b.agent]))]);
  const cell = (agent: string | null, period: BudgetPeriod) => {
    const spent: store.Spend =
      agent === null
        ? [...byPeriod[period].values()].reduce(
            (a, s) => ({ tokens: a.tokens + s.tokens, runs: a.runs + s.runs, costMicros: s.costMicros === null ? a.costMicros : (a.costMicros ?? 0) + s.costMicros }),
            { tokens: 0, runs: 0, costMicros: null as number | null },
          )
        : (byPeriod[period].get(agent) ?? { tokens: 0, costMicros: null, runs: 0 });
    const b = limitOf(agent, period);
    const costUsd = usd(spent.costMicros);
    const share = b ? Math.max(b.tokens === undefined ? 0 : ratio(spent.tokens, b.tokens), b.costUsd === undefined ? 0 : ratio(costUsd ?? 0, b.costUsd)) : null;
    return {
      tokens: spent.tokens,
      costUsd,
      runs: spent.runs,
      limit: b ? { tokens: b.tokens ?? null, costUsd: b.costUsd ?? null } : null,
      percent: share === null ? null : Math.round(share * 1000) / 10,
    };
  };
  const row = (agent: string | null) => ({ agent, day: cell(agent, 'day'), week: cell(agent, 'week'), month: cell(agent, 'month') });
  return {
    timeZone: zone,
    periods: Object.fromEntries(BUDGET_PERIODS.map((p) => [p, { start: iso(bounds[p].start), end: iso(bounds[p].end) }])) as Record<BudgetPeriod, { start: string; end: string }>,
    rows: [...[...agents].sort().map(row), row(null)],
  };
}
