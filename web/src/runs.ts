// Runs on the board: a task's runs as a table, a card's live run, and the run view (facts, the
// log streaming as it happens, the diff, Cancel). The log's lines are the CLI's own
// (src/resources/runs/log-lines.ts, bundled here): `svc runs logs` and the board read alike.

import { formatDuration } from '../../src/lib/human.js';
import { formatLogItem } from '../../src/resources/runs/log-lines.js';
import { ApiFailure, get, post, seg } from './api.js';
import { parseDiff, type DiffFile } from './diff.js';
import { breakable, elapsed, h, shortId, time, type Child } from './dom.js';
import { LogTail } from './log-tail.js';
import type { LogItem, Run, RunDiff, Task } from './types.js';

/** What the run views need of the page (main.ts). */
export interface Board {
  canWrite(): boolean;
  act(fn: () => Promise<unknown>, done?: string): Promise<boolean>;
  render(): void;
}
let board: Board;
export const useBoard = (b: Board): void => void (board = b);

// The schema's LIVE_STATUSES; its module brings zod, which the board does not bundle.
const LIVE: readonly Run['status'][] = ['queued', 'starting', 'running', 'paused'];
export const isLive = (r: Run): boolean => LIVE.includes(r.status);

// --- the numbers `svc runs ls` gives, in words ---------------------------------------------

const tokens = (r: Run): string => (r.usage.inputTokens || r.usage.outputTokens ? `${r.usage.inputTokens + r.usage.cacheReadTokens} in / ${r.usage.outputTokens} out` : '—');
const cost = (usd: number | null): string => (usd === null ? '—' : `$${usd.toFixed(usd < 1 ? 4 : 2)}`);
/** How long it took, or a clock that runs while it does. */
const took = (r: Run): Child => (!r.startedAt ? '—' : r.finishedAt ? formatDuration(Date.parse(r.finishedAt) - Date.parse(r.startedAt)) : elapsed(r.startedAt));
const outcome = (r: Run): string => r.error ?? r.summary ?? '';
const badge = (r: Run): HTMLElement => h('span', { class: `badge ${r.status}` }, r.status.replace('_', ' '));

// --- live runs on the cards --------------------------------------------------------------------

/** Every live run, by task (a task has one at most): one request per live status. */
export async function loadLiveRuns(): Promise<Map<string, Run>> {
  const lists = await Promise.all(LIVE.map((s) => get<Run[]>(`/api/v1/runs?status=${s}&limit=200`)));
  return new Map(lists.flat().map((r) => [r.taskId, r]));
}

/** A card's line for its live run: status, agent and how long, linking to the run. */
export function liveRunLine(r: Run): HTMLElement {
  const since = r.startedAt ?? r.createdAt;
  return h('a', { class: 'run-live', href: `#/runs/${seg(r.id)}`, draggable: 'false', 'data-run': r.id }, badge(r), ` ${r.agent} · `, elapsed(since));
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
/** The diff is drawn a page at a time: files, and lines of a file. */
const FILE_PAGE = 50;
const LINE_PAGE = 400;
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
    const lines = items.map((item) => h('div', { class: `ll k-${item.kind}`, 'data-seq': item.seq, title: item.at ? new Date(item.at).toLocaleTimeString() : undefined }, formatLogItem(item, LINE_WIDTH)));
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
  tail: null as LogTail | null,
  pane: null as LogPane | null,
  diff: null as (RunDiff & { files: DiffFile[] }) | null,
  diffError: '',
  shownFiles: FILE_PAGE,
  shownLines: new Map<string, number>(),
  closedFiles: new Set<string>(),
  confirmCancel: false,
  cancelling: false,
};

export const openRunId = (): string | null => view.run?.id ?? null;

/** Loads the run (a new one gets a fresh pane and tail), its task and, once it has ended, its diff; then reads the log past what is shown. */
export async function loadRun(id: string): Promise<void> {
  const run = await get<Run>(`/api/v1/runs/${seg(id)}`);
  if (view.run?.id !== id) {
    const after = Math.max(0, run.logItems - OPEN_WITH);
    const pane = new LogPane(after);
    Object.assign(view, { pane, diff: null, diffError: '', shownFiles: FILE_PAGE, confirmCancel: false, cancelling: false });
    view.shownLines.clear();
    view.closedFiles.clear();
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
  const [task] = await Promise.all([get<Task>(`/api/v1/tasks/${seg(run.taskId)}`).catch(() => null), loadDiff(run)]);
  view.task = task;
  void view.tail!.catchUp();
}

async function loadDiff(run: Run): Promise<void> {
  if (isLive(run) || !run.headCommit || (view.diff?.runId === run.id && view.diff.headCommit === run.headCommit)) return;
  try {
    const d = await get<RunDiff>(`/api/v1/runs/${seg(run.id)}/diff`);
    view.diff = { ...d, files: parseDiff(d.patch) };
  } catch (e) {
    view.diffError = e instanceof ApiFailure ? e.message : String(e);
  }
}

/** New lines of the open run; a usage item also updates the run's tokens and cost. */
function shown(pane: LogPane, items: LogItem[]): void {
  pane.append(items);
  const usage = items.findLast((i) => i.kind === 'usage')?.usage as Run['usage'] | undefined;
  if (usage && view.run && view.pane === pane) {
    view.run.usage = { ...view.run.usage, ...usage };
    const set = (id: string, text: string) => document.getElementById(id)?.replaceChildren(text);
    set('run-tokens', tokens(view.run));
    set('run-cost', cost(view.run.usage.costUsd));
  }
}

/** A run:activity event: the open run's log takes its items. */
export function runActivity(data: { runId?: unknown; fromSeq?: unknown; items?: unknown }): void {
  if (!view.tail || data.runId !== view.run?.id || typeof data.fromSeq !== 'number' || !Array.isArray(data.items)) return;
  view.tail.event(data.fromSeq, (data.items as LogItem[]).map((i) => ({ ...i, at: '' })));
}

export const stickLog = (): void => view.pane?.stick();

async function cancel(r: Run): Promise<void> {
  view.cancelling = true;
  board.render();
  // The answer comes once the run has ended (its CLI has up to 10 s after SIGTERM).
  await board.act(() => post(`/api/v1/runs/${seg(r.id)}/cancel`), `run ${shortId(r.id)} cancelled`);
  view.cancelling = false;
  view.confirmCancel = false;
  board.render();
}

function cancelControls(r: Run): Child {
  if (!board.canWrite() || !isLive(r)) return null;
  if (view.cancelling) return h('button', { type: 'button', class: 'small', disabled: true }, 'Cancelling…');
  if (view.confirmCancel) {
    return [
      h('button', { type: 'button', class: 'danger', id: 'run-cancel-confirm', onclick: () => void cancel(r) }, 'Stop the agent: cancel this run'),
      h('button', { type: 'button', class: 'small', id: 'run-cancel-keep', onclick: () => ((view.confirmCancel = false), board.render(), document.getElementById('run-cancel')?.focus()) }, 'Keep it running'),
    ];
  }
  return h('button', { type: 'button', class: 'small', id: 'run-cancel', onclick: () => ((view.confirmCancel = true), board.render(), document.getElementById('run-cancel-keep')?.focus()) }, 'Cancel run…');
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
    h(
      'dl',
      { class: 'facts' },
      fact('Agent', `${r.agent} (${r.runtime})`),
      fact(r.startedAt ? 'Started' : 'Queued', time(r.startedAt ?? r.createdAt)),
      fact(r.finishedAt ? 'Took' : 'Running for', took(r)),
      fact('Tokens', h('span', { title: `${u.inputTokens} in (+${u.cacheReadTokens} cached, ${u.cacheWriteTokens} written), ${u.outputTokens} out` }, tokens(r)), 'run-tokens'),
      fact('Cost', cost(u.costUsd), 'run-cost'),
      fact('Turns', String(r.turns)),
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
    r.error || r.summary ? h('section', { class: `panel outcome${r.error ? ' failed' : ''}`, 'aria-label': 'Outcome' }, h('h2', null, r.error ? 'Error' : 'Summary'), h('p', null, breakable(outcome(r)))) : null,
    h('section', { 'aria-labelledby': 'diff-head' }, h('h2', { id: 'diff-head' }, 'Changes'), diffView(r)),
  );
}

// --- the diff ------------------------------------------------------------------------------------

const counts = (added: number, removed: number): HTMLElement => h('span', { class: 'counts', 'aria-label': `${added} lines added, ${removed} removed` }, h('span', { class: 'add' }, `+${added}`), ' ', h('span', { class: 'del' }, `−${removed}`));

function diffView(r: Run): Child {
  if (isLive(r)) return h('p', { class: 'muted' }, 'The changes appear here once the run has committed its work.');
  if (!r.headCommit) return h('p', { class: 'muted' }, 'No commit: the run changed nothing, or did not succeed.');
  if (view.diffError) return h('p', { class: 'error' }, view.diffError);
  const d = view.diff;
  if (!d) return h('p', { class: 'muted' }, 'Loading…');
  const files = d.files;
  const more = files.length - view.shownFiles;
  return [
    h('p', { class: 'meta' }, d.branch ? [h('code', null, d.branch), ' · '] : null, `${files.length} file${files.length === 1 ? '' : 's'} `, d.diffStat ? counts(d.diffStat.added, d.diffStat.removed) : null),
    d.truncated ? h('p', { class: 'hint note' }, `The diff is cut at 1 MiB: the rest is on the branch (git diff ${d.baseCommit?.slice(0, 12)}..${d.headCommit?.slice(0, 12)}).`) : null,
    files.length ? null : h('p', { class: 'muted' }, 'The commit changed nothing.'),
    ...files.slice(0, view.shownFiles).map(fileView),
    more > 0 ? h('button', { type: 'button', class: 'small', onclick: () => ((view.shownFiles += FILE_PAGE), board.render()) }, `Show ${Math.min(more, FILE_PAGE)} more files (${more} not shown)`) : null,
  ];
}

function fileView(f: DiffFile): HTMLElement {
  const shownLines = view.shownLines.get(f.path) ?? LINE_PAGE;
  const rest = f.lines.length - shownLines;
  return h(
    'details',
    {
      class: 'diff-file',
      'data-path': f.path,
      open: !view.closedFiles.has(f.path) || undefined,
      ontoggle: (e: Event) => ((e.target as HTMLDetailsElement).open ? view.closedFiles.delete(f.path) : view.closedFiles.add(f.path)),
    },
    h('summary', null, h('code', null, f.from ? `${f.from} → ${f.path}` : f.path), f.change === 'modified' ? null : h('span', { class: 'muted' }, ` ${f.change}`), ' ', f.binary ? h('span', { class: 'muted' }, 'binary') : counts(f.added, f.removed)),
    f.binary || !f.lines.length ? null : h('pre', { class: 'diff' }, ...f.lines.slice(0, shownLines).map((l) => (l.kind === 'add' ? h('ins', null, l.text) : l.kind === 'del' ? h('del', null, l.text) : h('span', { class: l.kind }, l.text)))),
    rest > 0 ? h('button', { type: 'button', class: 'small', onclick: () => (view.shownLines.set(f.path, shownLines + LINE_PAGE), board.render()) }, `Show ${Math.min(rest, LINE_PAGE)} more lines (${rest} not shown)`) : null,
  );
}
