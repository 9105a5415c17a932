import { projectEnv } from '../config/env-file.js';
import { formatIssues, loadConfig } from '../config/load.js';
import { exposureIssues } from '../kernel/exposure.js';
import type { Part } from '../kernel/parts.js';
import { readTlsPair } from '../kernel/tls.js';
import type { DaemonContext } from './context.js';

/** project.json, the settings that complete the environment, and whether the address may be listened on. */
export const configPart: Part<DaemonContext> = {
  name: 'config',
  start: (ctx) => {
    const { opts, root } = ctx;
    const loaded = loadConfig(root);
    if (!loaded.ok) throw new Error(`project.json is invalid: ${formatIssues(loaded.issues)}`);
    ctx.config = loaded.config;
    ctx.configWarnings = loaded.warnings;
    // The project's private settings file adds the URLs and the vault key the environment lacks, so
    // a daemon started from any shell (svc restart, a service) runs with the same ones.
    ctx.settings = projectEnv(root, ctx.config, opts.env ?? process.env);
    ctx.env = ctx.settings.env;
    // project.json's own host is checked by its schema; --host is checked here the same way.
    const host = opts.host ?? ctx.config.server.host;
    const exposure = exposureIssues(host, ctx.config.server);
    if (exposure.length) throw new Error(`refusing to listen on ${host}: ${exposure.map((i) => i.message).join('; ')}`);
    if (ctx.config.server.tls) ctx.tlsPair = readTlsPair(root, ctx.config.server.tls);
  },
};
