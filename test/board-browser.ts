import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Locator, Page } from 'playwright-core';
import { expect } from 'vitest';
import { LIVE_STATUSES } from '../src/resources/runs/schema.js';
import { until, type TestDaemon } from './harness.js';

// The board in Debian's Chromium, for the board's test files (one browser per file): the
// browser, signing in as a person does, waits for what a test then asserts, screenshots, axe.

export const ARTIFACTS = fileURLToPath(new URL('../test-artifacts/board/', import.meta.url));
const CHROMIUM = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';
export const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) console.warn(`board browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set SVC_CHROMIUM)`);

export async function launchBrowser(): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

// playwright-core has no expect(): these wait for what a test then asserts (5 s at most).
const WAIT_MS = 5_000;
export const visible = (l: Locator, ms = WAIT_MS) => l.first().waitFor({ state: 'visible', timeout: ms });
export const count = (l: Locator, n: number) => until(`${n} of ${l}`, async () => (await l.count()) === n);
export const textOf = async (l: Locator) => ((await l.first().textContent({ timeout: 200 })) ?? '').trim();
export const text = (l: Locator, t: string, ms = WAIT_MS) => until(`${l} to read "${t}"`, async () => (await textOf(l)) === t, ms);
export const contains = (l: Locator, t: string, ms = WAIT_MS) => until(`${l} to contain "${t}"`, async () => (await textOf(l)).includes(t), ms);
export const attr = (l: Locator, name: string, v: string, ms = WAIT_MS) => until(`${l} ${name}=${v}`, async () => (await l.first().getAttribute(name, { timeout: 200 })) === v, ms);
export const cls = (l: Locator, re: RegExp) => until(`${l} class ${re}`, async () => re.test((await l.first().getAttribute('class', { timeout: 200 })) ?? ''));

export async function shot(p: Page, name: string): Promise<void> {
  await p.evaluate(() => void (document.getElementById('toast')!.hidden = true));
  await p.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: false });
}

/** A call with the test key that must succeed; its data. */
export async function apiOk(d: TestDaemon, method: string, path: string, body?: unknown): Promise<any> {
  const r = await d.api(method, path, { body });
  expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
  return r.body.data;
}

/** A fresh context signed in through the one-time link, as a person would be; its page's errors are collected. */
/**
 * Cancels every run still waiting or working: a test that fails midway must not leave one that holds
 * its agent's slot (maxConcurrency 1), or the next tests, waiting for their own runs, fail behind it.
 */
export async function cancelLiveRuns(d: TestDaemon | undefined): Promise<void> {
  if (!d) return;
  for (const status of LIVE_STATUSES) {
    for (const r of await apiOk(d, 'GET', `/api/v1/runs?status=${status}&limit=200`)) await d.api('POST', `/api/v1/runs/${r.id}/cancel`);
  }
}

export async function signIn(browser: Browser, d: TestDaemon, opts: { readOnly?: boolean; viewport?: { width: number; height: number }; bypassCSP?: boolean; timezoneId?: string } = {}) {
  const ctx = await browser.newContext({ viewport: opts.viewport ?? { width: 1280, height: 800 }, bypassCSP: opts.bypassCSP, timezoneId: opts.timezoneId });
  const p = await ctx.newPage();
  const errors: string[] = [];
  p.on('pageerror', (e) => errors.push(String(e)));
  p.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  const minted = await apiOk(d, 'POST', '/api/v1/board/logins', opts.readOnly ? { readOnly: true } : {});
  await p.goto(d.url + minted.path);
  await p.locator('#live.on').waitFor();
  return { ctx, p, errors, link: d.url + minted.path };
}

let axeSource: string | undefined;
/** axe-core's serious and critical violations on the page as it is (its context must bypass CSP to take the script). */
export async function axeProblems(p: Page, where: string): Promise<string[]> {
  axeSource ??= readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  if (!(await p.evaluate(() => 'axe' in window))) await p.addScriptTag({ content: axeSource });
  const result = await p.evaluate(async () => (window as any).axe.run(document, { resultTypes: ['violations'] }));
  return (result.violations as { id: string; impact: string; nodes: { target: string[] }[] }[])
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${where}: ${v.id} (${v.impact}) at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}
