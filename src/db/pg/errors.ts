import { isStateOutage, type StateOutageMark } from '../../kernel/errors.js';

// What a statement on the PostgreSQL state can fail with, told apart: a statement the server
// refused (a constraint, a syntax error) is the request's fault; an outage (no answer in time, the
// server down or restarting, the connection lost) is the server's, and the request may be tried
// again. The kernel reads the `stateOutage` mark (kernel/errors.ts), so it needs nothing from here.

/**
 * A statement stopped by statement_timeout (57014), a lock not had in time (55P03), a session the
 * server ended for sitting idle in a transaction (25P03: this daemon was stalled): not the request's fault.
 */
const OUTAGE_CODES = new Set(['57014', '55P03', '25P03']);

/** A PostgreSQL error, with its SQLSTATE (`23505` unique violation, `40P01` deadlock...). */
export class PgStateError extends Error implements StateOutageMark {
  constructor(
    message: string,
    readonly code: string | undefined,
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'PgStateError';
  }

  /** No answer, the server down or restarting, the connection lost, too slow: not the statement's fault. */
  get stateOutage(): boolean {
    return isOutageCode(this.code);
  }
}

/** Whether an error with this code (SQLSTATE, or Node's `ECONNRESET`...; none: no answer) is the server's, not the statement's. */
export function isOutageCode(code: string | undefined): boolean {
  return code === undefined || OUTAGE_CODES.has(code) || /^(08|57P|53)/.test(code) || /^E[A-Z]+$/.test(code);
}

/** No answer in time (the connection is being replaced), or the state is closed. */
export class StateUnavailableError extends Error implements StateOutageMark {
  readonly code = 'STATE_UNAVAILABLE';
  readonly stateOutage = true;
}

export { isStateOutage };
