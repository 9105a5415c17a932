import { isIP } from 'node:net';

// Which addresses a webhook may be delivered to. Loopback and private ranges are allowed (a local
// receiver is the main use); link-local (169.254.0.0/16 and fe80::/10, where cloud metadata services
// live), multicast and unspecified addresses never are. Checked on the URL at create and update, and
// on every address a name resolves to at delivery time (see worker.ts), so a name that later points
// somewhere forbidden is refused too.

export type Refusal = 'link-local' | 'multicast' | 'unspecified' | 'broadcast';

function ipv4Bytes(a: string): number[] | null {
  const parts = a.split('.');
  if (parts.length !== 4) return null;
  const b = parts.map(Number);
  return b.every((n) => Number.isInteger(n) && n >= 0 && n <= 255) ? b : null;
}

function classifyV4(b: number[]): Refusal | null {
  if (b[0] === 169 && b[1] === 254) return 'link-local';
  if (b[0]! >= 224 && b[0]! <= 239) return 'multicast';
  if (b[0] === 0) return 'unspecified';
  if (b.every((n) => n === 255)) return 'broadcast';
  return null;
}

/** The 8 groups of an IPv6 address (with a dotted IPv4 tail turned into two groups). */
function ipv6Groups(a: string): number[] | null {
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
  const parse = (h: string) => (h ? h.split(':').map((g) => parseInt(g, 16)) : []);
  const head = parse(halves[0]!);
  const rest = halves.length === 2 ? parse(halves[1]!) : [];
  const fill = halves.length === 2 ? 8 - head.length - rest.length : 0;
  const groups = [...head, ...Array(Math.max(0, fill)).fill(0), ...rest];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

/** Why an IP address may not receive deliveries, or null when it may. A non-address is null. */
export function refusedAddress(address: string): Refusal | null {
  const kind = isIP(address.replace(/%.*$/, ''));
  if (kind === 4) return classifyV4(ipv4Bytes(address)!);
  if (kind !== 6) return null;
  const g = ipv6Groups(address);
  if (!g) return null;
  // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible addresses are judged as the IPv4 they carry.
  if (g.slice(0, 5).every((x) => x === 0) && (g[5] === 0xffff || (g[5] === 0 && (g[6] !== 0 || g[7]! > 1)))) {
    return classifyV4([g[6]! >> 8, g[6]! & 0xff, g[7]! >> 8, g[7]! & 0xff]);
  }
  if (g.every((x) => x === 0)) return 'unspecified';
  if ((g[0]! & 0xffc0) === 0xfe80) return 'link-local';
  if ((g[0]! & 0xff00) === 0xff00) return 'multicast';
  return null;
}

/** The URL's host as an address when it is a literal one (brackets of IPv6 removed), else null. */
export function literalHost(url: URL): string | null {
  const h = url.hostname.replace(/^\[|\]$/g, '');
  return isIP(h) ? h : null;
}

/**
 * Checks a webhook URL: absolute, http or https, and not a forbidden literal address. Returns the
 * reason it is refused, or null when it is acceptable.
 */
export function urlProblem(raw: string): string | null {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return 'must be an absolute http:// or https:// URL';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `must use http or https, not ${u.protocol.replace(/:$/, '')}`;
  if (!u.hostname) return 'must name a host';
  // The URL is shown by every list and log line; credentials in it would leak. Deliveries are
  // authenticated by their signature instead.
  if (u.username || u.password) return 'must not contain a user name or password';
  const lit = literalHost(u);
  const why = lit ? refusedAddress(lit) : null;
  if (why) return `${lit} is a ${why} address; webhooks may not target link-local, multicast, unspecified or broadcast addresses`;
  return null;
}
