import { Command, Option } from 'commander';
import { fail } from './action.js';
import { io } from './io.js';
import { err, out } from './output.js';
import { NoDaemonError, projectRoot, UsageError, type GlobalOptions } from './context.js';
import { loadConfig } from '../config/load.js';
import { readLocalKey, runningDaemon, statePaths } from '../state-dir.js';
import { runStdioBridge } from '../tools/stdio.js';

const CLIENTS = ['claude', 'codex', 'cursor', 'gemini'] as const;
type ClientName = (typeof CLIENTS)[number];

/** The variable the printed snippets read the key from: the one the CLI already honours. */
export const KEY_ENV = 'SERVICE_API_KEY';

/** Each client's configuration for the daemon's MCP endpoint, over HTTP with the key from KEY_ENV. */
export function clientConfig(client: ClientName, mcpUrl: string): { file: string; text: string } {
  const json = (v: unknown) => JSON.stringify(v, null, 2) + '\n';
  switch (client) {
    case 'claude':
      return { file: '.mcp.json (project root)', text: json({ mcpServers: { svc: { type: 'http', url: mcpUrl, headers: { Authorization: `Bearer \${${KEY_ENV}}` } } } }) };
    case 'codex':
      return { file: '~/.codex/config.toml (or .codex/config.toml in a trusted project)', text: `[mcp_servers.svc]\nurl = "${mcpUrl}"\nbearer_token_env_var = "${KEY_ENV}"\n` };
    case 'cursor':
      return { file: '.cursor/mcp.json', text: json({ mcpServers: { svc: { url: mcpUrl, headers: { Authorization: `Bearer \${env:${KEY_ENV}}` } } } }) };
    case 'gemini':
      return { file: '.gemini/settings.json', text: json({ mcpServers: { svc: { httpUrl: mcpUrl, headers: { Authorization: `Bearer \${${KEY_ENV}}` } } } }) };
  }
}

const isLoopback = (url: string): boolean => {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
};

/** The daemon's URL: --url / SVC_URL, the running daemon, else where project.json says it listens. */
function daemonUrl(opts: GlobalOptions, root: string | null, mustRun: boolean): string {
  const explicit = opts.url || io().env.SVC_URL || undefined;
  if (explicit) return explicit.replace(/\/+$/, '');
  if (!root) throw new NoDaemonError('no project.json here or in any parent directory.\nhint: run `svc init` to create one, or pass --project DIR or --url URL.');
  const info = runningDaemon(root);
  if (info) return info.url;
  if (mustRun) throw new NoDaemonError(`no svc daemon is running for the project in ${root}.\nhint: start it with \`svc serve\`; \`svc mcp\` forwards to it.`);
  const loaded = loadConfig(root);
  const server: { host: string; port: number; tls?: unknown } = loaded.ok ? loaded.config.server : { host: '127.0.0.1', port: 7420 };
  const host = server.host.includes(':') ? `[${server.host}]` : server.host;
  return `${server.tls ? 'https' : 'http'}://${host}:${server.port}`;
}

export function mcpCommand(): Command {
  return new Command('mcp')
    .description("MCP server on stdio for agent tools (Claude Code, Codex, Cursor, Gemini CLI), forwarding to this project's daemon")
    .addOption(new Option('--print-config <client>', "print the client's config snippet for the daemon's HTTP endpoint instead").choices([...CLIENTS]))
    .addHelpText('after', '\nExamples:\n  claude mcp add svc -- svc mcp\n  svc mcp --print-config cursor > .cursor/mcp.json\n')
    .action(async function (this: Command, o: { printConfig?: ClientName }) {
      const opts = this.optsWithGlobals<GlobalOptions>();
      try {
        const root = projectRoot(opts);
        if (o.printConfig) {
          const url = daemonUrl(opts, root, false);
          const { file, text } = clientConfig(o.printConfig, `${url}/mcp`);
          out(text);
          const keyFile = root ? statePaths(root).localKey : '.svc/local.key';
          err(`# ${o.printConfig}: put this in ${file}; set ${KEY_ENV} where the client runs, e.g. export ${KEY_ENV}="$(cat ${keyFile})"\n`);
          return;
        }
        if (opts.json) throw new UsageError('--json does not apply to `svc mcp` (stdout carries the MCP protocol)');
        const url = daemonUrl(opts, root, true);
        let apiKey = opts.apiKey || io().env[KEY_ENV] || undefined;
        // The project's local key goes only to its own daemon, or to an explicit loopback URL.
        if (!apiKey && root && isLoopback(url)) apiKey = readLocalKey(root);
        err(`svc mcp: forwarding to ${url}/mcp\n`);
        await runStdioBridge({
          url,
          apiKey,
          warn: (line) => err(line + '\n'),
          relocate: () => (root && !opts.url && !io().env.SVC_URL ? (runningDaemon(root)?.url ?? null) : null),
        });
      } catch (err) {
        fail(err, false);
      }
    });
}
