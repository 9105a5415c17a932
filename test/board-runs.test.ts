import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TEXT_MAX } from '../src/resources/runs/run-log.js';
import { parseDiff } from '../web/src/diff.js';
import { LogTail, wasCut } from '../web/src/log-tail.js';
import type { LogItem } from '../web/src/types.js';
import { apiOk, cancelLiveRuns, attr, axeProblems, contains, count, haveChromium, launchBrowser, shot, signIn, text, textOf, visible } from './board-browser.js';
import { makeProject, startTestDaemon, until, type TestDaemon } from './harness.js';

// Runs on the board: a task's card shows its live run, a task's page its runs and "Run now", a
// run's page its log streaming live (no gaps, no duplicates), its diff and Cancel; the Agents view
// sets a runtime. The agent is test/fixtures/runs/fake-agent.mjs (the `command` runtime), which
// obeys the @lines of its task's description. The log's bookkeeping and the diff reader are pure
// and tested first, without a browser.

const FAKE_AGENT = fileURLToPath(new URL('./fixtures/runs/fake-agent.mjs', import.meta.url));

const item = (seq: number, text = `line ${seq}`): LogItem => ({ seq, at: '', kind: 'text', text });

describe("the board's log tail", () => {
  /** A log of n items the tail reads a page (of `page`) at a time; `shown` is what it showed, in order. */
  function setup(n: number, page = 1000) {
    const log = Array.from({ length: n }, (_, i) => item(i + 1));
    const reads: number[] = [];
    let hold: Promise<void> | null = null;
    const shown: number[] = [];
    const tail = new LogTail(
      async (after) => {
        reads.push(after);
        if (hold) await hold;
        const items = log.filter((i) => i.seq > after).slice(0, page);
        return { items, more: items.length === page };
      },
      (items) => shown.push(...items.map((i) => i.seq)),
    );
    return { log, reads, shown, tail, holdReads: (p: Promise<void> | null) => (hold = p) };
  }

  it('reads what came before, then follows events, each item once and in order', async () => {
    const { log, reads, shown, tail } = setup(5, 2);
    await tail.catchUp();
    expect(reads).toEqual([0, 2, 4]);
    expect(shown).toEqual([1, 2, 3, 4, 5]);
    // An event repeating items already read (written before the read, heard after) adds only what is new.
    log.push(item(6), item(7));
    tail.event(5, [log[4]!, log[5]!, log[6]!]);
    expect(shown).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(reads).toEqual([0, 2, 4]);
  });

  it('reads the log at a gap (an event missed) instead of skipping it', async () => {
    const { log, reads, shown, tail } = setup(3);
    await tail.catchUp();
    log.push(item(4), item(5), item(6));
    tail.event(6, [log[5]!]);
    await until('the gap to be read', async () => shown.length === 6);
    expect(shown).toEqual([1, 2, 3, 4, 5, 6]);
    expect(reads).toEqual([0, 3]);
  });

  it('reads the log for an item an event carried cut to 2 KiB, and shows the whole one', async () => {
    const { log, shown, tail } = setup(1);
    const shownItems: LogItem[] = [];
    const whole = 'x'.repeat(EVENT_TEXT_MAX + 500);
    await tail.catchUp();
    log.push(item(2, whole), item(3));
    const cut = item(2, `${whole.slice(0, EVENT_TEXT_MAX)}…`);
    expect(wasCut(cut)).toBe(true);
    expect(wasCut(item(2, 'short…'))).toBe(false);
    const t2 = new LogTail(
      async (after) => ({ items: log.filter((i) => i.seq > after), more: false }),
      (items) => shownItems.push(...items),
      1,
    );
    t2.event(2, [cut, log[2]!]);
    await until('the cut item to be read', async () => shownItems.length === 2);
    expect(shownItems.map((i) => [i.seq, String(i.text).length])).toEqual([
      [2, whole.length],
      [3, 6],
    ]);
    expect(shown).toEqual([1]);
  });

  it('holds events that arrive during a read and uses them after it, without duplicates', async () => {
    const { log, shown, tail, holdReads } = setup(2);
    let release!: () => void;
    holdReads(new Promise<void>((r) => (release = r)));
    const reading = tail.catchUp();
    // Items 3 and 4 are written (and their events heard) while the first read is on its way.
    log.push(item(3), item(4));
    tail.event(3, [log[2]!]);
    tail.event(4, [log[3]!]);
    expect(shown).toEqual([]);
    release();
    holdReads(null);
    await reading;
    expect(shown).toEqual([1, 2, 3, 4]);
    log.push(item(5));
    tail.event(5, [log[4]!]);
    expect(shown).toEqual([1, 2, 3, 4, 5]);
  });
});

describe("the board's diff reader", () => {
  it('splits a unified diff into files with their lines: added, deleted, renamed, binary, quoted paths', () => {
    const patch = [
      'diff --git a/src/new.ts b/src/new.ts',
      'new file mode 100644',
      'index 0000000..1111111',
      '--- /dev/null',
      '+++ b/src/new.ts',
      '@@ -0,0 +1,2 @@',
      '+export const a = 1;',
      '+--- not a header',
      'diff --git a/old.txt b/old.txt',
      'deleted file mode 100644',
      '--- a/old.txt',
      '+++ /dev/null',
      '@@ -1 +0,0 @@',
      '-gone',
      '\\ No newline at end of file',
      'diff --git a/a.md b/b.md',
      'similarity index 90%',
      'rename from a.md',
      'rename to b.md',
      '--- a/a.md',
      '+++ b/b.md',
      '@@ -1,2 +1,2 @@',
      ' same',
      '-before',
      '+after',
      'diff --git a/logo.png b/logo.png',
      'Binary files a/logo.png and b/logo.png differ',
      'diff --git "a/caf\\303\\251 \\"x\\".txt" "b/caf\\303\\251 \\"x\\".txt"',
      '--- "a/caf\\303\\251 \\"x\\".txt"',
      '+++ "b/caf\\303\\251 \\"x\\".txt"',
      '@@ -1 +1 @@',
      '-a',
      '+b',
      '',
    ].join('\n');
    const files = parseDiff(patch);
    expect(files.map((f) => [f.path, f.from, f.change, f.binary, f.added, f.removed])).toEqual([
      ['src/new.ts', null, 'added', false, 2, 0],
      ['old.txt', null, 'deleted', false, 0, 1],
      ['b.md', 'a.md', 'renamed', false, 1, 1],
      ['logo.png', null, 'modified', true, 0, 0],
      ['café "x".txt', null, 'modified', false, 1, 1],
    ]);
    expect(files[0]!.lines.map((l) => l.kind)).toEqual(['hunk', 'add', 'add']);
    expect(files[1]!.lines.map((l) => l.kind)).toEqual(['hunk', 'del', 'note']);
    expect(files[2]!.lines.map((l) => `${l.kind} ${l.text}`)).toEqual(['hunk @@ -1,2 +1,2 @@', 'ctx  same', 'del -before', 'add +after']);
    expect(parseDiff('')).toEqual([]);
  });
});

const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.com', ...args], { cwd, encoding: 'utf8' }).trim();

describe.skipIf(!haveChromium)('runs on the board in Chromium', () => {
  let d: TestDaemon;
  let browser: Browser;
  let page: Page;
  const api = (method: string, path: string, body?: unknown) => apiOk(d, method, path, body);
  const go = (p: Page, hash: string) => p.evaluate((h) => (location.hash = h), hash);
  const runsOf = async (taskId: string): Promise<any[]> => await api('GET', `/api/v1/runs?taskId=${taskId}`);
  /** The log's lines on the page: their seqs, in order. */
  const seqs = (p: Page) => p.locator('#run-log .ll').evaluateAll((ls) => ls.map((l) => Number((l as HTMLElement).dataset.seq)));

  beforeAll(async () => {
    const root = makeProject({}, { 'README.md': '# test project\n', '.gitignore': '.svc/\n.user-config/\n' });
    git(root, 'init', '-q', '-b', 'main');
    git(root, 'add', '-A');
    git(root, 'commit', '-q', '-m', 'initial');
    d = await startTestDaemon({ root, env: { PATH: process.env.PATH! } });
    await api('POST', '/api/v1/agents', { name: 'fay', role: 'builder', runtime: { kind: 'command', command: FAKE_AGENT, env: { GREETING: 'hello from fay' } } });
    await api('POST', '/api/v1/agents', { name: 'ned', role: 'no runtime yet' });
    browser = await launchBrowser();
    page = (await signIn(browser, d)).p;
  });
  afterEach(() => cancelLiveRuns(d));
  afterAll(async () => {
    await browser?.close();
    await d?.close();
  });

  let ticking: { id: string };

  it('shows a running task on its card, streams its log live without gaps or duplicates, follows the end, and cancels it', async () => {
    ticking = await api('POST', '/api/v1/tasks', { title: 'Tick for a while', assignTo: 'fay', description: '@lines 3\n@print-env GREETING\n@tick 100' });
    const card = page.locator(`.card[data-task="${ticking.id}"]`);
    const live = card.locator('.run-live');
    await contains(live, 'running', 10_000);
    await contains(live, 'fay');
    expect(await card.getAttribute('aria-label')).toContain('run running');
    // Its clock moves.
    const clock = await textOf(live.locator('.elapsed'));
    await until('the elapsed time to move', async () => (await textOf(live.locator('.elapsed'))) !== clock, 3_000);
    await shot(page, 'runs-card');

    await live.click();
    await visible(page.locator('.run-view[data-status="running"]'));
    await contains(page.locator('#run-log'), 'hello from fay');
    await contains(page.locator('#run-log .ll').nth(1), 'line 1');
    // When each line reaches the page, against when the runner read it from the CLI (the item's `at`).
    await page.evaluate(() => {
      const w = window as unknown as { seenAt: Record<number, number> };
      w.seenAt = {};
      new MutationObserver((records) => {
        const t = performance.timeOrigin + performance.now();
        for (const r of records) for (const n of r.addedNodes) if (n instanceof HTMLElement && n.dataset.seq) w.seenAt[Number(n.dataset.seq)] = t;
      }).observe(document.getElementById('run-log')!, { childList: true });
    });
    // Lines keep arriving, each once, in order, with no seq missing; the page does not move.
    const layout = () => page.evaluate(() => JSON.stringify([document.documentElement.scrollHeight, document.getElementById('run-log')!.getBoundingClientRect()]));
    const before = await layout();
    const n0 = (await seqs(page)).length;
    await until('ten more lines', async () => (await seqs(page)).length >= n0 + 10, 10_000);
    expect(await layout()).toBe(before);
    const s = await seqs(page);
    expect(s).toEqual(Array.from({ length: s.length }, (_, i) => i + 1));
    expect(await page.locator('#run-log .ll').nth(5).textContent()).toBe('tick');
    const seenAt: Record<number, number> = await page.evaluate(() => (window as unknown as { seenAt: Record<number, number> }).seenAt);
    const runId = (await page.locator('.run-view').getAttribute('data-run'))!;
    const items: any[] = await api('GET', `/api/v1/runs/${runId}/log?limit=1000`);
    const delays = items
      .filter((i) => seenAt[i.seq])
      .map((i) => Math.round(seenAt[i.seq]! - Date.parse(i.at)))
      .sort((a, b) => a - b);
    console.log(
      `run log lines reached the board ${delays[delays.length >> 1]} ms (median), ${delays.at(-1)} ms (max) after the runner read them, over ${delays.length} lines (the runner writes every 100 ms)`,
    );
    expect(delays.length).toBeGreaterThanOrEqual(10);
    expect(delays[delays.length >> 1]).toBeLessThan(1000);
    // What the API holds, line for line (the CLI's formatter: "· …" for a system item).
    expect(items.slice(0, 5).map((i) => i.kind)).toEqual(['system', 'text', 'text', 'text', 'text']);
    expect(await page.locator('#run-log .ll').first().textContent()).toMatch(/^· fake agent in /);

    // Follow mode: at the end as lines come; scrolled up, it stays put; "Follow the end" brings it back.
    const pane = page.locator('#run-log');
    const atEnd = () => pane.evaluate((el) => el.scrollTop + el.clientHeight >= el.scrollHeight - 8);
    await until('the pane to fill and follow', async () => (await pane.evaluate((el) => el.scrollHeight > el.clientHeight + 100)) && (await atEnd()));
    await attr(page.locator('#log-follow'), 'aria-pressed', 'true');
    await pane.evaluate((el) => el.scrollTo(0, 0));
    await attr(page.locator('#log-follow'), 'aria-pressed', 'false');
    const n1 = (await seqs(page)).length;
    await until('more lines', async () => (await seqs(page)).length >= n1 + 3);
    expect(await pane.evaluate((el) => el.scrollTop)).toBe(0);
    await page.click('#log-follow');
    await until('the end again', atEnd);
    const n2 = (await seqs(page)).length;
    await until('more lines', async () => (await seqs(page)).length >= n2 + 3);
    expect(await atEnd()).toBe(true);
    await shot(page, 'runs-live');

    // Cancel asks first; then the run ends and its task waits, assigned.
    await page.click('#run-cancel');
    await visible(page.locator('#run-cancel-keep'));
    await page.click('#run-cancel-keep');
    await visible(page.locator('#run-cancel'));
    expect((await runsOf(ticking.id))[0].status).toBe('running');
    await page.click('#run-cancel');
    await page.click('#run-cancel-confirm');
    await text(page.locator('.run-view .badge'), 'cancelled', 20_000);
    await count(page.locator('#run-cancel'), 0);
    expect((await runsOf(ticking.id))[0].status).toBe('cancelled');
    expect((await api('GET', `/api/v1/tasks/${ticking.id}`)).status).toBe('assigned');
    const final = await seqs(page);
    expect(final).toEqual(Array.from({ length: final.length }, (_, i) => i + 1));
  });

  it("lists a task's runs, starts one with Run now, shows the API's refusal, and shows the diff of a run that succeeded", async () => {
    // A task whose assignee has no runtime: Run now is refused, with the API's words.
    const idle = await api('POST', '/api/v1/tasks', { title: 'Nobody can run this', assignTo: 'ned' });
    await go(page, `#/tasks/${idle.id}`);
    await page.click('#run-now');
    await contains(page.locator('#run-now-error'), 'agent "ned" has no runtime');

    // The cancelled task: its run is listed; Run now starts another, which writes files and ends.
    await go(page, `#/tasks/${ticking.id}`);
    const row = page.locator('table.runs tbody tr').first();
    await contains(row, 'cancelled');
    await contains(row, 'dispatch');
    const writes = Array.from({ length: 55 }, (_, i) => `@write notes/n${String(i + 1).padStart(2, '0')}.txt note ${i + 1}`);
    await api('PATCH', `/api/v1/tasks/${ticking.id}`, { description: ['@lines 2', ...writes, '@usage 1200 340 0.0421'].join('\n') });
    await page.click('#run-now');
    await visible(page.locator('.run-view'));
    await text(page.locator('.run-view .badge'), 'succeeded', 20_000);
    const runs = await runsOf(ticking.id);
    expect(runs.map((r) => [r.attempt, r.reason, r.status])).toEqual([
      [2, 'manual', 'succeeded'],
      [1, 'dispatch', 'cancelled'],
    ]);
    expect(await page.locator('.run-view').getAttribute('data-run')).toBe(runs[0].id);
    // Usage and cost, the summary, and the diff: files and lines marked by sign and element, not by colour alone.
    await text(page.locator('#run-tokens'), '1200 in / 340 out');
    await text(page.locator('#run-cost'), '$0.0421');
    await contains(page.locator('.outcome'), 'did what the task asked');
    await contains(page.locator('#run-log'), '✚ notes/n01.txt +1 −0');
    const files = page.locator('.diff-file');
    await count(files, 50);
    const first = files.first();
    await contains(first.locator('summary'), 'notes/n01.txt');
    expect(await first.locator('summary .counts').getAttribute('aria-label')).toBe('1 lines added, 0 removed');
    expect(await first.locator('pre.diff ins').textContent()).toBe('+note 1');
    await page.locator('button', { hasText: 'Show 5 more files' }).click();
    await count(files, 55);
    await contains(page.locator('#diff-head + p'), '55 files');
    await page.evaluate(() => document.getElementById('diff-head')!.scrollIntoView());
    await shot(page, 'runs-diff');

    // Back on the task's page: both runs, with tokens, cost and the summary.
    await page.locator('.run-view .meta a').click();
    await count(page.locator('table.runs tbody tr'), 2);
    await contains(page.locator('table.runs tbody tr').first(), '$0.0421');
    await contains(page.locator('table.runs tbody tr').first(), 'did what the task asked');
    await count(page.locator('#run-now'), 0);
    expect(await page.locator('.task-view > details').getAttribute('open')).toBeNull();
    await shot(page, 'runs-task');
  });

  it("sets an agent's runtime on the Agents view and shows the API's 422", async () => {
    await go(page, '#/agents');
    const ned = page.locator('tr[data-agent="ned"]');
    await contains(ned.locator('.runtime'), 'none');
    await ned.locator('button', { hasText: 'Set runtime' }).click();
    await page.selectOption('#rt-kind-ned', 'command');
    await page.fill('#rt-command-ned', '/nowhere/agent-cli');
    await page.click('.runtime-form button[type="submit"]');
    await contains(page.locator('#rt-error-ned'), 'runtime.command: /nowhere/agent-cli cannot be run: looked at /nowhere/agent-cli');
    expect((await api('GET', '/api/v1/agents/ned')).runtime).toBeNull();
    await shot(page, 'runs-runtime-422');
    await page.fill('#rt-command-ned', FAKE_AGENT);
    await page.selectOption('#rt-mode-ned', 'bypass');
    await page.uncheck('#rt-auto-ned');
    await page.click('.runtime-form button[type="submit"]');
    await count(page.locator('.runtime-form'), 0);
    await contains(ned.locator('.runtime'), 'by hand');
    expect((await api('GET', '/api/v1/agents/ned')).runtime).toEqual({ kind: 'command', command: FAKE_AGENT, permissionMode: 'bypass', autoRun: false });

    // Editing keeps what the form does not show (fay's environment) while the kind stays.
    const fay = page.locator('tr[data-agent="fay"]');
    await fay.locator('button', { hasText: 'Edit runtime' }).click();
    expect(await page.inputValue('#rt-command-fay')).toBe(FAKE_AGENT);
    await page.selectOption('#rt-mode-fay', 'ask');
    await page.click('.runtime-form button[type="submit"]');
    await contains(fay.locator('.runtime'), 'ask');
    expect((await api('GET', '/api/v1/agents/fay')).runtime).toEqual({ kind: 'command', command: FAKE_AGENT, permissionMode: 'ask', env: { GREETING: 'hello from fay' } });
    await api('PATCH', '/api/v1/agents/fay', { runtime: { kind: 'command', command: FAKE_AGENT } });
  });

  it('shows a read-only session runs and their logs, without Cancel, Run now or runtime controls', async () => {
    const t = await api('POST', '/api/v1/tasks', { title: 'Tick while someone watches', assignTo: 'fay', description: '@tick 100' });
    await until('the run to start', async () => (await runsOf(t.id))[0]?.status === 'running', 10_000);
    const [run] = await runsOf(t.id);
    const ro = await signIn(browser, d, { readOnly: true });
    await contains(ro.p.locator(`.card[data-task="${t.id}"] .run-live`), 'running');
    await go(ro.p, `#/runs/${run.id}`);
    await until('lines', async () => (await seqs(ro.p)).length >= 5);
    await count(ro.p.locator('.run-view button:not(#log-follow)'), 0);
    await go(ro.p, `#/tasks/${ticking.id}`);
    await count(ro.p.locator('table.runs tbody tr'), 2);
    await count(ro.p.locator('#run-now'), 0);
    await go(ro.p, '#/agents');
    await visible(ro.p.locator('tr[data-agent="fay"]'));
    await count(ro.p.locator('.runtime button'), 0);
    expect(ro.errors).toEqual([]);
    await ro.ctx.close();
    await api('POST', `/api/v1/runs/${run.id}/cancel`);
  });

  it('passes axe-core on the run, task and agents pages, wide and light, narrow and dark', async () => {
    const t = await api('POST', '/api/v1/tasks', { title: 'Tick for axe', assignTo: 'fay', description: '@lines 4\n@tick 150' });
    await until('the run to start', async () => (await runsOf(t.id))[0]?.status === 'running', 10_000);
    const [live] = await runsOf(t.id);
    const [done] = (await runsOf(ticking.id)).filter((r) => r.status === 'succeeded');
    const problems: string[] = [];
    for (const [viewport, scheme] of [
      [{ width: 1280, height: 800 }, 'light'],
      [{ width: 420, height: 800 }, 'dark'],
    ] as const) {
      const s = await signIn(browser, d, { viewport, bypassCSP: true });
      await s.p.emulateMedia({ colorScheme: scheme });
      const where = `${viewport.width}px ${scheme}`;
      await go(s.p, `#/runs/${live.id}`);
      await until('lines', async () => (await seqs(s.p)).length >= 4);
      await s.p.click('#run-cancel');
      await visible(s.p.locator('#run-cancel-confirm'));
      problems.push(...(await axeProblems(s.p, `live run ${where}`)));
      await go(s.p, `#/runs/${done.id}`);
      await count(s.p.locator('.diff-file'), 50);
      problems.push(...(await axeProblems(s.p, `finished run ${where}`)));
      if (scheme === 'dark') await shot(s.p, 'runs-diff-narrow-dark');
      await go(s.p, `#/tasks/${ticking.id}`);
      await visible(s.p.locator('table.runs'));
      problems.push(...(await axeProblems(s.p, `task ${where}`)));
      await go(s.p, '#/agents');
      await s.p.locator('tr[data-agent="fay"] button', { hasText: 'Edit runtime' }).click();
      await visible(s.p.locator('.runtime-form'));
      problems.push(...(await axeProblems(s.p, `agents ${where}`)));
      if (viewport.width < 600) expect(await s.p.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1)).toBe(true);
      expect(s.errors).toEqual([]);
      await s.ctx.close();
    }
    expect(problems).toEqual([]);
    await api('POST', `/api/v1/runs/${live.id}/cancel`);
  });
});
