import { guarded } from '../kernel/log.js';
import type { Part } from '../kernel/parts.js';
import type { DatabaseState } from '../resources/data/backend.js';
import { reapOrphanWorkers, WorkerRecords } from '../resources/data/orphans.js';
import { DATA_BACKEND, reconcile } from '../resources/data/service.js';
import { sharedCredentials } from '../resources/data/shared-credentials.js';
import { DataRunner } from '../resources/data/sql-runner.js';
import { DATA_RUNNER, removeOrphanFiles, SqliteBackend } from '../resources/data/sqlite-backend.js';
import { allIds } from '../resources/data/store.js';
import type { DaemonContext } from './context.js';

/** When the data runner starts its spare worker: after the daemon's start-up (a few hundred ms). */
const SPARE_AFTER_MS = 1_000;

/** Where the application databases live: project.json's data.provider, read at start. */
export const dataProviderPart: Part<DaemonContext> = {
  name: 'data provider',
  start: async (ctx) => {
    const { app, config, env, log, paths, sharedState } = ctx;
    const onOpened = guarded(log, 'updating the database registry', (id: string, state: DatabaseState) => reconcile(app, id, state));
    if (config.data.provider === 'postgres') {
      // Application databases on a PostgreSQL server: a schema and a login role each (pg/backend.ts).
      // Loaded only here: pg and the SQL parser are of no use to a daemon whose databases are SQLite.
      const [{ PgBackend }, { checkServer, dataUrl }, { maskUrl }] = await Promise.all([
        import('../resources/data/pg/backend.js'),
        import('../resources/data/pg/connect.js'),
        import('../db/pg/url.js'),
      ]);
      const url = dataUrl(config.data.url, env);
      await checkServer(url, 5_000);
      ctx.setup.dataUrl = url;
      const backend = new PgBackend({
        url,
        log,
        outage: ctx.outages.reporter(url, 'data'),
        statementTimeoutMs: () => ctx.config.data.statementTimeoutMs,
        pool: config.data.pool,
        onOpened,
        // Daemons sharing a state share their databases' credentials too, instead of each rotating them.
        ...(sharedState ? { credentials: sharedCredentials(app), stateUrl: sharedState } : {}),
      });
      try {
        await backend.hardenPublic();
      } catch (err) {
        await backend.close();
        throw err;
      }
      app.services.provide(DATA_BACKEND, backend);
      log.info('application databases on PostgreSQL', { url: maskUrl(url) });
      return () => backend.close();
    }
    // Application databases: one child process per open database, so that caller SQL can be
    // stopped (killed) at data.statementTimeoutMs without stalling the daemon.
    removeOrphanFiles(paths.data, new Set(await allIds(ctx.db)));
    // A worker of a daemon that crashed and could not die with it (stopped, say) would hold its
    // database's write lock: killed by pid and start time before any database is opened again.
    await reapOrphanWorkers(paths.workers, log);
    const runner = new DataRunner({
      log,
      dir: paths.data,
      statementTimeoutMs: () => ctx.config.data.statementTimeoutMs,
      maxWorkers: () => ctx.config.data.maxWorkers,
      workerMemoryMb: () => ctx.config.data.workerMemoryMb,
      records: new WorkerRecords(paths.workers),
      onOpened: onOpened as (id: string, state: unknown) => void,
      // Its spare worker process once the daemon is up, not while it starts.
      spareAfterMs: SPARE_AFTER_MS,
    });
    app.services.provide(DATA_RUNNER, runner);
    app.services.provide(DATA_BACKEND, new SqliteBackend(runner, paths.data));
    return () => runner.close();
  },
};
