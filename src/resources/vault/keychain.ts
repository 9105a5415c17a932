// The only module that knows which keychain library is in use (@napi-rs/keyring today; keytar
// has the same get/set/delete model and could replace it here alone). It is loaded at the first
// call: a daemon told not to use the keychain (SVC_KEYCHAIN=off), or whose vault key is found
// elsewhere first, never loads the native addon.

export const KEYCHAIN_SERVICE = 'svc';
const TIMEOUT_MS = 5_000;

/** A password store keyed by account, under the fixed service "svc". */
export interface Keychain {
  /** The stored value, or null when there is none. Throws KeychainUnavailable when no store answers. */
  get(account: string): Promise<string | null>;
  set(account: string, value: string): Promise<void>;
  /** True when something was deleted. */
  delete(account: string): Promise<boolean>;
}

export class KeychainUnavailable extends Error {
  constructor(reason: string) {
    super(`the OS keychain is unavailable: ${reason}`);
    this.name = 'KeychainUnavailable';
  }
}

function firstLine(text: string, max = 160): string {
  const line = text.split('\n')[0]!.trim();
  return line.length > max ? line.slice(0, max - 1) + '…' : line;
}

async function call<T>(what: (signal: AbortSignal) => Promise<T>): Promise<T> {
  // A locked keyring may show an unlock prompt nobody answers; do not wait for it forever.
  const signal = AbortSignal.timeout(TIMEOUT_MS);
  try {
    return await what(signal);
  } catch (err) {
    // The first line only: a missing Secret Service answers with a multi-line D-Bus dump.
    const reason = signal.aborted ? `no answer within ${TIMEOUT_MS / 1000} s` : firstLine((err as Error)?.message ?? String(err));
    throw new KeychainUnavailable(reason);
  }
}

/**
 * The OS keychain. On Linux the entry is pinned to the Secret Service: the library would otherwise
 * fall back to the kernel keyring, which forgets everything at logout, and a master key kept there
 * would be lost with the session.
 */
export function osKeychain(): Keychain {
  const entry = async (account: string) => {
    const { AsyncEntry } = await import('@napi-rs/keyring');
    return new AsyncEntry(KEYCHAIN_SERVICE, account, { linux: { store: 'secret-service' } });
  };
  return {
    get: (account) => call(async (signal) => (await entry(account)).getPassword(signal)),
    set: (account, value) => call(async (signal) => (await entry(account)).setPassword(value, signal)),
    delete: (account) => call(async (signal) => (await entry(account)).deletePassword(signal)),
  };
}
