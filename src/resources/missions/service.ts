import type { App } from '../../app.js';
import { lockKey } from '../../db/open.js';
import { toPage, type Page } from '../common.js';
import { AppError, unprocessableField, type ErrorDetail } from '../../kernel/errors.js';
import { uuidv7 } from '../../lib/ids.js';
import { nowIso } from '../../lib/time.js';
import { agentExists } from '../agents/service.js';
import type { Task, TaskInput } from '../tasks/schema.js';
import type { RemovalCause, TaskHooks, TaskTransition } from '../tasks/hooks.js';
import { createTask, detachTaskFromMission, findMissionTaskByTitle, listMissionTasks, removeTask, transitionTask } from '../tasks/service.js';
import { TASK_STATES, type TaskState } from '../tasks/state.js';
import { planTasks } from './plan.js';
import type { Mission, MissionDetail, MissionInput, MissionListFilter, MissionRecord, MissionState, Progress } from './schema.js';
import * as store from './store.js';

/** The moves a client asks for; completed and failed only ever follow from task transitions. */
export const MISSION_ACTIONS = {
  start: { from: ['draft'], to: 'active', event: 'mission:started' },
  pause: { from: ['active'], to: 'paused', event: 'mission:paused' },
  resume: { from: ['paused'], to: 'active', event: 'mission:resumed' },
  cancel: { from: ['draft', 'active', 'paused'], to: 'cancelled', event: 'mission:cancelled' },
} as const satisfies Record<string, { from: MissionState[]; to: MissionState; event: string }>;
export type MissionAction = keyof typeof MISSION_ACTIONS;

/** A mission whose tasks can still move: task outcomes decide its end only in these states. */
const RUNNING: MissionState[] = ['active', 'paused'];

/** Final states: nothing moves a mission out of them, and no task joins it. */
const FINISHED: MissionState[] = ['completed', 'failed', 'cancelled'];

function progressOf(tasks: Task[]): Progress {
  const p = Object.fromEntries([['total', tasks.length], ...TASK_STATES.map((s) => [s, 0])]) as Progress;
  for (const t of tasks) p[t.status]++;
  return p;
}

function toMission(m: MissionRecord, tasks: Task[]): Mission {
  return {
    id: m.id,
    name: m.name,
    goal: m.goal,
    status: m.status,
    taskIds: tasks.map((t) => t.id),
    deadline: m.deadline,
    progress: progressOf(tasks),
    createdAt: m.createdAt,
    updatedAt: m.updatedAt,
  };
}

async function requireRecord(app: App, id: string): Promise<MissionRecord> {
  // In a write: what the caller checks and then writes stays as read until it commits (lockKey).
  await lockKey(app.db, 'mission', id);
  const m = await store.getMission(app.db, id);
  if (!m) throw new AppError('not_found', `Mission "${id}" not found.`);
  return m;
}

export async function getMission(app: App, id: string): Promise<MissionDetail> {
  const m = await requireRecord(app, id);
  const tasks = await listMissionTasks(app, id);
  return { ...toMission(m, tasks), tasks };
}

export async function listMissions(app: App, q: MissionListFilter): Promise<Page<Mission>> {
  const page = toPage(await store.listMissions(app.db, { status: q.status, before: q.cursor, limit: q.limit + 1 }), q.limit, (m) => m.id);
  const items: Mission[] = [];
  for (const m of page.items) items.push(toMission(m, await listMissionTasks(app, m.id)));
  return { items, next: page.next };
}

/**
 * Creates the mission and all its tasks (draft, dependencies resolved from titles) in one
 * transaction: any failure leaves nothing behind. `at` is where the body sits, for error paths.
 */
export async function createMission(app: App, input: MissionInput, at = 'body'): Promise<MissionDetail> {
  return await app.events.write(async () => {
    const plan = planTasks(input.tasks, `${at}.tasks`);
    const unknown: ErrorDetail[] = [];
    for (const [i, t] of input.tasks.entries()) {
      if (t.assignTo && !(await agentExists(app.db, t.assignTo))) unknown.push({ path: `${at}.tasks.${i}.assignTo`, message: `agent "${t.assignTo}" does not exist` });
    }
    if (unknown.length) throw new AppError('unprocessable', `Mission tasks: ${unknown.map((u) => u.message).join('; ')}.`, { details: unknown });

    const id = uuidv7();
    const now = nowIso(app.clock);
    await store.insertMission(app.db, {
      id,
      name: input.name,
      goal: input.goal ?? null,
      status: 'draft',
      deadline: input.deadline === undefined ? null : new Date(input.deadline).toISOString(),
      createdAt: now,
      updatedAt: now,
    });
    const taskIds: string[] = [];
    for (const i of plan.order) {
      const { dependsOn: _titles, ...fields } = input.tasks[i]!;
      const task = await createTask(app, { ...fields, missionId: id, dependsOn: plan.deps[i]!.map((j) => taskIds[j]!), draft: true });
      taskIds[i] = task.id;
    }
    const mission = await getMission(app, id);
    app.events.emit('mission:created', { missionId: id, name: input.name, taskIds: mission.taskIds });
    return mission;
  });
}

/** start, pause, resume or cancel; any other move is 409 invalid_transition naming both states. */
export async function moveMission(app: App, id: string, action: MissionAction): Promise<Mission> {
  return await app.events.write(async () => {
    const m = await requireRecord(app, id);
    const move = MISSION_ACTIONS[action];
    if (!(move.from as readonly MissionState[]).includes(m.status)) {
      const allowed = (Object.keys(MISSION_ACTIONS) as MissionAction[]).filter((a) => (MISSION_ACTIONS[a].from as readonly MissionState[]).includes(m.status));
      const hint = allowed.length ? `from ${m.status} a mission may: ${allowed.join(', ')}` : `${m.status} is final`;
      throw new AppError('invalid_transition', `Mission ${id} cannot ${action}: a mission cannot move from ${m.status} to ${move.to}; ${hint}.`);
    }
    if (!(await store.setStatus(app.db, id, m.status, move.to, nowIso(app.clock)))) {
      throw new AppError('conflict', `Mission ${id} changed state while moving from ${m.status} to ${move.to}; read it and try again.`);
    }
    app.events.emit(move.event, { missionId: id, name: m.name });
    if (action === 'start') {
      for (const t of await listMissionTasks(app, id)) if (t.status === 'draft') await transitionTask(app, t.id, 'pending', { reason: 'mission started' });
      // A mission with nothing to do is done as soon as it starts; left active, nothing would ever end it.
      await completeIfAllDone(app, { ...m, status: move.to }, true);
    }
    return toMission(await requireRecord(app, id), await listMissionTasks(app, id));
  });
}

/**
 * Deletes a mission. With cascade its tasks are removed (newest first, so dependents go before
 * what they depend on); without, they stay on the board with missionId cleared.
 */
export async function deleteMission(app: App, id: string, cascade: boolean): Promise<void> {
  await app.events.write(async () => {
    const m = await requireRecord(app, id);
    const tasks = await listMissionTasks(app, id);
    if (cascade) for (const t of [...tasks].reverse()) await removeTask(app, t.id, 'mission');
    else for (const t of tasks) await detachTaskFromMission(app, t.id);
    await store.deleteMission(app.db, id);
    app.events.emit('mission:deleted', { missionId: id, name: m.name, cascade });
  });
}

/**
 * Completes a running mission whose tasks are all done. Whether a mission with no tasks counts as
 * done is the caller's call: yes when it starts empty, no when its last task is removed.
 */
async function completeIfAllDone(app: App, m: MissionRecord, emptyIsDone: boolean): Promise<void> {
  if (!RUNNING.includes(m.status)) return;
  const tasks = await listMissionTasks(app, m.id);
  if ((!tasks.length && !emptyIsDone) || !tasks.every((t) => t.status === 'done')) return;
  await store.setStatus(app.db, m.id, m.status, 'completed', nowIso(app.clock));
  app.events.emit('mission:completed', { missionId: m.id, name: m.name });
}

/** Completion and failure follow from task transitions, inside the transition's transaction. */
async function onTransition(app: App, { task, to }: TaskTransition): Promise<void> {
  if (!task.missionId || (to !== 'done' && to !== 'failed')) return;
  const m = await store.getMission(app.db, task.missionId);
  if (!m || !RUNNING.includes(m.status)) return;
  if (to === 'done') await completeIfAllDone(app, m, false);
  else if (task.retries >= task.maxRetries) {
    await store.setStatus(app.db, m.id, m.status, 'failed', nowIso(app.clock));
    app.events.emit('mission:failed', { missionId: m.id, name: m.name, taskId: task.id });
  }
}

/**
 * Removing a mission's last open task may leave only done tasks: the mission is then complete.
 * Removing its last task of all leaves it as it is (nothing was achieved; tasks may still join, or
 * it can be cancelled). Tasks removed with their mission complete nothing: the mission is going.
 */
async function onRemoval(app: App, task: Task, cause: RemovalCause): Promise<void> {
  if (!task.missionId || cause === 'mission') return;
  const m = await store.getMission(app.db, task.missionId);
  if (m) await completeIfAllDone(app, m, false);
}

/**
 * A task joining a mission through POST /tasks follows the same rules as the mission's own tasks:
 * the mission must exist and not be over, titles are unique within it, and a draft mission's tasks
 * wait in draft until it starts.
 */
async function checkNewTask(app: App, input: TaskInput, status: TaskState): Promise<TaskState | void> {
  if (input.missionId === undefined) return;
  const m = await store.getMission(app.db, input.missionId);
  if (!m) {
    throw unprocessableField('body.missionId', `mission "${input.missionId}" does not exist`);
  }
  if (FINISHED.includes(m.status)) {
    throw new AppError('conflict', `Mission ${m.id} is ${m.status}: a ${m.status} mission takes no new tasks.`);
  }
  const same = await findMissionTaskByTitle(app, m.id, input.title);
  if (same) {
    throw new AppError('unprocessable', `title: mission ${m.id} already has a task titled "${input.title}" (${same}); titles are unique within a mission.`, {
      details: [{ path: 'body.title', message: `duplicate title "${input.title}" in mission ${m.id}; titles must be unique within a mission` }],
    });
  }
  if (m.status === 'draft') return 'draft';
  return status;
}

/**
 * A mission's tasks wait for it: they leave draft only once it has started, and they may start
 * work (enter in_progress) only while it is active, not while it is draft, paused or over.
 */
async function guardTransition(app: App, task: Task, to: TaskState): Promise<void> {
  if (!task.missionId) return;
  const m = await store.getMission(app.db, task.missionId);
  if (!m) return;
  if (task.status === 'draft' && m.status === 'draft') {
    throw new AppError('conflict', `Task ${task.id} cannot move from draft to ${to}: its mission ${m.id} is still draft; start the mission to release its tasks.`);
  }
  if (to === 'in_progress' && m.status !== 'active') {
    const hint = m.status === 'paused' ? '; resume the mission first' : '';
    throw new AppError('conflict', `Task ${task.id} cannot move from ${task.status} to in_progress: its mission ${m.id} is ${m.status}${hint}.`);
  }
}

/** Makes a daemon's tasks follow their missions' rules; the missions' wire() calls it once per daemon. */
export function wireMissions(hooks: TaskHooks): void {
  hooks.onTransition(onTransition);
  hooks.beforeTransition(guardTransition);
  hooks.onRemoved(onRemoval);
  hooks.beforeCreate(checkNewTask);
}
