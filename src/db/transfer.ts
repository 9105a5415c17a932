import type { Clock } from '../lib/clock.js';
import { nowIso } from '../lib/time.js';
import { isPostgres, stmt, type DB, type Sql } from './open.js';

// Moving a project's state from one provider to another (svc state export / import): every row of
// every state table, as JSON lines, read in one transaction (a consistent snapshot) and written in
// one (all or nothing). The export file holds the vault's entries and the webhooks' secrets only
// sealed, never a key. Which tables, in which order, the caller says (src/state-schema.ts puts
// them together from the resources' descriptors: db/ knows no resource).

/** Meta rows that belong to one provider's bookkeeping, written by import from the header instead. */
const PROVIDER_META = new Set(['lastEventId']);

export interface ExportHeader {
  svc: 'state';
  format: 1;
  /**
   * Where it came from. A PostgreSQL state's webhook secrets open with a key kept in the state
   * itself (sealed under the vault key) and its rows carry numbers SQLite has no column for: it
   * goes into PostgreSQL only.
   */
  provider: 'sqlite' | 'postgres';
  /** The schema version of the state exported: an import needs a state of the same version. */
  schema: number;
  /** The newest event id ever given: the imported state goes on from there, never reusing one. */
  lastEventId: number;
  exportedAt: string;
  counts: Record<string, number>;
}

type Value = string | number | null | { $b64: string };

const encode = (v: unknown): Value => (Buffer.isBuffer(v) || v instanceof Uint8Array ? { $b64: Buffer.from(v).toString('base64') } : (v as string | number | null));
const decode = (v: unknown): unknown => {
  if (v && typeof v === 'object' && Object.hasOwn(v, '$b64') && typeof (v as { $b64: unknown }).$b64 === 'string') return Buffer.from((v as { $b64: string }).$b64, 'base64');
  if (v === null || typeof v === 'string' || typeof v === 'number') return v;
  throw new TransferError(`a value of type ${typeof v} cannot be a column's`);
};

export class TransferError extends Error {}

export async function schemaVersion(db: DB): Promise<number> {
  return Number(((await stmt(db, 'SELECT MAX(version) AS v FROM schema_migrations').get()) as { v: number | null }).v ?? 0);
}

// Module constants: stmt() caches a statement by its Sql value, so a literal per call would add one each time.
const LAST_EVENT_ID: Sql = {
  sqlite: "SELECT seq FROM sqlite_sequence WHERE name = 'events'",
  postgres: "SELECT CAST(value AS BIGINT) AS seq FROM meta WHERE key = 'lastEventId'",
};
const TABLES: Sql = {
  sqlite: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
  postgres: "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name",
};
const COLUMNS: Sql = {
  sqlite: 'SELECT name FROM pragma_table_info(?)',
  postgres: 'SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1',
};

/** The newest event id ever given (pruned or not): where the next one goes on from. */
export async function lastEventId(db: DB): Promise<number> {
  const r = (await stmt(db, LAST_EVENT_ID).get()) as { seq: number } | undefined;
  return Number(r?.seq ?? 0);
}

/** The tables the state has (for the check that the copied tables miss none). */
export async function stateTables(db: DB): Promise<string[]> {
  const rows = (await stmt(db, TABLES).all()) as { name: string }[];
  return rows.map((r) => r.name);
}

/** Writes the header line (exportedAt from `clock`), then one line per row of `tables` (meta among them). */
export async function exportState(db: DB, tables: readonly string[], write: (line: string) => void, clock: Pick<Clock, 'now'>): Promise<ExportHeader> {
  // One snapshot: on PostgreSQL a read-only one that holds no daemon's writes back.
  const consistent = async <T>(fn: () => Promise<T>): Promise<T> => (isPostgres(db) ? db.snapshot(fn) : await db.transaction(fn));
  return await consistent(async () => {
    const rows: (readonly [string, Record<string, unknown>[]])[] = [];
    for (const t of tables) rows.push([t, (await db.prepare(`SELECT * FROM ${t}`).all()) as Record<string, unknown>[]] as const);
    const header: ExportHeader = {
      svc: 'state',
      format: 1,
      provider: isPostgres(db) ? 'postgres' : 'sqlite',
      schema: await schemaVersion(db),
      lastEventId: await lastEventId(db),
      exportedAt: nowIso(clock),
      counts: {},
    };
    for (const [t, of] of rows) header.counts[t] = t === 'meta' ? of.filter((r) => !PROVIDER_META.has(String(r.key))).length : of.length;
    write(JSON.stringify(header));
    for (const [t, of] of rows) {
      for (const r of of) {
        if (t === 'meta' && PROVIDER_META.has(String(r.key))) continue;
        write(JSON.stringify({ t, r: Object.fromEntries(Object.entries(r).map(([k, v]) => [k, encode(v)])) }));
      }
    }
    return header;
  });
}

async function columnsOf(db: DB, table: string): Promise<Set<string>> {
  const rows = (await stmt(db, COLUMNS).all(table)) as { name: string }[];
  return new Set(rows.map((r) => r.name));
}

/** Agents name the agent they report to: those first, so each row's reference exists when it goes in. */
function parentsFirst(rows: Record<string, unknown>[]): Record<string, unknown>[] {
  const byName = new Map(rows.map((r) => [String(r.name), r]));
  const out: Record<string, unknown>[] = [];
  const placed = new Set<string>();
  const place = (r: Record<string, unknown>, depth: number) => {
    const name = String(r.name);
    if (placed.has(name)) return;
    if (depth > rows.length) throw new TransferError('agents.reports_to forms a cycle');
    const parent = r.reports_to === null ? undefined : byName.get(String(r.reports_to));
    if (parent) place(parent, depth + 1);
    placed.add(name);
    out.push(r);
  };
  for (const r of rows) place(r, 0);
  return out;
}

/**
 * Loads an export into this state, which must be empty (a fresh database, or one only started):
 * in one transaction, so a file that fails half-way leaves nothing. `tables` are the tables an
 * export holds, parents first (meta among them). Returns the rows per table.
 */
export async function importState(db: DB, tables: readonly string[], lines: Iterable<string>): Promise<Record<string, number>> {
  const it = lines[Symbol.iterator]();
  const first = it.next();
  if (first.done) throw new TransferError('the file is empty');
  let header: ExportHeader;
  try {
    header = JSON.parse(first.value) as ExportHeader;
  } catch {
    throw new TransferError('the first line is not JSON: not an svc state export');
  }
  if (header?.svc !== 'state' || header.format !== 1) throw new TransferError('the first line is not the header of an svc state export (format 1)');
  if (header.provider === 'postgres' && !isPostgres(db))
    throw new TransferError('an export of a PostgreSQL state goes into a PostgreSQL state only (its webhook secrets open with a key the state keeps)');
  const here = await schemaVersion(db);
  if (header.schema !== here) {
    throw new TransferError(`the export has schema version ${header.schema} and this state ${here}: export and import with the same svc version`);
  }
  const known = new Set<string>(tables);
  const rows = new Map<string, Record<string, unknown>[]>(tables.map((t) => [t, []]));
  let n = 1;
  for (let r = it.next(); !r.done; r = it.next()) {
    n++;
    if (!r.value.trim()) continue;
    let line: { t?: unknown; r?: unknown };
    try {
      line = JSON.parse(r.value);
    } catch {
      throw new TransferError(`line ${n} is not JSON`);
    }
    if (typeof line.t !== 'string' || !known.has(line.t)) throw new TransferError(`line ${n} names no state table (${String(line.t).slice(0, 40)})`);
    if (!line.r || typeof line.r !== 'object' || Array.isArray(line.r)) throw new TransferError(`line ${n} has no row`);
    rows.get(line.t)!.push(line.r as Record<string, unknown>);
  }
  for (const [t, expected] of Object.entries(header.counts ?? {})) {
    if (known.has(t) && rows.get(t)!.length !== expected) throw new TransferError(`the file is cut short: the header counts ${expected} rows of ${t}, the file holds ${rows.get(t)!.length}`);
  }
  const counts: Record<string, number> = {};
  const pg = isPostgres(db);
  await db.transaction(async () => {
    for (const t of tables) {
      if (t === 'meta') continue;
      if (await db.prepare(`SELECT 1 AS x FROM ${t} LIMIT 1`).get()) throw new TransferError(`this state is not empty (${t} has rows): import into a new state`);
    }
    // The imported project keeps its id: vault entries are sealed under keys derived from it.
    await db.prepare('DELETE FROM meta').run();
    for (const t of tables) {
      const cols = await columnsOf(db, t);
      const list = t === 'agents' ? parentsFirst(rows.get(t)!) : rows.get(t)!;
      for (const row of list) {
        const names = Object.keys(row);
        for (const c of names) if (!cols.has(c)) throw new TransferError(`${t} has no column ${c.slice(0, 40)}`);
        // PostgreSQL numbers some rows itself (GENERATED ALWAYS): an exported number is kept as it was.
        const overriding = pg ? ' OVERRIDING SYSTEM VALUE' : '';
        await db.prepare(`INSERT INTO ${t} (${names.join(', ')})${overriding} VALUES (${names.map(() => '?').join(', ')})`).run(...names.map((c) => decode(row[c])));
      }
      counts[t] = list.length;
    }
    // Event ids go on from the exported state's last, whichever provider keeps the counter.
    if (pg) {
      await db.prepare("INSERT INTO meta (key, value) VALUES ('lastEventId', ?)").run(String(header.lastEventId));
      // Identity columns go on after the numbers imported with their rows.
      const identities = (await db.prepare("SELECT table_name AS t, column_name AS c FROM information_schema.columns WHERE table_schema = current_schema() AND is_identity = 'YES'").all()) as {
        t: string;
        c: string;
      }[];
      for (const { t, c } of identities) {
        if (!/^[a-z_]+$/.test(t) || !/^[a-z_]+$/.test(c)) continue;
        await db.prepare(`SELECT setval(pg_get_serial_sequence('${t}', '${c}'), GREATEST((SELECT MAX(${c}) FROM ${t}), 1))`).get();
      }
    } else if (header.lastEventId > 0) {
      if (!(await db.prepare("UPDATE sqlite_sequence SET seq = ? WHERE name = 'events'").run(header.lastEventId)).changes) {
        await db.prepare("INSERT INTO sqlite_sequence (name, seq) VALUES ('events', ?)").run(header.lastEventId);
      }
    }
  });
  return counts;
}
