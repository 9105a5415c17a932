import { Command } from 'commander';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { action, fail, localAction } from '../action.js';
import { cliContext, projectRoot, UsageError, type GlobalOptions } from '../context.js';
import { formatDuration, relativeTime } from '../../lib/human.js';
import { io } from '../io.js';
import { emit, err, keyValues, out, printJson, style } from '../output.js';
import { CONFIG_FILE } from '../../config/find.js';
import { STATE_DIR } from '../../state-dir.js';
import type { z } from 'zod';
import type { StatusOut } from '../../resources/system/routes.js';

export function initCommand(): Command {
  return new Command('init')
    .description('Write a starter project.json here (and ignore .svc/ in .gitignore)')
    .option('--name <name>', 'project name (default: the directory name)')
    .action(
      localAction(async (_g, o: { name?: string }) => {
        const dir = resolve(io().cwd);
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
        out(`wrote ${file}\nnext: svc serve (or svc serve --detach)\n`);
      }),
    );
}

export function statusCommand(): Command {
  return new Command('status').description('Show whether the daemon runs, and its pid, port, uptime and version, and whether its user service is installed').action(async function (this: Command) {
    const globals = this.optsWithGlobals<GlobalOptions>();
    const root = projectRoot(globals);
    // Asked alongside the daemon, bounded: a stuck service manager never holds `svc status` up.
    const serviceModule = import('./service-command.js');
    const service = root ? serviceModule.then((m) => m.serviceSummary(root)) : Promise.resolve(null);
    try {
      const ctx = cliContext(this);
      const s = await ctx.client.get<z.output<typeof StatusOut>>('/api/v1/status');
      const svc = await service;
      const { describeService } = await serviceModule;
      emit(ctx.json, { ...s, service: svc && { name: svc.name, installed: svc.installed, running: svc.running } }, () =>
        keyValues({
          status: 'running',
          project: s.name,
          url: ctx.client.url,
          version: s.version,
          pid: s.pid,
          uptime: formatDuration(s.uptimeSeconds * 1000),
          started: `${relativeTime(s.startedAt)} (${new Date(s.startedAt).toLocaleString()})`,
          root: s.root,
          ...(svc ? { service: describeService(svc) } : {}),
        }),
      );
    } catch (e) {
      fail(e, Boolean(globals.json), this);
      // A daemon that is down while its service is installed: the service is where to look.
      const svc = await service;
      if (svc?.installed && !globals.json) err(`${style.dim('service:')} ${(await serviceModule).describeService(svc)}; see \`svc service logs\`\n`);
    }
  });
}

export function openapiCommand(): Command {
  return new Command('openapi').description("Print the daemon's OpenAPI 3.1 document").action(
    action(async (ctx) => {
      printJson(await ctx.client.raw('/openapi.json'));
    }),
  );
}
