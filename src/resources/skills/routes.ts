import { z } from 'zod';
import { route } from '../../app.js';
import { NameParam, Removed } from '../common.js';
import { SkillAgentIn, SkillAgentOut, SkillDetailOut, SkillIn, SkillOut } from './schema.js';
import * as skills from './service.js';

const tag = 'Skills';

export const skillRoutes = [
  route({
    method: 'GET',
    path: '/api/v1/skills',
    operationId: 'listSkills',
    summary: 'List skills (folders <skillsDir>/<name>/SKILL.md), by name',
    description: 'A folder holding a SKILL.md is a skill; folders starting with "." are skipped. A SKILL.md with bad front matter is listed with `error`. Changes on disk show within a second.',
    tag,
    response: z.array(SkillOut),
    handler: async ({ app }) => await skills.listSkills(app),
  }),
  route({
    method: 'POST',
    path: '/api/v1/skills',
    operationId: 'createSkill',
    errors: ['conflict'],
    summary: 'Write a new skill folder with its SKILL.md',
    tag,
    status: 201,
    body: SkillIn,
    response: SkillDetailOut,
    handler: async ({ app, body }) => await skills.createSkill(app, body),
  }),
  route({
    method: 'GET',
    path: '/api/v1/skills/{name}',
    operationId: 'getSkill',
    summary: 'Show a skill with its Markdown body and front matter',
    tag,
    params: NameParam,
    response: SkillDetailOut,
    handler: async ({ app, params }) => await skills.getSkill(app, params.name),
  }),
  route({
    method: 'DELETE',
    path: '/api/v1/skills/{name}',
    operationId: 'deleteSkill',
    summary: 'Remove a skill folder and unassign the skill from every agent',
    tag,
    params: NameParam,
    response: Removed,
    handler: async ({ app, params }) => {
      await skills.removeSkill(app, params.name);
      return { removed: true as const };
    },
  }),
  route({
    method: 'POST',
    path: '/api/v1/skills/{name}/assign',
    operationId: 'assignSkill',
    summary: "Assign a skill to an agent (adds it to the agent's skills; idempotent)",
    tag,
    params: NameParam,
    body: SkillAgentIn,
    response: SkillAgentOut,
    handler: async ({ app, params, body }) => await skills.assignSkill(app, params.name, body.agent),
  }),
  route({
    method: 'POST',
    path: '/api/v1/skills/{name}/unassign',
    operationId: 'unassignSkill',
    summary: "Unassign a skill from an agent (removes it from the agent's skills; idempotent)",
    description: 'A skill whose folder is gone can still be unassigned from an agent that holds it; otherwise an unknown skill or agent is 404.',
    tag,
    params: NameParam,
    body: SkillAgentIn,
    response: SkillAgentOut,
    handler: async ({ app, params, body }) => await skills.unassignSkill(app, params.name, body.agent),
  }),
];
