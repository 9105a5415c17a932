import { watch } from 'chokidar';
import { X509Certificate } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import { readFileSync } from 'node:fs';
import type { Server as TlsServer } from 'node:https';
import { resolve } from 'node:path';
import { settledWatch, type SettledWatch } from '../lib/watch.js';
import { errorFields, type Logger } from './log.js';

// server.tls: the certificate and key the daemon serves HTTPS with, read at start and read again
// whenever either file changes (a renewal by certbot or a script), with no restart.

export interface TlsFiles {
  cert: string;
  key: string;
}

export interface TlsPair {
  cert: Buffer;
  key: Buffer;
  /** SHA-256 fingerprint of the leaf certificate (the first in the file). */
  fingerprint: string;
}

export const tlsPaths = (root: string, tls: TlsFiles): TlsFiles => ({ cert: resolve(root, tls.cert), key: resolve(root, tls.key) });

/** Reads and checks a pair: both PEM, and the key is the certificate's (else it throws, saying which). */
export function readTlsPair(root: string, tls: TlsFiles): TlsPair {
  const paths = tlsPaths(root, tls);
  const read = (what: string, path: string): Buffer => {
    try {
      return readFileSync(path);
    } catch (err) {
      throw new Error(`server.tls.${what}: cannot read ${path}: ${(err as Error).message}`, { cause: err });
    }
  };
  const cert = read('cert', paths.cert);
  const key = read('key', paths.key);
  let fingerprint: string;
  try {
    fingerprint = new X509Certificate(cert).fingerprint256;
  } catch (err) {
    throw new Error(`server.tls.cert: ${paths.cert} is not a PEM certificate`, { cause: err });
  }
  try {
    // Throws when the key is not PEM or is not the certificate's ("key values mismatch").
    createSecureContext({ cert, key });
  } catch (err) {
    throw new Error(`server.tls.key: ${paths.key} is not the private key of ${paths.cert}: ${(err as Error).message}`, { cause: err });
  }
  return { cert, key, fingerprint };
}

/**
 * Watches the pair's files; once a burst of changes settles, the new pair is served to new
 * connections (server.setSecureContext). A pair that does not load (half-written, mismatched) is
 * logged and the one in force stays.
 */
export function watchTls(root: string, tls: TlsFiles, server: TlsServer, log: Logger, initial: string, debounceMs = 150): SettledWatch {
  const paths = tlsPaths(root, tls);
  let current = initial;
  return settledWatch(
    (schedule) =>
      watch([paths.cert, paths.key], { ignoreInitial: true, atomic: true })
        .on('add', schedule)
        .on('change', schedule)
        .on('error', (err) => log.error('watching the TLS files failed; a new certificate applies at the next start', errorFields(err))),
    () => {
      let pair: TlsPair;
      try {
        pair = readTlsPair(root, tls);
      } catch (err) {
        log.error('TLS certificate change refused; the certificate in force stays', { ...errorFields(err), fingerprint: current });
        return;
      }
      if (pair.fingerprint === current) return;
      server.setSecureContext({ cert: pair.cert, key: pair.key });
      log.info('TLS certificate reloaded', { fingerprint: pair.fingerprint, previous: current });
      current = pair.fingerprint;
    },
    debounceMs,
  );
}
