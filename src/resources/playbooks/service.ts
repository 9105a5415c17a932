import type { App } from '../../app.js';
import { lockKey } from '../../db/open.js';
import { AppError, type ErrorDetail } from '../../kernel/errors.js';
import { zodDetails } from '../../kernel/server.js';
import { nowIso } from '../../lib/time.js';
import { MissionIn, type Mission } from '../missions/schema.js';
import { createMission } from '../missions/service.js';
import type { Task } from '../tasks/schema.js';
import { readPlaybookFile, scanPlaybookFiles, type FilePlaybook } from './files.js';
import type { Parameter, ParamValue, Playbook, PlaybookInput, PlaybookPatchInput } from './schema.js';
import * as store from './store.js';
import { checkTemplate, fill, valueOf, type Values } from './template.js';

// Playbooks live in the state DB (source "api") and in <root>/playbooks/<name>/playbook.json
// (source "file"). On a name clash the api one wins: it was made on purpose on this machine, and
// deleting it brings the file's version back. File playbooks are read-only through the API.

const fromRecord = (r: store.PlaybookRecord): Playbook => ({ ...r, source: 'api', file: null, error: null });

const fromFile = (f: FilePlaybook): Playbook => ({
  name: f.name,
  description: f.description,
  parameters: f.parameters,
  mission: f.mission,
  source: 'file',
  file: f.file,
  error: f.error,
  createdAt: f.mtime,
  updatedAt: f.mtime,
});

export async function listPlaybooks(app: App): Promise<Playbook[]> {
  const byName = new Map<string, Playbook>();
  for (const f of scanPlaybookFiles(app.root)) byName.set(f.name, fromFile(f));
  for (const r of await store.listPlaybooks(app.db)) byName.set(r.name, fromRecord(r));
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export async function getPlaybook(app: App, name: string): Promise<Playbook> {
  const r = await store.getPlaybook(app.db, name);
  if (r) return fromRecord(r);
  const f = readPlaybookFile(app.root, name);
  if (f) return fromFile(f);
  throw new AppError('not_found', `Playbook "${name}" not found.`);
}

function invalid(details: ErrorDetail[]): AppError {
  return new AppError('invalid_request', `Invalid playbook: ${details.map((d) => `${d.path}: ${d.message}`).join('; ')}`, { details });
}

function checkMission(mission: Record<string, unknown>, parameters: Parameter[]): void {
  const problems = checkTemplate(mission, parameters, 'body.mission');
  if (problems.length) throw invalid(problems);
}

export async function createPlaybook(app: App, input: PlaybookInput): Promise<Playbook> {
  return await app.events.write(async () => {
    // Two creations of one name, on two daemons: the second finds the first (lockKey).
    await lockKey(app.db, 'playbook', input.name);
    if (await store.getPlaybook(app.db, input.name)) throw new AppError('conflict', `Playbook "${input.name}" already exists.`);
    const file = readPlaybookFile(app.root, input.name);
    if (file) throw new AppError('conflict', `Playbook "${input.name}" already exists in ${file.file}.`);
    checkMission(input.mission, input.parameters);
    const now = nowIso(app.clock);
    const record = { name: input.name, description: input.description ?? null, parameters: input.parameters, mission: input.mission, createdAt: now, updatedAt: now };
    await store.insertPlaybook(app.db, record);
    return fromRecord(record);
  });
}

async function requireStored(app: App, name: string): Promise<store.PlaybookRecord> {
  // In a write: what the caller checks and then writes stays as read until it commits (lockKey).
  await lockKey(app.db, 'playbook', name);
  const r = await store.getPlaybook(app.db, name);
  if (r) return r;
  const f = readPlaybookFile(app.root, name);
  if (f) throw new AppError('conflict', `Playbook "${name}" is read from ${f.file}; change or remove that file instead.`);
  throw new AppError('not_found', `Playbook "${name}" not found.`);
}

/** A missing field is kept, description: null clears it; the merged playbook is checked whole. */
export async function updatePlaybook(app: App, name: string, patch: PlaybookPatchInput): Promise<Playbook> {
  return await app.events.write(async () => {
    const cur = await requireStored(app, name);
    const next: store.PlaybookRecord = {
      ...cur,
      description: patch.description === undefined ? cur.description : patch.description,
      parameters: patch.parameters ?? cur.parameters,
      mission: patch.mission ?? cur.mission,
      updatedAt: nowIso(app.clock),
    };
    checkMission(next.mission, next.parameters);
    await store.updatePlaybook(app.db, next);
    return fromRecord(next);
  });
}

export async function removePlaybook(app: App, name: string): Promise<void> {
  await app.events.write(async () => {
    await requireStored(app, name);
    await store.deletePlaybook(app.db, name);
  });
}

/** Given values, checked and completed with defaults; 400 naming body.params.<name> for each problem. */
export function resolveParams(parameters: Parameter[], given: Record<string, ParamValue>): Values {
  const problems: ErrorDetail[] = [];
  const declared = new Map(parameters.map((p) => [p.name, p]));
  const names = parameters.map((p) => p.name).join(', ') || 'none';
  for (const k of Object.keys(given)) {
    if (!declared.has(k)) problems.push({ path: `body.params.${k}`, message: `unknown parameter (this playbook takes: ${names})` });
  }
  const values: Values = Object.create(null) as Values;
  for (const p of parameters) {
    const v = valueOf(given, p.name) ?? p.default;
    if (v === undefined) {
      if (p.required) problems.push({ path: `body.params.${p.name}`, message: `required ${p.type} parameter is missing` });
      continue;
    }
    if (typeof v !== p.type) problems.push({ path: `body.params.${p.name}`, message: `must be a ${p.type}, not a ${typeof v}` });
    else if (p.enum && !p.enum.includes(v)) problems.push({ path: `body.params.${p.name}`, message: `must be one of: ${p.enum.map((e) => JSON.stringify(e)).join(', ')}` });
    else values[p.name] = v;
  }
  if (problems.length) {
    throw new AppError('invalid_request', `Invalid parameters: ${problems.map((d) => `${d.path}: ${d.message}`).join('; ')}`, { details: problems });
  }
  return values;
}

/**
 * Fills the playbook's mission with the parameters and creates it. A filled mission that is not
 * a valid mission (a value breaks a format, titles collide) is 422 with paths into `mission`.
 */
export async function runPlaybook(app: App, name: string, params: Record<string, ParamValue>): Promise<{ mission: Mission; tasks: Task[] }> {
  const p = await getPlaybook(app, name);
  if (p.error !== null || p.mission === null) throw new AppError('unprocessable', `Playbook "${name}" (${p.file}) is invalid and cannot run: ${p.error}`);
  const values = resolveParams(p.parameters, params);
  const parsed = MissionIn.safeParse(fill(p.mission, values));
  if (!parsed.success) {
    const details = zodDetails('mission', parsed.error);
    throw new AppError('unprocessable', `Playbook "${name}" filled with these parameters is not a valid mission: ${details.map((d) => `${d.path}: ${d.message}`).join('; ')}`, { details });
  }
  const { tasks, ...mission } = await createMission(app, parsed.data, 'mission');
  return { mission, tasks };
}
