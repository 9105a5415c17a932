import { describe, expect, it } from 'vitest';
import { startParts, type Part } from '../../src/kernel/parts.js';
import { REQUEST_STEPS } from '../../src/kernel/server.js';

// The daemon is an ordered list of named parts (kernel/parts.ts): started in order, closed in
// reverse, and a part that fails to start closes those started before it.

function recorder() {
  const said: string[] = [];
  const part = (name: string, o: { fails?: boolean; closeFails?: boolean; noClose?: boolean } = {}): Part<string[]> => ({
    name,
    start: async (log) => {
      await Promise.resolve();
      if (o.fails) throw new Error(`${name} cannot start`);
      log.push(`start ${name}`);
      if (o.noClose) return;
      return () => {
        log.push(`close ${name}`);
        if (o.closeFails) throw new Error(`${name} cannot close`);
      };
    },
  });
  return { said, part };
}

describe('startParts', () => {
  it('starts the parts in order and closes them in reverse', async () => {
    const { said, part } = recorder();
    const started = await startParts([part('logging'), part('state'), part('events', { noClose: true }), part('http')], said);
    expect(started.names).toEqual(['logging', 'state', 'events', 'http']);
    await started.close();
    expect(said).toEqual(['start logging', 'start state', 'start events', 'start http', 'close http', 'close state', 'close logging']);
    // Closing twice closes nothing twice.
    await started.close();
    expect(said.filter((s) => s.startsWith('close'))).toHaveLength(3);
  });

  it('a part that fails to start closes the ones started before it, newest first, and throws its error', async () => {
    const { said, part } = recorder();
    const hooks = { closing: (name: string) => said.push(`closing ${name}`), started: (name: string) => said.push(`started ${name}`) };
    await expect(startParts([part('logging'), part('state'), part('vault', { fails: true }), part('http')], said, hooks)).rejects.toThrow('vault cannot start');
    expect(said).toEqual(['start logging', 'started logging', 'start state', 'started state', 'closing state', 'close state', 'closing logging', 'close logging']);
  });

  it('a close that throws is reported and the parts before it are closed all the same', async () => {
    const { said, part } = recorder();
    const failed: string[] = [];
    const started = await startParts([part('logging'), part('state', { closeFails: true }), part('http')], said, { closeFailed: (name, err) => failed.push(`${name}: ${(err as Error).message}`) });
    await started.close();
    expect(said.slice(3)).toEqual(['close http', 'close state', 'close logging']);
    expect(failed).toEqual(['state: state cannot close']);
  });
});

describe('the request pipeline', () => {
  it('is named steps a reader can list, in the order a request meets them', () => {
    expect(REQUEST_STEPS.map((s) => s.name)).toEqual(['guards', 'route', 'auth', 'body', 'validate', 'handle', 'write']);
  });
});
