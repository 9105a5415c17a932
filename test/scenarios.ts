import { expect } from 'vitest';
import type { TestDaemon } from './harness.js';

/** A value, or a function giving it when the case runs (for ids made by earlier cases). */
export type Lazy<T> = T | (() => T);
export const resolve = <T>(v: Lazy<T>): T => (typeof v === 'function' ? (v as () => T)() : v);

export interface ExpectedEvent {
  name: string;
  data?: Record<string, unknown>;
}

/** One row of a table-driven API test: the request, the answer, and the events it must fire. */
export interface ApiCase {
  name: string;
  method: string;
  path: Lazy<string>;
  body?: Lazy<unknown>;
  status: number;
  /** The exact `data` of a success, keys in order. */
  data?: Lazy<unknown>;
  /** Fields the `data` of a success must have. */
  dataMatches?: Lazy<Record<string, unknown>>;
  code?: string;
  /** A `details[].path` the failure must name. */
  detailPath?: string;
  message?: RegExp;
  /** Exactly the events the request must append, in order; omitted = not checked. */
  events?: Lazy<ExpectedEvent[]>;
  /** Runs on success before events are checked (e.g. to keep a created id that the events name). */
  onSuccess?: (data: any) => void;
}

/** Sends the case's request to the real daemon, checks answer and events, and returns `data`. */
export async function runCase(d: TestDaemon, c: ApiCase): Promise<any> {
  const before = await d.daemon.app.events.lastId();
  const res = await d.api(c.method, resolve(c.path), { body: resolve(c.body) });
  expect(res.status, JSON.stringify(res.body)).toBe(c.status);
  if (c.status < 400) {
    expect(res.body.ok).toBe(true);
    c.onSuccess?.(res.body.data);
    if ('data' in c) {
      const data = resolve(c.data);
      expect(res.body.data).toEqual(data);
      if (data && typeof data === 'object') expect(Object.keys(res.body.data)).toEqual(Object.keys(data));
    }
    if (c.dataMatches) expect(res.body.data).toMatchObject(resolve(c.dataMatches));
  } else {
    expect(res.body).toMatchObject({ ok: false, code: c.code });
    expect(typeof res.body.error).toBe('string');
    if (c.detailPath) expect(res.body.details.map((x: { path: string }) => x.path)).toContain(c.detailPath);
  }
  if (c.message) expect(res.body.error).toMatch(c.message);
  if (c.events) {
    const expected = resolve(c.events);
    const fired = await d.daemon.app.events.since(before, 1000);
    expect(fired.map((e) => e.name)).toEqual(expected.map((e) => e.name));
    expected.forEach((e, i) => e.data && expect(fired[i]!.data).toEqual(e.data));
  }
  return res.body.data;
}
