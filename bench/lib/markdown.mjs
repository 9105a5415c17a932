// node bench/lib/markdown.mjs results.json: the results table of a `--json` run as Markdown
// (what docs/performance.md shows), with the machine and its load.
import { readFileSync } from 'node:fs';

const r = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const num = (v) => (v === undefined || v === null || Number.isNaN(v) ? '—' : v >= 1000 ? Math.round(v).toLocaleString('en-US') : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
const m = r.machine;
console.log(
  `${r.date}: ${m.cpus} × ${m.cpu}, ${m.memoryGiB} GiB, Node ${m.node}, ${m.platform}; load average ${m.loadAverageAtStart.join(' / ')} at start, ${m.loadAverageAtEnd.join(' / ')} at end.\n`,
);
console.log('| scenario | metric | ours | baseline | ratio | target | met? |');
console.log('| --- | --- | ---: | ---: | ---: | --- | --- |');
for (const s of r.results) {
  for (const row of s.rows) {
    const target = row.target.replace('>=', '≥').replace('<=', '≤');
    console.log(
      `| ${s.scenario} | ${row.metric}${row.unit ? ` (${row.unit})` : ''} | ${num(row.ours)} | ${num(row.baseline)} | ${row.ratio === undefined || row.ratio === null ? '—' : row.ratio.toFixed(2) + '×'} | ${target} | ${row.met === null ? '—' : row.met ? 'yes' : '**no**'} |`,
    );
  }
}
