import { isIP } from 'node:net';

// DNS-rebinding and cross-site guards. A web page can make a browser send requests to
// localhost; the Host header tells us which name the browser thinks it is talking to, and the
// Origin header which site started the request.

export interface HostHeader {
  /** Lower-cased, without brackets or a trailing dot; IPv6 in its canonical short form. */
  name: string;
  port: number | null;
}

const REG_NAME = /^([a-z0-9_-]+(?:\.[a-z0-9_-]+)*)\.?$/;
const PORT = /^\d{1,5}$/;

/**
 * Parses a Host header as RFC 9110 has it: `host[:port]`, host being a name, an IPv4 address or a
 * bracketed IPv6 literal. Anything else (user info as in `localhost:80@evil.com`, spaces, empty
 * labels, a port that is not a number) is not a host, and null.
 */
export function parseHost(header: string): HostHeader | null {
  const h = header.toLowerCase();
  let name: string;
  let rest: string;
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    if (end === -1) return null;
    const literal = h.slice(1, end);
    if (isIP(literal) !== 6) return null;
    // The URL parser writes an IPv6 address in its one canonical form (0:0:0:0:0:0:0:1 is ::1).
    name = new URL(`http://[${literal}]/`).hostname.slice(1, -1);
    rest = h.slice(end + 1);
  } else {
    const colon = h.indexOf(':');
    const host = colon === -1 ? h : h.slice(0, colon);
    rest = colon === -1 ? '' : h.slice(colon);
    const m = REG_NAME.exec(host);
    if (!m) return null;
    name = m[1]!;
    // All digits and dots: it must be a whole IPv4 address, not a short or overflowing form.
    if (/^[\d.]+$/.test(name) && isIP(name) !== 4) return null;
  }
  if (rest === '') return { name, port: null };
  if (!rest.startsWith(':') || !PORT.test(rest.slice(1))) return null;
  const port = Number(rest.slice(1));
  return port <= 65535 ? { name, port } : null;
}

export function isLoopbackName(name: string): boolean {
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  if (isIP(name) === 4) return name.startsWith('127.');
  if (isIP(name) === 6) return name === '::1' || /^::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}$/.test(name);
  return false;
}

export function hostAllowed(header: string | undefined, allowedHosts: readonly string[]): boolean {
  if (!header) return false;
  const host = parseHost(header);
  if (!host) return false;
  if (isLoopbackName(host.name)) return true;
  // An allowedHosts entry names a host (any port) or a host:port.
  for (const entry of allowedHosts) {
    const allowed = parseHost(entry);
    if (!allowed || allowed.name !== host.name) continue;
    if (allowed.port === null || allowed.port === host.port) return true;
  }
  return false;
}

/**
 * hostAllowed, remembered per Host header for one allowedHosts list: a client sends the same Host
 * on every request, and parsing it each time was a tenth of the guards' cost. Both answers are
 * remembered; bounded, it starts over when full (a flood of made-up Hosts only costs the parse),
 * and over when the list changes (a project.json reload). One per HTTP server, never shared.
 */
export class HostCheck {
  private list: readonly string[] | null = null;
  private readonly seen = new Map<string, boolean>();

  constructor(private readonly max = 64) {}

  allowed(header: string | undefined, allowedHosts: readonly string[]): boolean {
    if (!header) return false;
    if (allowedHosts !== this.list) {
      this.seen.clear();
      this.list = allowedHosts;
    }
    let ok = this.seen.get(header);
    if (ok === undefined) {
      ok = hostAllowed(header, allowedHosts);
      if (this.seen.size >= this.max) this.seen.clear();
      this.seen.set(header, ok);
    }
    return ok;
  }
}

/**
 * Whether a request's Origin is one of `allowedOrigins`: the whole origin, compared exactly (scheme
 * and host are case-insensitive, a trailing slash is ignored), never a prefix. `null` is refused even
 * when listed: it is the opaque origin of every sandboxed iframe, data: URL and file, so any page on
 * the web can send it, and allowing it would allow them all.
 */
export function originAllowed(origin: string, allowedOrigins: readonly string[]): boolean {
  const o = origin.trim().replace(/\/+$/, '').toLowerCase();
  if (o === 'null') return false;
  return allowedOrigins.some((a) => a.replace(/\/+$/, '').toLowerCase() === o);
}
