import { isIP } from 'node:net';

// Which addresses a webhook may be delivered to. Loopback and private ranges are allowed (a local
// receiver is the main use); link-local (169.254.0.0/16 and fe80::/10, where cloud metadata services
// live), multicast and unspecified addresses never are. An IPv6 address that carries an IPv4 one
// (mapped, compatible, translated, NAT64, Teredo, 6to4) is judged as the IPv4 it carries, since
// that is where a translator or tunnel sends the packets. Checked on the URL at create and update,
// and at delivery time on a literal host and on every address a name resolves to (see send.ts),
// so a name that later points somewhere forbidden is refused too.

export type Refusal = 'link-local' | 'multicast' | 'unspecified' | 'broadcast';

export interface Verdict {
  why: Refusal;
  /** The IPv4 address an IPv6 one carries, and how, when that is what was judged. */
  carries?: { ipv4: string; form: string };
}

function ipv4Bytes(a: string): number[] | null {
  const parts = a.split('.');
  if (parts.length !== 4) return null;
  const b = parts.map(Number);
  return b.every((n) => Number.isInteger(n) && n >= 0 && n <= 255) ? b : null;
}

function classifyV4(b: readonly number[]): Refusal | null {
  if (b[0] === 169 && b[1] === 254) return 'link-local';
  if (b[0]! >= 224 && b[0]! <= 239) return 'multicast';
  if (b[0] === 0) return 'unspecified';
  if (b.every((n) => n === 255)) return 'broadcast';
  return null;
}

/** The 16 bytes of an IPv6 address (a dotted IPv4 tail included), or null. */
function ipv6Bytes(a: string): number[] | null {
  let s = a.toLowerCase();
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (tail) {
    const b = ipv4Bytes(tail[1]!);
    if (!b) return null;
    s = s.slice(0, -tail[1]!.length) + ((b[0]! << 8) | b[1]!).toString(16) + ':' + ((b[2]! << 8) | b[3]!).toString(16);
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const parse = (h: string) => (h ? h.split(':').map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN)) : []);
  const head = parse(halves[0]!);
  const rest = halves.length === 2 ? parse(halves[1]!) : [];
  const fill = halves.length === 2 ? 8 - head.length - rest.length : 0;
  if (fill < 0) return null;
  const groups = [...head, ...Array(fill).fill(0), ...rest];
  if (groups.length !== 8 || !groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff)) return null;
  return groups.flatMap((g) => [g >> 8, g & 0xff]);
}

const zero = (b: readonly number[]) => b.every((x) => x === 0);

/**
 * The IPv4 addresses an IPv6 address may carry, with the form that carries each. The local-use
 * NAT64 prefix (RFC 8215) may be split at /48, /56, /64 or /96 (RFC 6052), which the address does
 * not tell, so every split whose reserved octet and suffix are zero is a candidate.
 */
export function carriedIpv4(b: readonly number[]): { bytes: number[]; form: string }[] {
  const out: { bytes: number[]; form: string }[] = [];
  const at = (...i: number[]) => i.map((n) => b[n]!);
  // ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible; not :: or ::1), ::ffff:0:a.b.c.d (SIIT translated)
  if (zero(b.slice(0, 10)) && b[10] === 0xff && b[11] === 0xff) out.push({ bytes: at(12, 13, 14, 15), form: 'IPv4-mapped' });
  if (zero(b.slice(0, 12)) && !(zero(b.slice(12, 15)) && b[15]! <= 1)) out.push({ bytes: at(12, 13, 14, 15), form: 'IPv4-compatible' });
  if (zero(b.slice(0, 8)) && b[8] === 0xff && b[9] === 0xff && b[10] === 0 && b[11] === 0) out.push({ bytes: at(12, 13, 14, 15), form: 'IPv4-translated' });
  // 64:ff9b::/96, the well-known NAT64 prefix
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(b.slice(4, 12))) out.push({ bytes: at(12, 13, 14, 15), form: 'NAT64' });
  // 64:ff9b:1::/48, the local-use NAT64 prefix (byte 8 is the reserved u octet)
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && b[4] === 0 && b[5] === 1) {
    if (b[8] === 0 && zero(b.slice(11))) out.push({ bytes: at(6, 7, 9, 10), form: 'NAT64 (/48)' });
    if (b[8] === 0 && zero(b.slice(12))) out.push({ bytes: at(7, 9, 10, 11), form: 'NAT64 (/56)' });
    if (b[8] === 0 && zero(b.slice(13))) out.push({ bytes: at(9, 10, 11, 12), form: 'NAT64 (/64)' });
    out.push({ bytes: at(12, 13, 14, 15), form: 'NAT64 (/96)' });
  }
  // 2001::/32 Teredo: the server's address, and the client's (the destination) with its bits inverted
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0 && b[3] === 0) {
    out.push({ bytes: at(4, 5, 6, 7), form: 'Teredo server' });
    out.push({ bytes: at(12, 13, 14, 15).map((x) => x ^ 0xff), form: 'Teredo' });
  }
  // 2002::/16 6to4
  if (b[0] === 0x20 && b[1] === 0x02) out.push({ bytes: at(2, 3, 4, 5), form: '6to4' });
  return out;
}

/** Why an IP address may not receive deliveries (and what it carries), or null when it may. A non-address is null. */
export function inspectAddress(address: string): Verdict | null {
  const bare = address.replace(/%.*$/, '');
  const kind = isIP(bare);
  if (kind === 4) {
    const why = classifyV4(ipv4Bytes(bare)!);
    return why ? { why } : null;
  }
  if (kind !== 6) return null;
  const b = ipv6Bytes(bare);
  if (!b) return null;
  for (const c of carriedIpv4(b)) {
    const why = classifyV4(c.bytes);
    if (why) return { why, carries: { ipv4: c.bytes.join('.'), form: c.form } };
  }
  if (zero(b)) return { why: 'unspecified' };
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0x80) return { why: 'link-local' };
  if (b[0] === 0xff) return { why: 'multicast' };
  return null;
}

/** Why an IP address may not receive deliveries, or null when it may. A non-address is null. */
export function refusedAddress(address: string): Refusal | null {
  return inspectAddress(address)?.why ?? null;
}

/** One line saying why `address` is refused (for a 400 and an attempt's error), or null. */
export function refusalText(address: string): string | null {
  const v = inspectAddress(address);
  if (!v) return null;
  return v.carries ? `a ${v.why} address (${v.carries.form} form of ${v.carries.ipv4})` : `a ${v.why} address`;
}

/** The URL's host as an address when it is a literal one (brackets of IPv6 removed), else null. */
export function literalHost(url: URL): string | null {
  const h = url.hostname.replace(/^\[|\]$/g, '');
  return isIP(h) ? h : null;
}

/**
 * Checks a webhook URL: absolute, http or https, naming a host, and not a forbidden literal
 * address. Returns the reason it is refused, or null when it is acceptable.
 */
export function urlProblem(raw: string): string | null {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return 'must be an absolute http:// or https:// URL';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `must use http or https, not ${u.protocol.replace(/:$/, '')}`;
  // The URL parser reads `http:///x`, `http:/x` and `http:\\x` as http://x/: what is stored and
  // shown must say which host it names, so the host must follow `//` as written.
  if (!u.hostname || !/^https?:\/\/[^/\\?#]/i.test(raw)) return 'must name a host after "//"';
  // The URL is shown by every list and log line; credentials in it would leak. Deliveries are
  // authenticated by their signature instead.
  if (u.username || u.password) return 'must not contain a user name or password';
  const lit = literalHost(u);
  const why = lit ? refusalText(lit) : null;
  if (why) return `${lit} is ${why}; webhooks may not target link-local, multicast, unspecified or broadcast addresses`;
  return null;
}
