import { keySetFingerprint } from '../config/keys.js';
import type { Part } from '../kernel/parts.js';
import { tlsPaths } from '../kernel/tls.js';
import { startPresence } from '../resources/system/presence.js';
import { writeDaemonInfo } from '../state-dir.js';
import type { DaemonContext } from './context.js';

/** On a shared state the others (and svc doctor) see this daemon and the keys it accepts. */
export const presencePart: Part<DaemonContext> = {
  name: 'presence',
  start: async (ctx) => {
    if (!ctx.sharedState) return;
    const presence = await startPresence(ctx.app, ctx.url, () => keySetFingerprint(ctx.keys.configuredKeys()));
    return () => presence.close();
  },
};

/**
 * The daemon is up: clients find it through daemon.json, written only now that start-up is
 * complete, right before the start line, so that a request that follows it is never logged ahead
 * of it. The file goes when the "daemon info" part closes.
 */
export const announcePart: Part<DaemonContext> = {
  name: 'announce',
  start: (ctx) => {
    const { root, app, listening, url, config, tlsPair } = ctx;
    const tlsFiles = config.server.tls;
    writeDaemonInfo(root, {
      pid: process.pid,
      host: listening.host,
      port: listening.port,
      url,
      // The CLI trusts this certificate when it talks to its own project's daemon.
      ...(tlsFiles && tlsPair ? { ca: tlsPaths(root, tlsFiles).cert } : {}),
      startedAt: app.startedAt.toISOString(),
      version: app.version,
    });
    ctx.announced = true;
    ctx.log.info('listening', { url, project: config.name, root, version: app.version, ...(tlsPair ? { tls: tlsPair.fingerprint } : {}) });
  },
};

/**
 * The runner starts once the daemon listens (its runs' CLIs call back on its URL), after the start
 * line; it first reaps what a crashed predecessor left running. Awaited, so that what it says at
 * start (a crashed predecessor's runs taken over, runner:online) is said before startDaemon
 * returns. It closes first: runs end before connections are cut, since a CLI waiting on svc (a
 * permission request) would otherwise hear its call fail, take it for a refusal and go on.
 */
export const runnerPart: Part<DaemonContext> = {
  name: 'runner',
  start: async (ctx) => {
    const runner = ctx.runner;
    if (!runner) return;
    await runner.start();
    return () => runner.close();
  },
};
