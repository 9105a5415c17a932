import { Command, Option } from 'commander';
import { action, collect, parseIntOption } from '../../cli/action.js';
import { fills } from '../../cli/api-words.js';
import { confirm } from '../../cli/confirm.js';
import { UsageError } from '../../cli/context.js';
import { emit, keyValues, table } from '../../cli/output.js';
import { check } from '../../cli/validate.js';
import { seg } from '../../client/client.js';
import type { Agent } from './schema.js';
import { REASONING } from './values.js';

/** The API's schemas, loaded when an option needs checking (they bring zod). */
const schemas = () => import('./schema.js');

interface FieldOptions {
  role?: string;
  model?: string;
  team?: string;
  reportsTo?: string;
  reasoning?: string;
  maxTurns?: number;
  maxConcurrency?: number;
  systemPrompt?: string;
  tool?: string[];
  path?: string[];
  skill?: string[];
  unset?: string[];
  runtime?: string;
  command?: string;
  runtimeArg?: string[];
  env?: string[];
  permissionMode?: string;
  autoRun?: boolean;
  runnerLabel?: string[];
}

const RUNTIME_KINDS = ['claude', 'codex', 'command'];
const PERMISSION_MODES = ['ask', 'acceptEdits', 'bypass'];

/** NAME=value, or NAME=vault:<service>/<key> for a value read from the agent's vault when a run starts. */
export function parseEnvOption(text: string): [string, string | { vault: string; key: string }] {
  const eq = text.indexOf('=');
  if (eq <= 0) throw new UsageError(`--env ${text}: give NAME=value or NAME=vault:<service>/<key>`);
  const name = text.slice(0, eq);
  const value = text.slice(eq + 1);
  const ref = /^vault:([^/]+)\/(.+)$/.exec(value);
  return [name, ref ? { vault: ref[1]!, key: ref[2]! } : value];
}

/** The runtime the options describe, over the agent's current one (null: no runtime option given). */
function runtimeFrom(o: FieldOptions, current: Agent['runtime']): Record<string, unknown> | null {
  const given = o.runtime ?? o.command ?? o.runtimeArg ?? o.env ?? o.permissionMode ?? o.autoRun ?? o.runnerLabel;
  if (given === undefined) return null;
  const kind = o.runtime ?? current?.kind;
  if (!kind) throw new UsageError('the agent has no runtime yet: give --runtime claude|codex|command');
  const base: Record<string, unknown> = current && (!o.runtime || o.runtime === current.kind) ? { ...current } : {};
  const rt: Record<string, unknown> = { ...base, kind };
  if (o.command !== undefined) rt.command = o.command;
  if (o.runtimeArg !== undefined) rt.args = o.runtimeArg;
  if (o.env !== undefined) rt.env = Object.fromEntries(o.env.map(parseEnvOption));
  if (o.permissionMode !== undefined) rt.permissionMode = o.permissionMode;
  if (o.autoRun !== undefined) rt.autoRun = o.autoRun;
  if (o.runnerLabel !== undefined) rt.runners = o.runnerLabel;
  for (const k of Object.keys(rt)) if (rt[k] === undefined || rt[k] === null) delete rt[k];
  return rt;
}

function withFieldOptions(cmd: Command): Command {
  return (
    fills(cmd, { 'body.allowedTools': '--tool', 'body.allowedPaths': '--path', 'body.skills': '--skill' })
      .option('--role <role>', 'what the agent does')
      .option('--model <provider/model>', 'model, e.g. openai/gpt-4o')
      .option('--team <team>', 'team name (must exist)')
      .option('--reports-to <agent>', 'the agent it reports to')
      .addOption(new Option('--reasoning <level>', 'reasoning effort').choices([...REASONING]))
      .option('--max-turns <n>', 'turn limit (> 0)', parseIntOption('--max-turns'))
      .option('--max-concurrency <n>', 'parallel tasks (> 0)', parseIntOption('--max-concurrency'))
      .option('--system-prompt <text>', 'system prompt')
      .option('--tool <name>', 'allowed tool (repeatable)', collect)
      .option('--path <glob>', 'allowed path (repeatable)', collect)
      .option('--skill <name>', 'skill (repeatable)', collect)
      .addOption(new Option('--runtime <kind>', 'the CLI svc runs for its tasks (docs/runs.md)').choices(RUNTIME_KINDS))
      .option('--command <path>', "the runtime's executable (default: claude or codex on the daemon's PATH)")
      .option('--runtime-arg <arg>', 'extra argument for the CLI (repeatable)', collect)
      .option('--env <NAME=value>', "variable for the agent's process; NAME=vault:<service>/<key> reads the agent's vault (repeatable)", collect)
      .addOption(new Option('--permission-mode <mode>', 'what the CLI may do without asking').choices(PERMISSION_MODES))
      // Both forms, so that neither is assumed when none is given (an edit keeps what is set).
      .option('--auto-run', 'start a run as soon as a task assigned to it is ready (the default)')
      .option('--no-auto-run', 'start runs only when asked (svc tasks run), not when a task is ready')
      .option('--runner-label <label>', 'run only on runners with this label (repeatable)', collect)
  );
}

function fieldsFrom(o: FieldOptions): Record<string, unknown> {
  const f: Record<string, unknown> = {
    role: o.role,
    model: o.model,
    team: o.team,
    reportsTo: o.reportsTo,
    reasoning: o.reasoning,
    maxTurns: o.maxTurns,
    maxConcurrency: o.maxConcurrency,
    systemPrompt: o.systemPrompt,
    allowedTools: o.tool,
    allowedPaths: o.path,
    skills: o.skill,
  };
  for (const k of Object.keys(f)) if (f[k] === undefined) delete f[k];
  return f;
}

const show = (a: Agent) => keyValues({ ...a, identity: a.identity ?? null });

export function agentsCommand(): Command {
  const cmd = new Command('agents').description('Manage agents');

  cmd
    .command('ls')
    .description('List agents')
    .option('--team <team>', 'only agents of this team')
    .action(
      action(async (ctx, o: { team?: string }) => {
        const agents = await ctx.client.get<Agent[]>('/api/v1/agents', { team: o.team });
        emit(ctx.json, agents, () =>
          table(
            agents,
            [
              { header: 'NAME', value: (a) => a.name },
              { header: 'ROLE', value: (a) => a.role },
              { header: 'MODEL', value: (a) => a.model },
              { header: 'TEAM', value: (a) => a.team },
              { header: 'REPORTS TO', value: (a) => a.reportsTo },
              { header: 'RUNTIME', value: (a) => (a.runtime ? `${a.runtime.kind}${a.runtime.autoRun === false ? ' (by hand)' : ''}` : null) },
            ],
            'no agents; add one with `svc agents add <name>`',
          ),
        );
      }),
    );

  withFieldOptions(cmd.command('add <name>').description('Create an agent (with --runtime, svc runs its CLI on the tasks assigned to it)')).action(
    action(async (ctx, name: string, o: FieldOptions) => {
      const runtime = runtimeFrom(o, null);
      const body = { name, ...fieldsFrom(o), ...(runtime ? { runtime } : {}) };
      await check(schemas, 'AgentIn', body);
      const agent = await ctx.client.post<Agent>('/api/v1/agents', body);
      emit(ctx.json, agent, () => `created agent ${agent.name}${agent.team ? ` in team ${agent.team}` : ''}${agent.model ? ` (${agent.model})` : ''}\n`);
    }),
  );

  cmd
    .command('show <name>')
    .description('Show an agent')
    .action(
      action(async (ctx, name: string) => {
        const agent = await ctx.client.get<Agent>(`/api/v1/agents/${seg(name)}`);
        emit(ctx.json, agent, () => show(agent));
      }),
    );

  withFieldOptions(fills(cmd.command('set <name>').alias('edit'), { 'body.*': '--unset *' }).description('Update an agent; only the options given change'))
    .option('--unset <field>', 'clear a field, e.g. --unset team or --unset runtime (repeatable)', collect)
    .action(
      action(async (ctx, name: string, o: FieldOptions) => {
        const patch: Record<string, unknown> = fieldsFrom(o);
        if (o.runtime ?? o.command ?? o.runtimeArg ?? o.env ?? o.permissionMode ?? o.autoRun ?? o.runnerLabel) {
          const current = await ctx.client.get<Agent>(`/api/v1/agents/${seg(name)}`);
          patch.runtime = runtimeFrom(o, current.runtime);
        }
        for (const f of o.unset ?? []) patch[f] = null;
        if (!Object.keys(patch).length) throw new UsageError('nothing to change: give at least one option', 'see `svc agents set --help`');
        await check(schemas, 'AgentPatch', patch);
        await ctx.client.patch<null>(`/api/v1/agents/${seg(name)}`, patch);
        const shown = (v: unknown) => (Array.isArray(v) ? v.join(',') : v !== null && typeof v === 'object' ? JSON.stringify(v) : String(v));
        const now = Object.keys(patch).map((k) => `${k} ${patch[k] === null ? 'cleared' : `= ${shown(patch[k])}`}`);
        emit(ctx.json, { updated: name, fields: Object.keys(patch) }, () => `updated agent ${name}: ${now.join('; ')}\n`);
      }),
    );

  cmd
    .command('detect')
    .description('The agent CLIs the daemon finds on its PATH, with their versions')
    .action(
      action(async (ctx) => {
        type Found = { kind: string; command: string; path: string | null; version: string | null; error: string | null };
        const found = await ctx.client.get<Found[]>('/api/v1/runtimes');
        emit(ctx.json, found, () =>
          table(
            found,
            [
              { header: 'RUNTIME', value: (f) => f.kind },
              { header: 'VERSION', value: (f) => f.version ?? (f.path ? '?' : 'not found') },
              { header: 'PATH', value: (f) => f.path ?? f.error, flex: true },
            ],
            'no agent CLIs known',
          ),
        );
      }),
    );

  cmd
    .command('rm <name>')
    .description('Remove an agent')
    .option('-y, --yes', 'do not ask for confirmation')
    .action(
      action(async (ctx, name: string) => {
        await confirm(`remove agent ${name}?`, ctx.yes, `svc agents rm ${name}`);
        const r = await ctx.client.delete<{ removed: true }>(`/api/v1/agents/${seg(name)}`);
        emit(ctx.json, r, () => `removed agent ${name}\n`);
      }),
    );

  return cmd;
}
