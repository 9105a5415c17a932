import { existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { exeAsset, inExe } from './exe.js';

/**
 * The JavaScript file of a thread or child entry point next to the calling module. Under vitest a
 * module runs from src/*.ts, but a thread or a child needs JavaScript: the same path under dist/,
 * which test/global-setup.ts builds before any test starts. The repository's own src/ is the last
 * one in the path (a checkout may itself sit under a directory named src).
 */
export function compiledEntry(moduleUrl: string, file: string): URL {
  const here = new URL(file, moduleUrl);
  if (!moduleUrl.endsWith('.ts')) return here;
  const i = here.href.lastIndexOf('/src/');
  return new URL(`${here.href.slice(0, i)}/dist${here.href.slice(i)}`);
}

/**
 * Starts a worker thread on an entry file next to the calling module (`./name.js`). In the single
 * executable there are no files: scripts/build-exe.mjs bundles every thread entry (its THREADS
 * list names them) as the asset `thread/<name>.js`, which runs as the thread's code.
 */
export function startThread(moduleUrl: string, file: string, options: WorkerOptions): Worker {
  if (!inExe()) return new Worker(compiledEntry(moduleUrl, file), options);
  const code = exeAsset(`thread/${basename(file)}`);
  if (!code) throw new Error(`the thread ${file} is not in this executable (rebuild it with npm run build:exe)`);
  return new Worker(code.toString('utf8'), { ...options, eval: true });
}

/** How to run svc again as another process: the executable alone, or node with bin/svc. */
export interface SvcInvocation {
  program: string;
  /** bin/svc, the program's first argument; absent for the single executable. */
  script?: string;
}

/** This svc as a command line; null when bin/svc cannot be found (a broken install). */
export function svcInvocation(moduleUrl: string): SvcInvocation | null {
  if (inExe()) return { program: process.execPath };
  const script = svcBinScript(moduleUrl);
  return script ? { program: process.execPath, script } : null;
}

/** bin/svc, found upwards from the calling module (it runs from src/ in tests and from dist/ when built); null when it is not there. */
function svcBinScript(moduleUrl: string): string | null {
  let dir = dirname(fileURLToPath(moduleUrl));
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, 'bin', 'svc');
    if (existsSync(candidate) && existsSync(join(dir, 'package.json'))) return candidate;
    dir = dirname(dir);
  }
  return null;
}
