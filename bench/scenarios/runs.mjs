// Runs (issue 31 item 11): svc running agents, each measure in a project of its own served by a
// real `svc serve`, with clients and load in their own processes. docs/performance.md, "Runs".
//
// 1. Dispatch latency, every round: DISPATCH tasks assigned to an agent with the `command` runtime
//    (bench/lib/runs-quick-agent.sh: reads the prompt, writes a file, prints a result line), made
//    one at a time by bench/lib/runs-dispatch-client.mjs, each once the previous one's process was
//    spawned (no task waits for a slot); latency = the run's startedAt (stamped right after the
//    spawn) minus the time the POST /api/v1/tasks answer arrived (Date.now() on both sides, one
//    machine). The events split it: task:created → run:queued → task:claimed → run:started (the
//    worktree and the spawn). The same in a project that is not a git repository (runs in place,
//    one at a time: each task once the previous run finished) is the runner's path without git;
//    GIT_FLOOR `git worktree add` in a row from the bench say what git costs on the machine then.
//    Baseline: bench/lib/runs-spawn-baseline.mjs, plain node:http + better-sqlite3 answering the
//    POST, then one `git worktree add` and child_process.spawn of the same program (the floor of
//    a worktree per task). The anchors poll for work every 3 to 30 s.
// 2. Then one heavier measure a round, in turn (each once in the default 3 rounds; its row's
//    median is that one figure):
//    a. BURST short runs at once (the same agent, maxConcurrency 16; the runner's default slots):
//       runs per second (first task created → last run finished), the daemon's CPU per run and its
//       reaped children's (git, the agent), and what is left after: processes, worktrees, run dirs.
//    b. CLAUDES concurrent runs of the real Claude Code (the pinned one, scripts/agent-clis.mjs)
//       against a scripted Anthropic server (bench/lib/runs-scripted-anthropic.mjs: write a file,
//       read one, a task note over svc's MCP, a summary), with GET /api/v1/tasks/{id} at 200 req/s
//       from a load process beside, on svc and on the plain tasks server (bench/baselines/) at the
//       same time, and both with no run; the daemon's peak RSS and the agents' (every 50 ms).
//    c. One run printing LINES_PER_SEC JSON text lines a second for LINE_SECONDS s
//       (bench/lib/runs-chatty-agent.mjs), SUBSCRIBERS SSE streams with filter run:
//       (bench/lib/runs-log-subscribers.mjs): line printed → received and event → received, every
//       item to every subscriber, and how much the state grew.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import Database from '../../dist/src/db/sqlite.js';
import { agentCliPath } from '../../scripts/agent-clis.mjs';

const DISPATCH = 70;
const GIT_FLOOR = 20;
const BURST = 200;
const CLAUDES = 8;
const LINES_PER_SEC = 2000;
const LINE_SECONDS = 4;
const SUBSCRIBERS = 20;
const PROBE = { connections: 2, overallRate: 200 };
const CLAUDE_LOAD_SECONDS = 8;

const lib = (f) => fileURLToPath(new URL(`../lib/${f}`, import.meta.url));
const QUICK_AGENT = lib('runs-quick-agent.sh');
const CHATTY_AGENT = lib('runs-chatty-agent.mjs');
const CLIENT = lib('runs-dispatch-client.mjs');
const SUBSCRIBER = lib('runs-log-subscribers.mjs');
const LIVE = "('queued', 'starting', 'running', 'paused')";

export default {
  name: 'runs',
  order: 80,
  title: `runs: dispatch latency (${DISPATCH} tasks a round, command runtime); ${BURST} short runs; ${CLAUDES} Claude Code runs; a run printing ${LINES_PER_SEC.toLocaleString('en-US')} lines/s to ${SUBSCRIBERS} subscribers`,
  async setup(h) {
    const root = gitProject(h);
    const svc = await h.startSvc(root);
    await post(svc, '/api/v1/agents', { name: 'bench', maxConcurrency: 16, runtime: { kind: 'command', command: QUICK_AGENT } });
    // The same in a project that is not a git repository: the runner's own path, without git.
    const plainRoot = h.makeProject({});
    const plain = await h.startSvc(plainRoot);
    await post(plain, '/api/v1/agents', { name: 'bench', runtime: { kind: 'command', command: QUICK_AGENT } });
    const scratch = gitProject(h);
    const baseRoot = gitProject(h);
    const base = await h.startBaseline('../lib/runs-spawn-baseline.mjs', { root: baseRoot, db: join(baseRoot, '.svc', 'baseline.sqlite'), key: svc.key, agent: QUICK_AGENT });
    let round = 0;
    let batch = 0;
    const heavy = [() => burst(h), () => claudes(h), () => chatty(h)];
    return {
      warmup: async () => {
        await dispatchSvc(h, svc, 10, `warm-up`);
        await dispatchSvc(h, plain, 10, `warm-up`, true);
        await dispatchBaseline(h, base, svc.key, 10);
      },
      svc: async () => {
        const d = await dispatchSvc(h, svc, DISPATCH, `round ${++batch}`);
        const p = await dispatchSvc(h, plain, DISPATCH, `round ${batch}`, true);
        const g = await gitFloor(h, scratch, batch);
        const more = await heavy[round++ % heavy.length]();
        return { ...d, noGitP50: p.dispatchP50, noGitP99: p.dispatchP99, noGitSamples: p.dispatchSamples, ...g, ...more, loadAverage: loadavg()[0] };
      },
      baseline: () => dispatchBaseline(h, base, svc.key, DISPATCH),
      close: async () => {
        await svc.stop();
        await plain.stop();
        await base.stop();
      },
    };
  },
  targets: [
    { metric: 'dispatchP99', label: 'dispatch p99, POST answered → process spawned', unit: 'ms', op: '<', value: 50 },
    { metric: 'dispatchP50', label: 'dispatch p50', unit: 'ms' },
    { metric: 'createdQueuedP99', label: '… of it task:created → run:queued, p99', unit: 'ms' },
    { metric: 'queuedClaimedP99', label: '… run:queued → task:claimed, p99', unit: 'ms' },
    { metric: 'claimedStartedP50', label: '… task:claimed → run:started (worktree, spawn), p50', unit: 'ms' },
    { metric: 'claimedStartedP99', label: '… task:claimed → run:started, p99', unit: 'ms' },
    { metric: 'noGitP50', label: 'dispatch p50, project not a git repository (no worktree)', unit: 'ms' },
    { metric: 'noGitP99', label: 'dispatch p99, same', unit: 'ms' },
    { metric: 'gitWorktreeP50', label: 'this machine meanwhile: one `git worktree add`, p50', unit: 'ms' },
    { metric: 'gitWorktreeP99', label: 'this machine meanwhile: one `git worktree add`, p99', unit: 'ms' },
    { metric: 'burstRunsPerSec', label: `${BURST} short runs at once: runs per second`, unit: '/s' },
    { metric: 'burstCpuMsPerRun', label: "… daemon CPU per run (its task's POST included)", unit: 'ms' },
    { metric: 'burstChildCpuMsPerRun', label: '… its children (git, the agent) CPU per run', unit: 'ms' },
    { metric: 'burstStartP99', label: '… task created → run started, p99 (queued behind the slots)', unit: 'ms' },
    { metric: 'burstMostAlive', label: '… most runs running at once (started → finished)' },
    { metric: 'burstRunSecondsP50', label: '… a run, spawned → finished, p50', unit: 's' },
    { metric: 'burstFailed', label: '… runs not succeeded', op: '==', value: 0 },
    { metric: 'leakedProcesses', label: '… processes left (daemon children, agent processes)', op: '==', value: 0 },
    { metric: 'leakedWorktrees', label: '… worktrees beyond one per task (spares beyond the slots), prunable or locked; run dirs left', op: '==', value: 0 },
    { metric: 'claudeGetP99', label: `${CLAUDES} Claude Code runs: task GET p99 beside (200 req/s)`, unit: 'ms', op: '<', value: 20 },
    { metric: 'claudeGetP99Raw', label: '… the plain tasks server, probed alike at the same time', unit: 'ms' },
    { metric: 'claudeGetP99Idle', label: '… svc, same GET load, no run', unit: 'ms' },
    { metric: 'claudeGetP99RawIdle', label: '… the plain tasks server, no run', unit: 'ms' },
    { metric: 'claudeRss', label: '… daemon peak RSS', unit: 'MiB' },
    { metric: 'claudeAgentsRss', label: `… the ${CLAUDES} Claude Code processes' peak RSS, together`, unit: 'MiB' },
    { metric: 'claudeSeconds', label: `… all ${CLAUDES} runs, first POST → last finished`, unit: 's' },
    { metric: 'claudeCpuMsPerRun', label: '… daemon CPU per run', unit: 'ms' },
    { metric: 'claudeFailed', label: '… runs not succeeded, Claude Code processes left', op: '==', value: 0 },
    { metric: 'logLineP99', label: `${LINES_PER_SEC.toLocaleString('en-US')} lines/s: line printed → SSE received, p99 (${SUBSCRIBERS} subscribers)`, unit: 'ms' },
    { metric: 'logLineP50', label: '… line printed → received, p50', unit: 'ms' },
    { metric: 'logEventP99', label: '… run:activity emitted → received, p99', unit: 'ms' },
    { metric: 'logLost', label: '… text items not delivered (all subscribers)', op: '==', value: 0 },
    { metric: 'logStateKiBPer1000', label: '… state growth per 1,000 lines (log rows and events)', unit: 'KiB' },
    { metric: 'logRowsKiBPer1000', label: "… in it, the run_log items' JSON", unit: 'KiB' },
    { metric: 'logEventsKiBPer1000', label: "… in it, the run:activity events' data", unit: 'KiB' },
    { metric: 'logCpuMsPer1000', label: '… daemon CPU per 1,000 lines', unit: 'ms' },
    { metric: 'logEventsPerSec', label: '… run:activity events per second', unit: '/s' },
    { metric: 'loadAverage', label: "the machine's 1-minute load average at the round's end (2 cores)" },
  ],
};

// --- projects and the API

const git = (cwd, ...args) => execFileSync('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@svc.invalid', ...args], { cwd, encoding: 'utf8' });

/** A temp svc project that is a git repository with one commit (so runs get worktrees). */
function gitProject(h, config = {}, root = h.makeProject(config)) {
  writeFileSync(join(root, 'README.md'), '# bench project\n');
  writeFileSync(join(root, '.gitignore'), '.svc/\n.user-config/\n');
  git(root, 'init', '-q', '-b', 'main');
  git(root, 'add', '-A');
  git(root, 'commit', '-q', '-m', 'initial');
  return root;
}

async function post(svc, path, body) {
  const res = await fetch(`${svc.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${svc.key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`POST ${path} answered ${res.status}: ${JSON.stringify(json)}`);
  return json.data;
}

async function get(svc, path) {
  const res = await fetch(`${svc.url}${path}`, { headers: { authorization: `Bearer ${svc.key}` } });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`GET ${path} answered ${res.status}: ${JSON.stringify(json)}`);
  return json.data;
}

const stateDb = (root) => new Database(join(root, '.svc', 'state.sqlite'), { readonly: true });

/** Waits until the project has `n` runs and none is live; returns its runs. */
async function settled(h, root, n, timeoutMs) {
  const db = stateDb(root);
  try {
    const t0 = Date.now();
    for (;;) {
      const { all, live } = db.prepare(`SELECT count(*) AS "all", sum(status IN ${LIVE}) AS live FROM runs`).get();
      if (all >= n && !live) return db.prepare('SELECT * FROM runs').all();
      if (Date.now() - t0 > timeoutMs) throw new Error(`${all} of ${n} runs, ${live} still live after ${timeoutMs} ms`);
      await h.sleep(50);
    }
  } finally {
    db.close();
  }
}

const ms = (iso) => Date.parse(iso);
const pct = (h, values, p) =>
  h.percentile(
    [...values].sort((a, b) => a - b),
    p,
  );

// --- 1. dispatch

async function dispatchSvc(h, svc, count, prefix, untilFinished = false) {
  const db = stateDb(svc.root);
  const fromEvent = db.prepare('SELECT coalesce(max(id), 0) AS id FROM events').get().id;
  db.close();
  const rows = await h.runJsonChild(CLIENT, { url: svc.url, key: svc.key, agent: 'bench', count, side: 'svc', prefix, untilFinished });
  const runs = await settled(h, svc.root, 0, 60_000);
  const byTask = new Map(runs.map((r) => [r.task_id, r]));
  const times = new Map();
  const state = stateDb(svc.root);
  for (const e of state
    .prepare("SELECT name, created_at, json_extract(data, '$.taskId') AS taskId FROM events WHERE id > ? AND name IN ('task:created', 'run:queued', 'task:claimed', 'run:started')")
    .iterate(fromEvent)) {
    if (!times.has(e.taskId)) times.set(e.taskId, {});
    times.get(e.taskId)[e.name] ??= ms(e.created_at);
  }
  state.close();
  const lat = [];
  const seg = { createdQueued: [], queuedClaimed: [], claimedStarted: [] };
  for (const r of rows) {
    const run = byTask.get(r.taskId);
    if (!run?.started_at) throw new Error(`task ${r.taskId}: its run never started (${run?.status ?? 'no run'}: ${run?.error ?? ''})`);
    lat.push(ms(run.started_at) - r.answeredAt);
    const t = times.get(r.taskId) ?? {};
    seg.createdQueued.push(t['run:queued'] - t['task:created']);
    seg.queuedClaimed.push(t['task:claimed'] - t['run:queued']);
    seg.claimedStarted.push(t['run:started'] - t['task:claimed']);
  }
  return {
    dispatchP99: pct(h, lat, 0.99),
    dispatchP50: pct(h, lat, 0.5),
    dispatchMax: Math.max(...lat),
    createdQueuedP99: pct(h, seg.createdQueued, 0.99),
    queuedClaimedP99: pct(h, seg.queuedClaimed, 0.99),
    claimedStartedP50: pct(h, seg.claimedStarted, 0.5),
    claimedStartedP99: pct(h, seg.claimedStarted, 0.99),
    // Every task's figures, for --json (a pooled p99 over the rounds): [latency, created→queued, queued→claimed, claimed→started].
    dispatchSamples: lat.map((l, i) => [l, seg.createdQueued[i], seg.queuedClaimed[i], seg.claimedStarted[i]]),
  };
}

/** What one `git worktree add` (a new branch from HEAD) costs on this machine now: GIT_FLOOR in a row, from the bench's process. */
async function gitFloor(h, root, batch) {
  const took = [];
  for (let i = 0; i < GIT_FLOOR; i++) {
    const t0 = performance.now();
    await new Promise((resolve, reject) =>
      execFile('git', ['worktree', 'add', '--quiet', '--no-track', '-b', `floor/${batch}-${i}`, join(root, '.svc', 'worktrees', `floor-${batch}-${i}`), 'HEAD'], { cwd: root }, (err) =>
        err ? reject(err) : resolve(),
      ),
    );
    took.push(performance.now() - t0);
  }
  return { gitWorktreeP50: pct(h, took, 0.5), gitWorktreeP99: pct(h, took, 0.99) };
}

async function dispatchBaseline(h, base, key, count) {
  const rows = await h.runJsonChild(CLIENT, { url: base.url, key, agent: 'bench', count, side: 'baseline' });
  const lat = rows.map((r) => r.spawnedAt - r.answeredAt);
  const wt = rows.map((r) => r.worktreeMs);
  await h.sleep(200); // its last agent exits and commits
  return {
    dispatchP99: pct(h, lat, 0.99),
    dispatchP50: pct(h, lat, 0.5),
    dispatchMax: Math.max(...lat),
    worktreeP50: pct(h, wt, 0.5),
    worktreeP99: pct(h, wt, 0.99),
    dispatchSamples: lat.map((l, i) => [l, wt[i]]),
  };
}

// --- 2a. 200 short runs at once

/** The live children of a process (all its threads'). */
function childrenOf(pid) {
  const out = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
    if (text) out.push(...text.split(' ').map(Number));
  }
  return out;
}

/** The daemon's own children (its data workers, the spare one started a second after start-up), not its runs'. */
function ownChild(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('/resources/data/');
  } catch {
    return false;
  }
}

/** Processes whose command line names `program` and whose working directory is inside `root`. */
function processesOf(program, root) {
  const found = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8');
      if (cmd.includes(program) && readlinkSync(`/proc/${p}/cwd`).startsWith(root)) found.push(Number(p));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/**
 * What runs left behind in a project: worktrees beyond one per task, prunable or locked ones,
 * folders git does not know, run dirs. The runner's spare worktrees (.spare-…, made ahead for the
 * next runs, at most one per slot of the runner: src/resources/runs/spares.ts) are not leftovers:
 * counted apart, and required valid.
 */
function leftovers(root, tasks, slots) {
  const porcelain = git(root, 'worktree', 'list', '--porcelain')
    .split('\n\n')
    .filter((b) => b.trim());
  const all = porcelain.filter((b) => b.includes('/.svc/worktrees/'));
  const spares = all.filter((b) => b.includes('/.svc/worktrees/.spare-'));
  const entries = all.filter((b) => !spares.includes(b));
  const bad = all.filter((b) => /^(prunable|locked)/m.test(b)).length + Math.max(0, spares.length - slots);
  const wtDir = join(root, '.svc', 'worktrees');
  const folders = existsSync(wtDir) ? readdirSync(wtDir).filter((f) => f !== '.gitignore' && !f.startsWith('.spare-')).length : 0;
  const runsDir = join(root, '.svc', 'runs');
  const runDirs = existsSync(runsDir) ? readdirSync(runsDir).length : 0;
  return { entries: entries.length, spares: spares.length, folders, extra: Math.abs(entries.length - tasks) + Math.abs(folders - tasks) + bad + runDirs, bad, runDirs };
}

async function burst(h) {
  const root = gitProject(h);
  const svc = await h.startSvc(root);
  await post(svc, '/api/v1/agents', { name: 'bench', maxConcurrency: 16, runtime: { kind: 'command', command: QUICK_AGENT } });
  const own = new Set(childrenOf(svc.pid)); // the daemon's own (its data worker)
  const cpu0 = { own: h.cpuMs(svc.pid), children: h.reapedCpuMs(svc.pid) };
  const bodies = Array.from({ length: BURST }, (_, i) => JSON.stringify({ title: `burst ${i}`, assignTo: 'bench' }));
  const made = await h.load({
    url: svc.url,
    method: 'POST',
    path: '/api/v1/tasks',
    bodies,
    headers: { authorization: `Bearer ${svc.key}`, 'content-type': 'application/json' },
    connections: 4,
    amount: BURST,
  });
  if (made.non2xx || made.errors) throw new Error(`burst: ${made.non2xx} non-2xx, ${made.errors} errors`);
  const runs = await settled(h, root, BURST, 300_000);
  const cpu1 = { own: h.cpuMs(svc.pid), children: h.reapedCpuMs(svc.pid) };
  const db = stateDb(root);
  const created = new Map(
    db
      .prepare('SELECT id, created_at FROM tasks')
      .all()
      .map((t) => [t.id, ms(t.created_at)]),
  );
  db.close();
  const first = Math.min(...created.values());
  const last = Math.max(...runs.map((r) => ms(r.finished_at)));
  const starts = runs.map((r) => ms(r.started_at) - created.get(r.task_id));
  // The most runs running at one time (started → finished: the process, then its commit).
  const edges = runs
    .flatMap((r) => [
      [ms(r.started_at), 1],
      [ms(r.finished_at), -1],
    ])
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let alive = 0;
  let most = 0;
  for (const [, d] of edges) most = Math.max(most, (alive += d));
  // Whatever a run leaves behind has had its chance to go; the runner's own git work after the
  // runs (the spare worktrees made again) is over within seconds: what stays after 5 s is left.
  const quietBy = Date.now() + 5_000;
  const others = () => childrenOf(svc.pid).filter((p) => !own.has(p) && !ownChild(p));
  while (others().length && Date.now() < quietBy) await h.sleep(50);
  await h.sleep(200);
  const children = others();
  const agents = processesOf(QUICK_AGENT, root);
  const slots = (await get(svc, '/api/v1/runners'))[0].capacity;
  const left = leftovers(root, created.size, slots);
  console.log(
    `  ${BURST} runs: ${runs.filter((r) => r.status === 'succeeded').length} succeeded in ${((last - first) / 1000).toFixed(1)} s; after: daemon children [${children.join(' ')}], agent processes [${agents.join(' ')}], ${left.entries} worktrees (${left.folders} folders, ${left.bad} prunable/locked), ${left.spares} spares (slots ${slots}), ${left.runDirs} run dirs`,
  );
  await svc.stop();
  return {
    burstRunsPerSec: (runs.length / (last - first)) * 1000,
    burstCpuMsPerRun: (cpu1.own - cpu0.own) / runs.length,
    burstChildCpuMsPerRun: (cpu1.children - cpu0.children) / runs.length,
    burstStartP99: pct(h, starts, 0.99),
    burstMostAlive: most,
    burstRunSecondsP50: pct(
      h,
      runs.map((r) => (ms(r.finished_at) - ms(r.started_at)) / 1000),
      0.5,
    ),
    burstFailed: runs.length - runs.filter((r) => r.status === 'succeeded').length + (BURST - runs.length),
    leakedProcesses: children.length + agents.length,
    leakedWorktrees: left.extra,
  };
}

// --- 2b. Claude Code

/** RSS (MiB) of a process and all its descendants. */
function treeRss(h, pid) {
  let sum = 0;
  try {
    const own = h.rssMiB(pid);
    if (Number.isFinite(own)) sum += own; // a zombie has none
    for (const c of childrenOf(pid)) sum += treeRss(h, c);
  } catch {
    // gone meanwhile
  }
  return sum;
}

async function claudes(h) {
  const claude = agentCliPath('claude');
  if (!claude) {
    // Its rows stay empty (and "not met"); the other measures go on.
    console.log('  Claude Code measure skipped: the pinned Claude Code is not installed (node scripts/agent-clis.mjs)');
    return {};
  }
  const { root, ids } = await h.seededProject(1000);
  gitProject(h, {}, root);
  const api = await h.startBaseline('../lib/runs-scripted-anthropic.mjs', { delayMs: 20 });
  const svc = await h.startSvc(root);
  // The plain tasks server on a copy of the same tasks, probed alike: what the machine alone does to
  // a GET's p99 while 8 agents start and work on two cores.
  const raw = await h.startBaseline('tasks-server.mjs', { db: h.copyStateDb(root), key: svc.key });
  const config = join(root, '.user-config', 'claude');
  mkdirSync(config, { recursive: true });
  await post(svc, '/api/v1/agents', {
    name: 'claude',
    maxConcurrency: CLAUDES,
    runtime: {
      kind: 'claude',
      command: claude,
      permissionMode: 'acceptEdits',
      env: { ANTHROPIC_BASE_URL: api.url, ANTHROPIC_API_KEY: 'sk-bench-scripted', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', CLAUDE_CONFIG_DIR: config },
    },
  });
  const own = new Set(childrenOf(svc.pid)); // the daemon's own (its data worker)
  const probe = { headers: { authorization: `Bearer ${svc.key}` }, paths: ids.slice(0, 100).map((id) => `/api/v1/tasks/${id}`), ...PROBE };
  const both = (seconds) => Promise.all([h.load({ ...probe, url: svc.url, seconds }), h.load({ ...probe, url: raw.url, seconds })]);
  const [idle, rawIdle] = await both(3);
  const cpu0 = h.cpuMs(svc.pid);
  const t0 = Date.now();
  let peak = svc.rss();
  let agentsPeak = 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, svc.rss());
    agentsPeak = Math.max(
      agentsPeak,
      childrenOf(svc.pid)
        .filter((p) => !own.has(p))
        .reduce((s, c) => s + treeRss(h, c), 0),
    );
  }, 50);
  // The load starts with the runs and lasts about as long as they do on this machine (8 to 15 s).
  const beside = both(CLAUDE_LOAD_SECONDS);
  for (let i = 0; i < CLAUDES; i++) await post(svc, '/api/v1/tasks', { title: `note ${i}`, description: 'Write bench-note.md, then note it on the task.', assignTo: 'claude' });
  const [[under, rawUnder], runs] = await Promise.all([beside, settled(h, root, CLAUDES, 180_000)]);
  clearInterval(sampler);
  const seconds = (Math.max(...runs.map((r) => ms(r.finished_at))) - t0) / 1000;
  const failed = runs.filter((r) => r.status !== 'succeeded');
  for (const r of failed) console.log(`  claude run ${r.id}: ${r.status}: ${r.error}`);
  const stats = await (await fetch(`${api.url}/stats`)).json();
  const left = processesOf(claude, root).length;
  console.log(
    `  ${CLAUDES} Claude Code runs in ${seconds.toFixed(1)} s (GET load window ${CLAUDE_LOAD_SECONDS} s); scripted API: ${stats.requests} requests; GET p99 svc ${under.p99.toFixed(1)} ms, plain server ${rawUnder.p99.toFixed(1)} ms (idle ${idle.p99.toFixed(1)} / ${rawIdle.p99.toFixed(1)}); ${left} Claude Code processes left`,
  );
  for (const l of [idle, rawIdle, under, rawUnder]) if (l.non2xx || l.errors) throw new Error(`task GET load: ${l.non2xx} non-2xx, ${l.errors} errors`);
  const cpu = h.cpuMs(svc.pid) - cpu0;
  await svc.stop();
  await api.stop();
  await raw.stop();
  return {
    claudeGetP99: under.p99,
    claudeGetP99Raw: rawUnder.p99,
    claudeGetP99Idle: idle.p99,
    claudeGetP99RawIdle: rawIdle.p99,
    claudeRss: peak,
    claudeAgentsRss: agentsPeak,
    claudeSeconds: seconds,
    claudeCpuMsPerRun: cpu / CLAUDES,
    claudeFailed: failed.length + (CLAUDES - runs.length) + left,
  };
}

// --- 2c. 2,000 lines a second

/** Bytes the state database holds, WAL included (a reader sees the committed pages). */
function stateBytes(root) {
  const db = stateDb(root);
  const n = db.pragma('page_count', { simple: true }) * db.pragma('page_size', { simple: true });
  db.close();
  return n;
}

async function chatty(h) {
  const root = gitProject(h);
  const svc = await h.startSvc(root);
  await post(svc, '/api/v1/agents', { name: 'chatty', runtime: { kind: 'command', command: CHATTY_AGENT, env: { RUNS_LINES_PER_SEC: String(LINES_PER_SEC), RUNS_SECONDS: String(LINE_SECONDS) } } });
  const lines = LINES_PER_SEC * LINE_SECONDS;
  const db = stateDb(root);
  const afterId = db.prepare('SELECT coalesce(max(id), 0) AS id FROM events').get().id;
  db.close();
  const child = spawn(
    process.execPath,
    [SUBSCRIBER, JSON.stringify({ url: svc.url, key: svc.key, count: SUBSCRIBERS, filter: 'run:', db: join(root, '.svc', 'state.sqlite'), afterId, expectedItems: lines, deadlineMs: 60_000 })],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  h.onCleanup(() => child.kill('SIGKILL'));
  const out = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const first = await out.next();
  if (first.done || !JSON.parse(first.value).ready) throw new Error('subscribers did not connect');
  const bytes0 = stateBytes(root);
  const cpu0 = h.cpuMs(svc.pid);
  await post(svc, '/api/v1/tasks', { title: 'print a lot', assignTo: 'chatty' });
  const result = await out.next();
  if (result.done) throw new Error('subscribers printed no result');
  const r = JSON.parse(result.value);
  const [run] = await settled(h, root, 1, 60_000);
  const cpu = h.cpuMs(svc.pid) - cpu0;
  const grown = stateBytes(root) - bytes0;
  const state = stateDb(root);
  const logData = state.prepare('SELECT sum(length(data)) AS n FROM run_log').get().n;
  const eventData = state.prepare("SELECT sum(length(data)) AS n FROM events WHERE id > ? AND name = 'run:activity'").get(afterId).n;
  state.close();
  const secs = (ms(run.finished_at) - ms(run.started_at)) / 1000;
  console.log(
    `  chatty run ${run.status} (${run.summary}); ${run.log_count} log items, ${r.eventsPerStream} run:activity events a stream in ${secs.toFixed(1)} s; state +${(grown / 1024).toFixed(0)} KiB`,
  );
  await svc.stop();
  return {
    logLineP99: r.line.p99,
    logLineP50: r.line.p50,
    logEventP99: r.event.p99,
    logLost: r.lost + r.disorder + (run.status === 'succeeded' ? 0 : 1),
    logStateKiBPer1000: grown / 1024 / (lines / 1000),
    logRowsKiBPer1000: logData / 1024 / (lines / 1000),
    logEventsKiBPer1000: eventData / 1024 / (lines / 1000),
    logCpuMsPer1000: cpu / (lines / 1000),
    logEventsPerSec: r.eventsPerStream / secs,
  };
}
