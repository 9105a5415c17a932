// The Usage view: tokens and cost per agent and for the project today, this week and this month
// (GET /api/v1/usage/periods, what `svc usage` prints), each with its budget's share (a warning
// from 80 %, exceeded from 100 %), and the budgets in force (GET /api/v1/budgets).

import { formatTokens } from '../../src/lib/human.js';
import { get } from './api.js';
import { h } from './dom.js';
import { cost, plural, shareState } from './run-words.js';
import type { BudgetsInForce, UsagePeriods } from './types.js';
import { clockTime } from './waits.js';

type Cell = UsagePeriods['rows'][number]['day'];
type Limit = NonNullable<Cell['limit']>;

const data = { periods: null as UsagePeriods | null, budgets: null as BudgetsInForce | null };

export async function loadUsage(): Promise<void> {
  [data.periods, data.budgets] = await Promise.all([get<UsagePeriods>('/api/v1/usage/periods'), get<BudgetsInForce>('/api/v1/budgets')]);
}

const limitText = (l: Limit): string => [l.tokens === null ? null : `${formatTokens(l.tokens)} tokens`, l.costUsd === null ? null : cost(l.costUsd)].filter(Boolean).join(' / ');

/** A share of a budget: a bar, "84 % of $0.50" and, past 80 %, the word (not only a colour). */
function share(percent: number, limit: Limit, what: string): HTMLElement {
  const state = shareState(percent);
  return h(
    'div',
    { class: `share ${state}`, 'data-state': state },
    h('progress', { max: 100, value: Math.min(100, percent), 'aria-label': `${what}: ${percent} % of ${limitText(limit)}` }),
    h('span', null, `${percent} % of ${limitText(limit)}`),
    state === 'ok' ? null : h('strong', { class: `badge ${state}` }, state),
  );
}

function cell(c: Cell, what: string): HTMLElement {
  return h(
    'td',
    null,
    h('div', null, `${formatTokens(c.tokens)} tokens`, c.costUsd === null ? null : ` · ${cost(c.costUsd)}`, h('span', { class: 'muted' }, ` · ${plural(c.runs, 'run')}`)),
    c.limit && c.percent !== null ? share(c.percent, c.limit, what) : null,
  );
}

export function usageView(): HTMLElement {
  const p = data.periods;
  const b = data.budgets;
  if (!p || !b) return h('div', { class: 'view' }, h('p', { class: 'muted' }, 'Loading…'));
  const PERIODS = [
    ['day', 'Today'],
    ['week', 'This week'],
    ['month', 'This month'],
  ] as const;
  const name = (agent: string | null): string => agent ?? 'the project';
  return h(
    'div',
    { class: 'view usage-view' },
    h('div', { class: 'view-head' }, h('h1', null, 'Usage')),
    h('p', { class: 'hint' }, `Tokens and cost of the agents' runs, counted in the period each run was created in (periods in ${p.timeZone}). Codex reports no cost: its runs count tokens only.`),
    h(
      'div',
      { class: 'table-wrap', role: 'region', 'aria-label': 'Spend per agent', tabindex: 0 },
      h(
        'table',
        { class: 'usage' },
        h('caption', { class: 'sr-only' }, 'Spend per agent and for the project, with budgets'),
        h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Agent'), ...PERIODS.map(([, t]) => h('th', { scope: 'col' }, t)))),
        h(
          'tbody',
          null,
          p.rows.length
            ? p.rows.map((r) =>
                h(
                  'tr',
                  { 'data-agent': r.agent ?? '', class: r.agent === null ? 'project' : undefined },
                  h('th', { scope: 'row' }, r.agent ?? h('strong', null, '(project)')),
                  ...PERIODS.map(([k, t]) => cell(r[k], `${name(r.agent)}, ${t.toLowerCase()}`)),
                ),
              )
            : h('tr', null, h('td', { colspan: 4, class: 'muted' }, 'No runs yet.')),
        ),
      ),
    ),
    h('h2', null, 'Budgets'),
    h('p', { class: 'hint' }, b.source === 'api' ? 'Set through the API (svc budgets set); project.json wins once its budgets change.' : "From project.json's budgets."),
    b.states.length
      ? h(
          'ul',
          { class: 'plain budgets' },
          ...b.states.map((s) =>
            h(
              'li',
              { 'data-budget': `${s.agent ?? ''}/${s.period}`, 'data-state': s.state },
              h('span', null, h('strong', null, `${s.agent ?? 'the project'}, per ${s.period}`), `: ${formatTokens(s.spent.tokens)} tokens · ${cost(s.spent.costUsd)} spent`),
              share(s.percent, s.limit, `${name(s.agent)} per ${s.period}`),
              h('span', { class: 'muted' }, s.state === 'exceeded' ? `its runs wait until ${clockTime(s.periodEnd)}` : `until ${clockTime(s.periodEnd)}`),
            ),
          ),
        )
      : h('p', { class: 'muted' }, 'No budgets (project.json budgets, or svc budgets set).'),
  );
}
