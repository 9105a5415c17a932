import { Command } from 'commander';
import { createInterface } from 'node:readline';
import { action, parseIntOption } from '../../cli/action.js';
import { commandWords, fills } from '../../cli/api-words.js';
import { confirm } from '../../cli/confirm.js';
import { UsageError, type CliContext } from '../../cli/context.js';
import { readDataFile } from '../../cli/data-file.js';
import { shortId } from '../../lib/human.js';
import { io } from '../../cli/io.js';
import { cell, emit, keyValues, out, printJson, style, table } from '../../cli/output.js';
import { seg } from '../../client/client.js';
import type { Database, MigrationRecord, QueryResult, RecordResultT } from './schema.js';

const path = (name: string, rest = '') => `/api/v1/data/${seg(name)}${rest}`;

/**
 * A database as typed on the command line: its name, its id, or a unique prefix or suffix (4+
 * characters) of its id, as `svc db ls` shows the last 8. Names win over id fragments.
 */
async function ref(ctx: CliContext, typed: string): Promise<string> {
  if (!/^[0-9a-f-]{4,35}$/i.test(typed)) return typed;
  const all = await listAll(ctx);
  if (all.some((d) => d.name === typed)) return typed;
  const t = typed.toLowerCase();
  const hits = all.filter((d) => d.id.startsWith(t) || d.id.endsWith(t));
  if (hits.length > 1) throw new UsageError(`${typed} matches ${hits.length} databases (${hits.map((d) => d.name).join(', ')}); give more of the id or the name`);
  return hits[0]?.id ?? typed;
}

async function listAll(ctx: CliContext): Promise<Database[]> {
  const all: Database[] = [];
  let cursor: string | undefined;
  do {
    const page = await ctx.client.call<Database[]>('GET', '/api/v1/data', { query: { limit: 200, cursor } });
    all.push(...page.data);
    const next = page.headers['x-next-cursor'];
    cursor = typeof next === 'string' && next ? next : undefined;
  } while (cursor);
  return all;
}

function dbTable(dbs: Database[]): string {
  return table(
    dbs,
    [
      { header: 'NAME', value: (d) => d.name },
      { header: 'ID', value: (d) => shortId(d.id) },
      { header: 'VERSION', value: (d) => d.schemaVersion },
      { header: 'TABLES', value: (d) => Object.keys(d.schema.tables).join(', ') },
      { header: 'CREATED', value: (d) => d.createdAt.replace('T', ' ').slice(0, 16) },
    ],
    'no databases; create one with `svc db create <name> --schema schema.json`',
  );
}

function showDb(d: Database): string {
  let out = keyValues({ name: d.name, id: d.id, schemaVersion: d.schemaVersion, createdAt: d.createdAt });
  for (const [t, def] of Object.entries(d.schema.tables)) {
    out += `\n${style.bold(t)}\n`;
    out += table(
      Object.entries(def.columns).map(([name, c]) => ({ name, ...c })),
      [
        { header: 'COLUMN', value: (c) => c.name },
        { header: 'TYPE', value: (c) => c.type },
        { header: 'NULL', value: (c) => (c.nullable ? 'yes' : 'no') },
        { header: 'UNIQUE', value: (c) => (c.unique ? 'yes' : '') },
        { header: 'DEFAULT', value: (c) => (c.default === undefined ? '' : JSON.stringify(c.default)) },
        { header: 'REFERENCES', value: (c) => (c.references ? `${c.references.table}.${c.references.column}` : '') },
      ],
    );
    for (const ix of def.indexes ?? []) out += style.dim(`  index ${ix.name} (${ix.columns.join(', ')})${ix.unique ? ' unique' : ''}\n`);
  }
  return out;
}

/** Rows as an aligned table with the columns of the first row (query results are free-form). */
function rowsTable(rows: Record<string, unknown>[]): string {
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  return table(
    rows,
    cols.map((c) => ({ header: c, value: (r: Record<string, unknown>) => r[c] })),
    'no rows',
  );
}

const csvField = (v: unknown): string => {
  const s = v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

export function toCsv(rows: Record<string, unknown>[]): string {
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  return [cols.map(csvField).join(','), ...rows.map((r) => cols.map((c) => csvField(r[c])).join(','))].join('\n') + '\n';
}

const WRITE_WORDS = /^\s*(insert|update|delete|replace)\b/i;

/** A --param or --param-json as typed, with its place on the command line. */
interface TypedParam {
  at: number;
  json: boolean;
  text: string;
}

// Commander keeps each option's values apart; a counter across both keeps the order they were typed.
let typed = 0;
const typedParam =
  (json: boolean) =>
  (text: string, prev: TypedParam[] = []): TypedParam[] => [...prev, { at: typed++, json, text }];

interface QueryOptions {
  param?: TypedParam[];
  paramJson?: TypedParam[];
  write?: boolean;
  maxRows?: number;
  csv?: boolean;
}

/** The parameters in the order they were typed, whichever of the two options gave each. */
export function paramsFrom(o: Pick<QueryOptions, 'param' | 'paramJson'>): unknown[] {
  return [...(o.param ?? []), ...(o.paramJson ?? [])]
    .sort((a, b) => a.at - b.at)
    .map((p) => {
      if (!p.json) return p.text;
      try {
        return JSON.parse(p.text) as unknown;
      } catch {
        throw new UsageError(`--param-json ${p.text}: not JSON (write strings as "\\"text\\"")`);
      }
    });
}

function printResult(ctx: CliContext, r: QueryResult, csv: boolean, write: boolean): void {
  if (ctx.json) return printJson(r);
  if (csv) return out(toCsv(r.rows));
  if (r.rows.length) out(rowsTable(r.rows));
  const what = `${r.rowCount} row${r.rowCount === 1 ? '' : 's'}${write ? ' changed' : ''}`;
  out(style.dim(`${what}${r.truncated ? ' (truncated: raise --max-rows, up to 200, or add LIMIT/OFFSET)' : ''}\n`));
}

/** `svc db query <name>` without SQL: statements end with ';', writes are sent in write mode. */
async function interactive(ctx: CliContext, name: string, o: QueryOptions): Promise<void> {
  const { stdin, interactive: tty } = io();
  const rl = createInterface({ input: stdin, terminal: false });
  const prompt = (p: string) => tty && out(p);
  if (tty) out(style.dim('SQL ending with ";". INSERT/UPDATE/DELETE/REPLACE run in write mode. .tables lists tables, .exit leaves.\n'));
  let buf = '';
  prompt(`${name}> `);
  for await (const line of rl) {
    const t = line.trim();
    if (!buf && (t === '.exit' || t === '.quit')) break;
    if (!buf && t === '.tables') {
      const d = (await ctx.client.call<Database>('GET', path(name))).data;
      out(Object.keys(d.schema.tables).join('\n') + '\n');
      prompt(`${name}> `);
      continue;
    }
    buf += (buf ? '\n' : '') + line;
    if (!t.endsWith(';')) {
      prompt(buf.trim() ? '   ...> ' : `${name}> `);
      continue;
    }
    const sql = buf.trim().replace(/;\s*$/, '');
    buf = '';
    try {
      const write = WRITE_WORDS.test(sql);
      const r = await ctx.client.call<QueryResult>('POST', path(name, '/query'), { body: { sql, mode: write ? 'write' : 'read', maxRows: o.maxRows } });
      printResult(ctx, r.data, Boolean(o.csv), write);
    } catch (err) {
      const e = err as Error & { code?: string; status?: number };
      // Endpoints become commands; the prompt has no --write (it picks the mode), so fields stay.
      out(`${style.red('error')} ${e.code ? `${e.code} (${e.status}): ` : ''}${commandWords(e.message)}\n`);
      if (e.code === undefined) throw err;
    }
    prompt(`${name}> `);
  }
  rl.close();
}

export function dbCommand(): Command {
  const cmd = new Command('db').description('Application databases: schemas, record batches, scoped SQL, migrations');

  cmd
    .command('ls')
    .description('List databases')
    .action(
      action(async (ctx) => {
        const all = await listAll(ctx);
        emit(ctx.json, all, () => dbTable(all));
      }),
    );

  cmd
    .command('create <name>')
    .description('Create a database from a schema file ({"tables": {...}}, JSON or YAML)')
    .requiredOption('--schema <file>', 'schema file')
    .action(
      action(async (ctx, name: string, o: { schema: string }) => {
        const file = (await readDataFile(o.schema)) as Record<string, unknown> | null;
        const schema = file && typeof file === 'object' && 'schema' in file ? file.schema : file;
        const d = await ctx.client.post<Database>('/api/v1/data', { name, schema });
        emit(ctx.json, d, () => `created database ${d.name} (${shortId(d.id)}), schemaVersion ${d.schemaVersion}\n`);
      }),
    );

  cmd
    .command('show <name>')
    .description('Show a database: its tables, columns and indexes')
    .action(
      action(async (ctx, name: string) => {
        const d = await ctx.client.get<Database>(path(await ref(ctx, name)));
        emit(ctx.json, d, () => showDb(d));
      }),
    );

  cmd
    .command('rm <name>')
    .description('Delete a database and all its records')
    .option('--expected-version <n>', 'delete only if the schemaVersion is this', parseIntOption('--expected-version'))
    .option('-y, --yes', 'do not ask for confirmation')
    .action(
      action(async (ctx, name: string, o: { expectedVersion?: number; yes?: boolean }) => {
        const target = await ref(ctx, name);
        await confirm(`Delete database ${name} and all its records?`, Boolean(o.yes), `svc db rm ${name}`);
        const r = await ctx.client.delete<{ deleted: true }>(path(target), o.expectedVersion === undefined ? undefined : { expectedVersion: o.expectedVersion });
        emit(ctx.json, r, () => `deleted database ${name}\n`);
      }),
    );

  fills(cmd.command('query <name> [sql]'), {
    'body.mode': { as: '--write', values: { write: 'with --write', read: 'without --write' } },
    'body.params': '--param/--param-json',
  })
    .description('Run one SQL statement (no SQL: an interactive prompt)')
    .option('--param <value>', 'a parameter for the next ? (a string; repeatable)', typedParam(false))
    .option('--param-json <json>', 'a parameter as JSON for the next ?: 42, true, null, "text" (repeatable; bound in the order typed, mixed with --param)', typedParam(true))
    .option('--write', 'run in write mode (INSERT, UPDATE, DELETE, REPLACE)')
    .option('--max-rows <n>', 'at most this many rows (1-200, default 200)', parseIntOption('--max-rows'))
    .option('--csv', 'print rows as CSV')
    .action(
      action(async (ctx, name: string, sql: string | undefined, o: QueryOptions) => {
        const target = await ref(ctx, name);
        if (sql === undefined) return interactive(ctx, target, o);
        const body = { sql, params: paramsFrom(o), mode: o.write ? 'write' : 'read', maxRows: o.maxRows };
        const r = await ctx.client.post<QueryResult>(path(target, '/query'), body);
        printResult(ctx, r, Boolean(o.csv), Boolean(o.write));
      }),
    );

  fills(cmd.command('tx <name> <file>'), { body: '<file>' })
    .description('Run an atomic batch of record operations from a file ([ops] or {operations, idempotencyKey})')
    .action(
      action(async (ctx, name: string, file: string) => {
        const content = await readDataFile(file);
        const body = Array.isArray(content) ? { operations: content } : content;
        const r = await ctx.client.post<RecordResultT[]>(path(await ref(ctx, name), '/transactions'), body);
        const ops = (Array.isArray(content) ? content : ((content as { operations?: unknown[] })?.operations ?? [])) as { op?: string; table?: string }[];
        emit(ctx.json, r, () =>
          r
            .map((res, i) => {
              const head =
                style.bold(`[${i}] ${ops[i]?.op ?? ''} ${ops[i]?.table ?? ''}`) +
                style.dim(`  ${res.rows.length} row(s), total ${res.total}${res.nextOffset === null ? '' : `, next offset ${res.nextOffset}`}`);
              return `${head}\n${res.rows.length ? rowsTable(res.rows) : ''}`;
            })
            .join('\n'),
        );
      }),
    );

  fills(cmd.command('migrate <name> <file>'), { body: '<file>' })
    .description('Apply a migration file ({id, expectedVersion, steps, allowDestructive?})')
    .action(
      action(async (ctx, name: string, file: string) => {
        const d = await ctx.client.post<Database>(path(await ref(ctx, name), '/migrations'), await readDataFile(file));
        emit(ctx.json, d, () => `migrated ${d.name} to schemaVersion ${d.schemaVersion}\n`);
      }),
    );

  cmd
    .command('migrations <name>')
    .description('List applied migrations')
    .action(
      action(async (ctx, name: string) => {
        const list = await ctx.client.get<MigrationRecord[]>(path(await ref(ctx, name), '/migrations'));
        emit(ctx.json, list, () =>
          table(
            list,
            [
              { header: 'VERSION', value: (m) => m.schemaVersion },
              { header: 'ID', value: (m) => m.id },
              { header: 'APPLIED', value: (m) => m.appliedAt.replace('T', ' ').slice(0, 19) },
              { header: 'CHECKSUM', value: (m) => cell(m.checksum.slice(0, 12)) },
            ],
            'no migrations yet',
          ),
        );
      }),
    );

  // Every subcommand names the database the way the API's path does ({resource}).
  for (const c of cmd.commands) if (c.registeredArguments[0]?.name() === 'name') fills(c, { 'params.resource': '<name>' });
  return cmd;
}
