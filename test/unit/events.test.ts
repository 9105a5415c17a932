import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/open.js';
import { STATE_MIGRATIONS } from '../../src/state-schema.js';
import { compileFilter } from '../../src/events/filter.js';
import { EventLog, type StoredEvent } from '../../src/events/outbox.js';
import { systemClock } from '../../src/lib/clock.js';
import { formatEvent } from '../../src/cli/events-command.js';

describe('compileFilter', () => {
  const names = ['task:created', 'task:transition', 'approval:resolved', 'agent:created', 'team:renamed'];
  it.each([
    [undefined, names],
    ['', names],
    ['*', names],
    ['task:', ['task:created', 'task:transition']],
    ['task:*', ['task:created', 'task:transition']],
    ['task:,approval:', ['task:created', 'task:transition', 'approval:resolved']],
    ['agent:created, team:renamed', ['agent:created', 'team:renamed']],
    ['task:transition,task:', ['task:created', 'task:transition']],
  ])('%s', (filter, expected) => {
    const m = compileFilter(filter);
    expect(names.filter(m)).toEqual(expected);
  });
  it.each(['tasks:', 'task:nope', 'nope', 'task', 'completions:', 'session:ended', 'constructor:created'])('refuses %s naming it', (filter) => {
    expect(() => compileFilter(filter)).toThrow(new RegExp(filter));
  });
});

describe('EventLog (outbox)', () => {
  const setup = async () => {
    const db = await openDatabase(':memory:', STATE_MIGRATIONS);
    const log = new EventLog(db, { clock: systemClock });
    const heard: StoredEvent[] = [];
    log.subscribe((e) => heard.push(e));
    return { db, log, heard };
  };

  it('publishes events only after their transaction commits', async () => {
    const { log, heard } = await setup();
    await log.write(async () => {
      log.emit('team:created', { name: 'a' });
      expect(heard).toEqual([]);
    });
    expect(heard.map((e) => e.name)).toEqual(['team:created']);
    expect(await log.since(0, 10)).toHaveLength(1);
  });

  it('writes and publishes nothing when the transaction throws', async () => {
    const { log, heard } = await setup();
    await expect(
      (async () =>
        await log.write(async () => {
          log.emit('team:created', { name: 'a' });
          throw new Error('boom');
        }))(),
    ).rejects.toThrow('boom');
    expect(heard).toEqual([]);
    expect(await log.since(0, 10)).toEqual([]);
  });

  it('drops the events of a nested write that rolls back, keeping the outer ones', async () => {
    const { log, heard } = await setup();
    await log.write(async () => {
      log.emit('team:created', { name: 'outer' });
      try {
        await log.write(async () => {
          log.emit('team:created', { name: 'inner' });
          throw new Error('inner fails');
        });
      } catch {
        // the outer transaction goes on
      }
    });
    expect(heard.map((e) => e.data.name)).toEqual(['outer']);
    expect((await log.since(0, 10)).map((e) => e.data.name)).toEqual(['outer']);
  });

  it('refuses an event outside write() and data that does not match its schema', async () => {
    const { log } = await setup();
    expect(() => log.emit('team:created', { name: 'x' })).toThrow(/outside/);
    await expect((async () => await log.write(async () => log.emit('task:transition', { taskId: 't', from: 'pending', to: 'flying' } as never)))()).rejects.toThrow();
  });

  it('publishes what the sink emits after the event it followed, in id order, or nothing if the sink throws', async () => {
    const db = await openDatabase(':memory:', STATE_MIGRATIONS);
    // A sink like the daemon's: a team's creation is followed by a renaming (as attention:needed follows its event).
    const log: EventLog = new EventLog(db, {
      clock: systemClock,
      sink: (e) => {
        if (e.name === 'team:created' && e.data.name === 'boom') throw new Error('sink fails');
        if (e.name === 'team:created') log.emit('team:renamed', { oldName: String(e.data.name), name: `${String(e.data.name)}-2` });
      },
    });
    const heard: StoredEvent[] = [];
    log.subscribe((e) => heard.push(e));
    await log.write(async () => {
      log.emit('team:created', { name: 'a' });
      log.emit('team:removed', { name: 'z' });
    });
    expect(heard.map((e) => [e.id, e.name])).toEqual([
      [1, 'team:created'],
      [2, 'team:renamed'],
      [3, 'team:removed'],
    ]);
    // A sink that throws inside a nested write: neither that event nor anything after it in the nest is published.
    await log.write(async () => {
      try {
        await log.write(async () => log.emit('team:created', { name: 'boom' }));
      } catch {
        // the outer write goes on
      }
      log.emit('team:removed', { name: 'y' });
    });
    expect(heard.slice(3).map((e) => [e.name, e.data.name])).toEqual([['team:removed', 'y']]);
    expect((await log.since(3, 10)).map((e) => e.name)).toEqual(['team:removed']);
  });

  it('refuses flush() from a sink on SQLite too: it would wait for the writing it is part of (it hung)', async () => {
    const db = await openDatabase(':memory:', STATE_MIGRATIONS);
    let refused: unknown = null;
    const log: EventLog = new EventLog(db, {
      clock: systemClock,
      sink: async () => {
        refused = await log.flush().then(
          () => null,
          (err: unknown) => err,
        );
      },
    });
    await log.write(async () => void log.emit('team:created', { name: 'A' }));
    expect(String(refused)).toMatch(/flush from a sink/);
  });

  it('reads ahead once per write, before its first event takes an id, and gives that read to the sink with the first event only', async () => {
    const db = await openDatabase(':memory:', STATE_MIGRATIONS);
    const reads: number[] = [];
    const given: [string, unknown][] = [];
    const log: EventLog = new EventLog(db, {
      clock: systemClock,
      // The newest event id when it runs: the write's own first event is not written yet.
      readAhead: async () => {
        const id = await log.lastId();
        reads.push(id);
        return `read at ${id}`;
      },
      sink: (e, ahead) => {
        given.push([`${e.id} ${e.name}`, ahead]);
        if (e.name === 'team:created' && e.data.name === 'c') log.emit('team:renamed', { oldName: 'c', name: 'c2' });
      },
    });
    await log.write(async () => {
      log.emit('team:created', { name: 'a' });
      log.emit('team:removed', { name: 'a' });
    });
    await log.write(async () => {
      await log.write(async () => log.emit('team:created', { name: 'b' }));
      log.emit('team:removed', { name: 'b' });
    });
    // A write that emits nothing reads nothing.
    await log.write(async () => undefined);
    // What the sink emits follows the event it was called for, and reads for itself.
    await log.write(async () => log.emit('team:created', { name: 'c' }));
    // A first event rolled back with its savepoint: the next one reads again.
    await log.write(async () => {
      await log
        .write(async () => {
          log.emit('team:created', { name: 'x' });
          throw new Error('undone');
        })
        .catch(() => undefined);
      log.emit('team:removed', { name: 'y' });
    });
    expect(reads).toEqual([0, 2, 4, 6, 6]);
    expect(given).toEqual([
      ['1 team:created', 'read at 0'],
      ['2 team:removed', undefined],
      ['3 team:created', 'read at 2'],
      ['4 team:removed', undefined],
      ['5 team:created', 'read at 4'],
      ['6 team:renamed', undefined],
      ['7 team:created', 'read at 6'],
      ['7 team:removed', 'read at 6'],
    ]);
  });

  it('never reuses an id after pruning', async () => {
    const { log } = await setup();
    await log.write(async () => log.emit('team:created', { name: 'a' }));
    await log.write(async () => log.emit('team:created', { name: 'b' }));
    expect(await log.prune({ olderThan: new Date(Date.now() + 1000).toISOString(), keep: 100 }, 10)).toBe(2);
    await log.write(async () => log.emit('team:created', { name: 'c' }));
    expect((await log.since(0, 10)).map((e) => e.id)).toEqual([3]);
    expect(await log.oldestId()).toBe(3);
  });
});

describe('formatEvent', () => {
  it('shows the time, the name and the scalar fields', () => {
    const line = formatEvent({ id: '1', event: 'task:transition', data: '{"taskId":"t1","from":"pending","to":"assigned","nested":{"x":1}}' }, new Date(2026, 0, 1, 9, 8, 7));
    expect(line).toBe('09:08:07  task:transition      taskId=t1 from=pending to=assigned');
  });
});
