import type { AppResource } from '../../app.js';
import { migration as m003 } from './migrations/003-vault-entries.js';

export const vaultResource: AppResource = {
  name: 'vault',
  commands: [{ name: 'vault', summary: 'Per-agent credentials, sealed at rest', load: async () => (await import('./command.js')).vaultCommand() }],
  events: ['vault'],
  tables: ['vault_entries'],
  migrations: [m003],
  server: async () => (await import('./server.js')).server,
};
