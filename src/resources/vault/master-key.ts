import { chmodSync, existsSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { configDir } from '../../config/user-dir.js';
import { ensurePrivateDir, writePrivateFile } from '../../lib/files.js';
import { MASTER_KEY_BYTES } from './crypto.js';
import { KEYCHAIN_SERVICE, KeychainUnavailable, type Keychain } from './keychain.js';

// Where the vault's 32-byte master key lives. Explicit beats ambient: SVC_VAULT_KEY, when set,
// wins; else the OS keychain; else (no Secret Service: headless Linux, CI) a 0600 file in the
// user's config dir. Each location also has a "next" slot that holds a new key while a rotation
// is under way, so a crash between re-sealing and storing the key loses nothing.

export type KeySource = 'env' | 'keychain' | 'file';

export interface KeyLocation {
  source: KeySource;
  /** For messages and logs: where the key is, never the key. */
  where: string;
  read(): Promise<Buffer | null>;
  write(key: Buffer): Promise<void>;
  readNext(): Promise<Buffer | null>;
  writeNext(key: Buffer): Promise<void>;
  /** Makes the "next" key (which is `key`) the key, then empties the slot. */
  promoteNext(key: Buffer): Promise<void>;
  clearNext(): Promise<void>;
}

export const ENV_KEY = 'SVC_VAULT_KEY';

/**
 * Parses a stored or given key: 64 hexadecimal characters, or the 32 bytes in base64 (what
 * `openssl rand -base64 32` prints). The value never appears in the error.
 */
export function parseKeyHex(text: string, where: string): Buffer {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, 'hex');
  if (/^[A-Za-z0-9+/]{43}=$/.test(t)) return Buffer.from(t, 'base64');
  throw new Error(`the vault master key in ${where} is neither ${MASTER_KEY_BYTES * 2} hexadecimal characters nor ${MASTER_KEY_BYTES} bytes in base64 (generate one with \`openssl rand -base64 32\`)`);
}

export function envLocation(value: string): KeyLocation {
  const refuse = async (): Promise<never> => {
    throw new Error(`the daemon cannot change ${ENV_KEY}`);
  };
  return {
    source: 'env',
    where: ENV_KEY,
    read: async () => parseKeyHex(value, ENV_KEY),
    write: refuse,
    readNext: async () => null,
    writeNext: refuse,
    promoteNext: refuse,
    clearNext: async () => undefined,
  };
}

export function keychainLocation(keychain: Keychain, projectId: string): KeyLocation {
  const where = `the OS keychain (service "${KEYCHAIN_SERVICE}", account "${projectId}")`;
  const next = `${projectId}:next`;
  const read = async (account: string) => {
    const v = await keychain.get(account);
    return v === null ? null : parseKeyHex(v, where);
  };
  return {
    source: 'keychain',
    where,
    read: () => read(projectId),
    write: (key) => keychain.set(projectId, key.toString('hex')),
    readNext: () => read(next),
    writeNext: (key) => keychain.set(next, key.toString('hex')),
    promoteNext: async (key) => {
      await keychain.set(projectId, key.toString('hex'));
      await keychain.delete(next);
    },
    clearNext: async () => void (await keychain.delete(next)),
  };
}

export { configDir };

export function fileLocation(dir: string, projectId: string, warn: (msg: string) => void = () => undefined): KeyLocation {
  const keysDir = join(dir, 'keys');
  const file = join(keysDir, `${projectId}.key`);
  const nextFile = `${file}.next`;
  const where = `the key file ${file}`;
  const read = async (f: string) => {
    if (!existsSync(f)) return null;
    const mode = statSync(f).mode & 0o777;
    if (mode & 0o077) {
      // Like ssh with a private key: a key others could read is tightened and reported.
      chmodSync(f, 0o600);
      warn(`${f} was readable by other users (mode ${mode.toString(8)}); it is now 0600`);
    }
    return parseKeyHex(readFileSync(f, 'utf8'), where);
  };
  const write = async (f: string, key: Buffer) => {
    ensurePrivateDir(keysDir);
    writePrivateFile(f, key.toString('hex') + '\n');
  };
  return {
    source: 'file',
    where,
    read: () => read(file),
    write: (key) => write(file, key),
    readNext: () => read(nextFile),
    writeNext: (key) => write(nextFile, key),
    // A rename is atomic where a rewrite is not: the file holds the old key or the new, never half.
    promoteNext: async () => renameSync(nextFile, file),
    clearNext: async () => rmSync(nextFile, { force: true }),
  };
}

export interface Located {
  location: KeyLocation;
  /** The key found there, or null when none exists yet (location is then where to create it). */
  key: Buffer | null;
  /** Why the keychain was passed over, for the start-up log. */
  keychainSkipped?: string;
}

/**
 * Finds the master key without creating one. SVC_KEYCHAIN=off skips the keychain (tests, and users
 * who do not want it). A keychain that does not answer is passed over, and the file is used.
 */
export async function locateMasterKey(env: NodeJS.ProcessEnv, projectId: string, keychain: Keychain, warn?: (msg: string) => void): Promise<Located> {
  const fromEnv = env[ENV_KEY];
  if (fromEnv !== undefined && fromEnv !== '') {
    const location = envLocation(fromEnv);
    return { location, key: await location.read() };
  }
  const file = fileLocation(configDir(env), projectId, warn);
  let keychainSkipped: string | undefined;
  if (env.SVC_KEYCHAIN === 'off') {
    keychainSkipped = 'SVC_KEYCHAIN=off';
  } else {
    const kc = keychainLocation(keychain, projectId);
    try {
      const key = await kc.read();
      if (key) return { location: kc, key };
      // The keychain answers but holds no key: a key file from before still wins over creating one.
      const existing = await file.read();
      return existing ? { location: file, key: existing } : { location: kc, key: null };
    } catch (err) {
      if (!(err instanceof KeychainUnavailable)) throw err;
      keychainSkipped = err.message;
    }
  }
  return { location: file, key: await file.read(), keychainSkipped };
}

/**
 * A key file the project names (state.vaultKeyFile): on a shared state every daemon reads the same
 * key from its own copy. svc never writes it; a missing file is a start-up error saying how to make one.
 */
export function namedFileLocation(file: string, warn: (msg: string) => void = () => undefined): KeyLocation {
  const where = `the key file ${file} (state.vaultKeyFile)`;
  const refuse = async (): Promise<never> => {
    throw new Error(`svc does not change ${where}`);
  };
  return {
    source: 'file',
    where,
    read: async () => {
      if (!existsSync(file)) return null;
      const mode = statSync(file).mode & 0o777;
      // svc does not change this file (it is the team's), but says when others could read it.
      if (mode & 0o077) warn(`${file} (state.vaultKeyFile) is readable by other users (mode ${mode.toString(8)}): chmod 600 it`);
      return parseKeyHex(readFileSync(file, 'utf8'), where);
    },
    write: refuse,
    readNext: async () => null,
    writeNext: refuse,
    promoteNext: refuse,
    clearNext: async () => undefined,
  };
}

/**
 * The master key of a state shared by several daemons: SVC_VAULT_KEY, else state.vaultKeyFile;
 * never one machine's keychain or config dir, which the other daemons cannot read.
 */
export async function locateSharedKey(env: NodeJS.ProcessEnv, keyFile: string | null, warn?: (msg: string) => void): Promise<{ location: KeyLocation; key: Buffer }> {
  const fromEnv = env[ENV_KEY];
  if (fromEnv !== undefined && fromEnv !== '') {
    const location = envLocation(fromEnv);
    return { location, key: (await location.read())! };
  }
  if (!keyFile) {
    throw new Error(
      `the state is on PostgreSQL, where every daemon must open the vault with the same master key: set ${ENV_KEY} (\`openssl rand -base64 32\`) or name a key file in state.vaultKeyFile, the same key on every daemon`,
    );
  }
  const location = namedFileLocation(keyFile, warn);
  const key = await location.read();
  if (!key) throw new Error(`${location.where} does not exist: make it with \`openssl rand -base64 32 > ${keyFile} && chmod 600 ${keyFile}\`, the same key on every daemon`);
  return { location, key };
}
