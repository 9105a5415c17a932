import type Database from 'better-sqlite3';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/**
 * Applies, in order and each in its own transaction, every migration newer than the DB's recorded
 * version. Forward only: a DB that records a version this build does not know was written by a newer
 * svc, and opening it is refused rather than risked.
 */
export function migrate(db: Database.Database, migrations: readonly Migration[]): number {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TEXT NOT NULL
  )`);
  const sorted = [...migrations].sort((a, b) => a.version - b.version);
  sorted.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migrations must be numbered 1, 2, 3…; found ${m.version} at position ${i + 1}`);
  });
  const row = db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null };
  const current = row.v ?? 0;
  if (current > sorted.length) {
    throw new Error(`the state database is at schema version ${current} but this svc knows only ${sorted.length}; upgrade svc`);
  }
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  for (const m of sorted.slice(current)) {
    db.transaction(() => {
      db.exec(m.sql);
      record.run(m.version, m.name, new Date().toISOString());
    })();
  }
  return sorted.length;
}
