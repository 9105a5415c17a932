import { describe, expect, it } from 'vitest';
import { BoundedMap, boundInput, cutText, ITEM_TEXT_MAX, lineCount, own, parseLine, PARSE_LINE_MAX, rawItem, showPath } from '../../src/resources/runs/drivers/bounds.js';
import { DRIVERS } from '../../src/resources/runs/drivers/index.js';
import { RUNTIME_KINDS } from '../../src/resources/runs/types.js';

describe('cutText', () => {
  it('keeps a text within the bound as it is', () => {
    expect(cutText('hello')).toBe('hello');
    const full = 'x'.repeat(ITEM_TEXT_MAX);
    expect(cutText(full)).toBe(full);
  });

  it('cuts at the bound in UTF-8 bytes and says how much it cut', () => {
    const cut = cutText('x'.repeat(ITEM_TEXT_MAX + 500));
    expect(cut).toBe(`${'x'.repeat(ITEM_TEXT_MAX)}… [500 more bytes cut]`);
  });

  it('never splits a character: a 3-byte character across the bound is left out whole', () => {
    // 16383 one-byte characters, then "€" (3 bytes) straddles byte 16384.
    const text = 'a'.repeat(ITEM_TEXT_MAX - 1) + '€'.repeat(10);
    const cut = cutText(text);
    expect(cut.startsWith('a'.repeat(ITEM_TEXT_MAX - 1) + '…')).toBe(true);
    expect(cut).toContain('[30 more bytes cut]');
    expect(cut).not.toContain('\uFFFD');
  });

  it('replaces lone surrogates (a JSON escape can make them) instead of passing invalid text on', () => {
    expect(cutText('a\uD800b\uDC00c\uD83D\uDE00')).toBe('a\uFFFDb\uFFFDc\uD83D\uDE00');
  });

  it('takes a smaller bound for names', () => {
    expect(cutText('n'.repeat(2000), 1024)).toBe(`${'n'.repeat(1024)}… [976 more bytes cut]`);
  });
});

describe('parseLine', () => {
  it('reads a JSON object line', () => {
    expect(parseLine('{"type":"x","n":1}')).toEqual({ type: 'x', n: 1 });
    expect(parseLine('  {"a":[1,{"b":2}]}\r')).toEqual({ a: [1, { b: 2 }] });
  });

  it('answers null, never throws, for what is not one JSON object', () => {
    for (const line of ['', 'plain text', '[1,2]', '"s"', '42', 'null', '{"a":', '{"a":1}{"b":2}', '{"a":1} trailing', '{\u0000}'] as const) {
      expect(parseLine(line), line).toBeNull();
    }
  });

  it('refuses JSON nested deeper than 64 before parsing it (10,000 levels)', () => {
    const deep = `{"a":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
    expect(parseLine(deep)).toBeNull();
    const ok = `{"a":${'['.repeat(60)}${']'.repeat(60)}}`;
    expect(parseLine(ok)).not.toBeNull();
  });

  it('does not parse a line over the parse bound (a 10 MB line): it is kept as a cut raw item', () => {
    const huge = `{"type":"assistant","text":"${'x'.repeat(10 * 1024 * 1024)}"}`;
    expect(huge.length).toBeGreaterThan(PARSE_LINE_MAX);
    const t = Date.now();
    expect(parseLine(huge)).toBeNull();
    const item = rawItem(huge);
    expect(Date.now() - t).toBeLessThan(1000);
    expect(item.kind).toBe('raw');
    expect(Buffer.byteLength((item as { text: string }).text)).toBeLessThan(ITEM_TEXT_MAX + 100);
  });

  it('keeps "__proto__" a plain own key, and own() never reads Object.prototype', () => {
    const o = parseLine('{"__proto__":{"polluted":true},"type":"x"}')!;
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(own(o, 'constructor')).toBeUndefined();
    expect(own(o, 'toString')).toBeUndefined();
    expect(own(o, 'type')).toBe('x');
  });
});

describe('boundInput', () => {
  it('keeps a small input as it is and a large one as its JSON text, cut', () => {
    expect(boundInput({ command: 'ls' })).toEqual({ command: 'ls' });
    expect(boundInput(undefined)).toBeNull();
    const big = boundInput({ file_path: 'a', content: 'x'.repeat(100_000) });
    expect(typeof big).toBe('string');
    expect(big as string).toMatch(/^\{"file_path":"a","content":"x+… \[\d+ more bytes cut\]$/);
  });
});

describe('showPath and lineCount', () => {
  it('shows a path inside the workspace relative to it, any other as it is', () => {
    expect(showPath('/w/repo/src/a.ts', '/w/repo')).toBe('src/a.ts');
    expect(showPath('/w/repo', '/w/repo')).toBe('/w/repo');
    expect(showPath('/w/other/a.ts', '/w/repo')).toBe('/w/other/a.ts');
    expect(showPath('/w/repo-2/a.ts', '/w/repo')).toBe('/w/repo-2/a.ts');
    expect(showPath('src/a.ts', '/w/repo')).toBe('src/a.ts');
    expect(showPath('/w/repo/a.ts', undefined)).toBe('/w/repo/a.ts');
  });

  it('counts lines, a last one without a newline included', () => {
    expect([lineCount(''), lineCount('a'), lineCount('a\n'), lineCount('a\nb'), lineCount('a\nb\n')]).toEqual([0, 1, 1, 2, 2]);
  });
});

describe('BoundedMap', () => {
  it('forgets the oldest entry past its size', () => {
    const m = new BoundedMap<string, number>(2);
    m.set('a', 1).set('b', 2).set('a', 3).set('c', 4);
    expect([...m.entries()]).toEqual([
      ['b', 2],
      ['c', 4],
    ]);
  });
});

describe('DRIVERS', () => {
  it('has one driver per runtime kind, each of its own kind', () => {
    expect([...DRIVERS.keys()].sort()).toEqual([...RUNTIME_KINDS].sort());
    for (const [kind, driver] of DRIVERS) expect(driver.kind).toBe(kind);
  });
});
