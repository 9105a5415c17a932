import type { CommandEntry } from '../kernel/resource.js';
import { RESOURCES } from '../resources/index.js';

// The command tree, loaded lazily: `svc tasks ls` imports the tasks group and nothing else, so a
// client command never loads the daemon (SQLite, the keychain, the file watcher, YAML). A
// resource's groups are its descriptor's `commands`; the CLI's own come after them.

const CLI_COMMANDS: CommandEntry[] = [
  { name: 'completion', summary: 'Print a shell completion script (bash, zsh or fish)', load: async () => (await import('./completion.js')).completionCommand() },
];

export const COMMANDS: readonly CommandEntry[] = [...RESOURCES.flatMap((r) => r.commands ?? []), ...CLI_COMMANDS];
