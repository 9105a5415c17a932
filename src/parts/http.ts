import type { IncomingMessage } from 'node:http';
import type { Server as TlsServer } from 'node:https';
import { errorFields } from '../kernel/log.js';
import type { Part } from '../kernel/parts.js';
import { createHttpServer } from '../kernel/server.js';
import { watchTls } from '../kernel/tls.js';
import { inExe } from '../lib/exe.js';
import { boardFiles, embeddedBoardFiles } from '../resources/board/assets.js';
import { BOARD, BOARD_SESSIONS } from '../resources/board/routes.js';
import { sessionOf } from '../resources/board/sessions.js';
import type { DaemonContext } from './context.js';

/** How long in-flight requests may take to finish once the daemon shuts down. */
const SHUTDOWN_GRACE_MS = 5_000;

/** The board: its files, and its session cookies as a second way to authenticate. */
export const boardPart: Part<DaemonContext> = {
  name: 'board',
  start: (ctx) => {
    const { app, opts } = ctx;
    const keys = () => ctx.keys.list();
    app.services.provide(BOARD, { assets: opts.boardAssets ?? (inExe() ? embeddedBoardFiles() : boardFiles()), keys });
    ctx.boardSession = (req: IncomingMessage) => sessionOf(ctx.db, req, keys(), ctx.listening.port, ctx.clock.now());
    app.services.provide(BOARD_SESSIONS, ctx.boardSession);
  },
};

/** The API: every route of the resources, behind the guards, listening. Closing ends the event streams, then the connections. */
export const httpPart: Part<DaemonContext> = {
  name: 'HTTP',
  start: async (ctx) => {
    const { app, opts, log } = ctx;
    const http = createHttpServer({
      app,
      routes: ctx.api.routes,
      settings: () => ctx.config.server,
      keys: () => ctx.keys.list(),
      session: ctx.boardSession,
      log,
      clock: ctx.clock,
      checkResponses: opts.checkResponses,
      connections: opts.connections,
      tls: ctx.tlsPair,
    });
    await new Promise<void>((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException) => {
        reject(err.code === 'EADDRINUSE' ? new Error(`port ${ctx.listening.port} on ${ctx.listening.host} is in use; is another svc running? Try --port 0 for any free port.`) : err);
      };
      http.server.once('error', onError);
      http.server.listen(ctx.listening.port, ctx.listening.host, () => {
        http.server.off('error', onError);
        resolve();
      });
    });
    // After listening, a server error (EMFILE on accept…) is logged, never fatal.
    http.server.on('error', (err) => log.error('http server error', errorFields(err)));
    const addr = http.server.address();
    if (addr && typeof addr === 'object') ctx.listening = { host: ctx.listening.host, port: addr.port };
    // A wildcard address is not one to connect to: local clients are pointed at loopback.
    const connectHost = ctx.listening.host === '0.0.0.0' ? '127.0.0.1' : ctx.listening.host === '::' ? '::1' : ctx.listening.host;
    const urlHost = connectHost.includes(':') ? `[${connectHost}]` : connectHost;
    ctx.url = `${ctx.tlsPair ? 'https' : 'http'}://${urlHost}:${ctx.listening.port}`;
    ctx.http = http;
    return async () => {
      ctx.streams.closeAll();
      await http.close(SHUTDOWN_GRACE_MS);
    };
  },
};

/** With server.tls: a changed certificate or key file is served at once. */
export const tlsReloadPart: Part<DaemonContext> = {
  name: 'TLS reload',
  start: async (ctx) => {
    const files = ctx.config.server.tls;
    if (!ctx.tlsPair || !files) return;
    const watcher = watchTls(ctx.root, files, ctx.http.server as TlsServer, ctx.log, ctx.tlsPair.fingerprint);
    await watcher.ready;
    return () => watcher.close().catch(() => undefined);
  },
};
