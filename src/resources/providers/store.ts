import { stmt, type DB } from '../../db/open.js';
import { HEALTHY, type ProviderHealth } from './health.js';

interface Row {
  provider: string;
  error_count: number;
  billing_count: number;
  cooldown_until: number | null;
  disabled_until: number | null;
  auth_failed: number;
  last_error_reason: string | null;
  paused_until: number | null;
}

const n = (v: number | null): number | null => (v === null ? null : Number(v));

const toHealth = (r: Row): ProviderHealth => ({
  errorCount: Number(r.error_count),
  billingCount: Number(r.billing_count),
  cooldownUntil: n(r.cooldown_until),
  disabledUntil: n(r.disabled_until),
  authFailed: Number(r.auth_failed) === 1,
  lastErrorReason: r.last_error_reason,
  pausedUntil: n(r.paused_until),
});

export async function allHealth(db: DB): Promise<Map<string, ProviderHealth>> {
  const rows = (await stmt(db, 'SELECT * FROM provider_health').all()) as Row[];
  return new Map(rows.map((r) => [r.provider, toHealth(r)]));
}

export async function getHealth(db: DB, provider: string): Promise<ProviderHealth> {
  const r = (await stmt(db, 'SELECT * FROM provider_health WHERE provider = ?').get(provider)) as Row | undefined;
  return r ? toHealth(r) : HEALTHY;
}

export async function putHealth(db: DB, provider: string, h: ProviderHealth, now: string): Promise<void> {
  if (h === HEALTHY) {
    await stmt(db, 'DELETE FROM provider_health WHERE provider = ?').run(provider);
    return;
  }
  await stmt(
    db,
    `INSERT INTO provider_health (provider, error_count, billing_count, cooldown_until, disabled_until, auth_failed, last_error_reason, paused_until, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (provider) DO UPDATE SET error_count = excluded.error_count, billing_count = excluded.billing_count,
       cooldown_until = excluded.cooldown_until, disabled_until = excluded.disabled_until, auth_failed = excluded.auth_failed,
       last_error_reason = excluded.last_error_reason, paused_until = excluded.paused_until, updated_at = excluded.updated_at`,
  ).run(provider, h.errorCount, h.billingCount, h.cooldownUntil, h.disabledUntil, h.authFailed ? 1 : 0, h.lastErrorReason, h.pausedUntil, now);
}

/** Says the pause that lasted until `until` is over (false: another daemon said it first, or it moved). */
export async function endPause(db: DB, provider: string, until: number, now: string): Promise<boolean> {
  return (await stmt(db, 'UPDATE provider_health SET paused_until = NULL, updated_at = ? WHERE provider = ? AND paused_until = ?').run(now, provider, until)).changes > 0;
}

/** A person lifted the pause before its time: the provider's cooldown ends with it. */
export async function liftPause(db: DB, provider: string, now: string): Promise<boolean> {
  return (await stmt(db, 'UPDATE provider_health SET paused_until = NULL, cooldown_until = NULL, updated_at = ? WHERE provider = ? AND paused_until IS NOT NULL').run(now, provider)).changes > 0;
}
