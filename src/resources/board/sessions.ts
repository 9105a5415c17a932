import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { stmt, type DB } from '../../db/open.js';
import { keyByDigest, principalOf, sha256, type KeyEntry, type Principal } from '../../kernel/auth.js';

// The board's sign-in: `svc open` mints a one-time link with its key (POST /api/v1/board/logins);
// GET /login exchanges it for a session cookie. Only SHA-256 digests of links and sessions are
// stored (board_logins, board_sessions), so a copy of the state signs nobody in. A session acts
// as the key that minted it, while that key exists; its state-changing requests carry a CSRF token.

/** How long a login link may wait to be opened. */
export const LOGIN_TTL_MS = 60_000;
/** How long a session lasts (no sliding: sign in again with `svc open`). */
export const SESSION_TTL_MS = 12 * 3_600_000;
/** The request header carrying a session's CSRF token, on every request the session makes. */
export const CSRF_HEADER = 'x-csrf-token';

const digestHex = (token: string): string => sha256(token).toString('hex');
const newToken = (): string => randomBytes(32).toString('base64url');

/**
 * The cookie's name carries the daemon's port: browsers send a cookie to every port of a host, so
 * two daemons on one machine would otherwise sign each other's boards out. (That a server on
 * another port receives the cookie is why the CSRF token is required on every request.)
 */
export const cookieNames = (port: number) => ({ session: `svc_session_${port}` });

/** The CSRF token of a session: derived from its secret, so it needs no storage and is bound to it. */
export const csrfToken = (sessionToken: string): string => createHmac('sha256', sessionToken).update('svc board csrf').digest('base64url');

/** Constant-time equality of two strings of any length (compared as digests of equal length). */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}

export async function mintLogin(db: DB, opts: { keyId: string; readOnly: boolean; now: number }): Promise<{ token: string; expiresAt: string }> {
  const token = newToken();
  const expiresAt = new Date(opts.now + LOGIN_TTL_MS).toISOString();
  const nowIso = new Date(opts.now).toISOString();
  // Links and sessions past their time are removed as new ones are made: the tables stay small.
  await stmt(db, 'DELETE FROM board_logins WHERE expires_at < ?').run(nowIso);
  await stmt(db, 'DELETE FROM board_sessions WHERE expires_at < ?').run(nowIso);
  await stmt(db, 'INSERT INTO board_logins (token_hash, key_id, read_only, expires_at) VALUES (?, ?, ?, ?)').run(digestHex(token), opts.keyId, opts.readOnly ? 1 : 0, expiresAt);
  return { token, expiresAt };
}

export type Exchange = { ok: true; session: string; csrf: string; expiresAt: string; maxAgeS: number } | { ok: false; reason: 'unknown' | 'used' | 'expired' | 'key_gone' };

type Refusal = Exclude<Exchange, { ok: true }>;

async function lookLogin(db: DB, hash: string, keys: readonly KeyEntry[], now: number): Promise<Refusal | { ok: true; row: { key_id: string; read_only: number } }> {
  const row = (await stmt(db, 'SELECT key_id, read_only, expires_at, used_at FROM board_logins WHERE token_hash = ?').get(hash)) as
    | { key_id: string; read_only: number; expires_at: string; used_at: string | null }
    | undefined;
  if (!row) return { ok: false, reason: 'unknown' };
  if (row.used_at !== null) return { ok: false, reason: 'used' };
  if (row.expires_at <= new Date(now).toISOString()) return { ok: false, reason: 'expired' };
  if (!keyByDigest(keys, Buffer.from(row.key_id, 'hex'))) return { ok: false, reason: 'key_gone' };
  return { ok: true, row };
}

/** What an exchange of this token would answer, without spending it (a HEAD of the link). */
export async function peekLogin(db: DB, token: string, keys: readonly KeyEntry[], now: number): Promise<Refusal | { ok: true }> {
  const r = await lookLogin(db, digestHex(token), keys, now);
  return r.ok ? { ok: true } : r;
}

/** Exchanges a login link's token for a new session, once: a used or expired link is refused. */
export async function exchangeLogin(db: DB, token: string, keys: readonly KeyEntry[], now: number): Promise<Exchange> {
  const hash = digestHex(token);
  const looked = await lookLogin(db, hash, keys, now);
  if (!looked.ok) return looked;
  const row = looked.row;
  const nowIso = new Date(now).toISOString();
  // Marked used before the session exists: two tabs racing with one link get one session.
  if ((await stmt(db, 'UPDATE board_logins SET used_at = ? WHERE token_hash = ? AND used_at IS NULL').run(nowIso, hash)).changes !== 1) return { ok: false, reason: 'used' };
  const session = newToken();
  const expiresAt = new Date(now + SESSION_TTL_MS).toISOString();
  await stmt(db, 'INSERT INTO board_sessions (id_hash, key_id, read_only, created_at, expires_at) VALUES (?, ?, ?, ?, ?)').run(digestHex(session), row.key_id, row.read_only, nowIso, expiresAt);
  return { ok: true, session, csrf: csrfToken(session), expiresAt, maxAgeS: Math.floor(SESSION_TTL_MS / 1000) };
}

/** Ends every session and unused link; returns how many sessions there were. */
export async function revokeAll(db: DB): Promise<number> {
  await stmt(db, 'DELETE FROM board_logins').run();
  return (await stmt(db, 'DELETE FROM board_sessions').run()).changes;
}

/** Whether a key may change things from the board: not one limited to read-only tools or to database grants. */
export const keyIsReadOnly = (k: Pick<KeyEntry, 'tools' | 'grants'>): boolean => k.tools === 'read' || k.grants !== undefined;

export function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (!header) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    if (!out.has(name)) out.set(name, part.slice(eq + 1).trim());
  }
  return out;
}

export interface SessionAuth {
  principal: Principal;
  /** The request carried this session's CSRF token. */
  csrf: boolean;
  readOnly: boolean;
}

/**
 * The session a request's cookie names, as the principal of the key that minted it; null when
 * there is no cookie, or it names no live session of a key that still exists.
 */
export async function sessionOf(db: DB, req: IncomingMessage, keys: readonly KeyEntry[], port: number, now: number): Promise<SessionAuth | null> {
  const names = cookieNames(port);
  const token = parseCookies(req.headers.cookie).get(names.session);
  if (!token || token.length > 128) return null;
  const row = (await stmt(db, 'SELECT key_id, read_only, expires_at FROM board_sessions WHERE id_hash = ?').get(digestHex(token))) as
    | { key_id: string; read_only: number; expires_at: string }
    | undefined;
  if (!row || row.expires_at <= new Date(now).toISOString()) return null;
  const key = keyByDigest(keys, Buffer.from(row.key_id, 'hex'));
  if (!key) return null;
  const header = req.headers[CSRF_HEADER];
  const csrf = typeof header === 'string' && safeEqual(header, csrfToken(token));
  return {
    principal: { ...principalOf(key), session: true, sessionEndsAt: Date.parse(row.expires_at) },
    csrf,
    readOnly: row.read_only === 1 || keyIsReadOnly(key),
  };
}
