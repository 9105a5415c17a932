import type { App } from '../../app.js';
import { VAULT } from '../vault/live.js';
import { dropShared, sharedSealed } from '../vault/shared-sealed.js';
import type { CredentialStore, DatabaseCredentials } from './pg/backend.js';

// The PostgreSQL provider's per-database credentials when several daemons share one state: the
// first opener's, kept sealed in the state (vault/shared-sealed.ts), so a database opened by one
// daemon does not lock out the connections of another.

const keyOf = (id: string) => `data.credentials.${id}`;

export function sharedCredentials(app: App): CredentialStore {
  return {
    async take(id: string, fresh: () => DatabaseCredentials): Promise<DatabaseCredentials> {
      const place = { projectId: app.projectId, agent: 'data-credentials', service: id };
      const plain = await sharedSealed(app.db, app.services.get(VAULT).keys.entryKey, place, keyOf(id), () => Buffer.from(JSON.stringify(fresh()), 'utf8'));
      return JSON.parse(plain.toString('utf8')) as DatabaseCredentials;
    },
    drop: async (id: string) => await dropShared(app.db, keyOf(id)),
  };
}
