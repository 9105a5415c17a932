import { Command } from 'commander';
import { action, parseIntOption } from '../../cli/action.js';
import { fills } from '../../cli/api-words.js';
import { confirm } from '../../cli/confirm.js';
import { UsageError, type CliContext } from '../../cli/context.js';
import { shortId } from '../../lib/human.js';
import { deliveryOf, resolveId, WEBHOOK } from '../../cli/ids.js';
import { emit, err, keyValues, style, table } from '../../cli/output.js';
import { seg } from '../../client/client.js';
import { listen } from './listen-command.js';
import type { Attempt, Delivery, DeliveryDetail, Webhook } from './schema.js';
import { systemClock } from '../../lib/clock.js';

const path = (id: string) => `/v1/webhooks/${seg(id)}`;

/** "1h", "30m", "2d", "90s" before now, or an ISO 8601 time, as ISO 8601. */
export function parseSince(v: string, now: number = systemClock.now()): string {
  const m = /^(\d+)\s*(s|m|h|d|w)$/.exec(v.trim());
  if (m) return new Date(now - Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86400, w: 604800 }[m[2] as 's']! * 1000).toISOString();
  const t = Date.parse(v);
  if (Number.isNaN(t)) throw new UsageError(`--since must be a duration such as 30m, 1h or 2d, or an ISO 8601 time; got "${v}"`);
  return new Date(t).toISOString();
}

const splitList = (v: string): string[] =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

const webhookTable = (hooks: Webhook[]) =>
  table(
    hooks,
    [
      { header: 'ID', value: (w) => shortId(w.id) },
      { header: 'STATE', value: (w) => (w.enabled ? 'enabled' : 'disabled') },
      { header: 'EVENTS', value: (w) => w.events.join(',') },
      { header: 'URL', value: (w) => w.url },
      { header: 'DESCRIPTION', value: (w) => w.description },
    ],
    'no webhooks; add one with `svc webhooks add <url>`',
  );

const when = (iso: string | null) => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : null);

const deliveryTable = (list: Delivery[]) =>
  table(
    list,
    [
      { header: 'ID', value: (x) => shortId(x.id) },
      { header: 'STATUS', value: (x) => x.status },
      { header: 'EVENT', value: (x) => x.event },
      { header: 'ATTEMPTS', value: (x) => x.attempts },
      { header: 'LAST', value: (x) => x.lastStatusCode ?? x.lastError },
      { header: 'NEXT', value: (x) => when(x.nextAttemptAt) },
      { header: 'CREATED', value: (x) => when(x.createdAt) },
    ],
    'no deliveries yet',
  );

const attemptTable = (list: Attempt[]) =>
  table(
    list,
    [
      { header: '#', value: (a) => a.n },
      { header: 'AT', value: (a) => when(a.at) },
      { header: 'RESULT', value: (a) => (a.statusCode !== null ? `HTTP ${a.statusCode}` : a.error) },
      { header: 'MS', value: (a) => a.durationMs },
      { header: 'ANSWER', value: (a) => a.responseBody },
    ],
    'no attempts yet',
  );

function printSecret(ctx: CliContext, data: { secret: string }, human: string): void {
  emit(ctx.json, data, () => human);
  if (!ctx.json) err(style.yellow('Store this secret now: it is shown only once (`svc webhooks rotate` replaces it).\n'));
}

export function webhooksCommand(): Command {
  const cmd = new Command('webhooks').description('Signed HTTP deliveries of events, with a delivery log');

  cmd
    .command('ls')
    .description('List webhooks')
    .action(
      action(async (ctx) => {
        const hooks = await ctx.client.get<Webhook[]>('/v1/webhooks');
        emit(ctx.json, hooks, () => webhookTable(hooks));
      }),
    );

  cmd
    .command('add <url>')
    .description('Add a webhook; prints its signing secret once')
    .option('--events <patterns>', 'comma-separated patterns: *, task:*, task:created (default *)')
    .option('--description <text>', 'what it is for')
    .action(
      action(async (ctx, url: string, o: { events?: string; description?: string }) => {
        const w = await ctx.client.post<Webhook & { secret: string }>('/v1/webhooks', { url, events: o.events ? splitList(o.events) : undefined, description: o.description });
        printSecret(ctx, w, `added ${w.id} → ${w.url} (${w.events.join(',')})\nsecret: ${w.secret}\n`);
      }),
    );

  cmd
    .command('show <id>')
    .description('Show a webhook (never its secret)')
    .action(
      action(async (ctx, id: string) => {
        const w = await ctx.client.get<Webhook>(path(await resolveId(ctx.client, WEBHOOK, id)));
        emit(ctx.json, w, () => keyValues({ ...w }));
      }),
    );

  fills(cmd.command('set <id>'), { 'body.enabled': '--enable/--disable' })
    .description('Change a webhook')
    .option('--url <url>', 'new target')
    .option('--events <patterns>', 'comma-separated patterns')
    .option('--description <text>', 'description ("" clears it)')
    .option('--enable', 'enable it (also after a 410 Gone)')
    .option('--disable', 'disable it (pending deliveries fail)')
    .action(
      action(async (ctx, id: string, o: { url?: string; events?: string; description?: string; enable?: boolean; disable?: boolean }) => {
        if (o.enable && o.disable) throw new UsageError('give --enable or --disable, not both');
        const body: Record<string, unknown> = {};
        if (o.url !== undefined) body.url = o.url;
        if (o.events !== undefined) body.events = splitList(o.events);
        if (o.description !== undefined) body.description = o.description === '' ? null : o.description;
        if (o.enable || o.disable) body.enabled = Boolean(o.enable);
        if (!Object.keys(body).length) throw new UsageError('nothing to change: give --url, --events, --description, --enable or --disable');
        const w = await ctx.client.patch<Webhook>(path(await resolveId(ctx.client, WEBHOOK, id)), body);
        emit(ctx.json, w, () => keyValues({ ...w }));
      }),
    );

  cmd
    .command('rm <id>')
    .description('Delete a webhook and its delivery log; pending deliveries are cancelled')
    .option('-y, --yes', 'do not ask for confirmation')
    .action(
      action(async (ctx, id: string, o: { yes?: boolean }) => {
        const full = await resolveId(ctx.client, WEBHOOK, id);
        await confirm(`delete webhook ${shortId(full)} and cancel its pending deliveries?`, Boolean(o.yes) || ctx.yes, `svc webhooks rm ${id}`);
        const r = await ctx.client.delete<{ removed: true }>(path(full));
        emit(ctx.json, r, () => `removed ${id}\n`);
      }),
    );

  fills(cmd.command('rotate <id>'), { 'body.graceSeconds': '--grace' })
    .description('Replace the signing secret; the old one keeps signing beside it during the grace window')
    .option('--grace <seconds>', 'how long the old secret stays valid (default 86400; 0 = now)', parseIntOption('--grace'))
    .action(
      action(async (ctx, id: string, o: { grace?: number }) => {
        const r = await ctx.client.post<{ secret: string; previousSecretExpiresAt: string | null }>(
          `${path(await resolveId(ctx.client, WEBHOOK, id))}/rotate-secret`,
          o.grace === undefined ? {} : { graceSeconds: o.grace },
        );
        printSecret(ctx, r, `secret: ${r.secret}\nold secret ${r.previousSecretExpiresAt ? `valid until ${when(r.previousSecretExpiresAt)}` : 'retired now'}\n`);
      }),
    );

  cmd
    .command('deliveries <id>')
    .description('List deliveries, newest first')
    .option('--limit <n>', 'page size (1-200, default 50)', parseIntOption('--limit'))
    .option('--before <deliveryId>', 'only deliveries older than this one (printed after a full page)')
    .action(
      action(async (ctx, id: string, o: { limit?: number; before?: string }) => {
        const hook = await resolveId(ctx.client, WEBHOOK, id);
        const before = o.before === undefined ? undefined : await resolveId(ctx.client, deliveryOf(hook), o.before);
        const res = await ctx.client.call<Delivery[]>('GET', `${path(hook)}/deliveries`, { query: { limit: o.limit, before } });
        emit(ctx.json, res.data, () => deliveryTable(res.data));
        const next = res.headers['x-next-cursor'];
        if (typeof next === 'string' && !ctx.json) err(style.dim(`more: svc webhooks deliveries ${id} --before ${next}\n`));
      }),
    );

  cmd
    .command('delivery <id> <deliveryId>')
    .description('Show a delivery with every attempt')
    .action(
      action(async (ctx, id: string, deliveryId: string) => {
        const hook = await resolveId(ctx.client, WEBHOOK, id);
        const x = await ctx.client.get<DeliveryDetail>(`${path(hook)}/deliveries/${seg(await resolveId(ctx.client, deliveryOf(hook), deliveryId))}`);
        const { attemptLog, body, ...rest } = x;
        emit(ctx.json, x, () => `${keyValues(rest)}\n${attemptTable(attemptLog)}\n${style.bold('body')}\n${body}\n`);
      }),
    );

  cmd
    .command('redeliver <id> <deliveryId>')
    .description('Send a delivery again (as a new delivery)')
    .action(
      action(async (ctx, id: string, deliveryId: string) => {
        const hook = await resolveId(ctx.client, WEBHOOK, id);
        const full = await resolveId(ctx.client, deliveryOf(hook), deliveryId);
        const x = await ctx.client.post<Delivery>(`${path(hook)}/deliveries/${seg(full)}/redeliver`);
        emit(ctx.json, x, () => `queued ${shortId(x.id)} (re-sends ${shortId(full)})\n`);
      }),
    );

  cmd
    .command('recover <id>')
    .description('Re-send every delivery that failed since a time')
    .requiredOption('--since <when>', 'a duration back from now (30m, 1h, 2d) or an ISO 8601 time')
    .action(
      action(async (ctx, id: string, o: { since: string }) => {
        const r = await ctx.client.post<{ recovered: number; deliveryIds: string[] }>(`${path(await resolveId(ctx.client, WEBHOOK, id))}/recover`, { since: parseSince(o.since) });
        emit(ctx.json, r, () => `queued ${r.recovered} failed deliver${r.recovered === 1 ? 'y' : 'ies'} again\n`);
      }),
    );

  cmd
    .command('test <id>')
    .description('Send a webhook:test event to this webhook')
    .action(
      action(async (ctx, id: string) => {
        const x = await ctx.client.post<Delivery>(`${path(await resolveId(ctx.client, WEBHOOK, id))}/test`);
        emit(ctx.json, x, () => `queued test delivery ${x.id}; see it with \`svc webhooks delivery ${id} ${x.id}\`\n`);
      }),
    );

  cmd
    .command('listen')
    .description('Receive deliveries here: registers a webhook to a local receiver, prints each verified delivery, removes it on Ctrl-C')
    .option('--events <patterns>', 'comma-separated patterns (default *)')
    .option('--forward-to <url>', 'also POST each delivery, headers and all, to this URL')
    .action(action(async (ctx, o: { events?: string; forwardTo?: string }) => listen(ctx, { events: o.events ? splitList(o.events) : ['*'], forwardTo: o.forwardTo })));

  return cmd;
}
