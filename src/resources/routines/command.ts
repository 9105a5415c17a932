import { Command, Option } from 'commander';
import { action, collect, parseIntOption } from '../../cli/action.js';
import { fills } from '../../cli/api-words.js';
import { confirm } from '../../cli/confirm.js';
import { UsageError, type CliContext } from '../../cli/context.js';
import { readDataFile } from '../../cli/data-file.js';
import { relativeTime, shortId } from '../../lib/human.js';
import { emit, keyValues, nextPageHint, style, table } from '../../cli/output.js';
import { check, defined } from '../../cli/validate.js';
import { seg } from '../../client/client.js';
import type { Playbook } from '../playbooks/schema.js';
import type { Firing, Routine } from './schema.js';
import { CATCH_UP, CONCURRENCY } from './values.js';
import { actionText, whenText } from './words.js';
import { systemClock } from '../../lib/clock.js';

export { actionText, whenText };

/** The API's schemas, loaded when there is something to check (they bring zod and croner). */
const schemas = () => import('./schema.js');

type RoutineDetail = Routine & { nextFireTimes: string[] };

const path = (name: string) => `/api/v1/routines/${seg(name)}`;

const paintStatus = (s: Firing['status']) => (s === 'fired' ? style.green(s) : s === 'failed' ? style.red(s) : s === 'queued' ? style.cyan(s) : style.yellow(s));

const lastText = (f: Firing | undefined, now: number) => (f ? `${paintStatus(f.status)} ${relativeTime(f.firedAt, now)}` : null);

export function routineTable(rows: Routine[], now: number = systemClock.now()): string {
  return table(
    rows,
    [
      { header: 'NAME', value: (r) => r.name },
      { header: 'STATE', value: (r) => (r.enabled ? 'enabled' : style.dim('disabled')) },
      { header: 'WHEN', value: (r) => whenText(r) },
      { header: 'NEXT', value: (r) => relativeTime(r.nextFireAt, now) },
      { header: 'LAST', value: (r) => lastText(r.lastFirings[0], now) },
      { header: 'ACTION', value: (r) => actionText(r.action), flex: true },
    ],
    'no routines; add one with `svc routines add <name> --cron "0 9 * * MON" --task "..."`',
  );
}

const created = (f: Firing) => [...(f.created.missionId ? [`mission ${shortId(f.created.missionId)}`] : []), ...f.created.taskIds.map((t) => `task ${shortId(t)}`)].join(', ');

export function firingTable(rows: Firing[], now: number = systemClock.now()): string {
  return table(
    rows,
    [
      { header: 'ID', value: (f) => shortId(f.id) },
      { header: 'WHEN', value: (f) => relativeTime(f.firedAt, now) },
      { header: 'WHY', value: (f) => (f.reason === 'event' ? `event ${f.eventName} #${f.eventId}` : f.reason === 'manual' ? 'by hand' : `${f.reason} ${f.scheduledAt}`) },
      { header: 'STATUS', value: (f) => paintStatus(f.status) },
      { header: 'CREATED / DETAIL', value: (f) => created(f) || f.detail, flex: true },
    ],
    'no firings yet',
  );
}

/** A time in the routine's zone, for people: "Mon 2030-01-07 09:00 Europe/Paris (08:00Z), in 3d". */
export function timeLine(iso: string, timezone: string, now: number = systemClock.now()): string {
  const local = new Intl.DateTimeFormat('en-GB', { timeZone: timezone, weekday: 'short', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })
    .formatToParts(new Date(iso))
    .reduce<Record<string, string>>((o, p) => ((o[p.type] = p.value), o), {});
  return `${local.weekday} ${local.year}-${local.month}-${local.day} ${local.hour}:${local.minute} ${timezone} (${iso.slice(11, 16)}Z), ${relativeTime(iso, now)}`;
}

function showRoutine(r: RoutineDetail): string {
  const { lastFirings, nextFireTimes, schedule, trigger, action: act, ...fields } = r;
  const head = keyValues({ ...fields, when: whenText(r), action: JSON.stringify(act) });
  const next = nextFireTimes.length ? `\nnext firings:\n${nextFireTimes.map((t) => `  ${timeLine(t, schedule?.timezone ?? 'UTC')}`).join('\n')}\n` : '';
  return `${head}${next}\nlast firings:\n${firingTable(lastFirings)}`;
}

/** key=value → a filter condition; the value as JSON when it reads as JSON (3, true, null, ["a","b"]), else text. */
export function parseWhere(pairs: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`--where ${pair}: expected field=value`);
    const raw = pair.slice(eq + 1);
    let v: unknown = raw;
    try {
      v = JSON.parse(raw);
    } catch {
      // plain text
    }
    out[pair.slice(0, eq)] = v;
  }
  return out;
}

interface SourceOptions {
  cron?: string;
  tz?: string;
  on?: string;
  where?: string[];
}
interface ActionOptions {
  task?: string;
  description?: string;
  assign?: string;
  label?: string[];
  playbook?: string;
  param?: string[];
  mission?: string;
  start?: boolean;
}
interface CommonOptions {
  concurrency?: string;
  catchUp?: string;
  maxPerMinute?: number;
  about?: string;
}

function sourceOf(o: SourceOptions): { schedule?: unknown; trigger?: unknown } {
  if (o.cron !== undefined && o.on !== undefined) throw new UsageError('give either --cron or --on, not both');
  if (o.tz !== undefined && o.cron === undefined) throw new UsageError('--tz goes with --cron');
  if (o.where?.length && o.on === undefined) throw new UsageError('--where goes with --on');
  if (o.cron !== undefined) return { schedule: { cron: o.cron, timezone: o.tz ?? 'UTC' } };
  if (o.on !== undefined) return { trigger: { event: o.on, ...(o.where?.length ? { filter: parseWhere(o.where) } : {}) } };
  return {};
}

async function actionOf(ctx: CliContext, o: ActionOptions): Promise<Record<string, unknown> | undefined> {
  const given = [o.task, o.playbook, o.mission].filter((x) => x !== undefined).length;
  if (given > 1) throw new UsageError('give one of --task, --playbook or --mission');
  if (o.task !== undefined) {
    return { task: defined({ title: o.task, description: o.description, assignTo: o.assign, labels: o.label }) };
  }
  if (o.description !== undefined || o.assign !== undefined || o.label !== undefined) throw new UsageError('--description, --assign and --label go with --task');
  if (o.playbook !== undefined) {
    const { parseParams } = await import('../playbooks/command.js');
    const p = await ctx.client.get<Playbook>(`/api/v1/playbooks/${seg(o.playbook)}`);
    return { playbook: o.playbook, params: parseParams(o.param ?? [], p.parameters), ...(o.start === false ? { start: false } : {}) };
  }
  if (o.param !== undefined) throw new UsageError('--param goes with --playbook');
  if (o.mission !== undefined) {
    const mission = await readDataFile(o.mission);
    if (!mission || typeof mission !== 'object' || Array.isArray(mission)) throw new UsageError(`${o.mission} must hold a mission object`);
    return { mission, ...(o.start === false ? { start: false } : {}) };
  }
  return undefined;
}

const commonOf = (o: CommonOptions) => defined({ description: o.about, concurrency: o.concurrency, catchUp: o.catchUp, maxFiringsPerMinute: o.maxPerMinute });

/** The options add and edit share. */
function withOptions(c: Command): Command {
  return c
    .option('--cron <expr>', 'fire on this schedule: 5 fields (minute hour day-of-month month day-of-week) or @daily, @weekly…')
    .option('--tz <zone>', 'the time zone the schedule is read in (IANA name; default UTC)')
    .option('--on <events>', 'fire on these events instead: names or prefixes (task:transition, run:, mission:completed,mission:failed)')
    .option('--where <field=value>', 'only events whose data field has this value (repeatable; JSON values: 3, true, ["a","b"], {"gte":2})', collect)
    .option('--task <title>', 'create a task (title may hold {{firing.date}}, {{event.data.taskId}}…)')
    .option('--description <text>', "the task's description")
    .option('--assign <agent>', 'assign the task to this agent')
    .option('--label <label>', 'label the task (repeatable)', collect)
    .option('--playbook <name>', 'run this playbook')
    .option('-p, --param <key=value>', 'a playbook parameter (repeatable; values may be templates)', collect)
    .option('--mission <file>', 'create the mission in this JSON or YAML file')
    .option('--no-start', "leave the playbook's or mission's mission in draft")
    .addOption(new Option('--concurrency <mode>', "while the previous firing's work is open: skip (default), queue, allow").choices([...CONCURRENCY]))
    .addOption(new Option('--catch-up <mode>', 'schedule times missed while no daemon ran: none (default), one').choices([...CATCH_UP]))
    .option('--max-per-minute <n>', "a trigger storm's bound (default 60)", parseIntOption('--max-per-minute'))
    .option('-d, --about <text>', "the routine's description");
}

const FIELDS = {
  'body.schedule.cron': '--cron',
  'body.schedule.timezone': '--tz',
  'body.trigger.event': '--on',
  'body.trigger.filter': '--where',
  'body.action.task.title': '--task',
  'body.action.task.assignTo': '--assign',
  'body.action.task.labels': '--label',
  'body.action.playbook': '--playbook',
  'body.action.params': '--param',
  'body.action.mission': '--mission',
  'body.description': '--about',
  'body.maxFiringsPerMinute': '--max-per-minute',
};

function printTimes(r: RoutineDetail): string {
  if (!r.enabled) return ' (disabled: it does not fire until enabled)';
  if (r.trigger) return `; it fires on ${r.trigger.event}`;
  if (!r.nextFireTimes.length) return '; its schedule has no future time';
  return `; next firings:\n${r.nextFireTimes.map((t) => `  ${timeLine(t, r.schedule!.timezone)}`).join('\n')}`;
}

export function routinesCommand(): Command {
  const cmd = new Command('routines').description('Work that starts by itself: on a cron schedule or when an event happens');

  cmd
    .command('ls')
    .description('List routines: when each fires, the next time, the last firing')
    .action(
      action(async (ctx) => {
        const rows = await ctx.client.get<Routine[]>('/api/v1/routines');
        emit(ctx.json, rows, () => routineTable(rows));
      }),
    );

  fills(withOptions(cmd.command('add <name>')), { ...FIELDS, body: '--file' })
    .description('Create a routine and print its next five firing times (or --file with the whole body, JSON or YAML)')
    .option('--file <file>', 'the routine as a JSON or YAML file (the options above are then not used)')
    .option('--disabled', 'create it disabled')
    .action(
      action(async (ctx, name: string, o: SourceOptions & ActionOptions & CommonOptions & { file?: string; disabled?: boolean }) => {
        let body: Record<string, unknown>;
        if (o.file !== undefined) {
          const file = await readDataFile(o.file);
          if (!file || typeof file !== 'object' || Array.isArray(file)) throw new UsageError(`${o.file} must hold an object`);
          body = { ...(file as Record<string, unknown>), name };
        } else {
          const act = await actionOf(ctx, o);
          if (!act) throw new UsageError('say what it does: --task <title>, --playbook <name> or --mission <file>');
          body = { name, ...(o.disabled ? { enabled: false } : {}), ...sourceOf(o), action: act, ...commonOf(o) };
          if (!body.schedule && !body.trigger) throw new UsageError('say when it fires: --cron <expr> or --on <events>');
        }
        await check(schemas, 'RoutineIn', body);
        const r = await ctx.client.post<RoutineDetail>('/api/v1/routines', body);
        emit(ctx.json, r, () => `created routine ${r.name}${printTimes(r)}\n`);
      }),
    );

  cmd
    .command('show <name>')
    .description('Show a routine: what it does, its next firing times, its last firings')
    .action(
      action(async (ctx, name: string) => {
        const r = await ctx.client.get<RoutineDetail>(path(name));
        emit(ctx.json, r, () => showRoutine(r));
      }),
    );

  fills(withOptions(cmd.command('edit <name>')), FIELDS)
    .description('Change a routine: the options given replace what it had')
    .option('--enable', 'enable it')
    .option('--disable', 'disable it (it fires again once enabled, from then on)')
    .action(
      action(async (ctx, name: string, o: SourceOptions & ActionOptions & CommonOptions & { enable?: boolean; disable?: boolean }) => {
        if (o.enable && o.disable) throw new UsageError('give --enable or --disable, not both');
        const src = sourceOf(o);
        const act = await actionOf(ctx, o);
        const body = {
          ...(src.schedule ? { schedule: src.schedule, trigger: null } : {}),
          ...(src.trigger ? { trigger: src.trigger, schedule: null } : {}),
          ...(act ? { action: act } : {}),
          ...commonOf(o),
          ...(o.enable ? { enabled: true } : o.disable ? { enabled: false } : {}),
        };
        if (!Object.keys(body).length) throw new UsageError('nothing to change; see `svc routines edit --help`');
        await check(schemas, 'RoutinePatch', body);
        const r = await ctx.client.patch<RoutineDetail>(path(name), body);
        emit(ctx.json, r, () => `changed routine ${r.name}${printTimes(r)}\n`);
      }),
    );

  cmd
    .command('rm <name>')
    .description('Delete a routine and its firing history (what it created stays)')
    .option('-y, --yes', 'do not ask for confirmation')
    .action(
      action(async (ctx, name: string) => {
        await confirm(`delete routine ${name}?`, ctx.yes, `svc routines rm ${name}`);
        const r = await ctx.client.delete<{ removed: true }>(path(name));
        emit(ctx.json, r, () => `removed routine ${name}\n`);
      }),
    );

  cmd
    .command('fire <name>')
    .description('Fire a routine now, by hand (its concurrency still applies)')
    .action(
      action(async (ctx, name: string) => {
        const f = await ctx.client.post<Firing>(`${path(name)}/fire`, {});
        emit(ctx.json, f, () => `${f.status} ${name} (firing ${shortId(f.id)})${created(f) ? `: created ${created(f)}` : f.detail ? `: ${f.detail}` : ''}\n`);
      }),
    );

  cmd
    .command('history <name>')
    .description("A routine's firings, newest first: when, why, what each created or why it was skipped")
    .option('--limit <n>', 'page size (1-200, default 50)', parseIntOption('--limit'))
    .option('--cursor <cursor>', 'page to show (printed after a full page)')
    .action(
      action(async (ctx, name: string, o: { limit?: number; cursor?: string }) => {
        const query = { limit: o.limit, cursor: o.cursor };
        await check(schemas, 'FiringListQuery', defined(query), 'query');
        const res = await ctx.client.call<Firing[]>('GET', `${path(name)}/firings`, { query });
        emit(ctx.json, res.data, () => firingTable(res.data));
        nextPageHint(`svc routines history ${name}`, res.headers['x-next-cursor']);
      }),
    );

  return cmd;
}
