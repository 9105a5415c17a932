import { Command } from 'commander';
import { action, fail } from './action.js';
import { cliContext, type GlobalOptions } from './context.js';
import { emit, err, out, style, table } from './output.js';
import { ApiError } from '../client/client.js';
import { streamEvents, type SseMessage } from '../client/sse.js';
import { systemClock } from '../lib/clock.js';

/** One readable line: local time, name, then the event's scalar fields as key=value. */
export function formatEvent(m: SseMessage, now = new Date(systemClock.now())): string {
  let data: Record<string, unknown> = {};
  try {
    data = JSON.parse(m.data) as Record<string, unknown>;
  } catch {
    // show it raw below
  }
  const fields = Object.entries(data)
    .filter(([, v]) => v !== null && v !== undefined && (typeof v !== 'object' || Array.isArray(v)))
    .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : String(v)}`)
    .join(' ');
  const time = now.toTimeString().slice(0, 8);
  return `${style.dim(time)}  ${style.bold(m.event.padEnd(20))} ${fields}`;
}

export function eventsCommand(): Command {
  const cmd = new Command('events').description('Watch the live event stream, or list the events there are');
  cmd
    .command('tail')
    .description('Print events as they happen; reconnects (with Last-Event-ID) when the daemon restarts')
    .option('--filter <names>', 'comma-separated names or prefixes, e.g. task:,approval:')
    .action(async function (this: Command, o: { filter?: string }) {
      const abort = new AbortController();
      const stop = () => abort.abort();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      const json = Boolean(this.optsWithGlobals<GlobalOptions>().json);
      let lastEventId: string | undefined;
      let delay = 250;
      let warned = false;
      while (!abort.signal.aborted) {
        try {
          // Re-read .svc/daemon.json each time: a restarted daemon may listen on another port.
          const ctx = cliContext(this);
          await streamEvents(
            ctx.client,
            (m) => {
              lastEventId = m.id ?? lastEventId;
              delay = 250;
              if (warned) {
                err('reconnected\n');
                warned = false;
              }
              if (json) out(JSON.stringify({ id: m.id ? Number(m.id) : null, event: m.event, data: JSON.parse(m.data) }) + '\n');
              else out(formatEvent(m) + '\n');
            },
            { filter: o.filter, lastEventId, signal: abort.signal },
          );
        } catch (e) {
          if (e instanceof ApiError) {
            fail(e, json, this);
            break;
          }
          if (!warned) {
            err(`the daemon is not answering; retrying (Ctrl-C to stop)\n`);
            warned = true;
          }
        }
        if (abort.signal.aborted) break;
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 5000);
      }
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    });
  // What the API's "see GET /v1/events/catalog" comes to on the command line.
  cmd
    .command('catalog')
    .description('List every event name, with what it means (for --filter and webhook --events)')
    .action(
      action(async (ctx) => {
        const categories = await ctx.client.get<{ category: string; events: { name: string; description: string }[] }[]>('/v1/events/catalog');
        const events = categories.flatMap((c) => c.events.map((e) => ({ name: e.name, description: e.description })));
        emit(ctx.json, events, () =>
          table(events, [
            { header: 'EVENT', value: (e) => e.name },
            { header: 'DESCRIPTION', value: (e) => e.description, flex: true },
          ]),
        );
      }),
    );
  return cmd;
}
