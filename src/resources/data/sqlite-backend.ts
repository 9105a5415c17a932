import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { serviceKey } from '../../app.js';
import { ensurePrivateDir } from '../../lib/files.js';
import type { DataBackend, EncodedAnswer, Migrated, QueryRequest } from './backend.js';
import type { IdempotencyRef } from './idempotency.js';
import type { MigrationInT, MigrationRecord, OperationT, SchemaDefT } from './schema.js';
import type { DataRunner } from './sql-runner.js';

// The default provider: each database one SQLite file in .svc/data/, served by its own child
// process (sql-runner.ts) so that a runaway statement can be killed without stalling the daemon.

/** The worker pool under the SQLite provider (tests reach it to look at its processes). */
export const DATA_RUNNER = serviceKey<DataRunner>('data.runner');

export class SqliteBackend implements DataBackend {
  constructor(
    private readonly runner: DataRunner,
    private readonly dir: string,
  ) {}

  async create(id: string, schema: SchemaDefT): Promise<void> {
    ensurePrivateDir(this.dir);
    try {
      await this.runner.call(id, { type: 'open', file: this.runner.fileOf(id), create: schema }, { slow: true });
    } catch (err) {
      await this.drop(id);
      throw err;
    }
  }

  async drop(id: string): Promise<void> {
    // No new request reaches the file (its registry row is gone); its worker closes, then it goes.
    await this.runner.retire(id);
    const file = this.runner.fileOf(id);
    for (const s of ['', '-wal', '-shm']) rmSync(file + s, { force: true });
  }

  batch(id: string, ops: OperationT[], now: number, ref?: IdempotencyRef): Promise<EncodedAnswer> {
    return this.runner.call<EncodedAnswer>(id, { type: 'batch', ops, now, ref });
  }

  query(id: string, req: QueryRequest, now: number, ref?: IdempotencyRef): Promise<EncodedAnswer> {
    return this.runner.call<EncodedAnswer>(id, { type: 'query', req, now, ref });
  }

  migrate(id: string, migration: MigrationInT, checksum: string, now: number): Promise<Migrated> {
    return this.runner.call<Migrated>(id, { type: 'migrate', migration, checksum, now }, { slow: true });
  }

  migrations(id: string): Promise<MigrationRecord[]> {
    return this.runner.call<MigrationRecord[]>(id, { type: 'migrations' });
  }
}

/** Files in `dir` that no registry row names: left by a crash between a file and its row. */
export function removeOrphanFiles(dir: string, known: ReadonlySet<string>): void {
  ensurePrivateDir(dir);
  for (const f of readdirSync(dir)) {
    const m = /^([0-9a-f-]{36})\.sqlite(-wal|-shm)?$/.exec(f);
    if (m && !known.has(m[1]!)) rmSync(join(dir, f), { force: true });
  }
}
