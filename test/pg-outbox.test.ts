import pg from 'pg';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { openPostgresState } from '../src/db/open.js';
import type { PgState } from '../src/db/pg/state.js';
import { EventLog, type StoredEvent } from '../src/events/outbox.js';
import { systemClock } from '../src/lib/clock.js';
import { STATE_MIGRATIONS } from '../src/state-schema.js';
import { freshStateDatabase } from './state-pg.js';

// The event log on PostgreSQL (src/events/outbox.ts): events no sink has anything to do for are
// sent with the write's COMMIT, in one round trip, so the event-id counter row is locked only
// while the server runs them; any other event is written the moment it is emitted, as before.
// "Locked" is seen from another session: SELECT ... FOR UPDATE NOWAIT on the counter row.

const noPg = inject('pgUrl') === '';
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

interface Setup {
  db: PgState;
  log: EventLog;
  heard: StoredEvent[];
  sunk: { name: string; id: number; ahead: unknown }[];
  /** True when another session can take the counter row now. */
  counterFree(): Promise<boolean>;
  other: pg.Client;
}

/** A state database with its schema, a log whose sink is quiet for the names in `quietFor`, and another session. */
async function setup(
  o: {
    quietFor?: string[];
    statementTimeoutMs?: number;
    beforeOpen?: (c: pg.Client) => Promise<void>;
    readAhead?: (db: PgState) => Promise<unknown>;
    quiet?: (e: StoredEvent, ahead: unknown) => boolean;
    sink?: (db: PgState, e: StoredEvent, log: EventLog) => Promise<void>;
  } = {},
): Promise<Setup> {
  const url = await freshStateDatabase();
  const other = new pg.Client(url);
  await other.connect();
  cleanup.push(() => other.end());
  await o.beforeOpen?.(other);
  const db = await openPostgresState({ url, statementTimeoutMs: o.statementTimeoutMs ?? 5_000 }, STATE_MIGRATIONS);
  cleanup.push(() => db.close());
  const quietFor = new Set(o.quietFor ?? []);
  const sunk: Setup['sunk'] = [];
  const log = new EventLog(db, {
    clock: systemClock,
    readAhead: o.readAhead ? () => o.readAhead!(db) : async () => 'read ahead',
    sink: async (e, ahead) => {
      sunk.push({ name: e.name, id: e.id, ahead });
      await o.sink?.(db, e, log);
    },
    quiet: o.quiet ?? ((e, ahead) => ahead === 'read ahead' && quietFor.has(e.name)),
  });
  const heard: StoredEvent[] = [];
  log.subscribe((e) => heard.push(e));
  // The counter row exists from the first event on.
  await log.write(async () => void log.emit('team:created', { name: 'first' }));
  heard.length = 0;
  sunk.length = 0;
  const counterFree = async () => {
    await other.query('BEGIN');
    try {
      await other.query("SELECT value FROM meta WHERE key = 'lastEventId' FOR UPDATE NOWAIT");
      return true;
    } catch (err) {
      if ((err as { code?: string }).code === '55P03') return false;
      throw err;
    } finally {
      await other.query('ROLLBACK');
    }
  };
  return { db, log, heard, sunk, counterFree, other };
}

describe.skipIf(noPg)('the event log on PostgreSQL', () => {
  it('sends events no sink has anything to do for with the COMMIT: the counter stays free until then, and the sink is not called', async () => {
    const { db, log, heard, sunk, counterFree } = await setup({ quietFor: ['team:created', 'team:renamed'] });
    const events = await log.write(async () => {
      const a = log.emit('team:created', { name: 'a' });
      // A statement after the emit: the event is not in the way of it, and holds nothing yet.
      await db.prepare('SELECT 1 AS one').get();
      const b = log.emit('team:renamed', { name: 'b', oldName: 'a' });
      await db.prepare('SELECT 1 AS one').get();
      expect(await counterFree()).toBe(true);
      expect([a.id, b.id]).toEqual([0, 0]);
      return [a, b];
    });
    expect(sunk).toEqual([]);
    // Their ids once committed, in the order emitted, right after the first write's.
    expect(events.map((e) => e.id)).toEqual([2, 3]);
    expect(heard.map((e) => [e.id, e.name])).toEqual([
      [2, 'team:created'],
      [3, 'team:renamed'],
    ]);
    expect((await log.since(1, 10)).map((e) => [e.id, e.name, e.data])).toEqual([
      [2, 'team:created', { name: 'a' }],
      [3, 'team:renamed', { name: 'b', oldName: 'a' }],
    ]);
    expect(await log.lastId()).toBe(3);
  });

  it('writes an event a sink has work for at once, the counter held until the commit, the sink given its id and what was read ahead', async () => {
    const { log, sunk, counterFree } = await setup({ quietFor: [] });
    await log.write(async () => {
      log.emit('team:created', { name: 'a' });
      await log.flush();
      expect(await counterFree()).toBe(false);
    });
    expect(sunk).toEqual([{ name: 'team:created', id: 2, ahead: 'read ahead' }]);
    expect(await counterFree()).toBe(true);
  });

  it('a quiet event, then one with sink work: both written when the second comes, in order, the sink called for each', async () => {
    const { db, log, heard, sunk } = await setup({ quietFor: ['team:created'] });
    await log.write(async () => {
      log.emit('team:created', { name: 'a' });
      await db.prepare('SELECT 1 AS one').get();
      log.emit('team:renamed', { name: 'b', oldName: 'a' });
    });
    expect(sunk).toEqual([
      { name: 'team:created', id: 2, ahead: 'read ahead' },
      { name: 'team:renamed', id: 3, ahead: undefined },
    ]);
    expect(heard.map((e) => [e.id, e.name])).toEqual([
      [2, 'team:created'],
      [3, 'team:renamed'],
    ]);
  });

  it('flush() and a nested write give their events ids before they return (never with the COMMIT)', async () => {
    const { log, counterFree, heard } = await setup({ quietFor: ['team:created', 'team:renamed'] });
    await log.write(async () => {
      const e = log.emit('team:created', { name: 'a' });
      await log.flush();
      expect(e.id).toBe(2);
      expect(await counterFree()).toBe(false);
    });
    await log.write(async () => {
      // A savepoint's events are written before it ends, so a sink failing on them fails it alone.
      await log.write(async () => void log.emit('team:renamed', { name: 'b', oldName: 'a' }));
      expect(await counterFree()).toBe(false);
    });
    expect(heard.map((e) => e.id)).toEqual([2, 3]);
  });

  it('values go as literals, intact whatever they hold, with standard_conforming_strings on or off', async () => {
    const nasty = `it's a "test" \\ \\\\ $1 ? '; DROP TABLE events; -- ü 🎉 \u0001 \\' E'x'`;
    for (const scs of ['on', 'off']) {
      const { log, heard } = await setup({
        quietFor: ['team:created'],
        beforeOpen: async (c) => void (await c.query(`ALTER DATABASE ${c.database} SET standard_conforming_strings = ${scs}`)),
      });
      await log.write(async () => void log.emit('team:created', { name: nasty }));
      expect(heard.at(-1)!.data).toEqual({ name: nasty });
      expect((await log.since(1, 10))[0]!.data).toEqual({ name: nasty });
    }
  });

  it('a COMMIT that cannot take the counter in time fails the whole write: nothing kept, nothing heard, and the next write goes through', async () => {
    const { log, heard, other } = await setup({ quietFor: ['team:created'], statementTimeoutMs: 300 });
    await other.query('BEGIN');
    await other.query("SELECT value FROM meta WHERE key = 'lastEventId' FOR UPDATE");
    const err = await log.write(async () => void log.emit('team:created', { name: 'a' })).catch((e: unknown) => e);
    await other.query('ROLLBACK');
    expect(err).toBeInstanceOf(Error);
    expect(heard).toEqual([]);
    expect(await log.since(1, 10)).toEqual([]);
    await log.write(async () => void log.emit('team:created', { name: 'b' }));
    expect(heard.map((e) => [e.id, e.data])).toEqual([[2, { name: 'b' }]]);
  });

  // Found in review: events kept for the COMMIT and then written inside a savepoint that rolled
  // back were lost, and their ids given again. A savepoint now begins after them.
  const refused = () => {
    throw new Error('refused');
  };
  it.each<[string, string[], (db: PgState, log: EventLog) => Promise<unknown>]>([
    [
      'a nested write that flushes',
      ['team:created', 'team:renamed'],
      (_db, log) =>
        log.write(async () => {
          log.emit('team:renamed', { name: 'B', oldName: 'A' });
          await log.flush();
          refused();
        }),
    ],
    [
      'a nested write whose event the sink has work for',
      ['team:created'],
      (_db, log) =>
        log.write(async () => {
          log.emit('team:renamed', { name: 'B', oldName: 'A' });
          refused();
        }),
    ],
    [
      "a savepoint of the caller's own that flushes",
      ['team:created'],
      (db, log) =>
        db.transaction(async () => {
          await log.flush();
          refused();
        }),
    ],
  ])('events kept for the COMMIT, then %s and fails: the kept ones stay, ids run on', async (_what, quietFor, fails) => {
    const { db, log, heard } = await setup({ quietFor });
    await log.write(async () => {
      log.emit('team:created', { name: 'A' });
      await fails(db, log).catch(() => undefined);
    });
    await log.write(async () => void log.emit('team:created', { name: 'C' }));
    const stored = (await log.since(1, 10)).map((e) => [e.id, e.data.name]);
    expect(stored).toEqual([
      [2, 'A'],
      [3, 'C'],
    ]);
    expect(heard.map((e) => [e.id, e.data.name])).toEqual(stored);
  });

  it("a write inside a transaction of the caller's own keeps nothing: its COMMIT is not its own", async () => {
    const { db, log, heard, counterFree } = await setup({ quietFor: ['team:created'] });
    await db.transaction(async () => {
      await log.write(async () => void log.emit('team:created', { name: 'A' }));
      expect(await counterFree()).toBe(false);
    });
    expect(heard.map((e) => [e.id, e.data.name])).toEqual([[2, 'A']]);
  });

  it("a sink's nested write that rolls back takes its own events only, not the write's next one", async () => {
    const { log, heard } = await setup({
      quietFor: [],
      sink: async (_db, e, log) => {
        if (e.name !== 'team:renamed') return;
        await log
          .write(async () => {
            log.emit('agent:created', { name: 'x' });
            throw new Error('refused');
          })
          .catch(() => undefined);
      },
    });
    await log.write(async () => {
      log.emit('team:renamed', { name: 'B', oldName: 'A' });
      log.emit('team:created', { name: 'C' });
    });
    const stored = (await log.since(1, 10)).map((e) => [e.id, e.name]);
    expect(stored).toEqual([
      [2, 'team:renamed'],
      [3, 'team:created'],
    ]);
    expect(heard.map((e) => [e.id, e.name])).toEqual(stored);
  });

  it('flush() from a sink is refused: it would wait for the writing it is part of', async () => {
    let refused: unknown;
    const { log } = await setup({
      quietFor: [],
      sink: async (_db, _e, log) => {
        refused = await log.flush().catch((e: unknown) => e);
      },
    });
    await log.write(async () => void log.emit('team:created', { name: 'A' }));
    expect(String(refused)).toMatch(/flush from a sink/);
  });

  it('what a rolled-back savepoint read ahead does not decide the events after it', async () => {
    const read = async (db: PgState) => ((await db.prepare("SELECT value FROM meta WHERE key = 'probe'").get()) as { value: string } | undefined)?.value ?? null;
    const { db, log, sunk } = await setup({ readAhead: read, quiet: (_e, ahead) => ahead !== 'on' });
    await db.prepare("INSERT INTO meta (key, value) VALUES ('probe', 'on')").run();
    sunk.length = 0;
    await log.write(async () => {
      await log
        .write(async () => {
          await db.prepare("UPDATE meta SET value = 'off' WHERE key = 'probe'").run();
          log.emit('team:renamed', { name: 'B', oldName: 'A' });
          await db.prepare('SELECT 1 AS one').get();
          throw new Error('refused');
        })
        .catch(() => undefined);
      log.emit('team:created', { name: 'C' });
    });
    // The probe is 'on' again: the sink has work for C.
    expect(sunk.map((x) => [x.name, x.ahead])).toEqual([['team:created', 'on']]);
  });

  it.each([
    ['a savepoint of its own', (db: PgState) => db.transaction(async () => void (await db.prepare('SELECT 1 AS one').get()))],
    ['a nested write', (db: PgState, log: EventLog) => log.write(async () => void (await db.prepare('SELECT 1 AS one').get()))],
  ])('a sink that opens %s, after events were kept for the COMMIT, does not wait for itself', async (_what, open) => {
    const { db, log, heard } = await setup({
      quietFor: ['team:created'],
      sink: async (state, e, log) => {
        if (e.name === 'team:renamed') await open(state, log);
      },
    });
    await log.write(async () => {
      log.emit('team:created', { name: 'B' });
      // A statement waits for the writing: it has read ahead and kept B.
      await db.prepare('SELECT 1 AS one').get();
      log.emit('team:renamed', { name: 'C', oldName: 'B' });
    });
    expect(heard.map((e) => [e.id, e.name])).toEqual([
      [2, 'team:created'],
      [3, 'team:renamed'],
    ]);
  });
});
