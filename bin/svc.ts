import { Command, CommanderError } from 'commander';
import { EXIT } from '../src/cli/context.js';
import { eventsCommand } from '../src/events/command.js';
import { packageVersion } from '../src/lib/version.js';
import { agentsCommand } from '../src/resources/agents/command.js';
import { approvalsCommand } from '../src/resources/approvals/command.js';
import { dbCommand } from '../src/resources/data/command.js';
import { missionsCommand } from '../src/resources/missions/command.js';
import { playbooksCommand } from '../src/resources/playbooks/command.js';
import { skillsCommand } from '../src/resources/skills/command.js';
import { initCommand, openapiCommand, serveCommand, statusCommand, stopCommand } from '../src/resources/system/command.js';
import { tasksCommand } from '../src/resources/tasks/command.js';
import { teamsCommand } from '../src/resources/teams/command.js';
import { vaultCommand } from '../src/resources/vault/command.js';

const program = new Command('svc')
  .description('Control plane for teams of AI coding agents. Every command but init and serve talks to the daemon over HTTP.')
  .version(packageVersion())
  .option('--project <dir>', 'project directory (default: nearest project.json upwards, or SVC_PROJECT)')
  .option('--url <url>', 'daemon URL (default: from .svc/daemon.json, or SVC_URL)')
  .option('--api-key <key>', 'API key (default: SERVICE_API_KEY, then .svc/local.key)')
  .option('--json', 'print JSON instead of tables')
  .showHelpAfterError('(run `svc --help` for the commands, or `svc <command> --help`)')
  .exitOverride();

for (const cmd of [initCommand(), serveCommand(), statusCommand(), stopCommand(), agentsCommand(), teamsCommand(), skillsCommand(), tasksCommand(), missionsCommand(), playbooksCommand(), vaultCommand(), approvalsCommand(), dbCommand(), eventsCommand(), openapiCommand()]) {
  program.addCommand(cmd);
}

// Usage errors exit 2 everywhere (commander's default is 1, which we keep for API errors).
function exitOverrideAll(cmd: Command): void {
  cmd.exitOverride();
  cmd.commands.forEach(exitOverrideAll);
}
exitOverrideAll(program);

// `svc openapi | head`: the reader leaving early is not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    const benign = ['commander.helpDisplayed', 'commander.version', 'commander.help'].includes(err.code);
    process.exitCode = benign ? EXIT.ok : EXIT.usage;
  } else {
    process.stderr.write(`error: ${(err as Error).message}\n`);
    process.exitCode = EXIT.api;
  }
}
