import { z } from 'zod';
import { IdCursor, PageLimit, Timestamp } from '../common.js';
import { ParamValue, PlaybookName } from '../playbooks/schema.js';
import { Priority } from '../tasks/schema.js';
import { scheduleProblems } from './cron.js';
import { DataFilter } from './filter.js';
import { CATCH_UP, CONCURRENCY, DEFAULT_MAX_FIRINGS_PER_MINUTE, FIRING_REASONS, FIRING_STATUSES, MAX_FIRINGS_PER_MINUTE } from './values.js';

export { CATCH_UP, CONCURRENCY, FIRING_REASONS, FIRING_STATUSES };

export const RoutineName = PlaybookName;

/** A template string: the action's strings may hold {{firing.time}}, {{event.data.taskId}}… */
const text = (max: number) => z.string().max(max);

export const ScheduleIn = z
  .strictObject({
    cron: z.string().min(1).max(200).describe('Five fields (minute hour day-of-month month day-of-week) with ranges, steps, lists and names, or @yearly, @monthly, @weekly, @daily, @hourly.'),
    timezone: z.string().min(1).max(64).default('UTC').describe('IANA time zone the expression is read in (default UTC): "Europe/Berlin".'),
  })
  .superRefine((s, ctx) => {
    // Named field and position: "minute field "61" at position 1: 61 is out of range 0-59".
    for (const p of scheduleProblems(s, '')) ctx.addIssue({ code: 'custom', path: p.path.split('.').filter(Boolean), message: p.message });
  })
  .meta({ id: 'RoutineSchedule' });
export type Schedule = z.output<typeof ScheduleIn>;

export const TriggerIn = z
  .strictObject({
    event: z.string().trim().min(1).max(500).describe('Event names or prefixes, as an SSE filter: "task:transition", "run:", "task:*", "mission:completed,mission:failed".'),
    filter: DataFilter.optional(),
  })
  .meta({ id: 'RoutineTrigger' });
export type Trigger = z.output<typeof TriggerIn>;

const PlaybookAction = z.strictObject({
  playbook: PlaybookName.describe('The playbook to run (it must exist, else 422).'),
  params: z
    .record(z.string(), z.union([ParamValue, text(10_000)]))
    .default({})
    .describe('Parameter values; strings may be templates ("{{event.data.taskId}}").'),
  start: z.boolean().default(true).describe('Start the mission at once (default true), so that agents take its tasks.'),
});
const TaskAction = z.strictObject({
  task: z.strictObject({
    title: text(500),
    description: text(100_000).optional(),
    assignTo: text(200).optional().describe('An existing agent (else 422), or a template.'),
    labels: z.array(text(200)).max(50).optional(),
    priority: z.union([Priority, text(200)]).optional(),
  }),
});
const MissionAction = z.strictObject({
  mission: z.record(z.string(), z.unknown()).describe('A mission body (as POST /api/v1/missions takes) whose strings may be templates.'),
  start: z.boolean().default(true).describe('Start the mission at once (default true).'),
});

const ACTIONS = { playbook: PlaybookAction, task: TaskAction, mission: MissionAction } as const;

/** A refused action in words that name the field: which kind was meant, and what is wrong in it. */
function actionError(input: unknown): string {
  if (!input || typeof input !== 'object' || Array.isArray(input)) return 'must be an object: {playbook, params?}, {task: {title, …}} or {mission: {name, …}}';
  const kinds = (Object.keys(ACTIONS) as (keyof typeof ACTIONS)[]).filter((k) => Object.hasOwn(input, k));
  if (kinds.length !== 1) return kinds.length ? `give one of playbook, task or mission, not ${kinds.join(' and ')}` : 'say what it creates: playbook, task or mission';
  const r = ACTIONS[kinds[0]!].safeParse(input);
  return r.success ? 'Invalid input' : r.error.issues.map((i) => `${[...i.path].join('.') || kinds[0]}: ${i.message}`).join('; ');
}

export const ActionIn = z
  .union([PlaybookAction, TaskAction, MissionAction], { error: (iss) => actionError(iss.input) })
  .describe('What a firing creates, in the transaction that records it: a playbook run, a task or a mission.')
  .meta({ id: 'RoutineAction' });
export type Action = z.output<typeof ActionIn>;

export const Concurrency = z.enum(CONCURRENCY);
export const CatchUp = z.enum(CATCH_UP);

const maxFirings = z.int().min(1).max(MAX_FIRINGS_PER_MINUTE);
const description = z.string().max(10_000);

/** Exactly one of schedule or trigger, each absence and each excess named. */
function oneSource(v: { schedule?: unknown; trigger?: unknown }, ctx: z.RefinementCtx): void {
  if (v.schedule != null && v.trigger != null) ctx.addIssue({ code: 'custom', path: ['trigger'], message: 'give either schedule or trigger, not both' });
  if (v.schedule == null && v.trigger == null) ctx.addIssue({ code: 'custom', path: ['schedule'], message: 'one of schedule ({cron, timezone}) or trigger ({event, filter?}) is required' });
}

export const RoutineIn = z
  .strictObject({
    name: RoutineName,
    description: description.optional(),
    enabled: z.boolean().default(true),
    schedule: ScheduleIn.optional(),
    trigger: TriggerIn.optional(),
    action: ActionIn,
    concurrency: Concurrency.default('skip').describe("While the previous firing's work is open: skip (default) does not fire, queue fires when it closes, allow fires anyway."),
    catchUp: CatchUp.default('none').describe('Firings missed while no daemon ran: none (default) records them skipped, one fires once for all of them.'),
    maxFiringsPerMinute: maxFirings.default(DEFAULT_MAX_FIRINGS_PER_MINUTE).describe(`A trigger storm's bound (default ${DEFAULT_MAX_FIRINGS_PER_MINUTE}); past it, routine:skipped.`),
  })
  .superRefine(oneSource);
export type RoutineInput = z.output<typeof RoutineIn>;

export const RoutinePatch = z.strictObject({
  description: description.nullable().optional(),
  enabled: z.boolean().optional(),
  schedule: ScheduleIn.nullable().optional().describe('null removes it (then give a trigger).'),
  trigger: TriggerIn.nullable().optional().describe('null removes it (then give a schedule).'),
  action: ActionIn.optional(),
  concurrency: Concurrency.optional(),
  catchUp: CatchUp.optional(),
  maxFiringsPerMinute: maxFirings.optional(),
});
export type RoutinePatchInput = z.output<typeof RoutinePatch>;

export const FiringOut = z
  .object({
    id: z.string(),
    routine: z.string(),
    reason: z.enum(FIRING_REASONS).describe('schedule, catch_up (for firings missed while no daemon ran), event, manual.'),
    status: z.enum(FIRING_STATUSES).describe("fired: work created. skipped: nothing created (see detail). failed: the action was refused (see detail). queued: waits for the previous firing's work."),
    scheduledAt: Timestamp.nullable().describe('The schedule time it stands for (the latest, when it stands for several missed).'),
    firedAt: Timestamp.describe('When it was recorded.'),
    eventId: z.int().nullable(),
    eventName: z.string().nullable(),
    missed: z.int().describe('How many schedule times it stands for beyond its own (missed while no daemon ran).'),
    detail: z.string().nullable().describe('Why it was skipped, or what refused the action.'),
    created: z.object({ taskIds: z.array(z.string()), missionId: z.string().nullable() }).describe('What the action created.'),
    chain: z.array(z.string()).describe('The routines whose firings led to this one, this one last.'),
  })
  .meta({ id: 'RoutineFiring' });
export type Firing = z.output<typeof FiringOut>;

export const RoutineOut = z
  .object({
    name: z.string(),
    description: z.string().nullable(),
    enabled: z.boolean(),
    schedule: z.object({ cron: z.string(), timezone: z.string() }).nullable(),
    trigger: z.object({ event: z.string(), filter: z.record(z.string(), z.unknown()).nullable() }).nullable(),
    action: z.record(z.string(), z.unknown()),
    concurrency: Concurrency,
    catchUp: CatchUp,
    maxFiringsPerMinute: z.int(),
    nextFireAt: Timestamp.nullable().describe('The next schedule time; null for a trigger or a disabled routine.'),
    lastFirings: z.array(FiringOut).describe('The newest firings, newest first (3 in a list, 10 for one routine).'),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Routine' });
export type Routine = z.output<typeof RoutineOut>;

export const RoutineDetailOut = RoutineOut.extend({ nextFireTimes: z.array(Timestamp).describe('The next five schedule times (empty for a trigger or a disabled routine).') }).meta({
  id: 'RoutineDetail',
});

export const RoutineNameParam = z.strictObject({ name: z.string().min(1).max(128) });

export const FiringListQuery = z.strictObject({ limit: PageLimit, cursor: IdCursor });

export const FireIn = z.strictObject({}).describe('Nothing to send: the routine fires now, whatever its schedule or trigger, even disabled.');
