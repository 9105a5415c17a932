import { z } from 'zod';
import { BudgetsConfig } from './budgets.js';
import { BUILT_IN_PROVIDERS } from './providers.js';
import { exposureIssues, validProxyEntry } from '../kernel/exposure.js';

// project.json. Nested objects are strict so a typo (`server.prot`) is reported with its path;
// unknown top-level keys only warn, so a file written for a newer svc still loads.

export const GrantSchema = z.strictObject({
  resource: z.string().min(1).max(128).describe('Database name, UUID, or "*" for every database.'),
  tables: z.array(z.string().min(1)).optional().describe('Only these tables of it (default: every table).'),
  actions: z
    .array(z.enum(['read', 'write', 'manage']))
    .min(1)
    .describe('read: list, get and read-mode SQL; write: inserts, updates, deletes and write-mode SQL; manage: migrations and deleting the database.'),
});

export const ApiKeyObjectSchema = z
  .strictObject({
    name: z.string().min(1).max(64).describe('Shown in logs and events instead of the key.'),
    key: z.string().min(16, 'a key must be at least 16 characters').optional().describe('The key itself (give key or sha256).'),
    sha256: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, 'sha256 must be 64 hex characters')
      .optional()
      .describe('The hex SHA-256 of the key, so the file need not hold it: `printf %s "$KEY" | sha256sum`.'),
    grants: z.array(GrantSchema).optional().describe('Limits the key to application databases (denied everything else); without grants it has full access.'),
    tools: z.enum(['read', 'all']).optional().describe('MCP tools this key may list and call: "read" = only read-only tools; "all" (default) = every tool.'),
  })
  .refine((k) => (k.key === undefined) !== (k.sha256 === undefined), {
    message: 'give exactly one of "key" or "sha256"',
  });

export const ApiKeySchema = z.union([z.string().min(16, 'a key must be at least 16 characters').describe('A key with full access, as written.'), ApiKeyObjectSchema]);

export const ProviderSchema = z.strictObject({
  baseUrl: z
    .url({ protocol: /^https?$/ })
    .optional()
    .describe('OpenAI-compatible base URL (…/v1); built-in providers have one.'),
  apiKey: z.string().min(1).optional().describe('The key itself; prefer apiKeyEnv so project.json can be committed.'),
  apiKeyEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be an environment variable name')
    .optional()
    .describe('The environment variable holding the key (built-in providers have one: OPENAI_API_KEY…).'),
  keyless: z.boolean().optional().describe('Called without a key (a local server).'),
  api: z
    .enum(['chat', 'responses'])
    .optional()
    .describe('The wire svc speaks to it: "chat" (POST …/chat/completions, the default; every OpenAI-compatible server) or "responses" (POST …/responses, the OpenAI Responses API).'),
  defaultModel: z.string().min(1).max(200).optional().describe('The model asked for when no request, agent or orchestrator names one (default: the first of models, else the built-in default).'),
  models: z.array(z.string().min(1).max(200)).max(1000).optional().describe('Models it serves: while another provider cools down, a model listed here is served by this one.'),
  headers: z
    .record(z.string().regex(/^[A-Za-z0-9-]{1,100}$/, 'must be a header name'), z.string().max(4096))
    .optional()
    .describe('Extra headers sent upstream with every call (their values are scrubbed from upstream errors like keys).'),
});

export const ProjectConfigSchema = z.object({
  name: z.string().min(1).max(128).optional().describe("The project's name, in `GET /api/v1/status`, `svc doctor` and the start-up log line."),
  server: z
    .strictObject({
      host: z
        .string()
        .min(1)
        .default('127.0.0.1')
        .describe(
          'Address to listen on; applies at the next start. Anything but loopback (127.0.0.0/8, ::1, localhost) exposes the API to the network, so it needs tls or trustedProxy, and allowedHosts.',
        ),
      port: z.int().min(0).max(65535).default(7420).describe('Port to listen on (0: any free port); applies at the next start.'),
      allowedHosts: z.array(z.string().min(1)).default([]).describe('Host header values accepted besides loopback names and addresses (DNS-rebinding guard); required when host is not loopback.'),
      // "null" is the opaque origin of every sandboxed iframe, data: URL and file: allowing it would
      // allow any page on the web, so it is refused here rather than ignored.
      allowedOrigins: z
        .array(
          z
            .string()
            .min(1)
            .refine((o) => o.trim().toLowerCase() !== 'null', 'the opaque origin "null" cannot be allowed: any sandboxed page or file sends it'),
        )
        .default([])
        .describe('Browser origins allowed to call the API (exact match, e.g. http://localhost:5173); any other Origin is refused 403.'),
      maxBodyBytes: z
        .int()
        .min(1024)
        .max(256 * 1024 * 1024)
        .default(1_048_576)
        .describe('Largest request body; a larger one is answered 413.'),
      // Default: below the process's open-file limit (see src/kernel/connections.ts).
      maxConnections: z.int().min(16).max(65_536).optional().describe('Open connections at most (default: below the open-file limit, 896 under 1,024).'),
      tls: z
        .strictObject({
          cert: z.string().min(1).describe('PEM certificate file (the full chain), relative to the project.'),
          key: z.string().min(1).describe('PEM private key file of that certificate, relative to the project.'),
        })
        .optional()
        .describe(
          'Serve HTTPS with this certificate and key; the files are watched and a new pair is served without a restart (a bad pair is logged and the old one kept). Adding or removing it applies at the next start.',
        ),
      trustedProxy: z
        .array(z.string().min(1).refine(validProxyEntry, 'must be an IP address or a CIDR block (10.0.0.0/8, fd00::/8)'))
        .optional()
        .describe(
          'Addresses (IP or CIDR) of the reverse proxy in front of the daemon: only from them is X-Forwarded-For believed, for the client address in logs and the failed-authentication limiter. Declaring one allows a non-loopback host without tls.',
        ),
    })
    .superRefine((server, ctx) => {
      for (const issue of exposureIssues(server.host, server)) ctx.addIssue({ code: 'custom', path: [issue.path], message: issue.message });
    })
    .prefault({}),
  apiKeys: z.array(ApiKeySchema).default([]).describe('Keys that open the API, besides .svc/local.key and SERVICE_API_KEY; an edit applies without a restart.'),
  providers: z
    .record(z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'provider ids are lower-case letters, digits, "-" or "_"'), ProviderSchema)
    .default({})
    .superRefine((providers, ctx) => {
      for (const [id, p] of Object.entries(providers)) {
        if (!BUILT_IN_PROVIDERS.has(id) && !p.baseUrl) ctx.addIssue({ code: 'custom', path: [id, 'baseUrl'], message: `provider "${id}" is not built in, so it needs a baseUrl` });
      }
    }),
  orchestrator: z
    .strictObject({
      model: z.string().min(3).max(200).optional().describe('provider/model answering chat without an agent.'),
      maxTurns: z.int().min(1).max(64).default(8).describe('Upstream calls one orchestrated chat may make (each tool round is one).'),
    })
    .prefault({}),
  envFile: z
    .string()
    .min(1)
    .optional()
    .describe(
      'A private file (yours, mode 600) of NAME=value lines setting SVC_STATE_URL, SVC_DATA_URL and SVC_VAULT_KEY, relative to the project; the daemon and the CLI (svc restart, svc doctor, svc state) read it, and a variable set in the environment wins. Unset: <config dir>/projects/<name>.env when it exists. Applies at the next start.',
    ),
  state: z
    .strictObject({
      provider: z
        .enum(['sqlite', 'postgres'])
        .optional()
        .describe(
          "Where the daemon's own state lives (tasks, events, webhooks, the vault...): sqlite (.svc/state.sqlite) or postgres, which several daemons may share to act as one service. Unset: postgres when $SVC_STATE_URL is set, else sqlite. Applies at the next start.",
        ),
      url: z
        .string()
        .optional()
        .describe(
          'The PostgreSQL URL for provider postgres (postgres://user:password@host:5432/db); else $SVC_STATE_URL (from the environment or envFile). Prefer those: the URL holds a password. Never logged (shown masked).',
        ),
      vaultKeyFile: z
        .string()
        .min(1)
        .optional()
        .describe(
          "With provider postgres: a file holding the vault's master key (64 hexadecimal characters, or 32 bytes in base64), relative to the project, used when $SVC_VAULT_KEY is not set (in the environment or envFile). Every daemon on one database needs the same key; the OS keychain is never used for it.",
        ),
      statementTimeoutMs: z
        .int()
        .min(100)
        .max(600_000)
        .default(10_000)
        .describe(
          'With provider postgres: a state statement running longer fails (503 unavailable), and a transaction of the daemon left idle 2.5 s longer than this (the daemon suspended) is ended by the server, which frees its locks. Migrations at start have 60 s a statement, or this if longer.',
        ),
      driver: z
        .enum(['auto', 'libpq', 'pg'])
        .optional()
        .describe(
          'Deprecated, no effect: the state on PostgreSQL is always reached through `pg`, without blocking the daemon. Still accepted, with a warning at start, so older project.json files keep working.',
        ),
    })
    .prefault({}),
  data: z
    .strictObject({
      provider: z
        .enum(['sqlite', 'postgres'])
        .default('sqlite')
        .describe(
          'Where application databases live: sqlite (files in .svc/data/, the default) or postgres (a schema and a login role per database on a PostgreSQL 13+ server); applies at the next start.',
        ),
      url: z
        .string()
        .optional()
        .describe(
          "The PostgreSQL admin role's URL (postgres://user:password@host:5432/db), for provider postgres; else $SVC_DATA_URL (from the environment or envFile). Prefer those: the URL holds a password. Never logged (shown masked).",
        ),
      pool: z
        .strictObject({
          admin: z.int().min(1).max(64).default(4).describe('Connections of the admin role (provisioning, migrations; never caller SQL).'),
          perDatabase: z.int().min(1).max(64).default(4).describe("Connections of each of one database's two roles at most (writer and reader; each one's CONNECTION LIMIT is one more)."),
          idleMs: z.int().min(1_000).max(3_600_000).default(10_000).describe('An idle connection is closed after this long.'),
          openDatabases: z
            .int()
            .min(1)
            .max(10_000)
            .default(32)
            .describe("Databases with pools at once; past it the least recently used database's pools are closed (connections at most: admin + openDatabases × 2 × perDatabase)."),
        })
        .prefault({})
        .describe('Connection pools of provider postgres.'),
      statementTimeoutMs: z.int().min(100).max(600_000).default(5_000).describe('A caller statement running longer is stopped (503 data_unavailable).'),
      maxWorkers: z.int().min(2).max(256).default(6).describe('Worker processes at once, the spare included; past it the least recently used idle one is closed, and requests wait for a slot.'),
      workerMemoryMb: z
        .int()
        .min(192)
        .max(65_536)
        .default(384)
        .describe("Memory one worker may map (Linux RLIMIT_DATA; about 100 MB of it is Node's own): a statement needing more fails with 413 data_limit."),
    })
    .prefault({}),
  webhooks: z
    .strictObject({
      timeoutMs: z.int().min(100).max(60_000).default(10_000).describe('A delivery not answered in this time is a failed attempt.'),
      retryBaseMs: z
        .int()
        .min(10)
        .max(3_600_000)
        .default(5_000)
        .describe("The retry backoff's base: after attempt n fails, the next waits a random time up to retryBaseMs × 4^(n−1); a Retry-After is a floor."),
      concurrency: z.int().min(1).max(256).default(16).describe('Deliveries on the wire at once, all webhooks together.'),
      perEndpointConcurrency: z.int().min(1).max(256).default(8).describe('Deliveries of one webhook on the wire at once (at most `concurrency`): a receiver that hangs holds only its own.'),
      retentionDays: z.int().min(1).max(365).default(30).describe('Settled deliveries (and their attempts) older than this are pruned.'),
      maxDeliveries: z.int().min(100).max(10_000_000).default(50_000).describe('Settled deliveries beyond the newest this many are pruned; pending ones never are.'),
    })
    .prefault({}),
  events: z
    .strictObject({
      retentionHours: z.int().min(1).max(8760).default(24).describe('Events older than this are pruned (Last-Event-ID replay reaches this far back at most).'),
      maxEvents: z.int().min(100).max(10_000_000).default(100_000).describe('Events beyond the newest this many are pruned.'),
    })
    .prefault({}),
  tasks: z
    .strictObject({
      leaseSeconds: z
        .int()
        .min(5)
        .max(7 * 24 * 3600)
        .default(900)
        .describe('How long a claim holds a task without a heartbeat.'),
      requireReview: z
        .boolean()
        .default(false)
        .describe('Every task passes review: in_progress → done is refused (409 invalid_transition naming this setting), so work goes in_progress → review → done.'),
      maxRevisions: z
        .int()
        .min(0)
        .max(1000)
        .default(3)
        .describe(
          'How many times a task may be sent back for revision (an approval rejected with feedback: back to pending, and a revision run for an agent with a runtime). The rejection after the last one fails the task instead, saying so.',
        ),
    })
    .prefault({}),
  runner: z
    .strictObject({
      enabled: z
        .boolean()
        .default(true)
        .describe('Whether this daemon runs agents (agents with a runtime). A daemon with false serves the API only; on a shared PostgreSQL state the other daemons run them.'),
      maxConcurrentRuns: z
        .int()
        .min(1)
        .max(256)
        .optional()
        .describe(
          "Runs at once on this daemon, all agents together (default: one per 400 MB of the machine's memory beyond the first GB, at least 1 and at most 16). More wait in order: priority, then age.",
        ),
      baseRef: z
        .string()
        .min(1)
        .max(256)
        .optional()
        .describe("The git ref a task's branch starts from (default: the commit checked out in the project when the run starts). A task with one dependency starts from that dependency's branch."),
      promptFile: z
        .string()
        .min(1)
        .max(1024)
        .optional()
        .describe('A prompt template in the repository (relative to the project; {{task.title}}-style placeholders, docs/runs.md), instead of the built-in one.'),
      nice: z
        .int()
        .min(0)
        .max(19)
        .default(10)
        .describe(
          "The agents' CLIs run at this nice value (Linux and macOS), and so does what they start (builds, tests): the daemon keeps answering the API, its streams and the board while agents keep the cores busy. 0 runs them at the daemon's priority.",
        ),
      stallTimeoutSec: z.int().min(5).max(86_400).default(300).describe('A run that prints nothing for this long is ended as timed_out.'),
      timeoutSec: z
        .int()
        .min(10)
        .max(7 * 86_400)
        .default(3600)
        .describe('A run that lasts longer than this in all is ended as timed_out.'),
      permissionTimeoutSec: z
        .int()
        .min(10)
        .max(86_400)
        .default(900)
        .describe(
          'permissionMode "ask": a tool use the agent\'s CLI asks about waits this long for a person\'s decision (an svc approval), then permissionTimeoutAction decides it. The run waits meanwhile (its stall timer does not run; runner.timeoutSec does).',
        ),
      permissionTimeoutAction: z
        .enum(['approve', 'reject'])
        .default('reject')
        .describe('What a permission request nobody decided in permissionTimeoutSec becomes: reject (the agent is told no) or approve.'),
      keepWorkspacesHours: z
        .number()
        .min(0)
        .max(24 * 365)
        .default(24)
        .describe("A done task's worktree is removed this long after it finished (its branch stays)."),
      maxLogItems: z
        .int()
        .min(100)
        .max(1_000_000)
        .default(10_000)
        .describe("Log items kept per run; past it the run's log says how many were left out, and usage, summary and errors are still recorded."),
      labels: z
        .array(z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, 'labels are lower-case letters, digits, ".", "_" or "-"'))
        .max(32)
        .default([])
        .describe("This daemon's runner labels: an agent whose runtime names runners runs only on a runner with one of those labels."),
      heartbeatSec: z.number().min(0.1).max(300).default(5).describe('With the state on PostgreSQL: how often this runner says it is alive.'),
      offlineAfterSec: z
        .number()
        .min(1)
        .max(3600)
        .default(30)
        .describe(
          "With the state on PostgreSQL: a runner not heard from for this long is taken for gone, and its runs are started again on another (keep it several times the runners' heartbeatSec).",
        ),
      autoResume: z
        .boolean()
        .default(true)
        .describe("A run paused by its provider's usage limit or by a budget resumes its session by itself once the limit resets or the budget allows (true), or waits for `svc runs resume` (false)."),
    })
    .prefault({})
    .describe('Running agents: each task assigned to an agent with a runtime becomes a run of its CLI in a git worktree (docs/runs.md).'),
  budgets: BudgetsConfig.prefault({}).describe(
    "Budgets of the agents' runs: tokens or cost per agent or for the project, per day, week or month (docs/runs.md, Budgets). PUT /api/v1/budgets replaces them until this changes.",
  ),
  skillsDir: z.string().min(1).default('skills').describe('Folder of skills (SKILL.md files), relative to the project; watched.'),
});

export type ProjectConfig = z.output<typeof ProjectConfigSchema>;
export type ApiKeyConfig = z.output<typeof ApiKeySchema>;

export const KNOWN_TOP_LEVEL = Object.keys(ProjectConfigSchema.shape);
