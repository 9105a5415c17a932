import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { eventually, startTestDaemon, type TestDaemon } from './harness.js';

// Polling for a key to start or stop working answers 401s, and 401s count towards the failed-auth
// limiter (429 after 20 a minute). Each test has its own daemon, so its 401s can never push the
// test next to it over the limit, whatever order they run in or however long one polls.
let d: TestDaemon;
const base = { name: 'reload' };
async function status(key: string): Promise<number> {
  const s = (await d.api('GET', '/api/v1/agents', { key })).status;
  if (s === 429) throw new Error('rate-limited: this test made more than 20 failed authentications in a minute');
  return s;
}

beforeEach(async () => {
  d = await startTestDaemon({ config: base });
});
afterEach(async () => {
  await d.close();
});

describe('project.json hot reload', () => {
  it('a key added to project.json works without a restart', async () => {
    expect(await status('new-key-0123456789ab')).toBe(401);
    d.writeConfig({ ...base, apiKeys: ['new-key-0123456789ab'] });
    await eventually(async () => (await status('new-key-0123456789ab')) === 200, 1000);
  });

  it('a removed key stops working', async () => {
    d.writeConfig({ ...base, apiKeys: ['new-key-0123456789ab'] });
    await eventually(async () => (await status('new-key-0123456789ab')) === 200, 1000);
    d.writeConfig({ ...base, apiKeys: [] });
    await eventually(async () => (await status('new-key-0123456789ab')) === 401, 1000);
  });

  it('an invalid field is logged with its path and the last good config keeps serving', async () => {
    d.writeConfig({ ...base, apiKeys: ['kept-key-0123456789ab'] });
    await eventually(async () => (await status('kept-key-0123456789ab')) === 200, 1000);
    d.logs.length = 0;
    d.writeConfig({ ...base, apiKeys: [], server: { port: 'not-a-port' } });
    await eventually(() => d.logs.some((l) => l.includes('change refused')), 1000);
    const line = JSON.parse(d.logs.find((l) => l.includes('change refused'))!);
    expect(line.issues).toEqual([expect.objectContaining({ path: 'server.port' })]);
    expect(await status('kept-key-0123456789ab')).toBe(200);
  });

  it('broken JSON is logged and the last good config keeps serving, without quoting the file', async () => {
    d.writeConfig({ ...base, apiKeys: ['kept-key-0123456789ab'] });
    await eventually(async () => (await status('kept-key-0123456789ab')) === 200, 1000);
    d.logs.length = 0;
    d.writeConfig('{ "name": "reload", "apiKeys": ["kept-key-0123456789ab", sk-LEAKME-9876543210] }');
    await eventually(() => d.logs.some((l) => l.includes('change refused')), 1000);
    expect(d.logs.find((l) => l.includes('change refused'))).toContain('not valid JSON');
    expect(await status('kept-key-0123456789ab')).toBe(200);
    // V8's parse error quotes the text around the fault: here, a key. None of it may be repeated.
    expect(d.logs.join('\n')).not.toContain('LEAKME');
    expect(JSON.stringify(await d.daemon.app.events.since(0, 1000))).not.toContain('LEAKME');
    const events = (await d.daemon.app.events.since(0, 1000)).map((e) => e.name);
    expect(events).toContain('config:invalid');
    expect(events).toContain('config:reloaded');
  });

  it('warns about unknown top-level keys but applies the rest', async () => {
    d.logs.length = 0;
    d.writeConfig({ ...base, apiKeys: ['third-key-0123456789a'], futureFeature: true });
    await eventually(async () => (await status('third-key-0123456789a')) === 200, 1000);
    expect(d.logs.some((l) => l.includes('unknown top-level key \\"futureFeature\\"'))).toBe(true);
    expect(readFileSync(join(d.root, 'project.json'), 'utf8')).toContain('futureFeature');
  });
});
