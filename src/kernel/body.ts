import type { IncomingMessage } from 'node:http';
import { MAX_JSON_DEPTH, nestedDeeperThan, parseJson } from '../lib/json.js';
import { AppError, type ErrorDetail } from './errors.js';
import { jsonMayHoldNul, nulDetails } from './nul.js';

/** Marker for "the request carried no body", distinct from a JSON null. */
export const NO_BODY = Symbol('no-body');

/** The request says it carries no body: Content-Length 0, or neither a length nor chunks (a GET). */
export function hasNoBody(req: IncomingMessage): boolean {
  const declared = req.headers['content-length'];
  return declared === undefined ? req.headers['transfer-encoding'] === undefined : Number(declared) === 0;
}

/**
 * Reads a JSON body, refusing it with 413 as soon as it passes `limit` bytes (by Content-Length
 * up front, or while streaming when the length is not declared) so a large body is never held whole,
 * and with 400 when it nests deeper than MAX_JSON_DEPTH, before anything walks it. Each NUL in a
 * string or a property name is added to `nuls` (kernel/nul.ts), for the caller to refuse.
 */
export async function readJsonBody(req: IncomingMessage, limit: number, nuls?: ErrorDetail[]): Promise<unknown> {
  if (hasNoBody(req)) return NO_BODY;
  const declared = req.headers['content-length'];
  const length = declared === undefined ? undefined : Number(declared);
  if (length !== undefined && length > limit) {
    throw new AppError('payload_too_large', `The request body is ${length} bytes; the limit is ${limit}.`);
  }
  const type = req.headers['content-type'];
  if (!type || !/^application\/([a-z0-9.+-]*\+)?json\s*(;|$)/i.test(type)) {
    throw new AppError('unsupported_media_type', `Content-Type ${type ? `"${type}"` : '(none)'} is not JSON; send application/json.`);
  }
  const { chunks, size } = await readAll(req, limit);
  if (size === 0) return NO_BODY;
  const text = Buffer.concat(chunks, size).toString('utf8');
  if (nestedDeeperThan(text, MAX_JSON_DEPTH)) {
    const message = `nested deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`;
    throw new AppError('invalid_request', `Malformed JSON body: ${message}.`, { details: [{ path: 'body', message }] });
  }
  const parsed = parseJson(text);
  if (!parsed.ok) throw new AppError('invalid_request', `Malformed JSON body: ${parsed.error}.`, { details: [{ path: 'body', message: parsed.error }] });
  if (nuls && jsonMayHoldNul(text)) nulDetails('body', parsed.value, nuls);
  return parsed.value;
}

/**
 * A body's raw bytes, whatever its type, refused with 413 `payload_too_large` (an AppError) as soon
 * as it passes `limit`; the request is then not read further, so answer with Connection: close.
 */
export async function readBodyBytes(req: IncomingMessage, limit: number): Promise<Buffer> {
  const { chunks, size } = await readAll(req, limit);
  return Buffer.concat(chunks, size);
}

/**
 * The body's chunks, refused with 413 past `limit`. Listeners rather than `for await`: the async
 * iterator costs a promise per chunk and a tenth of the CPU of a small POST.
 */
function readAll(req: IncomingMessage, limit: number): Promise<{ chunks: Buffer[]; size: number }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (err?: Error) => {
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
      if (!err) return resolve({ chunks, size });
      // Not read further: the 413 goes out with Connection: close.
      req.pause();
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) done(new AppError('payload_too_large', `The request body exceeds the limit of ${limit} bytes.`));
      else chunks.push(chunk);
    };
    const onEnd = () => done();
    const onError = (err: Error) => done(err);
    // Closed before the end: the client went away mid-body.
    const onClose = () => done(Object.assign(new Error('The request closed before its body ended.'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
    if (req.destroyed) return onClose();
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
}
