import { parse } from 'libpg-query';
import { AppError } from '../../../kernel/errors.js';

// Minimal admission of caller SQL under the Postgres provider (to be replaced by the full subset).

export interface PgAdmission { kind: 'select' | 'insert' | 'update' | 'delete'; reads: string[]; writes: string[]; params: number }

const KINDS = { SelectStmt: 'select', InsertStmt: 'insert', UpdateStmt: 'update', DeleteStmt: 'delete' } as const;
const refuse = (message: string): AppError => new AppError('data_invalid', message, { details: [{ path: 'body.sql', message }] });

export async function admitPgSql(sql: string, mode: 'read' | 'write', tables: ReadonlySet<string>, paramCount: number): Promise<PgAdmission> {
  let tree: { stmts?: { stmt: Record<string, unknown> }[] };
  try {
    tree = await parse(sql);
  } catch (err) {
    throw refuse(`SQL error: ${(err as Error).message}.`);
  }
  if (tree.stmts?.length !== 1) throw refuse('Send exactly one statement.');
  const [node, body] = Object.entries(tree.stmts[0]!.stmt)[0]!;
  const kind = (KINDS as Record<string, PgAdmission['kind']>)[node];
  if (!kind) throw refuse(`${node.replace(/Stmt$/, '')} is not allowed here; send SELECT, INSERT, UPDATE or DELETE.`);
  if (mode === 'read' && kind !== 'select') throw refuse(`${kind.toUpperCase()} writes; send it with mode "write".`);
  if (mode === 'write' && kind === 'select') throw refuse('A SELECT does not write; send it with mode "read" (the default).');
  const ctes = new Set<string>();
  const reads = new Set<string>();
  const writes = new Set<string>();
  let params = 0;
  const walk = (v: unknown, key: string): void => {
    if (Array.isArray(v)) return v.forEach((x) => walk(x, key));
    if (!v || typeof v !== 'object') return;
    for (const [k, x] of Object.entries(v)) {
      if (k === 'CommonTableExpr') ctes.add((x as { ctename: string }).ctename);
      if (k === 'ParamRef') params = Math.max(params, (x as { number: number }).number);
      if (k === 'RangeVar' || (key === 'relation' && k === 'relname')) {
        const rv = (k === 'RangeVar' ? x : v) as { relname: string; schemaname?: string };
        if (rv.schemaname) throw refuse(`Name tables without a schema (${rv.schemaname}.${rv.relname}).`);
        (k === 'RangeVar' ? reads : writes).add(rv.relname);
        if (k !== 'RangeVar') continue;
      }
      walk(x, k);
    }
  };
  walk(body, node);
  for (const t of [...reads, ...writes]) {
    if (!ctes.has(t) && !tables.has(t)) throw new AppError('data_not_found', `no such table: ${t} in this database.`);
  }
  if (mode === 'read' && writes.size) throw refuse('The statement writes; read mode runs only statements that cannot write (send it with mode "write").');
  if (params > paramCount) throw refuse(`The statement uses $${params} but ${paramCount} parameters were given.`);
  const own = (s: Set<string>) => [...s].filter((t) => !ctes.has(t) && tables.has(t));
  return { kind, reads: own(reads), writes: own(writes), params };
}
