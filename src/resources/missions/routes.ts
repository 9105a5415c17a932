import { route } from '../../app.js';
import { z } from 'zod';
import { pageAnswer, Removed } from '../common.js';
import { DeleteQuery, MissionDetailOut, MissionIdParam, MissionIn, MissionListQuery, MissionOut } from './schema.js';
import * as missions from './service.js';

const tag = 'Missions';
const base = '/api/v1/missions';
const item = `${base}/{missionId}`;

const SUMMARIES: Record<missions.MissionAction, string> = {
  start: 'Start a draft mission: it becomes active and its draft tasks pending (a mission with no tasks completes at once)',
  pause: 'Pause an active mission (its tasks cannot enter in_progress until it resumes)',
  resume: 'Resume a paused mission',
  cancel: 'Cancel a draft, active or paused mission (its tasks stay as they are and cannot enter in_progress)',
};

const actionRoute = (action: missions.MissionAction) =>
  route({
    method: 'POST',
    path: `${item}/${action}`,
    operationId: `${action}Mission`,
    errors: ['conflict', 'invalid_transition'],
    summary: SUMMARIES[action],
    description: `Legal from: ${missions.MISSION_ACTIONS[action].from.join(', ')}. Any other state → 409 invalid_transition naming both states.`,
    tag,
    params: MissionIdParam,
    response: MissionOut,
    handler: async ({ app, params }) => await missions.moveMission(app, params.missionId, action),
  });

export const missionRoutes = [
  route({
    method: 'GET',
    path: base,
    operationId: 'listMissions',
    summary: 'List missions, newest first, with task progress counts (filter by status; cursor)',
    description: 'When more missions follow, the X-Next-Cursor header holds the cursor of the next page.',
    tag,
    query: MissionListQuery,
    response: z.array(MissionOut),
    handler: async ({ app, query, setHeader }) => {
      return pageAnswer(setHeader, await missions.listMissions(app, query));
    },
  }),
  route({
    method: 'POST',
    path: base,
    operationId: 'createMission',
    errors: ['conflict', 'unprocessable'],
    summary: 'Create a mission and its tasks (draft) in one transaction',
    description: 'dependsOn names other tasks of the mission by title. Duplicate titles, unknown titles, unknown assignees and dependency cycles → 422 unprocessable (a cycle is named: "a → b → a").',
    tag,
    status: 201,
    body: MissionIn,
    response: MissionDetailOut,
    handler: async ({ app, body }) => await missions.createMission(app, body),
  }),
  route({
    method: 'GET',
    path: item,
    operationId: 'getMission',
    summary: 'Show a mission with its tasks and progress counts per task state',
    tag,
    params: MissionIdParam,
    response: MissionDetailOut,
    handler: async ({ app, params }) => await missions.getMission(app, params.missionId),
  }),
  actionRoute('start'),
  actionRoute('pause'),
  actionRoute('resume'),
  actionRoute('cancel'),
  route({
    method: 'DELETE',
    path: item,
    operationId: 'deleteMission',
    summary: 'Delete a mission (?cascade=true removes its tasks; otherwise they stay, detached)',
    tag,
    params: MissionIdParam,
    query: DeleteQuery,
    response: Removed,
    handler: async ({ app, params, query }) => {
      await missions.deleteMission(app, params.missionId, query.cascade);
      return { removed: true as const };
    },
  }),
];
