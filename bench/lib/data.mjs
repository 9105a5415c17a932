// Shared by the application-database scenarios: the table, its rows, and the CPU of svc's whole
// process tree (the daemon and the worker processes that serve the databases).
import { readdirSync, readFileSync } from 'node:fs';

export const TABLE = { columns: { sku: { type: 'text' }, qty: { type: 'integer' }, price: { type: 'number' }, active: { type: 'boolean' } } };

export const row = (i) => ({ sku: `sku-${i}`, qty: i % 100, price: (i % 1000) / 10, active: i % 2 === 0 });

function children(pid) {
  const out = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(p));
    } catch {
      // gone
    }
  }
  return out;
}

/** CPU ms of a process and its live children (a worker killed meanwhile is counted by the parent once reaped). */
export function treeCpuMs(h, pid) {
  let ms = h.cpuMs(pid);
  for (const c of children(pid)) {
    try {
      ms += h.cpuMs(c);
    } catch {
      // exited
    }
  }
  return ms;
}

/** Creates database `name` in a running svc. */
export async function createDatabase(svc, name) {
  const res = await fetch(`${svc.url}/api/v1/data`, {
    method: 'POST',
    headers: { authorization: `Bearer ${svc.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, schema: { tables: { items: TABLE } } }),
  });
  if (res.status !== 201) throw new Error(`creating ${name} answered ${res.status}: ${await res.text()}`);
}

/** Load through h.load with svc's whole process tree's CPU per request. */
export async function loadTree(h, server, opts, perRequest = 1) {
  const before = treeCpuMs(h, server.pid);
  const r = await h.load({ url: server.url, ...opts });
  if (r.non2xx || r.errors) throw new Error(`${opts.path}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return { ...r, cpuUs: ((treeCpuMs(h, server.pid) - before) * 1000) / Math.max(1, r.requests * perRequest), rss: h.rssMiB(server.pid) };
}
