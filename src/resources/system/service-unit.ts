import { createHash } from 'node:crypto';
import { basename, join } from 'node:path';
import { UsageError } from '../../cli/context.js';
import { STATE_DIR } from '../../state-dir.js';

// What `svc service install` writes: a systemd --user unit (Linux) or a launchd agent (macOS) that
// runs `svc serve` for one project. Pure text from absolute paths: a service manager starts it
// with a minimal environment, so nothing may depend on the shell's PATH or working directory.

export interface ServiceSpec {
  /** The project directory (absolute). */
  project: string;
  /** The program (absolute): node, or the single executable, as process.execPath at install time. */
  node: string;
  /** svc's bin/svc (absolute), node's first argument; absent for the single executable. */
  script?: string;
  /** Variables the daemon needs from the installing shell (PATH, HOME…); never secrets: the file is readable. */
  env: Record<string, string>;
}

/** The names of a project's service: one per project directory, so several projects each have their own. */
export function serviceNames(project: string): { unit: string; label: string } {
  const slug =
    basename(project)
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 24)
      .replace(/-+$/, '') || 'project';
  const hash = createHash('sha256').update(project).digest('hex').slice(0, 8);
  return { unit: `svc-${slug}-${hash}.service`, label: `local.svc.${slug}-${hash}` };
}

/** Where the launchd agent's stdout and stderr go (launchd has no journal). */
export const launchdLogFile = (project: string): string => join(project, STATE_DIR, 'logs', 'service.out');

// A newline would end the unit's line (or the plist's string) early and let a path write settings
// of its own; no other control character belongs in a path either.
function checkText(what: string, value: string): void {
  if (/[\x00-\x1f\x7f]/.test(value)) throw new UsageError(`the ${what} (${JSON.stringify(value)}) holds a control character, which a service file cannot carry`);
}

/** systemd expands %-specifiers in almost every setting; %% is a literal %. */
const specifiers = (s: string): string => s.replace(/%/g, '%%');

/** Words that need no quotes (and hold no % or $ to escape). */
const PLAIN = /^[A-Za-z0-9_.,:+=@\/-]+$/;

/** One argument of ExecStart: quoted and C-escaped when it must be, with % and $ (variable expansion) doubled. */
const execArg = (s: string): string =>
  PLAIN.test(s) ? s : `"${specifiers(s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')).replace(/\$/g, '$$$$')}"`;

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

export function renderSystemdUnit(spec: ServiceSpec): string {
  check(spec);
  const env = Object.entries(spec.env);
  return [
    `# Written by \`svc service install\` for the project in ${spec.project}.`,
    '# Remove it with `svc service uninstall` (stops the daemon, disables and deletes this file).',
    '[Unit]',
    `Description=svc daemon for ${specifiers(spec.project)}`,
    // A daemon that cannot start (its port taken, a bad project.json) is given up on, not retried forever.
    'StartLimitIntervalSec=60',
    'StartLimitBurst=5',
    '',
    '[Service]',
    'Type=simple',
    `WorkingDirectory=${barePath('project directory', spec.project)}`,
    ...(env.length ? [`Environment=${env.map(([k, v]) => envAssignment(k, v)).join(' ')}`] : []),
    `ExecStart=${execPath('node path', spec.node)} ${[...scriptArg(spec), '--project', spec.project, 'serve'].map(execArg).join(' ')}`,
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
  const log = xmlString(launchdLogFile(spec.project));
  const env = Object.entries(spec.env);
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
    `<!-- Written by \`svc service install\`; remove it with \`svc service uninstall\`. -->`,
    '<plist version="1.0">',
    '<dict>',
    `  <key>Label</key>${xmlString(label)}`,
    '  <key>ProgramArguments</key>',
    '  <array>',
    ...[spec.node, ...scriptArg(spec), '--project', spec.project, 'serve'].map((a) => `    ${xmlString(a)}`),
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
