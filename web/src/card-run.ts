// A card's live run: its status, agent and clock; its turns and tokens (or what it waits for);
// and its last action, one line (`▸ Bash  npm test`, `✎ src/parser.ts +12 −3`). run:activity
// events keep them current without redrawing the board: the card's lines are changed in place,
// each keeping its height, so nothing on the board moves.
//
// The last action comes from the events' items (and, for a run already going when the board
// opened, from the end of its log). Turns and tokens are the run's own fields, which the runner
// writes with each batch of the log: an event makes the board read the run again, at most every
// half second per run.

import { formatTokens } from '../../src/lib/human.js';
import { formatLogItem } from '../../src/resources/runs/log-lines.js';
import { get, seg } from './api.js';
import { elapsed, h } from './dom.js';
import { allTokens, badge, isLive, lastAction, plural } from './run-words.js';
import type { LogItem, Run } from './types.js';
import { waitText } from './waits.js';

/** The action line's width in characters: the line ends in "…" where the card does anyway. */
const ACTION_WIDTH = 80;
const TAIL = 200;

/** The cards' live runs by run id, and the last action seen of each. */
let runs = new Map<string, Run>();
const actions = new Map<string, LogItem>();
const tailRead = new Set<string>();

/** The cards' live runs after a reload: the last action of one not yet known is read from its log's end, once. */
export function track(live: Iterable<Run>): void {
  runs = new Map([...live].map((r) => [r.id, r]));
  for (const id of [...actions.keys()]) if (!runs.has(id)) actions.delete(id);
  for (const id of [...tailRead]) if (!runs.has(id)) tailRead.delete(id);
  for (const r of runs.values()) {
    if (r.logItems === 0 || actions.has(r.id) || tailRead.has(r.id)) continue;
    tailRead.add(r.id);
    void get<LogItem[]>(`/api/v1/runs/${seg(r.id)}/log?after=${Math.max(0, r.logItems - TAIL)}&limit=${TAIL}`)
      .then((items) => noteAction(r.id, lastAction(items)) && patch(r.id))
      .catch(() => tailRead.delete(r.id));
  }
}

/** Keeps the newer of what is known and what was read; true when it changed. */
function noteAction(runId: string, item: LogItem | null): boolean {
  const known = actions.get(runId);
  if (!item || (known && known.seq >= item.seq)) return false;
  actions.set(runId, item);
  return true;
}

const progress = (r: Run): HTMLElement => {
  const why = r.status === 'queued' || r.status === 'paused' ? waitText(r.waitingFor) : null;
  const text = why ? `waits: ${why}` : r.status === 'queued' ? 'about to start' : `${plural(r.turns, 'turn')} · ${formatTokens(allTokens(r.usage))} tokens`;
  return h('span', { class: 'run-progress', title: text }, text);
};

const action = (runId: string): HTMLElement => {
  const a = actions.get(runId);
  const text = a ? formatLogItem(a, ACTION_WIDTH) : '';
  return a ? h('span', { class: 'run-action', title: text }, text) : h('span', { class: 'run-action muted' }, 'no action yet');
};

/** The run's lines on its card: status, agent and clock (a link to the run's page), progress, last action. */
export function cardRun(r: Run): HTMLElement {
  const since = r.startedAt ?? r.createdAt;
  return h(
    'div',
    { class: 'card-run', 'data-run': r.id },
    h('a', { class: 'run-live', href: `#/runs/${seg(r.id)}`, draggable: 'false' }, badge(r), ` ${r.agent} · `, elapsed(since)),
    progress(r),
    action(r.id),
  );
}

/** Redraws one card's progress and action lines in place. */
function patch(runId: string): void {
  const r = runs.get(runId);
  const el = r && document.querySelector(`.card-run[data-run="${CSS.escape(runId)}"]`);
  if (!r || !el) return;
  el.querySelector('.run-progress')?.replaceWith(progress(r));
  el.querySelector('.run-action')?.replaceWith(action(runId));
}

/** A run:activity event: a card's run takes its last action, turns and tokens from it (an older daemon's event, without them: from the run, read again). */
export function activity(data: { runId?: unknown; items?: unknown; turns?: unknown; usage?: unknown }): void {
  const r = typeof data.runId === 'string' ? runs.get(data.runId) : undefined;
  if (!r || !Array.isArray(data.items)) return;
  const totals = progressOf(data);
  if (totals) Object.assign(r, totals);
  if (noteAction(r.id, lastAction(data.items as LogItem[])) || totals) patch(r.id);
  if (totals) return;
  freshRun(r.id, (fresh) => {
    const mine = runs.get(fresh.id);
    if (!mine || !isLive(fresh)) return;
    mine.turns = fresh.turns;
    mine.usage = fresh.usage;
    patch(fresh.id);
  });
}

/** The run's turns and usage a run:activity event carries, when it carries both. */
export function progressOf(data: { turns?: unknown; usage?: unknown }): Pick<Run, 'turns' | 'usage'> | null {
  return typeof data.turns === 'number' && data.usage !== null && typeof data.usage === 'object' ? { turns: data.turns, usage: data.usage as Run['usage'] } : null;
}

// --- reading a live run again, at most every half second ----------------------------------------

const FRESH_MS = 500;
interface Reading {
  last: number;
  waiting: boolean;
  reading: boolean;
  again: boolean;
  then: (r: Run) => void;
}
const readings = new Map<string, Reading>();

/**
 * Reads the run again soon, for its turns and tokens (when an event does not carry them): at once when it
 * was not read in the last half second, else at the end of that half second. Calls while a read
 * waits share it; a call while one is on its way asks for one more after it. The latest `then`
 * takes the answer.
 */
export function freshRun(runId: string, then: (r: Run) => void): void {
  const f = readings.get(runId) ?? { last: 0, waiting: false, reading: false, again: false, then };
  readings.set(runId, f);
  f.then = then;
  if (f.reading) f.again = true;
  if (f.reading || f.waiting) return;
  f.waiting = true;
  setTimeout(
    () => {
      f.waiting = false;
      f.reading = true;
      f.last = Date.now();
      get<Run>(`/api/v1/runs/${seg(runId)}`)
        .then((r) => {
          f.then(r);
          // An ended run has no more to read; its reading is forgotten.
          if (!isLive(r)) f.again = false;
          return isLive(r);
        })
        .catch(() => (f.again = false))
        .then((live) => {
          f.reading = false;
          if (!live) readings.delete(runId);
          else if (f.again) {
            f.again = false;
            freshRun(runId, f.then);
          }
        });
    },
    Math.max(0, f.last + FRESH_MS - Date.now()),
  );
}
