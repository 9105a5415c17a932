import { hostname } from 'node:os';
import type { App } from '../../app.js';
import { stmt } from '../../db/open.js';
import { errorFields } from '../../kernel/log.js';
import { systemClock } from '../../lib/clock.js';
import { uuidv4 } from '../../lib/ids.js';

// Which daemons share this state, and with which API keys: each writes its row when it starts,
// every PRESENCE_EVERY_MS after, and removes it at a clean stop. A daemon killed outright leaves
// its row, which goes stale (seen_at stops moving): readers count only recent rows. Times are the
// machines' wall clocks (the seam's systemClock), not the daemon's clock: rows are compared across
// machines and with svc doctor's own clock, and a test's fake clock in one daemon would make every
// other process misread them.

export const PRESENCE_EVERY_MS = 15_000;
/** A row not renewed for this long is a daemon that is gone. */
export const PRESENCE_STALE_MS = 3 * PRESENCE_EVERY_MS;

export interface Presence {
  close(): void;
}

export interface PresentDaemon {
  id: string;
  url: string;
  hostname: string;
  pid: number;
  version: string;
  keys: string;
  startedAt: string;
  seenAt: number;
}

export async function startPresence(app: App, url: string, keys: () => string): Promise<Presence> {
  const id = uuidv4();
  const write = async () =>
    await stmt(
      app.db,
      `INSERT INTO daemons (id, url, hostname, pid, version, keys, started_at, seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET url = excluded.url, keys = excluded.keys, seen_at = excluded.seen_at`,
    ).run(id, url, hostname(), process.pid, app.version, keys(), app.startedAt.toISOString(), systemClock.now());
  try {
    await write();
  } catch (err) {
    app.log.warn("writing this daemon's presence on the state failed; trying again in 15 s", errorFields(err));
  }
  const renew = async () => {
    try {
      await write();
      // Rows of daemons gone long ago are dropped by whoever is still here.
      await stmt(app.db, 'DELETE FROM daemons WHERE seen_at < ?').run(systemClock.now() - 20 * PRESENCE_STALE_MS);
    } catch (err) {
      app.log.warn("renewing this daemon's presence on the state failed", errorFields(err));
    }
  };
  const timer = setInterval(() => void renew(), PRESENCE_EVERY_MS);
  timer.unref();
  return {
    async close() {
      clearInterval(timer);
      try {
        await stmt(app.db, 'DELETE FROM daemons WHERE id = ?').run(id);
      } catch {
        // Closing anyway: the row goes stale.
      }
    },
  };
}

/** The daemons seen on the state recently, newest first. */
export const presentDaemons = async (app: Pick<App, 'db'>, now = systemClock.now()): Promise<PresentDaemon[]> =>
  (await stmt(app.db, 'SELECT id, url, hostname, pid, version, keys, started_at AS startedAt, seen_at AS seenAt FROM daemons WHERE seen_at > ? ORDER BY seen_at DESC').all(
    now - PRESENCE_STALE_MS,
  )) as PresentDaemon[];
