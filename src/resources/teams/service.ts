import { serviceKey, type App } from '../../app.js';
import type { DB } from '../../db/open.js';
import { AppError } from '../../kernel/errors.js';
import { nowIso } from '../../lib/time.js';
import type { Team } from './schema.js';
import * as store from './store.js';

/**
 * Who belongs to a team. Membership is an agent's field, so the agents resource answers; its wire()
 * provides it (agents already depend on teams: an agent's team must exist, so teams may not import
 * agents back).
 */
export const TEAM_MEMBERS = serviceKey<(app: App, team: string) => string[]>('teams.members');

const membersOf = (app: App, team: string): string[] => app.services.get(TEAM_MEMBERS)(app, team);

export const teamExists = (db: DB, name: string): boolean => store.getTeam(db, name) !== undefined;

export function listTeams(app: App): Team[] {
  return store.listTeams(app.db).map((t) => ({
    name: t.name,
    description: t.description,
    agents: membersOf(app, t.name),
    createdAt: t.created_at,
    updatedAt: t.updated_at,
  }));
}

export function addTeam(app: App, name: string, description: string): void {
  app.events.write(() => {
    if (teamExists(app.db, name)) throw new AppError('conflict', `Team "${name}" already exists.`);
    store.insertTeam(app.db, name, description, nowIso(app.clock));
    app.events.emit('team:created', { name });
  });
}

export function renameTeam(app: App, oldName: string, name: string): void {
  app.events.write(() => {
    if (!teamExists(app.db, oldName)) throw new AppError('not_found', `Team "${oldName}" not found.`);
    if (oldName === name) return;
    if (teamExists(app.db, name)) throw new AppError('conflict', `Team "${name}" already exists.`);
    store.renameTeam(app.db, oldName, name, nowIso(app.clock));
    app.events.emit('team:renamed', { oldName, name });
  });
}

export function removeTeam(app: App, name: string): void {
  app.events.write(() => {
    if (!teamExists(app.db, name)) throw new AppError('not_found', `Team "${name}" not found.`);
    const members = membersOf(app, name);
    if (members.length) {
      throw new AppError('conflict', `Team "${name}" still has agents: ${members.join(', ')}. Move or remove them first.`);
    }
    store.deleteTeam(app.db, name);
    app.events.emit('team:removed', { name });
  });
}
