import { Command, InvalidArgumentError, Option } from 'commander';
import { userInfo } from 'node:os';
import { action, parseIntOption } from '../../cli/action.js';
import { UsageError } from '../../cli/context.js';
import { emit, keyValues, style, table } from '../../cli/output.js';
import { seg } from '../../client/client.js';
import { APPROVAL_STATUSES, MAX_TIMEOUT_SECONDS, type Approval } from './schema.js';

const path = (id: string) => `/api/v1/approvals/${seg(id)}`;

/** A short age for people: 45s, 3m, 2h, 5d. */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 48 * 3600) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

/**
 * Time left until a deadline, rounded up (599 s is "10m", not "9m": never promise less time than
 * is left); "now" once it has passed (the timer decides an overdue request within moments).
 */
export function formatRemaining(ms: number): string {
  const s = Math.ceil(ms / 1000);
  if (s <= 0) return 'now';
  if (s < 60) return `${s}s`;
  const m = Math.ceil(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.ceil(s / 3600);
  if (h < 48) return `${h}h`;
  return `${Math.ceil(s / 86400)}d`;
}

function timeoutCell(a: Approval, now: number): string | null {
  if (a.timedOut) return 'timed out';
  if (a.status !== 'pending' || a.expiresAt === null) return null;
  const left = formatRemaining(Date.parse(a.expiresAt) - now);
  return left === 'now' ? `${a.timeoutAction} due now` : `${a.timeoutAction} in ${left}`;
}

/** The table, with pending rows (the ones waiting on a person) highlighted on a TTY. */
export function approvalTable(approvals: Approval[], now: number = Date.now()): string {
  const text = table(
    approvals,
    [
      { header: 'ID', value: (a) => a.id },
      { header: 'STATUS', value: (a) => a.status },
      { header: 'AGE', value: (a) => formatAge(now - Date.parse(a.createdAt)) },
      { header: 'TASK', value: (a) => a.taskId },
      { header: 'REQUESTED BY', value: (a) => a.requestedBy },
      { header: 'TIMEOUT', value: (a) => timeoutCell(a, now) },
      { header: 'TITLE', value: (a) => a.title },
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

  cmd
    .command('ls')
    .description('List approval requests, newest first (pending ones highlighted, with their age)')
    .addOption(new Option('--status <status>', 'only requests in this status').choices([...APPROVAL_STATUSES]))
    .option('--task <taskId>', 'only requests for this task')
    .option('--limit <n>', 'page size (1-200, default 50)', parseIntOption('--limit'))
    .option('--cursor <cursor>', 'page to show (printed after a full page)')
    .action(
      action(async (ctx, o: { status?: string; task?: string; limit?: number; cursor?: string }) => {
        const res = await ctx.client.call<Approval[]>('GET', '/api/v1/approvals', {
          query: { status: o.status, taskId: o.task, limit: o.limit, cursor: o.cursor },
        });
        emit(ctx.json, res.data, () => approvalTable(res.data));
        const next = res.headers['x-next-cursor'];
        if (typeof next === 'string') process.stderr.write(style.dim(`more: svc approvals ls --cursor ${next}\n`));
      }),
    );

  cmd
    .command('request <taskId>')
    .description('Ask a person to decide before a task goes on: the task waits in awaiting_approval until the request is decided')
    .requiredOption('--title <text>', 'what is to be decided')
    .option('--reason <text>', 'why the decision is needed')
    .option('--by <name>', 'who asks (default: your user name)')
    .option('--timeout <duration>', 'decide automatically after this long (90s, 15m, 1h, 2d)', parseDuration)
    .addOption(new Option('--on-timeout <action>', 'what the timeout decides (default reject)').choices(['approve', 'reject']))
    .action(
      action(async (ctx, taskId: string, o: { title: string; reason?: string; by?: string; timeout?: number; onTimeout?: 'approve' | 'reject' }) => {
        if (o.onTimeout !== undefined && o.timeout === undefined) throw new UsageError('--on-timeout needs --timeout: without a timeout nothing is decided automatically.');
        const a = await ctx.client.post<Approval>('/api/v1/approvals', {
          taskId,
          requestedBy: o.by ?? defaultResolver() ?? 'cli',
          title: o.title,
          ...(o.reason !== undefined ? { reason: o.reason } : {}),
          ...(o.timeout !== undefined ? { timeoutSeconds: o.timeout, timeoutAction: o.onTimeout ?? 'reject' } : {}),
        });
        const timeout = a.expiresAt ? `; ${a.timeoutAction} automatically in ${formatRemaining(Date.parse(a.expiresAt) - Date.now())}` : '';
        emit(ctx.json, a, () => `requested ${a.id}: task ${taskId} is awaiting approval${timeout}\n`);
      }),
    );

  cmd
    .command('show <id>')
    .description('Show an approval request')
    .action(
      action(async (ctx, id: string) => {
        const a = await ctx.client.get<Approval>(path(id));
        emit(ctx.json, a, () => show(a));
      }),
    );

  cmd
    .command('approve <id>')
    .description('Approve a pending request (its task goes to assigned, or done when it was in review)')
    .option('--note <text>', 'a note kept with the decision')
    .option('--by <name>', 'who decides (default: your user name)')
    .action(
      action(async (ctx, id: string, o: { note?: string; by?: string }) => {
        const by = o.by ?? defaultResolver();
        const a = await ctx.client.post<Approval>(`${path(id)}/approve`, { ...(o.note !== undefined ? { note: o.note } : {}), ...(by ? { resolvedBy: by } : {}) });
        emit(ctx.json, a, () => `approved ${a.id}${a.taskId ? ` (task ${a.taskId})` : ''}\n`);
      }),
    );

  cmd
    .command('reject <id>')
    .description('Reject a pending request; the feedback is appended to its task, which goes back to pending')
    .requiredOption('--feedback <text>', 'what to change')
    .option('--by <name>', 'who decides (default: your user name)')
    .action(
      action(async (ctx, id: string, o: { feedback: string; by?: string }) => {
        const by = o.by ?? defaultResolver();
        const a = await ctx.client.post<Approval>(`${path(id)}/reject`, { feedback: o.feedback, ...(by ? { resolvedBy: by } : {}) });
        emit(ctx.json, a, () => `rejected ${a.id}${a.taskId ? ` (task ${a.taskId} is pending again)` : ''}\n`);
      }),
    );

  return cmd;
}
