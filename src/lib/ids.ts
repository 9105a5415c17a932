import { randomBytes, randomUUID } from 'node:crypto';
import { systemClock } from './clock.js';

let lastMs = 0;
let seq = 0;

// Random bytes drawn 4 KiB at a time: one id per request must not cost a call into the CSPRNG.
const POOL_IDS = 256;
let pool = Buffer.alloc(0);
let poolOffset = 0;

function random16(): Buffer {
  if (poolOffset >= pool.length) {
    pool = randomBytes(16 * POOL_IDS);
    poolOffset = 0;
  }
  const b = Buffer.from(pool.subarray(poolOffset, poolOffset + 16));
  poolOffset += 16;
  return b;
}

/**
 * A time-ordered UUID (version 7): 48 bits of Unix milliseconds, then a 12-bit counter that keeps
 * ids made in the same millisecond in creation order, then random bits. Ids sort as they were made,
 * which is what list cursors rely on.
 */
export function uuidv7(now: number = systemClock.now()): string {
  if (now <= lastMs) {
    seq++;
    if (seq > 0xfff) {
      lastMs++;
      seq = 0;
    }
    now = lastMs;
  } else {
    lastMs = now;
    seq = 0;
  }
  const b = random16();
  b.writeUIntBE(now, 0, 6);
  b[6] = 0x70 | (seq >> 8);
  b[7] = seq & 0xff;
  b[8] = 0x80 | (b[8]! & 0x3f);
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export const uuidv4 = randomUUID;

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
