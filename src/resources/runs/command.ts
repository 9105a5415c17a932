import { Command, Option } from 'commander';
import { action, parseIntOption } from '../../cli/action.js';
import { fills } from '../../cli/api-words.js';
import { confirm } from '../../cli/confirm.js';
import type { CliContext } from '../../cli/context.js';
import { formatDuration, formatTokens, relativeTime, shortId } from '../../lib/human.js';
import { resolveId, type IdKind } from '../../cli/ids.js';
import { io } from '../../cli/io.js';
import { emit, keyValues, nextPageHint, out, style, table } from '../../cli/output.js';
import { check, defined } from '../../cli/validate.js';
import { seg } from '../../client/client.js';
import { streamEvents } from '../../client/sse.js';
import { holdWords } from './hold-words.js';
import { formatLogItem, type LogLineItem } from './log-lines.js';
import type { Hold, Run } from './schema.js';
import { systemClock } from '../../lib/clock.js';

/** The API's schemas, loaded when an option needs checking (they bring zod). */
const schemas = () => import('./schema.js');

export const RUN: IdKind = { noun: 'run', list: '/api/v1/runs', label: (r) => `${String(r.agent)} ${String(r.status)}` };
const path = (id: string) => `/api/v1/runs/${seg(id)}`;
const STATUSES = ['queued', 'starting', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out', 'lost', 'paused'];
const LIVE = new Set(['queued', 'starting', 'running', 'paused']);

const tokens = (r: Run) => (r.usage.inputTokens || r.usage.outputTokens ? `${r.usage.inputTokens + r.usage.cacheReadTokens}/${r.usage.outputTokens}` : null);
const cost = (usd: number | null) => (usd === null ? null : `$${usd.toFixed(usd < 1 ? 4 : 2)}`);
const took = (r: Run, now: number) => (r.startedAt ? formatDuration((r.finishedAt ? Date.parse(r.finishedAt) : now) - Date.parse(r.startedAt)) : null);

/** What a waiting run waits for, in a few words ("anthropic's usage limit, resets in 2h"). */
export const holdText = (h: Hold | null, now = systemClock.now()): string | null => holdWords(h, (iso) => relativeTime(iso, now) ?? iso);

const statusCell = (s: string) => (s === 'succeeded' ? style.green(s) : s === 'failed' || s === 'timed_out' || s === 'lost' ? style.red(s) : LIVE.has(s) ? style.yellow(s) : s);

export const runTable = (runs: Run[], now = systemClock.now()) =>
  table(
    runs,
    [
      { header: 'ID', value: (r) => shortId(r.id) },
      { header: 'STATUS', value: (r) => statusCell(r.status) },
      { header: 'TASK', value: (r) => shortId(r.taskId) },
      { header: 'AGENT', value: (r) => r.agent },
      { header: 'TRY', value: (r) => r.attempt },
      { header: 'STARTED', value: (r) => relativeTime(r.startedAt ?? r.createdAt, now) },
      { header: 'TOOK', value: (r) => took(r, now) },
      { header: 'TOKENS', value: tokens },
      { header: 'COST', value: (r) => cost(r.usage.costUsd) },
      { header: 'RESULT', value: (r) => (r.waitingFor ? `waits: ${holdText(r.waitingFor, now)}` : (r.error ?? r.summary ?? r.branch)), flex: true },
    ],
    'no runs; a task assigned to an agent with a runtime starts one (docs/runs.md)',
  );

const show = (r: Run) =>
  keyValues({
    ...r,
    waitingFor: holdText(r.waitingFor),
    usage: `${r.usage.inputTokens} in (+${r.usage.cacheReadTokens} cached, ${r.usage.cacheWriteTokens} written), ${r.usage.outputTokens} out${r.usage.costUsd === null ? '' : `, ${cost(r.usage.costUsd)}`}`,
    diffStat: r.diffStat ? `${r.diffStat.files} files +${r.diffStat.added} −${r.diffStat.removed}` : null,
    createdAt: `${r.createdAt} (${relativeTime(r.createdAt)})`,
  });

/** Colours a unified diff on a terminal: additions green, removals red, hunk headers cyan. */
export function paintDiff(patch: string): string {
  return patch
    .split('\n')
    .map((l) => (l.startsWith('+++') || l.startsWith('---') ? style.bold(l) : l.startsWith('+') ? style.green(l) : l.startsWith('-') ? style.red(l) : l.startsWith('@@') ? style.cyan(l) : l))
    .join('\n');
}

const LOG_PAGE = 1000;

/**
 * Prints a run's log; with follow, keeps printing as the run goes (run:activity events, opened
 * before the log is read so that nothing falls between) until it ends.
 */
async function printLog(ctx: CliContext, runId: string, o: { follow?: boolean; after?: number }): Promise<void> {
  const width = io().columns;
  let last = o.after ?? 0;
  const print = (item: LogLineItem) => {
    if (item.seq <= last) return;
    last = item.seq;
    if (ctx.json) out(JSON.stringify(item) + '\n');
    else out(formatLogItem(item, width) + '\n');
  };
  const readAll = async () => {
    for (;;) {
      const page = await ctx.client.call<LogLineItem[]>('GET', `${path(runId)}/log`, { query: { after: last, limit: LOG_PAGE } });
      page.data.forEach(print);
      if (page.data.length < LOG_PAGE) return;
    }
  };
  if (!o.follow) return readAll();
  const abort = new AbortController();
  const stop = () => abort.abort();
  process.once('SIGINT', stop);
  let opened!: () => void;
  const open = new Promise<void>((r) => (opened = r));
  const stream = streamEvents(
    ctx.client,
    (m) => {
      const data = JSON.parse(m.data) as { runId?: string; items?: LogLineItem[]; fromSeq?: number };
      if (data.runId !== runId) return;
      if (m.event === 'run:finished') abort.abort();
      // Event items are cut to 2 KiB, and a gap means the log has what came between: read it there.
      else if (data.items && (data.fromSeq ?? 0) <= last + 1) for (const it of data.items) print({ ...it, at: '' });
      else void readAll();
    },
    { filter: 'run:activity,run:finished', signal: abort.signal, onOpen: opened },
  ).finally(opened);
  await open;
  // Everything written before the stream opened is in the log; everything after comes as events.
  await readAll();
  const run = await ctx.client.get<Run>(path(runId));
  if (!LIVE.has(run.status)) abort.abort();
  await stream;
  process.off('SIGINT', stop);
  await readAll();
  const final = await ctx.client.get<Run>(path(runId));
  if (!ctx.json) out(style.dim(`run ${shortId(runId)} ${final.status}${final.error ? `: ${final.error}` : ''}\n`));
}

/** Follows one run's log until it ends (svc tasks run -f). */
export const followRun = (ctx: CliContext, runId: string) => printLog(ctx, runId, { follow: true });

export function runsCommand(): Command {
  const cmd = new Command('runs').description("Runs of agents' CLIs on tasks: list, follow, review and cancel them");

  fills(cmd.command('ls'), { 'query.taskId': '--task' })
    .description('List runs, newest first')
    .option('--task <taskId>', 'only runs of this task')
    .option('--agent <agent>', 'only runs of this agent')
    .addOption(new Option('--status <status>', 'only runs in this state').choices(STATUSES))
    .option('--limit <n>', 'page size (1-200, default 50)', parseIntOption('--limit'))
    .option('--cursor <cursor>', 'page to show (printed after a full page)')
    .action(
      action(async (ctx, o: { task?: string; agent?: string; status?: string; limit?: number; cursor?: string }) => {
        const query = { taskId: o.task, agent: o.agent, status: o.status, limit: o.limit, cursor: o.cursor };
        await check(schemas, 'RunListQuery', defined(query), 'query');
        if (query.taskId) query.taskId = await resolveId(ctx.client, { noun: 'task', list: '/api/v1/tasks' }, query.taskId);
        const res = await ctx.client.call<Run[]>('GET', '/api/v1/runs', { query });
        emit(ctx.json, res.data, () => runTable(res.data));
        nextPageHint('svc runs ls', res.headers['x-next-cursor']);
      }),
    );

  cmd
    .command('show <id>')
    .description('Show a run')
    .action(
      action(async (ctx, id: string) => {
        const run = await ctx.client.get<Run>(path(await resolveId(ctx.client, RUN, id)));
        emit(ctx.json, run, () => show(run));
      }),
    );

  cmd
    .command('logs <id>')
    .description("Print a run's log as readable lines (-f: follow it live until it ends)")
    .option('-f, --follow', 'keep printing until the run ends')
    .option('--after <seq>', 'only items after this one', parseIntOption('--after'))
    .action(action(async (ctx, id: string, o: { follow?: boolean; after?: number }) => printLog(ctx, await resolveId(ctx.client, RUN, id), o)));

  cmd
    .command('diff <id>')
    .description("Print a run's work as a unified diff")
    .action(
      action(async (ctx, id: string) => {
        const d = await ctx.client.get<{ patch: string; truncated: boolean; branch: string | null; headCommit: string | null; diffStat: Run['diffStat'] }>(
          `${path(await resolveId(ctx.client, RUN, id))}/diff`,
        );
        emit(ctx.json, d, () => {
          if (!d.patch) return style.dim(d.headCommit ? '(the commit changed nothing)\n' : '(no commit: the run changed nothing, or did not succeed)\n');
          const head = style.dim(`${d.branch ?? ''} ${d.diffStat ? `${d.diffStat.files} files +${d.diffStat.added} −${d.diffStat.removed}` : ''}`.trim());
          return `${head}\n${paintDiff(d.patch)}${d.patch.endsWith('\n') ? '' : '\n'}${d.truncated ? style.dim('(cut at 1 MiB: see the branch for the rest)\n') : ''}`;
        });
      }),
    );

  cmd
    .command('cancel <id>')
    .description("Cancel a run: its CLI's process group gets SIGTERM, then SIGKILL after 10 s; the task waits, assigned")
    .option('-y, --yes', 'do not ask for confirmation')
    .action(
      action(async (ctx, id: string) => {
        const full = await resolveId(ctx.client, RUN, id);
        const run = await ctx.client.get<Run>(path(full));
        await confirm(`cancel run ${shortId(full)} of ${run.agent} on task ${shortId(run.taskId)} (${run.status})?`, ctx.yes, `svc runs cancel ${id}`);
        const after = await ctx.client.post<Run>(`${path(full)}/cancel`);
        emit(ctx.json, after, () => `run ${shortId(full)} ${after.status}${LIVE.has(after.status) ? ' (its runner ends it within seconds)' : ''}\n`);
      }),
    );

  cmd
    .command('resume <id>')
    .description("Resume a paused run now (its CLI's session), whatever reset its CLI gave; its provider's pause ends with it")
    .action(
      action(async (ctx, id: string) => {
        const full = await resolveId(ctx.client, RUN, id);
        const run = await ctx.client.post<Run>(`${path(full)}/resume`);
        emit(ctx.json, run, () => `run ${shortId(full)} ${run.status}${run.waitingFor ? `; it waits: ${holdText(run.waitingFor)}` : ': it starts as soon as a slot is free'}\n`);
      }),
    );

  cmd
    .command('queue')
    .description("Per agent: what runs, what waits and why; paused providers; the runner's slots")
    .action(
      action(async (ctx) => {
        type Q = {
          slots: { running: number; capacity: number } | null;
          providers: { provider: string; pausedUntil: string; runsWaiting: number }[];
          agents: { agent: string; provider: string | null; state: string; heldBy: Hold | null; running: { taskId: string }[]; waiting: { status: string; waitingFor: Hold | null }[] }[];
        };
        const q = await ctx.client.get<Q>('/api/v1/runs/queue');
        emit(ctx.json, q, () => {
          const now = systemClock.now();
          const head = [
            ...q.providers.map((p) => style.yellow(`${p.provider} is paused by a usage limit until ${p.pausedUntil} (${relativeTime(p.pausedUntil, now)}): ${p.runsWaiting} run(s) wait\n`)),
            q.slots ? style.dim(`this runner: ${q.slots.running}/${q.slots.capacity} running\n`) : style.dim('this daemon runs no agents (runner.enabled is false)\n'),
          ].join('');
          const why = (a: Q['agents'][number]) => holdText(a.heldBy ?? a.waiting.find((w) => w.waitingFor)?.waitingFor ?? null, now);
          return (
            head +
            table(
              q.agents,
              [
                { header: 'AGENT', value: (a) => a.agent },
                { header: 'PROVIDER', value: (a) => a.provider },
                { header: 'STATE', value: (a) => (a.state === 'running' ? style.green(a.state) : a.state === 'waiting' ? style.yellow(a.state) : style.dim(a.state)) },
                { header: 'RUNNING', value: (a) => a.running.map((r) => shortId(r.taskId)).join(', ') || null },
                { header: 'WAITING', value: (a) => a.waiting.length || null },
                { header: 'WHY', value: why, flex: true },
              ],
              'no agents with a runtime',
            )
          );
        });
      }),
    );

  cmd
    .command('runners')
    .description('The daemons that run agents: runtimes found, capacity, running')
    .action(
      action(async (ctx) => {
        type R = { id: string; host: string; online: boolean; runtimes: { kind: string; version: string | null }[]; capacity: number; running: number; lastSeenAt: string; labels: string[] };
        const rows = await ctx.client.get<R[]>('/api/v1/runners');
        emit(ctx.json, rows, () =>
          table(
            rows,
            [
              { header: 'ID', value: (r) => shortId(r.id) },
              { header: 'HOST', value: (r) => r.host },
              { header: 'ONLINE', value: (r) => (r.online ? 'yes' : 'no') },
              { header: 'RUNNING', value: (r) => `${r.running}/${r.capacity}` },
              { header: 'SEEN', value: (r) => relativeTime(r.lastSeenAt) },
              { header: 'LABELS', value: (r) => r.labels },
              { header: 'RUNTIMES', value: (r) => r.runtimes.map((x) => x.kind + (x.version ? ` ${x.version}` : '')).join(', '), flex: true },
            ],
            'no runners',
          ),
        );
      }),
    );

  return cmd;
}

interface PeriodCell {
  tokens: number;
  costUsd: number | null;
  runs: number;
  limit: { tokens: number | null; costUsd: number | null } | null;
  percent: number | null;
}

/** One period of one scope: tokens, cost, and the budget's share where one is set ("1.2M $0.42 · 84% of $0.50"). */
function periodCell(c: PeriodCell): string {
  const spent = `${formatTokens(c.tokens)}${c.costUsd === null ? '' : ` ${cost(c.costUsd)}`}`;
  if (!c.limit || c.percent === null) return spent;
  const limit = [c.limit.tokens === null ? null : formatTokens(c.limit.tokens), c.limit.costUsd === null ? null : cost(c.limit.costUsd)].filter(Boolean).join(' / ');
  const share = `${c.percent}% of ${limit}`;
  return `${spent} · ${c.percent >= 100 ? style.red(share) : c.percent >= 80 ? style.yellow(share) : share}`;
}

/** `svc usage`: spend per agent today, this week and this month (with budgets); or per agent, task, mission or day (--by). */
export function usageCommand(): Command {
  return new Command('usage')
    .description("Tokens and cost of agents' runs: per agent today, this week and this month, with their budgets; or summed per agent, task, mission or day (--by, --since, --until)")
    .addOption(new Option('--by <group>', 'sum per agent, task, mission or day (instead of the periods)').choices(['agent', 'task', 'mission', 'day']))
    .option('--since <time>', 'runs created at or after this ISO time (e.g. 2026-11-01T00:00:00.000Z)')
    .option('--until <time>', 'runs created before this ISO time')
    .action(
      action(async (ctx, o: { by?: string; since?: string; until?: string }) => {
        if (!o.by && !o.since && !o.until) {
          type P = { timeZone: string; rows: ({ agent: string | null } & Record<'day' | 'week' | 'month', PeriodCell>)[] };
          const p = await ctx.client.get<P>('/api/v1/usage/periods');
          emit(
            ctx.json,
            p,
            () =>
              table(
                p.rows,
                [
                  { header: 'AGENT', value: (r) => r.agent ?? style.bold('(project)') },
                  { header: 'TODAY', value: (r) => periodCell(r.day) },
                  { header: 'THIS WEEK', value: (r) => periodCell(r.week) },
                  { header: 'THIS MONTH', value: (r) => periodCell(r.month) },
                ],
                'no runs yet',
              ) + style.dim(`(periods in ${p.timeZone}; budgets: svc budgets)\n`),
          );
          return;
        }
        const by = o.by ?? 'agent';
        const query = defined({ groupBy: by, since: o.since, until: o.until });
        await check(schemas, 'UsageQuery', query, 'query');
        type U = { key: string | null; runs: number; inputTokens: number; outputTokens: number; cacheReadTokens: number; cacheWriteTokens: number; costUsd: number | null };
        const rows = await ctx.client.call<U[]>('GET', '/api/v1/usage', { query: query as Record<string, string> });
        emit(ctx.json, rows.data, () =>
          table(
            rows.data,
            [
              { header: by.toUpperCase(), value: (r) => (by === 'task' || by === 'mission' ? shortId(r.key) : r.key) },
              { header: 'RUNS', value: (r) => r.runs },
              { header: 'INPUT', value: (r) => r.inputTokens },
              { header: 'CACHED', value: (r) => r.cacheReadTokens },
              { header: 'OUTPUT', value: (r) => r.outputTokens },
              { header: 'COST', value: (r) => cost(r.costUsd) },
            ],
            'no runs yet',
          ),
        );
      }),
    );
}
