import type { Migration } from './migrate.js';
import { migration as m001 } from './migrations/001-meta-events-agents-teams.js';
import { migration as m004 } from './migrations/004-missions-playbooks.js';
import { migration as m009 } from './migrations/009-providers-chat-sessions.js';
import { migration as m019 } from './migrations/019-run-pauses-budgets.js';

// The state database's schema, forward only: one file per migration. Never edit a migration that
// has shipped (test/state-schema.test.ts pins them): add the next. A migration that belongs to one
// resource is in that resource's migrations/ folder and listed by its descriptor; these span several.

export const SHARED_MIGRATIONS: readonly Migration[] = [m001, m004, m009, m019];

/** Every migration of `lists`, in version order (db/migrate.ts refuses a version given twice). */
export function orderMigrations(...lists: (readonly Migration[])[]): Migration[] {
  return lists.flat().sort((a, b) => a.version - b.version);
}
