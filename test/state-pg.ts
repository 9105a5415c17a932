import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';

// The state-on-PostgreSQL run of the resource suites (vitest project "state-pg"): every daemon a
// test starts gets a database of its own on the run's throwaway server, one per project root, so a
// daemon restarted on the same root finds its state again, as it finds .svc/state.sqlite.

export const statePg = (): boolean => process.env.SVC_TEST_STATE === 'postgres';

const byRoot = new Map<string, { url: string; key: string }>();
const made: string[] = [];

/** A database of its own on the run's server: its URL. */
export async function freshStateDatabase(): Promise<string> {
  const admin = inject('pgUrl');
  if (!admin) throw new Error(`the state-pg tests need PostgreSQL: ${inject('pgSkip')}`);
  const name = `state_${process.pid}_${made.length}_${Math.random().toString(36).slice(2, 8)}`;
  const c = new pg.Client(admin);
  await c.connect();
  try {
    await c.query(`CREATE DATABASE ${name}`);
  } finally {
    await c.end();
  }
  made.push(name);
  const u = new URL(admin);
  u.pathname = `/${name}`;
  return u.toString();
}

/** SVC_STATE_URL for a daemon on `root` in the state-pg run (the same database on a restart); {} otherwise. */
export async function stateEnv(root: string): Promise<Record<string, string>> {
  if (!statePg()) return {};
  let db = byRoot.get(root);
  // A shared state's vault key comes from the environment (never a keychain): one per database.
  if (!db) byRoot.set(root, (db = { url: await freshStateDatabase(), key: randomBytes(32).toString('base64') }));
  return { SVC_STATE_URL: db.url, SVC_VAULT_KEY: db.key };
}

/** Drops this file's databases (test/setup.ts, after the file). */
export async function dropStateDatabases(): Promise<void> {
  byRoot.clear();
  if (!made.length) return;
  const c = new pg.Client(inject('pgUrl'));
  await c.connect();
  try {
    for (const name of made.splice(0)) await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await c.end();
  }
}
