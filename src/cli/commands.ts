import type { CommandEntry } from '../kernel/resource.js';
import { RESOURCES } from '../resources/index.js';

// The command tree, loaded lazily: `svc tasks ls` imports the tasks group and nothing else, so a
// client command never loads the daemon (SQLite, the keychain, the file watcher, YAML). A
// resource's groups are its descriptor's `commands`. The CLI's own groups (CLI-only code, so no
// descriptor lists them) come first (the daemon's commands, system/) and last (`svc events`,
// `svc mcp`, `svc openapi`, completion).
const CLI_FIRST: CommandEntry[] = [
  { name: 'init', summary: 'Write a starter project.json here', load: async () => (await import('./system/command.js')).initCommand() },
  { name: 'serve', summary: 'Run the daemon for this project (--detach for the background)', load: async () => (await import('./system/serve-command.js')).serveCommand() },
  { name: 'stop', summary: 'Stop the daemon and wait until it has exited', load: async () => (await import('./system/serve-command.js')).stopCommand() },
  { name: 'restart', summary: 'Stop the daemon and start it again in the background', load: async () => (await import('./system/serve-command.js')).restartCommand() },
  { name: 'status', summary: 'Show whether the daemon runs, and its pid, port, uptime and version', load: async () => (await import('./system/command.js')).statusCommand() },
  {
    name: 'service',
    summary: 'Run the daemon as a user service (systemd --user, launchd): install, uninstall, status, logs',
    load: async () => (await import('./system/service-command.js')).serviceCommand(),
  },
  { name: 'logs', summary: "Print the daemon's log, readable (-f to follow)", load: async () => (await import('./system/logs-command.js')).logsCommand() },
  {
    name: 'state',
    summary: "Export the daemon's state to a file, or import one into a new state (SQLite to PostgreSQL)",
    load: async () => (await import('./system/state-command.js')).stateCommand(),
  },
  { name: 'doctor', summary: 'Check the setup and say how to fix what is wrong', load: async () => (await import('./system/doctor.js')).doctorCommand() },
];

const CLI_COMMANDS: CommandEntry[] = [
  { name: 'events', summary: 'Watch the live event stream, or list the events there are', load: async () => (await import('./events-command.js')).eventsCommand() },
  { name: 'mcp', summary: 'MCP server on stdio for agent tools, forwarding to the daemon (--print-config for HTTP)', load: async () => (await import('./mcp-command.js')).mcpCommand() },
  { name: 'openapi', summary: "Print the daemon's OpenAPI 3.1 document", load: async () => (await import('./system/command.js')).openapiCommand() },
  { name: 'completion', summary: 'Print a shell completion script (bash, zsh or fish)', load: async () => (await import('./completion.js')).completionCommand() },
];

export const COMMANDS: readonly CommandEntry[] = [...CLI_FIRST, ...RESOURCES.flatMap((r) => r.commands ?? []), ...CLI_COMMANDS];

/** The endpoints the CLI names by their commands in what it prints (api-words.ts). */
export const ENDPOINT_WORDS = RESOURCES.flatMap((r) => r.endpoints ?? []);
