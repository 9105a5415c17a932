import type { Grant, GrantAction, Principal } from '../../kernel/auth.js';
import { AppError } from '../../kernel/errors.js';
import type { TableGrants } from './sql-guard.js';

// Grants on application databases (DESIGN section 4): manage implies write implies read; a grant
// names a database (name or id) or '*', and optionally tables. Keys without grants have full
// access; keys with grants are denied whatever their grants do not name. Evaluated per request
// from the principal, which the kernel builds from the config in force.

const RANK: Record<GrantAction, number> = { read: 1, write: 2, manage: 3 };

const level = (g: Grant): number => Math.max(0, ...g.actions.map((a) => RANK[a] ?? 0));

export interface DatabaseRef {
  id: string;
  name: string;
}

function matching(p: Principal, db: DatabaseRef): Grant[] | null {
  if (p.grants === undefined) return null;
  return p.grants.filter((g) => g.resource === '*' || g.resource === db.name || g.resource.toLowerCase() === db.id);
}

/** Tables the key may use at `action` or above: '*' for all, else the named ones. */
function tablesAt(grants: Grant[], action: GrantAction): '*' | string[] {
  const tables = new Set<string>();
  for (const g of grants) {
    if (level(g) < RANK[action]) continue;
    if (!g.tables) return '*';
    for (const t of g.tables) tables.add(t);
  }
  return [...tables];
}

export function tableGrants(p: Principal | null, db: DatabaseRef): TableGrants {
  const g = p ? matching(p, db) : [];
  if (g === null) return { read: '*', write: '*' };
  return { read: tablesAt(g, 'read'), write: tablesAt(g, 'write') };
}

/** Has the key any grant on this database at all (to see it in lists)? */
export function canSee(p: Principal | null, db: DatabaseRef): boolean {
  const g = p ? matching(p, db) : [];
  return g === null || g.some((x) => level(x) >= RANK.read);
}

export const canUseTable = (list: '*' | string[], table: string): boolean => list === '*' || list.includes(table);

/** Whole-database manage (migrations, delete); a table-limited grant does not manage the database. */
export function requireManage(p: Principal | null, db: DatabaseRef): void {
  const g = p ? matching(p, db) : [];
  if (g === null) return;
  if (!g.some((x) => level(x) >= RANK.manage && !x.tables)) throw new AppError('data_forbidden', 'This key has no manage grant on this database.');
}

export function requireRead(p: Principal | null, db: DatabaseRef): void {
  if (!canSee(p, db)) throw new AppError('data_forbidden', 'This key has no grant on this database.');
}

/** Creating a database needs manage on '*' (DESIGN section 4). */
export function requireCreate(p: Principal | null): void {
  if (p?.grants === undefined) return;
  if (!p.grants.some((g) => g.resource === '*' && level(g) >= RANK.manage && !g.tables)) {
    throw new AppError('data_forbidden', 'Creating a database needs a grant of manage on "*".');
  }
}
