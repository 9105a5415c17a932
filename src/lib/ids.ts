import { randomBytes, randomUUID } from 'node:crypto';
import { systemClock } from './clock.js';

let lastMs = 0;
let seq = 0;

// Random bytes drawn 4 KiB at a time: one id per request must not cost a call into the CSPRNG.
const POOL_IDS = 256;
let pool = Buffer.alloc(0);
let poolOffset = 0;

/** Two hex digits per byte value: an id is written from these, with no Buffer made per id. */
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
/** The time part of the ids of the millisecond `lastMs` ("0193a0c2-4f1b-"), made once per millisecond. */
let timeHex = '';

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
      timeHex = '';
    }
  } else {
    lastMs = now;
    seq = 0;
    timeHex = '';
  }
  if (!timeHex) {
    const t = lastMs.toString(16).padStart(12, '0');
    timeHex = `${t.slice(0, 8)}-${t.slice(8, 12)}-`;
  }
  if (poolOffset >= pool.length) {
    pool = randomBytes(16 * POOL_IDS);
    poolOffset = 0;
  }
  // Of each 16 random bytes, the last 8 are used: bytes 8–15 of the id (the variant's two bits set).
  const r = poolOffset + 8;
  poolOffset += 16;
  const p = pool;
  return (
    timeHex +
    HEX[0x70 | (seq >> 8)]! +
    HEX[seq & 0xff]! +
    '-' +
    HEX[0x80 | (p[r]! & 0x3f)]! +
    HEX[p[r + 1]!]! +
    '-' +
    HEX[p[r + 2]!]! +
    HEX[p[r + 3]!]! +
    HEX[p[r + 4]!]! +
    HEX[p[r + 5]!]! +
    HEX[p[r + 6]!]! +
    HEX[p[r + 7]!]!
  );
}

export const uuidv4 = randomUUID;

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
