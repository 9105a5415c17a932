import { UUID_RE } from '../../lib/ids.js';
import type { ColumnDefT, ColumnType, TableDefT } from './schema.js';

// Column values between JSON and SQLite. Everything the server writes goes through encode(), so a
// column holds only values of its type; decode() gives booleans and json back as JSON values.

export type SqlValue = string | number | null;

export class ValueError extends Error {}

const ISO_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/** Encodes one JSON value for a column of `type`; throws ValueError with a message for the caller. */
export function encode(type: ColumnType, v: unknown): SqlValue {
  if (v === null) return null;
  switch (type) {
    case 'text':
      if (typeof v !== 'string') throw new ValueError('must be a string');
      if (v.includes('\u0000')) throw new ValueError('must not contain NUL characters');
      return v;
    case 'integer':
      if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new ValueError('must be an integer between -(2^53-1) and 2^53-1');
      return v;
    case 'number':
      if (typeof v !== 'number' || !Number.isFinite(v)) throw new ValueError('must be a finite number');
      return v;
    case 'boolean':
      if (typeof v !== 'boolean') throw new ValueError('must be true or false');
      return v ? 1 : 0;
    case 'timestamp': {
      if (typeof v !== 'string' || !ISO_RE.test(v)) throw new ValueError('must be an ISO 8601 date-time with a time zone (2026-01-31T12:00:00.000Z)');
      const t = Date.parse(v);
      if (Number.isNaN(t)) throw new ValueError('is not a valid date-time');
      const utc = new Date(t).toISOString();
      // An offset can carry 0000-01-01 or 9999-12-31 out of four-digit years (-000001-…, +010000-…),
      // which SQLite's date functions, the column's check and text ordering do not read.
      if (utc.length !== 24) throw new ValueError('is outside the years 0000 to 9999 in UTC');
      return utc;
    }
    case 'uuid':
      if (typeof v !== 'string' || !UUID_RE.test(v)) throw new ValueError('must be a UUID');
      return v.toLowerCase();
    case 'json': {
      const text = JSON.stringify(v);
      if (text === undefined) throw new ValueError('must be a JSON value');
      return text;
    }
  }
}

export function decode(type: ColumnType | undefined, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (type === 'boolean') return v === 1 || v === 1n;
  if (type === 'json' && typeof v === 'string') {
    try {
      return JSON.parse(v);
    } catch {
      return v;
    }
  }
  if (Buffer.isBuffer(v)) return v.toString('base64');
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  return v;
}

const decoders = new WeakMap<TableDefT, [string, ColumnType][]>();

/**
 * A row as read from SQLite (every column) → the JSON row the API returns, in place: only
 * boolean and json columns (and blobs, which only raw SQL can write) need converting.
 */
export function decodeRow(table: TableDefT, row: Record<string, unknown>): Record<string, unknown> {
  let convert = decoders.get(table);
  if (!convert) {
    convert = Object.entries(table.columns)
      .filter(([, c]) => c.type === 'boolean' || c.type === 'json')
      .map(([k, c]) => [k, c.type] as [string, ColumnType]);
    decoders.set(table, convert);
  }
  for (const [k, type] of convert) if (Object.hasOwn(row, k)) row[k] = decode(type, row[k]);
  return row;
}

/** The SQL literal of a column default (DDL cannot take parameters); only encoded values reach here. */
export function literal(col: ColumnDefT, v: unknown): string {
  const e = encode(col.type, v);
  if (e === null) return 'NULL';
  if (typeof e === 'number') return String(e);
  return `'${e.replace(/'/g, "''")}'`;
}
