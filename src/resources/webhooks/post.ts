import { request, type Agent } from 'undici';
import { errorText, refusedLiteral, type Post, type Sent } from './send.js';

// One delivery on the wire, in the delivery thread: a POST under one hard deadline that covers
// connecting, the answer's headers and its body, through a pooled Agent whose name lookup refuses
// forbidden addresses (send.ts). Redirects are never followed (undici's request() follows none
// without an interceptor). Only the thread imports this file: undici stays out of the daemon's thread.

const RESPONSE_KEEP_BYTES = 1024;
/** A response body is read this far (to reuse the connection), then the connection is dropped. */
const RESPONSE_READ_BYTES = 64 * 1024;

export async function postDelivery(agent: Agent, p: Post): Promise<Sent> {
  const refused = refusedLiteral(p.url);
  if (refused) return { result: { error: refused, refused: true }, responseBody: null, retryAfter: null, location: null };
  const ac = new AbortController();
  const deadline = setTimeout(() => ac.abort(), p.timeoutMs);
  const stop = () => ac.abort();
  p.signal?.addEventListener('abort', stop, { once: true });
  try {
    const res = await request(p.url, { method: 'POST', headers: p.headers, body: p.body, dispatcher: agent, signal: ac.signal, headersTimeout: p.timeoutMs, bodyTimeout: p.timeoutMs });
    const chunks: Buffer[] = [];
    let read = 0;
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      if (read < RESPONSE_KEEP_BYTES) chunks.push(chunk.subarray(0, RESPONSE_KEEP_BYTES - read));
      read += chunk.length;
      if (read >= RESPONSE_READ_BYTES) {
        res.body.destroy();
        break;
      }
    }
    const text = Buffer.concat(chunks).toString('utf8');
    const location = res.headers.location;
    const retryAfter = Array.isArray(res.headers['retry-after']) ? res.headers['retry-after'][0] : res.headers['retry-after'];
    return {
      result: { statusCode: res.statusCode },
      responseBody: text || null,
      retryAfter: typeof retryAfter === 'string' ? retryAfter.slice(0, 128) : null,
      location: typeof location === 'string' ? location.slice(0, 512) : null,
    };
  } catch (err) {
    if (ac.signal.aborted) {
      return { result: { error: p.signal?.aborted ? 'cut short by shutdown' : `no complete answer within ${p.timeoutMs} ms` }, responseBody: null, retryAfter: null, location: null };
    }
    const { text, refused } = errorText(err);
    return { result: { error: text, refused }, responseBody: null, retryAfter: null, location: null };
  } finally {
    clearTimeout(deadline);
    p.signal?.removeEventListener('abort', stop);
  }
}
