import type { Routine } from './schema.js';

// A routine in a few words, the same in the CLI's tables and on the board (which bundles this
// file: it imports types only).

/** When it fires: "0 9 * * MON Europe/Paris", "on task:transition {"to":"failed"}". */
export function whenText(r: Pick<Routine, 'schedule' | 'trigger'>): string {
  if (r.schedule) return `${r.schedule.cron}${r.schedule.timezone === 'UTC' ? '' : ` ${r.schedule.timezone}`}`;
  if (!r.trigger) return '-';
  return `on ${r.trigger.event}${r.trigger.filter ? ` ${JSON.stringify(r.trigger.filter)}` : ''}`;
}

/** What it does: "playbook update-deps", "task "Triage …" for lead", "mission "…"". */
export function actionText(a: Record<string, unknown>): string {
  if (typeof a.playbook === 'string') return `playbook ${a.playbook}`;
  const task = a.task as { title?: string; assignTo?: string } | undefined;
  if (task) return `task "${task.title}"${task.assignTo ? ` for ${task.assignTo}` : ''}`;
  const mission = a.mission as { name?: string } | undefined;
  return `mission "${mission?.name ?? '?'}"`;
}
