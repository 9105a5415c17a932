import { startThrowawayPostgres } from '../scripts/throwaway-postgres.mjs';
import { startDaemon } from '../dist/src/daemon.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
const srv = await startThrowawayPostgres();
const c = new pg.Client(srv.url); await c.connect(); await c.query('CREATE DATABASE st1'); await c.end();
const url = srv.url.replace(/\/[^/]*$/, '/st1');
const root = mkdtempSync(join(tmpdir(), 'smk-'));
writeFileSync(join(root, 'project.json'), JSON.stringify({ name: 'smk' }));
const env = { SVC_KEYCHAIN: 'off', SVC_CONFIG_DIR: join(root, '.uc'), SVC_STATE_URL: url, SERVICE_API_KEY: 'k'.repeat(20) };
try {
  const d = await startDaemon({ root, host: '127.0.0.1', port: 0, env, console: (l) => process.stdout.write(l) });
  const h = { authorization: 'Bearer ' + 'k'.repeat(20), 'content-type': 'application/json' };
  let r = await fetch(d.url + '/api/v1/tasks', { method: 'POST', headers: h, body: JSON.stringify({ title: 'hello' }) });
  const t = await r.json(); console.log(r.status, JSON.stringify(t).slice(0, 300));
  r = await fetch(d.url + '/api/v1/tasks', { headers: h }); console.log(r.status, JSON.stringify(await r.json()).slice(0, 300));
  r = await fetch(d.url + '/api/v1/events?limit=5', { headers: h }); console.log(r.status, (await r.text()).slice(0, 300));
  await d.close();
} catch (e) { console.error('ERR', e); }
srv.stop();
