#!/usr/bin/env node
// The bench's chatty run (the `command` runtime): prints RUNS_LINES_PER_SEC JSON text lines a
// second for RUNS_SECONDS, then a result line. Each line's text starts with the time it was printed
// (epoch ms with fractions, this machine's clock), so a subscriber can tell how long the line took
// to reach it through the daemon (stdout → run log → run:activity → SSE). Lines are about 100
// bytes, like an agent's short messages.
const rate = Number(process.env.RUNS_LINES_PER_SEC ?? 2000);
const seconds = Number(process.env.RUNS_SECONDS ?? 4);
const total = Math.round(rate * seconds);
const pad = 'x'.repeat(48);
const now = () => performance.timeOrigin + performance.now();
process.stdin.resume(); // the prompt, read and dropped
const t0 = performance.now();
let sent = 0;
// Catch up on every tick: timers on a loaded machine fire late, the rate stays the rate.
const timer = setInterval(() => {
  const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * rate));
  let out = '';
  for (; sent < due; sent++) out += JSON.stringify({ type: 'text', text: `${now().toFixed(3)} line ${sent + 1} ${pad}` }) + '\n';
  if (out) process.stdout.write(out);
  if (sent >= total) {
    clearInterval(timer);
    process.stdout.write(JSON.stringify({ type: 'result', summary: `printed ${total} lines in ${((performance.now() - t0) / 1000).toFixed(2)} s`, turns: 1 }) + '\n');
    process.exit(0);
  }
}, 5);
