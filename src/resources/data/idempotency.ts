import { createHash } from 'node:crypto';
import type Database from '../../db/sqlite.js';
import { AppError } from '../../kernel/errors.js';

// Idempotency keys of query and transactions, kept in the database file they write to: the stored
// answer is inserted in the same SQLite transaction as the write it describes, so an answer is
// stored exactly when the write committed. Scoped to (key owner, key) inside the file, which is
// the database; kept 24 h.

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * The oldest creation time (epoch ms) of a key still kept at `now`. A key ends IDEMPOTENCY_TTL_MS
 * after it was made and, like every lease, is gone at that very instant (docs/data.md); both
 * providers keep `created_at >= oldestKept(now)`.
 */
export const oldestKept = (now: number): number => now - IDEMPOTENCY_TTL_MS + 1;

export interface IdempotencyRef {
  /** Who owns the key: the API key's digest, so two callers never see each other's answers. */
  owner: string;
  key: string;
  /** Digest of the endpoint and the request body without the key. */
  hash: string;
}

export const IDEMPOTENCY_DDL = `
  CREATE TABLE IF NOT EXISTS _svc_idempotency (
    owner TEXT NOT NULL,
    key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    answer TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (owner, key)
  ) STRICT;
  CREATE INDEX IF NOT EXISTS _svc_idempotency_created ON _svc_idempotency (created_at);
`;

/** JSON with object keys sorted, so that equal requests hash equally whatever their key order. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

export function requestHash(endpoint: string, body: Record<string, unknown>): string {
  const { idempotencyKey: _ignored, ...rest } = body;
  return createHash('sha256')
    .update(`${endpoint}\n${canonicalJson(rest)}`)
    .digest('hex');
}

/**
 * The stored answer of an earlier request with this key, or undefined when there is none (or it
 * expired at `now`, the daemon's clock). The same key with another request is a 409. Call inside
 * the write's transaction.
 */
export function replayOf(db: Database.Database, ref: IdempotencyRef, now: number): unknown {
  db.prepare('DELETE FROM _svc_idempotency WHERE created_at < ?').run(oldestKept(now));
  const row = db.prepare('SELECT request_hash, answer FROM _svc_idempotency WHERE owner = ? AND key = ?').get(ref.owner, ref.key) as { request_hash: string; answer: string } | undefined;
  if (!row) return undefined;
  if (row.request_hash !== ref.hash) {
    throw new AppError('data_conflict', 'This idempotencyKey was already used with a different request; use a new key for a new request.', {
      details: [{ path: 'body.idempotencyKey', message: 'already used with a different request' }],
    });
  }
  return JSON.parse(row.answer);
}

export function remember(db: Database.Database, ref: IdempotencyRef, answer: unknown, now: number): void {
  db.prepare('INSERT INTO _svc_idempotency (owner, key, request_hash, answer, created_at) VALUES (?, ?, ?, ?, ?)').run(ref.owner, ref.key, ref.hash, JSON.stringify(answer), now);
}
