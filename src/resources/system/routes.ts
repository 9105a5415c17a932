import { z } from 'zod';
import { route } from '../../app.js';
import { Timestamp } from '../common.js';
import { setupReport } from './setup.js';

const tag = 'System';

export const StatusOut = z
  .object({
    name: z.string().describe('Project name.'),
    version: z.string(),
    pid: z.int(),
    host: z.string(),
    port: z.int(),
    startedAt: Timestamp,
    uptimeSeconds: z.number(),
    root: z.string().describe('Project root directory.'),
  })
  .meta({ id: 'Status' });

const Check = z.object({
  check: z.string().describe('What was checked: data, state, vault key, api keys.'),
  status: z.enum(['ok', 'warn', 'fail', 'skip']),
  detail: z.string().describe('What was found (URLs masked).'),
  fix: z.string().optional().describe('How to fix it, when it is not ok.'),
});

export const SetupOut = z
  .object({
    settingsFile: z
      .object({ path: z.string(), names: z.array(z.string()).describe('The variables the daemon took from it (never their values).') })
      .nullable()
      .describe("The project's settings file the daemon read at start (project.json envFile, or the one in the user's config dir), or null."),
    vaultKey: z.object({
      source: z.enum(['env', 'keychain', 'file']).describe('Where the vault key came from (env: SVC_VAULT_KEY).'),
      shared: z.boolean().describe('The state is shared by several daemons.'),
    }),
    checks: z.array(Check).describe("The daemon's own checks of what it runs on, as `svc doctor` shows them."),
  })
  .meta({ id: 'Setup' });

export const systemRoutes = [
  route({
    method: 'GET',
    path: '/healthz',
    operationId: 'health',
    summary: 'Liveness probe (no auth)',
    tag,
    auth: 'public',
    response: z.object({ status: z.literal('ok'), version: z.string() }),
    handler: ({ app }) => ({ status: 'ok' as const, version: app.version }),
  }),
  route({
    method: 'GET',
    path: '/api/v1/status',
    operationId: 'getStatus',
    summary: 'Daemon status: pid, address, uptime and version',
    tag,
    response: StatusOut,
    handler: ({ app }) => {
      const { host, port } = app.address();
      return {
        name: app.config().name ?? '',
        version: app.version,
        pid: process.pid,
        host,
        port,
        startedAt: app.startedAt.toISOString(),
        uptimeSeconds: Math.round((app.clock.now() - app.startedAt.getTime()) / 100) / 10,
        root: app.root,
      };
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/status/setup',
    operationId: 'getSetup',
    summary: "What the daemon runs on: its state, its application databases' server and its vault key, checked now (URLs masked)",
    tag,
    response: SetupOut,
    handler: ({ app }) => setupReport(app),
  }),
  route({
    method: 'POST',
    path: '/api/v1/shutdown',
    operationId: 'shutdown',
    summary: 'Shut the daemon down gracefully (in-flight requests finish)',
    tag,
    status: 202,
    response: z.object({ stopping: z.literal(true) }),
    handler: ({ app, res }) => {
      res.once('finish', () => app.requestShutdown());
      return { stopping: true as const };
    },
  }),
];
