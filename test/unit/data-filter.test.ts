import Database from '../../src/db/sqlite.js';
import { describe, expect, it } from 'vitest';
import { createTableSql } from '../../src/resources/data/ddl.js';
import { compileList, FilterError } from '../../src/resources/data/filter.js';
import type { TableDefT } from '../../src/resources/data/schema.js';
import { firstKeyword } from '../../src/resources/data/sql-tokens.js';

// The filter grammar → parameterised SQL, one pure function; and the tokenizer the guard uses.

const T: TableDefT = {
  columns: {
    name: { type: 'text', nullable: true },
    age: { type: 'integer', nullable: true },
    score: { type: 'number', nullable: true },
    vip: { type: 'boolean', nullable: true },
    born: { type: 'timestamp', nullable: true },
    meta: { type: 'json', nullable: true },
  },
};

const c = (filter?: Record<string, unknown>, orderBy?: { column: string; direction?: 'asc' | 'desc' }[]) => compileList('people', T, filter, orderBy);

function fails(filter: Record<string, unknown>, path: string, message: RegExp): void {
  try {
    c(filter);
  } catch (err) {
    expect(err).toBeInstanceOf(FilterError);
    expect((err as FilterError).path).toBe(path);
    expect((err as FilterError).message).toMatch(message);
    return;
  }
  throw new Error(`${JSON.stringify(filter)} compiled`);
}

describe('compileList', () => {
  it('compiles nothing to true, ordered by rowid', () => {
    expect(c()).toEqual({ where: '1', params: [], orderBy: 'rowid ASC' });
  });

  it('compiles equality, null and every operator to placeholders', () => {
    expect(c({ name: 'x', age: null })).toEqual({ where: '("name" = ? AND "age" IS NULL)', params: ['x'], orderBy: 'rowid ASC' });
    expect(c({ age: { gte: 18, lt: 65 } }).where).toBe('("age" >= ? AND "age" < ?)');
    expect(c({ name: { ne: 'x' } }).where).toBe('"name" IS NOT ?');
    expect(c({ name: { eq: null } }).where).toBe('"name" IS NULL');
    expect(c({ name: { ne: null } }).where).toBe('"name" IS NOT NULL');
    expect(c({ name: { like: 'a%' } })).toMatchObject({ where: '"name" LIKE ?', params: ['a%'] });
    expect(c({ name: { isNull: false } }).where).toBe('"name" IS NOT NULL');
    expect(c({ age: { in: [1, null, 3] } })).toMatchObject({ where: '("age" IN (?, ?) OR "age" IS NULL)', params: [1, 3] });
    expect(c({ age: { in: [] } }).where).toBe('0');
    expect(c({ vip: true }).params).toEqual([1]);
    expect(c({ born: { gt: '2026-01-01T01:00:00+01:00' } }).params).toEqual(['2026-01-01T00:00:00.000Z']);
    expect(c({ meta: { eq: { a: 1 } } }).params).toEqual(['{"a":1}']);
    expect(c({ _id: 'x', _version: { gt: 1 } }).where).toBe('("_id" = ? AND "_version" > ?)');
  });

  it('compiles or-groups, nested', () => {
    const r = c({ age: 1, or: [{ name: 'a' }, { name: 'b', or: [{ vip: true }, { score: { lt: 2 } }] }] });
    expect(r.where).toBe('("age" = ? AND ("name" = ? OR ("name" = ? AND ("vip" = ? OR "score" < ?))))');
    expect(r.params).toEqual([1, 'a', 'b', 1, 2]);
  });

  it('orders by schema columns with direction, then rowid', () => {
    expect(c(undefined, [{ column: 'age', direction: 'desc' }, { column: 'name' }]).orderBy).toBe('"age" DESC, "name" ASC, rowid ASC');
    expect(() => c(undefined, [{ column: 'age; DROP TABLE people' }])).toThrow(/no column/);
  });

  it('never splices caller text: hostile names are refused, hostile values are parameters', () => {
    fails({ 'name" = "name" OR 1=1 --': 'x' }, 'filter.name" = "name" OR 1=1 --', /no column/);
    fails({ constructor: 'x' }, 'filter.constructor', /no column/);
    fails({ __proto__: 'x', toString: 1 } as Record<string, unknown>, 'filter.toString', /no column/);
    const r = c({ name: "x' OR '1'='1" });
    expect(r.where).toBe('"name" = ?');
    expect(r.params).toEqual(["x' OR '1'='1"]);
  });

  it('names the offending path', () => {
    fails({ age: { between: [1, 2] } }, 'filter.age.between', /unknown operator/);
    fails({ age: 'x' }, 'filter.age', /integer/);
    fails({ age: { in: [1, 'x'] } }, 'filter.age.in.1', /integer/);
    fails({ age: { in: 'x' } }, 'filter.age.in', /array/);
    fails({ meta: { gt: 1 } }, 'filter.meta.gt', /does not apply/);
    fails({ age: { like: 'x' } }, 'filter.age.like', /does not apply/);
    fails({ or: [] }, 'filter.or', /non-empty/);
    fails({ or: [{ nope: 1 }] }, 'filter.or.0.nope', /no column/);
    fails({ name: {} }, 'filter.name', /at least one operator/);
    fails({ age: { in: Array(101).fill(1) } }, 'filter.age.in', /at most 100/);
  });

  it('bounds nesting depth and condition count', () => {
    let f: Record<string, unknown> = { name: 'x' };
    for (let i = 0; i < 10; i++) f = { or: [f] };
    expect(() => c(f)).toThrow(/nest at most/);
    const many = { or: Array.from({ length: 100 }, () => ({ name: 'a', age: 1, score: 2 })) };
    expect(() => c(many)).toThrow(/at most 200 conditions/);
  });

  it('runs as SQL against a real table', () => {
    const db = new Database(':memory:');
    for (const s of createTableSql('people', T)) db.exec(s);
    const ins = db.prepare('INSERT INTO people (name, age, vip) VALUES (?, ?, ?)');
    ins.run('ann', 30, 1);
    ins.run('bob', 17, 0);
    ins.run(null, null, null);
    const q = c({ or: [{ age: { gte: 18 } }, { name: { isNull: true } }] }, [{ column: 'age', direction: 'desc' }]);
    const rows = db.prepare(`SELECT name FROM people WHERE ${q.where} ORDER BY ${q.orderBy}`).all(...q.params);
    expect(rows).toEqual([{ name: 'ann' }, { name: null }]);
  });
});

describe('first keyword', () => {
  it('skips comments and SQLite whitespace, and nothing else', () => {
    expect(firstKeyword('/* x */ -- y\n\t\f\r select 1')).toBe('SELECT');
    expect(firstKeyword('with x as (select 1) delete from t')).toBe('WITH');
    // SQLite reads these as identifier characters, so neither may they be skipped here.
    for (const c of ['\u00a0', '\u2028', '\u3000', '\ufeff', '\u0085', '\v']) expect(firstKeyword(`${c}SELECT 1`), JSON.stringify(c)).not.toBe('SELECT');
    expect(firstKeyword('PRAGMA\u00a0x')).toBe('PRAGMA\u00a0X');
    // Only ASCII folds: 'ſ'.toUpperCase() is 'S' to JavaScript, and an identifier character to SQLite.
    expect(firstKeyword('ſelect 1')).not.toBe('SELECT');
    expect(firstKeyword('/* unterminated SELECT')).toBe('');
    expect(firstKeyword('-- only a comment')).toBe('');
  });
});
