import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importsOf, REPO, sourceFiles, type Import } from './source-files.js';

/**
 * The layers, lowest first (docs/layers.md shows the same table; a test below keeps the two equal).
 * A file may import files of its own part and of any part of a lower layer: never of a higher
 * layer, nor of another part of its own layer. Every kind of import counts: `import type`,
 * export…from and import() too. A file belongs to the part whose pattern matching it is the
 * longest (src/resources/tasks/command.ts is the CLI's, not the resources').
 */
export const LAYERS: { layer: number; part: string; files: string[] }[] = [
  { layer: 0, part: 'lib', files: ['src/lib/**', 'src/types/**'] },
  { layer: 1, part: 'kernel', files: ['src/kernel/**'] },
  { layer: 1, part: 'client', files: ['src/client/**'] },
  { layer: 2, part: 'db', files: ['src/db/**'] },
  { layer: 3, part: 'config', files: ['src/config/**', 'src/state-dir.ts'] },
  { layer: 4, part: 'events', files: ['src/events/**'] },
  { layer: 5, part: 'app', files: ['src/app.ts', 'src/secrets.ts'] },
  { layer: 6, part: 'resources', files: ['src/resources/**'] },
  { layer: 7, part: 'tools', files: ['src/tools/**'] },
  { layer: 8, part: 'daemon', files: ['src/daemon.ts', 'src/routes.ts', 'src/api-names.ts', 'src/index.ts'] },
  { layer: 9, part: 'cli', files: ['src/cli/**', 'src/resources/*/command.ts', 'src/resources/*/*-command.ts'] },
  { layer: 10, part: 'entry', files: ['bin/**', 'src/exe/**'] },
];

/** Imports allowed against the layers, each with its reason. None today: keep it so. */
const LAYER_EXEMPTIONS: { from: string; to: string; why: string }[] = [];

/** Import cycles allowed, each with its reason; a listed cycle that is gone fails the test, so the list only shrinks. */
const CYCLE_EXEMPTIONS: { files: string[]; why: string }[] = [
  {
    files: ['src/db/migrate.ts', 'src/db/open.ts'],
    why: 'open.ts runs the migrations and migrate.ts takes the DB interface and isPostgres from open.ts; issue 33 has i33-async rewrite both (the async state interface): the interface then gets a file of its own',
  },
];

const globRe = (glob: string) => new RegExp(`^${glob.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*\*/g, '\0').replace(/\*/g, '[^/]*').replace(/\0/g, '.*')}$`);
const MATCHERS = LAYERS.flatMap((l) => l.files.map((glob) => ({ ...l, glob, re: globRe(glob) })));

export function partOf(file: string): { layer: number; part: string } | null {
  let best: (typeof MATCHERS)[number] | null = null;
  for (const m of MATCHERS) if (m.re.test(file) && (!best || m.glob.length > best.glob.length)) best = m;
  return best && { layer: best.layer, part: best.part };
}

/** Each import that goes up a layer or across to another part of the same layer, as `from:line -> to (why)`. */
export function layerViolations(imports: Import[]): string[] {
  const out: string[] = [];
  for (const i of imports) {
    const a = partOf(i.from);
    const b = partOf(i.to);
    if (!a || !b || a.part === b.part) continue;
    const wrong = b.layer > a.layer ? `${a.part} (layer ${a.layer}) imports ${b.part} (layer ${b.layer})` : b.layer === a.layer ? `${a.part} imports its peer ${b.part}` : null;
    if (wrong) out.push(`${i.from}:${i.line} -> ${i.to} (${i.kind}): ${wrong}`);
  }
  return out;
}

/**
 * The graph's cycles, one per strongly connected component (Tarjan's algorithm), each written as a
 * path that comes back to where it started: `a -> b -> a`. Sorted, for stable messages.
 */
export function cyclesIn(graph: ReadonlyMap<string, readonly string[]>): { files: string[]; path: string }[] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const connect = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const c: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      c.push(w);
    } while (w !== v);
    if (c.length > 1 || (graph.get(v) ?? []).includes(v)) components.push(c.sort());
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) connect(v);
  return components
    .map((files) => {
      // The shortest way from the component's first file back to itself, inside the component.
      const inside = new Set(files);
      const start = files[0]!;
      const cameFrom = new Map<string, string>();
      const queue = [start];
      let end: string | null = null;
      while (queue.length && end === null) {
        const v = queue.shift()!;
        for (const w of graph.get(v) ?? []) {
          if (!inside.has(w)) continue;
          if (w === start) {
            end = v;
            break;
          }
          if (!cameFrom.has(w)) {
            cameFrom.set(w, v);
            queue.push(w);
          }
        }
      }
      const path = [start];
      for (let v = end!; v !== start; v = cameFrom.get(v)!) path.splice(1, 0, v);
      return { files, path: [...path, start].join(' -> ') };
    })
    .sort((a, b) => a.path.localeCompare(b.path));
}

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
    expect(LAYER_EXEMPTIONS.filter((e) => !found.some((v) => v.startsWith(`${e.from}:`) && v.includes(` -> ${e.to} `))), 'exemptions no longer needed: remove them').toEqual([]);
  });

  it('have no import cycle, type-only and dynamic imports included', () => {
    const graph = new Map<string, string[]>();
    for (const i of imports) graph.set(i.from, [...(graph.get(i.from) ?? []), i.to]);
    const cycles = cyclesIn(graph);
    const exempt = (c: { files: string[] }) => CYCLE_EXEMPTIONS.some((e) => sameFiles(e.files, c.files));
    expect(cycles.filter((c) => !exempt(c)).map((c) => c.path)).toEqual([]);
    expect(CYCLE_EXEMPTIONS.filter((e) => !cycles.some((c) => sameFiles(e.files, c.files))).map((e) => e.files.join(', ')), 'cycle exemptions no longer needed: remove them').toEqual([]);
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
    expect(layerViolations([at('src/kernel/errors.ts', 'src/db/pg/sync.ts'), at('src/kernel/log.ts', 'src/client/client.ts'), at('src/resources/tasks/command.ts', 'src/resources/tasks/service.ts')])).toEqual([
      'src/kernel/errors.ts:1 -> src/db/pg/sync.ts (type): kernel (layer 1) imports db (layer 2)',
      'src/kernel/log.ts:1 -> src/client/client.ts (type): kernel imports its peer client',
    ]);
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
