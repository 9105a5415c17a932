import { BUILT_IN_PROVIDERS } from '../../config/providers.js';
import type { ProjectConfig } from '../../config/schema.js';

/** A provider as the daemon calls it: built-in defaults with project.json's fields over them. */
export interface Provider {
  id: string;
  baseUrl: string;
  envVar: string;
  /** Where in project.json a key may be put instead. */
  configKey: string;
  keyless: boolean;
  /** Which OpenAI wire it speaks: chat completions, or the Responses API. */
  api: 'chat' | 'responses';
  defaultModel: string | null;
  models: string[];
  headers: Record<string, string>;
  hasEnvKey: boolean;
  hasConfigKey: boolean;
  /** The key to send; never leaves the daemon except in the upstream's Authorization header. */
  key: string | null;
}

/** Every known provider: the built-in ones, then those only project.json names, in its order. */
export function resolveProviders(config: ProjectConfig, env: NodeJS.ProcessEnv): Map<string, Provider> {
  const out = new Map<string, Provider>();
  const configured = new Map(Object.entries(config.providers));
  const ids = [...BUILT_IN_PROVIDERS.keys(), ...[...configured.keys()].filter((id) => !BUILT_IN_PROVIDERS.has(id))];
  for (const id of ids) {
    const base = BUILT_IN_PROVIDERS.get(id);
    const own = configured.get(id);
    const baseUrl = own?.baseUrl ?? base?.baseUrl;
    if (!baseUrl) continue; // a provider of project.json's own without a baseUrl is refused by the config schema
    const envVar = own?.apiKeyEnv ?? base?.envVar ?? `${id.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_API_KEY`;
    const envKey = Object.hasOwn(env, envVar) && env[envVar] ? env[envVar]! : null;
    const configKey = own?.apiKey ?? null;
    out.set(id, {
      id,
      baseUrl: baseUrl.replace(/\/+$/, ''),
      envVar,
      configKey: `providers.${id}.apiKey`,
      keyless: own?.keyless ?? base?.keyless ?? false,
      api: own?.api ?? 'chat',
      defaultModel: own?.defaultModel ?? own?.models?.[0] ?? base?.defaultModel ?? null,
      models: own?.models ?? [],
      headers: own?.headers ?? {},
      hasEnvKey: envKey !== null,
      hasConfigKey: configKey !== null,
      // Explicit beats ambient, as for the vault key: the config names this project's key.
      key: configKey ?? envKey,
    });
  }
  return out;
}

/** `provider/model` → its parts; the model may itself hold slashes (`openrouter/openai/gpt-4o`). */
export function splitModelId(id: string): { provider: string; model: string } | null {
  const slash = id.indexOf('/');
  if (slash <= 0 || slash === id.length - 1) return null;
  return { provider: id.slice(0, slash), model: id.slice(slash + 1) };
}
