import { execFile } from 'node:child_process';
import { shellWord } from './api-words.js';
import { truncate } from './output.js';

// A desktop notification: notify-send (Linux, libnotify) or osascript (macOS). The texts come from
// events, which agents' words fill (a task's title, an approval's, an error), so they are only
// ever arguments of execFile, never part of a shell line or of the AppleScript source: osascript
// reads them from its argv. A text that began with "-" could still read as an option, so its first
// character is swapped for a hyphen that is not one (U+2010).

export const NOTIFIERS = ['notify-send', 'osascript'] as const;
export type NotifierName = (typeof NOTIFIERS)[number];

/** A notification: one line of title, a few of body. */
export interface Note {
  title: string;
  body: string;
  /** Stays until dismissed where the desktop allows it (a run waits for an answer). */
  urgent: boolean;
}

export interface NotifierCommand {
  cmd: string;
  args: string[];
}

/** Lengths desktops show without cutting themselves. */
const TITLE_MAX = 100;
const BODY_MAX = 300;

/** The notifier of this platform, or null where there is none. */
export function defaultNotifier(platform: NodeJS.Platform = process.platform): NotifierName | null {
  return platform === 'linux' ? 'notify-send' : platform === 'darwin' ? 'osascript' : null;
}

/** `text` as one argument: no control characters (a NUL would not even pass execFile), bounded, never an option. */
function argument(text: string, max: number, lines: boolean): string {
  const clean = text.replace(lines ? /[\x00-\x09\x0b-\x1f\x7f]/g : /[\x00-\x1f\x7f]/g, ' ').trim();
  return truncate(clean, max).replace(/^-/, '\u2010');
}

export function notifierCommand(name: NotifierName, note: Note): NotifierCommand {
  const title = argument(note.title, TITLE_MAX, false);
  const body = argument(note.body, BODY_MAX, true);
  if (name === 'notify-send') return { cmd: 'notify-send', args: ['--app-name=svc', `--urgency=${note.urgent ? 'critical' : 'normal'}`, '--', title, body] };
  // The script is fixed; the texts are its run handler's arguments.
  return { cmd: 'osascript', args: ['-e', 'on run argv', '-e', 'display notification (item 2 of argv) with title (item 1 of argv)', '-e', 'end run', title, body] };
}

/** A command as a person would type it (for --print). */
export const commandLine = (c: NotifierCommand): string => [c.cmd, ...c.args].map(shellWord).join(' ');

const NOTIFY_TIMEOUT_MS = 10_000;

/** Runs the notifier; resolves with why it failed, or null. */
export function showNotification(c: NotifierCommand, env: Record<string, string | undefined>): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(c.cmd, c.args, { env: env as NodeJS.ProcessEnv, timeout: NOTIFY_TIMEOUT_MS, maxBuffer: 64 * 1024 }, (err, _stdout, stderr) => {
      if (!err) return resolve(null);
      const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: number | string };
      if (e.code === 'ENOENT') return resolve(`${c.cmd} was not found on PATH`);
      if (e.killed) return resolve(`${c.cmd} did not finish within ${NOTIFY_TIMEOUT_MS / 1000} s`);
      resolve(`${c.cmd} exited ${e.code ?? 'on a signal'}${stderr.trim() ? `: ${stderr.trim().split('\n')[0]}` : ''}`);
    });
  });
}
