import { describe, expect, it } from 'vitest';
import { redact, redactValue } from '../../src/lib/redact.js';

describe('redact', () => {
  it('takes out a secret that contains another whole, in either order of the list', () => {
    for (const secrets of [
      ['abcd', 'abcdEXTRA'],
      ['abcdEXTRA', 'abcd'],
    ]) {
      expect(redact('key abcdEXTRA and abcd.', secrets)).toBe('key [REDACTED] and [REDACTED].');
    }
    // Nested in the middle, and a secret that overlaps another without containing it.
    expect(redact('<xxabcdyy>', ['abcd', 'xxabcdyy'])).toBe('<[REDACTED]>');
    expect(redact('<abcdEFGH>', ['abcdEF', 'cdEFGH'])).toBe('<[REDACTED]>');
  });

  it('takes out every occurrence, overlapping ones included', () => {
    expect(redact('s3cret, s3cret and s3cret', ['s3cret'])).toBe('[REDACTED], [REDACTED] and [REDACTED]');
    expect(redact('aaaaa', ['aaaa'])).toBe('[REDACTED]');
    expect(redact('abcdabcd', ['abcd'])).toBe('[REDACTED][REDACTED]');
  });

  it('takes out the JSON-escaped form of a secret with a quote, a backslash or a newline', () => {
    const secrets = ['pa"ss', 'back\\slash', 'two\nlines', 'tab\tand\u0001'];
    const json = JSON.stringify({ a: 'x pa"ss y', b: ['back\\slash'], c: 'two\nlines!', d: 'tab\tand\u0001' });
    const out = redact(json, secrets);
    expect(JSON.parse(out)).toEqual({ a: 'x [REDACTED] y', b: ['[REDACTED]'], c: '[REDACTED]!', d: '[REDACTED]' });
    // The raw form too, in the same call.
    expect(redact('raw pa"ss and two\nlines', secrets)).toBe('raw [REDACTED] and [REDACTED]');
  });

  it('ignores secrets shorter than 4 characters and leaves text without secrets as it was', () => {
    expect(redact('the cat and abc', ['cat', 'abc', '', 'a"'])).toBe('the cat and abc');
    expect(redact('nothing here', ['s3cret'])).toBe('nothing here');
    expect(redact('', ['s3cret'])).toBe('');
  });
});

describe('redactValue', () => {
  it('redacts every string of a structure, keys too, JSON text held in a string included', () => {
    const secrets = ['ghp_token42', 'pa"ss'];
    const messages = [
      { role: 'user', content: 'use ghp_token42 please' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'login', arguments: JSON.stringify({ password: 'pa"ss' }) } }] },
      { role: 'tool', content: [{ type: 'text', text: 'ok' }], extra: { ghp_token42: 1 } },
    ];
    const out = redactValue(messages, secrets);
    expect(out).toEqual([
      { role: 'user', content: 'use [REDACTED] please' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'login', arguments: '{"password":"[REDACTED]"}' } }] },
      { role: 'tool', content: [{ type: 'text', text: 'ok' }], extra: { '[REDACTED]': 1 } },
    ]);
    expect(messages[0]!.content).toBe('use ghp_token42 please'); // a copy: the caller's value is untouched
  });

  it('never cuts through JSON syntax, as redacting the serialized text would', () => {
    // A newline before "abcd" reads `\nabcd` in JSON text, and `"user"` is JSON's own text too.
    const secrets = ['nabcd', '"user"'];
    const messages = [{ role: 'user', content: 'line\nabcd' }];
    expect(() => JSON.parse(redact(JSON.stringify(messages), secrets))).toThrow();
    expect(JSON.parse(JSON.stringify(redactValue(messages, secrets)))).toEqual(messages);
  });
});
