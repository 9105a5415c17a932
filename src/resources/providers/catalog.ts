import type { ProjectConfig } from '../../config/schema.js';

// The providers a user needs no config for: each through its OpenAI-compatible endpoint and the key
// variable its own SDKs read. project.json `providers.<id>` overrides any of these fields or adds a
// provider of its own (vLLM, LM Studio, a proxy).

export interface ProviderDefaults {
  baseUrl: string;
  /** The environment variable holding its key. */
  envVar: string;
  /** Served without a key (Ollama on this machine). */
  keyless?: boolean;
  /** The model the orchestrator uses when project.json names none. */
  defaultModel: string;
}

export const BUILT_IN_PROVIDERS = new Map<string, ProviderDefaults>([
  ['openai', { baseUrl: 'https://api.openai.com/v1', envVar: 'OPENAI_API_KEY', defaultModel: 'gpt-4o-mini' }],
  ['anthropic', { baseUrl: 'https://api.anthropic.com/v1', envVar: 'ANTHROPIC_API_KEY', defaultModel: 'claude-sonnet-4-5' }],
  ['google', { baseUrl: 'https://generativelanguage.googleapis.com/v1beta/openai', envVar: 'GEMINI_API_KEY', defaultModel: 'gemini-2.5-flash' }],
  ['xai', { baseUrl: 'https://api.x.ai/v1', envVar: 'XAI_API_KEY', defaultModel: 'grok-4' }],
  ['openrouter', { baseUrl: 'https://openrouter.ai/api/v1', envVar: 'OPENROUTER_API_KEY', defaultModel: 'openai/gpt-4o-mini' }],
  ['mistral', { baseUrl: 'https://api.mistral.ai/v1', envVar: 'MISTRAL_API_KEY', defaultModel: 'mistral-small-latest' }],
  ['groq', { baseUrl: 'https://api.groq.com/openai/v1', envVar: 'GROQ_API_KEY', defaultModel: 'llama-3.3-70b-versatile' }],
  ['ollama', { baseUrl: 'http://127.0.0.1:11434/v1', envVar: 'OLLAMA_API_KEY', keyless: true, defaultModel: 'llama3.2' }],
]);

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
