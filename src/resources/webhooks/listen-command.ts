import { createServer } from 'node:http';
import { request } from 'undici';
import { UsageError, type CliContext } from '../../cli/context.js';
import { err, out, style } from '../../cli/output.js';
import { readBodyBytes } from '../../kernel/body.js';
import { AppError, toErrorResponse } from '../../kernel/errors.js';
import type { Webhook } from './schema.js';
import { verifyWebhook } from './verify.js';
import { systemClock } from '../../lib/clock.js';
import { nowIso } from '../../lib/time.js';

// `svc webhooks listen`, like `stripe listen`: a receiver on a free loopback port, a webhook
// registered for it, one line per verified delivery, optional forwarding, and the webhook removed
// again on Ctrl-C. The daemon is local, so it reaches the receiver on 127.0.0.1. `svc notify run`
// is the same receiver with a handler of its own (a desktop notification per delivery).

/** Largest request the receiver reads (a delivery is one event, far smaller). */
export const MAX_BODY = 5 * 1024 * 1024;

const FORWARDED = ['content-type', 'user-agent', 'x-service-event', 'x-service-delivery-id', 'x-service-signature', 'webhook-id', 'webhook-timestamp', 'webhook-signature'];

/** One verified delivery. */
export interface Delivery {
  event: string;
  id: string;
  body: Buffer;
}

export interface ListenOptions {
  events: string[];
  forwardTo?: string;
  /** Who listens, first in the webhook's description (default `svc webhooks listen`). */
  name?: string;
  /** Handles each verified delivery in place of forwarding it: the status to answer and a note for its line. */
  handle?: (d: Delivery) => Promise<{ status: number; note: string }>;
}

export async function listen(ctx: CliContext, o: ListenOptions): Promise<void> {
  if (o.forwardTo !== undefined && !/^https?:\/\//.test(o.forwardTo)) throw new UsageError('--forward-to must be an http:// or https:// URL');
  let secret = '';
  const server = createServer((req, res) => {
    void (async () => {
      let body: Buffer;
      try {
        body = await readBodyBytes(req, MAX_BODY);
      } catch (e) {
        if (!(e instanceof AppError)) throw e;
        // Refused unread: answered as the daemon answers, and the connection closed rather than drained.
        const refused = toErrorResponse(e);
        res.writeHead(refused.status, { 'content-type': 'application/json', connection: 'close' }).end(JSON.stringify(refused.body));
        return;
      }
      const sig = req.headers['x-service-signature'];
      if (req.method !== 'POST' || !verifyWebhook(body, typeof sig === 'string' ? sig : undefined, secret)) {
        err(style.red(`refused a request with no valid signature (${req.method} ${req.url})\n`));
        res.writeHead(400).end('invalid signature');
        return;
      }
      const event = String(req.headers['x-service-event'] ?? '?');
      const id = String(req.headers['x-service-delivery-id'] ?? '?');
      let status = 200;
      let note = '';
      if (o.handle) {
        ({ status, note } = await o.handle({ event, id, body }));
      } else if (o.forwardTo) {
        try {
          const headers = Object.fromEntries(FORWARDED.filter((h) => typeof req.headers[h] === 'string').map((h) => [h, req.headers[h] as string]));
          const fwd = await request(o.forwardTo, { method: 'POST', headers, body, headersTimeout: 9000, bodyTimeout: 9000 });
          await fwd.body.dump();
          status = fwd.statusCode;
          note = ` → ${o.forwardTo} ${status}`;
        } catch (err) {
          status = 502;
          note = ` → ${o.forwardTo} failed: ${(err as Error).message}`;
        }
      }
      if (ctx.json) out(body.toString('utf8').replace(/\n/g, '') + '\n');
      else out(`${nowIso(systemClock)}  ${style.bold(event)}  ${id}${note}\n`);
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : o.handle ? 'failed' : 'forward failed');
    })().catch((e: unknown) => {
      err(style.red(`error handling a delivery: ${(e as Error).message}\n`));
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  let hook: Webhook & { secret: string };
  try {
    hook = await ctx.client.post<Webhook & { secret: string }>('/v1/webhooks', {
      url: `http://127.0.0.1:${port}/`,
      events: o.events,
      description: `${o.name ?? 'svc webhooks listen'} (pid ${process.pid}); removed when it stops`,
    });
  } catch (err) {
    server.close();
    throw err;
  }
  secret = hook.secret;
  // Forwards keep the daemon's signature headers as they came, signed with this webhook's secret:
  // the receiver verifies them with it, so it is shown (it dies with the webhook at Ctrl-C).
  err(
    `Ready. Webhook ${hook.id} sends ${o.events.join(',')} to http://127.0.0.1:${port}/${o.forwardTo ? `, forwarded to ${o.forwardTo} with its signature headers; verify them with the secret ${hook.secret}` : ''}. Ctrl-C to stop.\n`,
  );
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  try {
    await ctx.client.delete(`/v1/webhooks/${encodeURIComponent(hook.id)}`);
    err(`Removed webhook ${hook.id}.\n`);
  } finally {
    server.closeAllConnections();
    server.close();
  }
}
