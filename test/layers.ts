import type { Import } from './source-files.js';

// The layer table and the checks over an import graph, for test/layers.test.ts (and test/clock.test.ts,
// which allows the CLI's files the system clock).

/**
 * The layers, lowest first (docs/layers.md shows the same table; test/layers.test.ts keeps the two equal).
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
  { layer: 8, part: 'cli', files: ['src/cli/**', 'src/resources/*/command.ts', 'src/resources/*/*-command.ts'] },
  {
    layer: 9,
    part: 'composition',
    files: [
      'src/resources/index.ts',
      'src/resources/*/resource.ts',
      'src/daemon.ts',
      'src/parts/**',
      'src/routes.ts',
      'src/state-schema.ts',
      'src/api-names.ts',
      'src/index.ts',
      'src/cli/commands.ts',
      'src/cli/run.ts',
      'src/cli/system/serve-command.ts',
      'src/cli/system/state-command.ts',
      'src/cli/system/start-checks.ts',
      'src/cli/system/doctor.ts',
    ],
  },
  { layer: 10, part: 'entry', files: ['bin/**', 'src/exe/**'] },
];

const globRe = (glob: string) =>
  new RegExp(
    `^${glob
      .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
      .replace(/\*\*/g, '\0')
      .replace(/\*/g, '[^/]*')
      .replace(/\0/g, '.*')}$`,
  );
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
