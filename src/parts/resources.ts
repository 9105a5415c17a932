import { LEADER, Services, type App, type ResourceStart } from '../app.js';
import { keySecrets } from '../config/keys.js';
import { PRUNER, startPruner } from '../db/prune.js';
import { errorFields, type Logger } from '../kernel/log.js';
import { startParts, type Part, type PartHooks } from '../kernel/parts.js';
import { packageVersion } from '../lib/version.js';
import { Runner } from '../resources/runs/runner.js';
import { runnerId } from '../resources/runs/runner-id.js';
import { RUNNER } from '../resources/runs/service.js';
import { SETUP } from '../resources/system/setup.js';
import { VAULT } from '../resources/vault/live.js';
import { WORKER_OPTIONS } from '../resources/webhooks/server.js';
import { SECRETS } from '../secrets.js';
import { latestSchemaVersion } from '../state-schema.js';
import { FUNCTION_TOOLS } from '../resources/chat/orchestrator.js';
import { functionTools } from '../tools/functions.js';
import type { DaemonContext } from './context.js';

/**
 * Retention runs in passes this far apart, in batches of PRUNE_BATCH rows: at 1,000 events a
 * second a pass finds ~10,000 rows over the limits, so the state holds at most that much more.
 */
const PRUNE_EVERY_MS = 10_000;
const PRUNE_BATCH = 500;

/** What the daemon says of its parts: at debug, each start with its time, each close; a close that fails, as an error. */
export const partLog = (log: () => Logger | undefined, of: string): PartHooks => ({
  started: (name, ms) => log()?.debug(`${of} started`, { part: name, ms: Math.round(ms * 10) / 10 }),
  closing: (name) => log()?.debug(`${of} closing`, { part: name }),
  closeFailed: (name, err) => log()?.error(`closing ${of} ${name} failed`, errorFields(err)),
});

/**
 * The app every handler reaches, and how the resources meet, per daemon: the services the daemon
 * knows (the vault, what it started with), then each resource's wire() in the list's order, before
 * any part can write an event. Nothing is registered on import.
 */
export const resourcesPart: Part<DaemonContext> = {
  name: 'resources',
  start: async (ctx) => {
    const { opts, root, paths, env, localKey } = ctx;
    ctx.listening = { host: opts.host ?? ctx.config.server.host, port: opts.port ?? ctx.config.server.port };
    const app: App = {
      root,
      stateDir: paths.dir,
      projectId: ctx.projectId,
      version: packageVersion(),
      startedAt: new Date(ctx.clock.now()),
      db: ctx.db,
      events: ctx.events,
      streams: ctx.streams,
      log: ctx.log,
      clock: ctx.clock,
      env,
      services: new Services(),
      config: () => ctx.config,
      address: () => ctx.listening,
      requestShutdown: ctx.requestShutdown,
    };
    ctx.app = app;
    app.services.provide(VAULT, ctx.vault);
    app.services.provide(LEADER, ctx.leader);
    ctx.setup = app.services.provide(SETUP, {
      settingsFile: ctx.settings.file ? { path: ctx.settings.file, names: ctx.settings.names } : null,
      stateUrl: ctx.sharedState,
      dataUrl: null,
      schemaVersion: latestSchemaVersion(),
    });
    app.services.provide(WORKER_OPTIONS, opts.webhooks ?? {});
    app.services.provide(FUNCTION_TOOLS, functionTools); // the chat orchestrator's tools: the registry is built on the resources
    // Every configured secret, for scrubbing an upstream's text: read at each call, so a reload, a
    // new vault entry or a rotated webhook secret counts at once (the local key only this closure holds).
    const holders = ctx.resources.flatMap((r) => (r.server.secrets ? [r.server.secrets] : []));
    app.services.provide(SECRETS, async () => [...keySecrets(ctx.config, env.SERVICE_API_KEY, localKey), ...(await Promise.all(holders.map((secrets) => secrets(app)))).flat()]);
    const wired = await startParts(
      ctx.resources.flatMap(({ resource, server: { wire } }): Part<App>[] => (wire ? [{ name: resource.name, start: wire }] : [])),
      app,
      partLog(() => ctx.log, 'wiring'),
    );
    // The runner: agents with a runtime get their tasks run here. Its routes need it now; it starts
    // once the daemon listens (its runs' CLIs call back on the daemon's URL).
    ctx.runner = ctx.config.runner.enabled ? new Runner(app, { id: runnerId(paths.dir), shared: ctx.sharedState !== null, url: () => ctx.url, keys: ctx.keys.runs }) : null;
    app.services.provide(RUNNER, ctx.runner);
    return () => wired.close();
  },
};

/**
 * The resources' background parts, in the list's order: started before the daemon listens, so that
 * no request (not even a shutdown) finds one half-started; closed in reverse.
 */
export const workersPart: Part<DaemonContext> = {
  name: 'workers',
  start: async (ctx) => {
    const start: ResourceStart = { app: ctx.app, checkResponses: ctx.opts.checkResponses ?? false };
    const workers = await startParts(
      ctx.resources.flatMap((r) => r.server.parts ?? []),
      start,
      partLog(() => ctx.log, 'worker'),
    );
    return () => workers.close();
  },
};

/** Retention of the state (events, deliveries, routine work), by age and by count, in small steps off the hot path. */
export const prunerPart: Part<DaemonContext> = {
  name: 'pruner',
  start: (ctx) => {
    const { app, log } = ctx;
    const pruner = startPruner({
      everyMs: ctx.opts.pruneEveryMs ?? PRUNE_EVERY_MS,
      batch: PRUNE_BATCH,
      steps: ctx.resources.flatMap((r) => (r.server.prune ?? []).map((step) => ({ name: step.name, run: (batch: number) => step.run(app, batch) }))),
      onError: (step, err) => log.error(`pruning ${step} failed; trying again at the next pass`, errorFields(err)),
      onPruned: (counts) => log.debug('pruned old state', counts),
    });
    app.services.provide(PRUNER, pruner);
    return () => pruner.close();
  },
};
