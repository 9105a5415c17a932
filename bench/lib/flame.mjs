// node bench/lib/flame.mjs <file.cpuprofile> [top]: a text flame summary of a V8 CPU profile —
// self time by function and by package/file, and inclusive time of the daemon's own functions.
import { readFileSync } from 'node:fs';

const [file, topArg] = process.argv.slice(2);
const top = Number(topArg ?? 25);
const prof = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const self = new Map();
for (let i = 0; i < prof.samples.length; i++) {
  const dt = prof.timeDeltas[i] ?? 0;
  self.set(prof.samples[i], (self.get(prof.samples[i]) ?? 0) + dt);
}
const total = [...self.values()].reduce((a, b) => a + b, 0);
const where = (cf) => {
  const u = cf.url || '';
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(u);
  if (m) return m[1];
  if (u.includes('/dist/')) return u.slice(u.indexOf('/dist/') + 6);
  if (u.startsWith('node:')) return u;
  return u || '(native)';
};
const label = (cf) => `${cf.functionName || '(anonymous)'} ${where(cf)}:${cf.lineNumber + 1}`;
const add = (m, k, v) => m.set(k, (m.get(k) ?? 0) + v);
const fnSelf = new Map();
const fileSelf = new Map();
const incl = new Map();
for (const [id, t] of self) {
  const n = byId.get(id);
  add(fnSelf, label(n.callFrame), t);
  add(fileSelf, where(n.callFrame), t);
  // Inclusive: each distinct frame on the stack once.
  const seen = new Set();
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const l = label(byId.get(cur).callFrame);
    if (!seen.has(l)) {
      seen.add(l);
      add(incl, l, t);
    }
  }
}
const pct = (t) => `${((100 * t) / total).toFixed(1).padStart(5)}%`;
const print = (title, m, filter = () => true) => {
  console.log(`\n${title}`);
  for (const [k, t] of [...m]
    .filter(([k]) => filter(k))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top))
    console.log(`  ${pct(t)}  ${k}`);
};
console.log(`${file}: ${(total / 1000).toFixed(0)} ms sampled`);
print('self time by file/package', fileSelf);
print('self time by function', fnSelf);
print("inclusive time of svc's own functions", incl, (k) => / src\/|bin\//.test(k));
