import { catalog } from './registry.js';

/** docs/events.md, generated from the registry (`npm run docs`); a test keeps the committed copy current. */
export function eventsMarkdown(): string {
  const out: string[] = [
    '# Events',
    '',
    'Generated from `src/events/registry.ts` by `npm run docs`; do not edit by hand.',
    '',
    'Every state change appends an event to the durable log in the same transaction as the change, then',
    'fans it out to the SSE stream (`GET /v1/events`). The same list, with JSON Schemas, is served',
    'without auth at `GET /v1/events/catalog`; `svc events catalog` lists the names.',
    '',
    'SSE frames: `id` is the durable sequence number (it never resets across restarts), `event` the name,',
    '`data` the JSON below. Filters: `filter=task:,approval:` (prefixes), `task:*`, exact names, `*`.',
    'Send `Last-Event-ID` on reconnect to replay what you missed within the retention window.',
    '',
    'Retention: events are kept 24 hours (`events.retentionHours` in project.json, 1..8760) and at most',
    'the newest 100,000 (`events.maxEvents`, 100..10,000,000), whichever is less: at 1,000 events a',
    'second the window is under two minutes. An older `Last-Event-ID` gets a comment',
    '(`: events 5-9 are past the retention window; reconcile through the resource endpoints`), then',
    'the replay from the oldest event kept. Ids are never reused. Pruning runs every 10 seconds in',
    'batches of 500, off the request path; a webhook delivery carries its own body, so no delivery',
    'needs its event row (see [webhooks.md](webhooks.md#retention)).',
    '',
    'Ids and order: ids have no gaps (a change rolled back takes none) and a stream carries every event',
    'in id order, which is the order their changes committed. On a state several daemons share',
    '(PostgreSQL), the id comes from one counter row that the writing transaction holds until it',
    'commits, so transactions that write events commit one after another; a change writes its events',
    'at its end (usually with its commit, in one round trip), so only that tail of it waits for the',
    'others ([deploy.md](deploy.md#one-state-several-daemons)).',
    '',
    'Limits: at most 32 open streams per API key (the next is answered 429 `rate_limited`) and 256 in all',
    '(503 `unavailable`), both with `Retry-After: 5`. Nothing is buffered for a slow reader: while its',
    'connection is full the stream waits, and as it drains it reads what it missed from the log, as a',
    'replay does. A client 1,000 matching events or 1 MiB behind (what its connection holds in the daemon',
    'plus what it has not been sent), or whose connection accepts nothing for 30 s, is disconnected with a',
    'TCP reset (which frees at once what the kernel held for it); reconnect with `Last-Event-ID` to resume.',
    '',
  ];
  for (const c of catalog()) {
    out.push(`## ${c.category}`, '', c.description, '', '| event | data | description |', '| --- | --- | --- |');
    for (const e of c.events) {
      const props = (e.dataSchema.properties ?? {}) as Record<string, unknown>;
      const required = new Set((e.dataSchema.required as string[] | undefined) ?? []);
      const fields = Object.keys(props)
        .map((k) => (required.has(k) ? `\`${k}\`` : `\`${k}?\``))
        .join(', ');
      out.push(`| \`${e.name}\` | ${fields} | ${e.description.replace(/\|/g, '\\|')} |`);
    }
    out.push('');
  }
  return out.join('\n');
}
