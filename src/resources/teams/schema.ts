import { z } from 'zod';
import { NameSchema, Timestamp } from '../common.js';

export const TeamIn = z.strictObject({
  name: NameSchema,
  description: z.string().max(10_000).optional().describe('Optional; defaults to an empty string.'),
});

export const TeamRename = z.strictObject({
  oldName: z.string().min(1).max(64),
  name: NameSchema,
});

export const TeamOut = z
  .object({
    name: z.string(),
    description: z.string(),
    agents: z.array(z.string()).describe('Names of the agents in the team.'),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Team' });
export type Team = z.output<typeof TeamOut>;
