import { z } from 'zod';
import { route } from '../../app.js';
import { Removed } from '../common.js';
import { PlaybookIn, PlaybookNameParam, PlaybookOut, PlaybookPatch, RunIn, RunOut } from './schema.js';
import * as playbooks from './service.js';

const tag = 'Playbooks';
const base = '/api/v1/playbooks';
const item = `${base}/{name}`;

export const playbookRoutes = [
  route({
    method: 'GET',
    path: base,
    operationId: 'listPlaybooks',
    summary: 'List playbooks by name, from the API and from playbooks/<name>/playbook.json',
    description: 'A name defined both ways is listed once, as source "api". An invalid playbook file is listed with its error.',
    tag,
    response: z.array(PlaybookOut),
    handler: async ({ app }) => await playbooks.listPlaybooks(app),
  }),
  route({
    method: 'POST',
    path: base,
    operationId: 'createPlaybook',
    errors: ['conflict'],
    summary: 'Create a playbook (409 if the name exists, through the API or as a file)',
    description: 'Every {{placeholder}} in mission must name a parameter, and mission must be a valid mission body once filled (else 400).',
    tag,
    status: 201,
    body: PlaybookIn,
    response: PlaybookOut,
    handler: async ({ app, body }) => await playbooks.createPlaybook(app, body),
  }),
  route({
    method: 'GET',
    path: item,
    operationId: 'getPlaybook',
    summary: 'Show a playbook',
    tag,
    params: PlaybookNameParam,
    response: PlaybookOut,
    handler: async ({ app, params }) => await playbooks.getPlaybook(app, params.name),
  }),
  route({
    method: 'PATCH',
    path: item,
    operationId: 'updatePlaybook',
    errors: ['conflict'],
    summary: 'Change a playbook made through the API (a missing field is kept; 409 for a playbook file)',
    tag,
    params: PlaybookNameParam,
    body: PlaybookPatch,
    response: PlaybookOut,
    handler: async ({ app, params, body }) => await playbooks.updatePlaybook(app, params.name, body),
  }),
  route({
    method: 'DELETE',
    path: item,
    operationId: 'deletePlaybook',
    errors: ['conflict'],
    summary: 'Delete a playbook made through the API (409 for a playbook file: remove the file)',
    tag,
    params: PlaybookNameParam,
    response: Removed,
    handler: async ({ app, params }) => {
      await playbooks.removePlaybook(app, params.name);
      return { removed: true as const };
    },
  }),
  route({
    method: 'POST',
    path: `${item}/run`,
    operationId: 'runPlaybook',
    errors: ['unprocessable'],
    summary: 'Create a mission from a playbook with parameter values',
    description: 'Parameters are checked (required, type, enum; defaults filled in): an unknown, missing or wrong one → 400 naming body.params.<name>. A filled mission that is not valid → 422.',
    tag,
    status: 201,
    params: PlaybookNameParam,
    body: RunIn,
    response: RunOut,
    handler: async ({ app, params, body }) => await playbooks.runPlaybook(app, params.name, body.params),
  }),
];
