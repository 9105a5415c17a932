import { z } from 'zod';
import { route } from '../../app.js';
import { Timestamp } from '../common.js';

const tag = 'System';

export const StatusOut = z.object({
  name: z.string().describe('Project name.'),
  version: z.string(),
  pid: z.int(),
  host: z.string(),
  port: z.int(),
  startedAt: Timestamp,
  uptimeSeconds: z.number(),
  root: z.string().describe('Project root directory.'),
}).meta({ id: 'Status' });

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
        uptimeSeconds: Math.round((Date.now() - app.startedAt.getTime()) / 100) / 10,
        root: app.root,
      };
    },
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
