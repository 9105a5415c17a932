import { Command } from 'commander';
import { basename, dirname, resolve } from 'node:path';
import { action, collect } from '../../cli/action.js';
import { fills } from '../../cli/api-words.js';
import { confirm } from '../../cli/confirm.js';
import { UsageError } from '../../cli/context.js';
import { shortId } from '../../lib/human.js';
import { readDataFile } from '../../cli/data-file.js';
import { emit, keyValues, style, table } from '../../cli/output.js';
import { seg } from '../../client/client.js';
import { progressLine, taskList } from '../missions/command.js';
import type { Mission } from '../missions/schema.js';
import type { Task } from '../tasks/schema.js';
import type { Parameter, ParamValue, Playbook } from './schema.js';

/** The API's schemas, loaded when an option needs checking (they bring zod). */
const schemas = () => import('./schema.js');
import { check } from '../../cli/validate.js';

const path = (name: string) => `/api/v1/playbooks/${seg(name)}`;

const playbookTable = (rows: Playbook[]) =>
  table(
    rows,
    [
      { header: 'NAME', value: (p) => p.name },
      { header: 'SOURCE', value: (p) => p.source },
      { header: 'PARAMETERS', value: (p) => p.parameters.map((x) => (x.required && x.default === undefined ? `${x.name}*` : x.name)) },
      { header: 'DESCRIPTION', value: (p) => (p.error ? style.red(`invalid: ${p.error}`) : p.description) },
    ],
    'no playbooks; add one with `svc playbooks add <file>` or in playbooks/<name>/playbook.json',
  );

const paramTable = (ps: Parameter[]) =>
  table(
    ps,
    [
      { header: 'PARAMETER', value: (p) => p.name },
      { header: 'TYPE', value: (p) => p.type },
      { header: 'REQUIRED', value: (p) => (p.required ? 'yes' : 'no') },
      { header: 'DEFAULT', value: (p) => (p.default === undefined ? null : JSON.stringify(p.default)) },
      { header: 'ENUM', value: (p) => p.enum?.map((v) => JSON.stringify(v)) },
      { header: 'DESCRIPTION', value: (p) => p.description },
    ],
    'no parameters',
  );

function showPlaybook(p: Playbook): string {
  const { parameters, mission, ...fields } = p;
  return keyValues(fields) + '\n' + paramTable(parameters) + '\n' + JSON.stringify(mission, null, 2) + '\n';
}

/** The playbook's name: --name, the file's own, or its folder's for playbooks/<name>/playbook.json. */
function nameFor(file: string, body: Record<string, unknown>, flag?: string): string {
  if (flag) return flag;
  if (typeof body.name === 'string') return body.name;
  const base = basename(file).replace(/\.(json|ya?ml)$/i, '');
  return base === 'playbook' ? basename(dirname(resolve(file))) : base;
}

/** -p key=value → a value of the parameter's declared type (the API wants typed JSON). */
export function parseParams(pairs: string[], parameters: Parameter[]): Record<string, ParamValue> {
  const types = new Map(parameters.map((p) => [p.name, p.type]));
  const out: Record<string, ParamValue> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`-p ${pair}: expected key=value`);
    const key = pair.slice(0, eq);
    const raw = pair.slice(eq + 1);
    const type = types.get(key);
    if (type === 'number') {
      const n = Number(raw);
      if (raw.trim() === '' || !Number.isFinite(n)) throw new UsageError(`-p ${key}: "${raw}" is not a number`);
      out[key] = n;
    } else if (type === 'boolean') {
      if (raw !== 'true' && raw !== 'false') throw new UsageError(`-p ${key}: "${raw}" is not true or false`);
      out[key] = raw === 'true';
    } else {
      // Strings, and unknown keys, which the API reports by name.
      out[key] = raw;
    }
  }
  return out;
}

export function playbooksCommand(): Command {
  const cmd = new Command('playbooks').description('Reusable mission templates with parameters');

  cmd
    .command('ls')
    .description('List playbooks (from the API and from playbooks/<name>/playbook.json); * marks required parameters')
    .action(
      action(async (ctx) => {
        const rows = await ctx.client.get<Playbook[]>('/api/v1/playbooks');
        emit(ctx.json, rows, () => playbookTable(rows));
      }),
    );

  cmd
    .command('show <name>')
    .description('Show a playbook: its parameters and mission template')
    .action(
      action(async (ctx, name: string) => {
        const p = await ctx.client.get<Playbook>(path(name));
        emit(ctx.json, p, () => showPlaybook(p));
      }),
    );

  fills(cmd.command('add <file>'), { body: '<file>' })
    .description('Create a playbook from a JSON or YAML file: {name?, description?, parameters?, mission}')
    .option('--name <name>', 'playbook name (default: the file name field, else the file or folder name)')
    .action(
      action(async (ctx, file: string, o: { name?: string }) => {
        const body = await readDataFile(file);
        if (!body || typeof body !== 'object' || Array.isArray(body)) throw new UsageError(`${file} must hold an object`);
        const full = { ...body, name: nameFor(file, body as Record<string, unknown>, o.name) };
        await check(schemas, 'PlaybookIn', full);
        const p = await ctx.client.post<Playbook>('/api/v1/playbooks', full);
        emit(ctx.json, p, () => `created playbook ${p.name}; run it with \`svc playbooks run ${p.name}\`\n`);
      }),
    );

  cmd
    .command('rm <name>')
    .description('Delete a playbook made through the API')
    .option('-y, --yes', 'do not ask for confirmation')
    .action(
      action(async (ctx, name: string) => {
        await confirm(`delete playbook ${name}?`, ctx.yes, `svc playbooks rm ${name}`);
        const r = await ctx.client.delete<{ removed: true }>(path(name));
        emit(ctx.json, r, () => `removed playbook ${name}\n`);
      }),
    );

  fills(cmd.command('run <name>'), { 'body.params': '--param' })
    .description('Create a mission from a playbook')
    .option('-p, --param <key=value>', 'parameter value (repeatable)', collect)
    .action(
      action(async (ctx, name: string, o: { param?: string[] }) => {
        const p = await ctx.client.get<Playbook>(path(name));
        const params = parseParams(o.param ?? [], p.parameters);
        const r = await ctx.client.post<{ mission: Mission; tasks: Task[] }>(`${path(name)}/run`, { params });
        emit(ctx.json, r, () => `created mission ${shortId(r.mission.id)} (${r.mission.status}) from ${name}: ${progressLine(r.mission.progress)}\n\n${taskList(r.tasks)}`);
      }),
    );

  return cmd;
}
