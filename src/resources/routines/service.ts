import type { App } from '../../app.js';
import { lockKey } from '../../db/open.js';
import { AppError, unprocessableField, type ErrorDetail } from '../../kernel/errors.js';
import { nowIso } from '../../lib/time.js';
import { agentExists } from '../agents/service.js';
import { toPage, type Page } from '../common.js';
import { MissionIn } from '../missions/schema.js';
import type { Playbook } from '../playbooks/schema.js';
import { getPlaybook, resolveParams } from '../playbooks/service.js';
import { checkAgainst, placeholders, sampleOf, type Vocabulary } from '../playbooks/template.js';
import { TaskIn } from '../tasks/schema.js';
import { nextAfter, nextTimes } from './cron.js';
import { unknownFields } from './filter.js';
import type { Action, Firing, Routine, RoutineInput, RoutinePatchInput, Schedule, Trigger } from './schema.js';
import * as store from './store.js';
import { eventFields, triggerEvents, vocabulary } from './vars.js';

// Routines: their definitions and the checks made when one is saved. Firing them is fire.ts's.

export type RoutineDetail = Routine & { nextFireTimes: string[] };

const LIST_FIRINGS = 3;
const ITEM_FIRINGS = 10;

const toRoutine = (r: store.RoutineRecord, firings: store.FiringRecord[]): Routine => ({
  name: r.name,
  description: r.description,
  enabled: r.enabled,
  schedule: r.schedule,
  trigger: r.trigger ? { event: r.trigger.event, filter: r.trigger.filter ?? null } : null,
  action: r.action as Record<string, unknown>,
  concurrency: r.concurrency,
  catchUp: r.catchUp,
  maxFiringsPerMinute: r.maxFiringsPerMinute,
  nextFireAt: r.nextFireAt,
  lastFirings: firings.map(store.firingOut),
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
});

const iso = (t: number) => new Date(t).toISOString();

async function detail(app: App, r: store.RoutineRecord): Promise<RoutineDetail> {
  const times = r.enabled && r.schedule ? nextTimes(r.schedule, app.clock.now(), 5).map(iso) : [];
  return { ...toRoutine(r, await store.listFirings(app.db, r.name, undefined, ITEM_FIRINGS)), nextFireTimes: times };
}

export async function listRoutines(app: App): Promise<Routine[]> {
  const firings = new Map<string, store.FiringRecord[]>();
  for (const f of await store.latestFirings(app.db, LIST_FIRINGS)) {
    const list = firings.get(f.routine) ?? [];
    list.push(f);
    firings.set(f.routine, list);
  }
  return (await store.listRoutines(app.db)).map((r) => toRoutine(r, firings.get(r.name) ?? []));
}

export async function requireRecord(app: App, name: string): Promise<store.RoutineRecord> {
  // In a write: what the caller checks and then writes stays as read until it commits (lockKey).
  await lockKey(app.db, 'routine', name);
  const r = await store.getRoutine(app.db, name);
  if (!r) throw new AppError('not_found', `Routine "${name}" not found.`);
  return r;
}

export const getRoutine = async (app: App, name: string): Promise<RoutineDetail> => await detail(app, await requireRecord(app, name));

export async function listFirings(app: App, name: string, q: { limit: number; cursor?: string }): Promise<Page<Firing>> {
  await requireRecord(app, name);
  return toPage((await store.listFirings(app.db, name, q.cursor, q.limit + 1)).map(store.firingOut), q.limit, (f) => f.id);
}

const invalid = (what: string, details: ErrorDetail[]) => new AppError('invalid_request', `Invalid ${what}: ${details.map((d) => `${d.path}: ${d.message}`).join('; ')}`, { details });

/** 422 naming each missing thing (a mission's tasks may name several unknown agents). */
const unprocessable = (details: ErrorDetail[]) =>
  details.length === 1
    ? unprocessableField(details[0]!.path, details[0]!.message)
    : new AppError('unprocessable', `${details.map((d) => `${d.path.replace(/^body\./, '')}: ${d.message}`).join('; ')}.`, { details });

const templated = (v: unknown) => typeof v === 'string' && placeholders(v).length > 0;

/** An assignee named outright must exist (422); a templated one is checked when the routine fires. */
async function missingAgent(app: App, agent: unknown, path: string): Promise<ErrorDetail[]> {
  return typeof agent === 'string' && !templated(agent) && !(await agentExists(app.db, agent)) ? [{ path, message: `agent "${agent}" does not exist` }] : [];
}

async function requirePlaybook(app: App, name: string, at: string): Promise<Playbook> {
  let p: Playbook;
  try {
    p = await getPlaybook(app, name);
  } catch (err) {
    if (err instanceof AppError && err.code === 'not_found') throw unprocessable([{ path: at, message: `playbook "${name}" does not exist` }]);
    throw err;
  }
  if (p.error !== null) throw unprocessable([{ path: at, message: `playbook "${name}" (${p.file}) is invalid: ${p.error}` }]);
  return p;
}

/**
 * The action's checks, in the order a person fixes them: every {{variable}} known (400), the filled
 * body valid apart from templated strings (400), then what it names exists (422).
 */
async function checkAction(app: App, action: Action, words: Vocabulary): Promise<void> {
  const at = 'body.action';
  if ('playbook' in action) {
    const p = await requirePlaybook(app, action.playbook, `${at}.playbook`);
    const unknown = placeholders(action.params).filter((f) => !words.known(f.name));
    if (unknown.length)
      throw invalid(
        'routine',
        unknown.map((f) => ({ path: [`${at}.params`, ...f.path].join('.'), message: `${words.unknownMessage(f.name)} (${words.listed})` })),
      );
    // Templated values are only known when it fires: a sample of the parameter's type stands in.
    const sample = Object.fromEntries(
      Object.entries(action.params).map(([k, v]) => {
        const decl = p.parameters.find((x) => x.name === k);
        return [k, templated(v) && decl ? sampleOf(decl) : v];
      }),
    );
    try {
      resolveParams(p.parameters, sample);
    } catch (err) {
      if (!(err instanceof AppError) || !err.details) throw err;
      throw invalid(
        'routine',
        err.details.map((d) => ({ ...d, path: d.path.replace(/^body\.params/, `${at}.params`) })),
      );
    }
    return;
  }
  if ('task' in action) {
    const problems = checkAgainst(action.task, TaskIn, words, `${at}.task`);
    if (problems.length) throw invalid('routine', problems);
    const missing = await missingAgent(app, action.task.assignTo, `${at}.task.assignTo`);
    if (missing.length) throw unprocessable(missing);
    return;
  }
  const problems = checkAgainst(action.mission, MissionIn, words, `${at}.mission`);
  if (problems.length) throw invalid('routine', problems);
  const tasks = Array.isArray(action.mission.tasks) ? (action.mission.tasks as { assignTo?: unknown }[]) : [];
  const missing: ErrorDetail[] = [];
  for (const [i, t] of tasks.entries()) missing.push(...(await missingAgent(app, t?.assignTo, `${at}.mission.tasks.${i}.assignTo`)));
  if (missing.length) throw unprocessable(missing);
}

function checkTrigger(trigger: Trigger): void {
  const fields = eventFields(triggerEvents(trigger.event, 'body.trigger.event'));
  const unknown = unknownFields(trigger.filter, fields, 'body.trigger.filter');
  if (unknown.length) throw invalid('trigger', unknown);
}

/** Exactly one of schedule or trigger once a patch is applied. */
function checkSource(schedule: Schedule | null, trigger: Trigger | null): void {
  if (schedule && trigger) throw invalid('routine', [{ path: 'body.trigger', message: 'give either schedule or trigger, not both (set the other to null)' }]);
  if (!schedule && !trigger) throw invalid('routine', [{ path: 'body.schedule', message: 'one of schedule ({cron, timezone}) or trigger ({event, filter?}) is required' }]);
}

const nextFire = (app: App, enabled: boolean, schedule: Schedule | null): string | null => {
  if (!enabled || !schedule) return null;
  const t = nextAfter(schedule, app.clock.now());
  return t === null ? null : iso(t);
};

export async function createRoutine(app: App, input: RoutineInput): Promise<RoutineDetail> {
  return await app.events.write(async () => {
    // Two creations of one name, on two daemons: the second finds the first (lockKey).
    await lockKey(app.db, 'routine', input.name);
    if (await store.getRoutine(app.db, input.name)) throw new AppError('conflict', `Routine "${input.name}" already exists.`);
    const schedule = input.schedule ?? null;
    const trigger = input.trigger ?? null;
    checkSource(schedule, trigger);
    if (trigger) checkTrigger(trigger);
    await checkAction(app, input.action, vocabulary(trigger, 'body.trigger.event'));
    const now = nowIso(app.clock);
    const record: store.RoutineRecord = {
      name: input.name,
      description: input.description ?? null,
      enabled: input.enabled,
      schedule,
      trigger,
      action: input.action,
      concurrency: input.concurrency,
      catchUp: input.catchUp,
      maxFiringsPerMinute: input.maxFiringsPerMinute,
      nextFireAt: nextFire(app, input.enabled, schedule),
      lastEventId: 0,
      rateWindowStart: null,
      rateCount: 0,
      createdAt: now,
      updatedAt: now,
    };
    await store.insertRoutine(app.db, record);
    // A trigger hears events from its own creation on, on every daemon alike.
    const e = app.events.emit('routine:created', { routine: input.name });
    // Its id once written.
    await app.events.flush();
    await store.advanceEvent(app.db, input.name, e.id);
    return await detail(app, (await store.getRoutine(app.db, input.name))!);
  });
}

/** A missing field is kept; description, schedule or trigger null clears it. The result is checked whole. */
export async function updateRoutine(app: App, name: string, patch: RoutinePatchInput): Promise<RoutineDetail> {
  return await app.events.write(async () => {
    const cur = await requireRecord(app, name);
    const fields = Object.keys(patch).filter((k) => patch[k as keyof RoutinePatchInput] !== undefined);
    if (!fields.length) return await detail(app, cur);
    const next: store.RoutineRecord = {
      ...cur,
      description: patch.description === undefined ? cur.description : patch.description,
      enabled: patch.enabled ?? cur.enabled,
      schedule: patch.schedule === undefined ? cur.schedule : patch.schedule,
      trigger: patch.trigger === undefined ? cur.trigger : patch.trigger,
      action: patch.action ?? cur.action,
      concurrency: patch.concurrency ?? cur.concurrency,
      catchUp: patch.catchUp ?? cur.catchUp,
      maxFiringsPerMinute: patch.maxFiringsPerMinute ?? cur.maxFiringsPerMinute,
      updatedAt: nowIso(app.clock),
    };
    checkSource(next.schedule, next.trigger);
    if (next.trigger && (patch.trigger !== undefined || patch.action !== undefined)) checkTrigger(next.trigger);
    if (patch.action !== undefined || patch.trigger !== undefined || patch.schedule !== undefined) await checkAction(app, next.action, vocabulary(next.trigger, 'body.trigger.event'));
    // A schedule changed or switched on starts from now: no catch-up for the time it was off.
    const rescheduled = patch.schedule !== undefined || (patch.enabled !== undefined && patch.enabled !== cur.enabled);
    if (rescheduled) next.nextFireAt = nextFire(app, next.enabled, next.schedule);
    await store.updateRoutine(app.db, next);
    const e = app.events.emit('routine:updated', { routine: name, fields });
    await app.events.flush();
    // A trigger changed or switched on hears events from now on, not those it missed while off.
    if (patch.trigger !== undefined || (patch.enabled === true && !cur.enabled)) await store.advanceEvent(app.db, name, e.id);
    return await detail(app, (await store.getRoutine(app.db, name))!);
  });
}

export async function removeRoutine(app: App, name: string): Promise<void> {
  await app.events.write(async () => {
    await requireRecord(app, name);
    await store.deleteRoutine(app.db, name);
    app.events.emit('routine:removed', { routine: name });
  });
}

/** Forgets what old firings created (their chains), created before `olderThan`; for the pruner. */
export const pruneRoutineWork = async (app: App, olderThan: string, limit: number): Promise<number> => await store.pruneWork(app.db, olderThan, limit);
