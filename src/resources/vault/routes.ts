import { z } from 'zod';
import { route } from '../../app.js';
import { pageAnswer, Removed } from '../common.js';
import { RotateKeyIn, RotateKeyOut, VaultEntryIn, VaultEntryOut, VaultEntryParams, VaultListQuery, VaultSavedOut } from './schema.js';
import { rotateKey } from './keys.js';
import * as vault from './service.js';

const tag = 'Vault';

export const vaultRoutes = [
  route({
    method: 'POST',
    path: '/api/v1/vault/entries',
    operationId: 'saveVaultEntry',
    errors: ['not_found'],
    summary: 'Save a vault entry (creates or replaces the entry of agent + service)',
    description: 'The credentials are sealed with AES-256-GCM; the answer, the listing and the events carry only their key names.',
    tag,
    body: VaultEntryIn,
    response: VaultSavedOut,
    handler: async ({ app, body }) => await vault.saveEntry(app, body),
  }),
  route({
    method: 'GET',
    path: '/api/v1/vault/entries',
    operationId: 'listVaultEntries',
    summary: 'List vault entries by agent and service, without values',
    tag,
    query: VaultListQuery,
    response: z.array(VaultEntryOut),
    handler: async ({ app, query, setHeader }) => {
      return pageAnswer(setHeader, await vault.listEntries(app, query));
    },
  }),
  route({
    method: 'DELETE',
    path: '/api/v1/vault/entries/{agent}/{service}',
    operationId: 'deleteVaultEntry',
    summary: 'Remove a vault entry',
    tag,
    params: VaultEntryParams,
    response: Removed,
    handler: async ({ app, params }) => {
      await vault.removeEntry(app, params.agent, params.service);
      return { removed: true as const };
    },
  }),
  route({
    method: 'POST',
    path: '/api/v1/vault/rotate-key',
    operationId: 'rotateVaultKey',
    errors: ['conflict', 'unavailable'],
    summary: 'Re-seal every entry under a new master key, in one transaction',
    tag,
    body: RotateKeyIn,
    response: RotateKeyOut,
    handler: ({ app, body }) => rotateKey(app, body.newKey),
  }),
];
