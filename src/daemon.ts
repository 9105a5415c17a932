import type { App } from './app.js';
import type { HttpServer } from './kernel/server.js';
import { startParts, type Part } from './kernel/parts.js';
import { announcePart, presencePart, runnerPart } from './parts/announce.js';
import { configPart } from './parts/config.js';
import type { DaemonContext, DaemonOptions } from './parts/context.js';
import { dataProviderPart } from './parts/data.js';
import { eventsPart, fanOutPart } from './parts/events.js';
import { boardPart, httpPart, tlsReloadPart } from './parts/http.js';
import { daemonInfoPart, loggingPart } from './parts/logging.js';
import { configReloadPart } from './parts/reload.js';
import { partLog, prunerPart, resourcesPart, workersPart } from './parts/resources.js';
import { statePart } from './parts/state.js';
import { vaultPart } from './parts/vault.js';
import { loadResources } from './resources/index.js';
import { loadApi } from './routes.js';
import { statePaths } from './state-dir.js';

// The composition root: a daemon is these parts, started in this order and closed in the reverse
// one (docs/architecture.md). A part that fails to start closes those started before it, so a
// start that fails part-way leaves no file, database, watcher or timer behind in the process that
// called it (a test, or an embedding tool). The resources come in through src/resources/index.ts.

export type { DaemonOptions };

export const DAEMON_PARTS: readonly Part<DaemonContext>[] = [
  configPart,
  loggingPart,
  daemonInfoPart,
  statePart,
  eventsPart,
  vaultPart,
  resourcesPart,
  workersPart,
  fanOutPart,
  prunerPart,
  dataProviderPart,
  boardPart,
  httpPart,
  tlsReloadPart,
  configReloadPart,
  presencePart,
  announcePart,
  runnerPart,
];

export interface Daemon {
  app: App;
  host: string;
  port: number;
  url: string;
  /** The HTTP layer: connection counts and the failed-auth limiter. */
  http: HttpServer;
  /** Resolves once the daemon has shut down, whoever asked. */
  closed: Promise<void>;
  close(): Promise<void>;
}

export async function startDaemon(opts: DaemonOptions): Promise<Daemon> {
  const [resources, api] = await Promise.all([loadResources(), loadApi()]);
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  let closing: Promise<void> | undefined;
  // Filled in by the parts, in order (parts/context.ts says which sets what).
  const ctx = {
    opts,
    root: opts.root,
    paths: statePaths(opts.root),
    resources,
    api,
    requestShutdown: () => void close(),
    runner: null,
    url: '',
    announced: false,
  } as Partial<DaemonContext> as DaemonContext;
  const starting = startParts(
    DAEMON_PARTS,
    ctx,
    partLog(() => ctx.log, 'part'),
  );

  function close(): Promise<void> {
    closing ??= (async () => {
      // A shutdown asked for while the last parts start waits for them.
      const parts = await starting.catch(() => null);
      if (!parts) return;
      ctx.log.info('shutting down');
      await parts.close();
      resolveClosed();
    })();
    return closing;
  }

  await starting;
  return { app: ctx.app, host: ctx.listening.host, port: ctx.listening.port, url: ctx.url, http: ctx.http, closed, close };
}
