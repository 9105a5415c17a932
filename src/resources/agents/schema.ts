import { z } from 'zod';
import { NameSchema, RESERVED_AGENT_NAMES, Timestamp } from '../common.js';
import { MAX_LIST_ITEMS, REASONING } from './values.js';
import { RuntimeOut, RuntimeSchema } from './runtime.js';

export { REASONING };

export const AgentName = NameSchema.refine((n) => !RESERVED_AGENT_NAMES.includes(n), {
  message: `"team" and "teams" are reserved (they are paths under /agents)`,
});

const text = (max: number) => z.string().max(max);
const list = z.array(z.string().min(1).max(1000)).max(MAX_LIST_ITEMS);

export const IdentitySchema = z.strictObject({
  displayName: text(200).optional(),
  title: text(200).optional(),
  company: text(200).optional(),
  email: text(320).optional(),
  bio: text(10_000).optional(),
  timezone: text(100).optional(),
  avatar: text(2000).optional(),
  tone: text(1000).optional(),
  personality: text(10_000).optional(),
  responsibilities: z.array(text(1000)).max(200).optional(),
  socials: z.record(z.string(), z.unknown()).optional(),
});

/** The updatable fields of the reference's Agent, with their constraints. */
const fields = {
  role: text(200),
  model: text(200),
  allowedTools: list,
  allowedPaths: list,
  systemPrompt: text(200_000),
  skills: list,
  maxTurns: z.int().positive(),
  maxConcurrency: z.int().positive(),
  identity: IdentitySchema,
  reportsTo: z.string().min(1).max(64),
  reasoning: z.enum(REASONING),
  assignedLoops: list,
  defaultLoop: text(200),
  browserProfile: text(200),
  emailAllowedDomains: list,
  team: z.string().min(1).max(64),
  /** svc's own field: the CLI svc runs for this agent's tasks (docs/runs.md). */
  runtime: RuntimeSchema,
};

export type AgentFieldName = keyof typeof fields;
export const AGENT_FIELDS = Object.keys(fields) as AgentFieldName[];
export const LIST_FIELDS: AgentFieldName[] = ['allowedTools', 'allowedPaths', 'skills', 'assignedLoops', 'emailAllowedDomains'];

const optionalFields = Object.fromEntries(Object.entries(fields).map(([k, s]) => [k, s.optional()])) as {
  [K in AgentFieldName]: z.ZodOptional<(typeof fields)[K]>;
};
// In a patch a missing field is left alone and an explicit null clears it.
const patchFields = Object.fromEntries(Object.entries(fields).map(([k, s]) => [k, s.nullable().optional()])) as {
  [K in AgentFieldName]: z.ZodOptional<z.ZodNullable<(typeof fields)[K]>>;
};

export const AgentIn = z.strictObject({ name: AgentName, ...optionalFields });
export const AgentPatch = z.strictObject(patchFields);

export type AgentInput = z.output<typeof AgentIn>;
export type AgentPatchInput = z.output<typeof AgentPatch>;
export type AgentFields = Partial<{ [K in AgentFieldName]: z.output<(typeof fields)[K]> }>;

export const AgentOut = z
  .object({
    name: z.string(),
    role: z.string().nullable(),
    model: z.string().nullable(),
    allowedTools: z.array(z.string()),
    allowedPaths: z.array(z.string()),
    systemPrompt: z.string().nullable(),
    skills: z.array(z.string()),
    maxTurns: z.int().nullable(),
    maxConcurrency: z.int().nullable(),
    identity: IdentitySchema.nullable(),
    reportsTo: z.string().nullable(),
    reasoning: z.enum(REASONING).nullable(),
    assignedLoops: z.array(z.string()),
    defaultLoop: z.string().nullable(),
    browserProfile: z.string().nullable(),
    emailAllowedDomains: z.array(z.string()),
    team: z.string().nullable(),
    runtime: RuntimeOut.nullable().describe("The CLI svc runs for this agent's tasks (svc's field; null: svc runs nothing for it)."),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Agent' });
export type Agent = z.output<typeof AgentOut>;
