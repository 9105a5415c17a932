import { z } from 'zod';
import { listAgents } from '../resources/agents/service.js';
import { AgentOut } from '../resources/agents/schema.js';
import { ApprovalIn, ApprovalOut } from '../resources/approvals/schema.js';
import * as approvals from '../resources/approvals/service.js';
import { MissionDetailOut, MissionOut, MissionStatus } from '../resources/missions/schema.js';
import * as missions from '../resources/missions/service.js';
import { SkillDetailOut, SkillName } from '../resources/skills/schema.js';
import { getSkill } from '../resources/skills/service.js';
import { defineTool } from './define.js';

// Tools around the board: missions, approvals, the team and its skills.

const progress = (m: { progress: { total: number; done: number } }) => `${m.progress.done}/${m.progress.total} done`;

export const boardTools = [
  defineTool({
    name: 'mission_list',
    title: 'List missions',
    description: 'List missions (goals with their tasks), newest first, optionally by status (draft, active, paused, completed, failed, cancelled), with task progress counts.',
    input: z.strictObject({
      status: MissionStatus.optional(),
      limit: z.int().min(1).max(100).default(20).describe('How many to return (1-100, default 20).'),
      cursor: z.string().max(128).optional().describe('nextCursor of the previous call.'),
    }),
    output: z.object({ missions: z.array(MissionOut), nextCursor: z.string().nullable() }),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true },
    handler: async ({ app }, q) => {
      const page = await missions.listMissions(app, q);
      return { missions: page.items, nextCursor: page.next };
    },
    summary: (o) => (o.missions.length ? o.missions.map((m) => `${m.id} "${m.name}" ${m.status}, ${progress(m)}`).join('\n') : 'No missions match.'),
  }),
  defineTool({
    name: 'mission_status',
    title: 'Read a mission',
    description: 'Read one mission: its goal, state, progress counts per task state, and every task (oldest first).',
    input: z.strictObject({ missionId: z.string().min(1).max(128).describe('The mission id.') }),
    output: z.object({ mission: MissionDetailOut }),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true },
    handler: async ({ app }, { missionId }) => ({ mission: await missions.getMission(app, missionId) }),
    summary: (o) => `Mission "${o.mission.name}" is ${o.mission.status}, ${progress(o.mission)}.`,
  }),
  defineTool({
    name: 'approval_request',
    title: 'Ask a person to approve',
    description:
      'Ask a person to approve something before you go on (a deploy, a purchase, a risky change). With taskId the task waits in awaiting_approval until decided: approved → assigned (or done from review), rejected → pending with the feedback appended. Poll approval_status. requestedBy: your agent name.',
    input: ApprovalIn,
    output: z.object({ approval: ApprovalOut }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    handler: async ({ app }, input) => ({ approval: await approvals.requestApproval(app, input) }),
    summary: (o) => `Approval ${o.approval.id} requested (${o.approval.status}).`,
  }),
  defineTool({
    name: 'approval_status',
    title: 'Read an approval',
    description: 'Read an approval request: pending, approved (with the note) or rejected (with the feedback), who decided and when.',
    input: z.strictObject({ approvalId: z.string().min(1).max(128).describe('The approval id approval_request returned.') }),
    output: z.object({ approval: ApprovalOut }),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true },
    handler: async ({ app }, { approvalId }) => ({ approval: await approvals.requireApproval(app, approvalId) }),
    summary: (o) => `Approval ${o.approval.id} is ${o.approval.status}${o.approval.feedback ? `: ${o.approval.feedback}` : ''}.`,
  }),
  defineTool({
    name: 'agent_list',
    title: 'List agents',
    description: 'List the agents of the project (name, role, model, team, skills, who they report to), optionally of one team. Use it to find whom to assign work to.',
    input: z.strictObject({ team: z.string().min(1).max(64).optional().describe('Only agents of this team.') }),
    output: z.object({ agents: z.array(AgentOut) }),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true },
    handler: async ({ app }, q) => ({ agents: await listAgents(app.db, q) }),
    summary: (o) => (o.agents.length ? o.agents.map((a) => `${a.name}${a.role ? ` (${a.role})` : ''}`).join(', ') : 'No agents.'),
  }),
  defineTool({
    name: 'skill_get',
    title: 'Load a skill',
    description: "Load a skill's instructions (the Markdown body of its SKILL.md) and its front matter, to follow them.",
    input: z.strictObject({ name: SkillName.describe('The skill name (kebab-case).') }),
    output: z.object({ skill: SkillDetailOut }),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true },
    handler: async ({ app }, { name }) => ({ skill: await getSkill(app, name) }),
    summary: (o) => `Skill ${o.skill.name}: ${o.skill.description ?? '(no description)'}`,
  }),
];
