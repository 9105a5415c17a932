import { Command, Option } from 'commander';
import { action, collect, parseIntOption } from '../../cli/action.js';
import { fills } from '../../cli/api-words.js';
import { confirm } from '../../cli/confirm.js';
import { UsageError } from '../../cli/context.js';
import { emit, keyValues, table } from '../../cli/output.js';
import { check, defined } from '../../cli/validate.js';
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
}

function withFieldOptions(cmd: Command): Command {
  return fills(cmd, { 'body.allowedTools': '--tool', 'body.allowedPaths': '--path', 'body.skills': '--skill' })
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
    .option('--skill <name>', 'skill (repeatable)', collect);
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
            ],
            'no agents; add one with `svc agents add <name>`',
          ),
        );
      }),
    );

  withFieldOptions(cmd.command('add <name>').description('Create an agent')).action(
    action(async (ctx, name: string, o: FieldOptions) => {
      const body = { name, ...fieldsFrom(o) };
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

  withFieldOptions(fills(cmd.command('set <name>'), { 'body.*': '--unset *' }).description('Update an agent; only the options given change'))
    .option('--unset <field>', 'clear a field, e.g. --unset team (repeatable)', collect)
    .action(
      action(async (ctx, name: string, o: FieldOptions) => {
        const patch: Record<string, unknown> = fieldsFrom(o);
        for (const f of o.unset ?? []) patch[f] = null;
        if (!Object.keys(patch).length) throw new UsageError('nothing to change: give at least one option', 'see `svc agents set --help`');
        await check(schemas, 'AgentPatch', patch);
        await ctx.client.patch<null>(`/api/v1/agents/${seg(name)}`, patch);
        const now = Object.keys(patch).map((k) => `${k} ${patch[k] === null ? 'cleared' : `= ${Array.isArray(patch[k]) ? (patch[k] as unknown[]).join(',') : String(patch[k])}`}`);
        emit(ctx.json, { updated: name, fields: Object.keys(patch) }, () => `updated agent ${name}: ${now.join('; ')}\n`);
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
