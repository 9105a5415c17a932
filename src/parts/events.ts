import { EventLog } from '../events/outbox.js';
import { DEFAULT_SSE_LIMITS, SseHub } from '../events/sse.js';
import type { Part } from '../kernel/parts.js';
import { noticeTo, type DaemonContext } from './context.js';

/**
 * The event log and its live streams. Every event the log writes runs the resources' sinks in its
 * own transaction (its webhook deliveries, the attention it needs), from the first one on: the
 * parts' start-up passes write events before the daemon listens.
 */
export const eventsPart: Part<DaemonContext> = {
  name: 'events',
  start: async (ctx) => {
    const { db, clock } = ctx;
    const servers = ctx.resources.map((r) => r.server).filter((s) => s.sink);
    const aheadOf = servers.map((s) => s.readAhead);
    const quietOf = servers.map((s) => s.quiet);
    // `app` exists before anything can write an event (the vault's opening writes none).
    ctx.events = await EventLog.open(db, {
      clock,
      sink: async (e, ahead) => {
        const read = ahead as unknown[] | undefined;
        for (let i = 0; i < servers.length; i++) await servers[i]!.sink!(ctx.app, e, read?.[i]);
      },
      readAhead: aheadOf.some(Boolean) ? () => Promise.all(aheadOf.map((f) => f?.(ctx.app))) : undefined,
      quiet: quietOf.every(Boolean)
        ? (e, ahead) => {
            const read = ahead as unknown[] | undefined;
            return quietOf.every((q, i) => q!(ctx.app, e, read?.[i]));
          }
        : undefined,
    });
    ctx.streams = new SseHub(ctx.events, clock, { ...DEFAULT_SSE_LIMITS, ...ctx.opts.sse });
    // A revoked run key ends the event streams opened with it.
    ctx.keys.onRevoked = (digests) => ctx.streams.revoke(digests);
  },
};

/** On a state other daemons share, their events reach this daemon's listeners and streams (events/fan-out.ts). */
export const fanOutPart: Part<DaemonContext> = {
  name: 'events fan-out',
  start: async (ctx) => {
    const url = ctx.sharedState;
    if (!url) return;
    // Loaded only on a shared state: its LISTEN client is pg's.
    const { startFanOut } = await import('../events/fan-out.js');
    const fanOut = startFanOut({ url, events: ctx.events, log: ctx.log, outage: ctx.outages.reporter(url, 'events'), onNotice: noticeTo(ctx, 'events'), pollMs: ctx.opts.eventsPollMs });
    return () => fanOut.close();
  },
};
