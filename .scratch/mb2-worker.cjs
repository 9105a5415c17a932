const { workerData } = require('node:worker_threads');
const Libpq = require('/tmp/lpq/node_modules/libpq');
const pg = require('/work/main/node_modules/pg');
const { sab, CAP, url } = workerData;
const ctl = new Int32Array(sab, 0, 4);
const reqBuf = Buffer.from(sab, 16, CAP), repBuf = Buffer.from(sab, 16 + CAP, CAP);
const l = new Libpq(); l.connectSync(url);
const names = new Map();
let last = 0;
for (;;) {
  Atomics.wait(ctl, 0, last);
  last = Atomics.load(ctl, 0);
  const req = JSON.parse(reqBuf.toString('utf8', 0, Atomics.load(ctl, 2)));
  let name = names.get(req.sql);
  if (!name) { name = 's' + (names.size + 1); l.prepare(name, req.sql, req.params.length); names.set(req.sql, name); }
  l.execPrepared(name, req.params);
  const nf = l.nfields(), nt = l.ntuples();
  const cols = [], parsers = [];
  for (let f = 0; f < nf; f++) { cols.push(l.fname(f)); const oid = l.ftype(f); parsers.push(oid === 20 ? Number : pg.types.getTypeParser(oid, 'text')); }
  const rows = [];
  for (let r = 0; r < nt; r++) { const row = {}; for (let f = 0; f < nf; f++) row[cols[f]] = l.getisnull(r, f) ? null : parsers[f](l.getvalue(r, f)); rows.push(row); }
  const n = repBuf.write(JSON.stringify({ rows, rowCount: nt }), 0, 'utf8');
  Atomics.store(ctl, 3, n);
  Atomics.store(ctl, 1, last); Atomics.notify(ctl, 1);
}
