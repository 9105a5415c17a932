import { chmodSync } from 'node:fs';
import { buildKeys } from '../config/keys.js';
import { stateUrl } from '../config/state.js';
import { isPostgres, openDatabase, openPostgresState, stmt } from '../db/open.js';
import { maskUrl } from '../db/pg/url.js';
import { errorFields } from '../kernel/log.js';
import type { Part } from '../kernel/parts.js';
import { systemClock } from '../lib/clock.js';
import { uuidv4 } from '../lib/ids.js';
import { ensureLocalKey } from '../state-dir.js';
import { STATE_MIGRATIONS } from '../state-schema.js';
import { noticeTo, type DaemonContext } from './context.js';
import { KeyRing } from './keys.js';

/**
 * The state database, migrated (SQLite in .svc/, or PostgreSQL shared by every daemon on it:
 * docs/deploy.md), the project's id, and the keys the API accepts.
 */
export const statePart: Part<DaemonContext> = {
  name: 'state',
  start: (ctx) => {
    const { root, paths, config, env, log } = ctx;
    ctx.localKey = ensureLocalKey(root);
    // The same floor as keys in project.json: a short shared key is guessable.
    if (env.SERVICE_API_KEY && env.SERVICE_API_KEY.length < 16) throw new Error('SERVICE_API_KEY must be at least 16 characters');
    const shared = stateUrl(config, env);
    ctx.sharedState = shared;
    const db = shared
      ? openPostgresState(
          { url: shared, statementTimeoutMs: config.state.statementTimeoutMs, driver: config.state.driver, outage: ctx.outages.reporter(shared, 'state'), onNotice: noticeTo(ctx, 'state') },
          STATE_MIGRATIONS,
        )
      : openDatabase(paths.db, STATE_MIGRATIONS);
    ctx.db = db;
    if (shared && isPostgres(db)) log.info('state on PostgreSQL', { url: maskUrl(shared), driver: db.driver });
    ctx.keys = new KeyRing();
    ctx.keys.configure(buildKeys(config, env.SERVICE_API_KEY, ctx.localKey));
    for (const suffix of shared ? [] : ['', '-wal', '-shm']) {
      try {
        chmodSync(paths.db + suffix, 0o600);
      } catch {
        // -wal/-shm appear on first write
      }
    }
    let projectId = (stmt(db, "SELECT value FROM meta WHERE key = 'projectId'").get() as { value: string } | undefined)?.value;
    if (!projectId) {
      projectId = uuidv4();
      // Daemons starting together on one PostgreSQL state: the first one's id wins.
      stmt(db, "INSERT INTO meta (key, value) VALUES ('projectId', ?) ON CONFLICT (key) DO NOTHING").run(projectId);
      projectId = (stmt(db, "SELECT value FROM meta WHERE key = 'projectId'").get() as { value: string }).value;
    }
    ctx.projectId = projectId;
    ctx.clock = ctx.opts.clock ?? systemClock;
    return () => {
      try {
        if (!isPostgres(db)) (db as unknown as { pragma(s: string): unknown }).pragma('wal_checkpoint(TRUNCATE)');
        db.close();
      } catch (err) {
        log.error('closing the state database failed', errorFields(err));
      }
    };
  },
};
