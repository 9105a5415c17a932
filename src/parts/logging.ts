import { OutageLog } from '../db/pg/outage.js';
import { DEFAULT_LOG_FILE, LogFile } from '../kernel/log-file.js';
import { createLogger, lineBuffer } from '../kernel/log.js';
import type { Part } from '../kernel/parts.js';
import { ensurePrivateDir } from '../lib/files.js';
import { removeDaemonInfo } from '../state-dir.js';
import type { DaemonContext } from './context.js';

/** SVC_LOG_MAX_BYTES sizes daemon.log before it rotates (default 10 MiB; 3 rotated files are kept). */
function logFileOptions(env: NodeJS.ProcessEnv): typeof DEFAULT_LOG_FILE {
  const n = Number(env.SVC_LOG_MAX_BYTES);
  return Number.isInteger(n) && n >= 1024 ? { ...DEFAULT_LOG_FILE, maxBytes: n } : DEFAULT_LOG_FILE;
}

/**
 * The log: lines go out in batches every 25 ms, written off the event loop to stdout and the file,
 * never as a synchronous write per request; closing hands on the last ones. `console` takes
 * stdout's place when given (svc serve on a terminal prints the batches readable).
 */
export const loggingPart: Part<DaemonContext> = {
  name: 'logging',
  start: (ctx) => {
    const { opts, paths, env } = ctx;
    ensurePrivateDir(paths.dir);
    const logFile = opts.log ? null : new LogFile({ dir: paths.logs }, logFileOptions(env));
    const stdout = opts.log || opts.console ? null : new LogFile({ fd: 1 }, { ...DEFAULT_LOG_FILE, maxQueuedBytes: 1024 * 1024 });
    const lines = logFile
      ? lineBuffer((chunk) => {
          if (opts.console) opts.console(chunk.toString('utf8'));
          else stdout!.write(chunk);
          logFile.write(chunk);
        })
      : null;
    const log = opts.log ?? createLogger((line) => lines!.push(line));
    ctx.log = log;
    for (const w of ctx.configWarnings) log.warn('project.json', { warning: w });
    if (ctx.settings.file) log.info('settings file', { file: ctx.settings.file, names: ctx.settings.names });
    // A PostgreSQL server (the state's, the databases') that goes away: one warning, one line when it is back.
    ctx.outages = new OutageLog(log);
    // A start that fails logs why before this closes: the last lines are flushed, then both targets close.
    return async () => {
      lines?.flush();
      await Promise.all([logFile?.close(), stdout?.close()]);
    };
  },
};

/**
 * .svc/daemon.json, through which clients find the daemon: written last, once every part is up
 * (announce), and removed once every part after this one has closed, so that `svc serve` and
 * `svc status` see this daemon for as long as it holds its state.
 */
export const daemonInfoPart: Part<DaemonContext> = {
  name: 'daemon info',
  start: (ctx) => () => {
    removeDaemonInfo(ctx.root, process.pid);
    if (ctx.announced) ctx.log.info('stopped');
  },
};
