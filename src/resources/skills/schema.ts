import { z } from 'zod';
import { Timestamp } from '../common.js';

/** Skill (folder) names: kebab-case, as the Agent Skills format requires. */
export const SKILL_NAME_RE = /^[a-z0-9][a-z0-9-]{0,63}$/;

export const SkillName = z.string().regex(SKILL_NAME_RE, 'must be kebab-case: 1-64 lowercase letters, digits or "-", starting with a letter or digit');

export const SkillIn = z.strictObject({
  name: SkillName.describe('The folder name and the front matter name.'),
  description: z.string().trim().min(1).max(1024).describe('When to use the skill; agent tools show it to the model.'),
  content: z.string().describe('The Markdown body of SKILL.md (after the front matter).'),
  allowedTools: z.array(z.string().min(1).max(200)).max(100).optional().describe('Written as `allowed-tools`.'),
});
export type SkillInput = z.output<typeof SkillIn>;

/** Body of assign and unassign. */
export const SkillAgentIn = z.strictObject({ agent: z.string().min(1).describe('Agent name.') });

export const SkillAgentOut = z.object({ skill: z.string(), agent: z.string() }).meta({ id: 'SkillAssignment' });

export const SkillOut = z
  .object({
    name: z.string().describe('The folder name.'),
    description: z.string().nullable().describe('null when the front matter has none (see error).'),
    allowedTools: z.array(z.string()).describe('From `allowed-tools`, a list or a comma-separated string in the file.'),
    path: z.string().describe('SKILL.md, relative to the project root when inside it, with "/" separators.'),
    assignedTo: z.array(z.string()).describe('Names of the agents whose `skills` list holds this skill.'),
    updatedAt: Timestamp.describe("SKILL.md's modification time."),
    error: z.string().optional().describe('What is wrong with SKILL.md; absent when the skill is valid. Broken skills are listed, never dropped.'),
  })
  .meta({ id: 'Skill' });
export type Skill = z.output<typeof SkillOut>;

export const SkillDetailOut = SkillOut.extend({
  content: z.string().describe('The Markdown body.'),
  frontMatter: z.record(z.string(), z.unknown()).describe('Every front matter field as written, including ones svc does not use.'),
}).meta({ id: 'SkillDetail' });
export type SkillDetail = z.output<typeof SkillDetailOut>;
