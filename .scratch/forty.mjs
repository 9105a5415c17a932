import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
const max = process.argv[2];
const root = mkdtempSync(join(tmpdir(), 'forty-'));
writeFileSync(join(root, 'project.json'), JSON.stringify(max ? { data: { maxWorkers: Number(max) } } : {}));
const child = spawn(process.execPath, ['/work/main/bin/svc', 'serve', '--port', '0'], { cwd: root, env: { ...process.env, SVC_KEYCHAIN: 'off', SVC_CONFIG_DIR: root + '/.cfg' } });
let out = '';
const url = await new Promise((r) => child.stdout.on('data', (c) => { out += c; const m = /"url":"([^"]+)"/.exec(out); if (m) r(m[1]); }));
const key = readFileSync(join(root, '.svc/local.key'), 'utf8').trim();
const post = async (p, b) => (await fetch(url + p, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(b) })).json();
const tree = () => {
  let rss = 0, n = 0;
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = readFileSync(`/proc/${d}/stat`, 'utf8'); const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      if (Number(d) === child.pid || Number(f[1]) === child.pid) { rss += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${d}/status`, 'utf8'))[1]); if (Number(d) !== child.pid) n++; }
    } catch {}
  }
  return { rss: rss / 1024, n };
};
for (let i = 0; i < 40; i++) await post('/api/v1/data', { name: `d${i}`, schema: { tables: { t: { columns: { a: { type: 'integer' } } } } } });
let most = { rss: 0, n: 0 };
const t0 = performance.now();
for (let round = 0; round < 2; round++) for (let i = 0; i < 40; i++) {
  const r = await post(`/api/v1/data/d${i}/query`, { mode: 'read', sql: 'SELECT count(*) AS n FROM t' });
  if (!r.ok) throw new Error(JSON.stringify(r));
  const t = tree(); most = { rss: Math.max(most.rss, t.rss), n: Math.max(most.n, t.n) };
}
const ms = (performance.now() - t0) / 80;
console.log(`maxWorkers ${max ?? 'default'}: most workers ${most.n}, most tree RSS ${most.rss.toFixed(0)} MB, at rest ${tree().rss.toFixed(0)} MB, ${ms.toFixed(0)} ms a query in turn`);
child.kill('SIGTERM');
