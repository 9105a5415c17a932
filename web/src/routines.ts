// Routines on the board: each with when it fires (schedule or trigger), its next firing, its last
// firings, an enabled switch and "Fire now". The words are the CLI's (src/resources/routines/words.ts).

import { actionText, whenText } from '../../src/resources/routines/words.js';
import { ApiFailure, get, patch, post, seg } from './api.js';
import { h, shortId, time, type Child } from './dom.js';
import type { Firing, Routine } from './types.js';

/** What the view needs of the page (main.ts). */
export interface Board {
  canWrite(): boolean;
  act(fn: () => Promise<unknown>, done?: string): Promise<boolean>;
}
let board: Board;
export const useBoard = (b: Board): void => void (board = b);

let routines: Routine[] = [];

export async function loadRoutines(): Promise<void> {
  routines = await get<Routine[]>('/api/v1/routines');
}

const BADGE: Record<Firing['status'], string> = { fired: 'done', skipped: 'pending', failed: 'failed', queued: 'assigned' };

function firingLine(f: Firing): HTMLElement {
  const why = f.reason === 'event' ? `on ${f.eventName}` : f.reason === 'manual' ? 'by hand' : f.reason === 'catch_up' ? 'catch-up' : 'on schedule';
  const made = [f.created.missionId ? `mission ${shortId(f.created.missionId)}` : null, ...f.created.taskIds.map((t) => `task ${shortId(t)}`)].filter(Boolean).join(', ');
  return h(
    'li',
    { 'data-firing': f.id },
    h('span', { class: `badge ${BADGE[f.status]}` }, f.status),
    ' ',
    time(f.firedAt),
    ` ${why}`,
    made ? h('span', { class: 'muted' }, ` · ${made}`) : null,
    f.detail ? h('span', { class: 'muted' }, ` · ${f.detail}`) : null,
  );
}

function controls(r: Routine): Child[] {
  if (!board.canWrite()) return [];
  const id = `enabled-${r.name}`;
  return [
    h(
      'label',
      { class: 'check', for: id },
      h('input', {
        type: 'checkbox',
        id,
        checked: r.enabled,
        onchange: (e: Event) => {
          const enabled = (e.target as HTMLInputElement).checked;
          void board.act(() => patch(`/api/v1/routines/${seg(r.name)}`, { enabled }), `${r.name}: ${enabled ? 'enabled' : 'disabled'}`);
        },
      }),
      ' Enabled',
    ),
    h(
      'button',
      {
        type: 'button',
        class: 'small',
        onclick: () =>
          void board.act(async () => {
            const f = await post<Firing>(`/api/v1/routines/${seg(r.name)}/fire`, {});
            if (f.status !== 'fired') throw new ApiFailure(201, f.status, `${r.name}: ${f.status}${f.detail ? `: ${f.detail}` : ''}`);
          }, `${r.name} fired`),
      },
      'Fire now',
    ),
  ];
}

export function routinesView(): HTMLElement {
  return h(
    'div',
    { class: 'view' },
    h('div', { class: 'view-head' }, h('h1', null, 'Routines')),
    routines.length === 0 ? h('p', { class: 'muted' }, 'No routines yet (svc routines add).') : null,
    ...routines.map((r) =>
      h(
        'section',
        { class: 'panel', 'aria-labelledby': `routine-${r.name}`, 'data-routine': r.name },
        h(
          'div',
          { class: 'panel-head' },
          h('h2', { id: `routine-${r.name}` }, r.name),
          h('span', { class: `badge ${r.enabled ? 'active' : 'cancelled'}` }, r.enabled ? 'enabled' : 'disabled'),
          h('div', { class: 'row' }, ...controls(r)),
        ),
        r.description ? h('p', null, r.description) : null,
        h('p', { class: 'meta' }, h('code', null, whenText(r)), ` → ${actionText(r.action)}`, r.nextFireAt ? [' · next ', time(r.nextFireAt)] : null),
        r.lastFirings.length ? h('ul', { class: 'plain', 'aria-label': `Last firings of ${r.name}` }, ...r.lastFirings.map(firingLine)) : h('p', { class: 'muted' }, 'Not fired yet.'),
      ),
    ),
  );
}
