// The raw baseline for the application-database scenarios: plain node:http and better-sqlite3,
// the same table (same DDL, STRICT, same system columns and triggers), WAL as svc, the bearer key
// checked, the same { ok, data } envelope and result shapes — and nothing else (no validation
// library, no worker process, no request log). POST /insert {rows}: one transaction per batch,
// answering the inserted rows; POST /query {params: [id]}: the point query. Prints {"port":N}.
import Database from '../../dist/src/db/sqlite.js';
import { createServer } from 'node:http';
import { bearer, send } from './respond.mjs';
import { createTableSql } from '../../dist/src/resources/data/ddl.js';
import { uuidv7 } from '../../dist/src/lib/ids.js';

const { db: file, key, table } = JSON.parse(process.argv[2]);
const db = new Database(file);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.pragma('foreign_keys = ON');
for (const sql of createTableSql('items', table)) db.exec(sql);
const cols = Object.keys(table.columns);
const insert = db.prepare(`INSERT INTO items (_id, _created_at, _updated_at, ${cols.join(', ')}) VALUES (?, ?, ?${', ?'.repeat(cols.length)}) RETURNING *`);
const insertMany = db.transaction((rows) => {
  const now = new Date().toISOString();
  return rows.map((r) => {
    const row = insert.get(uuidv7(), now, now, ...cols.map((c) => (typeof r[c] === 'boolean' ? (r[c] ? 1 : 0) : r[c])));
    for (const c of cols) if (table.columns[c].type === 'boolean') row[c] = row[c] === 1;
    return row;
  });
});
const point = db.prepare('SELECT * FROM items WHERE _id = ?');

const authorized = bearer(key);

const server = createServer((req, res) => {
  if (!authorized(req)) return send(res, 401, { ok: false, code: 'unauthorized' });
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    const b = JSON.parse(body);
    if (req.url === '/insert') {
      const rows = insertMany(b.rows);
      return send(res, 200, { ok: true, data: [{ rows, total: rows.length, nextOffset: null }] });
    }
    const rows = point.all(...b.params);
    return send(res, 200, { ok: true, data: { rows, rowCount: rows.length, truncated: false } });
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n'));
