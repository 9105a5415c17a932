import type { ServerResponse } from 'node:http';
import { toErrorResponse } from '../../kernel/errors.js';

// OpenAI clients parse failures as {error: {message, type, code}}; this is that shape for every
// failure of the chat endpoint, kernel ones (auth, validation) included.

const TYPES = new Map<number, string>([
  [400, 'invalid_request_error'],
  [401, 'authentication_error'],
  [403, 'permission_error'],
  [404, 'not_found_error'],
  [409, 'conflict_error'],
  [413, 'invalid_request_error'],
  [415, 'invalid_request_error'],
  [422, 'invalid_request_error'],
  [429, 'rate_limit_error'],
]);

export function openAiError(e: { status: number; code: string; message: string; details?: unknown }): unknown {
  const details = Array.isArray(e.details) ? (e.details as { path: string; message: string }[]) : [];
  const upstream = details.find((d) => d.path === 'upstream.status');
  const param = details.find((d) => d.path.startsWith('body.'))?.path.slice('body.'.length) ?? null;
  return {
    error: {
      message: e.message,
      type: TYPES.get(e.status) ?? 'api_error',
      code: e.code,
      param,
      ...(upstream ? { upstream_status: /^\d+$/.test(upstream.message) ? Number(upstream.message) : null } : {}),
    },
  };
}

/** A failure after a stream's headers went out: one last `data:` frame carrying the error. */
export function sendOpenAiError(res: ServerResponse, err: unknown): void {
  const { status, body } = toErrorResponse(err);
  if (!res.writableEnded) res.end(`data: ${JSON.stringify(openAiError({ status, code: body.code, message: body.error, details: body.details }))}\n\n`);
}
