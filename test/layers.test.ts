import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cyclesIn, LAYERS, layerViolations, partOf } from './layers.js';
import { importsOf, REPO, sourceFiles, type Import } from './source-files.js';

/** Imports allowed against the layers, each with its reason. None today: keep it so. */
const LAYER_EXEMPTIONS: { from: string; to: string; why: string }[] = [];

/** Import cycles allowed, each with its reason; a listed cycle that is gone fails the test, so the list only shrinks. */
const CYCLE_EXEMPTIONS: { files: string[]; why: string }[] = [];

const files = sourceFiles();
const known = new Set(files);
const imports = files.flatMap(importsOf).filter((i) => known.has(i.to));
const sameFiles = (a: readonly string[], b: readonly string[]) => a.length === b.length && [...a].sort().every((f, i) => f === [...b].sort()[i]);

describe('the layers', () => {
  it('place every source file', () => {
    expect(files.filter((f) => !partOf(f))).toEqual([]);
  });

  it('hold: no file imports a higher layer or a peer part (type-only and dynamic imports included)', () => {
    const found = layerViolations(imports);
    const exempt = (v: string) => LAYER_EXEMPTIONS.some((e) => v.startsWith(`${e.from}:`) && v.includes(` -> ${e.to} `));
    expect(found.filter((v) => !exempt(v))).toEqual([]);
    expect(
      LAYER_EXEMPTIONS.filter((e) => !found.some((v) => v.startsWith(`${e.from}:`) && v.includes(` -> ${e.to} `))),
      'exemptions no longer needed: remove them',
    ).toEqual([]);
  });

  it('have no import cycle, type-only and dynamic imports included', () => {
    const graph = new Map<string, string[]>();
    for (const i of imports) graph.set(i.from, [...(graph.get(i.from) ?? []), i.to]);
    const cycles = cyclesIn(graph);
    const exempt = (c: { files: string[] }) => CYCLE_EXEMPTIONS.some((e) => sameFiles(e.files, c.files));
    expect(cycles.filter((c) => !exempt(c)).map((c) => c.path)).toEqual([]);
    expect(
      CYCLE_EXEMPTIONS.filter((e) => !cycles.some((c) => sameFiles(e.files, c.files))).map((e) => e.files.join(', ')),
      'cycle exemptions no longer needed: remove them',
    ).toEqual([]);
  });

  it("keep resources' daemon sides from importing each other in a cycle, folder by folder", () => {
    const folder = (f: string) => (partOf(f)?.part === 'resources' && f.split('/').length > 3 ? f.split('/')[2]! : null);
    const graph = new Map<string, string[]>();
    for (const i of imports) {
      const a = folder(i.from);
      const b = folder(i.to);
      if (a && b && a !== b) graph.set(a, [...new Set([...(graph.get(a) ?? []), b])]);
    }
    expect(cyclesIn(graph).map((c) => c.path)).toEqual([]);
  });

  it('are the table docs/layers.md shows', () => {
    const rows = readFileSync(join(REPO, 'docs/layers.md'), 'utf8')
      .split('\n')
      .map((l) => /^\| (\d+) \| (\w+) \| ([^|]+) \|/.exec(l))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => ({ layer: Number(m[1]), part: m[2]!, files: [...m[3]!.matchAll(/`([^`]+)`/g)].map((f) => f[1]!) }));
    expect(rows).toEqual(LAYERS);
  });
});

describe('the checks themselves', () => {
  it('find an import up a layer and one across peers, and pass one down', () => {
    const at = (from: string, to: string): Import => ({ from, to, kind: 'type', line: 1 });
    expect(
      layerViolations([at('src/kernel/errors.ts', 'src/db/pg/sync.ts'), at('src/kernel/log.ts', 'src/client/client.ts'), at('src/resources/tasks/command.ts', 'src/resources/tasks/service.ts')]),
    ).toEqual(['src/kernel/errors.ts:1 -> src/db/pg/sync.ts (type): kernel (layer 1) imports db (layer 2)', 'src/kernel/log.ts:1 -> src/client/client.ts (type): kernel imports its peer client']);
  });

  it('print each cycle as a path back to its start', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c', 'a']],
      ['c', ['a']],
      ['d', ['a', 'd']],
      ['e', ['a']],
    ]);
    expect(cyclesIn(graph)).toEqual([
      { files: ['a', 'b', 'c'], path: 'a -> b -> a' },
      { files: ['d'], path: 'd -> d' },
    ]);
  });
});
