import { q, SQLITE, type Dialect } from './dialect.js';
import { LIMITS, type ColumnType, type OrderByT, type TableDefT } from './schema.js';
import { encode, ValueError, type SqlValue } from './values.js';

// The filter grammar of `list` and its orderBy, compiled to parameterised SQL. Column names are
// looked up in the table's schema (own properties only) and quoted; every value is a parameter.
// No caller text is ever spliced into the SQL.

export class FilterError extends Error {
  constructor(
    /** Path below the operation: filter.status.in.3, orderBy.0.column */
    readonly path: string,
    message: string,
  ) {
    super(message);
  }
}

export interface CompiledList {
  /** A boolean SQL expression (the dialect's true when there is no filter). */
  where: string;
  params: SqlValue[];
  /** ORDER BY terms, always ending with the dialect's tiebreak so that offsets page stably. */
  orderBy: string;
}

const SYSTEM_TYPES: Record<string, ColumnType> = { _id: 'text', _version: 'integer', _created_at: 'timestamp', _updated_at: 'timestamp' };
const OPERATORS = new Set(['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'like', 'isNull']);
const MAX_TERMS = 200;

export function columnType(table: TableDefT, column: string): ColumnType | undefined {
  if (Object.hasOwn(SYSTEM_TYPES, column)) return SYSTEM_TYPES[column];
  return Object.hasOwn(table.columns, column) ? table.columns[column]!.type : undefined;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function compileList(tableName: string, table: TableDefT, filter: Record<string, unknown> | undefined, orderBy: OrderByT | undefined, d: Dialect = SQLITE): CompiledList {
  const params: SqlValue[] = [];
  let terms = 0;

  const value = (type: ColumnType, v: unknown, path: string): SqlValue => {
    try {
      return encode(type, v);
    } catch (err) {
      if (err instanceof ValueError) throw new FilterError(path, err.message);
      throw err;
    }
  };
  const bind = (type: ColumnType, v: unknown, path: string): string => {
    params.push(value(type, v, path));
    return '?';
  };

  function condition(column: string, type: ColumnType, cond: unknown, path: string): string {
    const c = q(column);
    if (!isPlainObject(cond)) {
      if (cond === null) return `${c} IS NULL`;
      return `${c} = ${bind(type, cond, path)}`;
    }
    const parts: string[] = [];
    const keys = Object.keys(cond);
    if (!keys.length) throw new FilterError(path, 'give at least one operator (eq, ne, gt, gte, lt, lte, in, like, isNull)');
    for (const op of keys) {
      const v = cond[op];
      const p = `${path}.${op}`;
      if (!OPERATORS.has(op)) throw new FilterError(p, `unknown operator ${op}; use eq, ne, gt, gte, lt, lte, in, like or isNull`);
      if (++terms > MAX_TERMS) throw new FilterError(p, `a filter may have at most ${MAX_TERMS} conditions`);
      switch (op) {
        case 'eq':
          parts.push(v === null ? `${c} IS NULL` : `${c} = ${bind(type, v, p)}`);
          break;
        case 'ne':
          parts.push(v === null ? `${c} IS NOT NULL` : `${c} ${d.distinct} ${bind(type, v, p)}`);
          break;
        case 'gt':
        case 'gte':
        case 'lt':
        case 'lte': {
          if (type === 'json' || type === 'boolean') throw new FilterError(p, `${op} does not apply to a ${type} column`);
          if (v === null) throw new FilterError(p, `${op} needs a value, not null`);
          const sym = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[op];
          parts.push(`${c} ${sym} ${bind(type, v, p)}`);
          break;
        }
        case 'in': {
          if (!Array.isArray(v)) throw new FilterError(p, 'must be an array');
          if (v.length > LIMITS.inItems) throw new FilterError(p, `at most ${LIMITS.inItems} values`);
          const binds = v.flatMap((x, i) => (x === null ? [] : [bind(type, x, `${p}.${i}`)]));
          const alts: string[] = [];
          if (binds.length) alts.push(`${c} IN (${binds.join(', ')})`);
          if (binds.length !== v.length) alts.push(`${c} IS NULL`);
          parts.push(alts.length ? `(${alts.join(' OR ')})` : d.false);
          break;
        }
        case 'like':
          if (typeof v !== 'string') throw new FilterError(p, 'must be a string pattern (% and _ are wildcards)');
          if (type !== 'text' && type !== 'uuid' && type !== 'timestamp' && type !== 'json') throw new FilterError(p, `like does not apply to a ${type} column`);
          params.push(v);
          parts.push(d.like(c, type));
          break;
        case 'isNull':
          if (typeof v !== 'boolean') throw new FilterError(p, 'must be true or false');
          parts.push(`${c} IS ${v ? '' : 'NOT '}NULL`);
          break;
      }
    }
    return parts.length === 1 ? parts[0]! : `(${parts.join(' AND ')})`;
  }

  function group(f: unknown, path: string, depth: number): string {
    if (!isPlainObject(f)) throw new FilterError(path, 'a filter must be an object');
    if (depth > LIMITS.filterDepth) throw new FilterError(path, `filters nest at most ${LIMITS.filterDepth} levels deep`);
    const parts: string[] = [];
    for (const key of Object.keys(f)) {
      const p = path ? `${path}.${key}` : key;
      if (key === 'or') {
        const alts = f[key];
        if (!Array.isArray(alts) || alts.length === 0) throw new FilterError(p, 'or must be a non-empty array of filters');
        if (alts.length > LIMITS.inItems) throw new FilterError(p, `or takes at most ${LIMITS.inItems} filters`);
        parts.push(`(${alts.map((a, i) => group(a, `${p}.${i}`, depth + 1)).join(' OR ')})`);
        continue;
      }
      const type = columnType(table, key);
      if (!type) throw new FilterError(p, `table ${tableName} has no column ${key}`);
      if (++terms > MAX_TERMS) throw new FilterError(p, `a filter may have at most ${MAX_TERMS} conditions`);
      parts.push(condition(key, type, f[key], p));
    }
    if (!parts.length) return d.true;
    return parts.length === 1 ? parts[0]! : `(${parts.join(' AND ')})`;
  }

  const where = filter === undefined ? d.true : group(filter, 'filter', 0);

  const order: string[] = [];
  (orderBy ?? []).forEach((o, i) => {
    if (!columnType(table, o.column)) throw new FilterError(`orderBy.${i}.column`, `table ${tableName} has no column ${o.column}`);
    order.push(`${q(o.column)} ${o.direction === 'desc' ? 'DESC' : 'ASC'}`);
  });
  order.push(d.tiebreak);
  return { where, params, orderBy: order.join(', ') };
}
