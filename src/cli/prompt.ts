import { createInterface } from 'node:readline';
import { UsageError } from './context.js';
import { io } from './io.js';

// Reading secret values without echo, so they need not go through shell history or the screen.

/** One value typed at a TTY in raw mode: nothing is echoed; Enter ends it, Ctrl-C cancels. */
function readHidden(prompt: string): Promise<string> {
  const { stdin, stderr } = io();
  stderr.write(prompt);
  return new Promise((resolve, reject) => {
    let value = '';
    const finish = (err?: Error) => {
      stdin.off('data', onData);
      stdin.setRawMode?.(false);
      stdin.pause();
      stderr.write('\n');
      if (err) reject(err);
      else resolve(value);
    };
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return finish();
        if (ch === '\u0003') return finish(new UsageError('cancelled'));
        if (ch === '\u0004') return value ? undefined : finish(new UsageError('cancelled'));
        if (ch === '\u007f' || ch === '\b') value = [...value].slice(0, -1).join('');
        else if (ch >= ' ') value += ch;
      }
    };
    stdin.setRawMode?.(true);
    stdin.resume();
    stdin.on('data', onData);
  });
}

/**
 * Asks for each named value: hidden prompts on a TTY, else one line of stdin per name, in order
 * (`printf '%s\n' "$PASS" | svc vault set ...`).
 */
export async function promptValues(names: string[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  if (!names.length) return out;
  if (io().interactive && io().stdin.isTTY) {
    for (const n of names) out[n] = await readHidden(`${n}: `);
    return out;
  }
  const rl = createInterface({ input: io().stdin, terminal: false, crlfDelay: Infinity });
  const lines = rl[Symbol.asyncIterator]();
  try {
    for (const n of names) {
      const next = await lines.next();
      if (next.done) throw new UsageError(`no value for ${n}: stdin ended (give one line per value, in the order of the keys)`);
      out[n] = next.value;
    }
  } finally {
    rl.close();
  }
  return out;
}
