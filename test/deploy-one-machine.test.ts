import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { CheckResult } from '../src/cli/system/doctor.js';
import { readDaemonInfo } from '../src/state-dir.js';
import { svc } from './cli-helpers.js';
import { gitProject } from './harness.js';

// docs/deploy.md's one-machine recipe, as written: its SQL (and data.md's DO block) run on the
// run's throwaway server as its superuser, its project.json, its settings file in the user's config
// dir; then the daemon is started, checked, used and restarted from a shell without a single
// variable. The recipe's names (svc, svc_state, svc_data_admin, svc_data) are this file's alone on
// the server.

const pgUrl = inject('pgUrl');
const deploy = readFileSync(new URL('../docs/deploy.md', import.meta.url), 'utf8');
const data = readFileSync(new URL('../docs/data.md', import.meta.url), 'utf8');

/** The first ```lang block after `heading` in `doc`. */
function block(doc: string, heading: string, lang: string): string {
  const from = doc.indexOf(heading);
  expect(from, heading).toBeGreaterThanOrEqual(0);
  const m = new RegExp('```' + lang + '\\n([\\s\\S]*?)```').exec(doc.slice(from));
  expect(m, `${heading}: a ${lang} block`).not.toBeNull();
  return m![1]!;
}

/** psql's way with a script: statements end with `;` at the end of a line; `\c db` switches database. */
function statements(sql: string): (string | { connect: string })[] {
  const out: (string | { connect: string })[] = [];
  let current = '';
  for (const line of sql.split('\n')) {
    const text = line.replace(/--.*$/, '').trim();
    if (!text) continue;
    const c = /^\\c (\w+)$/.exec(text);
    if (c) {
      out.push({ connect: c[1]! });
      continue;
    }
    current += `${text}\n`;
    if (text.endsWith(';')) {
      out.push(current.trim());
      current = '';
    }
  }
  expect(current).toBe('');
  return out;
}

const pids: number[] = [];
async function asSuperuser(db: string, fn: (c: pg.Client) => Promise<void>): Promise<void> {
  const u = new URL(pgUrl);
  u.pathname = `/${db}`;
  const c = new pg.Client({ connectionString: u.toString() });
  await c.connect();
  try {
    await fn(c);
  } finally {
    await c.end();
  }
}
const clean = () =>
  asSuperuser('postgres', async (c) => {
    await c.query('DROP DATABASE IF EXISTS svc_state WITH (FORCE)');
    await c.query('DROP DATABASE IF EXISTS svc_data WITH (FORCE)');
    // (Application databases' roles are dropped by the daemon, which deletes the database.)
    for (const role of ['svc', 'svc_data_admin']) await c.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
  });

afterAll(async () => {
  for (const pid of pids.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  if (pgUrl) await clean();
});

describe.skipIf(!pgUrl)("deploy.md's one machine: PostgreSQL on loopback", () => {
  it('its SQL, project.json and settings file give a daemon that starts, checks out and restarts from any shell', { timeout: 60_000 }, async () => {
    await clean();
    const server = new URL(pgUrl);
    // The script as written, but one line: REVOKE CONNECT on postgres and template1 would lock the
    // run's other tests (their roles log in to postgres) out of this shared server.
    const script = statements(block(deploy, '## One machine: PostgreSQL on loopback', 'sql')).filter((s) => typeof s !== 'string' || !/ON DATABASE postgres, template1/.test(s));
    expect(script.length).toBe(8);
    let db = 'postgres';
    const run: string[] = [];
    for (const s of script) {
      if (typeof s !== 'string') db = s.connect;
      else {
        await asSuperuser(db, (c) => c.query(s).then(() => undefined));
        run.push(s);
      }
    }
    // data.md's DO block, in svc_data as the recipe says.
    const doBlock = /DO \$\$[\s\S]*?END \$\$;/.exec(block(data, '### The admin role', 'sql'))![0];
    expect(db).toBe('svc_data');
    await asSuperuser('svc_data', (c) => c.query(doBlock).then(() => undefined));

    // The project is a checkout of its repository, as a team's is: agents get worktrees (doctor's `runs`).
    const root = gitProject(JSON.parse(block(deploy, '## One machine: PostgreSQL on loopback', 'json')));
    expect(JSON.parse(readFileSync(join(root, 'project.json'), 'utf8')).name).toBe('team');
    // The settings file of deploy.md's "The settings file", on this server's port, with a real key.
    const lines = /<<'EOF'\n([\s\S]*?)\nEOF/.exec(block(deploy, '### The settings file', 'sh'))![1]!;
    const userConfig = join(root, '.user-config');
    mkdirSync(join(userConfig, 'projects'), { recursive: true });
    const settings = lines.replaceAll('127.0.0.1:5432', `127.0.0.1:${server.port}`).replace('<openssl rand -base64 32>', randomBytes(32).toString('base64'));
    writeFileSync(join(userConfig, 'projects', 'team.env'), settings + '\n', { mode: 0o600 });

    // A shell with none of the three.
    const env = { SVC_CONFIG_DIR: userConfig, SVC_STATE_URL: '', SVC_DATA_URL: '', SVC_VAULT_KEY: '', SVC_KEYCHAIN: 'off' };
    const started = await svc(['serve', '--detach', '--port', '0'], { cwd: root, env });
    expect(started.code, started.stderr).toBe(0);
    pids.push(readDaemonInfo(root)!.pid);
    const doctor = await svc(['doctor', '--json'], { cwd: root, env });
    const checks = JSON.parse(doctor.stdout) as CheckResult[];
    // Nothing warns or fails (a check with nothing to look at, such as agent CLIs here, is skipped).
    expect(checks.filter((c) => c.status === 'warn' || c.status === 'fail').map((c) => `${c.check}: ${c.detail}`)).toEqual([]);
    expect(checks.find((c) => c.check === 'state')?.detail).toMatch(/^PostgreSQL at postgres:\/\/svc:\*\*\*@127\.0\.0\.1:\d+\/svc_state, schema version \d+$/);
    expect(checks.find((c) => c.check === 'data')?.detail).toMatch(/role svc_data_admin may create roles and schemas in svc_data$/);

    const schema = JSON.stringify({ tables: { orders: { columns: { item: { type: 'text' }, total: { type: 'number' } } } } });
    writeFileSync(join(root, 'schema.json'), schema);
    expect((await svc(['db', 'create', 'shop', '--schema', 'schema.json'], { cwd: root, env })).code).toBe(0);
    const put = await svc(['db', 'query', 'shop', 'INSERT INTO orders (item, total) VALUES (?, ?), (?, ?)', '--write', '--param', 'a', '--param-json', '50', '--param', 'b', '--param-json', '150'], {
      cwd: root,
      env,
    });
    expect(put.code, put.stderr).toBe(0);
    const got = await svc(['db', 'query', 'shop', 'SELECT item FROM orders WHERE total > ?', '--param-json', '100', '--json'], { cwd: root, env });
    expect(JSON.parse(got.stdout).rows).toEqual([{ item: 'b' }]);

    const restarted = await svc(['restart'], { cwd: root, env });
    expect(restarted.code, restarted.stderr).toBe(0);
    pids.push(readDaemonInfo(root)!.pid);
    const again = await svc(['db', 'query', 'shop', 'SELECT count(*) AS n FROM orders', '--json'], { cwd: root, env });
    expect(JSON.parse(again.stdout).rows).toEqual([{ n: 2 }]);

    const log = readFileSync(join(root, '.svc', 'logs', 'daemon.log'), 'utf8');
    expect(log).toContain('"msg":"settings file"');
    for (const secret of ['change-me', 'change-me-too']) expect(log).not.toContain(`:${secret}@`);
    // The DO block revoked what the admin (no superuser) could not: nothing left to warn about.
    expect(log).not.toContain('could not revoke');
    expect((await svc(['db', 'rm', 'shop', '--yes'], { cwd: root, env })).code).toBe(0);
    expect((await svc(['stop'], { cwd: root, env })).code).toBe(0);
  });
});
