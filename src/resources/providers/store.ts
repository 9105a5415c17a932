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
}

const toHealth = (r: Row): ProviderHealth => ({
  errorCount: r.error_count,
  billingCount: r.billing_count,
  cooldownUntil: r.cooldown_until,
  disabledUntil: r.disabled_until,
  authFailed: r.auth_failed === 1,
  lastErrorReason: r.last_error_reason,
});

export function allHealth(db: DB): Map<string, ProviderHealth> {
  const rows = stmt(db, 'SELECT * FROM provider_health').all() as Row[];
  return new Map(rows.map((r) => [r.provider, toHealth(r)]));
}

export function getHealth(db: DB, provider: string): ProviderHealth {
  const r = stmt(db, 'SELECT * FROM provider_health WHERE provider = ?').get(provider) as Row | undefined;
  return r ? toHealth(r) : HEALTHY;
}

export function putHealth(db: DB, provider: string, h: ProviderHealth, now: string): void {
  if (h === HEALTHY) {
    stmt(db, 'DELETE FROM provider_health WHERE provider = ?').run(provider);
    return;
  }
  stmt(
    db,
    `INSERT INTO provider_health (provider, error_count, billing_count, cooldown_until, disabled_until, auth_failed, last_error_reason, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (provider) DO UPDATE SET error_count = excluded.error_count, billing_count = excluded.billing_count,
       cooldown_until = excluded.cooldown_until, disabled_until = excluded.disabled_until, auth_failed = excluded.auth_failed,
       last_error_reason = excluded.last_error_reason, updated_at = excluded.updated_at`,
  ).run(provider, h.errorCount, h.billingCount, h.cooldownUntil, h.disabledUntil, h.authFailed ? 1 : 0, h.lastErrorReason, now);
}
