import { serviceKey } from '../../app.js';
import type { VaultKeys } from './crypto.js';
import type { KeyLocation } from './master-key.js';

/** The daemon's open vault: where its master key lives and the keys derived from it. */
export interface Vault {
  readonly projectId: string;
  readonly location: KeyLocation;
  keys: VaultKeys;
  rotating: boolean;
  /** The state is shared by several daemons: the key is theirs too (no rotation from one). */
  shared?: boolean;
}

/** The open vault of this daemon (opened at start by the daemon's vault part, read by the vault's handlers). */
export const VAULT = serviceKey<Vault>('vault');
