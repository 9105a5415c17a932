import { Argument, Command, Option } from 'commander';
import { action, collect, parseIntOption } from '../../cli/action.js';
import { UsageError } from '../../cli/context.js';
import { emit, keyValues, style, table } from '../../cli/output.js';
import { seg } from '../../client/client.js';
import { PRIORITIES, type Claimed, type Task } from './schema.js';
import { TASK_STATES } from './state.js';

const path = (id: string) => `/api/v1/tasks/${seg(id)}`;

/** How long a claim lease has left, for people: "14m left", "45s left", "expired". */
export function leaseLeft(expiresAt: string | null, now = Date.now()): string | null {
  if (expiresAt === null) return null;
  const s = Math.ceil((Date.parse(expiresAt) - now) / 1000);
  if (s <= 0) return 'expired';
  if (s < 60) return `${s}s left`;
  if (s < 3600) return `${Math.ceil(s / 60)}m left`;
  return `${Math.floor(s / 3600)}h${String(Math.ceil((s % 3600) / 60)).padStart(2, '0')}m left`;
}

const taskTable = (tasks: Task[]) =>
  table(
    tasks,
    [
      { header: 'ID', value: (t) => t.id },
      { header: 'STATUS', value: (t) => t.status },
      { header: 'PRIORITY', value: (t) => t.priority },
      { header: 'ASSIGNEE', value: (t) => t.assignTo },
      // The assignee of an in_progress claimed task is its holder; this is its lease.
      { header: 'LEASE', value: (t) => leaseLeft(t.leaseExpiresAt) },
      { header: 'TITLE', value: (t) => t.title },
    ],
    'no tasks; add one with `svc tasks add <title>`',
  );

const show = (t: Task) => keyValues({ ...t, result: t.result === null ? null : JSON.stringify(t.result) });

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
  return cmd
    .option('--description <text>', 'what to do')
    .option('--assign-to <agent>', 'agent to assign (must exist)')
    .option('--depends-on <taskId>', 'task that must be done first (repeatable)', collect)
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

export function tasksCommand(): Command {
  const cmd = new Command('tasks').description('Manage the task board');

  cmd
    .command('ls')
    .description('List tasks, newest first')
    .addOption(new Option('--status <state>', 'only tasks in this state').choices([...TASK_STATES]))
    .option('--assign-to <agent>', 'only tasks assigned to this agent')
    .option('--mission <missionId>', 'only tasks of this mission')
    .option('--limit <n>', 'page size (1-200, default 50)', parseIntOption('--limit'))
    .option('--cursor <cursor>', 'page to show (printed after a full page)')
    .action(
      action(async (ctx, o: { status?: string; assignTo?: string; mission?: string; limit?: number; cursor?: string }) => {
        const res = await ctx.client.call<Task[]>('GET', '/api/v1/tasks', {
          query: { status: o.status, assignTo: o.assignTo, missionId: o.mission, limit: o.limit, cursor: o.cursor },
        });
        const next = res.headers['x-next-cursor'];
        emit(ctx.json, res.data, () => taskTable(res.data));
        // On stderr so that --json output stays one JSON document.
        if (typeof next === 'string') process.stderr.write(style.dim(`more: svc tasks ls --cursor ${next}\n`));
      }),
    );

  withFieldOptions(cmd.command('add <title>').description('Create a task (pending, or draft with --draft)'))
    .option('--mission <missionId>', 'mission the task belongs to')
    .option('--draft', 'create it as draft')
    .action(
      action(async (ctx, title: string, o: FieldOptions & { mission?: string; draft?: boolean }) => {
        const body = { title, ...fieldsFrom(o), ...(o.mission ? { missionId: o.mission } : {}), ...(o.draft ? { draft: true } : {}) };
        const task = await ctx.client.post<Task>('/api/v1/tasks', body);
        emit(ctx.json, task, () => `created task ${task.id} (${task.status})\n`);
      }),
    );

  cmd
    .command('show <id>')
    .description('Show a task')
    .action(
      action(async (ctx, id: string) => {
        const task = await ctx.client.get<Task>(path(id));
        emit(ctx.json, task, () => show(task));
      }),
    );

  withFieldOptions(cmd.command('edit <id>').description('Change fields of a task (not its state: see `svc tasks mv`)'))
    .option('--title <title>', 'new title')
    .option('--no-side-effects', 'the task has no side effects')
    .option('--unset <field>', 'clear a field: description, assignTo, dependsOn or labels (repeatable)', collect)
    .action(
      action(async (ctx, id: string, o: FieldOptions & { unset?: string[] }) => {
        const patch = fieldsFrom(o);
        for (const f of o.unset ?? []) patch[f] = null;
        if (!Object.keys(patch).length) throw new UsageError('nothing to change: give at least one option (see `svc tasks edit --help`)');
        const task = await ctx.client.patch<Task>(path(id), patch);
        emit(ctx.json, task, () => `updated task ${task.id}: ${Object.keys(patch).join(', ')}\n`);
      }),
    );

  cmd
    .command('mv')
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
        const task = await ctx.client.post<Task>(`${path(id)}/transition`, body);
        emit(ctx.json, task, () => `task ${task.id} is now ${task.status}\n`);
      }),
    );

  cmd
    .command('claim <id>')
    .description('Claim a pending or assigned task for an agent and start it')
    .requiredOption('--agent <agent>', 'the claiming agent')
    .action(
      action(async (ctx, id: string, o: { agent: string }) => {
        const task = await ctx.client.post<Claimed>(`${path(id)}/claim`, { agent: o.agent });
        emit(ctx.json, task, () => `task ${task.id} claimed by ${o.agent} (${task.status}); lease ${task.leaseId} until ${task.leaseExpiresAt}\n`);
      }),
    );

  cmd
    .command('retry <id>')
    .description('Send a failed task back to pending (counts one retry)')
    .action(
      action(async (ctx, id: string) => {
        const task = await ctx.client.post<Task>(`${path(id)}/retry`);
        emit(ctx.json, task, () => `task ${task.id} is pending again (retry ${task.retries} of ${task.maxRetries})\n`);
      }),
    );

  cmd
    .command('rm <id>')
    .description('Delete a task')
    .action(
      action(async (ctx, id: string) => {
        const r = await ctx.client.delete<{ removed: true }>(path(id));
        emit(ctx.json, r, () => `removed task ${id}\n`);
      }),
    );

  return cmd;
}
