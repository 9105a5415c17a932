// npm run bench [-- <scenario>...] [--json <file>] [--rounds N]
//
// Runs each scenario of bench/scenarios/ (or those named): one warm-up, then svc and its raw
// baseline alternately for N rounds (default 3; the order flips each round so drift from other load
// on the machine falls on both), then prints the medians, the ratio, the target and whether it is
// met. The daemon is a real `svc serve` process, each baseline its own process, and the load a
// third; see bench/README.md for the scenario shape. Nothing here is part of `npm test`.
import { readdirSync, writeFileSync } from 'node:fs';
import { cpus, freemem, loadavg, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import * as harness from './lib/harness.mjs';
import { evaluate, formatTable } from './lib/report.mjs';

const argv = process.argv.slice(2);
const names = [];
let jsonFile;
let rounds;
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--json') jsonFile = argv[++i];
  else if (a === '--rounds') rounds = Number(argv[++i]);
  else if (a === '--help' || a === '-h') {
    process.stdout.write('usage: npm run bench [-- <scenario>...] [--json <file>] [--rounds N]\n');
    process.exit(0);
  } else if (a.startsWith('-')) {
    process.stderr.write(`unknown option ${a}\n`);
    process.exit(2);
  } else names.push(a);
}
if (jsonFile === '' || (argv.includes('--json') && !jsonFile)) {
  process.stderr.write('--json needs a file name\n');
  process.exit(2);
}
if (rounds !== undefined && !(Number.isInteger(rounds) && rounds >= 1)) {
  process.stderr.write('--rounds needs a positive integer\n');
  process.exit(2);
}

const dir = new URL('./scenarios/', import.meta.url);
const available = readdirSync(fileURLToPath(dir))
  .filter((f) => f.endsWith('.mjs'))
  .sort();
const scenarios = [];
for (const f of available) {
  const mod = await import(new URL(f, dir).href);
  const s = mod.default;
  if (!s?.name || typeof s.setup !== 'function' || !Array.isArray(s.targets)) throw new Error(`bench/scenarios/${f} does not export a scenario (see bench/README.md)`);
  scenarios.push({ order: s.order ?? 100, ...s });
}
scenarios.sort((a, b) => a.order - b.order || a.name.localeCompare(b.name));
const unknown = names.filter((n) => !scenarios.some((s) => s.name === n));
if (unknown.length) {
  process.stderr.write(`unknown scenario ${unknown.join(', ')}; there are: ${scenarios.map((s) => s.name).join(', ')}\n`);
  process.exit(2);
}
const selected = names.length ? scenarios.filter((s) => names.includes(s.name)) : scenarios;

process.on('SIGINT', async () => {
  await harness.cleanupAll();
  process.exit(130);
});

const machine = {
  cpus: cpus().length,
  cpu: cpus()[0]?.model,
  memoryGiB: Math.round(totalmem() / 2 ** 30),
  freeGiB: Math.round(freemem() / 2 ** 30),
  node: process.version,
  platform: `${process.platform} ${process.arch}`,
  loadAverageAtStart: loadavg().map((x) => Number(x.toFixed(2))),
};
console.log(`svc bench: ${machine.cpus} × ${machine.cpu}, ${machine.memoryGiB} GiB, node ${machine.node}, load average ${machine.loadAverageAtStart.join(' ')}`);

const started = Date.now();
const results = [];
let failed = false;
for (const s of selected) {
  const n = rounds ?? s.rounds ?? 3;
  console.log(`\n▸ ${s.name}: ${s.title}`);
  const t0 = Date.now();
  let run;
  const samples = { svc: [], baseline: [] };
  try {
    run = await s.setup(harness);
    const sides = run.baseline ? ['svc', 'baseline'] : ['svc'];
    if (s.warmup !== false) {
      if (run.warmup) await run.warmup();
      else for (const side of sides) await run[side]();
      console.log('  warmed up');
    }
    for (let r = 0; r < n; r++) {
      const order = r % 2 ? [...sides].reverse() : sides;
      for (const side of order) {
        const m = await run[side]();
        samples[side].push(m);
      }
      console.log(`  round ${r + 1}/${n}: ${sides.map((side) => `${side} ${brief(samples[side].at(-1))}`).join(' | ')}`);
    }
  } catch (err) {
    failed = true;
    console.error(`  ${s.name} failed: ${err.stack ?? err}`);
  } finally {
    await run?.close?.().catch(() => undefined);
    await harness.cleanupAll();
  }
  const rows = evaluate(s, samples);
  results.push({ scenario: s.name, title: s.title, seconds: Math.round((Date.now() - t0) / 100) / 10, rounds: samples, rows });
  console.log(formatTable(rows));
}

machine.loadAverageAtEnd = loadavg().map((x) => Number(x.toFixed(2)));
const all = results.flatMap((r) => r.rows);
console.log(`\n${formatTable(all)}`);
const met = all.filter((r) => r.met === true).length;
console.log(`\n${met}/${all.length} targets met in ${Math.round((Date.now() - started) / 1000)} s; load average at end ${machine.loadAverageAtEnd.join(' ')}`);
if (jsonFile) {
  writeFileSync(jsonFile, JSON.stringify({ date: new Date().toISOString(), machine, results }, null, 2) + '\n');
  console.log(`results written to ${jsonFile}`);
}
process.exitCode = failed ? 1 : 0;

function brief(m) {
  return Object.entries(m ?? {})
    .filter(([, v]) => typeof v === 'number')
    .slice(0, 4)
    .map(([k, v]) => `${k} ${v >= 100 ? Math.round(v) : v.toFixed(2)}`)
    .join(', ');
}
