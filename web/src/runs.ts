// Runs on the board: the cards' live runs, a task's runs as a table, and the run view (facts, what
// it waits for, the permissions its CLI asks, the log streaming as it happens, the diff, Cancel and
// Resume). The log's lines are the CLI's own (src/resources/runs/log-lines.ts, bundled here):
// `svc runs logs` and the board read alike.

import { formatLogItem } from '../../src/resources/runs/log-lines.js';
import { get, post, seg } from './api.js';
import { askPanel } from './asks.js';
import { freshRun, progressOf } from './card-run.js';
import { DiffPanel } from './diff-view.js';
import { breakable, h, shortId, time, type Child } from './dom.js';
import { LogTail } from './log-tail.js';
import { page } from './page.js';
import { badge, cost, isLive, LIVE_STATUSES, outcome, tokens, took } from './run-words.js';
import type { Approval, LogItem, Run, Task } from './types.js';
import { waitText } from './waits.js';

// --- live runs on the cards --------------------------------------------------------------------

/** Every live run, by task (a task has one at most): one request per live status. */
export async function loadLiveRuns(): Promise<Map<string, Run>> {
  const lists = await Promise.all(LIVE_STATUSES.map((s) => get<Run[]>(`/api/v1/runs?status=${s}&limit=200`)));
  return new Map(lists.flat().map((r) => [r.taskId, r]));
}

// --- a task's runs -----------------------------------------------------------------------------

export function runsTable(runs: Run[]): HTMLElement {
  const cols = ['Run', 'Status', 'Attempt', 'Reason', 'Agent', 'Started', 'Took', 'Tokens', 'Cost', 'Summary or error'];
  return h(
    'div',
    { class: 'table-wrap', role: 'region', 'aria-label': 'Runs', tabindex: 0 },
    h(
      'table',
      { class: 'runs' },
      h('caption', { class: 'sr-only' }, 'Runs of this task, newest first'),
      h('thead', null, h('tr', null, ...cols.map((c) => h('th', { scope: 'col' }, c)))),
      h(
        'tbody',
        null,
        runs.length
          ? runs.map((r) =>
              h(
                'tr',
                { 'data-run': r.id },
                h('th', { scope: 'row' }, h('a', { href: `#/runs/${seg(r.id)}` }, shortId(r.id))),
                h('td', null, badge(r)),
                h('td', null, String(r.attempt)),
                h('td', null, r.reason),
                h('td', null, r.agent),
                h('td', null, time(r.startedAt ?? r.createdAt)),
                h('td', null, took(r)),
                h('td', null, tokens(r)),
                h('td', null, cost(r.usage.costUsd)),
                h('td', { class: r.error ? 'error' : undefined }, breakable(outcome(r))),
              ),
            )
          : h('tr', null, h('td', { colspan: cols.length, class: 'muted' }, 'No runs yet.')),
      ),
    ),
  );
}

export const loadTaskRuns = (taskId: string): Promise<Run[]> => get<Run[]>(`/api/v1/runs?taskId=${seg(taskId)}&limit=200`);

// --- the run view --------------------------------------------------------------------------------

/** Log items drawn at most (the oldest leave the page first); a long log opens on its last ones. */
const MAX_LINES = 5000;
const OPEN_WITH = 2000;
/** The formatter's width: lines wrap on the page, this bounds a tool's input on one. */
const LINE_WIDTH = 200;
const LOG_PAGE = 1000;

/** The log's pane: a fixed height (nothing below it moves as lines arrive), following the end until the person scrolls up. */
class LogPane {
  following = true;
  readonly el: HTMLElement;
  private readonly placeholder: HTMLElement;

  constructor(skipped: number) {
    this.placeholder = h('div', { class: 'muted' }, 'Nothing yet: lines appear as the agent works.');
    this.el = h(
      'div',
      { class: 'log scroll', id: 'run-log', role: 'log', 'aria-label': 'Run log', tabindex: 0, onscroll: () => this.scrolled() },
      skipped ? h('div', { class: 'muted' }, `${skipped} earlier items are not shown here (svc runs logs shows them all).`) : null,
      this.placeholder,
    );
  }

  private atEnd = (): boolean => this.el.scrollTop + this.el.clientHeight >= this.el.scrollHeight - 8;

  private scrolled(): void {
    const at = this.atEnd();
    if (at === this.following) return;
    this.following = at;
    document.getElementById('log-follow')?.setAttribute('aria-pressed', String(at));
  }

  follow(): void {
    this.following = true;
    this.stick();
    document.getElementById('log-follow')?.setAttribute('aria-pressed', 'true');
  }

  /** Back at the end when following (after a redraw moved the pane, or lines came). */
  stick(): void {
    if (this.following) this.el.scrollTop = this.el.scrollHeight;
  }

  append(items: LogItem[]): void {
    this.placeholder.remove();
    const lines = items.map((item) =>
      h('div', { class: `ll k-${item.kind}`, 'data-seq': item.seq, title: item.at ? new Date(item.at).toLocaleTimeString() : undefined }, formatLogItem(item, LINE_WIDTH)),
    );
    this.el.append(...lines);
    const all = this.el.querySelectorAll<HTMLElement>('.ll');
    if (all.length > MAX_LINES) {
      let gone = 0;
      for (let i = 0; i < all.length - MAX_LINES; i++) {
        gone += all[i]!.offsetHeight;
        all[i]!.remove();
      }
      // Someone reading above the end keeps their place.
      if (!this.following) this.el.scrollTop -= gone;
    }
    this.stick();
  }
}

const view = {
  run: null as Run | null,
  task: null as Task | null,
  asks: [] as Approval[],
  tail: null as LogTail | null,
  pane: null as LogPane | null,
  diff: new DiffPanel(),
  confirmCancel: false,
  cancelling: false,
};

export const openRunId = (): string | null => view.run?.id ?? null;

/** Loads the run (a new one gets a fresh pane and tail), its task, its pending asks and, once it has ended, its diff; then reads the log past what is shown. */
export async function loadRun(id: string): Promise<void> {
  const run = await get<Run>(`/api/v1/runs/${seg(id)}`);
  if (view.run?.id !== id) {
    const after = Math.max(0, run.logItems - OPEN_WITH);
    const pane = new LogPane(after);
    Object.assign(view, { pane, asks: [], confirmCancel: false, cancelling: false });
    view.tail = new LogTail(
      async (from) => {
        const items = await get<LogItem[]>(`/api/v1/runs/${seg(id)}/log?after=${from}&limit=${LOG_PAGE}`);
        return { items, more: items.length === LOG_PAGE };
      },
      (items) => shown(pane, items),
      after,
    );
  }
  view.run = run;
  const [task, asks] = await Promise.all([
    get<Task>(`/api/v1/tasks/${seg(run.taskId)}`).catch(() => null),
    isLive(run) ? get<Approval[]>(`/api/v1/approvals?kind=permission&runId=${seg(id)}&status=pending&limit=200`) : [],
    view.diff.load(run),
  ]);
  view.task = task;
  view.asks = asks;
  void view.tail!.catchUp();
}

const set = (id: string, text: string): void => void document.getElementById(id)?.replaceChildren(text);

/** New lines of the open run; a usage item also updates the run's tokens and cost. */
function shown(pane: LogPane, items: LogItem[]): void {
  pane.append(items);
  const usage = items.findLast((i) => i.kind === 'usage')?.usage as Run['usage'] | undefined;
  if (usage && view.run && view.pane === pane) {
    view.run.usage = { ...view.run.usage, ...usage };
    set('run-tokens', tokens(view.run));
    set('run-cost', cost(view.run.usage.costUsd));
  }
}

/** A run:activity event: the open run's log takes its items, its turns and tokens the event's totals (or, without them, the run read again). */
export function runActivity(data: { runId?: unknown; fromSeq?: unknown; items?: unknown; turns?: unknown; usage?: unknown }): void {
  const open = view.run;
  if (!view.tail || !open || data.runId !== open.id || typeof data.fromSeq !== 'number' || !Array.isArray(data.items)) return;
  view.tail.event(
    data.fromSeq,
    (data.items as LogItem[]).map((i) => ({ ...i, at: '' })),
  );
  const show = (totals: Pick<Run, 'turns' | 'usage'>): void => {
    const r = view.run;
    if (r?.id !== open.id) return;
    Object.assign(r, totals);
    set('run-turns', String(r.turns));
    set('run-tokens', tokens(r));
    set('run-cost', cost(r.usage.costUsd));
  };
  const totals = progressOf(data);
  if (totals) show(totals);
  else freshRun(open.id, (fresh) => isLive(fresh) && show(fresh));
}

export const stickLog = (): void => view.pane?.stick();

async function cancel(r: Run): Promise<void> {
  view.cancelling = true;
  page.render();
  // The answer comes once the run has ended (its CLI has up to 10 s after SIGTERM).
  await page.act(() => post(`/api/v1/runs/${seg(r.id)}/cancel`), `run ${shortId(r.id)} cancelled`);
  view.cancelling = false;
  view.confirmCancel = false;
  page.render();
}

function cancelControls(r: Run): Child {
  if (!page.canWrite() || !isLive(r)) return null;
  if (view.cancelling) return h('button', { type: 'button', class: 'small', disabled: true }, 'Cancelling…');
  if (view.confirmCancel) {
    return [
      h('button', { type: 'button', class: 'danger', id: 'run-cancel-confirm', onclick: () => void cancel(r) }, 'Stop the agent: cancel this run'),
      h(
        'button',
        { type: 'button', class: 'small', id: 'run-cancel-keep', onclick: () => ((view.confirmCancel = false), page.render(), document.getElementById('run-cancel')?.focus()) },
        'Keep it running',
      ),
    ];
  }
  return h(
    'button',
    { type: 'button', class: 'small', id: 'run-cancel', onclick: () => ((view.confirmCancel = true), page.render(), document.getElementById('run-cancel-keep')?.focus()) },
    'Cancel run…',
  );
}

/** What a queued or paused run waits for; a paused one can be resumed now (POST /runs/{id}/resume). */
function waits(r: Run): Child {
  if (r.status !== 'queued' && r.status !== 'paused') return null;
  const why = waitText(r.waitingFor);
  return h(
    'p',
    { class: 'notice', id: 'run-waits' },
    h('strong', null, r.status === 'paused' ? `Paused (${r.pauseReason === 'budget' ? 'a budget' : 'a usage limit'})` : 'Queued'),
    why ? `: waits, ${why}` : ': starts as soon as a slot is free',
    r.status === 'paused' && page.canWrite()
      ? [
          ' ',
          h('button', { type: 'button', class: 'small', id: 'run-resume', onclick: () => void page.act(() => post(`/api/v1/runs/${seg(r.id)}/resume`), `run ${shortId(r.id)} resumed`) }, 'Resume now'),
        ]
      : null,
  );
}

const fact = (name: string, value: Child, id?: string): HTMLElement => h('div', null, h('dt', null, name), h('dd', { id }, value));

export function runView(id: string): HTMLElement {
  const r = view.run;
  if (!r || r.id !== id || !view.pane) return h('div', { class: 'view' }, h('p', { class: 'muted' }, 'Loading…'));
  const t = view.task;
  const u = r.usage;
  return h(
    'div',
    { class: 'view run-view', 'data-run': r.id, 'data-status': r.status },
    h('div', { class: 'view-head' }, h('h1', null, `Run ${shortId(r.id)}`), badge(r), h('div', { class: 'row' }, cancelControls(r))),
    h('p', { class: 'meta' }, 'of task ', h('a', { href: `#/tasks/${seg(r.taskId)}` }, t ? breakable(t.title) : shortId(r.taskId)), ` · attempt ${r.attempt} (${r.reason})`),
    waits(r),
    ...view.asks.map((a) => askPanel(a, { taskTitle: t?.title })),
    h(
      'dl',
      { class: 'facts' },
      fact('Agent', `${r.agent} (${r.runtime})`),
      fact(r.startedAt ? 'Started' : 'Queued', time(r.startedAt ?? r.createdAt)),
      fact(r.finishedAt ? 'Took' : 'Running for', took(r)),
      fact('Tokens', h('span', { title: `${u.inputTokens} in (+${u.cacheReadTokens} cached, ${u.cacheWriteTokens} written), ${u.outputTokens} out` }, tokens(r)), 'run-tokens'),
      fact('Cost', cost(u.costUsd), 'run-cost'),
      fact('Turns', String(r.turns), 'run-turns'),
      fact('Branch', r.branch ? h('code', null, r.branch) : '—'),
      fact('Exit code', r.exitCode === null ? '—' : String(r.exitCode)),
    ),
    h(
      'section',
      { 'aria-labelledby': 'log-head' },
      h(
        'div',
        { class: 'panel-head' },
        h('h2', { id: 'log-head' }, 'Log'),
        h('button', { type: 'button', class: 'small', id: 'log-follow', 'aria-pressed': String(view.pane.following), onclick: () => view.pane?.follow() }, 'Follow the end'),
        h('span', { class: 'hint' }, isLive(r) ? 'Lines arrive as the agent works; scroll up to stop following.' : 'The run has ended.'),
      ),
      view.pane.el,
    ),
    r.error || r.summary
      ? h('section', { class: `panel outcome${r.error ? ' failed' : ''}`, 'aria-label': 'Outcome' }, h('h2', null, r.error ? 'Error' : 'Summary'), h('p', null, breakable(outcome(r))))
      : null,
    h('section', { 'aria-labelledby': 'diff-head' }, h('h2', { id: 'diff-head' }, 'Changes'), view.diff.view(r)),
  );
}
