import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  branchName,
  commitAll,
  commitMessage,
  detectRepo,
  diffPatch,
  diffStat,
  ensureWorktree,
  parseNumstat,
  removeWorktree,
  staleWorktrees,
  taskShortId,
  worktreeDir,
} from '../../src/resources/runs/workspace.js';
import { writeWhole } from '../../src/lib/files.js';
import { DispatchGate } from '../../src/resources/runs/dispatch-gate.js';
import { RefFiles } from '../../src/resources/runs/refs.js';
import { SparePool, type SparePoolOptions } from '../../src/resources/runs/spares.js';

// Worktrees of real git repositories in temp folders (git 2.39 here). The project's own working
// tree, index and HEAD are compared before and after: svc must not touch them.

const tmp = mkdtempSync(join(tmpdir(), 'svc-workspace-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const ID = { name: 'Test', email: 'test@example.com' };
const g = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', `user.name=${ID.name}`, '-c', `user.email=${ID.email}`, ...args], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

let n = 0;
/** A repository with two commits and, as a person's project often is, uncommitted work of all kinds. */
function makeRepo(): string {
  const root = join(tmp, `repo-${++n}`);
  mkdirSync(root);
  g(root, 'init', '-q', '-b', 'main');
  writeFileSync(join(root, '.gitignore'), '*.log\n');
  writeFileSync(join(root, 'a.txt'), 'one\ntwo\nthree\n');
  mkdirSync(join(root, 'sub'));
  writeFileSync(join(root, 'sub', 'b.txt'), 'b\n');
  g(root, 'add', '.');
  g(root, 'commit', '-qm', 'first');
  writeFileSync(join(root, 'a.txt'), 'one\ntwo\nthree\nfour\n');
  g(root, 'commit', '-qam', 'second');
  // The person's own work in progress: staged, modified, untracked.
  writeFileSync(join(root, 'sub', 'b.txt'), 'b staged\n');
  g(root, 'add', 'sub/b.txt');
  writeFileSync(join(root, 'a.txt'), 'mine, not committed\n');
  writeFileSync(join(root, 'untracked.txt'), 'u\n');
  return root;
}

/** What the project's own checkout looks like: status, HEAD, index and the files it holds. */
function snapshot(root: string) {
  return {
    status: g(root, 'status', '--porcelain=v1', '--untracked-files=all'),
    head: g(root, 'rev-parse', 'HEAD'),
    branch: g(root, 'symbolic-ref', 'HEAD'),
    staged: g(root, 'diff', '--cached'),
    a: readFileSync(join(root, 'a.txt'), 'utf8'),
  };
}

const TASK = (i: number) => `0190f3c2-7a1b-7c3d-8e4f-5a6b7c8d${String(i).padStart(4, '0')}`;

function opts(root: string, i: number, agent = 'coder', extra: { fromBranch?: string } = {}) {
  return { root, dir: worktreeDir(root, TASK(i)), branch: branchName(agent, TASK(i)), baseRef: 'HEAD', ...extra };
}

describe('names', () => {
  it('the short id is the last 8 characters, as the CLI prints ids', () => {
    expect(taskShortId(TASK(7))).toBe('7c8d0007');
    expect(taskShortId(TASK(7))).toBe(TASK(7).slice(-8));
  });

  it('branch names are valid git refs whatever the agent name holds', () => {
    const names = ['coder', 'Bob_1-2.3', 'a..b', 'x.lock', 'X.LOCK', 'end.', 'a...b.lock.', '9', 'a.-b', 'v1.0..lock'];
    for (const agent of names) {
      const branch = branchName(agent, TASK(1));
      expect(branch.startsWith('svc/') && branch.endsWith('/' + TASK(1).slice(-8)), branch).toBe(true);
      expect(() => execFileSync('git', ['check-ref-format', `refs/heads/${branch}`]), `${agent} → ${branch}`).not.toThrow();
    }
    expect(branchName('coder', TASK(1))).toBe(`svc/coder/${TASK(1).slice(-8)}`);
  });

  it('a commit message ends with its trailers, each on one line', () => {
    expect(commitMessage('  Fix it\n\nBecause.\n', { 'Svc-Task': 't1', 'Svc-Run': 'r\n1' })).toBe('Fix it\n\nBecause.\n\nSvc-Task: t1\nSvc-Run: r 1\n');
  });

  it('numstat: text, binary and renamed files', () => {
    expect(parseNumstat('3\t1\ta.txt\0-\t-\tbin.dat\0' + '0\t0\t\0old name\0new name\0')).toEqual({ files: 3, added: 3, removed: 1 });
    expect(parseNumstat('')).toEqual({ files: 0, added: 0, removed: 0 });
  });
});

describe('detectRepo', () => {
  it('a repository: its top, the project root inside it, the commit and branch checked out', async () => {
    const root = makeRepo();
    expect(await detectRepo(root)).toEqual({ kind: 'git', toplevel: root, prefix: '', head: g(root, 'rev-parse', 'HEAD'), branch: 'main' });
    expect(await detectRepo(join(root, 'sub'))).toMatchObject({ kind: 'git', toplevel: root, prefix: 'sub/' });
  });

  it('a folder that is no repository says so; a repository without commits has no head', async () => {
    const plain = join(tmp, 'plain');
    mkdirSync(plain);
    const none = await detectRepo(plain);
    expect(none).toMatchObject({ kind: 'none', reason: expect.stringContaining('not a git repository') });
    await expect(ensureWorktree({ root: plain, dir: worktreeDir(plain, TASK(1)), branch: 'svc/a/b', baseRef: 'HEAD' })).rejects.toThrow(/not a git repository/);

    const empty = join(tmp, 'empty');
    mkdirSync(empty);
    g(empty, 'init', '-q', '-b', 'main');
    expect(await detectRepo(empty)).toEqual({ kind: 'git', toplevel: empty, prefix: '', head: null, branch: 'main' });
    await expect(ensureWorktree(opts(empty, 1))).rejects.toThrow(/HEAD is not a commit/);
  });
});

/** The runner's pool of spare worktrees, its turns given at once (no dispatch under way), up to `max`. */
async function pool(root: string, max = 16, errors: unknown[] = [], more: Partial<SparePoolOptions> = {}): Promise<SparePool> {
  const p = new SparePool({ root, start: () => 'HEAD', max: () => max, turn: async () => () => {}, quiet: async () => {}, onError: (e) => errors.push(e), ...more });
  await p.open();
  await filled(p, root, more.start?.());
  return p;
}

/** Waits until the pool holds its target (its refill runs in the background). */
async function filled(p: SparePool, root: string, start = 'HEAD'): Promise<void> {
  const commit = g(root, 'rev-parse', `${start}^{commit}`);
  for (let i = 0; i < 500 && p.size < p.target(); i++) await (p.pending(commit) ?? new Promise((r) => setImmediate(r)));
  expect(p.size).toBe(p.target());
}

/** `git fsck` of the repository: exits 0, and says nothing of the worktrees (an entry git refuses, a HEAD it cannot read). */
function fsck(root: string): void {
  expect(g(root, 'fsck', '--no-progress', '--no-dangling')).toBe('');
}

/** The name of the repository's entry for the worktree at `dir` (.git/worktrees/<name>). */
const entryOf = (dir: string) => readFileSync(join(dir, '.git'), 'utf8').trim().split('/').pop()!;

const spareDirs = (root: string) =>
  g(root, 'worktree', 'list', '--porcelain')
    .split('\n')
    .filter((l) => l.startsWith('worktree ') && l.includes('/.spare-'))
    .map((l) => l.slice('worktree '.length));

describe('spare worktrees', () => {
  it('a new worktree is a ready spare, on its own branch the moment ensureWorktree resolves; the project checkout untouched', async () => {
    const root = makeRepo();
    const before = snapshot(root);
    const p = await pool(root);
    expect(spareDirs(root)).toHaveLength(2);
    // The spares git lists are valid worktrees: not prunable, not locked, clean, detached at HEAD;
    // their entries are named as git names them (`git fsck` refuses a name with a leading dot).
    expect(g(root, 'worktree', 'list', '--porcelain')).not.toMatch(/^(prunable|locked)/m);
    for (const d of spareDirs(root)) {
      expect(g(d, 'status', '--porcelain', '--untracked-files=all')).toBe('');
      expect(g(d, 'rev-parse', 'HEAD')).toBe(before.head);
      expect(entryOf(d)).toMatch(/^spare-[0-9a-f-]{36}$/);
      expect(g(root, 'rev-parse', `worktrees/${entryOf(d)}/HEAD`)).toBe(before.head);
    }
    fsck(root);
    const w = await ensureWorktree({ ...opts(root, 4), spares: p });
    expect(w).toEqual({ path: worktreeDir(root, TASK(4)), branch: branchName('coder', TASK(4)), baseCommit: before.head, cwd: worktreeDir(root, TASK(4)), created: true });
    // No later step makes the branch: the process spawned now runs on it.
    expect(g(w.path, 'symbolic-ref', 'HEAD')).toBe(`refs/heads/${branchName('coder', TASK(4))}`);
    expect(g(w.path, 'rev-parse', 'HEAD')).toBe(before.head);
    expect(g(root, 'rev-parse', branchName('coder', TASK(4)))).toBe(before.head);
    expect(g(w.path, 'status', '--porcelain', '--untracked-files=all')).toBe('');
    expect(readFileSync(join(w.path, 'a.txt'), 'utf8')).toBe('one\ntwo\nthree\nfour\n');
    expect(g(root, 'worktree', 'list', '--porcelain')).toContain(`worktree ${w.path}\nHEAD ${before.head}\nbranch refs/heads/${branchName('coder', TASK(4))}`);
    // git knows the worktree where it is now: a second ensure reuses it; a commit lands on the branch.
    expect(await ensureWorktree({ ...opts(root, 4), spares: p })).toMatchObject({ path: w.path, created: false, baseCommit: w.baseCommit });
    writeFileSync(join(w.path, 'new.txt'), 'x\n');
    expect((await commitAll({ path: w.path, author: ID, message: 'm', trailers: {} })).commit).toMatch(/^[0-9a-f]{40}$/);
    expect(g(root, 'log', '-1', '--format=%s', branchName('coder', TASK(4)))).toBe('m');
    expect(g(root, 'rev-parse', `worktrees/${entryOf(w.path)}/HEAD`)).toBe(g(w.path, 'rev-parse', 'HEAD'));
    fsck(root);
    // The spare taken is replaced; the spares stay out of the cleanup's list and the project's status.
    await filled(p, root);
    expect(spareDirs(root)).toHaveLength(2);
    expect(await staleWorktrees({ root, olderThan: Date.now() + 60_000, isDone: () => true })).toEqual([expect.objectContaining({ shortId: TASK(4).slice(-8) })]);
    expect(snapshot(root)).toEqual(before);
    await p.close();
  });

  it("from another commit (a dependency's branch) a spare is moved and switched by git", async () => {
    const root = makeRepo();
    const before = snapshot(root);
    const p = await pool(root);
    const spares = spareDirs(root);
    g(root, 'branch', 'older', 'HEAD~1');
    const w = await ensureWorktree({ ...opts(root, 1, 'coder', { fromBranch: 'older' }), spares: p });
    expect(w).toMatchObject({ created: true, baseCommit: g(root, 'rev-parse', 'older'), branch: branchName('coder', TASK(1)) });
    expect(spares.filter((d) => existsSync(d))).toHaveLength(1);
    expect(g(w.path, 'symbolic-ref', 'HEAD')).toBe(`refs/heads/${branchName('coder', TASK(1))}`);
    expect(readFileSync(join(w.path, 'a.txt'), 'utf8')).toBe('one\ntwo\nthree\n');
    expect(g(w.path, 'status', '--porcelain')).toBe('');
    expect(snapshot(root)).toEqual(before);
    await p.close();
  });

  it('a branch that exists, or a ref in its way, leaves the spares alone: git says what it says', async () => {
    const root = makeRepo();
    const p = await pool(root);
    // The task's branch exists (its worktree was removed after review): git checks it out.
    g(root, 'branch', branchName('coder', TASK(1)), 'HEAD~1');
    const w = await ensureWorktree({ ...opts(root, 1), spares: p });
    expect(g(w.path, 'rev-parse', 'HEAD')).toBe(g(root, 'rev-parse', 'HEAD~1'));
    expect(p.size).toBe(2);
    // A branch `svc/coder` (packed) leaves no room for `svc/coder/<id>`: git refuses, as it would anyway.
    const other = makeRepo();
    g(other, 'branch', 'svc/coder');
    g(other, 'pack-refs', '--all');
    const q = await pool(other);
    await expect(ensureWorktree({ ...opts(other, 2), spares: q })).rejects.toThrow(/git/);
    await filled(q, other);
    await p.close();
    await q.close();
  });

  it('the pool grows while runs come faster than spares are made, up to the slots, and back at the cleanup; the queue raises it too', async () => {
    const root = makeRepo();
    const p = await pool(root, 6);
    expect(p.target()).toBe(2);
    const head = g(root, 'rev-parse', 'HEAD');
    // Taken dry: the target doubles (4), then again (6: the slots). (Taken here and not used: removed.)
    const taken = [p.take(head), p.take(head)];
    for (const t of taken) g(root, 'worktree', 'remove', '--force', t!.dir);
    expect(p.target()).toBe(4);
    expect(p.take(head)).toBeNull();
    expect(p.target()).toBe(6);
    await filled(p, root);
    expect(spareDirs(root)).toHaveLength(6);
    // An hour that ran dry keeps it; the next one that did not takes it back to two, extras removed.
    await p.shrink();
    expect(p.target()).toBe(6);
    await p.shrink();
    expect(p.target()).toBe(2);
    expect(spareDirs(root)).toHaveLength(2);
    // Runs waiting in the queue to start: as many spares, up to the slots.
    p.expect(5);
    expect(p.target()).toBe(5);
    p.expect(50);
    expect(p.target()).toBe(6);
    await filled(p, root);
    expect(spareDirs(root)).toHaveLength(6);
    await p.close();
  });

  it('HEAD moved: the spares at the old commit are replaced; a restart takes in the valid spares left and clears the broken ones', async () => {
    const root = makeRepo();
    const p = await pool(root);
    const old = spareDirs(root);
    g(root, 'commit', '-qm', 'third', '--allow-empty');
    p.refill();
    await filled(p, root);
    // Replaced, not run dry: the pool stays at two.
    expect(p.target()).toBe(2);
    // Their removal is git's (a real process): close() waits for it.
    await p.close();
    expect(old.filter((d) => existsSync(d))).toEqual([]);
    const now = spareDirs(root);
    expect(now).toHaveLength(2);
    for (const d of now) expect(g(d, 'rev-parse', 'HEAD')).toBe(g(root, 'rev-parse', 'HEAD'));
    // The next daemon: one spare broken by a crash, one whole.
    rmSync(join(now[0]!, '.git'));
    const q = await pool(root);
    expect(existsSync(now[0]!)).toBe(false);
    expect(spareDirs(root)).toContain(now[1]);
    expect(spareDirs(root)).toHaveLength(2);
    const w = await ensureWorktree({ ...opts(root, 3), spares: q });
    expect(g(w.path, 'symbolic-ref', '--short', 'HEAD')).toBe(w.branch);
    await q.close();
  });

  it('a spare a crash interrupted (files half checked out, no index; or locked while made) is never taken in: the agent commits only its work', async () => {
    const root = makeRepo();
    for (let i = 0; i < 20; i++) writeFileSync(join(root, `f${i}.txt`), `file ${i}\n`);
    g(root, 'add', 'f*.txt');
    g(root, 'commit', '-qm', 'twenty files');
    const p = await pool(root, 4);
    await p.close();
    const [halfReset, locked] = spareDirs(root);
    // What SIGKILL during the spare's `git reset --hard` leaves: half the files, no index.
    rmSync(join(root, '.git', 'worktrees', entryOf(halfReset!), 'index'));
    for (let i = 10; i < 20; i++) rmSync(join(halfReset!, `f${i}.txt`));
    // What svc leaves when it dies while making one: the entry locked (a dead process's pid).
    writeFileSync(join(root, '.git', 'worktrees', entryOf(locked!), 'locked'), 'initializing (svc 999999999)\n');
    // One another daemon is making now (its process lives): left alone.
    const making = join(root, '.svc', 'worktrees', '.spare-another-daemon');
    g(root, 'worktree', 'add', '-q', '--detach', making);
    writeFileSync(join(root, '.git', 'worktrees', entryOf(making), 'locked'), `initializing (svc ${process.ppid})\n`);
    const q = await pool(root, 4);
    expect(existsSync(halfReset!)).toBe(false);
    expect(existsSync(locked!)).toBe(false);
    expect(existsSync(making)).toBe(true);
    const w = await ensureWorktree({ ...opts(root, 1), spares: q });
    expect(g(w.path, 'status', '--porcelain', '--untracked-files=all')).toBe('');
    writeFileSync(join(w.path, 'agent.txt'), 'work\n');
    const c = await commitAll({ path: w.path, author: ID, message: 'agent work', trailers: {} });
    expect(g(root, 'show', '--name-status', '--format=', c.commit!)).toBe('A\tagent.txt');
    await q.close();
    g(root, 'worktree', 'remove', '--force', '--force', making);
    fsck(root);
  });

  it('two daemons that took in the same spares: the rename is the claim, the other leaves the spare alone and git makes its worktree', async () => {
    const root = makeRepo();
    const first = await pool(root);
    await first.close();
    const [keep, drop] = spareDirs(root);
    g(root, 'worktree', 'remove', '--force', drop!);
    // Both take in the one spare left; the spares each then makes wait for a dispatch to be over.
    const gate = new DispatchGate(1000);
    const release = gate.hold();
    const mk = () => new SparePool({ root, start: () => 'HEAD', max: () => 2, turn: gate.turn, quiet: () => gate.quiet(), onError: () => {} });
    const [a, b] = [mk(), mk()];
    await a.open();
    await b.open();
    expect([a.size, b.size]).toEqual([1, 1]);
    const w1 = await ensureWorktree({ ...opts(root, 1), spares: a });
    const w2 = await ensureWorktree({ ...opts(root, 2), spares: b });
    expect(existsSync(keep!)).toBe(false); // w1 is that spare, renamed into place
    for (const w of [w1, w2]) {
      expect(g(w.path, 'symbolic-ref', '--short', 'HEAD')).toBe(w.branch);
      expect(g(w.path, 'status', '--porcelain', '--untracked-files=all')).toBe('');
    }
    release();
    await a.close();
    await b.close();
    fsck(root);
  });

  it('entries an earlier svc named `.spare-…` (git fsck refuses them) are renamed at open, the spares and the task worktrees made from them', async () => {
    const root = makeRepo();
    const p = await pool(root);
    const w = await ensureWorktree({ ...opts(root, 1), spares: p });
    await p.close();
    // As svc named them before: `.git/worktrees/.spare-<uuid>`, each worktree's .git file pointing there.
    for (const d of [...spareDirs(root), w.path]) {
      const name = entryOf(d);
      renameSync(join(root, '.git', 'worktrees', name), join(root, '.git', 'worktrees', `.${name}`));
      writeFileSync(join(d, '.git'), `gitdir: ${join(realpathSync(root), '.git', 'worktrees', `.${name}`)}\n`);
    }
    expect(() => g(root, 'fsck', '--no-progress')).toThrow(/invalid worktrees\/\.spare-/);
    const q = await pool(root);
    fsck(root);
    for (const d of [...spareDirs(root), w.path]) {
      expect(entryOf(d)).toMatch(/^spare-/);
      expect(g(d, 'status', '--porcelain', '--untracked-files=all')).toBe('');
    }
    expect(g(w.path, 'symbolic-ref', '--short', 'HEAD')).toBe(w.branch);
    expect(await ensureWorktree({ ...opts(root, 1), spares: q })).toMatchObject({ created: false, path: w.path });
    await q.close();
  });

  it('HEAD moved while a dispatch holds the gate: the spare it waits for is made at once, and the pool does not grow', { timeout: 30_000 }, async () => {
    const root = makeRepo();
    // Work that waits for the dispatches waits a minute here: a wait on it would time the test out.
    const gate = new DispatchGate(60_000);
    const p = await pool(root, 8, [], { quiet: () => gate.quiet(), turn: gate.turn });
    g(root, 'commit', '-qm', 'third', '--allow-empty');
    const release = gate.hold();
    const w = await ensureWorktree({ ...opts(root, 1), spares: p });
    expect(w).toMatchObject({ created: true, baseCommit: g(root, 'rev-parse', 'HEAD') });
    expect(entryOf(w.path)).toMatch(/^spare-/); // a spare, placed
    release();
    await filled(p, root);
    expect(p.target()).toBe(2);
    await p.close();
    fsck(root);
  });

  it('runner.baseRef a short branch name (`main`): placed from a spare with no wait; a tag of that name is what git reads', { timeout: 30_000 }, async () => {
    const root = makeRepo();
    const gate = new DispatchGate(60_000);
    const p = await pool(root, 8, [], { start: () => 'main', quiet: () => gate.quiet(), turn: gate.turn });
    const head = g(root, 'rev-parse', 'HEAD');
    // A dispatch under way; one spare taken, its replacement waiting for the dispatch to be over.
    const release = gate.hold();
    g(root, 'worktree', 'remove', '--force', p.take(head)!.dir);
    const w = await ensureWorktree({ ...opts(root, 1), baseRef: 'main', spares: p });
    expect(w).toMatchObject({ created: true, baseCommit: head });
    expect(entryOf(w.path)).toMatch(/^spare-/);
    expect(p.size).toBe(0);
    release();
    await filled(p, root, 'main');
    // A tag `main` comes first for git (gitrevisions(7)): git makes the worktree from it.
    g(root, 'tag', 'main', 'HEAD~1');
    const t = await ensureWorktree({ ...opts(root, 2), baseRef: 'main', spares: p });
    expect(t.baseCommit).toBe(g(root, 'rev-parse', 'HEAD~1'));
    expect(g(t.path, 'rev-parse', 'HEAD')).toBe(g(root, 'rev-parse', 'HEAD~1'));
    await p.close();
    fsck(root);
  });
});

describe('refs read and a branch made from the files', () => {
  it('reads HEAD, loose and packed branches; makes a branch as git does, refusing one that is there or in the way', () => {
    const root = makeRepo();
    const before = snapshot(root);
    const refs = RefFiles.of(join(root, '.git'), join(root, '.git'))!;
    const head = before.head;
    expect(refs.commitOf('HEAD')).toBe(head);
    expect(refs.commitOf('refs/heads/main')).toBe(head);
    expect(refs.commitOf('refs/heads/nope')).toBeNull();
    expect(refs.commitOf('refs/tags/v1')).toBeUndefined(); // not a branch: git is asked
    expect(refs.commitOf('main')).toBe(head); // a branch's short name
    expect(refs.commitOf('nope')).toBeUndefined(); // git may find it elsewhere (refs/remotes/nope)
    g(root, 'tag', 'v1');
    expect(refs.commitOf('v1')).toBeUndefined(); // a tag: git's to read
    g(root, 'branch', 'packed/one', 'HEAD~1');
    g(root, 'pack-refs', '--all');
    expect(refs.commitOf('refs/heads/packed/one')).toBe(g(root, 'rev-parse', 'HEAD~1'));
    expect(refs.commitOf('refs/heads/main')).toBe(head); // packed too now
    expect(refs.free('refs/heads/packed/one')).toBe(false);
    expect(refs.free('refs/heads/packed/one/two')).toBe(false); // inside a packed branch
    expect(refs.free('refs/heads/packed')).toBe(false); // over one
    expect(refs.free('refs/heads/svc/coder/abc')).toBe(true);
    expect(refs.free('refs/heads/packed/on')).toBe(true); // a name's beginning is no folder of it
    expect(refs.free('refs/heads/pack')).toBe(true);
    // A tag `main` packed comes before the branch for git.
    g(root, 'tag', 'main', 'HEAD~1');
    g(root, 'pack-refs', '--all');
    expect(refs.commitOf('main')).toBeUndefined();
    g(root, 'tag', '-d', 'main');

    refs.createBranch('refs/heads/svc/coder/abc', head);
    expect(g(root, 'rev-parse', 'svc/coder/abc')).toBe(head);
    expect(refs.free('refs/heads/svc/coder/abc/x')).toBe(false); // inside a loose one
    expect(() => refs.createBranch('refs/heads/svc/coder/abc', head)).toThrow(/exists/);
    // Another writer holds the lock (git, mid-update): refused, its lock left alone.
    writeFileSync(join(root, '.git', 'refs', 'heads', 'svc', 'coder', 'def.lock'), '');
    expect(() => refs.createBranch('refs/heads/svc/coder/def', head)).toThrow(/EEXIST/);
    expect(existsSync(join(root, '.git', 'refs', 'heads', 'svc', 'coder', 'def.lock'))).toBe(true);
    expect(snapshot(root)).toEqual(before);
  });

  it('a packed-refs file out of order (another tool wrote it) is read as well', () => {
    const root = makeRepo();
    const head = g(root, 'rev-parse', 'HEAD');
    const names = ['refs/heads/main', 'refs/heads/zz/one', 'refs/heads/aa', 'refs/heads/mm/x/y', 'refs/tags/main'];
    writeFileSync(join(root, '.git', 'packed-refs'), `# pack-refs with: peeled\n${names.map((n) => `${head} ${n}`).join('\n')}\n^${head}\n`);
    rmSync(join(root, '.git', 'refs', 'heads', 'main'));
    const refs = RefFiles.of(join(root, '.git'), join(root, '.git'))!;
    expect(refs.commitOf('refs/heads/aa')).toBe(head);
    expect(refs.commitOf('refs/heads/zz/one')).toBe(head);
    expect(refs.commitOf('main')).toBeUndefined(); // the tag comes first
    expect(refs.free('refs/heads/mm')).toBe(false);
    expect(refs.free('refs/heads/mm/x/y/z')).toBe(false);
    expect(refs.free('refs/heads/zz')).toBe(false);
    expect(refs.free('refs/heads/mm/x/z')).toBe(true);
  });
});

describe('a file written whole', () => {
  it('leaves nothing beside the file when writing fails (a ref or worktree entry git would trip on)', () => {
    const dir = join(tmp, 'whole');
    mkdirSync(join(dir, 'HEAD', 'in-the-way'), { recursive: true });
    expect(() => writeWhole(join(dir, 'HEAD'), 'ref: refs/heads/x\n')).toThrow();
    expect(readdirSync(dir)).toEqual(['HEAD']);
    writeWhole(join(dir, 'gitdir'), 'a\n');
    writeWhole(join(dir, 'gitdir'), 'b\n');
    expect(readFileSync(join(dir, 'gitdir'), 'utf8')).toBe('b\n');
    expect(readdirSync(dir).sort()).toEqual(['HEAD', 'gitdir']);
  });
});

describe('worktrees', () => {
  it('made from HEAD on the task branch, reused on the next attempt; the project checkout untouched', async () => {
    const root = makeRepo();
    const before = snapshot(root);
    const o = opts(root, 1);
    const t0 = performance.now();
    const wt = await ensureWorktree(o);
    const createMs = performance.now() - t0;
    expect(wt).toEqual({ path: o.dir, branch: o.branch, baseCommit: before.head, cwd: o.dir, created: true });
    expect(g(wt.path, 'symbolic-ref', 'HEAD')).toBe(`refs/heads/${o.branch}`);
    expect(readFileSync(join(wt.path, 'a.txt'), 'utf8')).toBe('one\ntwo\nthree\nfour\n'); // the commit, not the person's edit
    expect(existsSync(join(wt.path, 'untracked.txt'))).toBe(false);

    // The agent works; the run fails; the retry finds its work where it left it.
    writeFileSync(join(wt.path, 'new.txt'), 'half done\n');
    const t1 = performance.now();
    const again = await ensureWorktree(o);
    const reuseMs = performance.now() - t1;
    expect(again).toEqual({ ...wt, created: false });
    expect(readFileSync(join(wt.path, 'new.txt'), 'utf8')).toBe('half done\n');
    expect(snapshot(root)).toEqual(before);
    console.log(`ensureWorktree: create ${createMs.toFixed(1)} ms, reuse ${reuseMs.toFixed(1)} ms`);
  });

  it('a project inside a larger repository works in its own folder of the worktree', async () => {
    const repo = makeRepo();
    const project = join(repo, 'sub');
    const wt = await ensureWorktree(opts(project, 1));
    expect(wt.path).toBe(worktreeDir(project, TASK(1)));
    expect(wt.cwd).toBe(join(wt.path, 'sub/'));
    expect(readFileSync(join(wt.cwd, 'b.txt'), 'utf8')).toBe('b\n');
  });

  it('recovers from what a crash leaves: an entry without its folder, a folder git does not know, an entry locked mid-creation', async () => {
    const root = makeRepo();
    const before = snapshot(root);
    const o = opts(root, 1);
    const wt = await ensureWorktree(o);

    // The folder is gone, git still lists it.
    rmSync(wt.path, { recursive: true, force: true });
    expect(g(root, 'worktree', 'list', '--porcelain')).toContain('prunable');
    expect(await ensureWorktree(o)).toMatchObject({ created: true, baseCommit: before.head });
    expect(g(wt.path, 'symbolic-ref', 'HEAD')).toBe(`refs/heads/${o.branch}`);

    // git forgot it, the folder stayed (with junk in it).
    g(root, 'worktree', 'remove', '--force', wt.path);
    mkdirSync(join(wt.path, 'junk'), { recursive: true });
    writeFileSync(join(wt.path, 'junk', 'x'), 'x');
    expect(await ensureWorktree(o)).toMatchObject({ created: true });
    expect(existsSync(join(wt.path, 'junk'))).toBe(false);
    expect(existsSync(join(wt.path, 'a.txt'))).toBe(true);

    // `git worktree add` died halfway: its entry is still locked "initializing".
    const admin = readFileSync(join(wt.path, '.git'), 'utf8').trim().slice('gitdir: '.length);
    writeFileSync(join(admin, 'locked'), 'initializing');
    rmSync(join(wt.path, 'a.txt'));
    expect(await ensureWorktree(o)).toMatchObject({ created: true });
    expect(existsSync(join(wt.path, 'a.txt'))).toBe(true);

    expect(
      g(root, 'worktree', 'list', '--porcelain')
        .split('\n')
        .filter((l) => l.startsWith('worktree ')).length,
    ).toBe(2);
    expect(snapshot(root)).toEqual(before);
  });

  it('refuses a folder outside .svc/worktrees', async () => {
    const root = makeRepo();
    await expect(ensureWorktree({ ...opts(root, 1), dir: join(root, 'sub') })).rejects.toThrow(/must be a folder of/);
    await expect(removeWorktree({ root, path: root })).rejects.toThrow(/must be a folder of/);
    expect(existsSync(join(root, 'sub', 'b.txt'))).toBe(true);
  });

  it('a task that depends on another starts from its branch', async () => {
    const root = makeRepo();
    const dep = await ensureWorktree(opts(root, 1, 'planner'));
    writeFileSync(join(dep.path, 'plan.md'), 'the plan\n');
    const { commit } = await commitAll({ path: dep.path, author: ID, message: 'plan', trailers: {} });
    const wt = await ensureWorktree(opts(root, 2, 'coder', { fromBranch: dep.branch }));
    expect(wt.baseCommit).toBe(commit);
    expect(readFileSync(join(wt.path, 'plan.md'), 'utf8')).toBe('the plan\n');
    // Its branch is its own.
    expect(g(wt.path, 'symbolic-ref', 'HEAD')).toBe(`refs/heads/${branchName('coder', TASK(2))}`);
  });

  it('an existing branch without a worktree (removed after review) is checked out again, its base where it forked', async () => {
    const root = makeRepo();
    const o = opts(root, 1);
    const wt = await ensureWorktree(o);
    writeFileSync(join(wt.path, 'x.txt'), 'x\n');
    const { commit } = await commitAll({ path: wt.path, author: ID, message: 'x', trailers: {} });
    await removeWorktree({ root, path: wt.path });
    const again = await ensureWorktree(o);
    expect(again).toMatchObject({ created: true, baseCommit: wt.baseCommit });
    expect(g(again.path, 'rev-parse', 'HEAD')).toBe(commit);
  });

  it('several made at once, for different tasks, do not collide', async () => {
    // Unserialised, `git worktree add` reads the entries of the others half-made: "failed to read
    // .git/worktrees/<id>/commondir" (this test failed 3 runs of 3 without it, git 2.39).
    const root = makeRepo();
    const before = snapshot(root);
    const ids = Array.from({ length: 16 }, (_, i) => i + 1);
    const all = await Promise.all(ids.map((i) => ensureWorktree(opts(root, i))));
    expect(all.every((w) => w.created)).toBe(true);
    for (const w of all) expect(g(w.path, 'symbolic-ref', '--short', 'HEAD')).toBe(w.branch);
    expect(snapshot(root)).toEqual(before);
  });

  it('removal takes the folder and the entry, and keeps the branch', async () => {
    const root = makeRepo();
    const wt = await ensureWorktree(opts(root, 1));
    await removeWorktree({ root, path: wt.path });
    expect(existsSync(wt.path)).toBe(false);
    expect(g(root, 'worktree', 'list', '--porcelain')).not.toContain(wt.path);
    expect(g(root, 'rev-parse', '--verify', `refs/heads/${wt.branch}`)).toBe(wt.baseCommit);
    // Removing again (a folder already gone) is no error.
    await removeWorktree({ root, path: wt.path });
  });

  it('stale: done tasks whose worktree was last used before the cut-off', async () => {
    const root = makeRepo();
    const a = await ensureWorktree(opts(root, 1));
    const b = await ensureWorktree(opts(root, 2));
    const done = new Set([taskShortId(TASK(1))]);
    const isDone = (id: string) => done.has(id);
    const later = Date.now() + 60_000;
    expect((await staleWorktrees({ root, olderThan: later, isDone })).map((s) => s.path)).toEqual([a.path]);
    expect(await staleWorktrees({ root, olderThan: 0, isDone })).toEqual([]);
    done.add(taskShortId(TASK(2)));
    expect((await staleWorktrees({ root, olderThan: later, isDone })).map((s) => s.path).sort()).toEqual([a.path, b.path].sort());
  });
});

describe('results', () => {
  it('commits everything the agent changed, with its identity and the trailers, and no global git config', async () => {
    // The test run's HOME has no git config: the identity comes from svc alone.
    expect(() => execFileSync('git', ['config', '--global', 'user.name'], { stdio: 'ignore' })).toThrow();
    const root = makeRepo();
    const before = snapshot(root);
    const wt = await ensureWorktree(opts(root, 1));
    writeFileSync(join(wt.path, 'a.txt'), 'one\n2\nthree\nfour\nfive\n'); // modified
    rmSync(join(wt.path, 'sub', 'b.txt')); // deleted
    writeFileSync(join(wt.path, 'new.txt'), 'new\n'); // untracked
    writeFileSync(join(wt.path, 'debug.log'), 'ignored\n'); // .gitignore'd
    mkdirSync(join(wt.path, '.svc'));
    writeFileSync(join(wt.path, '.svc', 'state'), 'svc state');
    mkdirSync(join(wt.path, 'sub', '.svc'), { recursive: true });
    writeFileSync(join(wt.path, 'sub', '.svc', 'state'), 'a nested project state');

    const t0 = performance.now();
    const res = await commitAll({
      path: wt.path,
      author: { name: 'Coder Bot', email: 'coder@agents.example' },
      message: '# Did the thing\n\nDetails.',
      trailers: { 'Svc-Task': 'task-1', 'Svc-Run': 'run-1' },
    });
    console.log(`commitAll: ${(performance.now() - t0).toFixed(1)} ms`);
    expect(res.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(res.head).toBe(res.commit);
    expect(g(wt.path, 'log', '-1', '--format=%an <%ae>|%cn <%ce>')).toBe('Coder Bot <coder@agents.example>|Coder Bot <coder@agents.example>');
    expect(g(wt.path, 'log', '-1', '--format=%B')).toBe('# Did the thing\n\nDetails.\n\nSvc-Task: task-1\nSvc-Run: run-1');
    expect(g(wt.path, 'log', '-1', '--format=%(trailers:key=Svc-Task,valueonly)')).toBe('task-1');
    expect(g(wt.path, 'show', '--name-status', '--format=', 'HEAD').split('\n').sort()).toEqual(['A\tnew.txt', 'D\tsub/b.txt', 'M\ta.txt']);
    expect(g(wt.path, 'rev-parse', 'HEAD^')).toBe(wt.baseCommit);

    // Nothing more to commit: no commit, the head as it is.
    expect(await commitAll({ path: wt.path, author: ID, message: 'again', trailers: {} })).toEqual({ commit: null, head: res.commit });
    expect(await diffStat({ path: wt.path, baseCommit: wt.baseCommit, headCommit: res.commit! })).toEqual({ files: 3, added: 3, removed: 2 });
    expect(snapshot(root)).toEqual(before);
  });

  it('a commit the agent made itself is the head when svc has nothing left to commit', async () => {
    const root = makeRepo();
    const wt = await ensureWorktree(opts(root, 1));
    writeFileSync(join(wt.path, 'own.txt'), 'own\n');
    g(wt.path, 'add', 'own.txt');
    g(wt.path, 'commit', '-qm', 'by the agent');
    const head = g(wt.path, 'rev-parse', 'HEAD');
    expect(await commitAll({ path: wt.path, author: ID, message: 'x', trailers: {} })).toEqual({ commit: null, head });
  });

  it('diff stat counts binary files as files; the patch is bounded', async () => {
    const root = makeRepo();
    const wt = await ensureWorktree(opts(root, 1));
    writeFileSync(join(wt.path, 'bin.dat'), Buffer.from([0, 1, 2, 0, 255, 0]));
    writeFileSync(join(wt.path, 'big.txt'), Array.from({ length: 5000 }, (_, i) => `line ${i} é`).join('\n') + '\n');
    g(wt.path, 'mv', 'sub/b.txt', 'sub/renamed.txt');
    const { commit } = await commitAll({ path: wt.path, author: ID, message: 'files', trailers: {} });
    const stat = await diffStat({ path: wt.path, baseCommit: wt.baseCommit, headCommit: commit! });
    expect(stat).toEqual({ files: 3, added: 5000, removed: 0 });

    const whole = await diffPatch({ path: wt.path, baseCommit: wt.baseCommit, headCommit: commit!, maxBytes: 10 * 1024 * 1024 });
    expect(whole.truncated).toBe(false);
    expect(whole.patch).toContain('diff --git a/big.txt b/big.txt');
    expect(whole.patch).toContain('Binary files /dev/null and b/bin.dat differ');
    expect(whole.patch).toContain('rename to sub/renamed.txt');

    const cut = await diffPatch({ path: wt.path, baseCommit: wt.baseCommit, headCommit: commit!, maxBytes: 1000 });
    expect(cut.truncated).toBe(true);
    expect(Buffer.byteLength(cut.patch)).toBeLessThanOrEqual(1000);
    expect(cut.patch.endsWith('\n')).toBe(true);
    expect(whole.patch.startsWith(cut.patch)).toBe(true);
  });
});
