import type { App } from '../../app.js';
import { openEntry } from '../vault/service.js';
import type { RESERVED_ENV, Runtime } from '../agents/runtime.js';

// The environment of a run's process: the daemon's own, less what belongs to svc (its state and
// data URLs, the vault key, its API keys), plus the run's SVC_* variables, what the driver needs,
// and the agent's runtime env with vault references read at spawn time. Vault values exist only
// here and in the child's environment: never in a log, an event, the run log or the state.

/** The daemon's variables an agent's process never sees: every SVC_* one (state URL, vault key…) and the shared API key. */
const hidden = (name: string): boolean => name.startsWith('SVC_') || name === 'SERVICE_API_KEY';

export interface RunVariables {
  url: string;
  key: string;
  taskId: string;
  runId: string;
  agent: string;
}

export class VaultRefError extends Error {}

/**
 * The whole environment, and the secret values in it (for scrubbing what the CLI prints back).
 * Throws VaultRefError naming the entry and key when a vault reference cannot be read.
 */
export async function runEnvironment(app: App, agent: string, runtime: Runtime, driverEnv: Record<string, string>, vars: RunVariables): Promise<{ env: Record<string, string>; secrets: string[] }> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(app.env)) if (v !== undefined && !hidden(k)) env[k] = v;
  Object.assign(env, driverEnv);
  const secrets: string[] = [];
  const opened = new Map<string, Record<string, string>>();
  for (const [name, value] of Object.entries(runtime.env ?? {})) {
    if (typeof value === 'string') {
      env[name] = value;
      continue;
    }
    let entry = opened.get(value.vault);
    if (!entry) {
      try {
        entry = await openEntry(app, agent, value.vault);
      } catch {
        throw new VaultRefError(`runtime.env.${name}: agent "${agent}" has no vault entry for service "${value.vault}" (or it cannot be opened)`);
      }
      opened.set(value.vault, entry);
    }
    if (!Object.hasOwn(entry, value.key) || typeof entry[value.key] !== 'string') {
      throw new VaultRefError(`runtime.env.${name}: agent "${agent}"'s vault entry "${value.vault}" has no key "${value.key}"`);
    }
    env[name] = entry[value.key]!;
    secrets.push(entry[value.key]!);
  }
  const own: Record<(typeof RESERVED_ENV)[number], string> = {
    SVC_URL: vars.url,
    SVC_API_KEY: vars.key,
    SVC_TASK_ID: vars.taskId,
    SVC_RUN_ID: vars.runId,
    SVC_AGENT: vars.agent,
  };
  Object.assign(env, own);
  secrets.push(vars.key);
  return { env, secrets };
}
