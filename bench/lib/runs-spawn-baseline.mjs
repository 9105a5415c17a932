// The runs bench's raw baseline for dispatch: the simplest correct program that turns a created task
// into an agent process in a git worktree of its own, with the same libraries: plain node:http and
// better-sqlite3 (the task row and its event in one transaction), the bearer key checked, then,
// once the answer is sent, one `git worktree add` (a new branch from HEAD) and child_process.spawn
// of the same agent program there, the prompt on stdin. When the agent exits its work is committed
// (`git add -A`, `git commit`), as svc does, so finished runs load the machine alike. No queue, no
// claim, no lease, no run record, no log, no events: what is left is the floor for the spawn path.
// GET /wait/<taskId> answers once that task's agent was spawned: {spawnedAt (epoch ms), worktreeMs}.
// Run as its own process (h.startBaseline); prints {"port":N} when listening.
import Database from '../../dist/src/db/sqlite.js';
import { execFile, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { uuidv7 } from '../../dist/src/lib/ids.js';
import { bearer, send, taskInput } from '../baselines/respond.mjs';

const { root, db: file, key, agent } = JSON.parse(process.argv[2]);
mkdirSync(dirname(file), { recursive: true });
const db = new Database(file);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec(
  'CREATE TABLE IF NOT EXISTS tasks (id TEXT PRIMARY KEY, title TEXT NOT NULL, assign_to TEXT, created_at TEXT NOT NULL); CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, data TEXT NOT NULL, created_at TEXT NOT NULL);',
);
const insertTask = db.prepare('INSERT INTO tasks (id, title, assign_to, created_at) VALUES (?, ?, ?, ?)');
const insertEvent = db.prepare("INSERT INTO events (name, data, created_at) VALUES ('task:created', ?, ?)");
const create = db.transaction((t) => {
  insertTask.run(t.id, t.title, t.assignTo, t.createdAt);
  insertEvent.run(JSON.stringify({ taskId: t.id, title: t.title, assignTo: t.assignTo }), t.createdAt);
});

const git = (cwd, args) =>
  new Promise((resolve, reject) => execFile('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@svc.invalid', ...args], { cwd }, (err, stdout) => (err ? reject(err) : resolve(stdout))));

/** taskId → {spawnedAt, worktreeMs}, and who waits for it. */
const spawned = new Map();
const waiting = new Map();

async function run(task) {
  const short = task.id.slice(-8);
  const dir = join(root, '.svc', 'worktrees', short);
  const t0 = performance.now();
  await git(root, ['worktree', 'add', '--quiet', '--no-track', '-b', `svc/bench/${short}`, dir, 'HEAD']);
  const worktreeMs = performance.now() - t0;
  const child = spawn(agent, [], { cwd: dir, stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, SVC_TASK_ID: task.id, SVC_RUN_ID: task.id } });
  const record = { spawnedAt: Date.now(), worktreeMs };
  child.stdin.end(`# Task: ${task.title}\n(task ${task.id})\n`);
  child.stdout.resume();
  child.stderr.resume();
  spawned.set(task.id, record);
  for (const res of waiting.get(task.id) ?? []) send(res, 200, record);
  waiting.delete(task.id);
  child.once('close', async () => {
    try {
      await git(dir, ['add', '-A']);
      await git(dir, ['commit', '--quiet', '--allow-empty', '-m', task.title]);
    } catch (err) {
      process.stderr.write(`baseline commit in ${dir}: ${err.message}\n`);
    }
  });
}

const authorized = bearer(key);
const server = createServer((req, res) => {
  if (!authorized(req)) return send(res, 401, { ok: false, error: { code: 'unauthorized' } });
  if (req.method === 'POST' && req.url === '/api/v1/tasks') {
    return taskInput(req, res, (b) => {
      const task = { id: uuidv7(), title: b.title, assignTo: typeof b.assignTo === 'string' ? b.assignTo : null, createdAt: new Date().toISOString() };
      create(task);
      send(res, 201, { ok: true, data: task });
      if (task.assignTo) setImmediate(() => run(task).catch((err) => process.stderr.write(`baseline run of ${task.id}: ${err.message}\n`)));
    });
  }
  if (req.method === 'GET' && req.url.startsWith('/wait/')) {
    const id = req.url.slice('/wait/'.length);
    if (spawned.has(id)) return send(res, 200, spawned.get(id));
    waiting.set(id, [...(waiting.get(id) ?? []), res]);
    return;
  }
  send(res, 404, { ok: false, error: { code: 'not_found' } });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n'));
