import { homedir } from 'node:os';
import { join } from 'node:path';

// The user's own svc directory: the vault's key files (no OS keychain) and each project's private
// settings file (env-file.ts) live there. Apart from the vault's modules, which load the keychain's.

/** The user's svc config dir: SVC_CONFIG_DIR, else $XDG_CONFIG_HOME/svc, else ~/.config/svc. */
export function configDir(env: NodeJS.ProcessEnv): string {
  if (env.SVC_CONFIG_DIR) return env.SVC_CONFIG_DIR;
  if (env.XDG_CONFIG_HOME) return join(env.XDG_CONFIG_HOME, 'svc');
  return join(env.HOME || homedir(), '.config', 'svc');
}
