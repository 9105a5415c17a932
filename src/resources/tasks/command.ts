import { Argument, Command, Option } from 'commander';
import { action, collect, parseIntOption } from '../../cli/action.js';
import { fills } from '../../cli/api-words.js';
import { confirm } from '../../cli/confirm.js';
import { UsageError, type CliContext } from '../../cli/context.js';
import { relativeTime, shortId } from '../../lib/human.js';
import { MISSION, resolveId, TASK } from '../../cli/ids.js';
import { emit, keyValues, nextPageHint, table } from '../../cli/output.js';
import { check, defined } from '../../cli/validate.js';
import { seg } from '../../client/client.js';
import type { Claimed, Task } from './schema.js';
import { PRIORITIES } from './values.js';

/** The API's schemas, loaded when an option needs checking (they bring zod). */
const schemas = () => import('./schema.js');
import { TASK_STATES } from './state.js';
import { systemClock } from '../../lib/clock.js';

const path = (id: string) => `/api/v1/tasks/${seg(id)}`;

/** How long a claim lease has left, for people: "14m left", "45s left", "expired". */
export function leaseLeft(expiresAt: string | null, now = systemClock.now()): string | null {
  if (expiresAt === null) return null;
  const s = Math.ceil((Date.parse(expiresAt) - now) / 1000);
  if (s <= 0) return 'expired';
  if (s < 60) return `${s}s left`;
  if (s < 3600) return `${Math.ceil(s / 60)}m left`;
  return `${Math.floor(s / 3600)}h${String(Math.ceil((s % 3600) / 60)).padStart(2, '0')}m left`;
}

export const taskTable = (tasks: Task[], now = systemClock.now()) =>
  table(
    tasks,
    [
      { header: 'ID', value: (t) => shortId(t.id) },
      { header: 'STATUS', value: (t) => t.status },
      { header: 'PRIORITY', value: (t) => t.priority },
      { header: 'ASSIGNEE', value: (t) => t.assignTo },
      { header: 'UPDATED', value: (t) => relativeTime(t.updatedAt, now) },
      // The assignee of an in_progress claimed task is its holder; this is its lease.
      { header: 'LEASE', value: (t) => leaseLeft(t.leaseExpiresAt, now) },
      { header: 'TITLE', value: (t) => t.title, flex: true },
    ],
    'no tasks; add one with `svc tasks add <title>`',
  );

const show = (t: Task) =>
  keyValues({
    ...t,
    result: t.result === null ? null : JSON.stringify(t.result),
    createdAt: `${t.createdAt} (${relativeTime(t.createdAt)})`,
    updatedAt: `${t.updatedAt} (${relativeTime(t.updatedAt)})`,
  });

/** What a person wants to know after a change: the short id, the state, and who has it. */
export const taskState = (t: Task) => `task ${shortId(t.id)} is now ${t.status}${t.assignTo ? ` (${t.assignTo})` : ''}`;

interface FieldOptions {
  title?: string;
  description?: string;
  assignTo?: string;
  dependsOn?: string[];
  priority?: string;
  label?: string[];
  maxRetries?: number;
  sideEffects?: boolean;
}

function withFieldOptions(cmd: Command): Command {
  return fills(cmd, { 'body.labels': '--label', 'body.missionId': '--mission', 'params.taskId': '<id>' })
    .option('--description <text>', 'what to do')
    .option('--assign-to <agent>', 'agent to assign (must exist)')
    .option('--depends-on <taskId>', 'task that must be done first; a short id works (repeatable)', collect)
    .addOption(new Option('--priority <level>', 'priority').choices([...PRIORITIES]))
    .option('--label <label>', 'label (repeatable)', collect)
    .option('--max-retries <n>', 'retries allowed after failure', parseIntOption('--max-retries'))
    .option('--side-effects', 'the task acts outside the project (deploys, mail, money)');
}

function fieldsFrom(o: FieldOptions): Record<string, unknown> {
  const f: Record<string, unknown> = {
    title: o.title,
    description: o.description,
    assignTo: o.assignTo,
    dependsOn: o.dependsOn,
    priority: o.priority,
    labels: o.label,
    maxRetries: o.maxRetries,
    sideEffects: o.sideEffects,
  };
  for (const k of Object.keys(f)) if (f[k] === undefined) delete f[k];
  return f;
}

/** --result takes JSON, and falls back to plain text so `--result "all green"` just works. */
function parseResult(v: string): unknown {
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
}

/** Short ids given in --depends-on, made full. */
async function resolveDeps(ctx: CliContext, body: Record<string, unknown>): Promise<void> {
  if (Array.isArray(body.dependsOn)) body.dependsOn = await Promise.all((body.dependsOn as string[]).map((d) => resolveId(ctx.client, TASK, d)));
}

export function tasksCommand(): Command {
  const cmd = new Command('tasks').description('Manage the task board (ids: a unique prefix or suffix of 4+ characters works)');

  fills(cmd.command('ls'), { 'query.missionId': '--mission' })
    .description('List tasks, newest first')
    .addOption(new Option('--status <state>', 'only tasks in this state').choices([...TASK_STATES]))
    .option('--assign-to <agent>', 'only tasks assigned to this agent')
    .option('--mission <missionId>', 'only tasks of this mission')
    .option('--limit <n>', 'page size (1-200, default 50)', parseIntOption('--limit'))
    .option('--cursor <cursor>', 'page to show (printed after a full page)')
    .action(
      action(async (ctx, o: { status?: string; assignTo?: string; mission?: string; limit?: number; cursor?: string }) => {
        const query = { status: o.status, assignTo: o.assignTo, missionId: o.mission, limit: o.limit, cursor: o.cursor };
        await check(schemas, 'TaskListQuery', defined(query), 'query');
        if (query.missionId) query.missionId = await resolveId(ctx.client, MISSION, query.missionId);
        const res = await ctx.client.call<Task[]>('GET', '/api/v1/tasks', { query });
        emit(ctx.json, res.data, () => taskTable(res.data));
        nextPageHint('svc tasks ls', res.headers['x-next-cursor']);
      }),
    );

  withFieldOptions(cmd.command('add <title>').description('Create a task (pending, or draft with --draft)'))
    .option('--mission <missionId>', 'mission the task belongs to')
    .option('--draft', 'create it as draft')
    .action(
      action(async (ctx, title: string, o: FieldOptions & { mission?: string; draft?: boolean }) => {
        const body: Record<string, unknown> = { title, ...fieldsFrom(o), ...(o.mission ? { missionId: o.mission } : {}), ...(o.draft ? { draft: true } : {}) };
        await check(schemas, 'TaskIn', body);
        if (typeof body.missionId === 'string') body.missionId = await resolveId(ctx.client, MISSION, body.missionId);
        await resolveDeps(ctx, body);
        const task = await ctx.client.post<Task>('/api/v1/tasks', body);
        emit(ctx.json, task, () => `created task ${shortId(task.id)} (${task.status}${task.assignTo ? `, ${task.assignTo}` : ''})\n`);
      }),
    );

  cmd
    .command('show <id>')
    .description('Show a task')
    .action(
      action(async (ctx, id: string) => {
        const task = await ctx.client.get<Task>(path(await resolveId(ctx.client, TASK, id)));
        emit(ctx.json, task, () => show(task));
      }),
    );

  withFieldOptions(fills(cmd.command('edit <id>'), { 'body.*': '--unset *' }).description('Change fields of a task (not its state: see `svc tasks mv`)'))
    .option('--title <title>', 'new title')
    .option('--no-side-effects', 'the task has no side effects')
    .option('--unset <field>', 'clear a field: description, assignTo, dependsOn or labels (repeatable)', collect)
    .action(
      action(async (ctx, id: string, o: FieldOptions & { unset?: string[] }) => {
        const patch = fieldsFrom(o);
        for (const f of o.unset ?? []) patch[f] = null;
        if (!Object.keys(patch).length) throw new UsageError('nothing to change: give at least one option', 'see `svc tasks edit --help`');
        await check(schemas, 'TaskPatch', patch);
        await resolveDeps(ctx, patch);
        const task = await ctx.client.patch<Task>(path(await resolveId(ctx.client, TASK, id)), patch);
        emit(ctx.json, task, () => `updated ${Object.keys(patch).join(', ')}; ${taskState(task)}\n`);
      }),
    );

  fills(cmd.command('mv'), { 'body.to': '<state>', 'params.taskId': '<id>' })
    .description('Move a task to another state')
    .argument('<id>', 'task id')
    .addArgument(new Argument('<state>', 'target state').choices([...TASK_STATES]))
    .option('--reason <text>', 'why (carried in the task:transition event)')
    .addOption(new Option('--expected-from <state>', 'refuse unless the task is in this state now').choices([...TASK_STATES]))
    .option('--result <json|text>', 'result to store (with review, done or failed)')
    .action(
      action(async (ctx, id: string, to: string, o: { reason?: string; expectedFrom?: string; result?: string }) => {
        const body: Record<string, unknown> = { to };
        if (o.reason !== undefined) body.reason = o.reason;
        if (o.expectedFrom !== undefined) body.expectedFrom = o.expectedFrom;
        if (o.result !== undefined) body.result = parseResult(o.result);
        await check(schemas, 'TransitionIn', body);
        const task = await ctx.client.post<Task>(`${path(await resolveId(ctx.client, TASK, id))}/transition`, body);
        emit(ctx.json, task, () => `${taskState(task)}\n`);
      }),
    );

  cmd
    .command('claim <id>')
    .description('Claim a pending or assigned task for an agent and start it')
    .requiredOption('--agent <agent>', 'the claiming agent')
    .action(
      action(async (ctx, id: string, o: { agent: string }) => {
        await check(schemas, 'ClaimIn', { agent: o.agent });
        const task = await ctx.client.post<Claimed>(`${path(await resolveId(ctx.client, TASK, id))}/claim`, { agent: o.agent });
        emit(ctx.json, task, () => `claimed by ${o.agent}; ${taskState(task)}; lease ${task.leaseId} ${leaseLeft(task.leaseExpiresAt)}\n`);
      }),
    );

  cmd
    .command('retry <id>')
    .description('Send a failed task back to pending (counts one retry)')
    .action(
      action(async (ctx, id: string) => {
        const task = await ctx.client.post<Task>(`${path(await resolveId(ctx.client, TASK, id))}/retry`);
        emit(ctx.json, task, () => `retry ${task.retries} of ${task.maxRetries}; ${taskState(task)}\n`);
      }),
    );

  cmd
    .command('run <id>')
    .description("Start a run of the task's agent now (its CLI in the task's worktree); -f follows its log")
    .option('--agent <agent>', 'run this agent instead of the assignee (reassigns the task)')
    .option('--prompt <text>', 'what to ask of this run (the task is given too)')
    .option('-f, --follow', "print the run's log until it ends")
    .action(
      action(async (ctx, id: string, o: { agent?: string; prompt?: string; follow?: boolean }) => {
        const full = await resolveId(ctx.client, TASK, id);
        const body = defined({ agent: o.agent, prompt: o.prompt });
        const run = await ctx.client.post<{ id: string; agent: string; status: string; attempt: number }>(`${path(full)}/runs`, body);
        if (!o.follow || ctx.json) {
          emit(ctx.json, run, () => `queued run ${shortId(run.id)} of ${run.agent} on task ${shortId(full)} (attempt ${run.attempt}); follow it with \`svc runs logs -f ${shortId(run.id)}\`\n`);
          return;
        }
        const { followRun } = await import('../runs/command.js');
        await followRun(ctx, run.id);
      }),
    );

  cmd
    .command('rm <id>')
    .description('Delete a task')
    .option('-y, --yes', 'do not ask for confirmation')
    .action(
      action(async (ctx, id: string) => {
        const full = await resolveId(ctx.client, TASK, id);
        const task = await ctx.client.get<Task>(path(full));
        await confirm(`delete task ${shortId(full)} "${task.title}"?`, ctx.yes, `svc tasks rm ${id}`);
        const r = await ctx.client.delete<{ removed: true }>(path(full));
        emit(ctx.json, r, () => `removed task ${shortId(full)}\n`);
      }),
    );

  return cmd;
}
