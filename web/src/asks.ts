// A run's CLI asking leave to use a tool: an approval of kind `permission` (docs/approvals.md). The
// board shows who asks, on which task, the tool and its input as the API gives it (secrets
// redacted), and the three answers: approve, approve always (the tool joins the agent's
// allowedTools in the same decision) and reject with a note, which the agent reads as the reason.
// The same prompt is on the run's card, its page, its task's page and the Approvals view.

import { formatLogItem } from '../../src/resources/runs/log-lines.js';
import { post, seg } from './api.js';
import { h, label, shortId, time, type Child } from './dom.js';
import { page } from './page.js';
import type { Approval } from './types.js';

export const isAsk = (a: Approval): boolean => a.kind === 'permission';

/** The pending asks of a run, oldest first (the order the CLI asked in). */
export const asksOf = (approvals: readonly Approval[], runId: string): Approval[] =>
  approvals.filter((a) => isAsk(a) && a.status === 'pending' && a.runId === runId).sort((x, y) => x.createdAt.localeCompare(y.createdAt));

const inputOf = (a: Approval): unknown => (a.payload !== null && typeof a.payload === 'object' ? (a.payload as { input?: unknown }).input : undefined);

/** The ask in one line, as the run's log would show the call: `▸ Bash  npm test`. */
export const askGist = (a: Approval, width = 200): string => formatLogItem({ seq: 0, at: '', kind: 'tool_call', tool: a.tool ?? '?', input: inputOf(a) }, width);

/** Asks whose reject form is open; asks whose input the person opened or closed (a redraw keeps it so). */
const rejecting = new Set<string>();
const inputOpen = new Map<string, boolean>();

function decide(a: Approval, verb: 'approve' | 'reject', body: Record<string, unknown>, done: string): void {
  void page.act(() => post(`/api/v1/approvals/${seg(a.id)}/${verb}`, body), done).then((ok) => ok && rejecting.delete(a.id));
}

function controls(a: Approval): Child {
  if (!page.canWrite()) return null;
  const tool = a.tool ?? 'the tool';
  const agent = a.agent ?? a.requestedBy;
  const note = `ask-note-${a.id}`;
  if (rejecting.has(a.id)) {
    return h(
      'form',
      {
        class: 'ask-reject',
        onsubmit: (e: Event) => {
          e.preventDefault();
          const feedback = (document.getElementById(note) as HTMLTextAreaElement).value.trim();
          if (feedback) decide(a, 'reject', { feedback }, `refused ${tool} to ${agent}`);
          else page.toast(`Say why not first: ${agent} reads it as the reason.`);
        },
      },
      label(`Why not (${agent} reads it)`, h('textarea', { id: note, rows: 2, required: true, maxlength: 10_000 })),
      h(
        'div',
        { class: 'row' },
        h('button', { type: 'submit', class: 'danger' }, 'Reject'),
        h('button', { type: 'button', class: 'small', onclick: () => (rejecting.delete(a.id), page.render(), document.getElementById(`ask-reject-${a.id}`)?.focus()) }, 'Back'),
      ),
    );
  }
  return h(
    'div',
    { class: 'row' },
    h('button', { type: 'button', onclick: () => decide(a, 'approve', {}, `${agent} may use ${tool} this once`) }, 'Approve'),
    h(
      'button',
      {
        type: 'button',
        class: 'small',
        title: `Approve, and let ${agent} use ${tool} from now on without asking`,
        onclick: () => decide(a, 'approve', { alwaysAllow: true }, `${agent} may always use ${tool}`),
      },
      'Approve always',
    ),
    h('button', { type: 'button', class: 'small', id: `ask-reject-${a.id}`, onclick: () => (rejecting.add(a.id), page.render(), document.getElementById(note)?.focus()) }, 'Reject…'),
  );
}

/**
 * The prompt. `compact` (a card): the tool and its input on one line, the rest folded; else who
 * asks, for which task and run, the input in full and when the request decides by itself.
 */
export function askPanel(a: Approval, o: { compact?: boolean; taskTitle?: string | null } = {}): HTMLElement {
  const agent = a.agent ?? a.requestedBy;
  const tool = a.tool ?? '?';
  const input = inputOf(a);
  const json = typeof input === 'string' ? input : JSON.stringify(input ?? null, null, 2);
  const expiry = a.expiresAt ? h('span', null, `${a.timeoutAction === 'approve' ? 'approved' : 'refused'} by itself `, time(a.expiresAt)) : null;
  const gist = askGist(a, o.compact ? 60 : 200);
  return h(
    'section',
    { class: `ask${o.compact ? ' compact' : ''}`, 'data-ask': a.id, 'aria-label': `${agent} asks to use ${tool}` },
    o.compact ? h('p', { class: 'ask-head' }, h('strong', null, 'Asks to use '), h('code', null, tool)) : h('h2', { class: 'ask-head' }, `${agent} asks to use `, h('code', null, tool)),
    h('p', { class: 'ask-gist', title: gist }, gist),
    o.compact
      ? null
      : h(
          'p',
          { class: 'meta' },
          a.taskId ? ['task ', h('a', { href: `#/tasks/${seg(a.taskId)}` }, o.taskTitle ?? shortId(a.taskId))] : null,
          a.runId ? [' · run ', h('a', { href: `#/runs/${seg(a.runId)}` }, shortId(a.runId))] : null,
          ' · asked ',
          time(a.createdAt),
          expiry ? [' · ', expiry] : null,
        ),
    a.reason && !o.compact ? h('p', null, a.reason) : null,
    h(
      'details',
      { open: (inputOpen.get(a.id) ?? (!o.compact && json.split('\n').length <= 16)) || undefined, ontoggle: (e: Event) => inputOpen.set(a.id, (e.target as HTMLDetailsElement).open) },
      h('summary', null, 'Input'),
      h('pre', null, json),
    ),
    o.compact && expiry ? h('p', { class: 'meta' }, expiry) : null,
    controls(a),
  );
}

/** What became of an ask, for the Approvals view's decided ones. */
export function askOutcome(a: Approval): string {
  if (a.status === 'pending') return '';
  const always = a.alwaysAllowed ? `; ${a.agent ?? 'the agent'} may always use ${a.alwaysAllowed}` : '';
  return `${a.status} by ${a.resolvedBy ?? '?'}${always}`;
}
