import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import { toErrorResponse } from '../../kernel/errors.js';
import { errorFormat, type ErrorFields } from '../../kernel/route.js';

// OpenAI clients parse failures as {error: {message, type, code, param}}; this is that shape for
// every failure on a route declaring `errorBody: openAiError`, the kernel's own included (the
// Host and Origin guards, 405, auth, body and validation errors).

const TYPES = new Map<number, string>([
  [400, 'invalid_request_error'],
  [401, 'authentication_error'],
  [403, 'permission_error'],
  [404, 'not_found_error'],
  [405, 'invalid_request_error'],
  [409, 'conflict_error'],
  [413, 'invalid_request_error'],
  [415, 'invalid_request_error'],
  [422, 'invalid_request_error'],
  [429, 'rate_limit_error'],
]);
const OTHER_TYPE = 'api_error';

/** The body of every OpenAI-shaped failure (and of a stream's last frame when it fails). */
export const OpenAiErrorBody = z.strictObject({
  error: z.strictObject({
    message: z.string().describe("Human-readable; an upstream's text is scrubbed of secrets."),
    type: z.enum([...new Set([...TYPES.values(), OTHER_TYPE])] as [string, ...string[]]).describe("OpenAI's class of the failure, from its status."),
    code: z.string().describe("svc's error code (docs/errors.md): stable, safe to branch on."),
    param: z.string().nullable().describe('The body field at fault (`messages.0.role`), or null.'),
    upstream_status: z.int().nullable().optional().describe('On `upstream_error`: the status the model provider answered, null when it could not be reached.'),
  }),
});

function format(e: ErrorFields): z.output<typeof OpenAiErrorBody> {
  const details = Array.isArray(e.details) ? (e.details as { path: string; message: string }[]) : [];
  const upstream = details.find((d) => d.path === 'upstream.status');
  const param = details.find((d) => d.path.startsWith('body.'))?.path.slice('body.'.length) ?? null;
  return {
    error: {
      message: e.message,
      type: TYPES.get(e.status) ?? OTHER_TYPE,
      code: e.code,
      param,
      ...(upstream ? { upstream_status: /^\d+$/.test(upstream.message) ? Number(upstream.message) : null } : {}),
    },
  };
}

export const openAiError = errorFormat({
  id: 'OpenAi',
  schema: OpenAiErrorBody,
  description: 'OpenAI-shaped error.',
  format,
});

/** A failure after a stream's headers went out: one last `data:` frame carrying the error. */
export function sendOpenAiError(res: ServerResponse, err: unknown): void {
  const { status, body } = toErrorResponse(err);
  if (!res.writableEnded) res.end(`data: ${JSON.stringify(openAiError({ status, code: body.code, message: body.error, details: body.details }))}\n\n`);
}
