import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { partOf } from './layers.js';
import { parse, sourceFiles, walkNodes } from './source-files.js';

// One clock (docs/layers.md, "Time"): time is read through src/lib/clock.ts. A rule's time (a
// timestamp written, a deadline, an expiry, a cooldown) comes from the Clock the code is given,
// `app.clock`, which a test replaces with a fake one; a duration for a log line or a real wait
// takes `monotonic()`. Nothing else reads the time itself.

/** Files that may read the time without the seam (Date.now, new Date(), Date(), performance.now, process.hrtime). */
const READS_TIME: { file: string; why: string }[] = [
  { file: 'src/lib/clock.ts', why: 'the seam itself' },
  { file: 'src/db/pg/outage.ts', why: 'the outage log says when an outage started and how long it lasted, for a person reading the log' },
];

/**
 * Files that may name `systemClock`, the wall clock no test controls: the daemon's code takes the
 * Clock it is given instead. The CLI's files may (its own process, with no daemon clock: ages in
 * tables, --since, how long ago a line was logged).
 */
const SYSTEM_CLOCK: { file: string; why: string }[] = [
  { file: 'src/lib/clock.ts', why: 'defines it' },
  { file: 'src/parts/state.ts', why: "the composition root's state part: the daemon's clock when whoever starts it gives none" },
  { file: 'src/cli/system/state-command.ts', why: '`svc state export`: a CLI process of its own (with the composition, since it opens the state as a whole)' },
  { file: 'src/lib/ids.ts', why: "a v7 id's time only orders ids; nothing compares it with the daemon's clock" },
  { file: 'src/kernel/log.ts', why: "a log line says when it was written, for a person reading it beside other programs' logs" },
  { file: 'src/kernel/log-file.ts', why: 'the same, for the line that counts dropped lines' },
  { file: 'src/lib/reap.ts', why: "waits on real processes (SIGTERM, grace, SIGKILL) whatever the daemon's clock; its unit test passes a fake one" },
  { file: 'src/resources/runs/drivers/codex.ts', why: "a parser made outside a run (a unit test) reads usage-limit resets on the wall clock; a daemon's runs pass app.clock" },
  {
    file: 'src/resources/runs/runner.ts',
    why: "runners' heartbeats are compared by other daemons, in other processes, to take over the runs of one that stopped answering: real silence, which one daemon's fake clock cannot make or stop",
  },
  { file: 'src/resources/system/presence.ts', why: "daemons' presence rows are compared across machines and by svc doctor's own clock" },
  { file: 'src/resources/system/doctor-state.ts', why: 'reads presence rows (svc doctor, GET /api/v1/setup), which are on the wall clock' },
  { file: 'src/resources/runs/inspect.ts', why: "reads runners' heartbeats (GET /api/v1/runners), which are on the wall clock" },
  { file: 'src/db/migrate.ts', why: "when a state migration was applied: the state's record for people, written before a daemon (and its clock) exists" },
  { file: 'src/lib/human.ts', why: 'ages for people (the CLI, the board), "3m ago", when the caller passes no time of its own' },
  { file: 'src/resources/webhooks/verify.ts', why: "the receiver's side, exported from the package and run in the receiver's process; its tests pass nowSec" },
];

type Found = { file: string; line: number; what: string };

/** Each place a file reads the time itself, and each place it names systemClock. */
function timeReads(sf: ts.SourceFile): { raw: Found[]; system: Found[] } {
  const file = sf.fileName;
  const raw: Found[] = [];
  const system: Found[] = [];
  const at = (n: ts.Node) => sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;
  const isId = (n: ts.Node, name: string) => ts.isIdentifier(n) && n.text === name;
  walkNodes(sf, (n) => {
    if (ts.isPropertyAccessExpression(n)) {
      const owner = n.expression;
      const name = n.name.text;
      if ((isId(owner, 'Date') && name === 'now') || (isId(owner, 'performance') && name === 'now') || (isId(owner, 'process') && name === 'hrtime')) {
        raw.push({ file, line: at(n), what: n.getText(sf) });
      }
    } else if (ts.isNewExpression(n) && isId(n.expression, 'Date') && !n.arguments?.length) {
      raw.push({ file, line: at(n), what: 'new Date()' });
    } else if (ts.isCallExpression(n) && isId(n.expression, 'Date')) {
      raw.push({ file, line: at(n), what: 'Date()' });
    } else if (isId(n, 'systemClock') && !ts.isImportSpecifier(n.parent)) {
      system.push({ file, line: at(n), what: 'systemClock' });
    }
  });
  return { raw, system };
}

const files = sourceFiles();
const reads = new Map(files.map((f) => [f, timeReads(parse(f))]));
const show = (f: Found) => `${f.file}:${f.line} ${f.what}`;

describe('one clock', () => {
  it('no file reads the time itself outside the seam (Date.now, new Date(), Date(), performance.now, process.hrtime)', () => {
    const allowed = new Set(READS_TIME.map((a) => a.file));
    expect(files.filter((f) => !allowed.has(f)).flatMap((f) => reads.get(f)!.raw.map(show))).toEqual([]);
  });

  it("only the composition root, the CLI and the files listed name systemClock: the daemon's code takes the clock it is given", () => {
    const allowed = new Set(SYSTEM_CLOCK.map((a) => a.file));
    expect(files.filter((f) => !allowed.has(f) && partOf(f)?.part !== 'cli').flatMap((f) => reads.get(f)!.system.map(show))).toEqual([]);
  });

  it('lists no file that no longer needs it', () => {
    const stale = [
      ...READS_TIME.filter((a) => !reads.get(a.file)?.raw.length).map((a) => `${a.file} (READS_TIME)`),
      ...SYSTEM_CLOCK.filter((a) => !reads.get(a.file)?.system.length).map((a) => `${a.file} (SYSTEM_CLOCK)`),
    ];
    expect(stale).toEqual([]);
  });

  it('finds each way of reading the time, and not a date made from a value', () => {
    const sample = ts.createSourceFile(
      'x.ts',
      [
        'import { systemClock } from "./clock.js";',
        'const a = Date.now(), b = new Date(), c = Date(), d = performance.now(), e = process.hrtime.bigint();',
        'const f = [1].map(Date.now), g = new Date(0), h = new Date(a), i = systemClock.now();',
      ].join('\n'),
      ts.ScriptTarget.ES2022,
      true,
    );
    const { raw, system } = timeReads(sample);
    expect(raw.map(show)).toEqual(['x.ts:2 Date.now', 'x.ts:2 new Date()', 'x.ts:2 Date()', 'x.ts:2 performance.now', 'x.ts:2 process.hrtime', 'x.ts:3 Date.now']);
    expect(system.map(show)).toEqual(['x.ts:3 systemClock']);
  });
});
