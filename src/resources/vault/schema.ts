import { z } from 'zod';
import { PageLimit, Timestamp } from '../common.js';
import { VAULT_TYPES } from './values.js';

export { VAULT_TYPES };

const MAX_KEYS = 100;

/** Credential key names are shown, listed and put in events; their values never are. */
const Credentials = z
  .record(z.string().min(1).max(128), z.string().max(65_536))
  .refine((c) => Object.keys(c).length >= 1, { message: 'give at least one credential' })
  .refine((c) => Object.keys(c).length <= MAX_KEYS, { message: `at most ${MAX_KEYS} credentials per entry` })
  .describe('Credential fields, name → value (strings). Sealed at rest; only the names are ever returned.');

export const VaultEntryIn = z.strictObject({
  agent: z.string().min(1).max(128).describe('Agent name; the agent must exist.'),
  service: z.string().min(1).max(200).describe('Service name, the key of the entry within the agent.'),
  type: z.enum(VAULT_TYPES),
  credentials: Credentials,
  label: z.string().max(200).optional().describe('Human-readable label.'),
});
export type VaultEntryInput = z.output<typeof VaultEntryIn>;

export const VaultSavedOut = z
  .object({
    agent: z.string(),
    service: z.string(),
    type: z.enum(VAULT_TYPES),
    keys: z.array(z.string()).describe('Credential key names, never values.'),
  })
  .meta({ id: 'VaultSaved' });
export type VaultSaved = z.output<typeof VaultSavedOut>;

export const VaultEntryOut = z
  .object({
    agent: z.string(),
    service: z.string(),
    type: z.enum(VAULT_TYPES),
    label: z.string().nullable(),
    keys: z.array(z.string()).describe('Credential key names, never values.'),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'VaultEntry' });
export type VaultEntry = z.output<typeof VaultEntryOut>;

export const VaultListQuery = z.strictObject({
  agent: z.string().min(1).max(128).optional().describe('Only entries of this agent.'),
  limit: PageLimit,
  cursor: z.string().min(1).max(2000).optional().describe('The X-Next-Cursor of the previous page.'),
});

export const VaultEntryParams = z.strictObject({
  agent: z.string().min(1).max(128),
  service: z.string().min(1).max(200),
});

export const RotateKeyIn = z.strictObject({
  newKey: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hexadecimal characters')
    .optional()
    .describe('The new master key (64 hex). Required when the key comes from SVC_VAULT_KEY, which the daemon cannot change; otherwise a random key is made.'),
});

export const RotateKeyOut = z
  .object({
    rotated: z.int().describe('Entries re-sealed.'),
    source: z.enum(['env', 'keychain', 'file']).describe('Where the master key lives.'),
  })
  .meta({ id: 'VaultKeyRotation' });
