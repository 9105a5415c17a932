import type { IncomingMessage } from 'node:http';
import { MAX_JSON_DEPTH, nestedDeeperThan, parseJson } from '../lib/json.js';
import { AppError } from './errors.js';

/** Marker for "the request carried no body", distinct from a JSON null. */
export const NO_BODY = Symbol('no-body');

/**
 * Reads a JSON body, refusing it with 413 as soon as it passes `limit` bytes (by Content-Length
 * up front, or while streaming when the length is not declared) so a large body is never held whole,
 * and with 400 when it nests deeper than MAX_JSON_DEPTH, before anything walks it.
 */
export async function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  const declared = req.headers['content-length'];
  const length = declared === undefined ? undefined : Number(declared);
  const chunked = req.headers['transfer-encoding'] !== undefined;
  if (length === 0 || (length === undefined && !chunked)) return NO_BODY;
  if (length !== undefined && length > limit) {
    throw new AppError('payload_too_large', `The request body is ${length} bytes; the limit is ${limit}.`);
  }
  const type = req.headers['content-type'];
  if (!type || !/^application\/([a-z0-9.+-]*\+)?json\s*(;|$)/i.test(type)) {
    throw new AppError('unsupported_media_type', `Content-Type ${type ? `"${type}"` : '(none)'} is not JSON; send application/json.`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      throw new AppError('payload_too_large', `The request body exceeds the limit of ${limit} bytes.`);
    }
    chunks.push(chunk);
  }
  if (size === 0) return NO_BODY;
  const text = Buffer.concat(chunks, size).toString('utf8');
  if (nestedDeeperThan(text, MAX_JSON_DEPTH)) {
    const message = `nested deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`;
    throw new AppError('invalid_request', `Malformed JSON body: ${message}.`, { details: [{ path: 'body', message }] });
  }
  const parsed = parseJson(text);
  if (!parsed.ok) throw new AppError('invalid_request', `Malformed JSON body: ${parsed.error}.`, { details: [{ path: 'body', message: parsed.error }] });
  return parsed.value;
}
