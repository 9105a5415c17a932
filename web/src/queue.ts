// What the runner does for each agent (GET /api/v1/runs/queue): idle, running (which tasks) or
// waiting (why: its maxConcurrency, a spent budget, its provider paused until a time); and the
// providers a usage limit pauses, with how many runs wait for them and a way to resume them.

import { get, post, seg } from './api.js';
import { elapsed, h, shortId, type Child } from './dom.js';
import { page } from './page.js';
import { plural } from './run-words.js';
import type { Queue, QueueAgent } from './types.js';
import { clockTime, waitText } from './waits.js';

export const loadQueue = (): Promise<Queue> => get<Queue>('/api/v1/runs/queue');

type QueuedRun = QueueAgent['running'][number];

/**
 * A paused run of the provider, whose resumption lifts the provider's pause (POST
 * /runs/{id}/resume: the API resumes runs, not providers); null when none is paused (its runs
 * only wait in the queue), and then the pause ends at its time.
 */
function pausedRunOf(q: Queue, provider: string): QueuedRun | null {
  const waiting = q.agents.filter((a) => a.provider === provider).flatMap((a) => a.waiting);
  return waiting.find((w) => w.status === 'paused' && w.waitingFor?.kind === 'provider') ?? waiting.find((w) => w.status === 'paused') ?? null;
}

const resume = (runId: string, done: string): Promise<boolean> => page.act(() => post(`/api/v1/runs/${seg(runId)}/resume`), done);

/** "anthropic paused until 15:00, 3 runs waiting", per paused provider, with Resume now. */
export function pausedProviders(q: Queue | null): HTMLElement | null {
  if (!q?.providers.length) return null;
  return h(
    'section',
    { class: 'notices', 'aria-label': 'Paused providers' },
    ...q.providers.map((p) => {
      const run = pausedRunOf(q, p.provider);
      return h(
        'p',
        { class: 'notice', 'data-provider': p.provider },
        h('strong', null, `${p.provider} paused until ${clockTime(p.pausedUntil)}`),
        `, ${plural(p.runsWaiting, 'run')} waiting`,
        h('span', { class: 'muted' }, ' (a usage limit)'),
        run && page.canWrite()
          ? h(
              'button',
              {
                type: 'button',
                class: 'small',
                title: `Say the limit is gone: run ${shortId(run.runId)} resumes now and ${p.provider}'s pause ends with it (if the limit still holds, its runs pause again)`,
                onclick: () => void resume(run.runId, `${p.provider} resumed: its runs start again`),
              },
              `Resume ${p.provider} now`,
            )
          : null,
      );
    }),
  );
}

/** An agent's runs now, for its row on the Agents view: idle, running (which tasks), or waiting (why). */
export function agentRuns(a: QueueAgent | undefined, taskTitle: (id: string) => string): Child {
  if (!a) return h('span', { class: 'muted' }, 'no runtime');
  const task = (r: QueuedRun, what: Child): HTMLElement => h('li', { 'data-run': r.runId }, h('a', { href: `#/tasks/${seg(r.taskId)}` }, taskTitle(r.taskId)), ' ', what);
  const why = waitText(a.heldBy ?? a.waiting.find((w) => w.waitingFor)?.waitingFor);
  return h(
    'div',
    { class: 'agent-runs', 'data-state': a.state },
    h('span', { class: `badge state-${a.state}` }, a.state),
    // A hold on an idle or running agent is said too: its next runs will wait for it.
    why ? h('span', { class: 'why' }, ` ${a.state === 'running' && a.waiting.length ? `${plural(a.waiting.length, 'more run')} waiting: ` : ''}${why}`) : null,
    a.running.length || a.waiting.length
      ? h(
          'ul',
          { class: 'plain' },
          ...a.running.map((r) => task(r, r.startedAt ? h('span', { class: 'muted' }, '· ', elapsed(r.startedAt)) : h('span', { class: 'muted' }, `· ${r.status}`))),
          ...a.waiting.map((r) =>
            task(
              r,
              h(
                'span',
                { class: 'muted' },
                `· ${r.status}`,
                r.status === 'paused' && page.canWrite()
                  ? [' ', h('button', { type: 'button', class: 'small', onclick: () => void resume(r.runId, `run ${shortId(r.runId)} resumed`) }, 'Resume')]
                  : null,
              ),
            ),
          ),
        )
      : null,
  );
}
