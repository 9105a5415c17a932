// The raw baseline for the PostgreSQL data scenario: plain node:http and plain `pg`, the same table
// in its own schema (the same DDL, system columns, defaults and trigger as svc's provider makes),
// a pool of the same size as one database's pool in svc (data.pool.perDatabase), the bearer key
// checked, the same { ok, data } envelope — and nothing else (no validation library, no role
// switch, no admission of SQL, no request log). POST /insert {rows}: one transaction and one
// INSERT … RETURNING per batch; POST /query {params: [id]}: the point query. Prints {"port":N}.
import { createServer } from 'node:http';
import { bearer, send } from './respond.mjs';
import pg from 'pg';
import { createTableSql, q } from '../../dist/src/resources/data/ddl.js';
import { PG, pgDecode, schemaFunctions } from '../../dist/src/resources/data/pg/dialect.js';
import { TYPES } from '../../dist/src/resources/data/pg/connect.js';

const { url, key, table, pool: size } = JSON.parse(process.argv[2]);
const schema = q(`bench_base_${process.pid}`);
const admin = new pg.Client({ connectionString: url });
await admin.connect();
await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
for (const sql of schemaFunctions(schema)) await admin.query(sql);
await admin.query(`SET search_path = ${schema}`);
for (const sql of createTableSql('items', table, PG)) await admin.query(sql);
await admin.end();

const db = new pg.Pool({ connectionString: url, max: size, types: TYPES, options: `-c search_path=${schema}` });
const cols = Object.keys(table.columns);
const types = Object.fromEntries(cols.map((c) => [c, table.columns[c].type]));
const decodeRow = (r) => {
  for (const k of ['_created_at', '_updated_at']) r[k] = pgDecode('timestamp', r[k]);
  for (const c of cols) r[c] = pgDecode(types[c], r[c]);
  return r;
};

const authorized = bearer(key);

async function insert(rows) {
  const c = await db.connect();
  try {
    await c.query('BEGIN');
    const params = [];
    const tuples = rows.map((r) => `(${cols.map((col) => (params.push(r[col]), `$${params.length}`)).join(', ')})`);
    const { rows: out } = await c.query(`INSERT INTO items (${cols.map(q).join(', ')}) VALUES ${tuples.join(', ')} RETURNING *`, params);
    await c.query('COMMIT');
    return out.map(decodeRow);
  } catch (err) {
    await c.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    c.release();
  }
}

const server = createServer((req, res) => {
  if (!authorized(req)) return send(res, 401, { ok: false, code: 'unauthorized' });
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c) => (body += c));
  req.on('end', async () => {
    try {
      const b = JSON.parse(body);
      if (req.url === '/insert') {
        const rows = await insert(b.rows);
        return send(res, 200, { ok: true, data: [{ rows, total: rows.length, nextOffset: null }] });
      }
      const { rows } = await db.query('SELECT * FROM items WHERE _id = $1', b.params);
      return send(res, 200, { ok: true, data: { rows: rows.map(decodeRow), rowCount: rows.length, truncated: false } });
    } catch (err) {
      send(res, 500, { ok: false, code: 'internal', error: err.message });
    }
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n'));
