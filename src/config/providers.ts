// The providers a user needs no config for: each through its OpenAI-compatible endpoint and the key
// variable its own SDKs read. project.json `providers.<id>` overrides any of these fields or adds a
// provider of its own (vLLM, LM Studio, a proxy). Here, below the resources, because project.json's
// schema (schema.ts) needs to know them; the providers resource resolves them (catalog.ts).

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
