import { describe, expect, it } from 'vitest';
import { createLogger, errorFields } from '../../src/kernel/log.js';
import { OutageLog } from '../../src/db/pg/outage.js';
import { PgStateError, StateUnavailableError } from '../../src/db/pg/errors.js';

// An outage of a PostgreSQL server is two log lines, whatever number of clients, requests and
// timers meet it: one warning when it starts, one line when it ends (on a clock the test moves).

function setup() {
  let t = 1_000;
  const lines: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
  const log = {
    warn: (msg: string, fields: Record<string, unknown> = {}) => lines.push({ level: 'warn', msg, fields }),
    info: (msg: string, fields: Record<string, unknown> = {}) => lines.push({ level: 'info', msg, fields }),
  };
  const outages = new OutageLog(log, () => t);
  return { outages, lines, at: (ms: number) => (t = ms) };
}

const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

describe('OutageLog', () => {
  it('says when an outage starts and when it ends, once each, for every client of the server', () => {
    const { outages, lines, at } = setup();
    const state = outages.reporter('postgres://u:secret@db.example:5433/state', 'state');
    const data = outages.reporter('postgres://admin:other@db.example:5433/data', 'data');
    state.succeeded();
    expect(lines).toEqual([]);
    at(2_000);
    for (let i = 0; i < 500; i++) state.failed(refused, 2_000);
    data.failed(refused, 2_000);
    at(5_500);
    data.succeeded(5_400);
    state.succeeded(5_450);
    expect(lines).toEqual([
      { level: 'warn', msg: expect.stringMatching(/^PostgreSQL cannot be reached/), fields: { server: 'db.example:5433', client: 'state', error: refused.message } },
      { level: 'info', msg: 'PostgreSQL is reachable again', fields: { server: 'db.example:5433', client: 'data', outageSeconds: 3.5, failures: 501, clients: ['data', 'state'] } },
    ]);
    // Never a user or a password.
    expect(JSON.stringify(lines)).not.toMatch(/secret|other|admin/);
  });

  it('an attempt begun before the outage ended does not start another, nor one begun before it started end it', () => {
    const { outages, lines, at } = setup();
    const state = outages.reporter('postgres://db:5432/s', 'state');
    const events = outages.reporter('postgres://db:5432/s', 'events');
    at(10_000);
    state.failed(refused, 9_990);
    // A read sent before the server went away comes back fine: it says nothing of now.
    at(10_050);
    events.succeeded(9_980);
    expect(lines.map((l) => l.level)).toEqual(['warn']);
    at(12_000);
    state.succeeded(11_990);
    // The feed's connect, tried while the server was down, fails after the server is back: same outage.
    events.failed(refused, 11_500);
    expect(lines.map((l) => l.level)).toEqual(['warn', 'info']);
    // A new failure after that is a new outage.
    at(20_000);
    state.failed(refused, 19_999);
    expect(lines.map((l) => l.level)).toEqual(['warn', 'info', 'warn']);
  });

  it('two servers are two outages', () => {
    const { outages, lines } = setup();
    outages.reporter('postgres://a:5432/x', 'state').failed(refused);
    outages.reporter('postgres://b:5432/x', 'data').failed(refused);
    expect(lines.map((l) => l.fields.server)).toEqual(['a:5432', 'b:5432']);
  });
});

describe('a failure that is the state server outage', () => {
  it('is logged at debug by whatever met it (the outage log said it), other failures as they are', () => {
    const out: string[] = [];
    const log = createLogger((l) => out.push(l), 'info');
    log.error('claiming webhook deliveries failed', errorFields(new PgStateError('connection refused', 'ECONNREFUSED')));
    log.error("reading other daemons' events failed", errorFields(new StateUnavailableError('no answer')));
    log.error('pruning failed', errorFields(new PgStateError('duplicate key', '23505')));
    log.error('something else', errorFields(new TypeError('x is undefined')));
    expect(out.map((l) => JSON.parse(l).msg)).toEqual(['pruning failed', 'something else']);
    const all: string[] = [];
    createLogger((l) => all.push(l), 'debug').warn('met the outage', errorFields(new StateUnavailableError('no answer')));
    expect(JSON.parse(all[0]!)).toMatchObject({ level: 'debug', msg: 'met the outage', outage: true });
  });
});
