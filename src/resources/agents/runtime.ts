import { z } from 'zod';

// An agent's runtime: which CLI svc starts for it, and how (DESIGN section 12). It is an svc field
// of the agent record (the reference has none), validated here; the runs resource checks it
// against the machine when it is set (agents/service.ts RUNTIME_CHECK) and runs it.

/** The agent CLIs svc drives. `command` is any program: prompt on stdin, JSON lines read if any. */
export const RUNTIME_KINDS = ['claude', 'codex', 'command'] as const;
export type RuntimeKind = (typeof RUNTIME_KINDS)[number];

/**
 * How much the CLI may do without asking. `ask` turns the CLI's permission prompts into svc
 * approvals; `acceptEdits` lets it edit files in its workspace (and run what allowedTools allows);
 * `bypass` lets it do anything (Claude Code refuses it as root).
 */
export const PERMISSION_MODES = ['ask', 'acceptEdits', 'bypass'] as const;
export type PermissionMode = (typeof PERMISSION_MODES)[number];

/** `{vault: "<service>", key: "<name>"}`: read from the agent's vault entry at spawn time, given to that process only. */
export const VaultRef = z.strictObject({
  vault: z.string().min(1).max(128).describe("The service of one of this agent's vault entries."),
  key: z.string().min(1).max(256).describe('The key inside that entry.'),
});
export type VaultRef = z.output<typeof VaultRef>;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** Set by the runner for every run: an agent's env cannot replace them. */
export const RESERVED_ENV = ['SVC_URL', 'SVC_API_KEY', 'SVC_TASK_ID', 'SVC_RUN_ID', 'SVC_AGENT'] as const;

const runtimeShape = {
  kind: z.enum(RUNTIME_KINDS).describe('claude (Claude Code), codex (Codex CLI) or command (any program: the prompt on stdin, JSON lines read from stdout when it prints them).'),
  command: z.string().min(1).max(1024).optional().describe("The executable: a name looked up on the daemon's PATH, or a path. Default: claude or codex by kind; required for kind command."),
  args: z.array(z.string().max(4096)).max(64).optional().describe('Extra arguments, after the ones svc gives (docs/runs.md says where for each kind).'),
  env: z
    .record(z.string().regex(ENV_NAME, 'must be an environment variable name'), z.union([z.string().max(32_768), VaultRef]))
    .optional()
    .refine((env) => !env || Object.keys(env).length <= 64, 'at most 64 variables')
    .refine((env) => !env || !RESERVED_ENV.some((k) => Object.hasOwn(env, k)), `${RESERVED_ENV.join(', ')} are set by svc for each run`)
    .describe("Variables for the agent's process only: a string, or {vault, key} read from this agent's vault entry when the run starts (never logged, stored or shown)."),
  permissionMode: z
    .enum(PERMISSION_MODES)
    .optional()
    .describe(
      'ask: permission prompts become svc approvals; acceptEdits (default): edits in the workspace and allowedTools run without asking; bypass: anything runs (Claude Code refuses it as root).',
    ),
  autoRun: z.boolean().optional().describe('Start a run as soon as a task assigned to this agent is ready (default true); false: only POST /tasks/{id}/runs starts one.'),
  runners: z
    .array(z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/))
    .max(32)
    .optional()
    .describe('Run only on runners with one of these labels (runner.labels of their project.json).'),
};

export const RuntimeSchema = z
  .strictObject(runtimeShape)
  .superRefine((r, ctx) => {
    if (r.kind === 'command' && !r.command) ctx.addIssue({ code: 'custom', path: ['command'], message: 'kind "command" needs a command to run' });
  })
  .meta({ id: 'AgentRuntimeIn' });
export type Runtime = z.output<typeof RuntimeSchema>;

/** The runtime as answered: what was set (env vault references shown as references, never values). */
export const RuntimeOut = z.object(runtimeShape).meta({ id: 'AgentRuntime' });

/** The vault references of a runtime's env, by variable. */
export const vaultRefs = (runtime: Runtime): [string, VaultRef][] => Object.entries(runtime.env ?? {}).filter((e): e is [string, VaultRef] => typeof e[1] !== 'string');
