import { z } from 'zod';
import { ProjectConfigSchema } from './schema.js';

// docs/configuration.md, generated from the project.json schema (`npm run docs`): every field with
// its type, default, bounds and what it does, so the page cannot drift from what the daemon accepts.
// A test keeps the committed copy current and starts a daemon on the example as written.

/** A project.json that starts as pasted (the sha256 is that of "ci-key-change-me-0123456789"). */
export const EXAMPLE_CONFIG = {
  name: 'my-project',
  server: { host: '127.0.0.1', port: 7420, allowedOrigins: ['http://localhost:5173'] },
  apiKeys: [
    'change-me-to-a-long-random-key',
    { name: 'ci', sha256: '6f662441b23a14d93e3742ea0ecdcb98d89ca338a3a1ebaa32689ecebf896353', grants: [{ resource: '*', actions: ['read'] }] },
    { name: 'watcher', key: 'another-key-of-16-chars-or-more', tools: 'read' },
  ],
  tasks: { leaseSeconds: 900, requireReview: false },
  skillsDir: 'skills',
  data: { provider: 'sqlite', statementTimeoutMs: 5000, maxWorkers: 6, workerMemoryMb: 384 },
  webhooks: { timeoutMs: 10000, retryBaseMs: 5000, concurrency: 16, perEndpointConcurrency: 8, retentionDays: 30, maxDeliveries: 50000 },
  events: { retentionHours: 24, maxEvents: 100000 },
  providers: { lmstudio: { baseUrl: 'http://127.0.0.1:1234/v1', keyless: true, models: ['qwen2.5-coder'] } },
  orchestrator: { model: 'lmstudio/qwen2.5-coder', maxTurns: 8 },
};

type JsonSchema = {
  type?: string;
  description?: string;
  default?: unknown;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  properties?: Record<string, JsonSchema>;
  additionalProperties?: JsonSchema | boolean;
  propertyNames?: JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  format?: string;
};

interface Row {
  path: string;
  type: string;
  dflt: string;
  bounds: string;
  what: string;
}

const code = (s: string) => `\`${s.replace(/\|/g, '\\|')}\``;
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const n = (v: number) => v.toLocaleString('en-US');

function typeOf(s: JsonSchema): string {
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(' \\| ');
  if (s.anyOf) return s.anyOf.map(typeOf).join(' or ');
  if (s.type === 'array') return `array of ${s.items ? typeOf(s.items) : 'any'}`;
  if (s.type === 'object' && s.additionalProperties && typeof s.additionalProperties === 'object' && !s.properties) return 'map';
  return s.format === 'uri' ? 'URL' : (s.type ?? 'any');
}

function boundsOf(s: JsonSchema): string {
  const out: string[] = [];
  const range = (min: number | undefined, max: number | undefined, unit = '') =>
    min !== undefined && max !== undefined ? `${n(min)}..${n(max)}${unit}` : min !== undefined ? `≥ ${n(min)}${unit}` : `≤ ${n(max!)}${unit}`;
  if (s.minimum !== undefined || s.maximum !== undefined) out.push(range(s.minimum, s.maximum));
  if (s.minLength !== undefined || s.maxLength !== undefined) out.push(range(s.minLength, s.maxLength, ' characters'));
  if (s.minItems !== undefined || s.maxItems !== undefined) out.push(range(s.minItems, s.maxItems, ' items'));
  if (s.pattern) out.push(code(s.pattern));
  return out.join(', ');
}

function walk(s: JsonSchema, path: string, rows: Row[]): void {
  const dflt = s.default === undefined ? '' : code(JSON.stringify(s.default));
  const isObject = s.type === 'object';
  const leaf = !isObject && !(s.type === 'array' && s.items?.type === 'object');
  if (path && (leaf || s.description || s.default !== undefined)) {
    rows.push({ path: code(path), type: isObject ? 'object' : typeOf(s), dflt, bounds: boundsOf(s), what: cell(s.description ?? '') });
  }
  if (s.properties) for (const [k, v] of Object.entries(s.properties)) walk(v, path ? `${path}.${k}` : k, rows);
  if (isObject && s.additionalProperties && typeof s.additionalProperties === 'object') {
    const key = path.endsWith('headers') ? '<name>' : '<id>';
    walk(s.additionalProperties, `${path}.${key}`, rows);
  }
  if (s.type === 'array' && s.items) {
    for (const item of s.items.anyOf ?? [s.items]) if (item.type === 'object') walk({ ...item, description: undefined, default: undefined }, `${path}[]`, rows);
  }
}

/** The rows of the field table, in schema order. */
export function configRows(): Row[] {
  const schema = z.toJSONSchema(ProjectConfigSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const rows: Row[] = [];
  walk(schema, '', rows);
  return rows;
}

export function configurationMarkdown(): string {
  const rows = configRows();
  return [
    '# Configuration: project.json',
    '',
    'Generated from `src/config/schema.ts` by `npm run docs`; do not edit by hand.',
    '',
    '`svc` finds `project.json` by walking up from the working directory (or `--project DIR`,',
    '`SVC_PROJECT`). Every field is optional: `{}` is a valid project. The file is validated at start and',
    'watched: a valid edit applies within a second without a restart (`server.host` and `server.port` at',
    "the next start), an invalid one is logged with the field's path and the last good config stays in",
    'force. Unknown top-level keys are warnings (a file written for a newer svc still loads); a typo inside',
    'a known section is an error naming its path. `svc doctor` checks the file.',
    '',
    '## An example that starts as pasted',
    '',
    'Every section, with its defaults where it has them. The `ci` key is given only as the SHA-256 of',
    '`ci-key-change-me-0123456789`, so the file can be committed; replace the keys before you use it.',
    '',
    '```json',
    JSON.stringify(EXAMPLE_CONFIG, null, 2),
    '```',
    '',
    '## Every field',
    '',
    '`[]` marks the entries of a list, `<id>` and `<name>` the keys of a map.',
    '',
    '| field | type | default | bounds | what it does |',
    '| --- | --- | --- | --- | --- |',
    ...rows.map((r) => `| ${r.path} | ${r.type} | ${r.dflt} | ${r.bounds} | ${r.what} |`),
    '',
    '## From the environment',
    '',
    '| variable | what it does |',
    '| --- | --- |',
    '| `SERVICE_API_KEY` | one more key with full access (at least 16 characters) |',
    "| `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, … | the built-in providers' keys (or `providers.<id>.apiKeyEnv`) |",
    "| `SVC_STATE_URL` | the state's PostgreSQL URL (`state.url`); set alone, it also picks `state.provider` postgres |",
    "| `SVC_DATA_URL` | the PostgreSQL URL of the application databases' admin role (`data.url`) |",
    "| `SVC_VAULT_KEY` | the vault's master key: 64 hexadecimal characters (`openssl rand -hex 32`) or 32 bytes in base64 (`openssl rand -base64 32`); wins over the keychain, the key file and `state.vaultKeyFile` |",
    '| `SVC_PROJECT` | the project folder, as `--project` |',
    "| `SVC_CONFIG_DIR` | the user's svc folder: the vault's key file when there is no OS keychain, and `projects/<name>.env` (default `$XDG_CONFIG_HOME/svc`, else `~/.config/svc`) |",
    "| `SVC_KEYCHAIN` | `off`: never use the OS keychain for the vault's key |",
    "| `SVC_CACHE_DIR` | the single executable's cache of native addons (default `$XDG_CACHE_HOME/svc`, else `~/.cache/svc`; docs/install.md) |",
    "| `NO_COLOR` | no colour in the CLI's output |",
    '',
    '## The settings file',
    '',
    '`SVC_STATE_URL`, `SVC_DATA_URL` and `SVC_VAULT_KEY` hold passwords and keys, so they stay out of',
    'project.json; kept only in the environment, they are lost to every shell but the one that set them,',
    'and `svc restart`, `svc doctor` or `svc state` run elsewhere do not see them. So they may also be',
    'kept in one private file of `NAME=value` lines (`#` comments, an `export ` prefix and quotes',
    "allowed, as systemd's `EnvironmentFile=` reads it): the one `envFile` names, relative to the",
    'project, else `<SVC_CONFIG_DIR>/projects/<name>.env` when it exists. The daemon and those commands',
    'read it; a variable set in the environment wins over it. The file must be yours and mode 600 (a',
    'file others may read is refused, naming the `chmod` to run), it may set only those three, and',
    'its values are never logged or returned: the daemon logs which variables it took from which',
    'file. Keep it out of git. docs/deploy.md has an example.',
    '',
  ].join('\n');
}
