import { z } from 'zod';
import { IdCursor, PageLimit, Timestamp } from '../common.js';
import { TaskIn, TaskOut } from '../tasks/schema.js';
import { TASK_STATES } from '../tasks/state.js';
import { MISSION_STATES } from './values.js';

export { MISSION_STATES };

export type MissionState = (typeof MISSION_STATES)[number];
export const MissionStatus = z.enum(MISSION_STATES);

/** A task of a mission body: a task's creation fields, with dependencies named by title. */
export const MissionTaskIn = TaskIn.pick({ title: true, description: true, assignTo: true, priority: true, labels: true, maxRetries: true, sideEffects: true }).extend({
  dependsOn: z.array(z.string().trim().min(1).max(500)).max(100).optional().describe('Titles of other tasks of this mission that must be done first.'),
});

export const MissionIn = z.strictObject({
  name: z.string().trim().min(1).max(200),
  goal: z.string().max(10_000).optional(),
  deadline: z.iso.datetime({ offset: true }).optional().describe('ISO 8601; stored and returned in UTC. Informational: nothing happens when it passes.'),
  tasks: z.array(MissionTaskIn).max(500).default([]).describe('Created as draft with the mission, in one transaction. Titles unique within the mission.'),
});
export type MissionInput = z.output<typeof MissionIn>;

const counts = Object.fromEntries(TASK_STATES.map((s) => [s, z.int()])) as Record<(typeof TASK_STATES)[number], z.ZodInt>;
export const Progress = z.object({ total: z.int(), ...counts }).describe('How many of the mission tasks are in each state.');
export type Progress = z.output<typeof Progress>;

export const MissionOut = z
  .object({
    id: z.string(),
    name: z.string(),
    goal: z.string().nullable(),
    status: MissionStatus,
    taskIds: z.array(z.string()).describe('Oldest first.'),
    deadline: Timestamp.nullable(),
    progress: Progress,
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Mission' });
export type Mission = z.output<typeof MissionOut>;

export const MissionDetailOut = MissionOut.extend({ tasks: z.array(TaskOut).describe('The mission tasks, oldest first.') }).meta({ id: 'MissionDetail' });
export type MissionDetail = z.output<typeof MissionDetailOut>;

export const MissionIdParam = z.strictObject({ missionId: z.string().min(1).max(128) });

export const MissionListQuery = z.strictObject({
  status: MissionStatus.optional(),
  limit: PageLimit,
  cursor: IdCursor,
});
export type MissionListFilter = z.output<typeof MissionListQuery>;

export const DeleteQuery = z.strictObject({
  cascade: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true')
    .describe('true: remove the mission tasks too. false: keep them, detached from the mission (missionId becomes null).'),
});

/** The stored mission, before tasks and progress are joined in. */
export interface MissionRecord {
  id: string;
  name: string;
  goal: string | null;
  status: MissionState;
  deadline: string | null;
  createdAt: string;
  updatedAt: string;
}
