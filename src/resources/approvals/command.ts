import { Command, InvalidArgumentError, Option } from 'commander';
import { userInfo } from 'node:os';
import { action, parseIntOption } from '../../cli/action.js';
import { fills } from '../../cli/api-words.js';
import { formatAge, formatRemaining, shortId } from '../../lib/human.js';
import { APPROVAL, resolveId, TASK } from '../../cli/ids.js';
import { UsageError } from '../../cli/context.js';
import { emit, keyValues, nextPageHint, style, table } from '../../cli/output.js';
import { check, defined } from '../../cli/validate.js';
import { seg, type SvcClient } from '../../client/client.js';
import type { Task } from '../tasks/schema.js';
import type { Approval } from './schema.js';
import { APPROVAL_KINDS, APPROVAL_STATUSES, MAX_TIMEOUT_SECONDS } from './values.js';
import { systemClock } from '../../lib/clock.js';

/** The API's schemas, loaded when an option needs checking (they bring zod). */
const schemas = () => import('./schema.js');

const path = (id: string) => `/api/v1/approvals/${seg(id)}`;

export { formatAge, formatRemaining } from '../../lib/human.js';

function timeoutCell(a: Approval, now: number): string | null {
  if (a.timedOut) return 'timed out';
  if (a.status !== 'pending' || a.expiresAt === null) return null;
  const left = formatRemaining(Date.parse(a.expiresAt) - now);
  return left === 'now' ? `${a.timeoutAction} due now` : `${a.timeoutAction} in ${left}`;
}

/** The table, with pending rows (the ones waiting on a person) highlighted on a TTY. */
export function approvalTable(approvals: Approval[], now: number = systemClock.now()): string {
  const text = table(
    approvals,
    [
      { header: 'ID', value: (a) => shortId(a.id) },
      { header: 'STATUS', value: (a) => a.status },
      { header: 'AGE', value: (a) => formatAge(now - Date.parse(a.createdAt)) },
      { header: 'TASK', value: (a) => shortId(a.taskId) },
      { header: 'REQUESTED BY', value: (a) => a.requestedBy },
      { header: 'TIMEOUT', value: (a) => timeoutCell(a, now) },
      { header: 'TITLE', value: (a) => a.title, flex: true },
    ],
    'no approval requests',
  );
  if (!approvals.length) return text;
  // Colour whole lines after layout, so escape codes never count towards column widths.
  const lines = text.split('\n');
  approvals.forEach((a, i) => {
    if (a.status === 'pending') lines[i + 1] = style.yellow(lines[i + 1]!);
  });
  return lines.join('\n');
}

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

/** A duration for people, in whole seconds: "90" or "90s", "15m", "1h", "1h30m", "2d". */
export function parseDuration(text: string): number {
  const parts = /^(?:\d+[smhd]?)+$/.test(text) ? [...text.matchAll(/(\d+)([smhd]?)/g)] : [];
  // A bare number is seconds, and only alone: "1h30" is more likely a typo than 1h 30s.
  if (!parts.length || (parts.length > 1 && parts.some((p) => !p[2]))) {
    throw new InvalidArgumentError(`"${text}" is not a duration; use e.g. 90s, 15m, 1h, 1h30m or 2d.`);
  }
  const seconds = parts.reduce((sum, p) => sum + Number(p[1]) * UNIT_SECONDS[p[2] || 's']!, 0);
  if (seconds < 1 || seconds > MAX_TIMEOUT_SECONDS) throw new InvalidArgumentError(`the timeout must be between 1s and ${MAX_TIMEOUT_SECONDS / 86400}d.`);
  return seconds;
}

const show = (a: Approval) => keyValues({ ...a, payload: a.payload === null ? null : JSON.stringify(a.payload) });

/** "; task abc12345 is now assigned": where the decision left the gated task; a permission: what the run may do. */
async function taskAfter(client: SvcClient, a: Approval): Promise<string> {
  if (a.kind === 'permission') {
    const run = a.runId ? `run ${shortId(a.runId)}` : 'the run';
    if (a.status === 'rejected') return `; ${run} is refused ${a.tool}`;
    return `; ${run} goes on with ${a.tool}${a.alwaysAllowed ? `, and ${a.agent} may use ${a.alwaysAllowed} from now on (allowedTools)` : ''}`;
  }
  if (!a.taskId) return '';
  try {
    const t = await client.get<Task>(`/api/v1/tasks/${seg(a.taskId)}`);
    return `; task ${shortId(t.id)} is now ${t.status}`;
  } catch {
    // The task may be gone since: the decision still stands.
    return `; task ${shortId(a.taskId)}`;
  }
}

/** Who decides, when --by is not given: the person at the keyboard. */
function defaultResolver(): string | undefined {
  try {
    return userInfo().username || undefined;
  } catch {
    return undefined;
  }
}

export function approvalsCommand(): Command {
  const cmd = new Command('approvals').description('Human decisions that gate work');

  fills(cmd.command('ls'), { 'query.taskId': '--task', 'query.runId': '--run' })
    .description('List approval requests, newest first (pending ones highlighted, with their age)')
    .addOption(new Option('--status <status>', 'only requests in this status').choices([...APPROVAL_STATUSES]))
    .addOption(new Option('--kind <kind>', "only task gates, or only runs' permission requests").choices([...APPROVAL_KINDS]))
    .option('--task <taskId>', 'only requests for this task')
    .option('--run <runId>', "only this run's permission requests")
    .option('--limit <n>', 'page size (1-200, default 50)', parseIntOption('--limit'))
    .option('--cursor <cursor>', 'page to show (printed after a full page)')
    .action(
      action(async (ctx, o: { status?: string; kind?: string; task?: string; run?: string; limit?: number; cursor?: string }) => {
        const query = { status: o.status, kind: o.kind, taskId: o.task, runId: o.run, limit: o.limit, cursor: o.cursor };
        await check(schemas, 'ApprovalListQuery', defined(query), 'query');
        if (query.taskId) query.taskId = await resolveId(ctx.client, TASK, query.taskId);
        if (query.runId) query.runId = await resolveId(ctx.client, (await import('../runs/command.js')).RUN, query.runId);
        const res = await ctx.client.call<Approval[]>('GET', '/api/v1/approvals', { query });
        emit(ctx.json, res.data, () => approvalTable(res.data));
        nextPageHint('svc approvals ls', res.headers['x-next-cursor']);
      }),
    );

  fills(cmd.command('request <taskId>'), { 'body.requestedBy': '--by', 'body.timeoutSeconds': '--timeout', 'body.timeoutAction': '--on-timeout' })
    .description('Ask a person to decide before a task goes on: the task waits in awaiting_approval until the request is decided')
    .requiredOption('--title <text>', 'what is to be decided')
    .option('--reason <text>', 'why the decision is needed')
    .option('--by <name>', 'who asks (default: your user name)')
    .option('--timeout <duration>', 'decide automatically after this long (90s, 15m, 1h, 2d)', parseDuration)
    .addOption(new Option('--on-timeout <action>', 'what the timeout decides (default reject)').choices(['approve', 'reject']))
    .action(
      action(async (ctx, taskId: string, o: { title: string; reason?: string; by?: string; timeout?: number; onTimeout?: 'approve' | 'reject' }) => {
        if (o.onTimeout !== undefined && o.timeout === undefined) throw new UsageError('--on-timeout needs --timeout: without a timeout nothing is decided automatically.');
        const body = {
          taskId,
          requestedBy: o.by ?? defaultResolver() ?? 'cli',
          title: o.title,
          ...(o.reason !== undefined ? { reason: o.reason } : {}),
          ...(o.timeout !== undefined ? { timeoutSeconds: o.timeout, timeoutAction: o.onTimeout ?? 'reject' } : {}),
        };
        await check(schemas, 'ApprovalIn', body);
        const id = await resolveId(ctx.client, TASK, taskId);
        const a = await ctx.client.post<Approval>('/api/v1/approvals', { ...body, taskId: id });
        const timeout = a.expiresAt ? `; ${a.timeoutAction} automatically in ${formatRemaining(Date.parse(a.expiresAt) - systemClock.now())}` : '';
        emit(ctx.json, a, () => `requested ${shortId(a.id)}; task ${shortId(id)} is now awaiting_approval${timeout}\n`);
      }),
    );

  cmd
    .command('show <id>')
    .description('Show an approval request')
    .action(
      action(async (ctx, id: string) => {
        const a = await ctx.client.get<Approval>(path(await resolveId(ctx.client, APPROVAL, id)));
        emit(ctx.json, a, () => show(a));
      }),
    );

  fills(cmd.command('approve <id>'), { 'body.resolvedBy': '--by', 'body.alwaysAllow': '--always' })
    .description("Approve a pending request (its task goes to assigned, or done when it was in review; a run's permission request lets the run use the tool)")
    .option('--note <text>', 'a note kept with the decision')
    .option('--by <name>', 'who decides (default: your user name)')
    .option('--always', "a permission request: also add its tool to the agent's allowedTools, so it is not asked again")
    .action(
      action(async (ctx, id: string, o: { note?: string; by?: string; always?: boolean }) => {
        const by = o.by ?? defaultResolver();
        const body = { ...(o.note !== undefined ? { note: o.note } : {}), ...(by ? { resolvedBy: by } : {}), ...(o.always ? { alwaysAllow: true } : {}) };
        await check(schemas, 'ApproveIn', body);
        const a = await ctx.client.post<Approval>(`${path(await resolveId(ctx.client, APPROVAL, id))}/approve`, body);
        const after = ctx.json ? '' : await taskAfter(ctx.client, a);
        emit(ctx.json, a, () => `approved ${shortId(a.id)}${after}\n`);
      }),
    );

  fills(cmd.command('reject <id>'), { 'body.resolvedBy': '--by' })
    .description(
      "Reject a pending request; the feedback is appended to its task, which goes back to pending (a run's permission request: the run is refused the tool, with the feedback as the reason)",
    )
    .requiredOption('--feedback <text>', 'what to change (a permission request: why not, for the agent)')
    .option('--by <name>', 'who decides (default: your user name)')
    .action(
      action(async (ctx, id: string, o: { feedback: string; by?: string }) => {
        const by = o.by ?? defaultResolver();
        const body = { feedback: o.feedback, ...(by ? { resolvedBy: by } : {}) };
        await check(schemas, 'RejectIn', body);
        const a = await ctx.client.post<Approval>(`${path(await resolveId(ctx.client, APPROVAL, id))}/reject`, body);
        const after = ctx.json ? '' : await taskAfter(ctx.client, a);
        emit(ctx.json, a, () => `rejected ${shortId(a.id)}${after}\n`);
      }),
    );

  return cmd;
}
