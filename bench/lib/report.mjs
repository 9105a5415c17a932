// Medians, targets and the results table. A target (see bench/README.md) compares either svc's
// median ("of: 'ours'") or the ratio of svc's median to the baseline's ("of: 'ratio'").
import { median } from './harness.mjs';

const OPS = {
  '>=': (a, b) => a >= b,
  '<=': (a, b) => a <= b,
  '<': (a, b) => a < b,
  '>': (a, b) => a > b,
  '==': (a, b) => a === b,
};

export function evaluate(scenario, samples) {
  return scenario.targets.map((t) => {
    const ours = median(samples.svc.map((m) => m[t.metric]));
    const base = samples.baseline.length ? median(samples.baseline.map((m) => m[t.metric])) : undefined;
    // A metric only svc reports (the baseline has no value for it) has no ratio either.
    const ratio = base === undefined || Number.isNaN(base) ? undefined : ours / base;
    let met = null;
    if (t.op) {
      if (!OPS[t.op]) throw new Error(`${scenario.name}: unknown op ${t.op}`);
      const value = t.of === 'ratio' ? ratio : ours;
      met = value !== undefined && !Number.isNaN(value) && OPS[t.op](value, t.value);
    }
    const target = !t.op ? '—' : t.of === 'ratio' ? `${t.op} ${t.value}×` : `${t.op} ${t.value}${t.unit ? ' ' + t.unit : ''}`;
    return { scenario: scenario.name, metric: t.label ?? t.metric, unit: t.unit ?? '', ours, baseline: base, ratio, target, met };
  });
}

const num = (v) => (v === undefined || Number.isNaN(v) ? '—' : v >= 1000 ? Math.round(v).toLocaleString('en-US') : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));

export function formatTable(rows) {
  const head = ['scenario', 'metric', 'ours', 'baseline', 'ratio', 'target', 'met?'];
  const body = rows.map((r) => [
    r.scenario,
    r.metric + (r.unit ? ` (${r.unit})` : ''),
    num(r.ours),
    num(r.baseline),
    r.ratio === undefined ? '—' : `${r.ratio.toFixed(2)}×`,
    r.target,
    r.met === null ? '—' : r.met ? 'yes' : 'NO',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells) => '| ' + cells.map((c, i) => c.padEnd(widths[i])).join(' | ') + ' |';
  return [line(head), '| ' + widths.map((w) => '-'.repeat(w)).join(' | ') + ' |', ...body.map(line)].join('\n');
}
