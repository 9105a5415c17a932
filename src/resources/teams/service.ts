import { serviceKey, type App } from '../../app.js';
import { lockKey, type DB } from '../../db/open.js';
import { AppError } from '../../kernel/errors.js';
import { nowIso } from '../../lib/time.js';
import type { Team } from './schema.js';
import * as store from './store.js';

/**
 * Who belongs to a team. Membership is an agent's field, so the agents resource answers; its wire()
 * provides it (agents already depend on teams: an agent's team must exist, so teams may not import
 * agents back).
 */
export const TEAM_MEMBERS = serviceKey<(app: App, team: string) => Promise<string[]>>('teams.members');

const membersOf = (app: App, team: string): Promise<string[]> => app.services.get(TEAM_MEMBERS)(app, team);

export const teamExists = async (db: DB, name: string): Promise<boolean> => (await store.getTeam(db, name)) !== undefined;

export async function listTeams(app: App): Promise<Team[]> {
  return Promise.all(
    (await store.listTeams(app.db)).map(async (t) => ({
      name: t.name,
      description: t.description,
      agents: await membersOf(app, t.name),
      createdAt: t.created_at,
      updatedAt: t.updated_at,
    })),
  );
}

export async function addTeam(app: App, name: string, description: string): Promise<void> {
  await app.events.write(async () => {
    // Two creations of one name, on two daemons: the second finds the first (lockKey).
    await lockKey(app.db, 'team', name);
    if (await teamExists(app.db, name)) throw new AppError('conflict', `Team "${name}" already exists.`);
    await store.insertTeam(app.db, name, description, nowIso(app.clock));
    app.events.emit('team:created', { name });
  });
}

export async function renameTeam(app: App, oldName: string, name: string): Promise<void> {
  await app.events.write(async () => {
    // Both names, in one order whoever renames, so two renames cannot wait for each other.
    for (const n of [oldName, name].sort()) await lockKey(app.db, 'team', n);
    if (!(await teamExists(app.db, oldName))) throw new AppError('not_found', `Team "${oldName}" not found.`);
    if (oldName === name) return;
    if (await teamExists(app.db, name)) throw new AppError('conflict', `Team "${name}" already exists.`);
    await store.renameTeam(app.db, oldName, name, nowIso(app.clock));
    app.events.emit('team:renamed', { oldName, name });
  });
}

export async function removeTeam(app: App, name: string): Promise<void> {
  await app.events.write(async () => {
    if (!(await teamExists(app.db, name))) throw new AppError('not_found', `Team "${name}" not found.`);
    const members = await membersOf(app, name);
    if (members.length) {
      throw new AppError('conflict', `Team "${name}" still has agents: ${members.join(', ')}. Move or remove them first.`);
    }
    await store.deleteTeam(app.db, name);
    app.events.emit('team:removed', { name });
  });
}
