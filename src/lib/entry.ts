/**
 * The JavaScript file of a thread or child entry point next to the calling module. Under vitest a
 * module runs from src/*.ts, but a thread needs JavaScript: the same path under dist/, which
 * test/global-setup.ts builds before any test starts.
 */
export function compiledEntry(moduleUrl: string, file: string): URL {
  const here = new URL(file, moduleUrl);
  if (!moduleUrl.endsWith('.ts')) return here;
  return new URL(here.href.replace('/src/', '/dist/src/'));
}
