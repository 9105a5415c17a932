import { Command } from 'commander';
import { closeSync, existsSync, openSync, readFileSync, writeSync } from 'node:fs';
import { resolve } from 'node:path';
import { localAction } from '../action.js';
import { CliError, projectRoot, UsageError } from '../context.js';
import { io } from '../io.js';
import { emit, out } from '../output.js';
import { projectEnv } from '../../config/env-file.js';
import { formatIssues, loadConfig } from '../../config/load.js';
import type { DB } from '../../db/open.js';
import { systemClock } from '../../lib/clock.js';
import { runningDaemon, statePaths } from '../../state-dir.js';

// `svc state export` / `svc state import`: the way a project's state moves from SQLite to
// PostgreSQL (or back, or to a new server). Both read project.json's state settings and the
// environment as the daemon does, and talk to the state directly: there may be no daemon at all.

interface Opened {
  db: DB;
  where: string;
  shared: boolean;
}

/** The state modules (better-sqlite3 among them), loaded only when a state command runs: completion and help list this command without them. */
const stateModules = async () => {
  const [{ stateUrl }, { STATE_MIGRATIONS, STATE_TABLES }, { openDatabase, openPostgresState }, { maskUrl }, transfer, { presentDaemons }] = await Promise.all([
    import('../../config/state.js'),
    import('../../state-schema.js'),
    import('../../db/open.js'),
    import('../../db/pg/url.js'),
    import('../../db/transfer.js'),
    import('../../resources/system/presence.js'),
  ]);
  return { stateUrl, STATE_MIGRATIONS, STATE_TABLES, openDatabase, openPostgresState, maskUrl, transfer, presentDaemons };
};

async function openState(root: string): Promise<Opened> {
  const { stateUrl, STATE_MIGRATIONS, openDatabase, openPostgresState, maskUrl } = await stateModules();
  const loaded = loadConfig(root);
  if (!loaded.ok) throw new UsageError(`project.json is invalid: ${formatIssues(loaded.issues)}`);
  // As the daemon would: the environment, and the project's settings file for what it lacks.
  let env: NodeJS.ProcessEnv;
  try {
    env = projectEnv(root, loaded.config, io().env as NodeJS.ProcessEnv).env;
  } catch (err) {
    throw new CliError((err as Error).message, 'see docs/deploy.md, "The settings file"');
  }
  const url = stateUrl(loaded.config, env);
  if (url) return { db: await openPostgresState({ url, statementTimeoutMs: loaded.config.state.statementTimeoutMs }, STATE_MIGRATIONS), where: `PostgreSQL at ${maskUrl(url)}`, shared: true };
  const file = statePaths(root).db;
  if (!existsSync(file)) throw new CliError(`${file} does not exist: this project has no state yet`);
  return { db: await openDatabase(file, STATE_MIGRATIONS), where: file, shared: false };
}

function rootOf(g: Parameters<Parameters<typeof localAction>[0]>[0]): string {
  const root = projectRoot(g);
  if (!root) throw new UsageError('no project.json here or in any parent directory (or pass --project DIR)');
  return root;
}

export function stateCommand(): Command {
  const cmd = new Command('state').description("Move the daemon's state between providers: export it to a file, import it into a new state");
  cmd
    .command('export')
    .description("Write this project's state (the provider project.json names) to a file, one JSON line per row; safe while the daemon runs")
    .argument('<file>', 'the file to write (- for standard output); it holds sealed vault entries and webhook secrets, never a key')
    .action(
      localAction(async (g, file: string) => {
        const root = rootOf(g);
        const { db, where } = await openState(root);
        const {
          transfer: { exportState },
          STATE_TABLES,
        } = await stateModules();
        try {
          const toStdout = file === '-';
          const fd = toStdout ? null : openSync(resolve(io().cwd, file), 'wx', 0o600);
          let header;
          try {
            header = await exportState(db, STATE_TABLES, (line) => (fd === null ? io().stdout.write(line + '\n') : writeSync(fd, line + '\n')), systemClock);
          } finally {
            if (fd !== null) closeSync(fd);
          }
          if (!toStdout) {
            const rows = Object.values(header.counts).reduce((a, b) => a + b, 0);
            emit(Boolean(g.json), header, () => `exported ${rows} rows from ${where} (schema ${header.schema}, last event ${header.lastEventId}) to ${file}\n`);
            io().stderr.write("the vault entries in it open only with this project's vault key: the importing daemon needs the same key (SVC_VAULT_KEY; see docs/deploy.md)\n");
          }
        } finally {
          await db.close();
        }
      }),
    );
  cmd
    .command('import')
    .description('Load an export into the state project.json names, which must be new (empty); no daemon may run on it')
    .argument('<file>', 'a file written by `svc state export`')
    .action(
      localAction(async (g, file: string) => {
        const root = rootOf(g);
        const text = readFileSync(resolve(io().cwd, file), 'utf8');
        const { db, where, shared } = await openState(root);
        const {
          transfer: { importState },
          STATE_TABLES,
          presentDaemons,
        } = await stateModules();
        try {
          if (!shared && runningDaemon(root)) throw new CliError('a daemon runs on this project: stop it first (svc stop)');
          if (shared) {
            const n = (await presentDaemons({ db })).length;
            if (n > 0) throw new CliError(`${n} daemon(s) run on ${where}: stop them first`);
          }
          let counts: Record<string, number>;
          try {
            counts = await importState(db, STATE_TABLES, text.split('\n'));
          } catch (err) {
            throw new CliError(`${file}: ${(err as Error).message}; nothing was imported`);
          }
          const rows = Object.values(counts).reduce((a, b) => a + b, 0);
          emit(Boolean(g.json), counts, () => `imported ${rows} rows into ${where}\n`);
          if (!g.json) out('start the daemon with the vault key the exported project used (SVC_VAULT_KEY); see docs/deploy.md\n');
        } finally {
          await db.close();
        }
      }),
    );
  return cmd;
}
