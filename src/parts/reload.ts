import { buildKeys } from '../config/keys.js';
import { watchConfig } from '../config/watch.js';
import { errorFields, guarded } from '../kernel/log.js';
import type { Part } from '../kernel/parts.js';
import type { DaemonContext } from './context.js';

/**
 * project.json, watched: a valid change applies at once (keys, limits, everything read per use);
 * an invalid one is refused and the last good config stays in force. Started last but the daemon
 * info, so that an edit made once the daemon is announced is never missed.
 */
export const configReloadPart: Part<DaemonContext> = {
  name: 'config reload',
  start: async (ctx) => {
    const { root, env, log, events, streams, keys } = ctx;
    const watcher = watchConfig(
      root,
      guarded(log, 'applying a project.json change', async (result) => {
        if (!result.ok) {
          log.error('project.json change refused; the last good config stays in force', { issues: result.issues });
          await events.write(async () => events.emit('config:invalid', { issues: result.issues }));
          return;
        }
        const before = ctx.config.server;
        const dataBefore = ctx.config.data;
        const config = result.config;
        ctx.config = config;
        keys.configure(buildKeys(config, env.SERVICE_API_KEY, ctx.localKey));
        const revoked = streams.revoke(keys.digests());
        if (revoked) log.info('closed event streams of removed keys', { count: revoked });
        for (const w of result.warnings) log.warn('project.json', { warning: w });
        if (dataBefore.provider !== config.data.provider || dataBefore.url !== config.data.url) {
          log.warn('data.provider and data.url apply at the next restart', { provider: config.data.provider });
        }
        if (JSON.stringify(before.tls) !== JSON.stringify(config.server.tls)) {
          log.warn('server.tls applies at the next restart (a changed certificate file is reloaded at once)', { tls: config.server.tls ?? null });
        }
        if (before.host !== config.server.host || before.port !== config.server.port) {
          log.warn('server.host and server.port apply at the next restart', { host: config.server.host, port: config.server.port });
        }
        log.info('project.json reloaded', { keys: keys.list().length });
        await events.write(async () => events.emit('config:reloaded', { warnings: result.warnings }));
      }),
      (err) => log.error('watching project.json failed; edits will not apply until restart', errorFields(err)),
    );
    // An edit made once startDaemon has returned (or `listening` is logged) must not go unseen.
    await watcher.ready;
    return () => watcher.close().catch(() => undefined);
  },
};
