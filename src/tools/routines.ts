import { z } from 'zod';
import { fireByHand } from '../resources/routines/fire.js';
import { FiringOut, RoutineOut } from '../resources/routines/schema.js';
import * as routines from '../resources/routines/service.js';
import { defineTool } from './define.js';

// Routine tools: what starts by itself (schedules, event triggers), and firing one now.

const when = (r: { schedule: { cron: string; timezone: string } | null; trigger: { event: string } | null }) =>
  r.schedule ? `${r.schedule.cron} (${r.schedule.timezone})` : r.trigger ? `on ${r.trigger.event}` : '-';

export const routineTools = [
  defineTool({
    name: 'routine_list',
    title: 'List routines',
    description:
      'List routines: work that starts by itself on a cron schedule or when an event happens (a playbook run, a task, a mission). Each has its schedule or trigger, whether it is enabled, its next schedule time (nextFireAt) and its newest firings with what they created or why they were skipped.',
    input: z.strictObject({}),
    output: z.object({ routines: z.array(RoutineOut) }),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true },
    handler: async ({ app }) => ({ routines: await routines.listRoutines(app) }),
    summary: (o) =>
      o.routines.length
        ? `${o.routines.length} routine(s):\n${o.routines.map((r) => `${r.name} ${r.enabled ? '' : '(disabled) '}${when(r)}${r.nextFireAt ? `, next ${r.nextFireAt}` : ''}${r.lastFirings[0] ? `, last ${r.lastFirings[0].status} at ${r.lastFirings[0].firedAt}` : ''}`).join('\n')}`
        : 'No routines.',
  }),
  defineTool({
    name: 'routine_fire',
    title: 'Fire a routine now',
    description:
      "Fire a routine now, by hand, whatever its schedule or trigger (even disabled): its action runs at once and the firing is returned as recorded: fired with the ids of the tasks or mission it created, failed with why, or skipped/queued when the previous firing's work is still open (its concurrency).",
    input: z.strictObject({ name: z.string().min(1).max(128).describe('The routine name (see routine_list).') }),
    output: z.object({ firing: FiringOut }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    handler: async ({ app }, { name }) => ({ firing: await fireByHand(app, name) }),
    summary: (o) =>
      `${o.firing.routine}: ${o.firing.status}${o.firing.created.missionId ? `, mission ${o.firing.created.missionId}` : ''}${o.firing.created.taskIds.length ? `, task(s) ${o.firing.created.taskIds.join(', ')}` : ''}${o.firing.detail ? `: ${o.firing.detail}` : ''}`,
  }),
];
