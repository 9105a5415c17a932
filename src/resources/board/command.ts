import { spawn } from 'node:child_process';
import { Command } from 'commander';
import { action } from '../../cli/action.js';
import { io } from '../../cli/io.js';
import { emit } from '../../cli/output.js';
import { systemClock } from '../../lib/clock.js';

interface Login {
  path: string;
  expiresAt: string;
  readOnly: boolean;
}

/**
 * How to open a URL in the default browser here, or why not: no display (a server, an SSH
 * session) means nobody would see the window, so the URL is printed instead.
 */
export function browserCommand(env: Record<string, string | undefined>, platform: NodeJS.Platform = process.platform): { cmd: string; args: string[] } | { why: string } {
  if (platform === 'darwin') return env.SSH_CONNECTION || env.SSH_TTY ? { why: 'this is an SSH session' } : { cmd: 'open', args: [] };
  if (platform === 'win32') return { cmd: 'cmd', args: ['/c', 'start', '""'] };
  if (env.SSH_CONNECTION || env.SSH_TTY) return { why: 'this is an SSH session' };
  if (!env.DISPLAY && !env.WAYLAND_DISPLAY) return { why: 'there is no display (DISPLAY and WAYLAND_DISPLAY are unset)' };
  return { cmd: 'xdg-open', args: [] };
}

/** Starts the browser, detached; resolves false when it could not be started. */
function launch(cmd: string, args: string[], url: string): Promise<boolean> {
  return new Promise((resolve) => {
    try {
      const child = spawn(cmd, [...args, url], { detached: true, stdio: 'ignore' });
      child.once('error', () => resolve(false));
      child.once('spawn', () => {
        child.unref();
        resolve(true);
      });
    } catch {
      resolve(false);
    }
  });
}

export function openCommand(): Command {
  return new Command('open')
    .description('Open the board in the default browser with a one-time login link (printed instead when no browser can be opened)')
    .option('--no-browser', 'print the link instead of opening a browser')
    .option('--read-only', 'sign in to a board that can only look, whatever the key may do')
    .option('--logout-all', 'sign every board session out (and void unused links) instead')
    .action(
      action(async (ctx, o: { browser: boolean; readOnly?: boolean; logoutAll?: boolean }) => {
        if (o.logoutAll) {
          const r = await ctx.client.delete<{ revoked: number }>('/api/v1/board/sessions');
          emit(ctx.json, r, () => `signed out ${r.revoked} board session${r.revoked === 1 ? '' : 's'}\n`);
          return;
        }
        const login = await ctx.client.post<Login>('/api/v1/board/logins', o.readOnly ? { readOnly: true } : {});
        const url = ctx.client.url + login.path;
        const how = o.browser ? browserCommand(io().env) : { why: '--no-browser was given' };
        const opened = 'cmd' in how ? await launch(how.cmd, how.args, url) : false;
        const why = 'why' in how ? how.why : opened ? null : 'the browser could not be started';
        emit(ctx.json, { url, expiresAt: login.expiresAt, readOnly: login.readOnly, opened }, () =>
          opened
            ? `opened the board in your browser${login.readOnly ? ' (read-only)' : ''}\n`
            : `open this link in a browser within ${Math.round((Date.parse(login.expiresAt) - systemClock.now()) / 1000)} s (it signs in once${login.readOnly ? ', read-only' : ''}; ${why}):\n${url}\n`,
        );
      }),
    );
}
