// An agent's runtime on the Agents view: what svc runs for its tasks, and a form that sets it
// (kind, command, permission mode, auto-run). Arguments, environment and runner labels are set
// with `svc agents edit` or the API; the form keeps them while the kind stays the same, as the CLI does.

import { ApiFailure, patch, seg } from './api.js';
import { h, label, select, type Child } from './dom.js';
import type { Agent, Runtime } from './types.js';

// agents/runtime.ts holds the lists, with zod, which the board does not bundle: a Record keeps these whole.
const KINDS: Record<Runtime['kind'], string> = { claude: 'Claude Code', codex: 'Codex CLI', command: 'A command' };
const MODES: Record<NonNullable<Runtime['permissionMode']>, string> = { ask: 'ask (prompts become approvals)', acceptEdits: 'acceptEdits', bypass: 'bypass (anything runs)' };

/** What the runtime cell says: "command · /usr/bin/x · acceptEdits · by hand". */
export function runtimeSummary(rt: Agent['runtime']): Child {
  if (!rt) return h('span', { class: 'muted' }, 'none');
  const n = (k: number, what: string) => (k ? `${k} ${what}${k === 1 ? '' : 's'}` : '');
  const extra = [n(rt.args?.length ?? 0, 'argument'), n(Object.keys(rt.env ?? {}).length, 'env variable'), rt.runners?.length ? `runners ${rt.runners.join(', ')}` : ''].filter(Boolean);
  return [
    h('strong', null, rt.kind),
    rt.command ? [' · ', h('code', null, rt.command)] : null,
    ` · ${rt.permissionMode ?? 'acceptEdits'}`,
    rt.autoRun === false ? ' · by hand' : ' · auto-run',
    extra.length ? h('span', { class: 'muted' }, ` · ${extra.join(', ')}`) : null,
  ];
}

export interface RuntimeEdit {
  agent: string;
  error: string;
}

/** The form, in a row under the agent's. A refusal (422: a program not found, and where it looked) is shown in it. */
export function runtimeForm(a: Agent, edit: RuntimeEdit, done: (saved: boolean) => void, redraw: () => void): HTMLElement {
  const rt = a.runtime;
  const id = (f: string) => `rt-${f}-${a.name}`;
  const save = (body: { runtime: Record<string, unknown> | null }) =>
    patch(`/api/v1/agents/${seg(a.name)}`, body).then(
      () => done(true),
      (e: unknown) => ((edit.error = e instanceof ApiFailure ? e.message : String(e)), redraw(), document.getElementById(id('error'))?.focus()),
    );
  return h(
    'form',
    {
      class: 'runtime-form',
      'aria-label': `Runtime of ${a.name}`,
      onsubmit: (e: Event) => {
        e.preventDefault();
        const f = new FormData(e.target as HTMLFormElement);
        const kind = String(f.get('kind')) as Runtime['kind'];
        // As `svc agents edit`: the same kind keeps what the form does not show; another starts afresh.
        const next: Record<string, unknown> = rt && rt.kind === kind ? { ...rt, kind } : { kind };
        const command = String(f.get('command') ?? '').trim();
        const mode = String(f.get('permissionMode') ?? '');
        for (const [k, v] of [
          ['command', command],
          ['permissionMode', mode],
        ] as const) {
          if (v) next[k] = v;
          else delete next[k];
        }
        if (f.get('autoRun')) delete next.autoRun;
        else next.autoRun = false;
        void save({ runtime: next });
      },
    },
    label('Kind', select(id('kind'), Object.entries(KINDS), rt?.kind ?? 'claude', undefined, { name: 'kind' })),
    label('Command', h('input', { id: id('command'), name: 'command', value: rt?.command ?? '', placeholder: 'default: claude or codex on PATH', maxlength: 1024 })),
    label('Permission mode', select(id('mode'), [['', 'default (acceptEdits)'], ...Object.entries(MODES)], rt?.permissionMode ?? '', undefined, { name: 'permissionMode' })),
    h(
      'label',
      { class: 'check' },
      h('input', { type: 'checkbox', id: id('auto'), name: 'autoRun', value: '1', checked: rt?.autoRun !== false || undefined }),
      h('span', null, 'Run tasks as soon as they are ready'),
    ),
    h(
      'div',
      { class: 'row' },
      h('button', { type: 'submit' }, 'Save runtime'),
      rt ? h('button', { type: 'button', class: 'small', onclick: () => void save({ runtime: null }) }, 'Remove runtime') : null,
      h('button', { type: 'button', class: 'small', onclick: () => done(false) }, 'Cancel'),
    ),
    edit.error ? h('p', { class: 'error', id: id('error'), role: 'alert', tabindex: -1 }, edit.error) : null,
    h('p', { class: 'hint' }, 'Arguments, environment and runner labels: svc agents edit (--runtime-arg, --env, --runner-label) or the API. They are kept while the kind stays the same.'),
  );
}
