import { DataFile } from '../dist/src/resources/data/engine.js';
import { mkdtempSync } from 'node:fs'; import { join } from 'node:path'; import { tmpdir } from 'node:os';
const dir = mkdtempSync(join(tmpdir(), 'g-'));
const f = new DataFile(join(dir, 'a.sqlite'), { tables: { orders: { columns: { item: { type: 'text' }, qty: { type: 'integer', unique: true } } } } });
const all = { read: '*', write: '*' };
const run = (sql, params = [], mode = 'write') => { try { return JSON.stringify(f.query({ sql, params, mode, maxRows: 10, grants: all }).answer); } catch (e) { return `${e.code}: ${e.message}`; } };
console.log(run("INSERT INTO orders (item, qty) VALUES ('a', 1)"));
for (const s of [
 "UPDATE orders AS \u00a0WHERE SET item = \u00a0WHERE.item, _version = 99, _id = 'not-a-uuid', _created_at = 'garbage'",
 "UPDATE orders SET '_id' = 'x'", "UPDATE orders SET orders._id = 'x'", "UPDATE orders AS o SET o._version = 3",
 "UPDATE orders SET [_ID] = 'x'", "INSERT INTO orders ('_id', item, qty) VALUES ('x','b',2)",
 "INSERT INTO orders AS \u3000x (item, qty) VALUES ('a', 1) ON CONFLICT (qty) DO UPDATE SET item = \u3000x.item, _version = 99",
 "UPDATE orders SET rowid = 9", "UPDATE orders SET item = 'z' WHERE rowid = 1 RETURNING rowid, _id",
 "INSERT INTO orders SELECT * FROM orders", "INSERT INTO orders (rowid, item, qty) VALUES (100, 'x', 5)",
 "INSERT INTO orders VALUES ('a', 1)", "UPDATE orders SET item = 'q'\u0000, _version = 5",
]) console.log(JSON.stringify(s), '->', run(s));
console.log(run("SELECT rowid, _id, _version, item FROM orders", [], 'read'));
