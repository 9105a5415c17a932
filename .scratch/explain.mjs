import Database from 'better-sqlite3';
const db = new Database(':memory:');
db.exec('CREATE TABLE t(a)');
for (const s of ["ATTACH 'x.db' AS x", "ATTACH ':memory:' AS y", "DETACH x", "PRAGMA user_version", "PRAGMA user_version = 3", "PRAGMA journal_mode", "PRAGMA table_info(t)", "VACUUM", "BEGIN", "SAVEPOINT a", "CREATE TABLE u(a)", "REINDEX", "ANALYZE", "PRAGMA writable_schema=1", "PRAGMA foreign_keys=OFF", "PRAGMA query_only=0", "PRAGMA optimize", "SELECT * FROM pragma_table_info('t')"]) {
  try { const st = db.prepare(s); const prog = db.prepare('EXPLAIN ' + s).all(); console.log(s, '| readonly', st.readonly, '|', prog.map(o => o.opcode + (o.p4 ? `(${o.p4})` : '')).join(' ')); } catch (e) { console.log(s, 'ERR', e.message); }
}
