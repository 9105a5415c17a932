import { chmodSync } from 'node:fs';
import { buildKeys } from '../config/keys.js';
import { stateUrl } from '../config/state.js';
import { openDatabase, openPostgresState, stmt, type DB } from '../db/open.js';
import { electLeader, soleLeader } from '../db/pg/leader.js';
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
/** The project's id, kept in the state: daemons starting together on one PostgreSQL state take the first one's. */
async function ensureProjectId(db: DB): Promise<string> {
  const read = async () => ((await stmt(db, "SELECT value FROM meta WHERE key = 'projectId'").get()) as { value: string } | undefined)?.value;
  const found = await read();
  if (found) return found;
  await stmt(db, "INSERT INTO meta (key, value) VALUES ('projectId', ?) ON CONFLICT (key) DO NOTHING").run(uuidv4());
  return (await read())!;
}

export const statePart: Part<DaemonContext> = {
  name: 'state',
  start: async (ctx) => {
    const { root, paths, config, env, log } = ctx;
    ctx.localKey = ensureLocalKey(root);
    // The same floor as keys in project.json: a short shared key is guessable.
    if (env.SERVICE_API_KEY && env.SERVICE_API_KEY.length < 16) throw new Error('SERVICE_API_KEY must be at least 16 characters');
    const shared = stateUrl(config, env);
    ctx.sharedState = shared;
    const db = shared
      ? await openPostgresState({ url: shared, statementTimeoutMs: config.state.statementTimeoutMs, outage: ctx.outages.reporter(shared, 'state'), onNotice: noticeTo(ctx, 'state') }, STATE_MIGRATIONS)
      : await openDatabase(paths.db, STATE_MIGRATIONS);
    ctx.db = db;
    const closeDb = async () => {
      try {
        // On SQLite the write-ahead log is folded into the file first (SqliteState.close).
        await db.close();
      } catch (err) {
        log.error('closing the state database failed', errorFields(err));
      }
    };
    if (shared) log.info('state on PostgreSQL', { url: maskUrl(shared) });
    if (shared && config.state.driver !== undefined)
      log.warn('project.json', { warning: 'state.driver has no effect any more (the state is always reached through `pg`, without blocking); remove it' });
    // The periodic jobs run on one daemon of those sharing a state: the leader (db/pg/leader.ts).
    const leader = shared ? electLeader(shared, { outage: ctx.outages.reporter(shared, 'leader'), onError: (err) => log.error('a leadership listener failed', errorFields(err)) }) : soleLeader();
    ctx.leader = leader;
    const close = async () => {
      await leader.close();
      await closeDb();
    };
    try {
      await leader.ready;
      ctx.keys = new KeyRing();
      ctx.keys.configure(buildKeys(config, env.SERVICE_API_KEY, ctx.localKey));
      for (const suffix of shared ? [] : ['', '-wal', '-shm']) {
        try {
          chmodSync(paths.db + suffix, 0o600);
        } catch {
          // -wal/-shm appear on first write
        }
      }
      ctx.projectId = await ensureProjectId(db);
    } catch (err) {
      await close();
      throw err;
    }
    ctx.clock = ctx.opts.clock ?? systemClock;
    return close;
  },
};
