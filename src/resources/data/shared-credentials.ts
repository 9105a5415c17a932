import type { App } from '../../app.js';
import { stmt } from '../../db/open.js';
import { open, seal } from '../vault/crypto.js';
import { VAULT } from '../vault/live.js';
import type { CredentialStore, DatabaseCredentials } from './pg/backend.js';

// The PostgreSQL provider's per-database credentials when several daemons share one state: kept in
// the state, sealed under the vault's key (which every daemon there holds), so a database opened
// by one daemon does not lock out the connections of another. Written by the first opener in one
// state transaction; the others read the same.

const keyOf = (id: string) => `data.credentials.${id}`;
const place = (app: App, id: string) => ({ projectId: app.projectId, agent: 'data-credentials', service: id });

export function sharedCredentials(app: App): CredentialStore {
  const entryKey = () => app.services.get(VAULT).keys.entryKey;
  return {
    take(id: string, fresh: () => DatabaseCredentials): DatabaseCredentials {
      const stored = app.db.transaction(() => {
        const row = stmt(app.db, 'SELECT value FROM meta WHERE key = ?').get(keyOf(id)) as { value: string } | undefined;
        if (row) return row.value;
        const sealed = seal(entryKey(), place(app, id), Buffer.from(JSON.stringify(fresh()), 'utf8'));
        const value = JSON.stringify({ sealed: sealed.sealed.toString('base64'), nonce: sealed.nonce.toString('base64') });
        stmt(app.db, 'INSERT INTO meta (key, value) VALUES (?, ?)').run(keyOf(id), value);
        return value;
      })();
      const { sealed, nonce } = JSON.parse(stored) as { sealed: string; nonce: string };
      return JSON.parse(open(entryKey(), place(app, id), { sealed: Buffer.from(sealed, 'base64'), nonce: Buffer.from(nonce, 'base64') }).toString('utf8')) as DatabaseCredentials;
    },
    drop(id: string): void {
      stmt(app.db, 'DELETE FROM meta WHERE key = ?').run(keyOf(id));
    },
  };
}
