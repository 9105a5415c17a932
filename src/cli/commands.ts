import type { Command } from 'commander';

// The command tree, loaded lazily: `svc tasks ls` imports the tasks group and nothing else, so a
// client command never loads the daemon (SQLite, the keychain, the file watcher, YAML). A new
// group is one line here; its module exports a function that builds its commander Command.

export interface CommandEntry {
  name: string;
  /** One line for `svc --help`, shown without loading the group. */
  summary: string;
  load(): Promise<Command>;
}

export const COMMANDS: CommandEntry[] = [
  { name: 'init', summary: 'Write a starter project.json here', load: async () => (await import('./system/command.js')).initCommand() },
  { name: 'serve', summary: 'Run the daemon for this project (--detach for the background)', load: async () => (await import('./system/serve-command.js')).serveCommand() },
  { name: 'stop', summary: 'Stop the daemon and wait until it has exited', load: async () => (await import('./system/serve-command.js')).stopCommand() },
  { name: 'restart', summary: 'Stop the daemon and start it again in the background', load: async () => (await import('./system/serve-command.js')).restartCommand() },
  { name: 'status', summary: 'Show whether the daemon runs, and its pid, port, uptime and version', load: async () => (await import('./system/command.js')).statusCommand() },
  { name: 'service', summary: 'Run the daemon as a user service (systemd --user, launchd): install, uninstall, status, logs', load: async () => (await import('./system/service-command.js')).serviceCommand() },
  { name: 'logs', summary: "Print the daemon's log, readable (-f to follow)", load: async () => (await import('./system/logs-command.js')).logsCommand() },
  { name: 'state', summary: "Export the daemon's state to a file, or import one into a new state (SQLite to PostgreSQL)", load: async () => (await import('./system/state-command.js')).stateCommand() },
  { name: 'doctor', summary: 'Check the setup and say how to fix what is wrong', load: async () => (await import('./system/doctor.js')).doctorCommand() },
  { name: 'open', summary: 'Open the web board in the browser (a one-time login link; --logout-all signs every session out)', load: async () => (await import('../resources/board/command.js')).openCommand() },
  { name: 'agents', summary: 'Manage agents', load: async () => (await import('../resources/agents/command.js')).agentsCommand() },
  { name: 'teams', summary: 'Manage teams of agents', load: async () => (await import('../resources/teams/command.js')).teamsCommand() },
  { name: 'skills', summary: 'Manage skills and assign them to agents', load: async () => (await import('../resources/skills/command.js')).skillsCommand() },
  { name: 'tasks', summary: 'Manage the task board', load: async () => (await import('../resources/tasks/command.js')).tasksCommand() },
  { name: 'runs', summary: "Runs of agents' CLIs on tasks: list, follow logs, diffs, cancel", load: async () => (await import('../resources/runs/command.js')).runsCommand() },
  { name: 'usage', summary: "Tokens and cost of agents' runs: today, this week, this month (with budgets), or per agent, task, mission or day", load: async () => (await import('../resources/runs/command.js')).usageCommand() },
  { name: 'budgets', summary: "Budgets of the agents' runs: show them, or set them from a file", load: async () => (await import('../resources/budgets/command.js')).budgetsCommand() },
  { name: 'missions', summary: 'Plans of tasks: create, follow and steer missions', load: async () => (await import('../resources/missions/command.js')).missionsCommand() },
  { name: 'playbooks', summary: 'Reusable mission templates with parameters', load: async () => (await import('../resources/playbooks/command.js')).playbooksCommand() },
  { name: 'routines', summary: 'Work that starts by itself: on a cron schedule or when an event happens', load: async () => (await import('../resources/routines/command.js')).routinesCommand() },
  { name: 'vault', summary: 'Per-agent credentials, sealed at rest', load: async () => (await import('../resources/vault/command.js')).vaultCommand() },
  { name: 'approvals', summary: 'Human decisions that gate work', load: async () => (await import('../resources/approvals/command.js')).approvalsCommand() },
  { name: 'webhooks', summary: 'Signed HTTP deliveries of events, with a delivery log (and `listen` to receive them here)', load: async () => (await import('../resources/webhooks/command.js')).webhooksCommand() },
  { name: 'db', summary: 'Application databases: schemas, batches, scoped SQL, migrations', load: async () => (await import('../resources/data/command.js')).dbCommand() },
  { name: 'notify', summary: 'Desktop notifications when a run needs you (attention:needed): run, install as a service, test', load: async () => (await import('../resources/notify/command.js')).notifyCommand() },
  { name: 'events', summary: 'Watch the live event stream, or list the events there are', load: async () => (await import('./events-command.js')).eventsCommand() },
  { name: 'mcp', summary: 'MCP server on stdio for agent tools, forwarding to the daemon (--print-config for HTTP)', load: async () => (await import('./mcp-command.js')).mcpCommand() },
  { name: 'chat', summary: 'Talk to an agent or the orchestrator (OpenAI-compatible, streamed)', load: async () => (await import('../resources/chat/command.js')).chatCommand() },
  { name: 'auth', summary: 'Model providers: keys, cooldowns and billing status', load: async () => (await import('../resources/providers/command.js')).authCommand() },
  { name: 'openapi', summary: "Print the daemon's OpenAPI 3.1 document", load: async () => (await import('./system/command.js')).openapiCommand() },
  { name: 'completion', summary: 'Print a shell completion script (bash, zsh or fish)', load: async () => (await import('./completion.js')).completionCommand() },
];
