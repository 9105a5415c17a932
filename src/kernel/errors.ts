// The one error registry. Every failure the API can answer has a code here; docs/errors.md
// documents the same table and a test keeps the two in sync.

export const ERRORS = {
  invalid_request: { status: 400, message: 'The request is invalid.' },
  unauthorized: { status: 401, message: 'A valid API key is required in the Authorization header.' },
  forbidden: { status: 403, message: 'The request is not allowed.' },
  not_found: { status: 404, message: 'Not found.' },
  method_not_allowed: { status: 405, message: 'This method is not allowed on this path.' },
  conflict: { status: 409, message: 'The request conflicts with the current state.' },
  invalid_transition: { status: 409, message: 'This state transition is not allowed.' },
  payload_too_large: { status: 413, message: 'The request body is too large.' },
  unsupported_media_type: { status: 415, message: 'The request body must be JSON (Content-Type: application/json).' },
  unprocessable: { status: 422, message: 'The request is well-formed but cannot be applied.' },
  rate_limited: { status: 429, message: 'Too many failed requests; slow down.' },
  internal: { status: 500, message: 'Internal error.' },
  upstream_error: { status: 502, message: 'The model provider answered with an error.' },
  unavailable: { status: 503, message: 'The service is unavailable.' },
  data_invalid: { status: 400, message: 'The database request is invalid.' },
  data_forbidden: { status: 403, message: 'This key has no grant for that database operation.' },
  data_not_found: { status: 404, message: 'Database, table or record not found.' },
  data_conflict: { status: 409, message: 'The database request conflicts with the current state.' },
  data_limit: { status: 413, message: 'The database result or request exceeds a limit.' },
  data_constraint: { status: 422, message: 'A database constraint failed.' },
  data_unavailable: { status: 503, message: 'The database is unavailable or the statement took too long.' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

export interface ErrorDetail {
  path: string;
  message: string;
}

export interface AppErrorOptions {
  details?: ErrorDetail[];
  headers?: Record<string, string>;
  cause?: unknown;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details?: ErrorDetail[];
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, message?: string, options: AppErrorOptions = {}) {
    super(message ?? ERRORS[code].message, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.details = options.details;
    this.headers = options.headers;
  }
}

/** A 422 about one field: the message names it, and `details` carries its path (body.x). */
export function unprocessableField(path: string, message: string): AppError {
  return new AppError('unprocessable', `${path.replace(/^body\./, '')}: ${message}.`, { details: [{ path, message }] });
}

/**
 * The state database cannot be used right now (no answer in time, its server down or restarting,
 * the connection lost): the request may be tried again, unlike a statement that failed. The state
 * layer marks such errors with `stateOutage: true`; the kernel reads the mark, so it needs nothing
 * from db/.
 */
export interface StateOutageMark {
  readonly stateOutage: boolean;
}

export const isStateOutage = (err: unknown): boolean => err instanceof Error && (err as Partial<StateOutageMark>).stateOutage === true;

export interface ErrorBody {
  ok: false;
  code: ErrorCode;
  error: string;
  details?: ErrorDetail[];
}

/** Turns anything thrown into the status and envelope the client sees; unknown errors leak nothing. */
export function toErrorResponse(err: unknown): { status: number; body: ErrorBody; headers: Record<string, string>; known: boolean } {
  if (err instanceof AppError) {
    const body: ErrorBody = { ok: false, code: err.code, error: err.message };
    if (err.details) body.details = err.details;
    return { status: err.status, body, headers: err.headers ?? {}, known: true };
  }
  // A shared state's server that is down or slow is an outage to retry, not a bug: 503, and not
  // logged per request (the outage log, db/pg/outage.ts, says when it starts and when it ends).
  if (isStateOutage(err)) {
    return { status: 503, body: { ok: false, code: 'unavailable', error: 'The state database is unavailable; try again shortly.' }, headers: { 'retry-after': '1' }, known: true };
  }
  return { status: 500, body: { ok: false, code: 'internal', error: ERRORS.internal.message }, headers: {}, known: false };
}
