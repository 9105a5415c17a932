// The board: one page, nine views and a task's and a run's page (hash routes), live through the
// event stream. Vanilla DOM, no framework: see docs/board.md for why.

import { LEGAL_MOVES, TASK_STATES, type TaskState } from '../../src/resources/tasks/state.js';
import { all, ApiFailure, del, get, patch, post, seg, whenSignedOut } from './api.js';
import { breakable, h, label, refreshElapsed, refreshTimes, select, shortId, time, timeLeft, type Child } from './dom.js';
import { askOutcome, askPanel, asksOf, isAsk } from './asks.js';
import * as cardRuns from './card-run.js';
import { startLive } from './live.js';
import * as routines from './routines.js';
import { usePage } from './page.js';
import { agentRuns, loadQueue, pausedProviders } from './queue.js';
import { loadReview, reviewChanges, reviewPanel } from './review.js';
import { isLive } from './run-words.js';
import * as runs from './runs.js';
import { runtimeForm, runtimeSummary, type RuntimeEdit } from './runtime.js';
import type { Agent, Approval, BoardSession, Database, Delivery, Mission, QueryResult, Queue, Run, StreamedEvent, Task, Team, Webhook } from './types.js';
import { loadUsage, usageView } from './usage.js';

type View = 'board' | 'missions' | 'routines' | 'approvals' | 'agents' | 'usage' | 'events' | 'webhooks' | 'databases' | 'task' | 'run';
/** The views in the navigation; a task's page (#/tasks/<id>) and a run's (#/runs/<id>) are opened from the others. */
const VIEWS: View[] = ['board', 'missions', 'routines', 'approvals', 'agents', 'usage', 'events', 'webhooks', 'databases'];

const main = document.getElementById('main')!;
const toastEl = document.getElementById('toast')!;
const liveEl = document.getElementById('live')!;

const state = {
  session: null as BoardSession | null,
  view: 'board' as View,
  /** The task or run a task's or run's page shows. */
  param: '',
  tasks: [] as Task[],
  /** Live runs by task, for the cards. */
  liveRuns: new Map<string, Run>(),
  task: null as Task | null,
  taskRuns: [] as Run[],
  runNowError: '',
  /** Why a task's or run's page has nothing to show (404). */
  missing: '',
  runtimeEdit: null as RuntimeEdit | null,
  missions: [] as Mission[],
  approvals: [] as Approval[],
  agents: [] as Agent[],
  teams: [] as Team[],
  /** What the runner does per agent, and the paused providers (GET /api/v1/runs/queue). */
  queue: null as Queue | null,
  webhooks: [] as Webhook[],
  deliveries: new Map<string, Delivery[]>(),
  databases: [] as Database[],
  events: [] as StreamedEvent[],
  eventsPaused: false,
  eventsFilter: '',
  pausedBuffer: [] as StreamedEvent[],
  openEvents: new Set<number>(),
  filters: { agent: '', mission: '', label: '' },
  editing: null as string | null,
  confirmDelete: null as string | null,
  query: { db: '', sql: 'SELECT 1 AS one', result: null as QueryResult | null, error: '' },
  signedOut: false,
};

const canWrite = (): boolean => state.session !== null && !state.session.readOnly;
usePage({ canWrite, act, toast, render, refresh, who: () => state.session?.name ?? '' });
routines.useBoard({ canWrite, act });

// --- feedback --------------------------------------------------------------------------------

let toastTimer: ReturnType<typeof setTimeout> | undefined;
function toast(message: string, kind: 'error' | 'info' = 'error'): void {
  toastEl.textContent = message;
  toastEl.className = `toast ${kind}`;
  toastEl.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (toastEl.hidden = true), 8000);
}

/** Runs an action that calls the API; a refusal is shown with the API's own message. */
async function act(fn: () => Promise<unknown>, done?: string): Promise<boolean> {
  try {
    await fn();
    if (done) toast(done, 'info');
    await refresh();
    return true;
  } catch (e) {
    toast(e instanceof ApiFailure ? e.message : String(e));
    return false;
  }
}

// --- data ------------------------------------------------------------------------------------

const loaders: Record<View, () => Promise<void>> = {
  board: async () => {
    [state.tasks, state.agents, state.missions, state.liveRuns, state.queue] = await Promise.all([
      all<Task>('/api/v1/tasks'),
      get<Agent[]>('/api/v1/agents'),
      all<Mission>('/api/v1/missions'),
      runs.loadLiveRuns(),
      loadQueue(),
    ]);
    cardRuns.track(state.liveRuns.values());
  },
  task: () =>
    found(async () => {
      [state.task, state.taskRuns] = await Promise.all([get<Task>(`/api/v1/tasks/${seg(state.param)}`), runs.loadTaskRuns(state.param)]);
      await loadReview(state.task, state.taskRuns);
    }),
  run: () => found(() => runs.loadRun(state.param)),
  missions: async () => {
    [state.missions, state.tasks] = await Promise.all([all<Mission>('/api/v1/missions'), all<Task>('/api/v1/tasks')]);
  },
  routines: () => routines.loadRoutines(),
  approvals: async () => {
    [state.approvals, state.tasks] = await Promise.all([all<Approval>('/api/v1/approvals'), all<Task>('/api/v1/tasks')]);
  },
  agents: async () => {
    [state.agents, state.teams, state.tasks, state.queue] = await Promise.all([get<Agent[]>('/api/v1/agents'), get<Team[]>('/api/v1/agents/teams'), all<Task>('/api/v1/tasks'), loadQueue()]);
  },
  usage: loadUsage,
  events: async () => undefined,
  webhooks: async () => {
    state.webhooks = await get<Webhook[]>('/v1/webhooks');
    const lists = await Promise.all(state.webhooks.map((w) => get<Delivery[]>(`/v1/webhooks/${seg(w.id)}/deliveries?limit=10`)));
    state.deliveries = new Map(state.webhooks.map((w, i) => [w.id, lists[i]!]));
    // A delivery's outcome is no event of its own: while one is pending, look again shortly.
    clearTimeout(deliveryPoll);
    if (lists.some((l) => l.some((x) => x.status === 'pending'))) deliveryPoll = setTimeout(() => state.view === 'webhooks' && void refresh(), 500);
  },
  databases: async () => {
    state.databases = await all<Database>('/api/v1/data');
  },
};

/** A task's or run's page: a 404 is what the page says (the id of a link may be gone). */
async function found(load: () => Promise<void>): Promise<void> {
  state.missing = '';
  try {
    await load();
  } catch (e) {
    if (!(e instanceof ApiFailure && e.status === 404)) throw e;
    state.missing = e.message;
  }
}

let deliveryPoll: ReturnType<typeof setTimeout> | undefined;
let refreshing: Promise<void> | null = null;
let again = false;
/** Reloads what the current view shows and draws it; calls during a reload coalesce into one more. */
async function refresh(): Promise<void> {
  if (refreshing) {
    again = true;
    return refreshing;
  }
  refreshing = (async () => {
    do {
      again = false;
      try {
        await Promise.all([loaders[state.view](), state.view !== 'approvals' ? loadPendingCount() : null]);
        applyPatches();
      } catch (e) {
        if (!(e instanceof ApiFailure && e.status === 401)) toast(e instanceof ApiFailure ? e.message : String(e));
      }
      render();
    } while (again);
  })();
  try {
    await refreshing;
  } finally {
    refreshing = null;
  }
}

async function loadPendingCount(): Promise<void> {
  state.approvals = await get<Approval[]>('/api/v1/approvals?status=pending&limit=200');
}

// --- rendering -------------------------------------------------------------------------------

/**
 * Draws the current view from state. What the person was doing survives a redraw: the values of
 * form fields (by id), the focused element, open <details> and the scroll of scrolling panes.
 */
function render(): void {
  if (state.signedOut) return;
  const kept = new Map<string, { value?: string; checked?: boolean; scroll?: number }>();
  for (const el of main.querySelectorAll<HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement>('input[id], textarea[id], select[id]')) {
    kept.set(el.id, { value: el.value, ...(el instanceof HTMLInputElement && el.type === 'checkbox' ? { checked: el.checked } : {}) });
  }
  for (const el of main.querySelectorAll<HTMLElement>('.scroll[id]')) kept.set(el.id, { scroll: el.scrollTop });
  const focused = document.activeElement && main.contains(document.activeElement) ? document.activeElement.id || (document.activeElement as HTMLElement).dataset.focusId : undefined;

  const view = state.view;
  const content =
    state.missing && (view === 'task' || view === 'run')
      ? h('div', { class: 'view' }, h('h1', null, view === 'task' ? 'Task' : 'Run'), h('p', { class: 'error' }, state.missing), h('p', null, h('a', { href: '#/board' }, 'Back to the board')))
      : {
          board: boardView,
          missions: missionsView,
          routines: routines.routinesView,
          approvals: approvalsView,
          agents: agentsView,
          usage: usageView,
          events: eventsView,
          webhooks: webhooksView,
          databases: databasesView,
          task: taskView,
          run: () => runs.runView(state.param),
        }[view]();
  main.replaceChildren(content);

  for (const [id, k] of kept) {
    const el = document.getElementById(id) as HTMLInputElement | null;
    if (!el) continue;
    if (k.value !== undefined && el.dataset.keep !== 'no') el.value = k.value;
    if (k.checked !== undefined) el.checked = k.checked;
    if (k.scroll !== undefined) el.scrollTop = k.scroll;
  }
  if (focused) (document.getElementById(focused) ?? main.querySelector<HTMLElement>(`[data-focus-id="${CSS.escape(focused)}"]`))?.focus();
  if (view === 'run') runs.stickLog();
  for (const a of document.querySelectorAll<HTMLAnchorElement>('nav a[data-view]')) {
    if (a.dataset.view === view) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const pending = state.approvals.filter((a) => a.status === 'pending').length;
  document.getElementById('pending-count')!.textContent = pending ? String(pending) : '';
}

const title = (text: string, ...rest: Child[]): HTMLElement => h('div', { class: 'view-head' }, h('h1', null, text), ...rest);
const missionName = (id: string | null): string => (id ? (state.missions.find((m) => m.id === id)?.name ?? shortId(id)) : '');
const taskTitle = (id: string | null): string => (id ? (state.tasks.find((t) => t.id === id)?.title ?? shortId(id)) : '');

// --- board -----------------------------------------------------------------------------------

const STATE_LABEL: Record<TaskState, string> = {
  draft: 'Draft',
  pending: 'Pending',
  assigned: 'Assigned',
  in_progress: 'In progress',
  review: 'Review',
  awaiting_approval: 'Awaiting approval',
  done: 'Done',
  failed: 'Failed',
};

async function move(task: Task, to: TaskState): Promise<void> {
  await act(() => post(`/api/v1/tasks/${seg(task.id)}/transition`, { to, expectedFrom: task.status, reason: 'moved on the board' }), `moved “${task.title}” to ${STATE_LABEL[to]}`);
}

let dragging: Task | null = null;

function card(t: Task): HTMLElement {
  const editing = state.editing === t.id;
  const live = state.liveRuns.get(t.id);
  const asks = live ? asksOf(state.approvals, live.id) : [];
  const moves = LEGAL_MOVES[t.status];
  const body: Child[] = editing
    ? [
        h(
          'form',
          {
            class: 'edit',
            onsubmit: (e: Event) => {
              e.preventDefault();
              const f = new FormData(e.target as HTMLFormElement);
              const labels = String(f.get('labels') ?? '')
                .split(',')
                .map((s) => s.trim())
                .filter(Boolean);
              const assign = String(f.get('assignTo') ?? '');
              void act(() => patch(`/api/v1/tasks/${seg(t.id)}`, { title: String(f.get('title')), assignTo: assign || null, labels }), 'task saved').then(
                (ok) => ok && ((state.editing = null), render()),
              );
            },
          },
          label('Title', h('input', { id: `edit-title-${t.id}`, name: 'title', required: true, maxlength: 500, value: t.title })),
          label('Assignee', select(`edit-assign-${t.id}`, [['', '(nobody)'], ...state.agents.map((a): [string, string] => [a.name, a.name])], t.assignTo ?? '', undefined, { name: 'assignTo' })),
          label('Labels', h('input', { id: `edit-labels-${t.id}`, name: 'labels', value: t.labels.join(', ') })),
          h('div', { class: 'row' }, h('button', { type: 'submit' }, 'Save'), h('button', { type: 'button', onclick: () => ((state.editing = null), render()) }, 'Cancel')),
        ),
      ]
    : [
        h('h3', { class: 'card-title' }, h('a', { href: `#/tasks/${seg(t.id)}`, draggable: 'false' }, breakable(t.title))),
        h(
          'p',
          { class: 'meta' },
          h('span', { class: 'id', title: t.id }, shortId(t.id)),
          t.assignTo ? h('span', { class: 'assignee' }, `@${t.assignTo}`) : null,
          t.leaseExpiresAt ? h('span', { class: 'lease', title: `lease until ${t.leaseExpiresAt}` }, `lease ${timeLeft(t.leaseExpiresAt)}`) : null,
          t.missionId ? h('span', { class: 'mission' }, `▸ ${missionName(t.missionId)}`) : null,
        ),
        t.labels.length ? h('p', { class: 'labels' }, ...t.labels.map((l) => h('span', { class: 'label' }, l))) : null,
        live ? cardRuns.cardRun(live) : null,
        ...asks.map((a) => askPanel(a, { compact: true })),
        canWrite()
          ? h(
              'div',
              { class: 'card-actions' },
              moves.length
                ? select(`move-${t.id}`, [['', 'Move to…'], ...moves.map((m): [string, string] => [m, STATE_LABEL[m]])], '', (v) => v && void move(t, v as TaskState), {
                    'data-keep': 'no',
                    'aria-label': `Move “${t.title}” to`,
                    class: 'move',
                  })
                : null,
              h('button', { type: 'button', class: 'small', onclick: () => ((state.editing = t.id), render()), 'aria-label': `Edit “${t.title}”` }, 'Edit'),
              state.confirmDelete === t.id
                ? h(
                    'button',
                    { type: 'button', class: 'small danger', id: `confirm-delete-${t.id}`, onclick: () => void act(() => del(`/api/v1/tasks/${seg(t.id)}`), 'task deleted') },
                    'Really delete?',
                  )
                : h(
                    'button',
                    {
                      type: 'button',
                      class: 'small',
                      onclick: () => ((state.confirmDelete = t.id), render(), document.getElementById(`confirm-delete-${t.id}`)?.focus()),
                      'aria-label': `Delete “${t.title}”`,
                    },
                    'Delete',
                  ),
            )
          : null,
      ];
  return h(
    'article',
    {
      class: 'card',
      tabindex: 0,
      'data-focus-id': `card-${t.id}`,
      'data-task': t.id,
      'data-status': t.status,
      // A card that asks a permission holds a form: text in it is selected, not dragged.
      draggable: canWrite() && !editing && !asks.length ? 'true' : undefined,
      'aria-label': `${t.title}, ${STATE_LABEL[t.status]}${t.assignTo ? `, assigned to ${t.assignTo}` : ''}${live ? `, run ${live.status}` : ''}${asks.length ? `, asks to use ${asks.map((a) => a.tool).join(', ')}` : ''}`,
      ondragstart: (e: DragEvent) => {
        dragging = t;
        e.dataTransfer?.setData('text/plain', t.id);
        if (e.dataTransfer) e.dataTransfer.effectAllowed = 'move';
        for (const lane of document.querySelectorAll<HTMLElement>('.lane')) lane.classList.toggle('can-drop', moves.includes(lane.dataset.state as TaskState));
      },
      ondragend: () => {
        dragging = null;
        for (const lane of document.querySelectorAll('.lane')) lane.classList.remove('can-drop', 'over');
      },
    },
    ...body,
  );
}

function lane(s: TaskState, tasks: Task[]): HTMLElement {
  const allowed = (): boolean => dragging !== null && LEGAL_MOVES[dragging.status].includes(s);
  return h(
    'section',
    {
      class: 'lane',
      'data-state': s,
      'aria-labelledby': `lane-${s}`,
      ondragover: (e: DragEvent) => {
        // Only a lane the state machine allows accepts the drop.
        if (!allowed()) return;
        e.preventDefault();
        if (e.dataTransfer) e.dataTransfer.dropEffect = 'move';
        (e.currentTarget as HTMLElement).classList.add('over');
      },
      ondragleave: (e: DragEvent) => (e.currentTarget as HTMLElement).classList.remove('over'),
      ondrop: (e: DragEvent) => {
        e.preventDefault();
        const t = dragging ?? state.tasks.find((x) => x.id === e.dataTransfer?.getData('text/plain'));
        if (t && t.status !== s) void move(t, s);
      },
    },
    // One line, the count always whole: a name too long for the lane ends in an ellipsis (whole on hover).
    h('h2', { id: `lane-${s}` }, h('span', { class: 'lane-name', title: STATE_LABEL[s] }, STATE_LABEL[s]), ' ', h('span', { class: 'count' }, String(tasks.length))),
    h('div', { class: 'cards' }, ...tasks.map(card)),
  );
}

function newTaskForm(): HTMLElement {
  return h(
    'details',
    { class: 'new-task', id: 'new-task-panel', open: newTaskOpen || undefined, ontoggle: (e: Event) => (newTaskOpen = (e.target as HTMLDetailsElement).open) },
    h('summary', null, 'New task'),
    h(
      'form',
      {
        onsubmit: (e: Event) => {
          e.preventDefault();
          const form = e.target as HTMLFormElement;
          const f = new FormData(form);
          const body: Record<string, unknown> = { title: String(f.get('title')).trim() };
          const desc = String(f.get('description') ?? '').trim();
          if (desc) body.description = desc;
          if (f.get('assignTo')) body.assignTo = String(f.get('assignTo'));
          if (f.get('missionId')) body.missionId = String(f.get('missionId'));
          const labels = String(f.get('labels') ?? '')
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean);
          if (labels.length) body.labels = labels;
          if (f.get('draft')) body.draft = true;
          void act(() => post('/api/v1/tasks', body), 'task created').then((ok) => {
            if (!ok) return;
            for (const id of ['new-title', 'new-description', 'new-labels', 'new-assign', 'new-mission']) (document.getElementById(id) as HTMLInputElement).value = '';
            (document.getElementById('new-draft') as HTMLInputElement).checked = false;
          });
        },
      },
      label('Title', h('input', { id: 'new-title', name: 'title', required: true, maxlength: 500 })),
      label('Description', h('textarea', { id: 'new-description', name: 'description', rows: 2 })),
      label('Assignee', select('new-assign', [['', '(nobody)'], ...state.agents.map((a): [string, string] => [a.name, a.name])], '', undefined, { name: 'assignTo' })),
      label(
        'Mission',
        select('new-mission', [['', '(none)'], ...state.missions.filter((m) => ['draft', 'active', 'paused'].includes(m.status)).map((m): [string, string] => [m.id, m.name])], '', undefined, {
          name: 'missionId',
        }),
      ),
      label('Labels', h('input', { id: 'new-labels', name: 'labels', placeholder: 'comma, separated' })),
      h('label', { class: 'check' }, h('input', { type: 'checkbox', id: 'new-draft', name: 'draft', value: '1' }), h('span', null, 'Create as draft')),
      h('button', { type: 'submit' }, 'Create task'),
    ),
  );
}
let newTaskOpen = false;

function boardView(): HTMLElement {
  const f = state.filters;
  const labels = [...new Set(state.tasks.flatMap((t) => t.labels))].sort();
  const agents = [...new Set([...state.agents.map((a) => a.name), ...state.tasks.map((t) => t.assignTo).filter((a): a is string => !!a)])].sort();
  const shown = state.tasks.filter((t) => (!f.agent || t.assignTo === f.agent) && (!f.mission || t.missionId === f.mission) && (!f.label || t.labels.includes(f.label)));
  const setFilter = (k: keyof typeof f) => (v: string) => ((f[k] = v), render());
  return h(
    'div',
    { class: 'view board-view' },
    title(
      'Board',
      h(
        'div',
        { class: 'filters', role: 'group', 'aria-label': 'Filters' },
        label('Agent', select('filter-agent', [['', 'all'], ...agents.map((a): [string, string] => [a, a])], f.agent, setFilter('agent'))),
        label('Mission', select('filter-mission', [['', 'all'], ...state.missions.map((m): [string, string] => [m.id, m.name])], f.mission, setFilter('mission'))),
        label('Label', select('filter-label', [['', 'all'], ...labels.map((l): [string, string] => [l, l])], f.label, setFilter('label'))),
      ),
    ),
    pausedProviders(state.queue),
    canWrite() ? newTaskForm() : null,
    h('p', { class: 'hint' }, canWrite() ? 'Drag a card to another lane, or use its “Move to” list. Arrow keys move between cards.' : 'Read-only: this session can look but not change anything.'),
    h(
      'div',
      { class: 'lanes', role: 'region', 'aria-label': 'Task lanes', tabindex: 0, onkeydown: laneKeys },
      ...TASK_STATES.map((s) =>
        lane(
          s,
          shown.filter((t) => t.status === s),
        ),
      ),
    ),
  );
}

/** Arrow keys move the focus between cards: up and down in a lane, left and right across lanes. */
function laneKeys(e: KeyboardEvent): void {
  const cardEl = (e.target as HTMLElement).closest<HTMLElement>('.card');
  if (!cardEl || e.target !== cardEl || !['ArrowUp', 'ArrowDown', 'ArrowLeft', 'ArrowRight'].includes(e.key)) return;
  const lanes = [...document.querySelectorAll<HTMLElement>('.lane')];
  const li = lanes.findIndex((l) => l.contains(cardEl));
  const cards = [...lanes[li]!.querySelectorAll<HTMLElement>('.card')];
  const ci = cards.indexOf(cardEl);
  let target: HTMLElement | undefined;
  if (e.key === 'ArrowUp') target = cards[ci - 1];
  else if (e.key === 'ArrowDown') target = cards[ci + 1];
  else {
    const dir = e.key === 'ArrowLeft' ? -1 : 1;
    for (let i = li + dir; i >= 0 && i < lanes.length && !target; i += dir) {
      const cs = lanes[i]!.querySelectorAll<HTMLElement>('.card');
      target = cs[Math.min(ci, cs.length - 1)];
    }
  }
  if (target) {
    e.preventDefault();
    target.focus();
  }
}

// --- a task's page --------------------------------------------------------------------------

/** A run can start on a pending or assigned task, or a failed one (the API says when no retry is left). */
const RUNNABLE: TaskState[] = ['pending', 'assigned', 'failed'];

async function runNow(t: Task): Promise<void> {
  try {
    const run = await post<Run>(`/api/v1/tasks/${seg(t.id)}/runs`, {});
    state.runNowError = '';
    location.hash = `#/runs/${run.id}`;
  } catch (e) {
    state.runNowError = e instanceof ApiFailure ? e.message : String(e);
    render();
    document.getElementById('run-now-error')?.focus();
  }
}

function taskView(): HTMLElement {
  const t = state.task;
  if (!t || t.id !== state.param) return h('div', { class: 'view' }, h('p', { class: 'muted' }, 'Loading…'));
  const live = state.taskRuns.find(isLive);
  const waiting = state.approvals.filter((a) => a.status === 'pending' && a.taskId === t.id);
  const failure = t.status === 'failed' && t.result !== null && typeof t.result === 'object' ? (t.result as { error?: unknown }).error : undefined;
  return h(
    'div',
    { class: 'view task-view', 'data-task': t.id },
    h('p', null, h('a', { href: '#/board' }, '← Board')),
    title(t.title, h('span', { class: `badge ${t.status}` }, STATE_LABEL[t.status])),
    h(
      'p',
      { class: 'meta' },
      h('span', { title: t.id }, shortId(t.id)),
      t.assignTo ? ` · @${t.assignTo}` : ' · nobody assigned',
      t.missionId ? ` · mission ${missionName(t.missionId)}` : '',
      ` · priority ${t.priority}`,
      t.revisionCount ? ` · revision ${t.revisionCount}` : '',
      ' · updated ',
      time(t.updatedAt),
    ),
    typeof failure === 'string' ? h('p', { class: 'error' }, h('strong', null, 'Failed: '), breakable(failure)) : null,
    // What it waits for a person to decide: its run's permission asks, or its approval gate.
    ...waiting.map((a) => (isAsk(a) ? askPanel(a, { taskTitle: t.title }) : gatePanel(a, t))),
    // A long description starts folded, so the runs stay in sight.
    t.description ? h('details', { open: t.description.split('\n').length <= 12 || undefined }, h('summary', null, 'Description'), h('pre', null, t.description)) : null,
    reviewPanel(t, state.taskRuns),
    h(
      'div',
      { class: 'panel-head runs-head' },
      h('h2', null, 'Runs'),
      live ? h('a', { href: `#/runs/${seg(live.id)}` }, `Follow the ${live.status} run`) : null,
      canWrite() && !live && RUNNABLE.includes(t.status) ? h('button', { type: 'button', id: 'run-now', onclick: () => void runNow(t) }, 'Run now') : null,
    ),
    state.runNowError ? h('p', { class: 'error', id: 'run-now-error', role: 'alert', tabindex: -1 }, state.runNowError) : null,
    runs.runsTable(state.taskRuns),
    reviewChanges(t, state.taskRuns),
  );
}

// --- missions --------------------------------------------------------------------------------

function missionsView(): HTMLElement {
  const controls = (m: Mission): Child[] => {
    if (!canWrite()) return [];
    const b = (verb: string, text: string) =>
      h('button', { type: 'button', class: 'small', onclick: () => void act(() => post(`/api/v1/missions/${seg(m.id)}/${verb}`), `mission ${m.name}: ${verb}`) }, text);
    return [
      m.status === 'draft' ? b('start', 'Start') : null,
      m.status === 'active' ? b('pause', 'Pause') : null,
      m.status === 'paused' ? b('resume', 'Resume') : null,
      ['draft', 'active', 'paused'].includes(m.status) ? b('cancel', 'Cancel') : null,
    ];
  };
  return h(
    'div',
    { class: 'view' },
    title('Missions'),
    state.missions.length === 0 ? h('p', { class: 'muted' }, 'No missions yet (svc missions create, or run a playbook).') : null,
    ...state.missions.map((m) => {
      const done = m.progress.done;
      const total = m.progress.total;
      const tasks = state.tasks.filter((t) => t.missionId === m.id);
      return h(
        'section',
        { class: 'panel mission', 'aria-labelledby': `mission-${m.id}` },
        h('div', { class: 'panel-head' }, h('h2', { id: `mission-${m.id}` }, m.name), h('span', { class: `badge ${m.status}` }, m.status), h('div', { class: 'row' }, ...controls(m))),
        m.goal ? h('p', null, m.goal) : null,
        h(
          'div',
          { class: 'progress-row' },
          h('progress', { max: Math.max(total, 1), value: done, 'aria-label': `${m.name}: ${done} of ${total} tasks done` }),
          h('span', null, `${done}/${total} done`),
        ),
        h(
          'ul',
          { class: 'plain' },
          ...tasks.map((t) =>
            h('li', null, h('span', { class: `badge ${t.status}` }, STATE_LABEL[t.status]), ' ', breakable(t.title), t.assignTo ? h('span', { class: 'muted' }, ` @${t.assignTo}`) : null),
          ),
        ),
      );
    }),
  );
}

// --- approvals -------------------------------------------------------------------------------

function approvalsView(): HTMLElement {
  const sorted = [...state.approvals].sort((a, b) => (a.status === 'pending' ? 0 : 1) - (b.status === 'pending' ? 0 : 1) || b.createdAt.localeCompare(a.createdAt));
  return h(
    'div',
    { class: 'view' },
    title('Approvals'),
    sorted.length === 0 ? h('p', { class: 'muted' }, 'No approval requests.') : null,
    ...sorted.map((a) => {
      const task = state.tasks.find((t) => t.id === a.taskId);
      if (isAsk(a)) return askSection(a, task);
      const fb = `feedback-${a.id}`;
      return h(
        'section',
        { class: `panel approval ${a.status}`, 'aria-labelledby': `approval-${a.id}`, 'data-approval': a.id },
        h('div', { class: 'panel-head' }, h('h2', { id: `approval-${a.id}` }, breakable(a.title)), h('span', { class: `badge ${a.status}` }, a.status), time(a.createdAt)),
        h(
          'p',
          { class: 'meta' },
          'task ',
          h('strong', null, task ? breakable(task.title) : a.taskId ? shortId(a.taskId) : '—'),
          task ? ` (${STATE_LABEL[task.status]})` : '',
          a.requestedBy ? ` · asked by ${a.requestedBy}` : '',
          a.missionId ? ` · mission ${missionName(a.missionId)}` : '',
        ),
        a.reason ? h('p', null, a.reason) : null,
        task?.description ? h('details', null, h('summary', null, 'Task description'), h('pre', null, task.description)) : null,
        a.payload !== null && a.payload !== undefined ? h('details', null, h('summary', null, 'Payload'), h('pre', null, JSON.stringify(a.payload, null, 2))) : null,
        a.status === 'pending' && canWrite()
          ? gateControls(a, fb)
          : a.status !== 'pending'
            ? h('p', { class: 'meta' }, `${a.status} by ${a.resolvedBy ?? '?'} `, time(a.resolvedAt), a.note ? ` · note: ${a.note}` : '', a.feedback ? ` · feedback: ${a.feedback}` : '')
            : null,
      );
    }),
  );
}

/** Approve (the note kept) or reject (the feedback sent back with the task) a task's approval gate. */
function gateControls(a: Approval, fb: string): HTMLElement {
  return h(
    'div',
    { class: 'decide' },
    label('Feedback (sent with a rejection, kept as the note of an approval)', h('textarea', { id: fb, rows: 2 })),
    h(
      'div',
      { class: 'row' },
      h('button', { type: 'button', onclick: () => void act(() => post(`/api/v1/approvals/${seg(a.id)}/approve`, noteOf(fb)), 'approved') }, 'Approve'),
      h(
        'button',
        {
          type: 'button',
          class: 'danger',
          onclick: () => {
            const feedback = (document.getElementById(fb) as HTMLTextAreaElement).value.trim();
            if (!feedback) return toast('Write feedback first: a rejection sends the task back with it.');
            void act(() => post(`/api/v1/approvals/${seg(a.id)}/reject`, { feedback }), 'rejected');
          },
        },
        'Reject',
      ),
    ),
  );
}

/** A task's pending gate on its page: what is asked, and the decision. */
function gatePanel(a: Approval, t: Task): HTMLElement {
  return h(
    'section',
    { class: 'panel approval pending', 'aria-labelledby': `gate-${a.id}`, 'data-approval': a.id },
    h('div', { class: 'panel-head' }, h('h2', { id: `gate-${a.id}` }, 'Waiting for approval: ', breakable(a.title)), time(a.createdAt)),
    h(
      'p',
      { class: 'meta' },
      `asked by ${a.requestedBy}`,
      a.taskFrom === 'review' ? ' · approving it marks the task done' : ' · approving it lets the work go on',
      ` · a rejection sends “${t.title}” back with the feedback`,
    ),
    a.reason ? h('p', null, a.reason) : null,
    canWrite() ? gateControls(a, `gate-feedback-${a.id}`) : null,
  );
}

/** A permission ask on the Approvals view: the prompt while pending, what became of it after. */
function askSection(a: Approval, task: Task | undefined): HTMLElement {
  if (a.status === 'pending') return h('div', { class: 'panel approval pending', 'data-approval': a.id }, askPanel(a, { taskTitle: task?.title }));
  return h(
    'section',
    { class: `panel approval ${a.status}`, 'aria-labelledby': `approval-${a.id}`, 'data-approval': a.id },
    h('div', { class: 'panel-head' }, h('h2', { id: `approval-${a.id}` }, breakable(a.title)), h('span', { class: `badge ${a.status}` }, a.status), time(a.createdAt)),
    h(
      'p',
      { class: 'meta' },
      task ? ['task ', h('a', { href: `#/tasks/${seg(task.id)}` }, breakable(task.title)), ' · '] : null,
      `${askOutcome(a)} `,
      time(a.resolvedAt),
      a.feedback ? ` · why not: ${a.feedback}` : '',
    ),
  );
}

function noteOf(id: string): { note?: string } {
  const v = (document.getElementById(id) as HTMLTextAreaElement | null)?.value.trim();
  return v ? { note: v } : {};
}

// --- agents ----------------------------------------------------------------------------------

function agentsView(): HTMLElement {
  const activity = (name: string): StreamedEvent[] =>
    state.events
      .filter((e) => {
        const d = e.data as Record<string, unknown> | null;
        return d !== null && typeof d === 'object' && (d.agent === name || d.assignTo === name || d.name === name);
      })
      .slice(0, 5);
  const agentRow = (a: Agent): HTMLElement[] => {
    const current = state.tasks.filter((t) => t.assignTo === a.name && ['assigned', 'in_progress', 'review'].includes(t.status));
    const recent = activity(a.name);
    // Besides the events seen while the page is open: the agent's most recently changed tasks.
    const touched = state.tasks
      .filter((t) => t.assignTo === a.name && !current.includes(t))
      .sort((x, y) => y.updatedAt.localeCompare(x.updatedAt))
      .slice(0, 3);
    const editing = state.runtimeEdit?.agent === a.name ? state.runtimeEdit : null;
    const queued = state.queue?.agents.find((q) => q.agent === a.name);
    const row = h(
      'tr',
      { 'data-agent': a.name },
      h('th', { scope: 'row' }, a.name, a.role ? h('div', { class: 'muted' }, a.role) : null),
      h('td', null, a.team ?? ''),
      h(
        'td',
        { class: 'runtime' },
        runtimeSummary(a.runtime),
        canWrite() && !editing
          ? h(
              'div',
              null,
              h(
                'button',
                {
                  type: 'button',
                  class: 'small',
                  id: `rt-edit-${a.name}`,
                  onclick: () => ((state.runtimeEdit = { agent: a.name, error: '' }), render(), document.getElementById(`rt-kind-${a.name}`)?.focus()),
                },
                a.runtime ? 'Edit runtime' : 'Set runtime',
              ),
            )
          : null,
      ),
      h('td', { class: 'runs-now' }, agentRuns(queued, taskTitle)),
      h('td', null, current.length ? current.map((t) => h('div', null, `${t.title} `, h('span', { class: `badge ${t.status}` }, STATE_LABEL[t.status]))) : h('span', { class: 'muted' }, 'none')),
      h(
        'td',
        null,
        current.map((t) => (t.leaseExpiresAt ? h('div', null, timeLeft(t.leaseExpiresAt)) : null)),
      ),
      h(
        'td',
        null,
        recent.map((e) => h('div', null, `${e.name} `, when(e))),
        touched.map((t) => h('div', null, `${t.title}: ${STATE_LABEL[t.status]} `, time(t.updatedAt))),
        recent.length || touched.length ? null : h('span', { class: 'muted' }, '—'),
      ),
    );
    const closed = (saved: boolean) => {
      state.runtimeEdit = null;
      render();
      document.getElementById(`rt-edit-${a.name}`)?.focus();
      if (saved) void refresh();
    };
    return editing ? [row, h('tr', { class: 'runtime-edit' }, h('td', { colspan: 7 }, runtimeForm(a, editing, closed, render)))] : [row];
  };
  return h(
    'div',
    { class: 'view' },
    title('Agents and teams'),
    pausedProviders(state.queue),
    h(
      'div',
      { class: 'table-wrap', role: 'region', 'aria-label': 'Agents', tabindex: 0 },
      h(
        'table',
        null,
        h('caption', { class: 'sr-only' }, 'Agents'),
        h('thead', null, h('tr', null, ...['Agent', 'Team', 'Runtime', 'Runs now', 'Current task', 'Lease', 'Recent activity'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', null, state.agents.length ? state.agents.flatMap(agentRow) : h('tr', null, h('td', { colspan: 7, class: 'muted' }, 'No agents yet (svc agents create).'))),
      ),
    ),
    h('h2', null, 'Teams'),
    state.teams.length
      ? h(
          'ul',
          { class: 'plain' },
          ...state.teams.map((t) => h('li', null, h('strong', null, t.name), ` — ${t.agents.join(', ') || 'no agents'}`, t.description ? h('span', { class: 'muted' }, ` · ${t.description}`) : null)),
        )
      : h('p', { class: 'muted' }, 'No teams.'),
  );
}

// --- events ----------------------------------------------------------------------------------

function eventMatches(e: StreamedEvent): boolean {
  const f = state.eventsFilter.trim();
  if (!f) return true;
  return f
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .some((p) => e.name.startsWith(p.replace(/\*$/, '')));
}

/** When the board heard an event; the history replayed at opening carries no time of its own. */
const when = (e: StreamedEvent): Child => (e.at === null ? h('span', { class: 'muted', title: 'from before this page opened' }, 'earlier') : time(new Date(e.at).toISOString()));

function eventRow(e: StreamedEvent): HTMLElement {
  return h(
    'li',
    { 'data-event': e.id },
    h(
      'details',
      { open: state.openEvents.has(e.id) || undefined, ontoggle: (ev: Event) => ((ev.target as HTMLDetailsElement).open ? state.openEvents.add(e.id) : state.openEvents.delete(e.id)) },
      h('summary', null, h('span', { class: 'event-id' }, `#${e.id}`), ' ', h('code', null, e.name), ' ', when(e)),
      h('pre', null, JSON.stringify(e.data, null, 2)),
    ),
  );
}

function eventsView(): HTMLElement {
  const shown = state.events.filter(eventMatches);
  return h(
    'div',
    { class: 'view' },
    title(
      'Events',
      h(
        'div',
        { class: 'filters' },
        label(
          'Filter',
          h('input', {
            id: 'events-filter',
            placeholder: 'task:, approval:',
            value: state.eventsFilter,
            oninput: (e: Event) => ((state.eventsFilter = (e.target as HTMLInputElement).value), render()),
          }),
        ),
        h(
          'button',
          { type: 'button', id: 'events-pause', 'aria-pressed': String(state.eventsPaused), onclick: () => togglePause() },
          state.eventsPaused ? `Resume (${state.pausedBuffer.length} waiting)` : 'Pause',
        ),
      ),
    ),
    h('p', { class: 'hint' }, `Newest first: the last ${HISTORY} events from before this page opened, then each as it arrives. Expand one to see its JSON.`),
    h('ol', { class: 'events scroll', id: 'events-list', 'aria-label': 'Events', tabindex: 0 }, shown.length ? shown.map(eventRow) : h('li', { class: 'muted' }, 'Waiting for events…')),
  );
}

function togglePause(): void {
  state.eventsPaused = !state.eventsPaused;
  if (!state.eventsPaused) {
    state.events = [...state.pausedBuffer.reverse(), ...state.events].slice(0, 500);
    state.pausedBuffer = [];
  }
  render();
}

// --- webhooks --------------------------------------------------------------------------------

function webhooksView(): HTMLElement {
  return h(
    'div',
    { class: 'view' },
    title('Webhooks'),
    state.webhooks.length === 0 ? h('p', { class: 'muted' }, 'No webhook endpoints (svc webhooks create).') : null,
    ...state.webhooks.map((w) =>
      h(
        'section',
        { class: 'panel', 'aria-labelledby': `webhook-${w.id}`, 'data-webhook': w.id },
        h(
          'div',
          { class: 'panel-head' },
          h('h2', { id: `webhook-${w.id}` }, w.url),
          h('span', { class: `badge ${w.enabled ? 'active' : 'failed'}` }, w.enabled ? 'enabled' : `disabled${w.disabledReason ? `: ${w.disabledReason}` : ''}`),
          canWrite() ? h('button', { type: 'button', class: 'small', onclick: () => void act(() => post(`/v1/webhooks/${seg(w.id)}/test`), 'test event sent') }, 'Send test event') : null,
        ),
        h('p', { class: 'meta' }, `events: ${w.events.join(', ')}`, w.description ? ` · ${w.description}` : ''),
        h(
          'div',
          { class: 'table-wrap', role: 'region', 'aria-label': `Deliveries to ${w.url}`, tabindex: 0 },
          h(
            'table',
            null,
            h('caption', { class: 'sr-only' }, `Recent deliveries to ${w.url}`),
            h('thead', null, h('tr', null, ...['Event', 'Status', 'Attempts', 'Last answer', 'When', ''].map((c) => h('th', { scope: 'col' }, c)))),
            h(
              'tbody',
              null,
              (state.deliveries.get(w.id) ?? []).map((d) =>
                h(
                  'tr',
                  { 'data-delivery': d.id },
                  h('td', null, h('code', null, d.event), d.redeliveryOf ? h('span', { class: 'muted' }, ' (redelivery)') : null),
                  h('td', null, h('span', { class: `badge ${d.status}` }, d.status)),
                  h('td', null, String(d.attempts)),
                  h('td', null, d.lastStatusCode ? String(d.lastStatusCode) : (d.lastError ?? '')),
                  h('td', null, time(d.createdAt)),
                  h(
                    'td',
                    null,
                    canWrite()
                      ? h(
                          'button',
                          {
                            type: 'button',
                            class: 'small',
                            'aria-label': `Redeliver ${d.event} ${shortId(d.id)}`,
                            onclick: () => void act(() => post(`/v1/webhooks/${seg(w.id)}/deliveries/${seg(d.id)}/redeliver`), 'redelivery queued'),
                          },
                          'Redeliver',
                        )
                      : null,
                  ),
                ),
              ),
            ),
          ),
        ),
      ),
    ),
  );
}

// --- databases -------------------------------------------------------------------------------

function databasesView(): HTMLElement {
  const q = state.query;
  const chosen = state.databases.find((d) => d.name === q.db || d.id === q.db) ?? state.databases[0];
  const result = q.result;
  const columns = result ? [...new Set(result.rows.flatMap((r) => Object.keys(r)))] : [];
  return h(
    'div',
    { class: 'view' },
    title('Databases'),
    state.databases.length === 0
      ? h('p', { class: 'muted' }, 'No application databases (svc db create).')
      : h(
          'div',
          { class: 'split' },
          h(
            'ul',
            { class: 'plain db-list', 'aria-label': 'Databases' },
            ...state.databases.map((d) =>
              h('li', null, h('button', { type: 'button', class: 'link', 'aria-current': d === chosen ? 'true' : undefined, onclick: () => ((q.db = d.name), (q.result = null), render()) }, d.name)),
            ),
          ),
          chosen
            ? h(
                'div',
                null,
                h('h2', null, chosen.name, ' ', h('span', { class: 'muted' }, `schema v${chosen.schemaVersion}`)),
                h(
                  'ul',
                  { class: 'plain tables' },
                  ...Object.entries(chosen.schema.tables).map(([name, t]) =>
                    h(
                      'li',
                      null,
                      h('strong', null, name),
                      ': ',
                      Object.entries(t.columns)
                        .map(([c, def]) => `${c} ${def.type}`)
                        .join(', '),
                    ),
                  ),
                ),
                h(
                  'form',
                  {
                    class: 'query',
                    onsubmit: (e: Event) => {
                      e.preventDefault();
                      q.sql = (document.getElementById('query-sql') as HTMLTextAreaElement).value;
                      q.db = chosen.name;
                      post<QueryResult>(`/api/v1/data/${seg(chosen.name)}/query`, { sql: q.sql, mode: 'read', maxRows: 200 })
                        .then((r) => ((q.result = r), (q.error = '')))
                        .catch((err: unknown) => ((q.result = null), (q.error = err instanceof ApiFailure ? err.message : String(err))))
                        .finally(render);
                    },
                  },
                  label('Read-only query', h('textarea', { id: 'query-sql', rows: 3, spellcheck: 'false', value: q.sql })),
                  h('button', { type: 'submit', disabled: !canWrite() || undefined }, 'Run'),
                  !canWrite() ? h('p', { class: 'hint' }, 'A read-only session cannot send queries (every POST changes state to the daemon).') : null,
                ),
                q.error ? h('p', { class: 'error', role: 'alert' }, q.error) : null,
                result
                  ? h(
                      'div',
                      { class: 'table-wrap', role: 'region', 'aria-label': 'Query result', tabindex: 0 },
                      h(
                        'table',
                        { class: 'result' },
                        h('caption', null, `${result.rowCount} row${result.rowCount === 1 ? '' : 's'}${result.truncated ? ' (truncated)' : ''}`),
                        h('thead', null, h('tr', null, ...columns.map((c) => h('th', { scope: 'col' }, c)))),
                        h(
                          'tbody',
                          null,
                          ...result.rows.map((r) =>
                            h('tr', null, ...columns.map((c) => h('td', null, r[c] === null || r[c] === undefined ? '' : typeof r[c] === 'object' ? JSON.stringify(r[c]) : String(r[c])))),
                          ),
                        ),
                      ),
                    )
                  : null,
              )
            : null,
        ),
  );
}

// --- wiring ----------------------------------------------------------------------------------

function signedOut(): void {
  if (state.signedOut) return;
  state.signedOut = true;
  liveEl.textContent = 'signed out';
  main.replaceChildren(
    h(
      'div',
      { class: 'view refusal' },
      h('h1', null, 'Signed out'),
      h('p', null, 'This board session has ended or was never started. Run ', h('code', null, 'svc open'), ' in the project for a new one-time link.'),
    ),
  );
}
whenSignedOut(signedOut);

let timer: ReturnType<typeof setTimeout> | undefined;
const RELOADS: Record<string, View[]> = {
  task: ['board', 'missions', 'approvals', 'agents'],
  mission: ['board', 'missions'],
  approval: ['approvals', 'board', 'missions'],
  agent: ['agents', 'board'],
  team: ['agents'],
  webhook: ['webhooks'],
  data: ['databases'],
  // The cards' live runs and what each agent runs (run:activity is handled apart: it changes lines, not lists).
  run: ['board', 'agents', 'usage'],
  // A provider's pause (the banner, what agents wait for), budgets (what runs wait for, spend).
  runner: ['board', 'agents'],
  budget: ['usage', 'agents', 'board'],
  routine: ['routines'],
};

/**
 * On the board, a task's event reloads that one task (one small request, no wait), so a change
 * shows in a few milliseconds; an answer older than what the board holds is dropped.
 */
async function patchTask(id: string, removed: boolean): Promise<void> {
  let task: Task | null = null;
  if (!removed) {
    try {
      task = await get<Task>(`/api/v1/tasks/${seg(id)}`);
    } catch (e) {
      if (!(e instanceof ApiFailure && e.status === 404)) return void refresh();
    }
  }
  patched.set(id, { task, at: Date.now() });
  applyPatches();
  if (state.view === 'board' && !refreshing) render();
}

/**
 * Tasks read one by one in the last seconds, laid over a list that may have been read before
 * them (a reload racing with a patch), so the board never steps back to an older state.
 */
const patched = new Map<string, { task: Task | null; at: number }>();
function applyPatches(): void {
  const now = Date.now();
  for (const [id, p] of patched) {
    if (now - p.at > 5_000) {
      patched.delete(id);
      continue;
    }
    const i = state.tasks.findIndex((t) => t.id === id);
    if (p.task === null) {
      if (i !== -1) state.tasks.splice(i, 1);
    } else if (i === -1) state.tasks.unshift(p.task);
    else if (p.task.updatedAt > state.tasks[i]!.updatedAt) state.tasks[i] = p.task;
  }
}

/** Spend grows as runs work: the Usage view is read again at most once a second while they do. */
// biome-ignore lint/correctness/noUnusedVariables: read by its own ??=, which schedules one reading at a time
let spendTimer: ReturnType<typeof setTimeout> | undefined;
function spendMoved(): void {
  spendTimer ??= setTimeout(() => {
    spendTimer = undefined;
    if (state.view === 'usage') void refresh();
  }, 1000);
}

/** Events the page opens with: the stream replays these many from before it opened. */
const HISTORY = 200;
let historyTimer: ReturnType<typeof setTimeout> | undefined;

function onEvent(e: StreamedEvent): void {
  if (state.eventsPaused) state.pausedBuffer.push(e);
  else state.events.unshift(e);
  if (state.events.length > 500) state.events.length = 500;
  if (state.pausedBuffer.length > 500) state.pausedBuffer.shift();
  // History changes nothing the views loaded: it is only listed (events, an agent's activity).
  const history = e.at === null;
  const activity = e.name === 'run:activity';
  const group = e.name.split(':')[0]!;
  const views = history || activity ? [] : (RELOADS[group] ?? []);
  const { taskId, runId } = (e.data ?? {}) as { taskId?: unknown; runId?: unknown };
  // A task's page follows its task and runs; a run's page its run (its log takes the activity).
  const open = !history && !activity && ((state.view === 'task' && taskId === state.param && (group === 'task' || group === 'run')) || (state.view === 'run' && runId === state.param));
  if (!history && activity && state.view !== 'events') {
    const data = e.data as Parameters<typeof runs.runActivity>[0];
    if (state.view === 'run') runs.runActivity(data);
    else if (state.view === 'board') cardRuns.activity(data);
    else if (state.view === 'usage') spendMoved();
  } else if (history && state.view === 'agents') {
    clearTimeout(historyTimer);
    historyTimer = setTimeout(render, 20);
  } else if (!history && state.view === 'board' && e.name.startsWith('task:') && typeof taskId === 'string') {
    void patchTask(taskId, e.name === 'task:removed');
  } else if (!history && (e.name.startsWith('approval:') || views.includes(state.view) || open)) {
    clearTimeout(timer);
    timer = setTimeout(() => void refresh(), 20);
  } else if (state.view === 'events') {
    // Only the list changes: no reload, and the rows above it stay where they are.
    if (!state.eventsPaused && eventMatches(e)) {
      const list = document.getElementById('events-list');
      if (list) {
        list.querySelector(':scope > li.muted')?.remove();
        list.prepend(eventRow(e));
        while (list.children.length > 500) list.lastElementChild!.remove();
      }
    } else render();
  }
}

function route(): void {
  const [v, id] = location.hash.replace(/^#\/?/, '').split('?')[0]!.split('/') as [View | 'tasks' | 'runs', string | undefined];
  if ((v === 'tasks' || v === 'runs') && id) {
    state.view = v === 'tasks' ? 'task' : 'run';
    try {
      state.param = decodeURIComponent(id);
    } catch {
      state.param = id;
    }
  } else {
    state.view = VIEWS.includes(v as View) ? (v as View) : 'board';
    state.param = '';
  }
  state.editing = null;
  state.confirmDelete = null;
  state.runNowError = '';
  state.runtimeEdit = null;
  document.title = `${state.view[0]!.toUpperCase()}${state.view.slice(1)}${state.param ? ` ${shortId(state.param)}` : ''} · svc board`;
  void refresh();
}

async function start(): Promise<void> {
  try {
    state.session = await get<BoardSession>('/api/v1/board/session');
  } catch (e) {
    if (!(e instanceof ApiFailure && e.status === 401)) toast(e instanceof ApiFailure ? e.message : String(e));
    signedOut();
    return;
  }
  document.body.classList.toggle('read-only', state.session.readOnly);
  document.getElementById('who')!.textContent = `${state.session.name}${state.session.readOnly ? ' · read-only' : ''}`;
  window.addEventListener('hashchange', route);
  route();
  startLive({
    after: Math.max(0, state.session.lastEventId - HISTORY),
    historyUpTo: state.session.lastEventId,
    onEvent,
    onState: (connected, resumed) => {
      liveEl.textContent = connected ? 'live' : 'reconnecting…';
      liveEl.className = `live ${connected ? 'on' : 'off'}`;
      // Back after a drop or a daemon restart: the replay brings missed events; reload the view too.
      if (connected && resumed) void refresh();
    },
    onSignedOut: signedOut,
  });
  setInterval(() => refreshTimes(main), 10_000);
  // A live run's clock (its card, its page) moves every second.
  setInterval(() => refreshElapsed(main), 1000);
  // Lease countdowns on the board move with the clock.
  setInterval(() => state.view === 'board' && !state.editing && !main.contains(document.activeElement) && render(), 30_000);
}

void start();
