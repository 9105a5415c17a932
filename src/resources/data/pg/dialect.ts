import { q, type Dialect } from '../dialect.js';
import type { ColumnType, TableDefT } from '../schema.js';
import { decode, literal } from '../values.js';
import { pgConstraint } from './errors.js';

// PostgreSQL's side of dialect.ts. Column types are chosen so that every answer is the one SQLite
// gives, byte for byte:
//   integer   BIGINT            (read back as a JSON number; see values below)
//   number    DOUBLE PRECISION
//   boolean   BOOLEAN
//   timestamp TIMESTAMPTZ(3)    (milliseconds, read back as Date#toISOString(): 2026-01-31T12:00:00.000Z)
//   uuid      TEXT + CHECK      (like SQLite: a column referencing _id may be text or uuid)
//   json      TEXT + CHECK      (the text as written, keys in their order; jsonb would reorder them)
// The system columns are written by the server only: _id by a UUIDv7 default that is monotonic
// within the database (so `list` pages in insertion order by _id), _version and _updated_at by a
// BEFORE UPDATE trigger; the database's role has no INSERT or UPDATE privilege on any of them.

const STAMP = 'TIMESTAMPTZ(3)';

/** A row as node-postgres read it → the API's row: json parsed, timestamps as the one UTC spelling. */
export function pgDecode(type: ColumnType | undefined, v: unknown): unknown {
  if (v instanceof Date) return isoOf(v);
  if (type === 'boolean' && typeof v === 'boolean') return v;
  return decode(type, v);
}

/** Date#toISOString, but for the years 0 to 9999 only (a four-digit year, as SQLite's text has). */
export const isoOf = (d: Date): string => (Number.isNaN(d.getTime()) ? 'invalid' : d.toISOString());

const decoders = new WeakMap<TableDefT, [string, ColumnType][]>();

export const PG: Dialect = {
  name: 'postgres',
  true: 'TRUE',
  false: 'FALSE',
  distinct: 'IS DISTINCT FROM',
  abortsOnError: true,
  multiRowInsert: true,
  tiebreak: '"_id" ASC',
  // SQLite's LIKE ignores ASCII case: ILIKE is the nearest (it also folds non-ASCII letters).
  // A timestamp is matched in the spelling the API shows, not Postgres's own.
  like: (c, type) => (type === 'timestamp' ? `to_char(${c} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') ILIKE ?` : `${c} ILIKE ?`),
  serverStamps: true,
  decodeRow(def, row) {
    let convert = decoders.get(def);
    if (!convert) {
      convert = [
        ['_created_at', 'timestamp'],
        ['_updated_at', 'timestamp'],
        ...Object.entries(def.columns)
          .filter(([, c]) => c.type === 'json' || c.type === 'timestamp')
          .map(([k, c]) => [k, c.type] as [string, ColumnType]),
      ];
      decoders.set(def, convert);
    }
    for (const [k, type] of convert) if (Object.hasOwn(row, k)) row[k] = pgDecode(type, row[k]);
    return row;
  },
  constraintColumn: (err) => pgConstraint(err),
  columnType: { text: 'TEXT', integer: 'BIGINT', number: 'DOUBLE PRECISION', boolean: 'BOOLEAN', timestamp: STAMP, uuid: 'TEXT', json: 'TEXT' },
  systemColumns: [
    `"_id" TEXT PRIMARY KEY NOT NULL DEFAULT _svc_uuidv7()`,
    `"_version" BIGINT NOT NULL DEFAULT 1`,
    `"_created_at" ${STAMP} NOT NULL DEFAULT now()`,
    `"_updated_at" ${STAMP} NOT NULL DEFAULT now()`,
  ],
  check(name, col) {
    const c = q(name);
    if (col.type === 'json') return ` CONSTRAINT ${c} CHECK (_svc_is_json(${c}))`;
    if (col.type === 'uuid') return ` CONSTRAINT ${c} CHECK (char_length(${c}) = 36)`;
    return '';
  },
  literal(col, v) {
    if (col.type === 'boolean' && v !== null) return v ? 'TRUE' : 'FALSE';
    return literal(col, v);
  },
  tableOptions: '',
  renamed: (table, from, to, col) => (col.type === 'json' || col.type === 'uuid' ? [`ALTER TABLE ${q(table)} RENAME CONSTRAINT ${q(from)} TO ${q(to)}`] : []),
  tableTriggers: (table) => [`CREATE TRIGGER ${q(`_svc_${table}_version`)} BEFORE UPDATE ON ${q(table)} FOR EACH ROW EXECUTE FUNCTION _svc_bump()`],
};

/**
 * Functions every database's schema holds, owned by the admin: the _id default, the json check,
 * the version trigger. `$s` is the schema's quoted name (their search_path is pinned to it).
 */
export function schemaFunctions(s: string): string[] {
  return [
    `CREATE SEQUENCE ${s}._svc_seq`,
    // UUIDv7: 48 bits of milliseconds, then 42 bits of the database's sequence, then 32 random:
    // ordered by creation within the database, as SQLite's rowids are.
    `CREATE FUNCTION ${s}._svc_uuidv7() RETURNS text LANGUAGE plpgsql VOLATILE SET search_path = ${s}, pg_catalog AS $f$
DECLARE ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000); n bigint := nextval('${s.replace(/'/g, "''")}._svc_seq') & 4398046511103; h text;
BEGIN
  h := lpad(to_hex(ms), 12, '0') || '7' || lpad(to_hex((n >> 30) & 4095), 3, '0') || to_hex(8 | ((n >> 28) & 3)) || lpad(to_hex((n >> 16) & 4095), 3, '0')
    || lpad(to_hex(n & 65535), 4, '0') || lpad(to_hex((random() * 4294967295)::bigint), 8, '0');
  RETURN substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-' || substr(h, 13, 4) || '-' || substr(h, 17, 4) || '-' || substr(h, 21, 12);
END $f$`,
    `CREATE FUNCTION ${s}._svc_is_json(t text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog AS $f$
BEGIN PERFORM t::json; RETURN true; EXCEPTION WHEN others THEN RETURN false; END $f$`,
    `CREATE FUNCTION ${s}._svc_bump() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog AS $f$
BEGIN NEW."_id" := OLD."_id"; NEW."_created_at" := OLD."_created_at"; NEW."_version" := OLD."_version" + 1; NEW."_updated_at" := now(); RETURN NEW; END $f$`,
  ];
}
