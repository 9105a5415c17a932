import { z } from 'zod';
import { Timestamp } from '../common.js';
import { MissionOut } from '../missions/schema.js';
import { TaskOut } from '../tasks/schema.js';

export const PlaybookName = z
  .string()
  .max(64)
  .regex(/^[a-z0-9]+(?:-[a-z0-9]+)*$/, 'must be kebab-case: lowercase letters and digits, words joined by single "-"');

export const PARAM_TYPES = ['string', 'number', 'boolean'] as const;
export type ParamType = (typeof PARAM_TYPES)[number];
export const ParamValue = z.union([z.string().max(10_000), z.number(), z.boolean()]);
export type ParamValue = z.output<typeof ParamValue>;

const isType = (v: ParamValue, t: ParamType) => typeof v === t;

export const Parameter = z
  .strictObject({
    name: z
      .string()
      .max(64)
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a letter or "_" followed by letters, digits or "_" (it is written {{name}} in the mission)'),
    type: z.enum(PARAM_TYPES),
    required: z.boolean().optional().describe('Default false. A required parameter without a default must be given to run.'),
    default: ParamValue.optional().describe('Used when the parameter is not given; must have the parameter type (and be in enum).'),
    enum: z.array(ParamValue).min(1).max(100).optional().describe('The only values allowed, each of the parameter type.'),
    description: z.string().max(2000).optional(),
  })
  .superRefine((p, ctx) => {
    if (p.default !== undefined && !isType(p.default, p.type)) ctx.addIssue({ code: 'custom', path: ['default'], message: `must be a ${p.type}` });
    p.enum?.forEach((v, i) => !isType(v, p.type) && ctx.addIssue({ code: 'custom', path: ['enum', i], message: `must be a ${p.type}` }));
    if (p.default !== undefined && p.enum && !p.enum.includes(p.default)) ctx.addIssue({ code: 'custom', path: ['default'], message: 'must be one of enum' });
  });
export type Parameter = z.output<typeof Parameter>;

const Parameters = z
  .array(Parameter)
  .max(50)
  .superRefine((ps, ctx) => {
    const seen = new Set<string>();
    ps.forEach((p, i) => {
      if (seen.has(p.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate parameter "${p.name}"` });
      seen.add(p.name);
    });
  });

/** A mission body (POST /missions) whose strings may hold {{param}} placeholders; checked as a whole by the service. */
const MissionTemplate = z.record(z.string(), z.unknown()).describe('A mission body (as POST /api/v1/missions takes) with {{param}} placeholders in any string.');

const description = z.string().max(10_000);

export const PlaybookIn = z.strictObject({
  name: PlaybookName,
  description: description.optional(),
  parameters: Parameters.default([]),
  mission: MissionTemplate,
});
export type PlaybookInput = z.output<typeof PlaybookIn>;

/** playbooks/<name>/playbook.json: the POST body; `name`, when present, must be the folder name. */
export const PlaybookFile = PlaybookIn.extend({ name: PlaybookName.optional() });

export const PlaybookPatch = z.strictObject({
  description: description.nullable().optional(),
  parameters: Parameters.optional(),
  mission: MissionTemplate.optional(),
});
export type PlaybookPatchInput = z.output<typeof PlaybookPatch>;

export const PlaybookOut = z
  .object({
    name: z.string(),
    description: z.string().nullable(),
    parameters: z.array(Parameter),
    mission: z.record(z.string(), z.unknown()).nullable().describe('null only when a playbook file cannot be read.'),
    source: z.enum(['api', 'file']).describe('api: stored through the API. file: read from playbooks/<name>/playbook.json. On a name clash the api one wins.'),
    file: z.string().nullable().describe('For source file: its path relative to the project root.'),
    error: z.string().nullable().describe('Why a playbook file is invalid (it cannot be run until fixed); null when valid.'),
    createdAt: Timestamp.describe('For a file: its modification time.'),
    updatedAt: Timestamp,
  })
  .meta({ id: 'Playbook' });
export type Playbook = z.output<typeof PlaybookOut>;

export const RunIn = z.strictObject({
  params: z.record(z.string(), ParamValue).default({}).describe('Parameter values by name, each of its declared type.'),
});

export const RunOut = z.object({ mission: MissionOut, tasks: z.array(TaskOut) }).meta({ id: 'PlaybookRun' });

export const PlaybookNameParam = z.strictObject({ name: z.string().min(1).max(128) });
