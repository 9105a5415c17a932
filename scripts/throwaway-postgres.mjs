import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A throwaway PostgreSQL for the Postgres provider's tests and benchmarks: a real server (Debian's
// package), initialised in a temp dir, listening on loopback on a free port, fsync off (it is
// thrown away). Run as the unprivileged `postgres` user when the caller is root (initdb refuses
// root). Used by test/pg-server.ts (the test run's global setup) and bench/.

/** Where initdb is: on PATH, else the newest of Debian's /usr/lib/postgresql/<v>/bin. */
/** @returns {string | null} */
export function findPgBin() {
  const onPath = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' }).stdout.trim();
  if (onPath) return join(onPath, '..');
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => /^\d+$/.test(v) && existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length ? join(root, versions[0], 'bin') : null;
}

/** @returns {Promise<number>} */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {{ port: number }} */ (s.address());
      s.close(() => resolve(port));
    });
  });
}

/**
 * Starts one, or says why it cannot (no PostgreSQL on this machine). `settings` are more server
 * settings (`name=value`), after the defaults so they win: a test that crashes the server and
 * counts what survived wants `synchronous_commit=on`.
 * @param {{ settings?: string[] }} [opts]
 * @returns {Promise<{ url: string, stop(): void, halt(): void, kill(): void, start(): void } | { skip: string }>}
 */
export async function startThrowawayPostgres(opts = {}) {
  const bin = findPgBin();
  if (!bin) return { skip: "PostgreSQL is not installed (no initdb on PATH or in /usr/lib/postgresql): the Postgres provider tests are skipped. Install Debian's postgresql package to run them." };
  const asRoot = process.getuid?.() === 0;
  let uid = null;
  let gid = null;
  if (asRoot) {
    const id = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    if (id.status !== 0) return { skip: 'running as root and there is no postgres user to run PostgreSQL as: the Postgres provider tests are skipped.' };
    uid = Number(id.stdout.trim());
    gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
  }
  const dir = mkdtempSync(join(tmpdir(), 'svc-test-pg-'));
  const data = join(dir, 'data');
  const password = randomBytes(18).toString('base64url');
  writeFileSync(join(dir, 'pw'), password);
  if (asRoot) {
    chmodSync(dir, 0o700);
    chownSync(dir, uid, gid);
    chownSync(join(dir, 'pw'), uid, gid);
  }
  /** @param {string} file @param {string[]} args */
  const run = (file, args) => (asRoot ? execFileSync('runuser', ['-u', 'postgres', '--', join(bin, file), ...args], { stdio: 'pipe' }) : execFileSync(join(bin, file), args, { stdio: 'pipe' }));
  const port = await freePort();
  const options = [
    `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`,
    ...(opts.settings ?? []).map((s) => `-c ${s}`),
  ].join(' ');
  const start = () => run('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', '-t', '30', 'start']);
  try {
    // Passwords over TCP (the daemon logs in with them), none on the private socket.
    run('initdb', ['-D', data, '-U', 'postgres', '--pwfile', join(dir, 'pw'), '--auth-host=scram-sha-256', '--auth-local=trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync']);
    start();
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    const e = /** @type {{ stderr?: Buffer, message: string }} */ (err);
    throw new Error(`could not start the test PostgreSQL: ${e.stderr?.toString().trim() || e.message}`);
  }
  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
    /** Stops the server but keeps its data (start() brings it back on the same port). */
    halt() {
      run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
    },
    /** Kills the server, as a crash would (every process aborted, no clean shutdown), keeping its data: start() recovers it. */
    kill() {
      run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
    },
    start,
    stop() {
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
