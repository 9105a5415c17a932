// A run's numbers in words, as `svc runs ls` gives them: status badge, tokens, cost, how long.
// Shared by the cards, a task's page and a run's page.

import { formatDuration } from '../../src/lib/human.js';
import { elapsed, h, type Child } from './dom.js';
import type { LogItem, Run } from './types.js';

// The schema's LIVE_STATUSES; its module brings zod, which the board does not bundle.
const LIVE: readonly Run['status'][] = ['queued', 'starting', 'running', 'paused'];
export const LIVE_STATUSES = LIVE;
export const isLive = (r: Run): boolean => LIVE.includes(r.status);

export const tokens = (r: Run): string => (r.usage.inputTokens || r.usage.outputTokens ? `${r.usage.inputTokens + r.usage.cacheReadTokens} in / ${r.usage.outputTokens} out` : '—');
/** Every token the run's model read or wrote: input, cached and output, as budgets count them. */
export const allTokens = (u: Run['usage']): number => u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens + u.outputTokens;
export const cost = (usd: number | null): string => (usd === null ? '—' : `$${usd.toFixed(usd < 1 ? 4 : 2)}`);
/** How long it took, or a clock that runs while it does. */
export const took = (r: Run): Child => (!r.startedAt ? '—' : r.finishedAt ? formatDuration(Date.parse(r.finishedAt) - Date.parse(r.startedAt)) : elapsed(r.startedAt));
export const outcome = (r: Run): string => r.error ?? r.summary ?? '';
export const badge = (r: Run): HTMLElement => h('span', { class: `badge ${r.status}` }, r.status.replace('_', ' '));
export const plural = (n: number, what: string): string => `${n} ${what}${n === 1 ? '' : 's'}`;

const ACTIONS = new Set(['tool_call', 'command', 'file_change']);
/** A run's last action among log items: its last tool call, command or file change, if any. */
export const lastAction = (items: readonly LogItem[]): LogItem | null => items.findLast((i) => ACTIONS.has(i.kind)) ?? null;

/** A budget's share: ok below 80 %, warning from 80 %, exceeded from 100 % (as the daemon says budget:warning and budget:exceeded). */
export const shareState = (percent: number): 'ok' | 'warning' | 'exceeded' => (percent >= 100 ? 'exceeded' : percent >= 80 ? 'warning' : 'ok');
