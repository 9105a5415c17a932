import { createInterface } from 'node:readline';
import { Cancelled, UsageError } from './context.js';
import { io } from './io.js';
import { err, style } from './output.js';

/**
 * Asks before a destructive command. --yes answers for the user; on a TTY the user is asked (only
 * "y" or "yes" proceeds, anything else cancels: exit 1, said plainly, not as an error); without a
 * TTY and without --yes the command refuses (exit 2) rather than wait for an answer that cannot
 * come, or proceed silently.
 */
export async function confirm(question: string, yes: boolean, command: string): Promise<void> {
  if (yes) return;
  const { interactive, stdin } = io();
  if (!interactive) {
    throw new UsageError(`${question.replace(/\?$/, '')}: refusing without confirmation (no terminal to ask on)`, `add --yes to \`${command}\` to proceed`);
  }
  err(`${question} ${style.dim('[y/N]')} `);
  const rl = createInterface({ input: stdin, terminal: false });
  const answer = await new Promise<string>((resolve) => {
    rl.once('line', resolve);
    rl.once('close', () => resolve(''));
  });
  rl.close();
  if (!/^y(es)?$/i.test(answer.trim())) throw new Cancelled('cancelled; nothing was changed');
}
