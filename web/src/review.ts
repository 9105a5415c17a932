// The review of a task's work on its page: a task in `review` shows the diff of the run that put
// it there, with Approve (the task is done) and Send back with feedback (a revision run, the
// feedback in its prompt), and how many times it was sent back. A task that a rejection failed
// (sent back more than tasks.maxRevisions times) says so.
//
// Approve is the transition review → done (one request; expectedFrom refuses it if someone moved
// the task meanwhile). Sending back has no single request: only a rejected approval counts a
// revision, appends the feedback and queues a `revision` run, so the board requests an approval
// for the task (review → awaiting_approval) and rejects it with the feedback at once. Should the
// second request fail, the task waits in awaiting_approval with that request pending, which its
// page and the Approvals view offer to decide.

import { ApiFailure, get, post, seg } from './api.js';
import { DiffPanel } from './diff-view.js';
import { breakable, h, label, shortId, type Child } from './dom.js';
import { page } from './page.js';
import { badge, plural } from './run-words.js';
import type { Approval, Run, Task } from './types.js';

const diff = new DiffPanel();
const form = { task: '', open: false, error: '' };

interface ReviewResult {
  runId?: unknown;
  error?: unknown;
  approvalId?: unknown;
}
const resultOf = (t: Task): ReviewResult => (t.result !== null && typeof t.result === 'object' ? (t.result as ReviewResult) : {});

/** The run whose work is reviewed: the one the task's result names, else its latest that committed something. */
export function reviewedRun(t: Task, runs: readonly Run[]): Run | null {
  const id = resultOf(t).runId;
  return runs.find((r) => r.id === id) ?? runs.find((r) => r.status === 'succeeded' && r.headCommit) ?? null;
}

/** A failed task that a rejection failed: sent back once too often. */
export const revisionsSpent = (t: Task): boolean => t.status === 'failed' && typeof resultOf(t).approvalId === 'string';

export async function loadReview(t: Task, runs: readonly Run[]): Promise<void> {
  if (form.task !== t.id) Object.assign(form, { task: t.id, open: false, error: '' });
  const r = t.status === 'review' ? reviewedRun(t, runs) : null;
  if (r) await diff.load(r);
}

async function sendBack(t: Task, feedback: string): Promise<void> {
  form.error = '';
  try {
    const gate = await post<Approval>('/api/v1/approvals', {
      taskId: t.id,
      requestedBy: page.who() || 'board',
      title: `Review of “${t.title.slice(0, 200)}”`,
      reason: 'Sent back from the board with feedback.',
    });
    await post(`/api/v1/approvals/${seg(gate.id)}/reject`, { feedback });
    const after = await get<Task>(`/api/v1/tasks/${seg(t.id)}`);
    form.open = false;
    page.toast(
      after.status === 'failed' ? 'sent back once too often: the task failed (tasks.maxRevisions)' : `sent back with your feedback: revision ${after.revisionCount}`,
      after.status === 'failed' ? 'error' : 'info',
    );
  } catch (e) {
    form.error = e instanceof ApiFailure ? e.message : String(e);
  }
  await page.refresh();
  // The refusal is said in the review panel; if the task left review meanwhile (the panel is gone), in a message.
  if (form.error) {
    const el = document.getElementById('review-error');
    if (el) el.focus();
    else page.toast(form.error);
  }
}

function revisions(t: Task): Child {
  // The failure itself (the API's words, with the feedback) is said at the top of the page.
  if (revisionsSpent(t))
    return h(
      'p',
      { class: 'error', id: 'revisions-spent' },
      h('strong', null, 'tasks.maxRevisions reached: '),
      `sent back ${plural(t.revisionCount, 'time')} already, so the last rejection failed the task.`,
    );
  return h(
    'p',
    { class: 'meta', id: 'revisions' },
    !t.revisionCount ? 'First review: never sent back.' : `Sent back ${plural(t.revisionCount, 'time')}${t.status === 'review' ? `: this is the work of revision ${t.revisionCount}` : ''}.`,
  );
}

function controls(t: Task): Child {
  if (!page.canWrite()) return null;
  if (!form.open) {
    return h(
      'div',
      { class: 'row' },
      h(
        'button',
        {
          type: 'button',
          id: 'review-approve',
          onclick: () => void page.act(() => post(`/api/v1/tasks/${seg(t.id)}/transition`, { to: 'done', expectedFrom: 'review', reason: 'approved on the board' }), 'approved: the task is done'),
        },
        'Approve: done',
      ),
      h('button', { type: 'button', class: 'small', id: 'review-send-back', onclick: () => ((form.open = true), page.render(), document.getElementById('review-feedback')?.focus()) }, 'Send back…'),
    );
  }
  return h(
    'form',
    {
      class: 'decide',
      onsubmit: (e: Event) => {
        e.preventDefault();
        const feedback = (document.getElementById('review-feedback') as HTMLTextAreaElement).value.trim();
        if (feedback) void sendBack(t, feedback);
      },
    },
    label('Feedback (the agent is given it in the revision run)', h('textarea', { id: 'review-feedback', rows: 3, required: true, maxlength: 10_000 })),
    h(
      'div',
      { class: 'row' },
      h('button', { type: 'submit', class: 'danger' }, 'Send back with feedback'),
      h('button', { type: 'button', class: 'small', onclick: () => ((form.open = false), page.render(), document.getElementById('review-send-back')?.focus()) }, 'Keep in review'),
    ),
  );
}

/** The review section of a task's page: the verdict; null for a task that is neither in review, sent back nor failed by a rejection. */
export function reviewPanel(t: Task, runs: readonly Run[]): Child {
  if (t.status !== 'review') return t.revisionCount || revisionsSpent(t) ? h('section', { class: 'panel review', 'aria-label': 'Review' }, revisions(t)) : null;
  const r = reviewedRun(t, runs);
  return h(
    'section',
    { class: 'panel review', 'aria-labelledby': 'review-head' },
    h(
      'div',
      { class: 'panel-head' },
      h('h2', { id: 'review-head' }, 'Review'),
      r ? h('span', { class: 'meta' }, 'the work of run ', h('a', { href: `#/runs/${seg(r.id)}` }, shortId(r.id)), ' ', badge(r)) : null,
    ),
    r?.summary ? h('p', { class: 'summary' }, h('strong', null, `${r.agent}: `), breakable(r.summary)) : null,
    revisions(t),
    controls(t),
    form.error ? h('p', { class: 'error', id: 'review-error', role: 'alert', tabindex: -1 }, form.error) : null,
  );
}

/** The work under review, at the end of the task's page (it may be long): the run's diff. */
export function reviewChanges(t: Task, runs: readonly Run[]): Child {
  if (t.status !== 'review') return null;
  const r = reviewedRun(t, runs);
  return h(
    'section',
    { class: 'review-changes', 'aria-labelledby': 'changes-head' },
    h('h2', { id: 'changes-head' }, 'Changes under review'),
    r ? diff.view(r) : h('p', { class: 'muted' }, 'No run of this task committed anything to review.'),
  );
}
