import { Command, Option } from 'commander';
import { action, parseIntOption } from '../../cli/action.js';
import { fills } from '../../cli/api-words.js';
import { confirm } from '../../cli/confirm.js';
import { UsageError } from '../../cli/context.js';
import { readDataFile } from '../../cli/data-file.js';
import { relativeTime, shortId } from '../../lib/human.js';
import { MISSION, resolveId } from '../../cli/ids.js';
import { emit, keyValues, nextPageHint, table } from '../../cli/output.js';
import { check, defined } from '../../cli/validate.js';
import { seg } from '../../client/client.js';
import type { Task } from '../tasks/schema.js';
import { TASK_STATES } from '../tasks/state.js';
import type { Mission, MissionDetail, Progress } from './schema.js';
import { MISSION_STATES } from './values.js';

/** The API's schemas, loaded when an option needs checking (they bring zod). */
const schemas = () => import('./schema.js');

const path = (id: string) => `/api/v1/missions/${seg(id)}`;

const done = (p: Progress) => `${p.done}/${p.total}`;

export const missionTable = (missions: Mission[]) =>
  table(
    missions,
    [
      { header: 'ID', value: (m) => shortId(m.id) },
      { header: 'STATUS', value: (m) => m.status },
      { header: 'DONE', value: (m) => done(m.progress) },
      { header: 'DEADLINE', value: (m) => relativeTime(m.deadline) },
      { header: 'UPDATED', value: (m) => relativeTime(m.updatedAt) },
      { header: 'NAME', value: (m) => m.name, flex: true },
    ],
    'no missions; add one with `svc missions add <file.json|file.yaml>`',
  );

/** Only the states that hold tasks, so the line stays short: "pending 2 · done 1 (1/3 done)". */
export function progressLine(p: Progress): string {
  const parts = TASK_STATES.filter((s) => p[s] > 0).map((s) => `${s} ${p[s]}`);
  return `${parts.join(' · ') || 'no tasks'} (${done(p)} done)`;
}

export const taskList = (tasks: Task[]) =>
  table(
    tasks,
    [
      { header: 'ID', value: (t) => shortId(t.id) },
      { header: 'STATUS', value: (t) => t.status },
      { header: 'ASSIGNEE', value: (t) => t.assignTo },
      { header: 'TITLE', value: (t) => t.title, flex: true },
    ],
    'no tasks',
  );

function showMission(m: MissionDetail): string {
  const { tasks, taskIds: _ids, progress, ...fields } = m;
  return keyValues({ ...fields, progress: progressLine(progress) }) + '\n' + taskList(tasks);
}

export function missionsCommand(): Command {
  const cmd = new Command('missions').description('Plans of tasks: create, follow and steer missions');

  cmd
    .command('ls')
    .description('List missions, newest first')
    .addOption(new Option('--status <state>', 'only missions in this state').choices([...MISSION_STATES]))
    .option('--limit <n>', 'page size (1-200, default 50)', parseIntOption('--limit'))
    .option('--cursor <cursor>', 'page to show (printed after a full page)')
    .action(
      action(async (ctx, o: { status?: string; limit?: number; cursor?: string }) => {
        const query = { status: o.status, limit: o.limit, cursor: o.cursor };
        await check(schemas, 'MissionListQuery', defined(query), 'query');
        const res = await ctx.client.call<Mission[]>('GET', '/api/v1/missions', { query });
        emit(ctx.json, res.data, () => missionTable(res.data));
        nextPageHint('svc missions ls', res.headers['x-next-cursor']);
      }),
    );

  fills(cmd.command('add <file>'), { body: '<file>' })
    .description('Create a mission and its tasks from a JSON or YAML file: {name, goal?, deadline?, tasks: [{title, dependsOn: [titles], ...}]}')
    .action(
      action(async (ctx, file: string) => {
        const body = await readDataFile(file);
        // An empty YAML file reads as null: say so here rather than send the API a body it will refuse.
        if (!body || typeof body !== 'object' || Array.isArray(body)) throw new UsageError(`${file} must hold an object`);
        await check(schemas, 'MissionIn', body);
        const m = await ctx.client.post<MissionDetail>('/api/v1/missions', body);
        emit(ctx.json, m, () => `created mission ${shortId(m.id)} (${m.status}) with ${m.tasks.length} tasks; start it with \`svc missions start ${shortId(m.id)}\`\n`);
      }),
    );

  cmd
    .command('show <id>')
    .description('Show a mission, its progress per task state and its tasks')
    .action(
      action(async (ctx, id: string) => {
        const m = await ctx.client.get<MissionDetail>(path(await resolveId(ctx.client, MISSION, id)));
        emit(ctx.json, m, () => showMission(m));
      }),
    );

  for (const [name, description] of [
    ['start', 'Start a draft mission (its tasks become pending)'],
    ['pause', 'Pause an active mission (its tasks cannot start until it resumes)'],
    ['resume', 'Resume a paused mission'],
    ['cancel', 'Cancel a draft, active or paused mission'],
  ] as const) {
    cmd
      .command(`${name} <id>`)
      .description(description)
      .action(
        action(async (ctx, id: string) => {
          const m = await ctx.client.post<Mission>(`${path(await resolveId(ctx.client, MISSION, id))}/${name}`);
          emit(ctx.json, m, () => `mission ${shortId(m.id)} is now ${m.status}: ${progressLine(m.progress)}\n`);
        }),
      );
  }

  cmd
    .command('rm <id>')
    .description('Delete a mission; its tasks stay on the board, detached, unless --cascade')
    .option('--cascade', 'remove its tasks too')
    .option('-y, --yes', 'do not ask for confirmation')
    .action(
      action(async (ctx, id: string, o: { cascade?: boolean }) => {
        const full = await resolveId(ctx.client, MISSION, id);
        const m = await ctx.client.get<MissionDetail>(path(full));
        const what = o.cascade ? ` and its ${m.tasks.length} ${m.tasks.length === 1 ? 'task' : 'tasks'}` : '';
        await confirm(`delete mission ${shortId(full)} "${m.name}"${what}?`, ctx.yes, `svc missions rm ${id}${o.cascade ? ' --cascade' : ''}`);
        const r = await ctx.client.delete<{ removed: true }>(path(full), o.cascade ? { cascade: 'true' } : undefined);
        emit(ctx.json, r, () => `removed mission ${shortId(full)}${o.cascade ? ` and its ${m.tasks.length} tasks` : ` (its ${m.tasks.length} tasks stay, without a mission)`}\n`);
      }),
    );

  return cmd;
}
