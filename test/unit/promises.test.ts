import { describe, expect, it } from 'vitest';
// @ts-expect-error a plain .mjs script, without types
import { checkPromises } from '../../scripts/check-promises.mjs';

// The state answers asynchronously: a store call without `await` is a write that may land after
// its transaction, or a failure nobody hears. typescript-eslint's no-floating-promises and
// no-misused-promises, on the TypeScript compiler (scripts/check-promises.mjs), over src/.
describe('promises in src/', () => {
  it('every one is awaited, kept, handled or marked void, and none is given where a function returning void is expected', () => {
    expect(checkPromises() as string[]).toEqual([]);
  }, 120_000);
});
