import { resolve } from 'node:path';
import type { Part } from '../kernel/parts.js';
import { openVault } from '../resources/vault/keys.js';
import type { DaemonContext } from './context.js';

/** The vault's keys: opened (or made) before any part that reads a sealed value. */
export const vaultPart: Part<DaemonContext> = {
  name: 'vault',
  start: async (ctx) => {
    const { root, db, projectId, env, log, config } = ctx;
    const keyFile = config.state.vaultKeyFile;
    ctx.vault = await openVault({ db, projectId, env, log, ...(ctx.sharedState ? { shared: { keyFile: keyFile ? resolve(root, keyFile) : null } } : {}) });
  },
};
