import { z } from 'zod';
import { route } from '../../app.js';
import { pageAnswer, Removed } from '../common.js';
import { fireByHand } from './fire.js';
import { FireIn, FiringListQuery, FiringOut, RoutineDetailOut, RoutineIn, RoutineNameParam, RoutineOut, RoutinePatch } from './schema.js';
import * as routines from './service.js';
import { KEEP_FIRINGS } from './values.js';

const tag = 'Routines';
const base = '/api/v1/routines';
const item = `${base}/{name}`;

export const routineRoutes = [
  route({
    method: 'GET',
    path: base,
    operationId: 'listRoutines',
    summary: 'List routines by name, each with its next schedule time and newest firings',
    tag,
    response: z.array(RoutineOut),
    handler: async ({ app }) => await routines.listRoutines(app),
  }),
  route({
    method: 'POST',
    path: base,
    operationId: 'createRoutine',
    errors: ['conflict', 'unprocessable'],
    summary: 'Create a routine: an action that fires on a cron schedule or on events',
    description:
      'Exactly one of schedule or trigger (else 400 naming it). An invalid cron expression or an unknown time zone is 400 naming the field and the position; a {{variable}} the routine cannot have, or a filter field no heard event has, is 400. ' +
      'An unknown playbook or agent is 422; a name taken is 409. The answer carries the next five schedule times.',
    tag,
    status: 201,
    body: RoutineIn,
    response: RoutineDetailOut,
    handler: async ({ app, body }) => await routines.createRoutine(app, body),
  }),
  route({
    method: 'GET',
    path: item,
    operationId: 'getRoutine',
    summary: 'Show a routine: its next schedule times and its newest firings',
    tag,
    params: RoutineNameParam,
    response: RoutineDetailOut,
    handler: async ({ app, params }) => await routines.getRoutine(app, params.name),
  }),
  route({
    method: 'PATCH',
    path: item,
    operationId: 'updateRoutine',
    errors: ['unprocessable'],
    summary: 'Change a routine (a missing field is kept; description, schedule or trigger null clears it)',
    description: 'Checked whole, as a new one. A schedule changed or switched on counts from now; a trigger changed or switched on hears events from now.',
    tag,
    params: RoutineNameParam,
    body: RoutinePatch,
    response: RoutineDetailOut,
    handler: async ({ app, params, body }) => await routines.updateRoutine(app, params.name, body),
  }),
  route({
    method: 'DELETE',
    path: item,
    operationId: 'deleteRoutine',
    summary: 'Delete a routine and its firing history (what it created stays)',
    tag,
    params: RoutineNameParam,
    response: Removed,
    handler: async ({ app, params }) => {
      await routines.removeRoutine(app, params.name);
      return { removed: true as const };
    },
  }),
  route({
    method: 'POST',
    path: `${item}/fire`,
    operationId: 'fireRoutine',
    summary: 'Fire a routine now, by hand (enabled or not)',
    description:
      "The firing is answered as recorded: fired with what it created, failed with why, or skipped or queued when its concurrency holds it back (the previous firing's work still open). A trigger routine fired by hand has no event: {{event.*}} fill as empty.",
    tag,
    status: 201,
    params: RoutineNameParam,
    body: FireIn,
    response: FiringOut,
    handler: async ({ app, params }) => await fireByHand(app, params.name),
  }),
  route({
    method: 'GET',
    path: `${item}/firings`,
    operationId: 'listRoutineFirings',
    summary: "A routine's firings, newest first: when, why, what each created, or why it was skipped",
    description: `The newest ${KEEP_FIRINGS} are kept per routine (and every queued one). When more follow, the X-Next-Cursor header holds the cursor of the next page.`,
    tag,
    params: RoutineNameParam,
    query: FiringListQuery,
    response: z.array(FiringOut),
    handler: async ({ app, params, query, setHeader }) => pageAnswer(setHeader, await routines.listFirings(app, params.name, query)),
  }),
];
