import Database from 'better-sqlite3';
const db = new Database(':memory:');
console.log(db.prepare('select sqlite_version() v').get());
db.exec(`CREATE TABLE orders (item TEXT, qty INTEGER UNIQUE,
 "_id" ANY GENERATED ALWAYS AS (NULL) VIRTUAL, "_version" ANY GENERATED ALWAYS AS (NULL) VIRTUAL,
 "_created_at" ANY GENERATED ALWAYS AS (NULL) VIRTUAL, "_updated_at" ANY GENERATED ALWAYS AS (NULL) VIRTUAL,
 "rowid" ANY GENERATED ALWAYS AS (NULL) VIRTUAL, "oid" ANY GENERATED ALWAYS AS (NULL) VIRTUAL, "_rowid_" ANY GENERATED ALWAYS AS (NULL) VIRTUAL)`);
db.exec(`CREATE UNIQUE INDEX x ON orders("_id")`);
const tries = [
 "UPDATE orders AS \u00a0WHERE SET item = \u00a0WHERE.item, _version = 99",
 "UPDATE orders SET item='a' WHERE rowid = 5 RETURNING rowid, _id",
 "UPDATE orders SET rowid = 5",
 "UPDATE orders SET [_ID] = 5",
 "UPDATE orders SET (item, \"_version\") = ('a', 2)",
 "INSERT INTO orders (item, _id) VALUES ('a','b')",
 "INSERT INTO orders (item) VALUES ('a') ON CONFLICT(qty) DO UPDATE SET _created_at='x'",
 "INSERT INTO orders (item) VALUES ('a') ON CONFLICT(_id) DO NOTHING",
 "INSERT INTO orders (item, oid) VALUES ('a',1)",
 "INSERT INTO orders VALUES ('a',1)",
 "INSERT INTO orders DEFAULT VALUES",
 "REPLACE INTO orders (item) VALUES ('a')",
 "INSERT INTO orders (item) SELECT item FROM orders WHERE _id = 'x'",
 "UPDATE orders SET item = o2.item FROM orders o2 WHERE o2._id = orders._id",
 "DELETE FROM orders WHERE rowid=1",
];
for (const t of tries) { try { db.prepare(t); console.log('OK  ', JSON.stringify(t)); } catch (e) { console.log('ERR ', JSON.stringify(t), '->', e.message); } }
