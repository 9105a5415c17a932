import { Command } from 'commander';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { action, localAction, parseIntOption } from '../../cli/action.js';
import { projectRoot, UsageError, type GlobalOptions } from '../../cli/context.js';
import { emit, keyValues, printJson } from '../../cli/output.js';
import { UnreachableError } from '../../client/client.js';
import { CONFIG_FILE } from '../../config/load.js';
import { startDaemon } from '../../daemon.js';
import { runningDaemon, STATE_DIR } from '../../state-dir.js';
import type { z } from 'zod';
import type { StatusOut } from './routes.js';

export function initCommand(): Command {
  return new Command('init')
    .description('Write a starter project.json here (and ignore .svc/ in .gitignore)')
    .option('--name <name>', 'project name (default: the directory name)')
    .action(
      localAction(async (o: { name?: string }) => {
        const dir = resolve(process.cwd());
        const file = join(dir, CONFIG_FILE);
        if (existsSync(file)) throw new UsageError(`${file} already exists`);
        const starter = {
          name: o.name ?? basename(dir),
          server: { host: '127.0.0.1', port: 7420 },
          apiKeys: [],
          skillsDir: 'skills',
        };
        writeFileSync(file, JSON.stringify(starter, null, 2) + '\n');
        const gi = join(dir, '.gitignore');
        const current = existsSync(gi) ? readFileSync(gi, 'utf8') : '';
        const ignored = current.split(/\r?\n/).some((l) => ['.svc', '.svc/', '/.svc', '/.svc/'].includes(l.trim()));
        if (!ignored) writeFileSync(gi, current + (current && !current.endsWith('\n') ? '\n' : '') + `${STATE_DIR}/\n`);
        process.stdout.write(`wrote ${file}\nnext: svc serve\n`);
      }),
    );
}

export function serveCommand(): Command {
  return new Command('serve')
    .description('Run the daemon in the foreground for this project')
    .option('--host <host>', 'address to listen on (default: project.json server.host, 127.0.0.1)')
    .option('--port <port>', 'port to listen on; 0 picks a free one (default: project.json server.port, 7420)', parseIntOption('--port'))
    .action(async function (this: Command, o: { host?: string; port?: number }) {
      const root = projectRoot(this.optsWithGlobals<GlobalOptions>());
      if (!root) {
        process.stderr.write(`error: no ${CONFIG_FILE} here or in any parent directory.\nhint: run \`svc init\` to create one, or pass --project DIR.\n`);
        process.exitCode = 2;
        return;
      }
      const running = runningDaemon(root);
      if (running && running.pid !== process.pid) {
        process.stderr.write(`error: svc is already running for this project (pid ${running.pid}, ${running.url}).\nhint: \`svc stop\` first.\n`);
        process.exitCode = 1;
        return;
      }
      let daemon;
      try {
        daemon = await startDaemon({ root, host: o.host, port: o.port });
      } catch (err) {
        process.stderr.write(`error: ${(err as Error).message}\n`);
        process.exitCode = 1;
        return;
      }
      const stop = () => void daemon.close();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      await daemon.closed;
      process.exit(0);
    });
}

export function statusCommand(): Command {
  return new Command('status').description('Show whether the daemon runs, and its pid, port, uptime and version').action(
    action(async (ctx) => {
      const s = await ctx.client.get<z.output<typeof StatusOut>>('/api/v1/status');
      emit(ctx.json, s, () => keyValues({ status: 'running', url: ctx.client.url, ...s }));
    }),
  );
}

export function stopCommand(): Command {
  return new Command('stop').description('Stop the daemon gracefully').action(
    action(async (ctx) => {
      await ctx.client.post('/api/v1/shutdown');
      // Wait until it no longer answers, so `svc stop && svc serve` works.
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline) {
        try {
          await ctx.client.get('/healthz');
        } catch (err) {
          if (err instanceof UnreachableError) break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      emit(ctx.json, { stopped: true }, () => 'stopped\n');
    }),
  );
}

export function openapiCommand(): Command {
  return new Command('openapi').description("Print the daemon's OpenAPI 3.1 document").action(
    action(async (ctx) => {
      printJson(await ctx.client.raw('/openapi.json'));
    }),
  );
}
