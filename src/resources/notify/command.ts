import { Command, Option } from 'commander';
import { action, fail } from '../../cli/action.js';
import { CliError, cliContext, NoDaemonError, UsageError, type CliContext, type GlobalOptions } from '../../cli/context.js';
import { io } from '../../cli/io.js';
import { emit, err } from '../../cli/output.js';
import { seg, UnreachableError } from '../../client/client.js';
import { pidAlive } from '../../lib/proc.js';
import { runTool, serviceSubcommands, type Runner } from '../../cli/system/service-command.js';
import type { ServiceRole } from '../../cli/system/service-unit.js';
import { listen, type Delivery } from '../webhooks/listen-command.js';
import type { Webhook } from '../webhooks/schema.js';
import { commandLine, defaultNotifier, notifierCommand, NOTIFIERS, showNotification, type Note, type NotifierName } from '../../cli/desktop.js';

// `svc notify`: attention:needed events as desktop notifications. `run` is `svc webhooks listen`
// with a handler: a receiver on a loopback port, a webhook for attention:needed pointed at it, and
// the notifier run (execFile, never a shell) for each verified delivery. `install` makes it a user
// service next to the daemon's (svc service), which waits for the daemon rather than fail.

/** The webhook's description starts with this and the receiver's pid: a receiver that died leaves one behind. */
const NAME = 'svc notify';
const PID = /^svc notify \(pid (\d+)\)/;
const receiverPid = (h: Webhook): number => Number(PID.exec(h.description ?? '')?.[1]) || 0;

export const NOTIFY_SERVICE: ServiceRole = {
  args: ['notify', 'run', '--wait'],
  command: 'svc notify',
  what: 'svc desktop notifications',
  noun: 'the desktop notifications',
  prefix: 'notify-',
  logFile: 'notify.out',
  installed: 'it waits for the daemon and restarts when it fails · try it: svc notify test · status: svc notify status · logs: svc notify logs -f',
  withoutService: 'or run `svc notify run` in a terminal of your desktop session',
};

/** Between two looks for a daemon that is not up yet (`--wait`). */
const WAIT_MS = 5_000;

const HINTS: Record<NotifierName, string> = {
  'notify-send': 'install libnotify (Debian, Ubuntu: `sudo apt install libnotify-bin`; Fedora: `sudo dnf install libnotify`)',
  osascript: 'osascript comes with macOS; is /usr/bin on PATH?',
};

function notifierOf(o: { notifier?: NotifierName }): NotifierName {
  const name = o.notifier ?? defaultNotifier();
  if (!name) throw new UsageError(`svc notify knows no desktop notifier on ${process.platform}`, 'route attention:needed to a webhook of your own instead (docs/notifications.md)');
  return name;
}

async function requireNotifier(name: NotifierName): Promise<void> {
  const { env, cwd } = io();
  // Loaded here: its module brings the runtimes' schemas (zod), which `svc notify test` has no use for.
  const { findBinary } = await import('../runs/drivers/detect.js');
  const found = await findBinary(name, { PATH: env.PATH, cwd });
  if (found.path === null) throw new CliError(found.error, HINTS[name]);
}

/** The CLI context once the daemon answers; with `wait`, looked for again every few seconds until then. */
async function connect(cmd: Command, wait: boolean): Promise<CliContext> {
  let said = false;
  for (;;) {
    try {
      const ctx = cliContext(cmd);
      await ctx.client.get('/v1/webhooks');
      return ctx;
    } catch (e) {
      if (!wait || !(e instanceof NoDaemonError || e instanceof UnreachableError)) throw e;
      if (!said) err(`waiting for the daemon (${e.message}); looking again every ${WAIT_MS / 1000} s\n`);
      said = true;
      await new Promise((r) => setTimeout(r, WAIT_MS));
    }
  }
}

/** Webhooks of `svc notify` receivers whose process is gone (killed, or the machine restarted): removed, or the daemon would keep retrying them. */
async function removeStale(ctx: CliContext): Promise<void> {
  const hooks = await ctx.client.get<Webhook[]>('/v1/webhooks');
  for (const h of hooks) {
    const pid = receiverPid(h);
    if (!pid || pid === process.pid || pidAlive(pid)) continue;
    await ctx.client.delete(`/v1/webhooks/${seg(h.id)}`);
    err(`removed webhook ${h.id} of a svc notify that is gone (pid ${pid})\n`);
  }
}

/** The notification a delivery asks for, or null (an event it does not show). */
export function noteOf(d: Delivery, daemonUrl: string): Note | null {
  let body: { event?: unknown; data?: Record<string, unknown> };
  try {
    body = JSON.parse(d.body.toString('utf8'));
  } catch {
    return null;
  }
  const data = body.data ?? {};
  const text = (v: unknown) => (typeof v === 'string' ? v : '');
  if (body.event === 'webhook:test') return { title: 'svc notify works', body: 'What needs you (approvals, budget stops, paused runs, failed tasks) shows here.', urgent: false };
  if (body.event !== 'attention:needed') return null;
  const link = text(data.link);
  return {
    title: text(data.title) || 'svc needs you',
    body: [text(data.message), link ? daemonUrl + link : ''].filter(Boolean).join('\n'),
    // A run waits for the answer: the notification stays until it is seen.
    urgent: data.reason === 'permission' || data.reason === 'approval',
  };
}

interface RunOptions {
  notifier?: NotifierName;
  print?: boolean;
  wait?: boolean;
}

async function run(cmd: Command, o: RunOptions): Promise<void> {
  const name = notifierOf(o);
  if (!o.print) await requireNotifier(name);
  const ctx = await connect(cmd, Boolean(o.wait));
  await removeStale(ctx);
  const { env } = io();
  await listen(ctx, {
    events: ['attention:needed'],
    name: NAME,
    handle: async (d) => {
      const note = noteOf(d, ctx.client.url);
      if (!note) return { status: 200, note: ' (nothing to show)' };
      const c = notifierCommand(name, note);
      if (o.print) return { status: 200, note: ` → ${commandLine(c)}` };
      // A failure is answered 502: the daemon tries the delivery again, and its log shows why.
      const failed = await showNotification(c, env);
      return failed ? { status: 502, note: ` → ${failed}` } : { status: 200, note: ` → ${name}` };
    },
  });
}

export function notifyCommand(runner: Runner = runTool): Command {
  const cmd = new Command('notify').description('Desktop notifications of what needs you (attention:needed): in the foreground, or as a user service');

  cmd
    .command('run')
    .description('Show each attention:needed event as a desktop notification (notify-send on Linux, osascript on macOS) until Ctrl-C')
    .addOption(new Option('--notifier <name>', "the program that shows them (default: this platform's)").choices(NOTIFIERS))
    .option('--print', 'print the command each notification would run, and run nothing')
    .option('--wait', 'wait for the daemon while it is not running (the service does)')
    .action(async function (this: Command, o: RunOptions) {
      try {
        await run(this, o);
      } catch (e) {
        fail(e, Boolean(this.optsWithGlobals<GlobalOptions>().json), this);
      }
    });

  cmd
    .command('test')
    .description('Send a test event to every running `svc notify`: a notification should show')
    .action(
      action(async (ctx) => {
        const hooks = (await ctx.client.get<Webhook[]>('/v1/webhooks')).filter((h) => receiverPid(h) > 0 && pidAlive(receiverPid(h)));
        if (!hooks.length) throw new CliError('no `svc notify` is running for this daemon', 'start one with `svc notify run`, or install it: `svc notify install`');
        for (const h of hooks) await ctx.client.post(`/v1/webhooks/${seg(h.id)}/test`);
        emit(ctx.json, { sent: hooks.map((h) => h.id) }, () => `sent a test to ${hooks.length === 1 ? 'svc notify' : `${hooks.length} svc notify receivers`}; a notification should show now\n`);
      }),
    );

  for (const sub of serviceSubcommands(runner, NOTIFY_SERVICE, async () => requireNotifier(notifierOf({})))) cmd.addCommand(sub);
  return cmd;
}
