import { createHash } from 'node:crypto';
import { basename, join } from 'node:path';
import { UsageError } from '../context.js';
import { STATE_DIR } from '../../state-dir.js';

// What `svc service install` writes: a systemd --user unit (Linux) or a launchd agent (macOS) that
// runs `svc serve` for one project (or, for `svc notify install`, `svc notify run`: a role). Pure
// text from absolute paths: a service manager starts it with a minimal environment, so nothing may
// depend on the shell's PATH or working directory.

/** What a project's service runs, and the words for it: the daemon, or another svc command (notify). */
export interface ServiceRole {
  /** svc's arguments after `--project DIR`. */
  args: string[];
  /** The command group that installs and removes it (`svc service`), named in its file and hints. */
  command: string;
  /** What runs, for the unit's Description: `svc daemon`. */
  what: string;
  /** What stops when it is removed: `the daemon`. */
  noun: string;
  /** Put before the project's slug in the service's names, so a project's services differ ('' for the daemon). */
  prefix: string;
  /** The launchd agent's output file, in .svc/logs (launchd has no journal). */
  logFile: string;
  /** The second line `install` prints (how it restarts, where to look). */
  installed: string;
  /** How to do without a user service manager. */
  withoutService: string;
}

export const DAEMON_SERVICE: ServiceRole = {
  args: ['serve'],
  command: 'svc service',
  what: 'svc daemon',
  noun: 'the daemon',
  prefix: '',
  logFile: 'service.out',
  installed: 'it restarts when it fails, not after `svc stop` · status: svc service status · logs: svc service logs -f',
  withoutService: 'or run the daemon without a service: `svc serve --detach` (until it stops or the machine restarts)',
};

export interface ServiceSpec {
  /** The project directory (absolute). */
  project: string;
  /** The program (absolute): node, or the single executable, as process.execPath at install time. */
  node: string;
  /** svc's bin/svc (absolute), node's first argument; absent for the single executable. */
  script?: string;
  /** Variables the daemon needs from the installing shell (PATH, HOME…); never secrets: the file is readable. */
  env: Record<string, string>;
  /** What it runs (default: the daemon). */
  role?: ServiceRole;
}

/** The names of a project's service: one per project directory and role, so several projects each have their own. */
export function serviceNames(project: string, role: ServiceRole = DAEMON_SERVICE): { unit: string; label: string } {
  const slug =
    basename(project)
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 24)
      .replace(/-+$/, '') || 'project';
  const hash = createHash('sha256').update(project).digest('hex').slice(0, 8);
  return { unit: `svc-${role.prefix}${slug}-${hash}.service`, label: `local.svc.${role.prefix}${slug}-${hash}` };
}

/** Where the launchd agent's stdout and stderr go (launchd has no journal). */
export const launchdLogFile = (project: string, role: ServiceRole = DAEMON_SERVICE): string => join(project, STATE_DIR, 'logs', role.logFile);

// A newline would end the unit's line (or the plist's string) early and let a path write settings
// of its own; no other control character belongs in a path either.
function checkText(what: string, value: string): void {
  if (/[\x00-\x1f\x7f]/.test(value)) throw new UsageError(`the ${what} (${JSON.stringify(value)}) holds a control character, which a service file cannot carry`);
}

/** systemd expands %-specifiers in almost every setting; %% is a literal %. */
const specifiers = (s: string): string => s.replace(/%/g, '%%');

/** Words that need no quotes (and hold no % or $ to escape). */
const PLAIN = /^[A-Za-z0-9_.,:+=@/-]+$/;

/** One argument of ExecStart: quoted and C-escaped when it must be, with % and $ (variable expansion) doubled. */
const execArg = (s: string): string => (PLAIN.test(s) ? s : `"${specifiers(s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')).replace(/\$/g, '$$$$')}"`);

/**
 * ExecStart's executable is not unescaped like its arguments: systemd refuses quotes and
 * backslashes in it and takes $ literally, so only % is escaped and the rest is refused.
 */
function execPath(what: string, s: string): string {
  if (/["'\\]/.test(s)) throw new UsageError(`the ${what} (${s}) holds a quote or a backslash, which systemd refuses in the program it starts`, 'install node in a directory without them');
  return PLAIN.test(s) ? s : `"${specifiers(s)}"`;
}

/** A bare path setting (WorkingDirectory=): no unquoting, but the line's end whitespace is trimmed and a final \ continues it. */
function barePath(what: string, s: string): string {
  if (/[\s\\]$/.test(s)) throw new UsageError(`the ${what} (${JSON.stringify(s)}) ends in a space or a backslash, which a systemd unit cannot carry`);
  return specifiers(s);
}

const envAssignment = (k: string, v: string): string => `"${specifiers(`${k}=${v}`.replace(/\\/g, '\\\\').replace(/"/g, '\\"'))}"`;

const scriptArg = (spec: ServiceSpec): string[] => (spec.script === undefined ? [] : [spec.script]);

function check(spec: ServiceSpec): void {
  checkText('project directory', spec.project);
  checkText('node path', spec.node);
  if (spec.script !== undefined) checkText('svc script path', spec.script);
  for (const [k, v] of Object.entries(spec.env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw new UsageError(`${k} is not a name an environment variable can have in a service file`);
    checkText(`value of ${k}`, v);
  }
}

const roleOf = (spec: ServiceSpec): ServiceRole => spec.role ?? DAEMON_SERVICE;

export function renderSystemdUnit(spec: ServiceSpec): string {
  check(spec);
  const env = Object.entries(spec.env);
  const role = roleOf(spec);
  return [
    `# Written by \`${role.command} install\` for the project in ${spec.project}.`,
    `# Remove it with \`${role.command} uninstall\` (stops ${role.noun}, disables and deletes this file).`,
    '[Unit]',
    `Description=${role.what} for ${specifiers(spec.project)}`,
    // A daemon that cannot start (its port taken, a bad project.json) is given up on, not retried forever.
    'StartLimitIntervalSec=60',
    'StartLimitBurst=5',
    '',
    '[Service]',
    'Type=simple',
    `WorkingDirectory=${barePath('project directory', spec.project)}`,
    ...(env.length ? [`Environment=${env.map(([k, v]) => envAssignment(k, v)).join(' ')}`] : []),
    `ExecStart=${execPath('node path', spec.node)} ${[...scriptArg(spec), '--project', spec.project, ...role.args].map(execArg).join(' ')}`,
    // A crash or a failed start is retried; `svc stop` (exit 0) and `systemctl --user stop` are not.
    'Restart=on-failure',
    'RestartSec=2',
    '',
    '[Install]',
    'WantedBy=default.target',
    '',
  ].join('\n');
}

const xml = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
const xmlString = (s: string): string => `<string>${xml(s)}</string>`;

export function renderLaunchdPlist(spec: ServiceSpec, label: string): string {
  check(spec);
  const role = roleOf(spec);
  const log = xmlString(launchdLogFile(spec.project, role));
  const env = Object.entries(spec.env);
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
    `<!-- Written by \`${role.command} install\`; remove it with \`${role.command} uninstall\`. -->`,
    '<plist version="1.0">',
    '<dict>',
    `  <key>Label</key>${xmlString(label)}`,
    '  <key>ProgramArguments</key>',
    '  <array>',
    ...[spec.node, ...scriptArg(spec), '--project', spec.project, ...role.args].map((a) => `    ${xmlString(a)}`),
    '  </array>',
    `  <key>WorkingDirectory</key>${xmlString(spec.project)}`,
    ...(env.length ? ['  <key>EnvironmentVariables</key>', '  <dict>', ...env.map(([k, v]) => `    <key>${xml(k)}</key>${xmlString(v)}`), '  </dict>'] : []),
    '  <key>RunAtLoad</key><true/>',
    // Restarted when it exits with an error or is killed; not after a clean stop (exit 0).
    '  <key>KeepAlive</key>',
    '  <dict>',
    '    <key>SuccessfulExit</key><false/>',
    '  </dict>',
    `  <key>StandardOutPath</key>${log}`,
    `  <key>StandardErrorPath</key>${log}`,
    '</dict>',
    '</plist>',
    '',
  ].join('\n');
}
