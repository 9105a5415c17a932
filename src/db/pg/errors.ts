// What a statement on the PostgreSQL state can fail with, told apart: a statement the server
// refused (a constraint, a syntax error) is the request's fault; an outage (no answer in time, the
// server down or restarting, the connection lost) is the server's, and the request may be tried again.

/** A PostgreSQL error, with its SQLSTATE (`23505` unique violation, `40P01` deadlock...). */
export class PgStateError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'PgStateError';
  }
}

/** No answer in time (the connection is being replaced), or the state is closed. */
export class StateUnavailableError extends Error {
  readonly code = 'STATE_UNAVAILABLE';
}

/** A statement stopped by statement_timeout (57014), a lock not had in time (55P03): the server was too slow, not the request wrong. */
const OUTAGE_CODES = new Set(['57014', '55P03']);

/**
 * The state database cannot be used right now (no answer in time, the server down or restarting,
 * the connection lost): the request may be tried again, unlike a statement that failed.
 */
export const isStateOutage = (err: unknown): boolean =>
  err instanceof StateUnavailableError ||
  (err instanceof PgStateError && (err.code === undefined || OUTAGE_CODES.has(err.code) || /^(08|57P|53)/.test(err.code) || /^E[A-Z]+$/.test(err.code)));
