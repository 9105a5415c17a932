import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

// Every event in the catalog must be emitted by some test: an event nobody emits is advertised
// but does not exist (or its feature is untested). Each daemon the harness starts reports what it
// emits; each test file writes its names to a file in a directory the global setup made; at the
// end of a full run the global teardown fails the run when a catalog event is missing.

declare module 'vitest' {
  export interface ProvidedContext {
    emittedEventsDir: string;
  }
}

const emitted = new Set<string>();

/** Called by the harness for every event a test daemon emits. */
export function recordEmitted(name: string): void {
  emitted.add(name);
}

/** Writes this test file's emitted names (test/setup.ts, after each file). */
export function flushEmitted(dir: string, testFile: string): void {
  if (!emitted.size) return;
  mkdirSync(dir, { recursive: true });
  const name = `${relative(process.cwd(), testFile).replace(/[^A-Za-z0-9.-]+/g, '_')}-${process.pid}-${Date.now()}.json`;
  writeFileSync(join(dir, name), JSON.stringify([...emitted]));
  emitted.clear();
}

export function makeEmittedDir(): string {
  return mkdtempSync(join(tmpdir(), 'svc-emitted-'));
}

/** The union of every name the test files wrote. */
export function readEmitted(dir: string): Set<string> {
  const all = new Set<string>();
  for (const f of readdirSync(dir)) for (const n of JSON.parse(readFileSync(join(dir, f), 'utf8')) as string[]) all.add(n);
  return all;
}

export function removeEmittedDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** Catalog events no test emitted; empty means every advertised event is real and tested. */
export function neverEmitted(catalog: readonly string[], seen: ReadonlySet<string>): string[] {
  return catalog.filter((n) => !seen.has(n));
}
