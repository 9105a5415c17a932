import { chmodSync } from 'node:fs';
import { resolve } from 'node:path';
import { LEADER, Services, type App } from './app.js';
import { buildKeys, keySecrets, keySetFingerprint } from './config/keys.js';
import { projectEnv } from './config/env-file.js';
import { formatIssues, loadConfig } from './config/load.js';
import type { ProjectConfig } from './config/schema.js';
import { watchConfig } from './config/watch.js';
import { STATE_MIGRATIONS } from './db/migrations.js';
import { openDatabase, openPostgresState, stmt, type DB } from './db/open.js';
import { electLeader, soleLeader } from './db/pg/leader.js';
import { listen } from './db/pg/listen.js';
import { OutageLog } from './db/pg/outage.js';
import { maskUrl } from './db/pg/url.js';
import { stateUrl } from './config/state.js';
import { PRUNER, startPruner } from './db/prune.js';
import { EVENTS_CHANNEL, EventLog } from './events/outbox.js';
import { DEFAULT_SSE_LIMITS, SseHub, type SseLimits } from './events/sse.js';
import type { KeyEntry } from './kernel/auth.js';
import type { ConnectionLimits } from './kernel/connections.js';
import { DEFAULT_LOG_FILE, LogFile } from './kernel/log-file.js';
import { createLogger, errorFields, lineBuffer, type Logger } from './kernel/log.js';
import { exposureIssues } from './kernel/exposure.js';
import { createHttpServer, type HttpServer } from './kernel/server.js';
import { readTlsPair, tlsPaths, watchTls, type TlsPair } from './kernel/tls.js';
import { inExe } from './lib/exe.js';
import { ensurePrivateDir } from './lib/files.js';
import { systemClock, type Clock } from './lib/clock.js';
import { uuidv4 } from './lib/ids.js';
import { packageVersion } from './lib/version.js';
import { ROUTES } from './routes.js';
import { agentsInTeam } from './resources/agents/service.js';
import { wireApprovals } from './resources/approvals/service.js';
import { startPermissionSweeper } from './resources/approvals/permissions.js';
import { startApprovalTimeouts } from './resources/approvals/timeouts.js';
import { DATA_BACKEND, reconcile } from './resources/data/service.js';
import { DATA_RUNNER, removeOrphanFiles, SqliteBackend } from './resources/data/sqlite-backend.js';
import type { DatabaseState } from './resources/data/backend.js';
import { PgBackend } from './resources/data/pg/backend.js';
import { sharedCredentials } from './resources/data/shared-credentials.js';
import { checkServer, dataUrl } from './resources/data/pg/connect.js';
import { allIds } from './resources/data/store.js';
import { DataRunner } from './resources/data/sql-runner.js';
import { reapOrphanWorkers, WorkerRecords } from './resources/data/orphans.js';
import { wireMissions } from './resources/missions/service.js';
import { raiseAttention } from './resources/notify/attention.js';
import { RUNTIME_CHECK } from './resources/agents/service.js';
import { pruneRoutineWork } from './resources/routines/service.js';
import { startRoutines } from './resources/routines/worker.js';
import { RunKeys } from './resources/runs/keys.js';
import { Runner } from './resources/runs/runner.js';
import { runnerId } from './resources/runs/runner-id.js';
import { checkRuntime, RUNNER, waitingRunsByProvider } from './resources/runs/service.js';
import { SKILL_INDEX, SkillIndex, skillsDirOf, startSkills } from './resources/skills/live-index.js';
import { TASK_HOOKS, TaskHooks } from './resources/tasks/hooks.js';
import { LEASE_REAPER, startLeaseReaper } from './resources/tasks/lease-reaper.js';
import { TEAM_MEMBERS } from './resources/teams/service.js';
import { RECENT_FAILURES, RecentFailures } from './resources/providers/failures.js';
import { providerKeys, WAITING_RUNS } from './resources/providers/service.js';
import { openVault } from './resources/vault/keys.js';
import { secretValues } from './resources/vault/service.js';
import { enqueueDeliveries, pruneDeliveries, webhookSecrets, WEBHOOKS } from './resources/webhooks/service.js';
import { DeliveryWorker, type WorkerOptions } from './resources/webhooks/worker.js';
import { VAULT } from './resources/vault/live.js';
import { SECRETS } from './secrets.js';
import { ensureLocalKey, removeDaemonInfo, statePaths, writeDaemonInfo } from './state-dir.js';
import { MCP_DOOR, startMcp } from './tools/mcp.js';
import { startPresence } from './resources/system/presence.js';
import { SETUP } from './resources/system/setup.js';
import { boardFiles, embeddedBoardFiles, type AssetSource } from './resources/board/assets.js';
import { BOARD, BOARD_SESSIONS } from './resources/board/routes.js';
import { sessionOf } from './resources/board/sessions.js';

export interface DaemonOptions {
  root: string;
  /** Override project.json's server.host / server.port (the CLI's --host / --port). 0 = ephemeral. */
  host?: string;
  port?: number;
  /** Environment to read SERVICE_API_KEY and friends from (tests pass their own). */
  env?: NodeJS.ProcessEnv;
  /** Where log lines go; default stdout plus .svc/logs/daemon.log. */
  log?: Logger;
  /**
   * Where the default logger's lines go besides the log file, in batches of whole lines (default:
   * stdout, written off the event loop; `svc serve` on a terminal makes them readable).
   */
  console?: (lines: string) => void;
  /** Validate every response against its schema (on in tests). */
  checkResponses?: boolean;
  /** Time for timers and deadlines (approval timeouts); tests pass a fake clock. Default: the system's. */
  clock?: Clock;
  /** SSE heartbeat and backlog limits (tests shorten them). */
  sse?: Partial<SseLimits>;
  /** Webhook delivery seams (tests: a resolver, a jitter source). */
  webhooks?: WorkerOptions;
  /** Connection cap and timeouts (tests shorten them). */
  connections?: Partial<ConnectionLimits>;
  /** Between two retention passes (default PRUNE_EVERY_MS); tests that call pass() themselves set it long, so no pass of the daemon's own runs between theirs. */
  pruneEveryMs?: number;
  /**
   * Where the board's static files come from: default, dist/board next to this package's code
   * (resources/board/assets.ts boardFiles()); a single executable passes its embedded files.
   */
  boardAssets?: AssetSource;
}

export interface Daemon {
  app: App;
  host: string;
  port: number;
  url: string;
  /** The HTTP layer: connection counts and the failed-auth limiter. */
  http: HttpServer;
  /** Resolves once the daemon has shut down, whoever asked. */
  closed: Promise<void>;
  close(): Promise<void>;
}

const SHUTDOWN_GRACE_MS = 5_000;
/**
 * Retention runs in passes this far apart, in batches of PRUNE_BATCH rows: at 1,000 events a
 * second a pass finds ~10,000 rows over the limits, so the state holds at most that much more.
 */
const PRUNE_EVERY_MS = 10_000;
const PRUNE_BATCH = 500;
/** How long the chain of routines that created a task or mission is remembered (docs/routines.md, loops). */
const ROUTINE_WORK_DAYS = 30;
/** On a shared state, other daemons' events are looked for at least this often (notifications come sooner). */
const SHARED_POLL_MS = 1_000;

/** SVC_LOG_MAX_BYTES sizes daemon.log before it rotates (default 10 MiB; 3 rotated files are kept). */
function logFileOptions(env: NodeJS.ProcessEnv): typeof DEFAULT_LOG_FILE {
  const n = Number(env.SVC_LOG_MAX_BYTES);
  return Number.isInteger(n) && n >= 1024 ? { ...DEFAULT_LOG_FILE, maxBytes: n } : DEFAULT_LOG_FILE;
}

/** Wraps a timer or watcher callback: a failure there (thrown, or its promise's) is logged, it must never take the daemon down. */
function guarded<A extends unknown[]>(log: Logger, what: string, fn: (...args: A) => void | Promise<void>): (...args: A) => void {
  const failed = (err: unknown) => log.error(`${what} failed`, errorFields(err));
  return (...args) => {
    try {
      const r = fn(...args);
      if (r instanceof Promise) r.catch(failed);
    } catch (err) {
      failed(err);
    }
  };
}

/** The project's id, kept in the state: daemons starting together on one PostgreSQL state take the first one's. */
async function ensureProjectId(db: DB): Promise<string> {
  const read = async () => ((await stmt(db, "SELECT value FROM meta WHERE key = 'projectId'").get()) as { value: string } | undefined)?.value;
  const found = await read();
  if (found) return found;
  await stmt(db, "INSERT INTO meta (key, value) VALUES ('projectId', ?) ON CONFLICT (key) DO NOTHING").run(uuidv4());
  return (await read())!;
}

export async function startDaemon(opts: DaemonOptions): Promise<Daemon> {
  const root = opts.root;
  const paths = statePaths(root);

  const loaded = loadConfig(root);
  if (!loaded.ok) throw new Error(`project.json is invalid: ${formatIssues(loaded.issues)}`);
  let config: ProjectConfig = loaded.config;
  // The project's private settings file adds the URLs and the vault key the environment lacks, so
  // a daemon started from any shell (svc restart, a service) runs with the same ones.
  const settings = projectEnv(root, config, opts.env ?? process.env);
  const env = settings.env;
  // project.json's own host is checked by its schema; --host is checked here the same way.
  const exposure = exposureIssues(opts.host ?? config.server.host, config.server);
  if (exposure.length) throw new Error(`refusing to listen on ${opts.host ?? config.server.host}: ${exposure.map((i) => i.message).join('; ')}`);
  let tlsPair: TlsPair | undefined;
  if (config.server.tls) tlsPair = readTlsPair(root, config.server.tls);

  ensurePrivateDir(paths.dir);
  // Lines go out in batches every 25 ms, written off the event loop to stdout and the file, never
  // as a synchronous write per request; close() hands on the last ones. `console` takes stdout's
  // place when given (svc serve on a terminal prints the batches readable).
  const logFile = opts.log ? null : new LogFile({ dir: paths.logs }, logFileOptions(env));
  const stdout = opts.log || opts.console ? null : new LogFile({ fd: 1 }, { ...DEFAULT_LOG_FILE, maxQueuedBytes: 1024 * 1024 });
  const lines = logFile
    ? lineBuffer((chunk) => {
        if (opts.console) opts.console(chunk);
        else stdout!.write(chunk);
        logFile.write(chunk);
      })
    : null;
  const log = opts.log ?? createLogger((line) => lines!.push(line));
  for (const w of loaded.warnings) log.warn('project.json', { warning: w });
  if (settings.file) log.info('settings file', { file: settings.file, names: settings.names });
  // A PostgreSQL server (the state's, the databases') that goes away: one warning, one line when it is back.
  const outages = new OutageLog(log);
  const notice = (client: string) => (message: string) => log.debug('PostgreSQL notice', { client, message });

  // A start that fails part-way undoes what it did, newest first: no file, database, watcher or
  // timer is left behind in the process that called it (a test, or an embedding tool).
  const undo: (() => unknown)[] = [];
  // The failure itself is logged before the log closes: flush the last lines, then close both targets.
  undo.push(async () => {
    lines?.flush();
    await Promise.all([logFile?.close(), stdout?.close()]);
  });
  const abort = async (err: unknown): Promise<never> => {
    for (const u of undo.reverse()) await Promise.resolve().then(u).catch(() => undefined);
    throw err;
  };

  let localKey: string;
  let db: DB;
  // With provider postgres the state is shared by every daemon on that database (docs/deploy.md).
  let sharedState: string | null = null;
  try {
    localKey = ensureLocalKey(root);
    // The same floor as keys in project.json: a short shared key is guessable.
    if (env.SERVICE_API_KEY && env.SERVICE_API_KEY.length < 16) throw new Error('SERVICE_API_KEY must be at least 16 characters');
    sharedState = stateUrl(config, env);
    db = sharedState
      ? await openPostgresState({ url: sharedState, statementTimeoutMs: config.state.statementTimeoutMs, outage: outages.reporter(sharedState, 'state'), onNotice: notice('state') }, STATE_MIGRATIONS)
      : await openDatabase(paths.db, STATE_MIGRATIONS);
  } catch (err) {
    return abort(err);
  }
  undo.push(() => db.close());
  if (sharedState) log.info('state on PostgreSQL', { url: maskUrl(sharedState) });
  if (sharedState && config.state.driver !== undefined) log.warn('project.json', { warning: 'state.driver has no effect since svc 1.1 (the state is always reached through `pg`, without blocking); remove it' });
  // The periodic jobs run on one daemon of those sharing a state: the leader (db/pg/leader.ts).
  const leader = sharedState ? electLeader(sharedState, { outage: outages.reporter(sharedState, 'leader'), onError: (err) => log.error('a leadership listener failed', errorFields(err)) }) : soleLeader();
  undo.push(() => leader.close());
  await leader.ready;
  // The keys the API accepts: the configured ones (rebuilt at each reload) and one per live run.
  let configKeys: KeyEntry[] = buildKeys(config, env.SERVICE_API_KEY, localKey);
  let keys: KeyEntry[] = configKeys;
  let streamsOf: SseHub | null = null;
  const runKeys = new RunKeys((revoked) => {
    keys = [...configKeys, ...runKeys.entries()];
    if (revoked) streamsOf?.revoke(new Set(keys.map((k) => k.digest.toString('hex'))));
  });
  for (const suffix of sharedState ? [] : ['', '-wal', '-shm']) {
    try {
      chmodSync(paths.db + suffix, 0o600);
    } catch {
      // -wal/-shm appear on first write
    }
  }
  let projectId: string;
  let events: EventLog;
  try {
    projectId = await ensureProjectId(db);
    // Every event the log writes gets its webhook deliveries in its own transaction, from the first
    // one on: the start-up passes below (approvals and leases that ran out while the daemon was down)
    // write events before the daemon listens, and later writers are many. `app` and the delivery
    // worker exist before anything can emit (openVault writes no events).
    // The sink also raises attention:needed after an event that means a person is needed, in that
    // event's transaction (resources/notify/attention.ts says why); its deliveries come the same way.
    events = await EventLog.open(db, {
      clock: opts.clock ?? systemClock,
      sink: async (e) => {
        await enqueueDeliveries(app, e);
        await raiseAttention(app, e);
      },
    });
  } catch (err) {
    return abort(err);
  }
  const clock = opts.clock ?? systemClock;
  const streams = new SseHub(events, { ...DEFAULT_SSE_LIMITS, ...opts.sse }, () => clock.now());
  streamsOf = streams;
  let vault;
  try {
    const keyFile = config.state.vaultKeyFile;
    vault = await openVault({ db, projectId, env, log, ...(sharedState ? { shared: { keyFile: keyFile ? resolve(root, keyFile) : null } } : {}) });
  } catch (err) {
    return abort(err);
  }

  let listening = { host: opts.host ?? config.server.host, port: opts.port ?? config.server.port };
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  let closing: Promise<void> | undefined;

  const app: App = {
    root,
    stateDir: paths.dir,
    projectId,
    version: packageVersion(),
    startedAt: new Date(),
    db,
    events,
    streams,
    log,
    clock,
    env,
    services: new Services(),
    config: () => config,
    address: () => listening,
    requestShutdown: () => void close(),
  };

  // How the resources meet, per daemon: nothing is registered on import.
  app.services.provide(VAULT, vault);
  app.services.provide(LEADER, leader);
  const setup = app.services.provide(SETUP, { settingsFile: settings.file ? { path: settings.file, names: settings.names } : null, stateUrl: sharedState, dataUrl: null });
  app.services.provide(TEAM_MEMBERS, agentsInTeam);
  app.services.provide(RUNTIME_CHECK, checkRuntime); // an agent's runtime is checked by the runs resource
  app.services.provide(RECENT_FAILURES, new RecentFailures()); // which requests failed lately, where: a provider's failures from a request's
  const taskHooks = app.services.provide(TASK_HOOKS, new TaskHooks());
  wireMissions(taskHooks); // a mission's tasks follow its state; tasks decide its completion
  wireApprovals(taskHooks); // a task waiting for approval leaves only through the decision
  // Every configured secret, for scrubbing an upstream's text: read at each call, so a reload, a
  // new vault entry or a rotated webhook secret counts at once (the local key only this closure holds).
  app.services.provide(SECRETS, async () => [...keySecrets(config, env.SERVICE_API_KEY, localKey), ...providerKeys(app), ...(await secretValues(app)), ...(await webhookSecrets(app))]);

  // Webhooks: delivery rows are written by the event log's sink inside each event's transaction;
  // the worker sends them. Made before anything can write an event, started (below) before the
  // daemon listens so in-flight ones from a crash go first.
  let webhooks: DeliveryWorker;
  try {
    webhooks = await DeliveryWorker.open(app, opts.webhooks);
    app.services.provide(WEBHOOKS, webhooks);
  } catch (err) {
    return abort(err);
  }

  // Background parts that live as long as the daemon, started before it listens so that no request
  // (not even a shutdown) can find them half-started; closed in reverse order.
  const workers: { close(): Promise<void> | void }[] = [];
  const startWorker = (w: { close(): Promise<void> | void }) => {
    workers.push(w);
    undo.push(() => w.close());
  };
  startWorker({ close: () => webhooks.close() });
  try {
    app.services.provide(SKILL_INDEX, new SkillIndex(skillsDirOf(app)));
    startWorker(await startSkills(app));
    startWorker((await startApprovalTimeouts(app)));
    // A run that ends leaves no permission request of its task waiting (a lost one is asked again).
    startWorker(startPermissionSweeper(app));
    // Routines: schedules on the daemon's clock, triggers on the events it hears (missed firings caught up now).
    startWorker((await startRoutines(app)));
    // Claims are leases: release tasks whose holder stopped sending heartbeats (also while we were down).
    startWorker(app.services.provide(LEASE_REAPER, (await startLeaseReaper(app))));
    // The agent tools over MCP (POST /mcp): one SDK Server for every client of this daemon.
    startWorker(app.services.provide(MCP_DOOR, await startMcp(app, { checkOutputs: opts.checkResponses })));
    if (sharedState) {
      // Other daemons' events: PostgreSQL notifies each commit that wrote some, and a poll every
      // second covers a notification lost with a connection. Either way the log reads the table
      // from the last id it published, so every stream hears every event once, in id order.
      let stopped = false;
      const catchUp = guarded(log, "reading other daemons' events", () => (stopped ? undefined : events.catchUp()));
      let queued = false;
      const soon = () => {
        if (queued) return;
        queued = true;
        setImmediate(() => {
          queued = false;
          catchUp();
        });
      };
      // A notification names the log that committed: this daemon's own were published at commit.
      const feed = listen(sharedState, EVENTS_CHANNEL, (writer) => writer !== events.writer && soon(), { outage: outages.reporter(sharedState, 'events'), onNotice: notice('events') });
      const poll = setInterval(catchUp, SHARED_POLL_MS);
      startWorker({ close: () => ((stopped = true), clearInterval(poll), feed.close()) });
    }
    webhooks.start();
    // Retention of events and deliveries, by age and by count, in small steps off the hot path.
    const pruner = startPruner({
      everyMs: opts.pruneEveryMs ?? PRUNE_EVERY_MS,
      batch: PRUNE_BATCH,
      // On a shared state the leader prunes for every daemon.
      active: () => leader.isLeader(),
      steps: [
        {
          name: 'events',
          run: (batch) => {
            const { retentionHours, maxEvents } = config.events;
            return events.prune({ olderThan: new Date(clock.now() - retentionHours * 3_600_000).toISOString(), keep: maxEvents }, batch);
          },
        },
        { name: 'webhook deliveries', run: (batch) => pruneDeliveries(app, batch) },
        { name: 'routine work', run: (batch) => pruneRoutineWork(app, new Date(clock.now() - ROUTINE_WORK_DAYS * 86_400_000).toISOString(), batch) },
      ],
      onError: (step, err) => log.error(`pruning ${step} failed; trying again at the next pass`, errorFields(err)),
      onPruned: (counts) => log.debug('pruned old state', counts),
    });
    startWorker(app.services.provide(PRUNER, pruner));
    if (config.data.provider === 'postgres') {
      // Application databases on a PostgreSQL server: a schema and a login role each (pg/backend.ts).
      const url = dataUrl(config.data.url, env);
      await checkServer(url, 5_000);
      setup.dataUrl = url;
      const pgBackend = new PgBackend({
        url,
        log,
        outage: outages.reporter(url, 'data'),
        statementTimeoutMs: () => config.data.statementTimeoutMs,
        pool: config.data.pool,
        onOpened: guarded(log, 'updating the database registry', (id: string, state: DatabaseState) => reconcile(app, id, state)),
        // Daemons sharing a state share their databases' credentials too, instead of each rotating them.
        ...(sharedState ? { credentials: sharedCredentials(app), stateUrl: sharedState } : {}),
      });
      startWorker(pgBackend);
      await pgBackend.hardenPublic();
      app.services.provide(DATA_BACKEND, pgBackend);
      log.info('application databases on PostgreSQL', { url: maskUrl(url) });
    } else {
    // Application databases: one child process per open database, so that caller SQL can be
    // stopped (killed) at data.statementTimeoutMs without stalling the daemon.
    removeOrphanFiles(paths.data, new Set(await allIds(db)));
    // A worker of a daemon that crashed and could not die with it (stopped, say) would hold its
    // database's write lock: killed by pid and start time before any database is opened again.
    await reapOrphanWorkers(paths.workers, log);
    const runner = new DataRunner({
      log,
      dir: paths.data,
      statementTimeoutMs: () => config.data.statementTimeoutMs,
      maxWorkers: () => config.data.maxWorkers,
      workerMemoryMb: () => config.data.workerMemoryMb,
      records: new WorkerRecords(paths.workers),
      onOpened: guarded(log, 'updating the database registry', (id: string, state: unknown) => reconcile(app, id, state as Parameters<typeof reconcile>[2])),
    });
    startWorker(app.services.provide(DATA_RUNNER, runner));
    app.services.provide(DATA_BACKEND, new SqliteBackend(runner, paths.data));
    }
  } catch (err) {
    return abort(err);
  }

  // The board: its files, and its session cookies as a second way to authenticate.
  app.services.provide(BOARD, { assets: opts.boardAssets ?? (inExe() ? embeddedBoardFiles() : boardFiles()), keys: () => keys });
  const boardSession = (req: import('node:http').IncomingMessage) => sessionOf(db, req, keys, listening.port, clock.now());
  app.services.provide(BOARD_SESSIONS, boardSession);

  // The runner: agents with a runtime get their tasks run here (started below, once listening).
  let daemonUrl = '';
  const runner = config.runner.enabled ? new Runner(app, { id: runnerId(paths.dir), shared: sharedState !== null, url: () => daemonUrl, keys: runKeys }) : null;
  app.services.provide(RUNNER, runner);
  // GET /auth/status says how many runs wait for a paused provider: the runs resource counts them.
  app.services.provide(WAITING_RUNS, waitingRunsByProvider);

  const http = createHttpServer({
    app,
    routes: ROUTES,
    settings: () => config.server,
    keys: () => keys,
    session: boardSession,
    log,
    checkResponses: opts.checkResponses,
    connections: opts.connections,
    tls: tlsPair,
  });

  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(`port ${listening.port} on ${listening.host} is in use; is another svc running? Try --port 0 for any free port.`)
          : err,
      );
    };
    http.server.once('error', onError);
    http.server.listen(listening.port, listening.host, () => {
      http.server.off('error', onError);
      resolve();
    });
  }).catch(abort);
  // After listening, a server error (EMFILE on accept…) is logged, never fatal.
  http.server.on('error', (err) => log.error('http server error', errorFields(err)));
  const addr = http.server.address();
  if (addr && typeof addr === 'object') listening = { host: listening.host, port: addr.port };
  // A wildcard address is not one to connect to: local clients are pointed at loopback.
  const connectHost = listening.host === '0.0.0.0' ? '127.0.0.1' : listening.host === '::' ? '::1' : listening.host;
  const urlHost = connectHost.includes(':') ? `[${connectHost}]` : connectHost;
  const url = `${tlsPair ? 'https' : 'http'}://${urlHost}:${listening.port}`;
  daemonUrl = url;
  const tlsFiles = config.server.tls;
  const tlsWatcher = tlsPair && tlsFiles ? watchTls(root, tlsFiles, http.server as import('node:https').Server, log, tlsPair.fingerprint) : null;

  const watcher = watchConfig(root, guarded(log, 'applying a project.json change', async (result) => {
    if (!result.ok) {
      log.error('project.json change refused; the last good config stays in force', { issues: result.issues });
      await events.write(async () => events.emit('config:invalid', { issues: result.issues }));
      return;
    }
    const before = config.server;
    const dataBefore = config.data;
    config = result.config;
    configKeys = buildKeys(config, env.SERVICE_API_KEY, localKey);
    keys = [...configKeys, ...runKeys.entries()];
    const revoked = streams.revoke(new Set(keys.map((k) => k.digest.toString('hex'))));
    if (revoked) log.info('closed event streams of removed keys', { count: revoked });
    for (const w of result.warnings) log.warn('project.json', { warning: w });
    if (dataBefore.provider !== config.data.provider || dataBefore.url !== config.data.url) {
      log.warn('data.provider and data.url apply at the next restart', { provider: config.data.provider });
    }
    if (JSON.stringify(before.tls) !== JSON.stringify(config.server.tls)) {
      log.warn('server.tls applies at the next restart (a changed certificate file is reloaded at once)', { tls: config.server.tls ?? null });
    }
    if (before.host !== config.server.host || before.port !== config.server.port) {
      log.warn('server.host and server.port apply at the next restart', { host: config.server.host, port: config.server.port });
    }
    log.info('project.json reloaded', { keys: keys.length });
    await events.write(async () => events.emit('config:reloaded', { warnings: result.warnings }));
  }), (err) => log.error('watching project.json failed; edits will not apply until restart', errorFields(err)));
  // An edit made once startDaemon has returned (or `listening` is logged) must not go unseen.
  await watcher.ready;
  await tlsWatcher?.ready;

  async function close(): Promise<void> {
    closing ??= (async () => {
      log.info('shutting down');
      await watcher.close().catch(() => undefined);
      await tlsWatcher?.close().catch(() => undefined);
      streams.closeAll();
      // Runs end before connections are cut: a CLI waiting on svc (a permission request) would
      // otherwise hear its call fail, take it for a refusal and go on, before it is stopped.
      await runner?.close();
      await http.close(SHUTDOWN_GRACE_MS);
      for (const w of workers.reverse()) await Promise.resolve(w.close()).catch(() => undefined);
      await leader.close();
      try {
        // On SQLite the write-ahead log is folded into the file first (SqliteState.close).
        await db.close();
      } catch (err) {
        log.error('closing the state database failed', errorFields(err));
      }
      removeDaemonInfo(root, process.pid);
      log.info('stopped');
      lines?.flush();
      await Promise.all([logFile?.close(), stdout?.close()]);
      resolveClosed();
    })();
    return closing;
  }

  // Clients find the daemon through daemon.json, so it is written only now that start-up is
  // complete, right before the start line: a request that follows it is never logged ahead of it.
  writeDaemonInfo(root, {
    pid: process.pid,
    host: listening.host,
    port: listening.port,
    url,
    // The CLI trusts this certificate when it talks to its own project's daemon.
    ...(tlsFiles && tlsPair ? { ca: tlsPaths(root, tlsFiles).cert } : {}),
    startedAt: app.startedAt.toISOString(),
    version: app.version,
  });
  // On a shared state the others (and svc doctor) see this daemon and the keys it accepts.
  if (sharedState) workers.push((await startPresence(app, url, () => keySetFingerprint(configKeys))));
  log.info('listening', { url, project: config.name, root, version: app.version, ...(tlsPair ? { tls: tlsPair.fingerprint } : {}) });
  // The runner starts once the daemon listens (its runs' CLIs call back on `url`), after the start
  // line; it first reaps what a crashed predecessor left running. Awaited, so that what it says at
  // start (a crashed predecessor's runs taken over, runner:online) is said before this returns;
  // it never throws.
  if (runner) {
    workers.push(runner);
    await runner.start();
  }
  return { app, host: listening.host, port: listening.port, url, http, closed, close };
}
