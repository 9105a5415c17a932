import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ProjectConfig } from './schema.js';
import { configDir } from './user-dir.js';

// The project's private settings file: the state URL, the data URL and the vault key, which hold
// passwords and so stay out of project.json, kept in one file of NAME=value lines that the daemon
// and the CLI (svc restart, svc doctor, svc state) both read. A shell, a service manager and a
// terminal opened later then see the same settings, where environment variables are each
// process's own. A variable set in the environment wins over the file.

/** The variables the file may set; any other name in it is refused. */
export const ENV_FILE_NAMES: readonly string[] = ['SVC_STATE_URL', 'SVC_DATA_URL', 'SVC_VAULT_KEY'];
const MAX_BYTES = 64 * 1024;
/** A project name usable as a file name in the config dir (no separator, no leading dot). */
const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Where the file is looked for when project.json names none: `<config dir>/projects/<name>.env`. */
export function userEnvFile(config: Pick<ProjectConfig, 'name'>, env: NodeJS.ProcessEnv): string | null {
  return config.name && FILE_NAME.test(config.name) ? join(configDir(env), 'projects', `${config.name}.env`) : null;
}

/**
 * NAME=value lines: blank lines and # comments skipped, an `export ` prefix allowed, a value in
 * single or double quotes taken as written between them (as systemd's EnvironmentFile= and a
 * shell's `.` read a plain file). Errors name the line and the variable, never a value.
 */
export function parseEnvFile(text: string, where: string): Map<string, string> {
  const out = new Map<string, string>();
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (!line || line.startsWith('#')) continue;
    const at = `${where}, line ${i + 1}`;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!m) throw new Error(`${at} is not NAME=value`);
    const name = m[1]!;
    if (!ENV_FILE_NAMES.includes(name)) throw new Error(`${at}: ${name.slice(0, 64)} is not one of the variables this file may set (${ENV_FILE_NAMES.join(', ')})`);
    if (out.has(name)) throw new Error(`${at}: ${name} is set twice`);
    let value = m[2]!;
    const quote = value[0];
    if (quote === '"' || quote === "'") {
      if (value.length < 2 || !value.endsWith(quote)) throw new Error(`${at}: the value of ${name} opens a quote it does not close`);
      value = value.slice(1, -1);
    }
    out.set(name, value);
  }
  return out;
}

/**
 * Reads the file, refused (with the chmod to run) when other users may read or write it, or when
 * it is not this user's: like .svc/local.key, it is the user's alone.
 */
export function readEnvFile(file: string): Map<string, string> {
  const st = statSync(file);
  if (!st.isFile()) throw new Error(`${file} is not a file`);
  const mode = st.mode & 0o777;
  if (mode & 0o077) throw new Error(`${file} holds passwords and is open to other users (mode ${mode.toString(8)}): run \`chmod 600 ${file}\``);
  if (typeof process.getuid === 'function' && st.uid !== process.getuid()) throw new Error(`${file} belongs to another user: it must be yours alone`);
  if (st.size > MAX_BYTES) throw new Error(`${file} is larger than ${MAX_BYTES / 1024} KiB: not a settings file`);
  return parseEnvFile(readFileSync(file, 'utf8'), file);
}

export interface ProjectEnv {
  /** The environment with the file's values added where it sets none (a copy). */
  env: NodeJS.ProcessEnv;
  /** The file read, or null when there is none. */
  file: string | null;
  /** The variables taken from the file (the environment set the others it holds). */
  names: string[];
}

/**
 * The environment the daemon runs with: `env`, plus what the project's private file sets that
 * `env` does not (an empty variable counts as unset). The file is project.json's `envFile`
 * (relative to the project; it must exist), else `<config dir>/projects/<name>.env` when it exists.
 */
export function projectEnv(root: string, config: Pick<ProjectConfig, 'name' | 'envFile'>, env: NodeJS.ProcessEnv): ProjectEnv {
  let file: string | null;
  if (config.envFile) {
    file = resolve(root, config.envFile);
    if (!existsSync(file)) throw new Error(`envFile names ${file}, which does not exist: create it (NAME=value lines) and \`chmod 600\` it, or remove envFile from project.json`);
  } else {
    file = userEnvFile(config, env);
    if (file && !existsSync(file)) file = null;
  }
  if (!file) return { env, file: null, names: [] };
  const values = readEnvFile(file);
  const out: NodeJS.ProcessEnv = { ...env };
  const names: string[] = [];
  for (const [name, value] of values) {
    if (env[name]) continue;
    out[name] = value;
    names.push(name);
  }
  return { env: out, file, names };
}
